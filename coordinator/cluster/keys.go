package cluster

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/gregor-io/gregor/coordinator/acl"
)

// keyspace builds and parses the etcd keys under one cluster prefix. The
// layout is documented in the package doc; this is the only place that
// spells it out.
type keyspace struct {
	root string // prefix + "/": every key of the cluster starts with it
}

func newKeyspace(prefix string) keyspace { return keyspace{root: prefix + "/"} }

// defaultConfigName is the segment that stands for node id -1 (the cluster
// wide default) under configs/brokers/.
const defaultConfigName = "default"

func (k keyspace) clusterID() string            { return k.root + "cluster_id" }
func (k keyspace) producerIDBlock() string      { return k.root + "producer_id_block" }
func (k keyspace) broker(id int32) string       { return k.root + "brokers/" + itoa(id) }
func (k keyspace) registered(id int32) string   { return k.root + "registered/" + itoa(id) }
func (k keyspace) topic(name string) string     { return k.root + "topics/" + name }
func (k keyspace) topicID(id TopicID) string    { return k.root + "topic_ids/" + id.String() }
func (k keyspace) partitionsOf(t string) string { return k.root + "partitions/" + t + "/" }
func (k keyspace) topicConfig(t string) string  { return k.root + "configs/topics/" + t }

// groupConfig is a group's key: the group id path-escaped, since a group
// id may hold any character.
func (k keyspace) groupConfig(g string) string { return k.root + "configs/groups/" + url.PathEscape(g) }

// controllerPrefix is the election's prefix: each candidate's key is
// controllerPrefix + "/" + its lease id in hex (concurrency.Election).
func (k keyspace) controllerPrefix() string { return k.root + "controller" }

func (k keyspace) partition(topic string, p int32) string {
	return k.partitionsOf(topic) + itoa(p)
}

func (k keyspace) brokerConfig(id int32) string {
	if id == -1 {
		return k.root + "configs/brokers/" + defaultConfigName
	}
	return k.root + "configs/brokers/" + itoa(id)
}

func itoa(v int32) string { return strconv.FormatInt(int64(v), 10) }

// keyKind says what a key under the prefix holds.
type keyKind int

const (
	kindUnknown keyKind = iota
	kindClusterID
	kindProducerIDBlock
	kindBroker
	kindRegistered
	kindTopic
	kindTopicID
	kindPartition
	kindTopicConfig
	kindBrokerConfig
	kindGroupConfig
	kindController
	kindACL
	kindScram
	kindQuota
)

// parsedKey is a key split into its kind and the names it carries.
type parsedKey struct {
	kind      keyKind
	node      int32  // kindBroker, kindRegistered, kindBrokerConfig (-1 = default)
	topic     string // kindTopic, kindPartition, kindTopicConfig; the group id for kindGroupConfig
	partition int32  // kindPartition
	acl       acl.Binding
	scram     ScramKey    // kindScram
	quota     QuotaEntity // kindQuota
}

// parse splits a key read from etcd. Keys this version does not know (written
// by a newer one, or by hand) come back as kindUnknown and are ignored by the
// cache.
func (k keyspace) parse(key string) parsedKey {
	rest, ok := strings.CutPrefix(key, k.root)
	if !ok {
		return parsedKey{}
	}
	switch rest {
	case "cluster_id":
		return parsedKey{kind: kindClusterID}
	case "producer_id_block":
		return parsedKey{kind: kindProducerIDBlock}
	}
	head, tail, ok := strings.Cut(rest, "/")
	if !ok || tail == "" {
		return parsedKey{}
	}
	switch head {
	case "brokers":
		if id, ok := parseNodeID(tail); ok && id >= 0 {
			return parsedKey{kind: kindBroker, node: id}
		}
	case "registered":
		if id, ok := parseNodeID(tail); ok && id >= 0 {
			return parsedKey{kind: kindRegistered, node: id}
		}
	case "topics":
		if !strings.Contains(tail, "/") {
			return parsedKey{kind: kindTopic, topic: tail}
		}
	case "topic_ids":
		return parsedKey{kind: kindTopicID}
	case "acls":
		// Only the key the binding is written under: another spelling
		// of its escapes would be a second key for one binding.
		if b, ok := parseACL(tail); ok && k.acl(b) == key {
			return parsedKey{kind: kindACL, acl: b}
		}
	case "scram":
		if sk, ok := parseScramKey(tail); ok {
			return parsedKey{kind: kindScram, scram: sk}
		}
	case "quotas":
		if e, ok := parseQuotaKey(tail); ok {
			return parsedKey{kind: kindQuota, quota: e}
		}
	case "controller":
		if !strings.Contains(tail, "/") {
			return parsedKey{kind: kindController}
		}
	case "partitions":
		topic, p, ok := strings.Cut(tail, "/")
		if !ok || topic == "" || strings.Contains(p, "/") {
			return parsedKey{}
		}
		if n, ok := parseNodeID(p); ok && n >= 0 {
			return parsedKey{kind: kindPartition, topic: topic, partition: n}
		}
	case "configs":
		sub, name, ok := strings.Cut(tail, "/")
		if !ok || name == "" || strings.Contains(name, "/") {
			return parsedKey{}
		}
		switch sub {
		case "topics":
			return parsedKey{kind: kindTopicConfig, topic: name}
		case "groups":
			if g, err := url.PathUnescape(name); err == nil && g != "" && url.PathEscape(g) == name {
				return parsedKey{kind: kindGroupConfig, topic: g}
			}
		case "brokers":
			if name == defaultConfigName {
				return parsedKey{kind: kindBrokerConfig, node: -1}
			}
			if id, ok := parseNodeID(name); ok && id >= 0 {
				return parsedKey{kind: kindBrokerConfig, node: id}
			}
		}
	}
	return parsedKey{}
}

// parseNodeID parses a canonical decimal int32 (no sign, no leading zeros),
// so that each number has exactly one key.
func parseNodeID(s string) (int32, bool) {
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil || strconv.FormatInt(v, 10) != s {
		return 0, false
	}
	return int32(v), true
}

// The value records below are the JSON stored under each key. Fields are only
// ever added; readers ignore fields they do not know.

// clusterIDRecord is the value of prefix/cluster_id.
type clusterIDRecord struct {
	ID string `json:"id"`
}

// brokerRecord is the value of prefix/brokers/<id> and of
// prefix/registered/<id>.
type brokerRecord struct {
	Host  string  `json:"host"`
	Port  int32   `json:"port"`
	Rack  *string `json:"rack,omitempty"`
	Owner string  `json:"owner,omitempty"` // BrokerInfo.Owner
	// ShuttingDown is set by ControlledShutdown.
	ShuttingDown bool `json:"shutting_down,omitempty"`
	// Endpoints are BrokerInfo.Endpoints; absent in the records of
	// brokers that predate them.
	Endpoints []endpointRecord `json:"endpoints,omitempty"`
}

// endpointRecord is one of brokerRecord.Endpoints.
type endpointRecord struct {
	Listener         string `json:"listener"`
	Host             string `json:"host"`
	Port             int32  `json:"port"`
	SecurityProtocol string `json:"security_protocol"`
}

// newBrokerRecord is info's record, without Owner and ShuttingDown, which
// only the live registration carries.
func newBrokerRecord(info BrokerInfo) brokerRecord {
	r := brokerRecord{Host: info.Host, Port: info.Port, Rack: info.Rack}
	for _, e := range info.Endpoints {
		r.Endpoints = append(r.Endpoints, endpointRecord(e))
	}
	return r
}

// info is the BrokerInfo of node id's record r.
func (r *brokerRecord) info(id int32) BrokerInfo {
	bi := BrokerInfo{NodeID: id, Host: r.Host, Port: r.Port, Rack: r.Rack, ShuttingDown: r.ShuttingDown}
	for _, e := range r.Endpoints {
		bi.Endpoints = append(bi.Endpoints, Endpoint(e))
	}
	return bi
}

// controllerRecord is the value of a controller candidate's key,
// prefix/controller/<lease id>.
type controllerRecord struct {
	Node int32 `json:"node"`
}

// topicRecord is the value of prefix/topics/<name>.
type topicRecord struct {
	ID         string `json:"id"`
	Partitions int32  `json:"partitions"`
}

// topicIDRecord is the value of prefix/topic_ids/<id>.
type topicIDRecord struct {
	Name string `json:"name"`
}

// partitionRecord is the value of prefix/partitions/<topic>/<p>.
type partitionRecord struct {
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leader_epoch"`
	ISR            []int32 `json:"isr"`
	PartitionEpoch int32   `json:"partition_epoch"`
	Replicas       []int32 `json:"replicas"`
	// AddingReplicas and RemovingReplicas are set while a reassignment is
	// in flight (PartitionState).
	AddingReplicas   []int32 `json:"adding_replicas,omitempty"`
	RemovingReplicas []int32 `json:"removing_replicas,omitempty"`
}

// configRecord is the value of prefix/configs/topics/<name> and
// prefix/configs/brokers/<id|default>.
type configRecord struct {
	Config map[string]string `json:"config"`
}

// producerIDBlockRecord is the value of prefix/producer_id_block: the last
// block handed out.
type producerIDBlockRecord struct {
	Broker int32 `json:"broker"`
	First  int64 `json:"first"`
	Count  int64 `json:"count"`
}

// encode marshals a record. The records hold only strings, numbers, slices and
// maps of those, so marshalling cannot fail; a failure is a programming error.
func encode(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("cluster: encode %T: %v", v, err))
	}
	return string(b)
}

// unmarshal decodes a stored value.
func unmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
