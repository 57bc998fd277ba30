package broker

// CreatePartitions (key 37), versions 0-3.
//
// Grows a topic to count partitions, placing the new ones as Kafka does or
// as the request's assignment says (one replica list per new partition, of
// the topic's replication factor, on registered brokers). A count at or
// below the current one is INVALID_PARTITIONS with Kafka's message; a topic
// named twice is INVALID_REQUEST; validate_only checks without writing.
// More than 10000 new partitions in one request is POLICY_VIOLATION for
// every topic, the limit Kafka 4's controller has for CreateTopics.
// Every requested topic gets a result. As in Kafka's controller, a topic
// named once needs ALTER on it, or it gets TOPIC_AUTHORIZATION_FAILED
// (whether it exists or not) and does not count toward the request's
// partitions.
//
// The new partitions of a topic that passes count against the
// controller_mutation_rate quota (client_quotas.go), validate_only
// included, as in Kafka 4: from v3 a topic met with the quota used up
// fails with THROTTLING_QUOTA_EXCEEDED.

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/protocol"
)

var createPartitionsAPI = handler{key: 37, min: 0, max: 3, handle: (*Broker).handleCreatePartitions}

func (b *Broker) handleCreatePartitions(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	mutations := c.mutationQuota(hdr, 3)
	defer c.endMutations(mutations)
	count := map[string]int{}
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	alterable := map[string]bool{}
	for name, n := range count {
		if n == 1 {
			alterable[name] = c.authorized(acl.OpAlter, acl.ResourceTopic, name)
		}
	}
	total := int64(0)
	md := b.cluster.Snapshot()
	for _, t := range req.Topics {
		if count[t.Topic] == 1 && !alterable[t.Topic] {
			continue
		}
		if cur := md.Topics[t.Topic]; cur != nil && t.Count > int32(len(cur.Partitions)) {
			total += int64(t.Count) - int64(len(cur.Partitions))
		}
	}
	changed := false
	for _, rt := range req.Topics {
		out := kmsg.NewCreatePartitionsResponseTopic()
		out.Topic = rt.Topic
		var err error
		switch {
		case total > maxPartitionsPerRequest:
			err = errTooManyPartitions()
		case count[rt.Topic] > 1:
			err = newTopicError(protocol.InvalidRequest, "Duplicate topic in request: %s.", rt.Topic)
		case !alterable[rt.Topic]:
			out.ErrorCode = int16(protocol.TopicAuthorizationFailed)
			resp.Topics = append(resp.Topics, out)
			continue
		default:
			var as [][]int32
			as, err = b.planPartitions(b.cluster.Snapshot(), rt)
			if err == nil && !mutations.Record(len(as), time.Now()) {
				err = errMutationQuota()
			}
			if err == nil && !req.ValidateOnly {
				err = b.cluster.CreatePartitions(ctx, rt.Topic, rt.Count, as)
				if errors.Is(err, cluster.ErrInvalidPartitions) {
					err = newTopicError(protocol.InvalidPartitions, "%v", err)
				}
				changed = changed || err == nil
			}
		}
		if err != nil {
			msg := err.Error()
			out.ErrorCode, out.ErrorMessage = int16(errorCode(err)), &msg
		}
		resp.Topics = append(resp.Topics, out)
	}
	if changed {
		if err := b.syncPartitions(b.cluster.Snapshot()); err != nil {
			b.logger.Error("opening logs of new partitions failed", "err", err)
		}
	}
	return resp, nil
}

func (b *Broker) planPartitions(md *cluster.Metadata, rt kmsg.CreatePartitionsRequestTopic) ([][]int32, error) {
	t := md.Topics[rt.Topic]
	if t == nil {
		return nil, newTopicError(protocol.UnknownTopicOrPartition, "The topic '%s' does not exist.", rt.Topic)
	}
	cur := int32(len(t.Partitions))
	switch {
	case rt.Count < cur:
		return nil, newTopicError(protocol.InvalidPartitions,
			"Topic currently has %d partitions, which is higher than the requested %d.", cur, rt.Count)
	case rt.Count == cur:
		return nil, newTopicError(protocol.InvalidPartitions, "Topic already has %d partitions.", cur)
	}
	rf := len(t.Partitions[0].Replicas)
	brokers := make([]int32, 0, len(md.Brokers))
	for _, br := range md.Brokers {
		brokers = append(brokers, br.NodeID)
	}
	add := rt.Count - cur
	if rt.Assignment == nil {
		if rf > len(brokers) {
			return nil, newTopicError(protocol.InvalidReplicationFactor,
				"Unable to replicate the partition %d time(s): only %d broker(s) are registered.", rf, len(brokers))
		}
		out, err := assignReplicas(md.Brokers, add, int16(rf))
		if err != nil {
			return nil, newTopicError(protocol.InvalidReplicationFactor, "%v", err)
		}
		return out, nil
	}
	if int32(len(rt.Assignment)) != add {
		return nil, newTopicError(protocol.InvalidReplicaAssignment,
			"Increasing the number of partitions by %d but %d assignments provided.", add, len(rt.Assignment))
	}
	out := make([][]int32, len(rt.Assignment))
	for i, a := range rt.Assignment {
		if len(a.Replicas) != rf {
			return nil, newTopicError(protocol.InvalidReplicaAssignment,
				"Inconsistent replication factor between partitions, partition 0 has %d while partition %d has replicas %v.",
				rf, cur+int32(i), a.Replicas)
		}
		for j, r := range a.Replicas {
			if !slices.Contains(brokers, r) {
				return nil, newTopicError(protocol.InvalidReplicaAssignment, "Unknown broker %d in assignment of partition %d.", r, cur+int32(i))
			}
			if slices.Contains(a.Replicas[:j], r) {
				return nil, newTopicError(protocol.InvalidReplicaAssignment, "Duplicate brokers not allowed in replica assignment: %v.", a.Replicas)
			}
		}
		out[i] = a.Replicas
	}
	return out, nil
}
