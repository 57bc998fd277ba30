package group

import (
	"maps"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// subscribesTo reports whether a member subscribes to the topic, by name
// or by a regular expression that matches it.
func (cg *consumerGroup) subscribesTo(topic string) bool {
	for _, m := range cg.members {
		if slices.Contains(m.topics, topic) {
			return true
		}
		if m.re != nil && m.re.MatchString(topic) {
			return true
		}
	}
	return false
}

// validateConsumerCommit checks an OffsetCommit (or a TxnOffsetCommit,
// txn) to a consumer group, as Kafka's ConsumerGroup does: a commit
// without a member (epoch -1) is accepted only while the group is empty;
// otherwise the member must exist (UNKNOWN_MEMBER_ID) and commit at its
// current epoch (STALE_MEMBER_EPOCH); a member of the consumer protocol
// commits with OffsetCommit v9 or later (UNSUPPORTED_VERSION).
func (c *Coordinator) validateConsumerCommit(g *group, version int16, memberID string, epoch int32, txn bool) int16 {
	cg := g.consumer
	if epoch < 0 && len(cg.members) == 0 {
		return errNone
	}
	m := cg.members[memberID]
	switch {
	case m == nil:
		return errUnknownMemberID
	case m.classic != nil && epoch != m.epoch:
		// A classic member's generation is its member epoch.
		return errIllegalGeneration
	case m.classic != nil:
		return errNone
	case !txn && version < 9:
		return errUnsupportedVersion
	case epoch != m.epoch:
		return errStaleMemberEpoch
	}
	return errNone
}

// validateConsumerFetch checks the member of an OffsetFetch (v9+) of a
// consumer group: none given (the admin client, or an older consumer) is
// accepted; otherwise the member must exist at that epoch.
func (c *Coordinator) validateConsumerFetch(groupID string, memberID *string, epoch int32) int16 {
	g := c.groups[groupID]
	if g == nil || g.consumer == nil || (memberID == nil && epoch < 0) {
		return errNone
	}
	m := g.consumer.members[derefString(memberID)]
	switch {
	case m == nil:
		return errUnknownMemberID
	case epoch != m.epoch:
		return errStaleMemberEpoch
	}
	return errNone
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// deleteConsumerState writes the tombstones of a consumer group without
// members (its offsets are the caller's) and makes it a plain group again:
// Kafka's group tombstones, target assignment metadata, subscription
// metadata and group epoch.
func (c *Coordinator) deleteConsumerState(g *group) {
	for _, id := range g.consumer.sortedMemberIDs() {
		c.writeRemoveConsumerMember(g, id)
	}
	c.emit(targetAssignmentMetadataRecord(g.id, nil))
	c.emit(partitionMetadataRecord(g.id, nil))
	c.emit(consumerGroupMetadataRecord(g.id, nil))
	g.consumer = nil
}

// consumerGroupDescribe handles ConsumerGroupDescribe (key 69).
func (c *Coordinator) consumerGroupDescribe(in Input, req *kmsg.ConsumerGroupDescribeRequest) {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, id := range req.Groups {
		dg := kmsg.NewConsumerGroupDescribeResponseGroup()
		dg.Group = id
		dg.AuthorizedOperations = math.MinInt32
		if req.IncludeAuthorizedOperations {
			dg.AuthorizedOperations = allGroupOperations
			if in.AuthorizedOperations != nil {
				dg.AuthorizedOperations = in.AuthorizedOperations(id)
			}
		}
		g := c.groups[id]
		switch {
		case g == nil:
			dg.ErrorCode = errGroupIDNotFound
			dg.ErrorMessage = strPtr("Group " + id + " not found.")
			dg.AuthorizedOperations = math.MinInt32 // only for a group answered without an error, as Kafka
		case g.consumer == nil:
			dg.ErrorCode = errGroupIDNotFound
			dg.ErrorMessage = strPtr("Group " + id + " is not a consumer group.")
			dg.AuthorizedOperations = math.MinInt32
		default:
			cg := g.consumer
			dg.State = cg.state().String()
			dg.Epoch = cg.epoch
			dg.AssignmentEpoch = cg.assignmentEpoch
			dg.AssignorName = c.groupAssignor(cg)
			for _, mid := range cg.sortedMemberIDs() {
				m := cg.members[mid]
				dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
				dm.MemberID = m.id
				dm.InstanceID, dm.RackID = m.instanceID, m.rackID
				dm.MemberEpoch = m.epoch
				dm.ClientID, dm.ClientHost = m.clientID, m.clientHost
				dm.SubscribedTopics = slices.Clone(m.topics)
				if dm.SubscribedTopics == nil {
					dm.SubscribedTopics = []string{}
				}
				dm.SubscribedTopicRegex = m.regex
				dm.Assignment = c.describeAssignment(cg, m.assigned)
				dm.TargetAssignment = c.describeAssignment(cg, cg.target[mid])
				dm.MemberType = 1 // the consumer protocol (v1+)
				if m.classic != nil {
					dm.MemberType = 0 // the classic protocol
				}
				dg.Members = append(dg.Members, dm)
			}
		}
		resp.Groups = append(resp.Groups, dg)
	}
	c.respond(in.Token, resp)
}

// describeAssignment lists an assignment by topic for
// ConsumerGroupDescribe, with the topics' names.
func (c *Coordinator) describeAssignment(cg *consumerGroup, s partitionSet) kmsg.Assignment {
	a := kmsg.NewAssignment()
	a.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	names := map[[16]byte]string{}
	for name, t := range cg.subscription {
		names[t.id] = name
	}
	for _, t := range sortedKeys(s) {
		ps := slices.Sorted(maps.Keys(s[t]))
		if len(ps) == 0 {
			continue
		}
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID, tp.Partitions = t, ps
		tp.Topic = names[t]
		if tp.Topic == "" && c.cfg.Topics != nil {
			if name, _, ok := c.cfg.Topics.TopicByID(t); ok {
				tp.Topic = name
			}
		}
		a.TopicPartitions = append(a.TopicPartitions, tp)
	}
	return a
}
