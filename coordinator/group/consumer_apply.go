package group

// Writing and applying consumer group records. Each write function emits
// the record of one change and applies it to memory with the apply
// function Replay uses for the same record at load, so what is in memory
// is what the log says.

// writeConsumerGroupEpoch sets the group epoch.
func (c *Coordinator) writeConsumerGroupEpoch(g *group, epoch int32) {
	c.emit(consumerGroupMetadataRecord(g.id, &consumerGroupMetadata{epoch: epoch}))
	applyConsumerGroupEpoch(g.consumer, epoch)
}

func applyConsumerGroupEpoch(cg *consumerGroup, epoch int32) { cg.epoch = epoch }

// writeConsumerMember sets a member's metadata (a new member too).
func (c *Coordinator) writeConsumerMember(g *group, m *consumerMember) {
	c.emit(consumerMemberRecord(g.id, m.id, memberMetadataOf(m)))
	applyConsumerMember(g.consumer, m.id, memberMetadataOf(m))
}

// memberMetadataOf is the persisted metadata of a member.
func memberMetadataOf(m *consumerMember) *consumerMemberMetadata {
	return &consumerMemberMetadata{
		instanceID:           m.instanceID,
		rackID:               m.rackID,
		clientID:             m.clientID,
		clientHost:           m.clientHost,
		subscribedTopicNames: m.topics,
		subscribedTopicRegex: m.regex,
		rebalanceTimeoutMs:   m.rebalanceTimeoutMs,
		serverAssignor:       m.assignor,
		classic:              m.classic,
	}
}

func applyConsumerMember(cg *consumerGroup, id string, v *consumerMemberMetadata) {
	m := cg.members[id]
	if m == nil {
		m = &consumerMember{id: id, reconcileState: reconcileState{assigned: partitionSet{}, pendingRevocation: partitionSet{}}}
		cg.members[id] = m
	}
	if m.instanceID != nil && cg.static[*m.instanceID] == id {
		delete(cg.static, *m.instanceID)
	}
	m.instanceID, m.rackID = v.instanceID, v.rackID
	m.clientID, m.clientHost = v.clientID, v.clientHost
	if !equalStringPtr(m.regex, v.subscribedTopicRegex) {
		m.re = nil
		if v.subscribedTopicRegex != nil {
			m.re, _ = compileTopicRegex(*v.subscribedTopicRegex) // checked by the heartbeat
		}
	}
	m.topics, m.regex = v.subscribedTopicNames, v.subscribedTopicRegex
	m.rebalanceTimeoutMs, m.assignor = v.rebalanceTimeoutMs, v.serverAssignor
	m.classic = v.classic
	if m.instanceID != nil {
		cg.static[*m.instanceID] = id
	}
}

// writeRemoveConsumerMember deletes a member: its current assignment,
// target assignment and metadata, with tombstones in that order (Kafka's).
func (c *Coordinator) writeRemoveConsumerMember(g *group, id string) {
	c.emit(currentAssignmentRecord(g.id, id, nil))
	applyCurrentAssignment(g.consumer, id, nil)
	c.emit(targetAssignmentMemberRecord(g.id, id, nil))
	applyTargetMember(g.consumer, id, nil)
	c.emit(consumerMemberRecord(g.id, id, nil))
	applyRemoveConsumerMember(g.consumer, id)
}

func applyRemoveConsumerMember(cg *consumerGroup, id string) {
	m := cg.members[id]
	if m == nil {
		return
	}
	cg.release(m)
	if m.instanceID != nil && cg.static[*m.instanceID] == id {
		delete(cg.static, *m.instanceID)
	}
	delete(cg.members, id)
	delete(cg.target, id)
}

// writeConsumerSubscription sets the subscribed topics' metadata.
func (c *Coordinator) writeConsumerSubscription(g *group, sub map[string]subscribedTopic) {
	c.emit(partitionMetadataRecord(g.id, partitionMetadataOf(sub)))
	applyConsumerSubscription(g.consumer, sub)
}

func applyConsumerSubscription(cg *consumerGroup, sub map[string]subscribedTopic) {
	cg.subscription = sub
}

// writeTargetMember sets (nil: deletes) a member's target assignment.
func (c *Coordinator) writeTargetMember(g *group, id string, set partitionSet) {
	c.emit(targetAssignmentMemberRecord(g.id, id, set))
	applyTargetMember(g.consumer, id, set)
}

func applyTargetMember(cg *consumerGroup, id string, set partitionSet) {
	if set == nil {
		delete(cg.target, id)
		return
	}
	cg.target[id] = set
}

// writeAssignmentEpoch sets the target assignment's epoch.
func (c *Coordinator) writeAssignmentEpoch(g *group, epoch int32) {
	c.emit(targetAssignmentMetadataRecord(g.id, &targetAssignmentMetadata{assignmentEpoch: epoch}))
	g.consumer.assignmentEpoch = epoch
}

// writeCurrentAssignment sets a member's current assignment and epochs.
func (c *Coordinator) writeCurrentAssignment(g *group, id string, s reconcileState) {
	c.emit(currentAssignmentRecord(g.id, id, currentAssignmentOf(s)))
	applyCurrentAssignment(g.consumer, id, &s)
}

// applyCurrentAssignment sets (nil: clears) a member's current
// assignment, keeping the partitions' holders in step.
func applyCurrentAssignment(cg *consumerGroup, id string, s *reconcileState) {
	m := cg.members[id]
	if m == nil {
		if s == nil {
			return
		}
		m = &consumerMember{id: id, rebalanceTimeoutMs: -1}
		cg.members[id] = m
	}
	cg.release(m)
	if s == nil {
		m.reconcileState = reconcileState{assigned: partitionSet{}, pendingRevocation: partitionSet{}}
		return
	}
	m.reconcileState = *s
	if m.assigned == nil {
		m.assigned = partitionSet{}
	}
	if m.pendingRevocation == nil {
		m.pendingRevocation = partitionSet{}
	}
	cg.hold(m)
}
