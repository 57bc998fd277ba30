package group

import (
	"bytes"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// State is the state of a classic group, with Kafka's names.
type State int8

// The classic group states. Transitions (Kafka's ClassicGroupState):
//
//	Empty               -> PreparingRebalance (a member joins)
//	PreparingRebalance  -> CompletingRebalance (join phase done, members left)
//	                    -> Empty (join phase done, no member left)
//	CompletingRebalance -> Stable (the leader's SyncGroup is applied)
//	                    -> PreparingRebalance (join, leave, expiry)
//	Stable              -> PreparingRebalance (join, leave, expiry)
//	any                 -> Dead (deleted or expired)
//
// A Dead group is removed from the coordinator at once, so requests only see
// Dead as "the group does not exist".
const (
	StateEmpty State = iota
	StatePreparingRebalance
	StateCompletingRebalance
	StateStable
	StateDead
)

// String returns Kafka's name of the state, as DescribeGroups and ListGroups
// report it.
func (s State) String() string {
	switch s {
	case StateEmpty:
		return "Empty"
	case StatePreparingRebalance:
		return "PreparingRebalance"
	case StateCompletingRebalance:
		return "CompletingRebalance"
	case StateStable:
		return "Stable"
	case StateDead:
		return "Dead"
	}
	return "Unknown"
}

// consumerProtocolType is the protocol type of Kafka consumers; only groups
// of this type have their subscriptions parsed.
const consumerProtocolType = "consumer"

// classicGroupType is the group type ListGroups v5 reports and filters on.
const classicGroupType = "classic"

// group is one classic group and its committed offsets. Its fields follow
// Kafka's ClassicGroup; member order is join order, which makes leader
// choice, protocol votes and member lists deterministic.
type group struct {
	id string

	state     State
	prevState State
	// stateTimestamp is the time (Unix ms) of the last state transition,
	// -1 when unknown (groups loaded from old records). Offsets of an empty
	// group expire relative to it.
	stateTimestamp int64

	generation   int32
	protocolType string // "" until the first member joins; kept when empty
	protocol     string // the selected protocol, when hasProtocol
	hasProtocol  bool
	leader       string // "" when there is none

	members     map[string]*member
	order       []string          // member ids in join order
	static      map[string]string // group.instance.id -> member id
	pending     map[string]bool   // ids handed out with MEMBER_ID_REQUIRED
	pendingSync map[string]bool   // members that must still send SyncGroup
	awaiting    int               // members with a parked JoinGroup
	supported   map[string]int    // protocol name -> members supporting it

	// subscribed is the union of the members' subscribed topics, when
	// subscribedKnown (consumer protocol type, parsed metadata).
	subscribed      map[string]bool
	subscribedKnown bool

	// newMemberAdded extends the initial rebalance delay.
	newMemberAdded bool

	offsets map[string]map[int32]*offset // topic -> partition -> commit
	// txns are the offsets of open transactions (TxnOffsetCommit), by
	// producer id, invisible until the transaction's COMMIT marker.
	txns map[int64]pendingTxn

	// consumer is set for a consumer group of the next-generation
	// protocol (KIP-848, consumer.go); the classic fields are then
	// unused.
	consumer *consumerGroup
}

// member is one member of a classic group.
type member struct {
	id         string
	instanceID *string // static membership (KIP-345)
	clientID   string
	clientHost string

	rebalanceTimeoutMs int32
	sessionTimeoutMs   int32
	protocolType       string
	protocols          []kmsg.JoinGroupRequestProtocol // in preference order
	assignment         []byte

	join *waiter // parked JoinGroup, if any
	sync *waiter // parked SyncGroup, if any

	// isNew: the member has not yet been part of a completed join phase;
	// it cannot heartbeat, so its session does not protect it.
	isNew bool
}

// waiter is a parked request: the token its response goes to and the
// version to answer with.
type waiter struct {
	token   any
	version int16
}

// offset is one committed offset.
type offset struct {
	offset      int64
	leaderEpoch int32 // -1 when none
	metadata    string
	commitMs    int64
	expireMs    int64    // -1 unless the commit asked for its own retention (v2-v4)
	topicID     [16]byte // set when committed by topic id (v10)
	// ordinal orders the offsets applied to the coordinator as the log
	// orders their records (see Coordinator.nextOrdinal).
	ordinal int64
}

func newGroup(id string, nowMs int64) *group {
	return &group{
		id:             id,
		state:          StateEmpty,
		prevState:      StateDead,
		stateTimestamp: nowMs,
		members:        make(map[string]*member),
		static:         make(map[string]string),
		pending:        make(map[string]bool),
		pendingSync:    make(map[string]bool),
		supported:      make(map[string]int),
		offsets:        make(map[string]map[int32]*offset),
		txns:           make(map[int64]pendingTxn),
	}
}

func (g *group) transition(to State, nowMs int64) {
	g.prevState = g.state
	g.state = to
	g.stateTimestamp = nowMs
}

func (g *group) isLeader(id string) bool { return g.leader != "" && g.leader == id }

// canRebalance: a rebalance can start from this state.
func (g *group) canRebalance() bool {
	return g.state == StateStable || g.state == StateCompletingRebalance || g.state == StateEmpty
}

// allJoined: every member has a parked JoinGroup and no member id handed
// out with MEMBER_ID_REQUIRED is still outstanding.
func (g *group) allJoined() bool {
	return len(g.members) == g.awaiting && len(g.pending) == 0
}

// rebalanceTimeoutMs is the longest rebalance timeout of the members.
func (g *group) rebalanceTimeoutMs() int32 {
	var longest int32
	for _, m := range g.members {
		if m.rebalanceTimeoutMs > longest {
			longest = m.rebalanceTimeoutMs
		}
	}
	return longest
}

// protocolNames returns the distinct names of protocols, in order.
func protocolNames(ps []kmsg.JoinGroupRequestProtocol) []string {
	names := make([]string, 0, len(ps))
	for _, p := range ps {
		if !slices.Contains(names, p.Name) {
			names = append(names, p.Name)
		}
	}
	return names
}

// supportsProtocols reports whether a member of protocolType offering names
// may join: any non-empty offer into an empty group, otherwise the same type
// and at least one protocol every current member supports.
func (g *group) supportsProtocols(protocolType string, names []string) bool {
	if g.state == StateEmpty {
		return protocolType != "" && len(names) > 0
	}
	if g.protocolType != protocolType {
		return false
	}
	for _, n := range names {
		if g.supported[n] == len(g.members) {
			return true
		}
	}
	return false
}

func (g *group) countProtocols(m *member, delta int) {
	for _, n := range protocolNames(m.protocols) {
		g.supported[n] += delta
		if g.supported[n] == 0 {
			delete(g.supported, n)
		}
	}
}

// add makes m a member; join is its parked JoinGroup, if any.
func (g *group) add(m *member, join *waiter) {
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
	if len(g.members) == 0 {
		g.protocolType = m.protocolType
	}
	if g.leader == "" {
		g.leader = m.id
	}
	g.members[m.id] = m
	g.order = append(g.order, m.id)
	g.countProtocols(m, +1)
	m.join = join
	if join != nil {
		g.awaiting++
	}
	delete(g.pending, m.id)
}

// remove drops a member or a pending member id. A removed leader is
// replaced by the earliest joined remaining member.
func (g *group) remove(id string) {
	if m, ok := g.members[id]; ok {
		delete(g.members, id)
		g.order = slices.DeleteFunc(g.order, func(x string) bool { return x == id })
		g.countProtocols(m, -1)
		if m.join != nil {
			g.awaiting--
		}
		if m.instanceID != nil && g.static[*m.instanceID] == id {
			delete(g.static, *m.instanceID)
		}
	}
	if g.isLeader(id) {
		g.leader = ""
		if len(g.order) > 0 {
			g.leader = g.order[0]
		}
	}
	delete(g.pending, id)
	delete(g.pendingSync, id)
}

// updateMember replaces the protocols and timeouts of m and sets (or, with
// nil, clears) its parked JoinGroup.
func (g *group) updateMember(m *member, protocols []kmsg.JoinGroupRequestProtocol, rebalanceMs, sessionMs int32, join *waiter) {
	g.countProtocols(m, -1)
	m.protocols = protocols
	g.countProtocols(m, +1)
	m.rebalanceTimeoutMs = rebalanceMs
	m.sessionTimeoutMs = sessionMs
	switch {
	case join != nil && m.join == nil:
		g.awaiting++
	case join == nil && m.join != nil:
		g.awaiting--
	}
	m.join = join
}

// takeJoin clears and returns m's parked JoinGroup, keeping the count.
func (g *group) takeJoin(m *member) *waiter {
	w := m.join
	if w != nil {
		m.join = nil
		g.awaiting--
	}
	return w
}

// validateMember checks a member id (and group.instance.id) against the
// group: UNKNOWN_MEMBER_ID for unknown ones, FENCED_INSTANCE_ID when the
// instance id belongs to another member id.
func (g *group) validateMember(memberID string, instanceID *string) int16 {
	if instanceID != nil {
		existing, ok := g.static[*instanceID]
		if !ok {
			return errUnknownMemberID
		}
		if existing != memberID {
			return errFencedInstanceID
		}
	}
	if _, ok := g.members[memberID]; !ok {
		return errUnknownMemberID
	}
	return errNone
}

// electJoinedLeader keeps the leader if it rejoined, else picks the earliest
// joined member that did. False when no member rejoined.
func (g *group) electJoinedLeader() bool {
	if g.leader == "" {
		return false
	}
	if g.members[g.leader].join != nil {
		return true
	}
	for _, id := range g.order {
		if g.members[id].join != nil {
			g.leader = id
			return true
		}
	}
	return false
}

// selectProtocol picks the protocol for the next generation: among those all
// members support, each member votes for the first in its own preference
// order, and the most votes win. Ties go to the protocol the earliest
// joined member prefers (Kafka leaves ties to hash order).
func (g *group) selectProtocol() string {
	if len(g.order) == 0 {
		return ""
	}
	candidate := func(n string) bool { return g.supported[n] == len(g.members) }
	votes := make(map[string]int)
	for _, id := range g.order {
		for _, p := range g.members[id].protocols {
			if candidate(p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best, bestVotes := "", -1
	for _, n := range protocolNames(g.members[g.order[0]].protocols) {
		if candidate(n) && votes[n] > bestVotes {
			best, bestVotes = n, votes[n]
		}
	}
	return best
}

// metadata returns m's metadata for protocol name.
func (m *member) metadata(name string) []byte {
	for _, p := range m.protocols {
		if p.Name == name {
			return p.Metadata
		}
	}
	return nil
}

// matches reports whether protocols are exactly m's, in the same order.
func (m *member) matches(protocols []kmsg.JoinGroupRequestProtocol) bool {
	return sameProtocols(m.protocols, protocols)
}

// sameProtocols reports whether two protocol lists are the same, in the
// same order.
func sameProtocols(a, b []kmsg.JoinGroupRequestProtocol) bool {
	return slices.EqualFunc(a, b, func(x, y kmsg.JoinGroupRequestProtocol) bool {
		return x.Name == y.Name && bytes.Equal(x.Metadata, y.Metadata)
	})
}

// hasSatisfiedHeartbeat: a member waiting in a rebalance needs no
// heartbeats, unless it never was part of a generation.
func (m *member) hasSatisfiedHeartbeat() bool {
	if m.isNew {
		return false
	}
	return m.join != nil || m.sync != nil
}

// computeSubscriptions recomputes the union of subscribed topics from the
// members' consumer protocol metadata. Like Kafka, only the version 0 prefix
// (version, topics) of the subscription is read, so future versions parse.
func (g *group) computeSubscriptions() {
	g.subscribed, g.subscribedKnown = nil, false
	if g.protocolType != consumerProtocolType {
		return
	}
	if len(g.members) == 0 {
		g.subscribed, g.subscribedKnown = map[string]bool{}, true
		return
	}
	if !g.hasProtocol {
		return
	}
	topics := make(map[string]bool)
	for _, id := range g.order {
		meta := g.members[id].metadata(g.protocol)
		if len(meta) < 2 {
			return
		}
		v0 := append([]byte{0, 0}, meta[2:]...)
		var sub kmsg.ConsumerMemberMetadata
		if err := sub.ReadFrom(v0); err != nil {
			return
		}
		for _, t := range sub.Topics {
			topics[t] = true
		}
	}
	g.subscribed, g.subscribedKnown = topics, true
}

// isSubscribedTo reports whether a member subscribes to topic. When the
// subscriptions are unknown, a consumer group counts as subscribed to
// everything and any other group to nothing.
func (g *group) isSubscribedTo(topic string) bool {
	if g.consumer != nil {
		return g.consumer.subscribesTo(topic)
	}
	if g.subscribedKnown {
		return g.subscribed[topic]
	}
	return g.protocolType == consumerProtocolType
}

// sortedTopics returns the topics with committed offsets, sorted.
func (g *group) sortedTopics() []string {
	ts := make([]string, 0, len(g.offsets))
	for t := range g.offsets {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return ts
}

// sortedPartitions returns the partitions of topic with offsets, sorted.
func (g *group) sortedPartitions(topic string) []int32 {
	ps := make([]int32, 0, len(g.offsets[topic]))
	for p := range g.offsets[topic] {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}

func (g *group) setOffset(topic string, partition int32, o *offset) {
	ps := g.offsets[topic]
	if ps == nil {
		ps = make(map[int32]*offset)
		g.offsets[topic] = ps
	}
	ps[partition] = o
}

func (g *group) deleteOffset(topic string, partition int32) bool {
	ps := g.offsets[topic]
	if _, ok := ps[partition]; !ok {
		return false
	}
	delete(ps, partition)
	if len(ps) == 0 {
		delete(g.offsets, topic)
	}
	return true
}
