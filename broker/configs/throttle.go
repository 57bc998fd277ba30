package configs

import (
	"math"
	"strconv"
	"strings"
)

// ThrottledReplicas is one broker's reading of a topic's
// leader.replication.throttled.replicas or
// follower.replication.throttled.replicas: which of the topic's partitions
// it throttles. The zero value throttles none.
type ThrottledReplicas struct {
	// All is set by the wildcard "*": every partition of the topic.
	All bool
	// Partitions are the partitions listed with this broker's id, in the
	// order listed, repeats kept.
	Partitions []int32
}

// Has reports whether partition is throttled.
func (t ThrottledReplicas) Has(partition int32) bool {
	if t.All {
		return true
	}
	for _, p := range t.Partitions {
		if p == partition {
			return true
		}
	}
	return false
}

// Empty reports whether no partition is throttled.
func (t ThrottledReplicas) Empty() bool { return !t.All && len(t.Partitions) == 0 }

// ParseThrottledReplicas reads a throttled-replicas list as broker reads
// it, as Kafka's ConfigHandler.parseThrottledPartitions does: "*" is every
// partition; otherwise the value is a list of partitionId:brokerId pairs
// and broker keeps the partitions of the pairs naming it. An empty value
// throttles nothing. A value the config's validator refuses is an error
// (ErrInvalidConfig, Kafka's message); empty list entries are skipped, as
// the validator lets them through. An id beyond an INT names no partition
// or broker that can exist, and is skipped.
func ParseThrottledReplicas(name, value string, broker int32) (ThrottledReplicas, error) {
	var out ThrottledReplicas
	d, ok := topicByName[name]
	if !ok || d.Type != TypeList {
		return out, newError(ErrUnknownConfig, name, "Unknown topic config name: "+name)
	}
	p, err := d.parse(value)
	if err != nil {
		return out, err
	}
	if len(p.list) == 1 && javaTrim(p.list[0]) == "*" {
		out.All = true
		return out, nil
	}
	for _, e := range p.list {
		part, node, found := strings.Cut(javaTrim(e), ":")
		if !found {
			continue // an empty entry: the validator allows nothing else without ':'
		}
		pn, perr := strconv.ParseInt(part, 10, 32)
		bn, berr := strconv.ParseInt(node, 10, 32)
		if perr != nil || berr != nil || int32(bn) != broker {
			continue
		}
		out.Partitions = append(out.Partitions, int32(pn))
	}
	return out, nil
}

// Unthrottled is the replication rate that throttles nothing: Kafka's
// default of the throttled rates, Long.MAX_VALUE bytes per second.
const Unthrottled = math.MaxInt64

// DynamicBrokerRate is the value of a dynamic-only broker rate (such as
// leader.replication.throttled.rate) for a broker, as Kafka's
// BrokerConfigHandler reads it: the broker's own dynamic config, else the
// cluster-wide default, else Unthrottled. Static configs do not count:
// these configs can only be set dynamically. A value that does not parse
// or is negative (the registry holds only validated values, so this is
// not expected) reads as Unthrottled, and ok is false.
func DynamicBrokerRate(name string, brokerDynamic, brokerDefault map[string]string) (rate int64, ok bool) {
	for _, level := range []map[string]string{brokerDynamic, brokerDefault} {
		raw, set := level[name]
		if !set {
			continue
		}
		d, known := brokerByName[name]
		if !known {
			return Unthrottled, false
		}
		p, err := d.parse(raw)
		if err != nil || p.i < 0 {
			return Unthrottled, false
		}
		return p.i, true
	}
	return Unthrottled, true
}
