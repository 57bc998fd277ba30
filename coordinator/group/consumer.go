package group

// Consumer groups of the next-generation protocol (KIP-848): the group
// coordinator assigns the partitions itself (server-side assignors) and
// members move towards their target assignment through heartbeats
// (ConsumerGroupHeartbeat), one safe step at a time (reconcile.go).
//
// A group is a consumer group when it holds consumer state (group.consumer
// is set); it then has no classic members. Its offsets are the same as a
// classic group's. State changes are made as Kafka's coordinator makes
// them: each change is a record (consumer_records.go), applied to memory
// by the same function whether it was just written or is replayed at load
// (applyConsumerRecord), so a loaded coordinator holds what the live one
// held.

import (
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Member epochs with a meaning in ConsumerGroupHeartbeat.
const (
	joinMemberEpoch        int32 = 0
	leaveMemberEpoch       int32 = -1
	staticLeaveMemberEpoch int32 = -2
)

// consumerGroupType is the group type ListGroups v5 reports for consumer
// groups.
const consumerGroupType = "consumer"

// ConsumerState is the state of a consumer group, with Kafka's names.
type ConsumerState int8

// The consumer group states (Kafka's ConsumerGroupState): Empty without
// members; Assigning while the group epoch is ahead of the target
// assignment; Reconciling while a member is not at the target; Stable.
const (
	ConsumerEmpty ConsumerState = iota
	ConsumerAssigning
	ConsumerReconciling
	ConsumerStable
)

func (s ConsumerState) String() string {
	switch s {
	case ConsumerEmpty:
		return "Empty"
	case ConsumerAssigning:
		return "Assigning"
	case ConsumerReconciling:
		return "Reconciling"
	case ConsumerStable:
		return "Stable"
	}
	return "Unknown"
}

// consumerGroup is the state of a KIP-848 group.
type consumerGroup struct {
	epoch           int32
	assignmentEpoch int32
	members         map[string]*consumerMember
	static          map[string]string // instance id -> member id
	// target is each member's target assignment at assignmentEpoch.
	target map[string]partitionSet
	// holders is, for each partition some member holds (assigned or
	// pending revocation), that member's epoch.
	holders map[[16]byte]map[int32]int32
	// subscription is the metadata of the subscribed topics at the last
	// group epoch: name -> id and partition count.
	subscription map[string]subscribedTopic
}

// subscribedTopic is what the group knew of a subscribed topic.
type subscribedTopic struct {
	id         [16]byte
	partitions int32
}

// consumerMember is one member of a consumer group.
type consumerMember struct {
	id         string
	instanceID *string
	rackID     *string
	clientID   string
	clientHost string
	topics     []string // subscribed topic names, sorted
	regex      *string
	re         *regexp.Regexp // regex compiled; nil without one (or one that does not compile)
	// describable filters what re matches (Input.TopicDescribable).
	describable        func(topic string) bool
	rebalanceTimeoutMs int32
	assignor           *string
	// classic is set for a member that speaks the classic protocol
	// (migration.go).
	classic *classicMeta
	reconcileState
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{
		members:      map[string]*consumerMember{},
		static:       map[string]string{},
		target:       map[string]partitionSet{},
		holders:      map[[16]byte]map[int32]int32{},
		subscription: map[string]subscribedTopic{},
	}
}

// state is the group's state, derived as Kafka derives it.
func (cg *consumerGroup) state() ConsumerState {
	switch {
	case len(cg.members) == 0:
		return ConsumerEmpty
	case cg.epoch > cg.assignmentEpoch:
		return ConsumerAssigning
	}
	for _, m := range cg.members {
		if m.state != memberStable || m.epoch != cg.assignmentEpoch {
			return ConsumerReconciling
		}
	}
	return ConsumerStable
}

// holderEpoch returns the epoch of the member holding a partition, -1 when
// none does.
func (cg *consumerGroup) holderEpoch(topic [16]byte, p int32) int32 {
	if e, ok := cg.holders[topic][p]; ok {
		return e
	}
	return -1
}

// release forgets the partitions m holds.
func (cg *consumerGroup) release(m *consumerMember) {
	for _, set := range []partitionSet{m.assigned, m.pendingRevocation} {
		for t, ps := range set {
			for p := range ps {
				delete(cg.holders[t], p)
				if len(cg.holders[t]) == 0 {
					delete(cg.holders, t)
				}
			}
		}
	}
}

// hold records the partitions m holds at its epoch.
func (cg *consumerGroup) hold(m *consumerMember) {
	for _, set := range []partitionSet{m.assigned, m.pendingRevocation} {
		for t, ps := range set {
			for p := range ps {
				if cg.holders[t] == nil {
					cg.holders[t] = map[int32]int32{}
				}
				cg.holders[t][p] = m.epoch
			}
		}
	}
}

// sortedMemberIDs returns the member ids in order.
func (cg *consumerGroup) sortedMemberIDs() []string {
	ids := make([]string, 0, len(cg.members))
	for id := range cg.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// consumerGroupHeartbeat handles ConsumerGroupHeartbeat (Kafka's
// GroupMetadataManager.consumerGroupHeartbeat).
func (c *Coordinator) consumerGroupHeartbeat(in Input, req *kmsg.ConsumerGroupHeartbeatRequest) {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	fail := func(code int16, msg string) {
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		c.respond(in.Token, resp)
	}
	if code, msg := c.checkHeartbeat(in.Version, req); code != errNone {
		fail(code, msg)
		return
	}
	if req.MemberEpoch == leaveMemberEpoch || req.MemberEpoch == staticLeaveMemberEpoch {
		c.consumerGroupLeave(in, req, resp, fail)
		return
	}
	join := req.MemberEpoch == joinMemberEpoch
	g := c.groups[req.Group]
	switch {
	case g == nil && !join:
		fail(errGroupIDNotFound, "Consumer group "+req.Group+" not found.")
		return
	case g != nil && g.consumer == nil && join && g.isEmptyClassic():
		// An empty classic group (offsets only) becomes a consumer
		// group: its classic metadata is deleted, its offsets stay.
		c.emit(groupTombstone(g.id))
		g.consumer = newConsumerGroup()
	case g != nil && g.consumer == nil && join && c.canUpgrade(g):
		// A classic group with members becomes a consumer group with
		// them (migration.go).
		if err := c.upgradeToConsumer(g); err != nil {
			fail(errGroupIDNotFound, "Cannot upgrade the classic group "+g.id+
				" to consumer group because the embedded consumer protocol is malformed.")
			return
		}
	case g != nil && g.consumer == nil:
		fail(errGroupIDNotFound, "Group "+req.Group+" is not a consumer group.")
		return
	case g == nil:
		g = newGroup(req.Group, c.nowMs())
		g.consumer = newConsumerGroup()
		c.groups[g.id] = g
	}
	cg := g.consumer

	memberID := req.MemberID
	if memberID == "" {
		memberID = c.newUUID()
	}
	m := cg.members[memberID]
	isNew := m == nil
	switch {
	case req.InstanceID != nil:
		var code int16
		var msg string
		m, code, msg = c.staticMember(g, memberID, *req.InstanceID, req, join)
		if code != errNone {
			fail(code, msg)
			return
		}
		isNew = m == nil || m.id != memberID
	case m == nil && !join:
		fail(errUnknownMemberID, "Member "+memberID+" is not a member of group "+g.id+".")
		return
	case m != nil && join:
		// A known member joining again (it lost its epoch): it starts
		// over, as a fenced member that rejoins would.
		c.fenceConsumerMember(g, m)
		m, isNew = nil, true
	case m != nil && m.classic != nil:
		fail(errUnknownMemberID, "Member "+memberID+" uses the classic protocol, not the consumer protocol.")
		return
	case m != nil:
		if code, msg := checkMemberEpoch(m, req.MemberEpoch, req.Topics); code != errNone {
			fail(code, msg)
			return
		}
	}
	if isNew && int32(len(cg.members)) >= c.cfg.MaxSize {
		fail(errGroupMaxSizeReached, "The consumer group has reached its maximum number of members.")
		return
	}

	// 1. The member's metadata, and the group epoch when what it
	// subscribes to changed.
	next := c.updatedMember(m, memberID, in, req)
	bump := m == nil || !slices.Equal(m.topics, next.topics) || !equalStringPtr(m.regex, next.regex) ||
		!equalStringPtr(m.assignor, next.assignor)
	if m == nil || !sameMemberMetadata(m, next) {
		c.writeConsumerMember(g, next)
	}
	cg.members[memberID].describable = in.TopicDescribable
	// 2. A new target assignment when the group epoch moved past it.
	c.advanceConsumerGroup(g, bump)

	// 3. One reconciliation step.
	member := cg.members[memberID]
	before := member.reconcileState
	if err := c.reconcileMember(g, member, ownedSet(req.Topics)); err != nil {
		fail(errFencedMemberEpoch, err.Error())
		return
	}
	c.scheduleConsumerSession(g, memberID)

	resp.MemberID = &memberID
	resp.MemberEpoch = member.epoch
	resp.HeartbeatIntervalMillis = int32(c.cfg.overrides(g.id).ConsumerHeartbeatInterval / time.Millisecond)
	full := join || (req.RebalanceTimeoutMillis != -1 && req.SubscribedTopicNames != nil && req.Topics != nil)
	if full || !before.assigned.equal(member.assigned) {
		resp.Assignment = responseAssignment(member.assigned)
	}
	c.respond(in.Token, resp)
}

// checkHeartbeat validates a heartbeat's fields as Kafka does; a non-zero
// code is the answer.
func (c *Coordinator) checkHeartbeat(version int16, req *kmsg.ConsumerGroupHeartbeatRequest) (int16, string) {
	switch {
	case req.Group == "":
		return errInvalidRequest, "GroupId can't be empty."
	case len(req.Group) > math.MaxInt16 || len(req.MemberID) > math.MaxInt16 ||
		(req.InstanceID != nil && len(*req.InstanceID) > math.MaxInt16):
		// The record keys hold them as int16-length strings.
		return errInvalidRequest, "GroupId, MemberId and InstanceId must be at most 32767 bytes."
	case req.InstanceID != nil && *req.InstanceID == "":
		return errInvalidRequest, "InstanceId can't be empty."
	case req.RackID != nil && *req.RackID == "":
		return errInvalidRequest, "RackId can't be empty."
	case version >= 1 && req.MemberID == "":
		return errInvalidRequest, "MemberId can't be empty."
	}
	switch e := req.MemberEpoch; {
	case e > 0 || e == leaveMemberEpoch:
		if req.MemberID == "" {
			return errInvalidRequest, "MemberId can't be empty."
		}
	case e == joinMemberEpoch:
		switch {
		case req.RebalanceTimeoutMillis == -1:
			return errInvalidRequest, "RebalanceTimeoutMs must be provided in first request."
		case req.Topics == nil || len(req.Topics) > 0:
			return errInvalidRequest, "TopicPartitions must be empty when (re-)joining."
		case req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil:
			return errInvalidRequest, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."
		}
	case e == staticLeaveMemberEpoch:
		if req.MemberID == "" {
			return errInvalidRequest, "MemberId can't be empty."
		}
		if req.InstanceID == nil {
			return errInvalidRequest, "InstanceId can't be null."
		}
	default:
		return errInvalidRequest, "MemberEpoch is invalid."
	}
	if req.ServerAssignor != nil {
		if _, ok := assignors[*req.ServerAssignor]; !ok {
			names := make([]string, 0, len(assignors))
			for n := range assignors {
				names = append(names, n)
			}
			sort.Strings(names)
			return errUnsupportedAssignor, "ServerAssignor " + *req.ServerAssignor + " is not supported. Supported assignors: " +
				strings.Join(names, ", ") + "."
		}
	}
	if req.SubscribedTopicRegex != nil {
		if _, err := compileTopicRegex(*req.SubscribedTopicRegex); err != nil {
			return errInvalidRegularExpression, "SubscribedTopicRegex `" + *req.SubscribedTopicRegex + "` is not a valid regular expression: " + err.Error() + "."
		}
	}
	return errNone, ""
}

// checkMemberEpoch fences a member whose epoch is not the coordinator's: a
// higher one, or a lower one other than its previous epoch with nothing
// beyond its assignment owned (its answer with the new epoch may have been
// lost).
func checkMemberEpoch(m *consumerMember, epoch int32, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) (int16, string) {
	switch {
	case epoch > m.epoch:
		return errFencedMemberEpoch, "The consumer group member has a greater member epoch than the one known by the group coordinator. The member must abandon all its partitions and rejoin."
	case epoch < m.epoch:
		if epoch != m.previousEpoch || owned == nil || !subsetOf(ownedSet(owned), m.assigned) {
			return errFencedMemberEpoch, "The consumer group member has a smaller member epoch than the one known by the group coordinator. The member must abandon all its partitions and rejoin."
		}
	}
	return errNone, ""
}

// subsetOf reports whether every partition of s is in of.
func subsetOf(s, of partitionSet) bool {
	for t, ps := range s {
		for p := range ps {
			if !of.has(t, p) {
				return false
			}
		}
	}
	return true
}

// ownedSet converts a heartbeat's owned partitions; nil stays nil (not
// reported).
func ownedSet(topics []kmsg.ConsumerGroupHeartbeatRequestTopic) partitionSet {
	if topics == nil {
		return nil
	}
	s := partitionSet{}
	for _, t := range topics {
		for _, p := range t.Partitions {
			s.add(t.TopicID, p)
		}
	}
	return s
}

// responseAssignment builds a heartbeat's assignment, topics and
// partitions in order.
func responseAssignment(s partitionSet) *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
	a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	for _, t := range sortedKeys(s) {
		at := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		at.TopicID = t
		at.Partitions = slices.Sorted(maps.Keys(s[t]))
		if len(at.Partitions) == 0 {
			continue
		}
		a.Topics = append(a.Topics, at)
	}
	return &a
}

func equalStringPtr(a, b *string) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}
