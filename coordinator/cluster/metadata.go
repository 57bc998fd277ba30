package cluster

import (
	"cmp"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"

	"github.com/gregor-io/gregor/coordinator/acl"
)

// TopicID is a Kafka Uuid: 16 bytes, shown as unpadded base64url (22
// characters), as Kafka prints topic and cluster ids. The all-zero id means
// "no id" in the protocol and is never given to a topic.
type TopicID [16]byte

// String returns the Kafka form of the id: unpadded base64url.
func (id TopicID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// IsZero reports whether id is the all-zero id.
func (id TopicID) IsZero() bool { return id == TopicID{} }

// reserved reports whether Kafka keeps id for itself: the zero id and
// Uuid(0, 1), the id of KRaft's __cluster_metadata topic.
func (id TopicID) reserved() bool { return id == TopicID{} || id == TopicID{15: 1} }

// ParseTopicID parses the unpadded base64url form String returns.
func ParseTopicID(s string) (TopicID, error) {
	var id TopicID
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return id, fmt.Errorf("parse topic id %q: %w", s, err)
	}
	if len(b) != len(id) {
		return id, fmt.Errorf("parse topic id %q: %d bytes, want %d", s, len(b), len(id))
	}
	copy(id[:], b)
	return id, nil
}

// randomID returns a random version 4 UUID, as Kafka's Uuid.randomUuid:
// never a reserved id, and never one whose string starts with '-' (command
// line tools would take it for a flag).
func randomID() TopicID {
	for {
		var id TopicID
		_, _ = rand.Read(id[:])   // crypto/rand.Read never fails (Go 1.24+)
		id[6] = id[6]&0x0f | 0x40 // version 4
		id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
		if !id.reserved() && id.String()[0] != '-' {
			return id
		}
	}
}

// BrokerInfo is a broker's registration: what Metadata responses tell
// clients about it.
type BrokerInfo struct {
	NodeID int32
	// Host and Port are the endpoint of the broker's inter-broker
	// listener: what other brokers dial it on. Brokers that predate
	// Endpoints registered their only endpoint here.
	Host string
	Port int32
	Rack *string // nil: no rack
	// Endpoints are the advertised endpoints of all the broker's
	// listeners, one per listener name; clients are told the one of the
	// listener they are connected to (see Endpoint).
	Endpoints []Endpoint

	// Owner names what makes a process this broker, for Register only:
	// the broker sets it to its host name and first log dir, which it holds
	// an exclusive lock on while it runs. A registration left by a process
	// with the same non-empty Owner belongs to a run of this broker that is
	// gone (it would still hold the lock otherwise), so Register takes it
	// over instead of waiting for its lease to expire. Empty: never.
	// Not part of Snapshot.
	Owner string

	// ShuttingDown reports a broker in controlled shutdown: it still
	// serves, but the controller moves its leaderships to other in-sync
	// replicas, takes it out of ISRs and elects it nowhere. Register
	// ignores it (see ControlledShutdown).
	ShuttingDown bool
}

// partitionAt is a partition's state and the mod revision of its key.
type partitionAt struct {
	state PartitionState
	rev   int64
}

// ControllerInfo names the elected controller: the broker whose candidate
// key under prefix/controller has the lowest create revision, and that
// revision as its epoch. Epochs only grow: a later controller's key is
// created later. Every controller write compares the key's create revision
// with the epoch, so a deposed controller cannot write.
type ControllerInfo struct {
	NodeID int32
	Epoch  int64
}

// PartitionState is a partition's replicas and leadership, as Kafka keeps it
// per partition. Invariants kept by every writer: Leader is -1 or a member of
// ISR; ISR is a subset of Replicas; LeaderEpoch rises with every leader
// change; PartitionEpoch rises with every change of this state, so that a
// writer can compare it (compare-and-swap) before changing the state.
//
// While a reassignment is in flight (KIP-455), Replicas is the target
// followed by the original replicas that are not in it, AddingReplicas the
// target's replicas that were not original, RemovingReplicas the original
// ones not in the target (both sorted, both subsets of Replicas); outside a
// reassignment both are empty. See reassign.go.
type PartitionState struct {
	Leader           int32
	LeaderEpoch      int32
	ISR              []int32
	PartitionEpoch   int32
	Replicas         []int32
	AddingReplicas   []int32
	RemovingReplicas []int32
}

// Topic is one topic as the cache sees it. Partitions is indexed by
// partition number and has no holes: a topic's partitions are always written
// in the same transaction as its record. A Topic taken from a Metadata is
// shared and must not be modified.
type Topic struct {
	Name       string
	ID         TopicID
	Partitions []PartitionState
	Configs    map[string]string // dynamic topic configs; nil when none

	// revs are the mod revisions of the partition state keys, by
	// partition, for the controller's compare-and-swap (0: not known).
	revs []int64
}

// Endpoint is where a broker's listener is reached, as advertised.
type Endpoint struct {
	// Listener is the listener's name, upper case (PLAINTEXT, INTERNAL).
	Listener string
	Host     string
	Port     int32
	// SecurityProtocol is the listener's protocol (PLAINTEXT, SSL,
	// SASL_PLAINTEXT, SASL_SSL).
	SecurityProtocol string
}

// Endpoint returns the broker's endpoint on the named listener; ok is false
// when it has no such listener. A registration without endpoints (written
// by a Gregor that predates them) has its one endpoint on every listener.
func (bi *BrokerInfo) Endpoint(listener string) (host string, port int32, ok bool) {
	if len(bi.Endpoints) == 0 {
		return bi.Host, bi.Port, true
	}
	for _, e := range bi.Endpoints {
		if e.Listener == listener {
			return e.Host, e.Port, true
		}
	}
	return "", 0, false
}

// Metadata is an immutable view of the cluster metadata as of one etcd
// revision: every write of a transaction is either all in it or not at all.
// Nothing reachable from it may be modified; new views are new values.
type Metadata struct {
	ClusterID string
	// Revision is the etcd revision the view reflects: all writes under the
	// prefix up to and including it are in the view.
	Revision int64
	// ControllerID is what Metadata and DescribeCluster answers name as
	// the controller: the elected Controller while it is a live broker,
	// else (between two terms) the lowest live broker id, -1 when none is
	// live. Any broker serves the admin requests clients send there (each
	// writes to etcd itself), as any Kafka 4 broker forwards them, so a
	// stand-in between terms serves as well.
	ControllerID int32
	// Controller is the elected controller, the broker that makes the
	// cluster's decisions; NodeID -1 while there is none.
	Controller ControllerInfo
	// Brokers are the live registered brokers, sorted by node id.
	Brokers []BrokerInfo
	// Fenced are the brokers registered once and not unregistered that are
	// not live, sorted by node id (Kafka's fenced brokers: their
	// partitions wait for them; UnregisterBroker forgets them).
	Fenced []BrokerInfo
	// Topics and TopicsByID hold the same *Topic values.
	Topics     map[string]*Topic
	TopicsByID map[TopicID]*Topic
	// BrokerConfigs are dynamic broker configs by node id; -1 holds the
	// cluster-wide defaults.
	BrokerConfigs map[int32]map[string]string
	// GroupConfigs are the dynamic configs of groups (the GROUP config
	// resource), by group id; a group need not exist to have them.
	GroupConfigs map[string]map[string]string
	// ACLs are the stored ACL bindings, in no particular order (see
	// acls.go); nothing enforces them yet.
	ACLs []acl.Binding
	// SCRAM are the stored SCRAM credentials (see scram.go): what a SCRAM
	// server checks a login against, never a password or salted password.
	SCRAM map[ScramKey]ScramCredential
	// ClientQuotas are the stored client quotas (see quotas.go), by
	// entity: Kafka's quota keys and their values, never empty.
	ClientQuotas map[QuotaEntity]map[string]float64
}

// Broker returns the registration of a live broker.
func (m *Metadata) Broker(id int32) (BrokerInfo, bool) {
	i, ok := slices.BinarySearchFunc(m.Brokers, id, func(b BrokerInfo, id int32) int {
		return cmp.Compare(b.NodeID, id)
	})
	if !ok {
		return BrokerInfo{}, false
	}
	return m.Brokers[i], true
}

// state is the decoded contents of the prefix, kept by the watch goroutine
// only, and turned into a new Metadata after each batch of events. Rebuilt
// topics are tracked so that a change touches only what it changed.
type state struct {
	keys keyspace

	clusterID     string
	brokers       map[int32]BrokerInfo
	registered    map[int32]BrokerInfo
	topics        map[string]topicRecord
	partitions    map[string]map[int32]partitionAt
	topicConfigs  map[string]map[string]string
	brokerConfigs map[int32]map[string]string
	groupConfigs  map[string]map[string]string
	acls          map[string]acl.Binding // by key
	aclsDirty     bool
	scram         map[ScramKey]ScramCredential
	scramDirty    bool
	quotas        map[QuotaEntity]map[string]float64
	quotasDirty   bool
	// controllers are the controller candidates by key, with the create
	// revision of each key.
	controllers map[string]controllerCandidate

	// built holds the Topic values of the last Metadata; dirty names the
	// topics to rebuild, and brokersDirty/configsDirty the other parts.
	built         map[string]*Topic
	dirty         map[string]bool
	brokersDirty  bool
	configsDirty  bool
	controlDirty  bool
	last          *Metadata
	warn          func(msg string, args ...any)
	decodeFailure int // count, for tests
}

func newState(keys keyspace, warn func(string, ...any)) *state {
	return &state{
		keys:          keys,
		brokers:       map[int32]BrokerInfo{},
		registered:    map[int32]BrokerInfo{},
		topics:        map[string]topicRecord{},
		partitions:    map[string]map[int32]partitionAt{},
		topicConfigs:  map[string]map[string]string{},
		brokerConfigs: map[int32]map[string]string{},
		groupConfigs:  map[string]map[string]string{},
		acls:          map[string]acl.Binding{},
		scram:         map[ScramKey]ScramCredential{},
		quotas:        map[QuotaEntity]map[string]float64{},
		controllers:   map[string]controllerCandidate{},
		built:         map[string]*Topic{},
		dirty:         map[string]bool{},
		brokersDirty:  true,
		configsDirty:  true,
		warn:          warn,
	}
}

type controllerCandidate struct {
	node int32
	rev  int64
}

// keyRevs are a key's create and mod revisions, as etcd reports them (zero
// for a deletion).
type keyRevs struct{ create, mod int64 }

// apply folds one key's new value (or its deletion) into the state. A value
// that does not decode is logged and treated as absent: one bad key must not
// stop the cache.
func (s *state) apply(key string, value []byte, revs keyRevs, deleted bool) {
	pk := s.keys.parse(key)
	decode := func(v any) bool {
		if err := unmarshal(value, v); err != nil {
			s.decodeFailure++
			s.warn("ignoring undecodable cluster metadata value", "key", key, "err", err)
			return false
		}
		return true
	}
	switch pk.kind {
	case kindClusterID:
		var r clusterIDRecord
		if !deleted && decode(&r) {
			s.clusterID = r.ID
		}
	case kindBroker:
		s.brokersDirty = true
		var r brokerRecord
		if deleted || !decode(&r) {
			delete(s.brokers, pk.node)
			return
		}
		s.brokers[pk.node] = r.info(pk.node)
	case kindRegistered:
		s.brokersDirty = true
		var r brokerRecord
		if deleted || !decode(&r) {
			delete(s.registered, pk.node)
			return
		}
		r.ShuttingDown = false
		s.registered[pk.node] = r.info(pk.node)
	case kindTopic:
		s.dirty[pk.topic] = true
		var r topicRecord
		if deleted || !decode(&r) {
			delete(s.topics, pk.topic)
			return
		}
		s.topics[pk.topic] = r
	case kindPartition:
		s.dirty[pk.topic] = true
		var r partitionRecord
		if deleted || !decode(&r) {
			if ps := s.partitions[pk.topic]; ps != nil {
				delete(ps, pk.partition)
				if len(ps) == 0 {
					delete(s.partitions, pk.topic)
				}
			}
			return
		}
		ps := s.partitions[pk.topic]
		if ps == nil {
			ps = map[int32]partitionAt{}
			s.partitions[pk.topic] = ps
		}
		ps[pk.partition] = partitionAt{state: PartitionState(r), rev: revs.mod}
	case kindTopicConfig:
		s.dirty[pk.topic] = true
		var r configRecord
		if deleted || !decode(&r) || len(r.Config) == 0 {
			delete(s.topicConfigs, pk.topic)
			return
		}
		s.topicConfigs[pk.topic] = r.Config
	case kindController:
		s.controlDirty = true
		var r controllerRecord
		if deleted || !decode(&r) {
			delete(s.controllers, key)
			return
		}
		s.controllers[key] = controllerCandidate{node: r.Node, rev: revs.create}
	case kindBrokerConfig:
		s.configsDirty = true
		var r configRecord
		if deleted || !decode(&r) || len(r.Config) == 0 {
			delete(s.brokerConfigs, pk.node)
			return
		}
		s.brokerConfigs[pk.node] = r.Config
	case kindGroupConfig:
		s.configsDirty = true
		var r configRecord
		if deleted || !decode(&r) || len(r.Config) == 0 {
			delete(s.groupConfigs, pk.topic)
			return
		}
		s.groupConfigs[pk.topic] = r.Config
	case kindACL:
		s.aclsDirty = true
		if deleted {
			delete(s.acls, key)
			return
		}
		s.acls[key] = pk.acl
	case kindScram:
		s.scramDirty = true
		var r scramRecord
		if deleted || !decode(&r) {
			delete(s.scram, pk.scram)
			return
		}
		s.scram[pk.scram] = ScramCredential(r)
	case kindQuota:
		s.quotasDirty = true
		var r quotaRecord
		if deleted || !decode(&r) || len(r.Quotas) == 0 {
			delete(s.quotas, pk.quota)
			return
		}
		s.quotas[pk.quota] = r.Quotas
	}
}

// snapshot builds the Metadata for revision rev, reusing every part of the
// previous one that no applied key touched.
func (s *state) snapshot(rev int64) *Metadata {
	prev := s.last
	m := &Metadata{ClusterID: s.clusterID, Revision: rev}

	if s.brokersDirty || prev == nil {
		m.Brokers = make([]BrokerInfo, 0, len(s.brokers))
		for _, b := range s.brokers {
			m.Brokers = append(m.Brokers, b)
		}
		slices.SortFunc(m.Brokers, func(a, b BrokerInfo) int { return cmp.Compare(a.NodeID, b.NodeID) })
		m.Fenced = nil
		for id, b := range s.registered {
			if _, live := s.brokers[id]; !live {
				m.Fenced = append(m.Fenced, b)
			}
		}
		slices.SortFunc(m.Fenced, func(a, b BrokerInfo) int { return cmp.Compare(a.NodeID, b.NodeID) })
	} else {
		m.Brokers, m.Fenced = prev.Brokers, prev.Fenced
	}
	if s.controlDirty || prev == nil {
		m.Controller = ControllerInfo{NodeID: -1}
		for _, cand := range s.controllers {
			if m.Controller.NodeID == -1 || cand.rev < m.Controller.Epoch {
				m.Controller = ControllerInfo{NodeID: cand.node, Epoch: cand.rev}
			}
		}
	} else {
		m.Controller = prev.Controller
	}
	m.ControllerID = -1
	if _, live := m.Broker(m.Controller.NodeID); live {
		m.ControllerID = m.Controller.NodeID
	} else if len(m.Brokers) > 0 {
		m.ControllerID = m.Brokers[0].NodeID
	}

	if s.configsDirty || prev == nil {
		m.BrokerConfigs = make(map[int32]map[string]string, len(s.brokerConfigs))
		for id, c := range s.brokerConfigs {
			m.BrokerConfigs[id] = c
		}
		m.GroupConfigs = make(map[string]map[string]string, len(s.groupConfigs))
		for id, c := range s.groupConfigs {
			m.GroupConfigs[id] = c
		}
	} else {
		m.BrokerConfigs, m.GroupConfigs = prev.BrokerConfigs, prev.GroupConfigs
	}
	if s.aclsDirty || prev == nil {
		m.ACLs = make([]acl.Binding, 0, len(s.acls))
		for _, b := range s.acls {
			m.ACLs = append(m.ACLs, b)
		}
	} else {
		m.ACLs = prev.ACLs
	}
	if s.scramDirty || prev == nil {
		m.SCRAM = make(map[ScramKey]ScramCredential, len(s.scram))
		for k, cr := range s.scram {
			m.SCRAM[k] = cr
		}
	} else {
		m.SCRAM = prev.SCRAM
	}
	if s.quotasDirty || prev == nil {
		m.ClientQuotas = maps.Clone(s.quotas)
	} else {
		m.ClientQuotas = prev.ClientQuotas
	}

	if len(s.dirty) > 0 || prev == nil {
		for name := range s.dirty {
			if t := s.buildTopic(name); t != nil {
				s.built[name] = t
			} else {
				delete(s.built, name)
			}
		}
		m.Topics = make(map[string]*Topic, len(s.built))
		m.TopicsByID = make(map[TopicID]*Topic, len(s.built))
		for name, t := range s.built {
			m.Topics[name] = t
			m.TopicsByID[t.ID] = t
		}
	} else {
		m.Topics, m.TopicsByID = prev.Topics, prev.TopicsByID
	}

	clear(s.dirty)
	s.brokersDirty, s.configsDirty, s.controlDirty, s.aclsDirty, s.scramDirty, s.quotasDirty = false, false, false, false, false, false
	s.last = m
	return m
}

// maxMissingPartitions is how many more partitions a topic record may count
// than there are partition states for it. Beyond that the record is taken
// as damaged: its count alone would size an allocation (up to 2^31
// partitions) and a warning per partition.
const maxMissingPartitions = 1024

// buildTopic assembles a topic from its record, partitions and configs, or
// returns nil when there is no (decodable) topic record. The record's
// partition count is authoritative; a missing partition state (possible only
// after a hand edit) shows as leaderless with no replicas. A record counting
// over maxMissingPartitions partitions without a state is ignored.
func (s *state) buildTopic(name string) *Topic {
	r, ok := s.topics[name]
	if !ok {
		return nil
	}
	id, err := ParseTopicID(r.ID)
	if err != nil {
		s.decodeFailure++
		s.warn("ignoring topic with undecodable id", "topic", name, "err", err)
		return nil
	}
	ps := s.partitions[name]
	if int64(r.Partitions) > int64(len(ps))+maxMissingPartitions {
		s.decodeFailure++
		s.warn("ignoring topic with more partitions than states", "topic", name, "partitions", r.Partitions, "states", len(ps))
		return nil
	}
	t := &Topic{Name: name, ID: id, Configs: s.topicConfigs[name]}
	n := max(r.Partitions, 0)
	t.Partitions = make([]PartitionState, n)
	t.revs = make([]int64, n)
	for p := range n {
		at, ok := ps[p]
		if !ok {
			s.warn("topic partition has no state", "topic", name, "partition", p)
			at.state = PartitionState{Leader: -1, LeaderEpoch: -1}
		}
		t.Partitions[p], t.revs[p] = at.state, at.rev
	}
	return t
}
