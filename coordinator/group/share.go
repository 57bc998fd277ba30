package group

// Share groups (KIP-932): the membership side, which the group coordinator
// serves (ShareGroupHeartbeat, ShareGroupDescribe). A share group's members
// may share partitions: the coordinator hands out partitions, and the
// partition leaders hand out records to whoever fetches them (package
// coordinator/share). With no exclusive ownership there is nothing to
// revoke, so a member takes its new target assignment at its next
// heartbeat, in one step.
//
// Share groups live in their own map (Coordinator.shares) but share the
// group id namespace with classic and consumer groups: a share request for a
// classic or consumer group's id fails with GROUP_ID_NOT_FOUND, and a
// classic or consumer request for a share group's id fails as Kafka fails
// it (see shareGroupConflict).
//
// What is written to __consumer_offsets is the group epoch (Kafka's
// ShareGroupMetadata record, key version 11), so a reloaded coordinator
// knows the group and never hands out an epoch twice, and the topics the
// group consumed (ShareGroupStatePartitionMetadata, key version 15, as its
// initialized topics), whose share offsets are the group's. Members are kept in
// memory only: after the coordinator moves, a member's next heartbeat gets
// UNKNOWN_MEMBER_ID and it joins again with epoch 0, as the client does after
// any fencing. Records in flight are untouched by that: they belong to the
// partition leaders.

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Names Kafka reports for share groups.
const (
	shareGroupType        = "share"
	shareProtocolType     = "share"
	shareAssignorName     = "simple"
	shareGroupMetadataKey = int16(11)
	// shareStatePartitionsKey is Kafka's ShareGroupStatePartitionMetadata
	// record: the topics whose share state the group has.
	shareStatePartitionsKey = int16(15)
)

// shareGroup is one share group.
type shareGroup struct {
	id              string
	epoch           int32
	assignmentEpoch int32
	members         map[string]*shareMember
	// target is each member's assignment at assignmentEpoch.
	target map[string]partitionSet
	// subscription is the subscribed topics' metadata at the last epoch.
	subscription map[string]subscribedTopic
	// consumed are the topics members ever subscribed to (Kafka's
	// initialized topics), by name: their share offsets are the group's
	// until the group is deleted, members or not.
	consumed map[string]subscribedTopic
}

// shareMember is one member of a share group.
type shareMember struct {
	id         string
	rackID     *string
	clientID   string
	clientHost string
	topics     []string // sorted
	epoch      int32
	assigned   partitionSet
}

func newShareGroup(id string) *shareGroup {
	return &shareGroup{
		id:           id,
		members:      map[string]*shareMember{},
		target:       map[string]partitionSet{},
		subscription: map[string]subscribedTopic{},
		consumed:     map[string]subscribedTopic{},
	}
}

// state is Kafka's ShareGroupState: Empty without members, else Stable.
func (sg *shareGroup) state() string {
	if len(sg.members) == 0 {
		return "Empty"
	}
	return "Stable"
}

func (sg *shareGroup) sortedMemberIDs() []string {
	ids := make([]string, 0, len(sg.members))
	for id := range sg.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// shareGroupHeartbeat handles ShareGroupHeartbeat (v1: the client names its
// member id; epoch 0 joins, -1 leaves).
func (c *Coordinator) shareGroupHeartbeat(in Input, req *kmsg.ShareGroupHeartbeatRequest) {
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	fail := func(code int16, msg string) {
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		c.respond(in.Token, resp)
	}
	if code, msg := checkShareHeartbeat(req); code != errNone {
		fail(code, msg)
		return
	}
	if g := c.groups[req.GroupID]; g != nil {
		fail(errGroupIDNotFound, "Group "+req.GroupID+" is not a share group.")
		return
	}
	sg := c.shares[req.GroupID]
	join := req.MemberEpoch == joinMemberEpoch
	if sg == nil && !join {
		fail(errGroupIDNotFound, "Share group "+req.GroupID+" not found.")
		return
	}
	m := (*shareMember)(nil)
	if sg != nil {
		m = sg.members[req.MemberID]
	}
	if req.MemberEpoch == leaveMemberEpoch {
		if m == nil {
			fail(errUnknownMemberID, "Member "+req.MemberID+" is not a member of group "+req.GroupID+".")
			return
		}
		c.removeShareMember(sg, m.id)
		resp.MemberID = &req.MemberID
		resp.MemberEpoch = leaveMemberEpoch
		c.respond(in.Token, resp)
		return
	}
	switch {
	case m == nil && !join:
		fail(errUnknownMemberID, "Member "+req.MemberID+" is not a member of group "+req.GroupID+".")
		return
	case m != nil && !join && req.MemberEpoch != m.epoch:
		fail(errFencedMemberEpoch, "The share group member has a member epoch other than the one known by the group coordinator. The member must rejoin.")
		return
	}
	if sg == nil {
		sg = newShareGroup(req.GroupID)
		c.shares[sg.id] = sg
	}
	isNew := m == nil
	if isNew && int32(len(sg.members)) >= c.cfg.ShareMaxSize {
		if len(sg.members) == 0 {
			delete(c.shares, sg.id)
		}
		fail(errGroupMaxSizeReached, "The share group has reached its maximum number of members.")
		return
	}

	// 1. The member's metadata; the group epoch moves when what the group
	// subscribes to changed.
	next := &shareMember{id: req.MemberID, rackID: req.RackID, clientID: in.ClientID, clientHost: in.ClientHost}
	if m != nil {
		next.topics, next.epoch, next.assigned = m.topics, m.epoch, m.assigned
		if req.RackID == nil {
			next.rackID = m.rackID
		}
	}
	if req.SubscribedTopicNames != nil {
		next.topics = slices.Compact(slices.Sorted(slices.Values(req.SubscribedTopicNames)))
	}
	if join {
		next.epoch, next.assigned = 0, partitionSet{}
	}
	bump := isNew || join || !slices.Equal(next.topics, m.topics)
	sg.members[next.id] = next
	if sub := c.shareSubscription(sg); !maps.Equal(sub, sg.subscription) {
		sg.subscription = sub
		bump = true
	}
	if bump {
		c.writeShareGroupEpoch(sg, sg.epoch+1)
	}
	c.noteConsumedTopics(sg)

	// 2. A new target assignment when the group epoch moved past it.
	if sg.epoch > sg.assignmentEpoch {
		sg.target = assignShare(sg)
		sg.assignmentEpoch = sg.epoch
	}

	// 3. The member takes its target at once.
	before := next.assigned
	if next.epoch != sg.assignmentEpoch {
		next.epoch = sg.assignmentEpoch
		next.assigned = sg.target[next.id]
		if next.assigned == nil {
			next.assigned = partitionSet{}
		}
	}
	c.scheduleShareSession(sg, next.id)

	resp.MemberID = &next.id
	resp.MemberEpoch = next.epoch
	resp.HeartbeatIntervalMillis = int32(c.cfg.overrides(sg.id).ShareHeartbeatInterval / time.Millisecond)
	if join || req.SubscribedTopicNames != nil || !before.equal(next.assigned) {
		resp.Assignment = shareResponseAssignment(next.assigned)
	}
	c.respond(in.Token, resp)
}

// checkShareHeartbeat validates a heartbeat as Kafka does.
func checkShareHeartbeat(req *kmsg.ShareGroupHeartbeatRequest) (int16, string) {
	switch {
	case req.GroupID == "":
		return errInvalidRequest, "GroupId can't be empty."
	case len(req.GroupID) > math.MaxInt16:
		return errInvalidRequest, "GroupId must be at most 32767 bytes."
	case req.MemberID == "":
		return errInvalidRequest, "MemberId can't be empty."
	case req.RackID != nil && *req.RackID == "":
		return errInvalidRequest, "RackId can't be empty."
	}
	switch e := req.MemberEpoch; {
	case e == joinMemberEpoch:
		if len(req.SubscribedTopicNames) == 0 {
			return errInvalidRequest, "SubscribedTopicNames must be set in first request."
		}
	case e > 0, e == leaveMemberEpoch:
	default:
		return errInvalidRequest, "MemberEpoch is invalid."
	}
	return errNone, ""
}

// shareSubscription is the metadata of the topics the group's members
// subscribe to, as the cluster has them now.
func (c *Coordinator) shareSubscription(sg *shareGroup) map[string]subscribedTopic {
	out := map[string]subscribedTopic{}
	if c.cfg.Topics == nil {
		return out
	}
	for _, m := range sg.members {
		for _, name := range m.topics {
			if _, done := out[name]; done {
				continue
			}
			if id, n, ok := c.cfg.Topics.TopicByName(name); ok {
				out[name] = subscribedTopic{id: id, partitions: n}
			}
		}
	}
	return out
}

// removeShareMember takes a member out of its group (it left, or its
// session expired) and moves the group to a new epoch.
func (c *Coordinator) removeShareMember(sg *shareGroup, memberID string) {
	delete(sg.members, memberID)
	delete(sg.target, memberID)
	c.timers.cancel(timerKey{kind: timerShareSession, group: sg.id, member: memberID})
	sg.subscription = c.shareSubscription(sg)
	c.writeShareGroupEpoch(sg, sg.epoch+1)
}

func (c *Coordinator) scheduleShareSession(sg *shareGroup, memberID string) {
	c.timers.schedule(&timer{
		key: timerKey{kind: timerShareSession, group: sg.id, member: memberID},
		at:  c.after(c.cfg.overrides(sg.id).ShareSessionTimeout),
	})
}

// shareSessionExpired removes a member whose session ran out.
func (c *Coordinator) shareSessionExpired(groupID, memberID string) {
	sg := c.shares[groupID]
	if sg == nil || sg.members[memberID] == nil {
		return
	}
	c.removeShareMember(sg, memberID)
}

// writeShareGroupEpoch records the group's new epoch.
func (c *Coordinator) writeShareGroupEpoch(sg *shareGroup, epoch int32) {
	sg.epoch = epoch
	w := newFlexValue()
	w.int32(epoch)
	w.noTags()
	c.emit(Record{Key: cgKey(shareGroupMetadataKey, sg.id, nil), Value: w.b})
}

// replayShare applies a ShareGroupMetadata record at load.
func (c *Coordinator) replayShare(key, value []byte) error {
	p, err := parseShareRecord(key, value)
	if err != nil {
		return err
	}
	if p.tombstone {
		if p.kind == shareGroupMetadataKey {
			delete(c.shares, p.group)
		} else if sg := c.shares[p.group]; sg != nil {
			sg.consumed = map[string]subscribedTopic{}
		}
		return nil
	}
	sg := c.shares[p.group]
	if sg == nil {
		sg = newShareGroup(p.group)
		c.shares[p.group] = sg
	}
	if p.kind == shareStatePartitionsKey {
		sg.consumed = p.consumed
		return nil
	}
	sg.epoch = p.epoch
	sg.assignmentEpoch = p.epoch // members rejoin: the first join moves past it
	return nil
}

type parsedShareRecord struct {
	kind      int16
	group     string
	tombstone bool
	epoch     int32
	consumed  map[string]subscribedTopic
}

func parseShareRecord(key, value []byte) (parsedShareRecord, error) {
	var p parsedShareRecord
	kr := &flexReader{b: key}
	p.kind = kr.int16()
	n := int(kr.int16())
	p.group = string(kr.take(n))
	if kr.err != nil || len(kr.b) != 0 {
		return p, fmt.Errorf("%w: share group record key: %v", ErrCorruptRecord, errOr(kr.err, "trailing bytes"))
	}
	if value == nil {
		p.tombstone = true
		return p, nil
	}
	r := &flexReader{b: value}
	if v := r.int16(); r.err == nil && v != 0 {
		return p, fmt.Errorf("%w: share group record value version %d", ErrCorruptRecord, v)
	}
	if p.kind == shareGroupMetadataKey {
		p.epoch = r.int32()
	} else {
		p.consumed = map[string]subscribedTopic{}
		for list := range 3 {
			n := r.arrayLen(16 + 1 + 1)
			for i := 0; i < n && r.err == nil; i++ {
				id, name := r.uuid(), r.str()
				var parts int32
				if list < 2 {
					ps := r.arrayLen(4)
					for j := 0; j < ps && r.err == nil; j++ {
						parts = max(parts, r.int32()+1)
					}
				}
				r.tags(nil)
				if list == 1 {
					p.consumed[name] = subscribedTopic{id: id, partitions: parts}
				}
			}
		}
	}
	r.tags(nil)
	if r.err != nil {
		return p, fmt.Errorf("%w: share group record value: %w", ErrCorruptRecord, r.err)
	}
	return p, nil
}

// deleteShareGroup deletes an empty share group (DeleteGroups).
func (c *Coordinator) deleteShareGroup(sg *shareGroup) {
	c.emit(Record{Key: cgKey(shareStatePartitionsKey, sg.id, nil)})
	c.emit(Record{Key: cgKey(shareGroupMetadataKey, sg.id, nil)})
	delete(c.shares, sg.id)
}

// noteConsumedTopics records the subscribed topics the group did not
// consume before.
func (c *Coordinator) noteConsumedTopics(sg *shareGroup) {
	changed := false
	for name, t := range sg.subscription {
		if sg.consumed[name] != t {
			sg.consumed[name] = t
			changed = true
		}
	}
	if !changed {
		return
	}
	w := newFlexValue()
	w.arrayLen(0) // initializing topics: none, Gregor's leaders initialize
	names := slices.Sorted(maps.Keys(sg.consumed))
	w.arrayLen(len(names))
	for _, name := range names {
		t := sg.consumed[name]
		w.uuid(t.id)
		w.str(name)
		w.arrayLen(int(t.partitions))
		for p := range t.partitions {
			w.int32(p)
		}
		w.noTags()
	}
	w.arrayLen(0) // deleting topics
	w.noTags()
	c.emit(Record{Key: cgKey(shareStatePartitionsKey, sg.id, nil), Value: w.b})
}

// assignShare is Kafka's "simple" share assignor for the group's current
// members: every subscribed partition goes to at least one member that
// subscribes to its topic. With no more members than partitions, each
// partition goes to one member and members get as even a share as their
// subscriptions allow; with more, members are spread over the partitions
// so each member gets one. A member keeps what it had where that stays
// balanced, so membership changes move few partitions.
func assignShare(sg *shareGroup) map[string]partitionSet {
	out := map[string]partitionSet{}
	ids := sg.sortedMemberIDs()
	for _, id := range ids {
		out[id] = partitionSet{}
	}
	names := make([]string, 0, len(sg.subscription))
	for name := range sg.subscription {
		names = append(names, name)
	}
	sort.Strings(names)
	// Each topic is assigned among its subscribers on its own.
	load := map[string]int{}
	for _, name := range names {
		t := sg.subscription[name]
		var subs []string
		for _, id := range ids {
			if slices.Contains(sg.members[id].topics, name) {
				subs = append(subs, id)
			}
		}
		if len(subs) == 0 || t.partitions <= 0 {
			continue
		}
		// Least-loaded members first (ties by id), so topics spread too.
		sort.SliceStable(subs, func(i, j int) bool { return load[subs[i]] < load[subs[j]] })
		n := int(t.partitions)
		if len(subs) <= n {
			// Each partition to one member: quotas of n/len or one more.
			quota := func(i int) int {
				q := n / len(subs)
				if i < n%len(subs) {
					q++
				}
				return q
			}
			owner := make([]string, n)
			count := map[string]int{}
			for i, id := range subs {
				limit := quota(i)
				for p := range sg.members[id].assigned[t.id] {
					if int(p) < n && owner[p] == "" && count[id] < limit {
						owner[p] = id
						count[id]++
					}
				}
			}
			next := 0
			for p := range n {
				if owner[p] != "" {
					continue
				}
				for count[subs[next]] >= quota(next) {
					next = (next + 1) % len(subs)
				}
				owner[p] = subs[next]
				count[subs[next]]++
			}
			for p, id := range owner {
				out[id].add(t.id, int32(p))
				load[id]++
			}
			continue
		}
		// More members than partitions: each member one partition, each
		// partition len/n members or one more.
		capacity := func(p int) int {
			c := len(subs) / n
			if p < len(subs)%n {
				c++
			}
			return c
		}
		members := make([]int, n)
		var unplaced []string
		for _, id := range subs {
			placed := false
			for p := range sg.members[id].assigned[t.id] {
				if int(p) < n && members[p] < capacity(int(p)) {
					out[id].add(t.id, p)
					members[p]++
					placed = true
					break
				}
			}
			if !placed {
				unplaced = append(unplaced, id)
			}
		}
		p := 0
		for _, id := range unplaced {
			for members[p] >= capacity(p) {
				p = (p + 1) % n
			}
			out[id].add(t.id, int32(p))
			members[p]++
		}
		for _, id := range subs {
			load[id]++
		}
	}
	return out
}

// shareResponseAssignment builds a heartbeat's assignment.
func shareResponseAssignment(s partitionSet) *kmsg.ShareGroupHeartbeatResponseAssignment {
	a := kmsg.NewShareGroupHeartbeatResponseAssignment()
	a.TopicPartitions = []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}
	for _, t := range sortedKeys(s) {
		ps := slices.Sorted(maps.Keys(s[t]))
		if len(ps) == 0 {
			continue
		}
		tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
		tp.TopicID, tp.Partitions = t, ps
		a.TopicPartitions = append(a.TopicPartitions, tp)
	}
	return &a
}

// shareGroupDescribe handles ShareGroupDescribe.
func (c *Coordinator) shareGroupDescribe(in Input, req *kmsg.ShareGroupDescribeRequest) {
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	for _, id := range req.GroupIDs {
		dg := kmsg.NewShareGroupDescribeResponseGroup()
		dg.GroupID = id
		dg.AuthorizedOperations = math.MinInt32
		if req.IncludeAuthorizedOperations {
			dg.AuthorizedOperations = allGroupOperations
			if in.AuthorizedOperations != nil {
				dg.AuthorizedOperations = in.AuthorizedOperations(id)
			}
		}
		sg := c.shares[id]
		switch {
		case sg == nil && c.groups[id] != nil:
			dg.ErrorCode = errGroupIDNotFound
			dg.ErrorMessage = strPtr("Group " + id + " is not a share group.")
			dg.AuthorizedOperations = math.MinInt32 // only for a group answered without an error, as Kafka
		case sg == nil:
			dg.ErrorCode = errGroupIDNotFound
			dg.ErrorMessage = strPtr("Group " + id + " not found.")
			dg.AuthorizedOperations = math.MinInt32
		default:
			dg.GroupState = sg.state()
			dg.GroupEpoch = sg.epoch
			dg.AssignmentEpoch = sg.assignmentEpoch
			dg.Assignor = shareAssignorName
			names := map[[16]byte]string{}
			for name, t := range sg.subscription {
				names[t.id] = name
			}
			for _, mid := range sg.sortedMemberIDs() {
				m := sg.members[mid]
				dm := kmsg.NewShareGroupDescribeResponseGroupMember()
				dm.MemberID, dm.RackID, dm.MemberEpoch = m.id, m.rackID, m.epoch
				dm.ClientID, dm.ClientHost = m.clientID, m.clientHost
				dm.SubscribedTopicNames = slices.Clone(m.topics)
				if dm.SubscribedTopicNames == nil {
					dm.SubscribedTopicNames = []string{}
				}
				dm.Assignment.TopicPartitions = []kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition{}
				for _, t := range sortedKeys(m.assigned) {
					ps := slices.Sorted(maps.Keys(m.assigned[t]))
					if len(ps) == 0 {
						continue
					}
					tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
					tp.TopicID, tp.Partitions, tp.Topic = t, ps, names[t]
					if tp.Topic == "" && c.cfg.Topics != nil {
						if name, _, ok := c.cfg.Topics.TopicByID(t); ok {
							tp.Topic = name
						}
					}
					dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, tp)
				}
				dg.Members = append(dg.Members, dm)
			}
		}
		resp.Groups = append(resp.Groups, dg)
	}
	c.respond(in.Token, resp)
}

// shareGroupConflict answers a classic or consumer group request naming a
// share group's id, as Kafka does; it reports whether it answered.
func (c *Coordinator) shareGroupConflict(in Input) bool {
	var id string
	code := errGroupIDNotFound
	switch r := in.Request.(type) {
	case *kmsg.JoinGroupRequest:
		id, code = r.Group, errInconsistentGroupProtocol
	case *kmsg.SyncGroupRequest:
		id, code = r.Group, errUnknownMemberID
	case *kmsg.HeartbeatRequest:
		id, code = r.Group, errUnknownMemberID
	case *kmsg.LeaveGroupRequest:
		id, code = r.Group, errUnknownMemberID
	case *kmsg.OffsetCommitRequest:
		id = r.Group
	case *kmsg.OffsetDeleteRequest:
		id = r.Group
	case *kmsg.TxnOffsetCommitRequest:
		id = r.Group
	case *kmsg.ConsumerGroupHeartbeatRequest:
		id = r.Group
	default:
		return false
	}
	if c.shares[id] == nil {
		return false
	}
	c.respond(in.Token, errorResponse(in.Request, code))
	return true
}

// ShareGroup describes a share group for the share group offset APIs:
// the topics it consumed (ever subscribed to), by name with their ids, and
// how many members it has now; ok is false when groupID is no share group here.
func (c *Coordinator) ShareGroup(groupID string) (topics map[string][16]byte, members int, ok bool) {
	sg := c.shares[groupID]
	if sg == nil {
		return nil, 0, false
	}
	topics = map[string][16]byte{}
	for name, t := range sg.consumed {
		topics[name] = t.id
	}
	return topics, len(sg.members), true
}
