package group

import (
	"encoding/base64"
	"maps"
	"regexp"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// isEmptyClassic reports whether g is a classic group without members (it
// may hold offsets), which a consumer group may take over.
func (g *group) isEmptyClassic() bool {
	return g.consumer == nil && len(g.members) == 0 && len(g.pending) == 0
}

// newUUID returns a random UUID in Kafka's form (URL-safe base64 without
// padding), for member ids the coordinator makes (heartbeat v0).
func (c *Coordinator) newUUID() string {
	u := c.randomUUID()
	return base64.RawURLEncoding.EncodeToString(u[:])
}

// compileTopicRegex compiles a subscription's regular expression. Kafka
// uses RE2/J, whose syntax is RE2's, as Go's regexp; the whole topic name
// must match.
func compileTopicRegex(expr string) (*regexp.Regexp, error) {
	return regexp.Compile("^(?:" + expr + ")$")
}

// updatedMember is m (nil for a new member) updated with what the
// heartbeat sets: fields a heartbeat leaves out (null, -1) keep their
// value.
func (c *Coordinator) updatedMember(m *consumerMember, memberID string, in Input, req *kmsg.ConsumerGroupHeartbeatRequest) *consumerMember {
	next := &consumerMember{id: memberID, rebalanceTimeoutMs: -1,
		reconcileState: reconcileState{assigned: partitionSet{}, pendingRevocation: partitionSet{}}}
	if m != nil {
		cp := *m
		next = &cp
		next.id = memberID
	}
	if req.InstanceID != nil {
		next.instanceID = req.InstanceID
	}
	if req.RackID != nil {
		next.rackID = req.RackID
	}
	if req.RebalanceTimeoutMillis != -1 {
		next.rebalanceTimeoutMs = req.RebalanceTimeoutMillis
	}
	if req.ServerAssignor != nil {
		next.assignor = req.ServerAssignor
	}
	if req.SubscribedTopicNames != nil {
		topics := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(topics)
		next.topics = slices.Compact(topics)
	}
	if req.SubscribedTopicRegex != nil {
		if *req.SubscribedTopicRegex == "" {
			next.regex = nil
		} else {
			next.regex = req.SubscribedTopicRegex
		}
	}
	next.clientID, next.clientHost = in.ClientID, in.ClientHost
	return next
}

// sameMemberMetadata reports whether two versions of a member have the same
// persisted metadata.
func sameMemberMetadata(a, b *consumerMember) bool {
	return equalStringPtr(a.instanceID, b.instanceID) && equalStringPtr(a.rackID, b.rackID) &&
		a.clientID == b.clientID && a.clientHost == b.clientHost && slices.Equal(a.topics, b.topics) &&
		equalStringPtr(a.regex, b.regex) && a.rebalanceTimeoutMs == b.rebalanceTimeoutMs &&
		equalStringPtr(a.assignor, b.assignor)
}

// topicNames lists the topics a regular expression may match, once per
// call that needs them: nil when no member of the group subscribes by one
// (or Config.Topics cannot list them).
func (c *Coordinator) topicNames(cg *consumerGroup) []string {
	lister, ok := c.cfg.Topics.(TopicLister)
	if !ok {
		return nil
	}
	for _, m := range cg.members {
		if m.re != nil {
			return lister.TopicNames()
		}
	}
	return nil
}

// memberTopics returns the topic names m subscribes to: its names and,
// of names (topicNames), those its regular expression matches that it may
// describe.
func memberTopics(m *consumerMember, names []string) []string {
	if m.re == nil {
		return m.topics
	}
	out := slices.Clone(m.topics)
	for _, name := range names {
		if m.re.MatchString(name) && (m.describable == nil || m.describable(name)) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// subscriptionMetadata resolves the topics the group's members subscribe
// to: those that exist, with their id and partition count.
func (c *Coordinator) subscriptionMetadata(cg *consumerGroup) map[string]subscribedTopic {
	out := map[string]subscribedTopic{}
	if c.cfg.Topics == nil {
		return out
	}
	names := c.topicNames(cg)
	for _, m := range cg.members {
		for _, name := range memberTopics(m, names) {
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

// computeTargetAssignment runs the group's assignor and writes the new
// target assignment at the group epoch: each member's that changed, then
// the assignment epoch.
func (c *Coordinator) computeTargetAssignment(g *group) {
	cg := g.consumer
	name := c.groupAssignor(cg)
	topics := map[[16]byte]assignorTopic{}
	byName := map[string][16]byte{}
	for n, t := range cg.subscription {
		topics[t.id] = assignorTopic{name: n, partitions: t.partitions}
		byName[n] = t.id
	}
	members := make([]assignorMember, 0, len(cg.members))
	names := c.topicNames(cg)
	for _, id := range cg.sortedMemberIDs() {
		m := cg.members[id]
		am := assignorMember{id: id, instanceID: m.instanceID, rackID: m.rackID,
			topics: map[[16]byte]bool{}, current: map[[16]byte][]int32{}}
		for _, n := range memberTopics(m, names) {
			if tid, ok := byName[n]; ok {
				am.topics[tid] = true
			}
		}
		for t, ps := range cg.target[id] {
			am.current[t] = slices.Sorted(maps.Keys(ps))
		}
		members = append(members, am)
	}
	result := assignors[name].assign(members, topics)
	for _, id := range cg.sortedMemberIDs() {
		next := partitionSet{}
		for t, ps := range result[id] {
			for _, p := range ps {
				next.add(t, p)
			}
		}
		if old, ok := cg.target[id]; !ok || !old.equal(next) {
			c.writeTargetMember(g, id, next)
		}
	}
	c.writeAssignmentEpoch(g, cg.epoch)
}

// groupAssignor is the assignor the group uses: the one most members ask
// for (ties to the first name in order), else the default.
func (c *Coordinator) groupAssignor(cg *consumerGroup) string {
	votes := map[string]int{}
	for _, m := range cg.members {
		if m.assignor != nil {
			votes[*m.assignor]++
		}
	}
	best, bestVotes := c.cfg.ConsumerAssignors[0], 0
	names := make([]string, 0, len(votes))
	for n := range votes {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if votes[n] > bestVotes {
			best, bestVotes = n, votes[n]
		}
	}
	return best
}

// reconcileMember takes one reconciliation step for m and writes its new
// current assignment if it changed. The rebalance timeout runs while the
// member has partitions to revoke.
func (c *Coordinator) reconcileMember(g *group, m *consumerMember, owned partitionSet) error {
	cg := g.consumer
	if m.state == memberStable && m.epoch == cg.assignmentEpoch {
		return nil
	}
	target := cg.target[m.id]
	if target == nil {
		target = partitionSet{}
	}
	next, err := reconcile(m.reconcileState, reconcileInput{
		targetEpoch: cg.assignmentEpoch,
		target:      target,
		owned:       owned,
		ownerEpoch: func(t [16]byte, p int32) int32 {
			if m.assigned.has(t, p) || m.pendingRevocation.has(t, p) {
				return -1
			}
			return cg.holderEpoch(t, p)
		},
	})
	if err != nil {
		return err
	}
	if next.epoch == m.epoch && next.previousEpoch == m.previousEpoch && next.state == m.state &&
		next.assigned.equal(m.assigned) && next.pendingRevocation.equal(m.pendingRevocation) {
		return nil
	}
	c.writeCurrentAssignment(g, m.id, next)
	if next.state == memberUnrevokedPartitions {
		c.timers.schedule(&timer{
			key:        timerKey{kind: timerConsumerRebalance, group: g.id, member: m.id},
			at:         c.after(millis(m.rebalanceTimeoutMs)),
			generation: next.epoch,
		})
	} else {
		c.timers.cancel(timerKey{kind: timerConsumerRebalance, group: g.id, member: m.id})
	}
	return nil
}

// scheduleConsumerSession (re)starts a member's session.
func (c *Coordinator) scheduleConsumerSession(g *group, memberID string) {
	d := c.cfg.overrides(g.id).ConsumerSessionTimeout
	if m := g.consumer.members[memberID]; m != nil && m.classic != nil {
		d = millis(m.classic.sessionTimeoutMs)
	}
	c.timers.schedule(&timer{
		key: timerKey{kind: timerConsumerSession, group: g.id, member: memberID},
		at:  c.after(d),
	})
}

// consumerSessionExpired fences a member whose session ran out.
func (c *Coordinator) consumerSessionExpired(groupID, memberID string) {
	g := c.groups[groupID]
	if g == nil || g.consumer == nil || g.consumer.members[memberID] == nil {
		return
	}
	c.removeConsumerMember(g, g.consumer.members[memberID])
}

// consumerRebalanceExpired fences a member that did not revoke its
// partitions within its rebalance timeout, if it is still at the epoch
// the timer was set for.
func (c *Coordinator) consumerRebalanceExpired(groupID, memberID string, epoch int32) {
	g := c.groups[groupID]
	if g == nil || g.consumer == nil {
		return
	}
	m := g.consumer.members[memberID]
	if m == nil || m.state != memberUnrevokedPartitions || m.epoch != epoch {
		return
	}
	c.removeConsumerMember(g, m)
}

// fenceConsumerMember removes a member from its group: its records are
// deleted, the subscription recomputed and the group epoch bumped.
func (c *Coordinator) fenceConsumerMember(g *group, m *consumerMember) {
	cg := g.consumer
	c.writeRemoveConsumerMember(g, m.id)
	if sub := c.subscriptionMetadata(cg); !maps.Equal(sub, cg.subscription) {
		c.writeConsumerSubscription(g, sub)
	}
	c.writeConsumerGroupEpoch(g, cg.epoch+1)
	c.timers.cancel(timerKey{kind: timerConsumerSession, group: g.id, member: m.id})
	c.timers.cancel(timerKey{kind: timerConsumerRebalance, group: g.id, member: m.id})
}

// consumerGroupLeave handles a heartbeat with epoch -1 (leave) or -2 (a
// static member leaving for now, keeping its assignment for its
// return).
func (c *Coordinator) consumerGroupLeave(in Input, req *kmsg.ConsumerGroupHeartbeatRequest, resp *kmsg.ConsumerGroupHeartbeatResponse,
	fail func(int16, string)) {
	g := c.groups[req.Group]
	if g == nil || g.consumer == nil {
		fail(errGroupIDNotFound, "Consumer group "+req.Group+" not found.")
		return
	}
	cg := g.consumer
	memberID := req.MemberID
	resp.MemberID, resp.MemberEpoch = &memberID, req.MemberEpoch
	var m *consumerMember
	if req.InstanceID == nil {
		m = cg.members[memberID]
		if m == nil {
			fail(errUnknownMemberID, "Member "+memberID+" is not a member of group "+g.id+".")
			return
		}
	} else {
		id, ok := cg.static[*req.InstanceID]
		if !ok {
			fail(errUnknownMemberID, "Instance id "+*req.InstanceID+" is unknown.")
			return
		}
		if id != memberID {
			fail(errFencedInstanceID, "Static member "+memberID+" with instance id "+*req.InstanceID+
				" was fenced by member "+id+".")
			return
		}
		m = cg.members[id]
		if req.MemberEpoch == staticLeaveMemberEpoch {
			next := m.reconcileState
			next.epoch = staticLeaveMemberEpoch
			next.pendingRevocation = partitionSet{}
			c.writeCurrentAssignment(g, m.id, next)
			c.respond(in.Token, resp)
			return
		}
	}
	c.removeConsumerMember(g, m)
	c.respond(in.Token, resp)
}

// staticMember finds or makes the member of a heartbeat with an instance
// id: the member already known by the instance id, or, when the heartbeat
// joins (epoch 0) and the instance's old member left for now (epoch -2),
// a new member that takes over the old one's assignment. It returns nil
// with errNone for a new instance joining.
func (c *Coordinator) staticMember(g *group, memberID, instanceID string, req *kmsg.ConsumerGroupHeartbeatRequest,
	join bool) (*consumerMember, int16, string) {
	cg := g.consumer
	oldID, known := cg.static[instanceID]
	if !known {
		if !join {
			return nil, errUnknownMemberID, "Instance id " + instanceID + " is unknown."
		}
		return nil, errNone, ""
	}
	old := cg.members[oldID]
	if !join {
		if oldID != memberID {
			return nil, errFencedInstanceID, "Static member " + memberID + " with instance id " + instanceID +
				" was fenced by member " + oldID + "."
		}
		if code, msg := checkMemberEpoch(old, req.MemberEpoch, req.Topics); code != errNone {
			return nil, code, msg
		}
		return old, errNone, ""
	}
	if old.epoch != staticLeaveMemberEpoch {
		return nil, errUnreleasedInstanceID, "Static member with instance id " + instanceID +
			" is still in use by member " + oldID + "."
	}
	// The new member takes the old one's place, assignment included.
	c.replaceStaticConsumerMember(g, old, memberID)
	return cg.members[memberID], errNone, ""
}

// replaceStaticConsumerMember moves a static member's place to a new member id.
func (c *Coordinator) replaceStaticConsumerMember(g *group, old *consumerMember, newID string) {
	cg := g.consumer
	target := cg.target[old.id]
	state := old.reconcileState
	state.epoch, state.previousEpoch = 0, 0
	next := *old
	next.id = newID
	c.writeRemoveConsumerMember(g, old.id)
	c.timers.cancel(timerKey{kind: timerConsumerSession, group: g.id, member: old.id})
	c.timers.cancel(timerKey{kind: timerConsumerRebalance, group: g.id, member: old.id})
	c.writeConsumerMember(g, &next)
	if target != nil {
		c.writeTargetMember(g, newID, target)
	}
	c.writeCurrentAssignment(g, newID, state)
}

// startConsumerSessions is called at load: every member's session starts
// now.
func (c *Coordinator) startConsumerSessions(g *group) {
	for _, id := range g.consumer.sortedMemberIDs() {
		c.scheduleConsumerSession(g, id)
	}
}
