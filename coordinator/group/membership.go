package group

import (
	"bytes"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file is the classic rebalance protocol: JoinGroup, SyncGroup,
// Heartbeat, LeaveGroup and the timers that drive rebalances, after Kafka
// 4.x's GroupMetadataManager (classic parts) and ClassicGroup.

// emptyConsumerAssignment is an encoded ConsumerMemberAssignment with no
// topics (version 0, zero topics, null user data). See syncGroup.
var emptyConsumerAssignment = (&kmsg.ConsumerMemberAssignment{}).AppendTo(nil)

// joinGroup handles JoinGroup.
func (c *Coordinator) joinGroup(in Input, req *kmsg.JoinGroupRequest) {
	w := &waiter{token: in.Token, version: req.Version}
	if req.Group == "" {
		c.failJoin(w, req.MemberID, errInvalidGroupID)
		return
	}
	session := millis(req.SessionTimeoutMillis)
	if session < c.cfg.MinSessionTimeout || session > c.cfg.MaxSessionTimeout {
		c.failJoin(w, req.MemberID, errInvalidSessionTimeout)
		return
	}
	rebalanceMs := req.RebalanceTimeoutMillis
	if req.Version == 0 {
		// v0 has no rebalance timeout: the session timeout serves.
		rebalanceMs = req.SessionTimeoutMillis
	}

	g := c.groups[req.Group]
	if g != nil && g.consumer != nil {
		if len(g.consumer.members) > 0 {
			// A classic member in a consumer group (migration.go).
			c.classicJoinConsumer(in, w, g, req, rebalanceMs)
			return
		}
		// An empty consumer group becomes a classic one; its offsets
		// stay.
		c.deleteConsumerState(g)
	}
	isNew := g == nil
	unknownMember := req.MemberID == ""
	if isNew {
		if !unknownMember {
			c.failJoin(w, req.MemberID, errUnknownMemberID)
			return
		}
		g = newGroup(req.Group, c.nowMs())
		c.groups[g.id] = g
	}
	before := len(c.out.Records)
	switch {
	case !c.acceptJoining(g, req.MemberID):
		// A member over the limit is dropped, also one that was in the
		// group but has not rejoined this rebalance.
		g.remove(req.MemberID)
		c.cancelHeartbeat(g, req.MemberID)
		c.failJoin(w, "", errGroupMaxSizeReached)
	case unknownMember:
		c.joinNewMember(in, w, g, req, rebalanceMs)
	default:
		c.joinExistingMember(in, w, g, req, rebalanceMs)
	}
	if isNew && len(c.out.Records) == before {
		// Kafka writes a new group at once, so that it survives a
		// coordinator change during its first rebalance.
		c.emit(emptyGroupRecord(g))
	}
}

func (c *Coordinator) failJoin(w *waiter, memberID string, code int16) {
	r := joinResponse(w, code)
	r.MemberID = memberID
	c.respond(w.token, r)
}

// acceptJoining applies group.max.size. In PreparingRebalance the members
// that already rejoined are counted (the group may be over a lowered limit,
// and the last to rejoin are the ones left out); otherwise all members.
func (c *Coordinator) acceptJoining(g *group, memberID string) bool {
	m := g.members[memberID]
	switch g.state {
	case StatePreparingRebalance:
		return (m != nil && m.join != nil) || g.awaiting < int(c.cfg.MaxSize)
	case StateCompletingRebalance, StateStable:
		return m != nil || len(g.members) < int(c.cfg.MaxSize)
	}
	return true
}

// joinNewMember handles a JoinGroup without a member id.
func (c *Coordinator) joinNewMember(in Input, w *waiter, g *group, req *kmsg.JoinGroupRequest, rebalanceMs int32) {
	if !g.supportsProtocols(req.ProtocolType, protocolNames(req.Protocols)) {
		c.failJoin(w, "", errInconsistentGroupProtocol)
		return
	}
	if req.InstanceID != nil {
		newID := c.newMemberID(*req.InstanceID)
		if oldID, ok := g.static[*req.InstanceID]; ok {
			c.replaceStaticMember(w, g, req, rebalanceMs, oldID, newID)
			return
		}
		c.addMember(in, w, g, req, rebalanceMs, newID)
		return
	}
	newID := c.newMemberID(in.ClientID)
	if req.Version >= 4 {
		// KIP-394: hand out the id and let the member come back with it,
		// so a client that times out does not leave a stray member. The
		// id is pending for one session timeout.
		g.pending[newID] = true
		c.scheduleHeartbeat(g, newID, millis(req.SessionTimeoutMillis))
		c.failJoin(w, newID, errMemberIDRequired)
		return
	}
	c.addMember(in, w, g, req, rebalanceMs, newID)
}

// joinExistingMember handles a JoinGroup with a member id.
func (c *Coordinator) joinExistingMember(in Input, w *waiter, g *group, req *kmsg.JoinGroupRequest, rebalanceMs int32) {
	if !g.supportsProtocols(req.ProtocolType, protocolNames(req.Protocols)) {
		c.failJoin(w, req.MemberID, errInconsistentGroupProtocol)
		return
	}
	if g.pending[req.MemberID] {
		if req.InstanceID != nil {
			// Pending ids are only handed to dynamic members; Kafka
			// fails such a request with an internal error.
			c.failJoin(w, req.MemberID, errUnknownServerError)
			return
		}
		c.addMember(in, w, g, req, rebalanceMs, req.MemberID)
		return
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != errNone {
		c.failJoin(w, req.MemberID, code)
		return
	}
	m := g.members[req.MemberID]
	switch g.state {
	case StatePreparingRebalance:
		c.updateMemberAndRebalance(g, m, w, req, rebalanceMs)
	case StateCompletingRebalance:
		if m.matches(req.Protocols) {
			// The member lost the JoinGroup response: send the current
			// generation again.
			c.respond(w.token, c.generationResponse(w, g, m.id, g.isLeader(m.id)))
		} else {
			c.updateMemberAndRebalance(g, m, w, req, rebalanceMs)
		}
	case StateStable:
		if g.isLeader(m.id) || !m.matches(req.Protocols) {
			// A rejoining leader forces a rebalance: that is how it
			// reacts to changes its metadata does not show (new
			// partitions, for consumers).
			c.updateMemberAndRebalance(g, m, w, req, rebalanceMs)
		} else {
			c.respond(w.token, c.generationResponse(w, g, m.id, false))
		}
	default:
		c.failJoin(w, req.MemberID, errUnknownMemberID)
	}
}

// generationResponse is the JoinGroup response describing the current
// generation; the leader's lists the members with their metadata.
func (c *Coordinator) generationResponse(w *waiter, g *group, memberID string, withMembers bool) *kmsg.JoinGroupResponse {
	r := joinResponse(w, errNone)
	r.MemberID = memberID
	r.Generation = g.generation
	r.ProtocolType = strPtr(g.protocolType)
	if g.hasProtocol {
		r.Protocol = strPtr(g.protocol)
	}
	r.LeaderID = g.leader
	if withMembers {
		r.Members = g.joinMembers()
	}
	return r
}

// joinMembers lists the members for the leader's JoinGroup response.
func (g *group) joinMembers() []kmsg.JoinGroupResponseMember {
	ms := make([]kmsg.JoinGroupResponseMember, 0, len(g.order))
	for _, id := range g.order {
		m := g.members[id]
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID = m.id
		jm.InstanceID = m.instanceID
		jm.ProtocolMetadata = m.metadata(g.protocol)
		ms = append(ms, jm)
	}
	return ms
}

// supersede answers a member's parked request that a newer one of the same
// member replaces. Kafka drops the old request and leaves the client to
// time out; answering it keeps no request parked forever in the driver.
func (c *Coordinator) supersede(w *waiter, join bool) {
	if w == nil {
		return
	}
	if join {
		c.failJoin(w, "", errRebalanceInProgress)
	} else {
		c.respond(w.token, syncResponse(w, errRebalanceInProgress))
	}
}

func copyProtocols(ps []kmsg.JoinGroupRequestProtocol) []kmsg.JoinGroupRequestProtocol {
	out := make([]kmsg.JoinGroupRequestProtocol, len(ps))
	for i, p := range ps {
		out[i] = kmsg.JoinGroupRequestProtocol{Name: p.Name, Metadata: bytes.Clone(p.Metadata)}
	}
	return out
}

func (c *Coordinator) updateMemberAndRebalance(g *group, m *member, w *waiter, req *kmsg.JoinGroupRequest, rebalanceMs int32) {
	c.supersede(m.join, true)
	g.updateMember(m, copyProtocols(req.Protocols), rebalanceMs, req.SessionTimeoutMillis, w)
	c.maybeRebalanceOrCompleteJoin(g)
}

func (c *Coordinator) addMember(in Input, w *waiter, g *group, req *kmsg.JoinGroupRequest, rebalanceMs int32, id string) {
	m := &member{
		id:                 id,
		clientID:           in.ClientID,
		clientHost:         in.ClientHost,
		rebalanceTimeoutMs: rebalanceMs,
		sessionTimeoutMs:   req.SessionTimeoutMillis,
		protocolType:       req.ProtocolType,
		protocols:          copyProtocols(req.Protocols),
		isNew:              true,
	}
	if req.InstanceID != nil {
		m.instanceID = strPtr(*req.InstanceID)
	}
	if g.state == StatePreparingRebalance && g.prevState == StateEmpty {
		g.newMemberAdded = true // extends the initial rebalance delay
	}
	g.add(m, w)
	// A new member cannot heartbeat until its JoinGroup returns, so its
	// session does not apply yet; a shorter bound keeps a client that gave
	// up from holding the rebalance.
	c.scheduleHeartbeat(g, id, c.cfg.NewMemberJoinTimeout)
	c.maybeRebalanceOrCompleteJoin(g)
}

// replaceStaticMember handles a known group.instance.id joining without a
// member id: a restarted static member (KIP-345). It takes over the old
// member id's place, assignment included; the old id is fenced. In Stable,
// when the group's protocol stays the same, there is no rebalance: the new
// id is stored and the member gets the current generation back.
func (c *Coordinator) replaceStaticMember(w *waiter, g *group, req *kmsg.JoinGroupRequest, rebalanceMs int32, oldID, newID string) {
	previousLeader := g.leader
	old := g.members[oldID]
	if ow := g.takeJoin(old); ow != nil {
		c.failJoin(ow, oldID, errFencedInstanceID)
	}
	if sw := old.sync; sw != nil {
		old.sync = nil
		c.respond(sw.token, syncResponse(sw, errFencedInstanceID))
	}
	m := &member{
		id:                 newID,
		instanceID:         old.instanceID,
		clientID:           old.clientID,
		clientHost:         old.clientHost,
		rebalanceTimeoutMs: old.rebalanceTimeoutMs,
		sessionTimeoutMs:   old.sessionTimeoutMs,
		protocolType:       old.protocolType,
		protocols:          old.protocols,
		assignment:         old.assignment,
	}
	g.replaceMember(oldID, m)
	c.cancelHeartbeat(g, oldID)
	c.scheduleHeartbeat(g, newID, millis(m.sessionTimeoutMs))
	g.updateMember(m, copyProtocols(req.Protocols), rebalanceMs, req.SessionTimeoutMillis, w)

	switch g.state {
	case StateStable:
		if !g.hasProtocol || g.selectProtocol() != g.protocol {
			c.maybeRebalanceOrCompleteJoin(g)
			return
		}
		c.emit(groupRecord(g))
		jw := g.takeJoin(m)
		var r *kmsg.JoinGroupResponse
		if jw.version >= 9 {
			// The leader learns it leads but skips the assignment: the
			// group keeps the one it has.
			leader := g.isLeader(newID)
			r = c.generationResponse(jw, g, newID, leader)
			r.SkipAssignment = leader
		} else {
			// Older clients cannot skip the assignment, so a restarted
			// leader is told the old leader id and acts as a follower.
			r = c.generationResponse(jw, g, newID, false)
			r.LeaderID = previousLeader
		}
		c.respond(jw.token, r)
	case StateCompletingRebalance:
		// The leader may already be assigning to the old id: start over.
		c.prepareRebalance(g)
	default:
		c.maybeCompleteJoinPhase(g)
	}
}

// replaceMember puts m in the place of member oldID: same join order,
// leadership, instance id and pending sync. m has the same protocols, so
// the protocol counts stay.
func (g *group) replaceMember(oldID string, m *member) {
	delete(g.members, oldID)
	g.members[m.id] = m
	g.order[slices.Index(g.order, oldID)] = m.id
	if g.leader == oldID {
		g.leader = m.id
	}
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
	if g.pendingSync[oldID] {
		// Kafka leaves the old id pending, which costs a rebalance at
		// the sync timeout; the new id is the one that will sync.
		delete(g.pendingSync, oldID)
		g.pendingSync[m.id] = true
	}
}

func (c *Coordinator) maybeRebalanceOrCompleteJoin(g *group) {
	if g.canRebalance() {
		c.prepareRebalance(g)
	} else {
		c.maybeCompleteJoinPhase(g)
	}
}

// prepareRebalance moves g to PreparingRebalance. Members waiting in
// SyncGroup are told to rejoin. From Empty, the join phase lasts at least
// the initial rebalance delay; otherwise it ends when every member rejoined
// or at the rebalance timeout.
func (c *Coordinator) prepareRebalance(g *group) {
	if g.state == StateCompletingRebalance {
		for _, m := range g.members {
			m.assignment = []byte{}
		}
		c.propagateAssignment(g, errRebalanceInProgress)
	}
	clear(g.pendingSync)
	c.timers.cancel(timerKey{kind: timerSync, group: g.id})

	initial := g.state == StateEmpty
	if initial {
		delay := c.cfg.InitialRebalanceDelay
		remaining := max(millis(g.rebalanceTimeoutMs())-delay, 0)
		c.timers.schedule(&timer{
			key:       timerKey{kind: timerJoin, group: g.id},
			at:        c.after(delay),
			initial:   true,
			delay:     delay,
			remaining: remaining,
		})
	}
	g.transition(StatePreparingRebalance, c.nowMs())
	if !initial {
		c.completeJoinOrWait(g)
	}
}

func (c *Coordinator) completeJoinOrWait(g *group) {
	if g.allJoined() {
		c.completeJoin(g)
		return
	}
	c.timers.schedule(&timer{
		key: timerKey{kind: timerJoin, group: g.id},
		at:  c.after(millis(g.rebalanceTimeoutMs())),
	})
}

// maybeCompleteJoinPhase ends the join phase if everyone rejoined, except
// during the initial rebalance, which always waits for its delay.
func (c *Coordinator) maybeCompleteJoinPhase(g *group) {
	if g.state == StatePreparingRebalance && g.prevState != StateEmpty && g.allJoined() {
		c.completeJoin(g)
	}
}

// initialDelayExpired fires at the end of an initial rebalance delay. If a
// member joined during it, and rebalance time remains, the delay starts over.
func (c *Coordinator) initialDelayExpired(groupID string, delay, remaining time.Duration) {
	g := c.groups[groupID]
	if g == nil {
		return
	}
	if g.newMemberAdded && remaining != 0 {
		g.newMemberAdded = false
		next := min(c.cfg.InitialRebalanceDelay, remaining)
		c.timers.schedule(&timer{
			key:       timerKey{kind: timerJoin, group: g.id},
			at:        c.after(next),
			initial:   true,
			delay:     next,
			remaining: max(remaining-delay, 0),
		})
		return
	}
	c.completeJoin(g)
}

// completeJoin ends the join phase: dynamic members that did not rejoin are
// removed (static ones stay until their session expires), the next
// generation starts, and every rejoined member gets its JoinGroup response.
// The leader's lists the members. Then the members have the rebalance
// timeout to send SyncGroup.
func (c *Coordinator) completeJoin(g *group) {
	if g.state != StatePreparingRebalance {
		return
	}
	c.timers.cancel(timerKey{kind: timerJoin, group: g.id})
	for _, id := range slices.Clone(g.order) {
		if m := g.members[id]; m.join == nil && m.instanceID == nil {
			g.remove(id)
			c.cancelHeartbeat(g, id)
		}
	}
	if !g.electJoinedLeader() && len(g.members) > 0 {
		// Only static members that did not rejoin are left: wait for
		// them to rejoin or for their sessions to expire.
		c.timers.schedule(&timer{
			key: timerKey{kind: timerJoin, group: g.id},
			at:  c.after(millis(g.rebalanceTimeoutMs())),
		})
		return
	}

	g.generation++
	if len(g.members) > 0 {
		g.protocol, g.hasProtocol = g.selectProtocol(), true
		g.computeSubscriptions()
		g.transition(StateCompletingRebalance, c.nowMs())
	} else {
		g.protocol, g.hasProtocol = "", false
		g.computeSubscriptions()
		g.transition(StateEmpty, c.nowMs())
	}
	clear(g.pendingSync)
	if g.state == StateEmpty {
		c.emit(groupRecord(g))
		return
	}
	for _, id := range g.order {
		m := g.members[id]
		if w := g.takeJoin(m); w != nil {
			c.respond(w.token, c.generationResponse(w, g, id, g.isLeader(id)))
		}
		c.scheduleHeartbeat(g, id, millis(m.sessionTimeoutMs))
		m.isNew = false
		g.pendingSync[id] = true
	}
	c.timers.schedule(&timer{
		key:        timerKey{kind: timerSync, group: g.id},
		at:         c.after(millis(g.rebalanceTimeoutMs())),
		generation: g.generation,
	})
}

// expireHeartbeat fires when a member's (or pending member id's) session
// timed out. Members waiting in a rebalance are kept; they are rescheduled
// when the rebalance answers them.
func (c *Coordinator) expireHeartbeat(groupID, memberID string) {
	g := c.groups[groupID]
	if g == nil {
		return
	}
	if g.pending[memberID] {
		g.remove(memberID)
		if g.state == StatePreparingRebalance && g.allJoined() {
			c.completeJoin(g)
		}
		return
	}
	m := g.members[memberID]
	if m == nil || m.hasSatisfiedHeartbeat() {
		return
	}
	c.removeMember(g, m)
	switch g.state {
	case StateStable, StateCompletingRebalance:
		c.maybeRebalanceOrCompleteJoin(g)
	case StatePreparingRebalance:
		if g.allJoined() {
			c.completeJoin(g)
		}
	}
}

// removeMember removes m, answering its parked requests with
// UNKNOWN_MEMBER_ID so a client still waiting rejoins. (Kafka answers only a
// parked JoinGroup; a SyncGroup cannot be parked for a member being removed
// there, except by an admin's LeaveGroup.)
func (c *Coordinator) removeMember(g *group, m *member) {
	c.cancelHeartbeat(g, m.id)
	if w := g.takeJoin(m); w != nil {
		c.failJoin(w, "", errUnknownMemberID)
	}
	if w := m.sync; w != nil {
		m.sync = nil
		c.respond(w.token, syncResponse(w, errUnknownMemberID))
	}
	g.remove(m.id)
}

// syncExpired fires at the rebalance timeout after a join phase: members
// that got their JoinGroup response but never sent SyncGroup are removed,
// and the group rebalances without them.
func (c *Coordinator) syncExpired(groupID string, generation int32) {
	g := c.groups[groupID]
	if g == nil || g.generation != generation || len(g.pendingSync) == 0 {
		return
	}
	if g.state != StateCompletingRebalance && g.state != StateStable {
		return
	}
	for _, id := range slices.Clone(g.order) {
		if g.pendingSync[id] {
			c.removeMember(g, g.members[id])
		}
	}
	c.prepareRebalance(g)
}

// syncGroup handles SyncGroup. Only the leader's assignments are used; they
// are stored, written to the log and sent to every member.
func (c *Coordinator) syncGroup(in Input, req *kmsg.SyncGroupRequest) {
	w := &waiter{token: in.Token, version: req.Version}
	fail := func(code int16) { c.respond(w.token, syncResponse(w, code)) }
	if req.Version >= 5 && (req.ProtocolType == nil || req.Protocol == nil) {
		// From v5 both are mandatory; Kafka checks this before anything
		// else.
		fail(errInconsistentGroupProtocol)
		return
	}
	if req.Group == "" {
		fail(errInvalidGroupID)
		return
	}
	g := c.groups[req.Group]
	if g != nil && g.consumer != nil {
		c.classicSyncConsumer(w, g, req)
		return
	}
	if g == nil || g.state == StateEmpty {
		fail(errUnknownMemberID)
		return
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != errNone {
		fail(code)
		return
	}
	if req.Generation != g.generation {
		fail(errIllegalGeneration)
		return
	}
	if (req.ProtocolType != nil && g.protocolType != "" && *req.ProtocolType != g.protocolType) ||
		(req.Protocol != nil && g.hasProtocol && *req.Protocol != g.protocol) {
		fail(errInconsistentGroupProtocol)
		return
	}
	m := g.members[req.MemberID]
	switch g.state {
	case StatePreparingRebalance:
		fail(errRebalanceInProgress)
	case StateCompletingRebalance:
		c.supersede(m.sync, false)
		m.sync = w
		c.synced(g, m.id)
		if !g.isLeader(m.id) {
			return // parked until the leader's SyncGroup
		}
		given := make(map[string][]byte, len(req.GroupAssignment))
		for _, a := range req.GroupAssignment {
			given[a.MemberID] = a.MemberAssignment
		}
		for _, id := range g.order {
			a, ok := given[id]
			switch {
			case (!ok || len(a) == 0) && g.protocolType == consumerProtocolType:
				// Kafka sends a zero-length assignment to members the
				// leader left out. Consumers cannot decode that
				// (franz-go fails the sync, see the package doc), so
				// consumer groups get a valid empty assignment.
				a = emptyConsumerAssignment
			case !ok:
				a = []byte{}
			}
			g.members[id].assignment = bytes.Clone(a)
		}
		c.emit(groupRecord(g))
		c.propagateAssignment(g, errNone)
		g.transition(StateStable, c.nowMs())
	case StateStable:
		c.synced(g, m.id)
		r := syncResponse(w, errNone)
		r.ProtocolType, r.Protocol = strPtr(g.protocolType), strPtr(g.protocol)
		r.MemberAssignment = m.assignment
		c.respond(w.token, r)
	}
}

// synced records that memberID sent its SyncGroup.
func (c *Coordinator) synced(g *group, memberID string) {
	delete(g.pendingSync, memberID)
	if len(g.pendingSync) == 0 || (g.state != StateCompletingRebalance && g.state != StateStable) {
		c.timers.cancel(timerKey{kind: timerSync, group: g.id})
	}
}

// propagateAssignment answers every parked SyncGroup with the member's
// assignment, or with code; an answered member's session starts over.
func (c *Coordinator) propagateAssignment(g *group, code int16) {
	for _, id := range g.order {
		m := g.members[id]
		w := m.sync
		if w == nil {
			continue
		}
		m.sync = nil
		r := syncResponse(w, code)
		if code == errNone {
			r.ProtocolType, r.Protocol = strPtr(g.protocolType), strPtr(g.protocol)
		}
		if m.assignment != nil {
			r.MemberAssignment = m.assignment
		}
		c.respond(w.token, r)
		c.scheduleHeartbeat(g, id, millis(m.sessionTimeoutMs))
	}
}

// heartbeat handles Heartbeat: it keeps the member's session and tells it
// when a rebalance started.
func (c *Coordinator) heartbeat(in Input, req *kmsg.HeartbeatRequest) {
	r := kmsg.NewPtrHeartbeatResponse()
	r.Version = req.Version
	r.ErrorCode = c.heartbeatCode(req)
	c.respond(in.Token, r)
}

func (c *Coordinator) heartbeatCode(req *kmsg.HeartbeatRequest) int16 {
	if req.Group == "" {
		return errInvalidGroupID
	}
	g := c.groups[req.Group]
	if g == nil {
		return errUnknownMemberID
	}
	if g.consumer != nil {
		return c.classicHeartbeatConsumer(g, req)
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != errNone {
		return code
	}
	if req.Generation != g.generation {
		return errIllegalGeneration
	}
	m := g.members[req.MemberID]
	switch g.state {
	case StateEmpty:
		return errUnknownMemberID
	case StatePreparingRebalance:
		c.scheduleHeartbeat(g, m.id, millis(m.sessionTimeoutMs))
		return errRebalanceInProgress
	}
	c.scheduleHeartbeat(g, m.id, millis(m.sessionTimeoutMs))
	return errNone
}

// leaveGroup handles LeaveGroup: v0-v2 name one member id, v3+ a batch of
// member ids or, for admins removing static members, group.instance.ids.
func (c *Coordinator) leaveGroup(in Input, req *kmsg.LeaveGroupRequest) {
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.Version = req.Version
	defer func() {
		if req.Version < 3 {
			// One member, whose error is the response's.
			if len(resp.Members) > 0 && resp.ErrorCode == errNone {
				resp.ErrorCode = resp.Members[0].ErrorCode
			}
			resp.Members = nil
		}
		c.respond(in.Token, resp)
	}()
	if req.Group == "" {
		resp.ErrorCode = errInvalidGroupID
		return
	}
	leaving := req.Members
	if req.Version < 3 {
		leaving = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	g := c.groups[req.Group]
	left := 0
	for _, l := range leaving {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = l.MemberID, l.InstanceID
		switch {
		case g == nil:
			rm.ErrorCode = errUnknownMemberID
		case g.consumer != nil:
			rm.ErrorCode = c.classicLeaveConsumer(g, l)
		case l.MemberID == "":
			id, ok := "", false
			if l.InstanceID != nil {
				id, ok = g.static[*l.InstanceID]
			}
			if !ok {
				rm.ErrorCode = errUnknownMemberID
				break
			}
			c.removeMember(g, g.members[id])
			left++
		case g.pending[l.MemberID]:
			g.remove(l.MemberID)
			c.cancelHeartbeat(g, l.MemberID)
			left++
		default:
			if rm.ErrorCode = g.validateMember(l.MemberID, l.InstanceID); rm.ErrorCode == errNone {
				c.removeMember(g, g.members[l.MemberID])
				left++
			}
		}
		resp.Members = append(resp.Members, rm)
	}
	if left == 0 || g.consumer != nil {
		return
	}
	switch g.state {
	case StateStable, StateCompletingRebalance:
		c.maybeRebalanceOrCompleteJoin(g)
	case StatePreparingRebalance:
		c.maybeCompleteJoinPhase(g)
	}
}
