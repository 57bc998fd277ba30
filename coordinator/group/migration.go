package group

// Online migration between the classic and the consumer protocol (KIP-848),
// as Kafka 4.x does it, under group.consumer.migration.policy:
//
//   - Upgrade. A ConsumerGroupHeartbeat that joins a classic group with
//     members (protocol type "consumer") turns it into a consumer group at
//     once: each classic member becomes a consumer group member that speaks
//     the classic protocol, with its subscription and assignment decoded
//     from the embedded consumer protocol, at member epoch = generation.
//     Parked JoinGroup and SyncGroup requests get REBALANCE_IN_PROGRESS.
//   - Classic members in a consumer group. JoinGroup, SyncGroup, Heartbeat
//     and LeaveGroup of classic clients are served from the consumer
//     group's state: a JoinGroup is a heartbeat that updates the member's
//     subscription and reconciles it (the generation it gets is its member
//     epoch; no member is told it leads, the coordinator assigns), SyncGroup
//     returns the member's current assignment, and a Heartbeat answers
//     REBALANCE_IN_PROGRESS while the member has to rejoin to move on
//     (the group epoch passed it, it has partitions to revoke, or partitions
//     it waited for are free). Their sessions use their own session timeout.
//   - Downgrade. When the last member of the consumer protocol leaves (or is
//     fenced) and classic members remain, the group becomes a classic group
//     of those members at generation = group epoch, with their current
//     assignments, and a rebalance starts.

import (
	"cmp"
	"encoding/binary"
	"errors"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The values of group.consumer.migration.policy.
const (
	MigrationBidirectional = "bidirectional"
	MigrationUpgrade       = "upgrade"
	MigrationDowngrade     = "downgrade"
	MigrationDisabled      = "disabled"
)

func (c *Config) upgradeEnabled() bool {
	return c.MigrationPolicy == MigrationBidirectional || c.MigrationPolicy == MigrationUpgrade
}

func (c *Config) downgradeEnabled() bool {
	return c.MigrationPolicy == MigrationBidirectional || c.MigrationPolicy == MigrationDowngrade
}

// classicMeta is what a consumer group keeps of a member that speaks the
// classic protocol (the ClassicMemberMetadata of its member record).
type classicMeta struct {
	sessionTimeoutMs int32
	protocols        []kmsg.JoinGroupRequestProtocol // in the member's order of preference
}

// encode writes the classic member metadata as the tagged field holds it:
// session timeout, then the compact array of (name, metadata).
func (m *classicMeta) encode() []byte {
	w := &flexWriter{}
	w.int32(m.sessionTimeoutMs)
	w.arrayLen(len(m.protocols))
	for _, p := range m.protocols {
		w.str(p.Name)
		w.uvarint(len(p.Metadata) + 1)
		w.b = append(w.b, p.Metadata...)
		w.noTags()
	}
	w.noTags()
	return w.b
}

func decodeClassicMeta(b []byte) (*classicMeta, error) {
	r := &flexReader{b: b}
	m := &classicMeta{sessionTimeoutMs: r.int32()}
	n := r.arrayLen(3)
	for i := 0; i < n && r.err == nil; i++ {
		p := kmsg.JoinGroupRequestProtocol{Name: r.str()}
		size := r.uvarint() - 1
		if r.err == nil && size < 0 {
			r.fail(errors.New("null protocol metadata"))
		}
		p.Metadata = slices.Clone(r.take(size))
		r.tags(nil)
		m.protocols = append(m.protocols, p)
	}
	r.tags(nil)
	if r.err == nil && len(r.b) > 0 {
		r.fail(errors.New("trailing bytes"))
	}
	if r.err == nil && len(m.protocols) == 0 {
		r.fail(errors.New("no protocols"))
	}
	if r.err != nil {
		return nil, r.err
	}
	return m, nil
}

func sameClassicMeta(a, b *classicMeta) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.sessionTimeoutMs == b.sessionTimeoutMs && sameProtocols(a.protocols, b.protocols)
}

// protocolVersion is the version of the embedded consumer protocol a
// subscription was written with, which the member's assignment is written
// with too (capped at the assignment's latest, 3); 0 when unreadable.
func protocolVersion(metadata []byte) int16 {
	if len(metadata) < 2 {
		return 0
	}
	return min(max(int16(binary.BigEndian.Uint16(metadata)), 0), 3)
}

// partitionsByName resolves topic-name partitions to a partitionSet; topics
// and partitions that do not exist are left out.
func (c *Coordinator) partitionsByName(topics func(yield func(string, []int32) bool)) partitionSet {
	out := partitionSet{}
	if c.cfg.Topics == nil {
		return out
	}
	for name, ps := range topics {
		id, n, ok := c.cfg.Topics.TopicByName(name)
		if !ok {
			continue
		}
		for _, p := range ps {
			if p >= 0 && p < n {
				out.add(id, p)
			}
		}
	}
	return out
}

// encodeAssignment writes a member's partitions as the embedded consumer
// protocol's assignment, topics by name in order.
func (c *Coordinator) encodeAssignment(cg *consumerGroup, s partitionSet, version int16) []byte {
	a := kmsg.ConsumerMemberAssignment{Version: version}
	for _, tp := range c.describeAssignment(cg, s).TopicPartitions {
		if tp.Topic != "" {
			a.Topics = append(a.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: tp.Topic, Partitions: tp.Partitions})
		}
	}
	slices.SortFunc(a.Topics, func(x, y kmsg.ConsumerMemberAssignmentTopic) int { return cmp.Compare(x.Topic, y.Topic) })
	return a.AppendTo(nil)
}

// ---- upgrade ----

// canUpgrade reports whether a classic group with members may become a
// consumer group now (Kafka's validateOnlineUpgrade).
func (c *Coordinator) canUpgrade(g *group) bool {
	return c.cfg.upgradeEnabled() && g.consumer == nil && len(g.members) > 0 &&
		g.protocolType == consumerProtocolType && int32(len(g.members)) <= c.cfg.MaxSize
}

// upgradeToConsumer turns classic group g into a consumer group whose
// members are its classic members. It fails, leaving g classic, when a
// member's embedded consumer protocol cannot be read.
func (c *Coordinator) upgradeToConsumer(g *group) error {
	gen := g.generation
	members := make([]*consumerMember, 0, len(g.order))
	for _, id := range g.order {
		m := g.members[id]
		name := g.protocol
		if !g.hasProtocol && len(m.protocols) > 0 {
			name = m.protocols[0].Name
		}
		var sub kmsg.ConsumerMemberMetadata
		if err := sub.ReadFrom(m.metadata(name)); err != nil {
			return err
		}
		assigned := partitionSet{}
		if len(m.assignment) > 0 {
			var a kmsg.ConsumerMemberAssignment
			if err := a.ReadFrom(m.assignment); err != nil {
				return err
			}
			assigned = c.partitionsByName(func(yield func(string, []int32) bool) {
				for _, t := range a.Topics {
					if !yield(t.Topic, t.Partitions) {
						return
					}
				}
			})
		}
		topics := slices.Clone(sub.Topics)
		slices.Sort(topics)
		members = append(members, &consumerMember{
			id:                 m.id,
			instanceID:         m.instanceID,
			rackID:             sub.Rack,
			clientID:           m.clientID,
			clientHost:         m.clientHost,
			topics:             slices.Compact(topics),
			rebalanceTimeoutMs: m.rebalanceTimeoutMs,
			classic:            &classicMeta{sessionTimeoutMs: m.sessionTimeoutMs, protocols: copyProtocols(m.protocols)},
			reconcileState: reconcileState{epoch: gen, previousEpoch: gen, state: memberStable,
				assigned: assigned, pendingRevocation: partitionSet{}},
		})
	}

	// The classic group ends: its parked requests are told to rejoin and
	// its timers stop.
	for _, id := range g.order {
		m := g.members[id]
		if w := g.takeJoin(m); w != nil {
			c.failJoin(w, id, errRebalanceInProgress)
		}
		if w := m.sync; w != nil {
			m.sync = nil
			c.respond(w.token, syncResponse(w, errRebalanceInProgress))
		}
		c.cancelHeartbeat(g, id)
	}
	for id := range g.pending {
		c.cancelHeartbeat(g, id)
	}
	c.timers.cancel(timerKey{kind: timerJoin, group: g.id})
	c.timers.cancel(timerKey{kind: timerSync, group: g.id})
	c.emit(groupTombstone(g.id))
	fresh := newGroup(g.id, c.nowMs())
	fresh.offsets, fresh.txns = g.offsets, g.txns
	*g = *fresh

	// Its members, target and current assignments, in the order Kafka
	// writes a converted group's records.
	g.consumer = newConsumerGroup()
	for _, m := range members {
		c.writeConsumerMember(g, m)
	}
	c.writeConsumerSubscription(g, c.subscriptionMetadata(g.consumer))
	c.writeConsumerGroupEpoch(g, gen)
	for _, m := range members {
		c.writeTargetMember(g, m.id, m.assigned)
	}
	c.writeAssignmentEpoch(g, gen)
	for _, m := range members {
		c.writeCurrentAssignment(g, m.id, m.reconcileState)
		c.scheduleConsumerSession(g, m.id)
	}
	return nil
}

// ---- classic members in a consumer group ----

// classicJoinConsumer handles a JoinGroup to a consumer group (Kafka's
// classicGroupJoinToConsumerGroup).
func (c *Coordinator) classicJoinConsumer(in Input, w *waiter, g *group, req *kmsg.JoinGroupRequest, rebalanceMs int32) {
	cg := g.consumer
	if req.ProtocolType != consumerProtocolType || len(req.Protocols) == 0 {
		c.failJoin(w, req.MemberID, errInconsistentGroupProtocol)
		return
	}
	var sub kmsg.ConsumerMemberMetadata
	if err := sub.ReadFrom(req.Protocols[0].Metadata); err != nil {
		c.failJoin(w, req.MemberID, errInconsistentGroupProtocol)
		return
	}
	memberID := req.MemberID
	unknown := memberID == ""
	if unknown {
		memberID = c.newUUID()
	}
	var m *consumerMember
	if req.InstanceID == nil {
		m = cg.members[memberID]
	} else if oldID, ok := cg.static[*req.InstanceID]; ok {
		m = cg.members[oldID]
		if oldID != memberID && !unknown {
			c.failJoin(w, memberID, errFencedInstanceID)
			return
		}
	}
	if m != nil && m.classic == nil {
		c.failJoin(w, memberID, errUnknownMemberID)
		return
	}
	if m == nil && int32(len(cg.members)) >= c.cfg.MaxSize {
		c.failJoin(w, memberID, errGroupMaxSizeReached)
		return
	}
	if unknown && req.InstanceID == nil && req.Version >= 4 {
		// KIP-394: the member gets its id first and joins again with it.
		c.failJoin(w, memberID, errMemberIDRequired)
		return
	}
	if m != nil && m.id != memberID {
		// A static member's new incarnation takes its place.
		c.replaceStaticConsumerMember(g, m, memberID)
		m = cg.members[memberID]
	}

	next := &consumerMember{id: memberID, rebalanceTimeoutMs: -1,
		reconcileState: reconcileState{assigned: partitionSet{}, pendingRevocation: partitionSet{}}}
	if m != nil {
		cp := *m
		next = &cp
	}
	if req.InstanceID != nil {
		next.instanceID = req.InstanceID
	}
	if sub.Rack != nil {
		next.rackID = sub.Rack
	}
	next.rebalanceTimeoutMs = rebalanceMs
	next.assignor, next.regex, next.re = nil, nil, nil
	topics := slices.Clone(sub.Topics)
	slices.Sort(topics)
	next.topics = slices.Compact(topics)
	next.clientID, next.clientHost = in.ClientID, in.ClientHost
	next.classic = &classicMeta{sessionTimeoutMs: req.SessionTimeoutMillis, protocols: copyProtocols(req.Protocols)}
	bump := m == nil || !slices.Equal(m.topics, next.topics) || m.regex != nil
	if m == nil || !sameMemberMetadata(m, next) || !sameClassicMeta(m.classic, next.classic) {
		c.writeConsumerMember(g, next)
	}
	c.advanceConsumerGroup(g, bump)

	member := cg.members[memberID]
	owned := c.partitionsByName(func(yield func(string, []int32) bool) {
		for _, t := range sub.OwnedPartitions {
			if !yield(t.Topic, t.Partitions) {
				return
			}
		}
	})
	if err := c.reconcileMember(g, member, owned); err != nil {
		c.failJoin(w, memberID, errUnknownMemberID)
		return
	}
	c.scheduleConsumerSession(g, memberID)

	r := joinResponse(w, errNone)
	r.MemberID = memberID
	r.Generation = member.epoch
	r.ProtocolType = strPtr(consumerProtocolType)
	r.Protocol = strPtr(req.Protocols[0].Name)
	c.respond(w.token, r)
}

// advanceConsumerGroup recomputes the subscription metadata, bumps the
// group epoch when it or a member's subscription (bump) changed, and
// computes a new target assignment when the group epoch is past it.
func (c *Coordinator) advanceConsumerGroup(g *group, bump bool) {
	cg := g.consumer
	if sub := c.subscriptionMetadata(cg); !maps.Equal(sub, cg.subscription) {
		c.writeConsumerSubscription(g, sub)
		bump = true
	}
	if bump {
		c.writeConsumerGroupEpoch(g, cg.epoch+1)
	}
	if cg.epoch > cg.assignmentEpoch {
		c.computeTargetAssignment(g)
	}
}

// classicMemberOf finds the member of a classic request to a consumer
// group, by instance id when given (Kafka's validateConsumerGroupMember),
// and checks that it speaks the classic protocol.
func classicMemberOf(cg *consumerGroup, memberID string, instanceID *string) (*consumerMember, int16) {
	var m *consumerMember
	if instanceID == nil {
		m = cg.members[memberID]
	} else {
		id, ok := cg.static[*instanceID]
		if !ok {
			return nil, errUnknownMemberID
		}
		if id != memberID {
			return nil, errFencedInstanceID
		}
		m = cg.members[id]
	}
	if m == nil || m.classic == nil {
		return nil, errUnknownMemberID
	}
	return m, errNone
}

// classicSyncConsumer handles a SyncGroup to a consumer group: the member
// gets its current assignment.
func (c *Coordinator) classicSyncConsumer(w *waiter, g *group, req *kmsg.SyncGroupRequest) {
	fail := func(code int16) { c.respond(w.token, syncResponse(w, code)) }
	m, code := classicMemberOf(g.consumer, req.MemberID, req.InstanceID)
	switch {
	case code != errNone:
		fail(code)
		return
	case req.Generation != m.epoch:
		fail(errIllegalGeneration)
		return
	case (derefString(req.ProtocolType) != "" && *req.ProtocolType != consumerProtocolType) ||
		(derefString(req.Protocol) != "" && *req.Protocol != m.classic.protocols[0].Name):
		// (A null or empty one is not given, as Kafka reads them.)
		fail(errInconsistentGroupProtocol)
		return
	case g.consumer.epoch > m.epoch && m.state != memberUnrevokedPartitions:
		// A newer rebalance started: the member must join again.
		fail(errRebalanceInProgress)
		return
	}
	c.scheduleConsumerSession(g, m.id)
	r := syncResponse(w, errNone)
	r.ProtocolType, r.Protocol = strPtr(consumerProtocolType), strPtr(m.classic.protocols[0].Name)
	r.MemberAssignment = c.encodeAssignment(g.consumer, m.assigned, protocolVersion(m.classic.protocols[0].Metadata))
	c.respond(w.token, r)
}

// classicHeartbeatConsumer answers a Heartbeat to a consumer group.
func (c *Coordinator) classicHeartbeatConsumer(g *group, req *kmsg.HeartbeatRequest) int16 {
	cg := g.consumer
	m, code := classicMemberOf(cg, req.MemberID, req.InstanceID)
	if code != errNone {
		return code
	}
	if req.Generation != m.epoch {
		return errIllegalGeneration
	}
	c.scheduleConsumerSession(g, m.id)
	if m.epoch < cg.epoch || m.state == memberUnrevokedPartitions ||
		(m.state == memberUnreleasedPartitions && !waitingOnUnreleased(cg, m)) {
		return errRebalanceInProgress
	}
	return errNone
}

// waitingOnUnreleased reports whether a partition of m's target is still
// held by another member.
func waitingOnUnreleased(cg *consumerGroup, m *consumerMember) bool {
	for t, ps := range cg.target[m.id] {
		for p := range ps {
			if !m.assigned.has(t, p) && cg.holderEpoch(t, p) != -1 {
				return true
			}
		}
	}
	return false
}

// classicLeaveConsumer handles a LeaveGroup's member of a consumer group.
// An admin may name a static member by its instance id alone.
func (c *Coordinator) classicLeaveConsumer(g *group, l kmsg.LeaveGroupRequestMember) int16 {
	memberID := l.MemberID
	if l.InstanceID != nil && memberID == "" {
		memberID = g.consumer.static[*l.InstanceID]
	}
	m, code := classicMemberOf(g.consumer, memberID, l.InstanceID)
	if code != errNone {
		return code
	}
	c.fenceConsumerMember(g, m)
	return errNone
}

// ---- downgrade ----

// removeConsumerMember removes a member that left or was fenced; when it
// was the last member of the consumer protocol and classic members remain,
// the group becomes classic instead (Kafka's
// validateOnlineDowngradeWithFencedMember and convertToClassicGroup).
func (c *Coordinator) removeConsumerMember(g *group, m *consumerMember) {
	cg := g.consumer
	if m.classic == nil && len(cg.members) > 1 && c.cfg.downgradeEnabled() &&
		int32(len(cg.members)-1) <= c.cfg.MaxSize {
		all := true
		for _, o := range cg.members {
			if o != m && o.classic == nil {
				all = false
				break
			}
		}
		if all {
			c.downgradeToClassic(g, m.id)
			return
		}
	}
	c.fenceConsumerMember(g, m)
}

// downgradeToClassic turns consumer group g, less member leaving, into a
// classic group of its (classic) members and starts a rebalance.
func (c *Coordinator) downgradeToClassic(g *group, leaving string) {
	cg := g.consumer
	gen := cg.epoch
	var members []*member
	for _, id := range cg.sortedMemberIDs() {
		cm := cg.members[id]
		c.timers.cancel(timerKey{kind: timerConsumerSession, group: g.id, member: id})
		c.timers.cancel(timerKey{kind: timerConsumerRebalance, group: g.id, member: id})
		if id == leaving {
			continue
		}
		members = append(members, &member{
			id:                 id,
			instanceID:         cm.instanceID,
			clientID:           cm.clientID,
			clientHost:         cm.clientHost,
			rebalanceTimeoutMs: cm.rebalanceTimeoutMs,
			sessionTimeoutMs:   cm.classic.sessionTimeoutMs,
			protocolType:       consumerProtocolType,
			protocols:          copyProtocols(cm.classic.protocols),
		})
	}
	g.protocolType = consumerProtocolType
	g.generation = gen
	for _, m := range members {
		g.add(m, nil)
	}
	g.protocol, g.hasProtocol = g.selectProtocol(), true
	// Each member gets its target assignment, written with the version
	// of its subscription to the group's protocol, as Kafka does (read
	// before the consumer state goes).
	for _, m := range members {
		m.assignment = c.encodeAssignment(cg, cg.target[m.id], protocolVersion(m.metadata(g.protocol)))
	}
	c.deleteConsumerState(g)
	g.computeSubscriptions()
	g.transition(StateStable, c.nowMs())
	c.emit(groupRecord(g))
	for _, m := range members {
		c.scheduleHeartbeat(g, m.id, millis(m.sessionTimeoutMs))
	}
	c.prepareRebalance(g)
}
