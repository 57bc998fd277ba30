package group

import (
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file is committed offsets: OffsetCommit, OffsetFetch, OffsetDelete
// and offset expiration, after Kafka 4.x's OffsetMetadataManager. The topic
// checks Kafka's broker makes before calling its coordinator are made here
// too, through Config.Topics.

// offsetCommit handles OffsetCommit (v2-v10; v10 names topics by id).
func (c *Coordinator) offsetCommit(in Input, req *kmsg.OffsetCommitRequest) {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	resp.Version = req.Version
	defer c.respond(in.Token, resp)

	// Every partition gets an entry; those of unknown topics and
	// partitions fail before the group is looked at.
	names := make([]string, len(req.Topics))
	ids := make([][16]byte, len(req.Topics))
	anyValid := false
	for i, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		name, id, count, code := c.resolveCommitTopic(req.Version, t.Topic, t.TopicID)
		names[i], ids[i] = name, id
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case code != errNone:
				rp.ErrorCode = code
			case count >= 0 && (p.Partition < 0 || p.Partition >= count):
				rp.ErrorCode = errUnknownTopicOrPartition
			default:
				anyValid = true
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if !anyValid {
		return
	}
	each := func(fn func(i int, p kmsg.OffsetCommitRequestTopicPartition, rp *kmsg.OffsetCommitResponseTopicPartition)) {
		for i := range req.Topics {
			for j, p := range req.Topics[i].Partitions {
				if rp := &resp.Topics[i].Partitions[j]; rp.ErrorCode == errNone {
					fn(i, p, rp)
				}
			}
		}
	}

	g := c.groups[req.Group]
	code := errNone
	switch {
	case g == nil && req.Generation < 0:
		// A consumer that manages its own partitions (or an admin)
		// commits without membership: the group is created as a
		// "simple" group, empty and without protocol type.
		g = newGroup(req.Group, c.nowMs())
		c.groups[g.id] = g
	case g == nil && req.Version >= 9:
		code = errGroupIDNotFound
	case g == nil:
		code = errIllegalGeneration
	case g.consumer != nil:
		code = c.validateConsumerCommit(g, req.Version, req.MemberID, req.Generation, false)
	default:
		code = g.validateCommit(req)
	}
	if code != errNone {
		each(func(_ int, _ kmsg.OffsetCommitRequestTopicPartition, rp *kmsg.OffsetCommitResponseTopicPartition) {
			rp.ErrorCode = code
		})
		return
	}
	if m := g.members[req.MemberID]; m != nil && (g.state == StateStable || g.state == StatePreparingRebalance) {
		// A commit keeps the member's session, as a heartbeat does.
		c.scheduleHeartbeat(g, m.id, millis(m.sessionTimeoutMs))
	}

	expireMs := int64(-1)
	if req.Version <= 4 && req.RetentionTimeMillis != -1 {
		expireMs = c.nowMs() + req.RetentionTimeMillis
	}
	each(func(i int, p kmsg.OffsetCommitRequestTopicPartition, rp *kmsg.OffsetCommitResponseTopicPartition) {
		metadata := ""
		if p.Metadata != nil {
			metadata = *p.Metadata
		}
		if javaLength(metadata) > c.cfg.OffsetMetadataMaxBytes {
			rp.ErrorCode = errOffsetMetadataTooLarge
			return
		}
		o := &offset{
			offset:      p.Offset,
			leaderEpoch: p.LeaderEpoch,
			metadata:    metadata,
			commitMs:    c.nowMs(),
			expireMs:    expireMs,
			topicID:     ids[i],
			ordinal:     c.nextOrdinal(),
		}
		g.setOffset(names[i], p.Partition, o)
		c.emit(offsetRecord(g.id, names[i], p.Partition, o))
	})
}

// resolveCommitTopic finds a committed topic: by id from v10, by name
// before. count is its partition count, or -1 when Config.Topics is nil and
// partitions cannot be checked. The topic id is recorded with the commit
// (zero when unknown), so that OffsetFetch v10 does not return the offsets
// of a deleted topic for a new topic of the same name (KAFKA-19154).
func (c *Coordinator) resolveCommitTopic(version int16, name string, id [16]byte) (topic string, topicID [16]byte, count int32, code int16) {
	if version >= 10 {
		if c.cfg.Topics == nil {
			return "", id, -1, errUnknownTopicID
		}
		n, count, ok := c.cfg.Topics.TopicByID(id)
		if !ok {
			return "", id, -1, errUnknownTopicID
		}
		return n, id, count, errNone
	}
	if c.cfg.Topics == nil {
		return name, [16]byte{}, -1, errNone
	}
	id, count, ok := c.cfg.Topics.TopicByName(name)
	if !ok {
		return name, [16]byte{}, -1, errUnknownTopicOrPartition
	}
	return name, id, count, errNone
}

// validateCommit checks who commits. Generation -1 without a member id is
// an admin or a consumer without group management: allowed while the group
// is empty. Otherwise the member and its generation must be current, and a
// group waiting for its assignment answers REBALANCE_IN_PROGRESS.
func (g *group) validateCommit(req *kmsg.OffsetCommitRequest) int16 {
	if req.Generation < 0 && g.state == StateEmpty {
		return errNone
	}
	if req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil {
		if code := g.validateMember(req.MemberID, req.InstanceID); code != errNone {
			return code
		}
		if req.Generation != g.generation {
			return errIllegalGeneration
		}
	} else if g.state != StateEmpty {
		return errUnknownMemberID
	}
	if g.state == StateCompletingRebalance {
		return errRebalanceInProgress
	}
	return errNone
}

// javaLength is the length of s in UTF-16 code units, as Java's
// String.length counts it.
func javaLength(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// offsetFetch handles OffsetFetch: v1-v7 for one group, v8+ for several,
// v10 naming topics by id. Null topics (v2+) fetch every committed offset.
// A group or partition without a commit gets offset -1 and no error. With
// require_stable (v7+, KIP-447) a partition for which an open transaction
// committed an offset gets UNSTABLE_OFFSET_COMMIT (the client retries until
// the transaction ends); without it, the committed offset is returned.
func (c *Coordinator) offsetFetch(in Input, req *kmsg.OffsetFetchRequest) {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	resp.Version = req.Version
	defer c.respond(in.Token, resp)

	if req.Version >= 8 {
		for _, rg := range req.Groups {
			if code := c.validateConsumerFetch(rg.Group, rg.MemberID, rg.MemberEpoch); code != errNone {
				fg := kmsg.NewOffsetFetchResponseGroup()
				fg.Group, fg.ErrorCode = rg.Group, code
				resp.Groups = append(resp.Groups, fg)
				continue
			}
			resp.Groups = append(resp.Groups, c.fetchGroup(req.Version, rg.Group, rg.Topics, req.RequireStable))
		}
		return
	}
	var topics []kmsg.OffsetFetchRequestGroupTopic
	if req.Topics != nil || req.Version < 2 {
		topics = make([]kmsg.OffsetFetchRequestGroupTopic, 0, len(req.Topics))
		for _, t := range req.Topics {
			topics = append(topics, kmsg.OffsetFetchRequestGroupTopic{Topic: t.Topic, Partitions: t.Partitions})
		}
	}
	rg := c.fetchGroup(req.Version, req.Group, topics, req.Version >= 7 && req.RequireStable)
	resp.ErrorCode = rg.ErrorCode
	for _, t := range rg.Topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p.Partition, p.Offset, p.LeaderEpoch
			rp.Metadata, rp.ErrorCode = p.Metadata, p.ErrorCode
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
}

// fetchGroup answers the OffsetFetch of one group; nil topics means all
// (the committed ones: partitions with only a pending transactional offset
// are not listed, as in Kafka).
func (c *Coordinator) fetchGroup(version int16, groupID string, topics []kmsg.OffsetFetchRequestGroupTopic, requireStable bool) kmsg.OffsetFetchResponseGroup {
	rg := kmsg.NewOffsetFetchResponseGroup()
	rg.Group = groupID
	g := c.groups[groupID]
	if topics == nil {
		if g == nil {
			return rg
		}
		for _, t := range g.sortedTopics() {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic = t
			if version >= 10 {
				// Offsets of topics that no longer exist have no id
				// to report them under.
				if c.cfg.Topics == nil {
					continue
				}
				id, _, ok := c.cfg.Topics.TopicByName(t)
				if !ok {
					continue
				}
				rt.TopicID = id
			}
			for _, p := range g.sortedPartitions(t) {
				rp := fetchedPartition(p, g.offsets[t][p])
				if requireStable && g.hasPending(t, p) {
					rp = unstablePartition(p)
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		return rg
	}
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		name, code := t.Topic, errNone
		if version >= 10 {
			name, code = "", errUnknownTopicID
			if c.cfg.Topics != nil {
				if n, _, ok := c.cfg.Topics.TopicByID(t.TopicID); ok {
					name, code = n, errNone
				}
			}
		}
		for _, p := range t.Partitions {
			var o *offset
			if g != nil && code == errNone {
				o = g.offsets[name][p]
				if version >= 10 && o != nil && o.topicID != ([16]byte{}) && o.topicID != t.TopicID {
					// Committed to an earlier topic of the same name.
					o = nil
				}
			}
			rp := fetchedPartition(p, o)
			rp.ErrorCode = code
			if code == errNone && requireStable && g != nil && g.hasPending(name, p) {
				rp = unstablePartition(p)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		rg.Topics = append(rg.Topics, rt)
	}
	return rg
}

func fetchedPartition(partition int32, o *offset) kmsg.OffsetFetchResponseGroupTopicPartition {
	rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
	rp.Partition = partition
	if o == nil {
		rp.Offset, rp.LeaderEpoch, rp.Metadata = -1, -1, strPtr("")
		return rp
	}
	rp.Offset, rp.LeaderEpoch, rp.Metadata = o.offset, o.leaderEpoch, strPtr(o.metadata)
	return rp
}

// unstablePartition is the answer for a partition an open transaction
// committed an offset for, when the fetch requires stable offsets.
func unstablePartition(partition int32) kmsg.OffsetFetchResponseGroupTopicPartition {
	rp := fetchedPartition(partition, nil)
	rp.ErrorCode = errUnstableOffsetCommit
	return rp
}

// offsetDelete handles OffsetDelete: offsets of topics no member subscribes
// to can be deleted, in an empty group or a consumer group. As in Kafka,
// unknown topics and partitions are reported even when the group fails.
func (c *Coordinator) offsetDelete(in Input, req *kmsg.OffsetDeleteRequest) {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	resp.Version = req.Version
	defer c.respond(in.Token, resp)
	if req.Group == "" {
		resp.ErrorCode = errInvalidGroupID
		return
	}
	g := c.groups[req.Group]
	switch {
	case g == nil:
		resp.ErrorCode = errGroupIDNotFound
	case g.state != StateEmpty && g.protocolType != consumerProtocolType:
		// Without the consumer protocol the subscriptions are unknown.
		resp.ErrorCode = errNonEmptyGroup
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		count, code := int32(-1), errNone
		if c.cfg.Topics != nil {
			var ok bool
			if _, count, ok = c.cfg.Topics.TopicByName(t.Topic); !ok {
				code = errUnknownTopicOrPartition
			}
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case code != errNone:
				rp.ErrorCode = code
			case count >= 0 && (p.Partition < 0 || p.Partition >= count):
				rp.ErrorCode = errUnknownTopicOrPartition
			case resp.ErrorCode != errNone:
				continue // the group failed: only topic errors are listed
			case g.isSubscribedTo(t.Topic):
				rp.ErrorCode = errGroupSubscribedToTopic
			default:
				// A tombstone deletes the committed offset and those of
				// open transactions alike.
				committed := g.deleteOffset(t.Topic, p.Partition)
				if g.dropPending(t.Topic, p.Partition) || committed {
					c.emit(offsetTombstone(g.id, t.Topic, p.Partition))
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		if len(rt.Partitions) > 0 {
			resp.Topics = append(resp.Topics, rt)
		}
	}
}

// expireOffsets runs every OffsetsRetentionCheckInterval: it deletes the
// expired offsets of every group, and then empty groups left without
// offsets and without open transactions (Kafka's cleanupGroupMetadata).
func (c *Coordinator) expireOffsets() {
	for _, id := range c.sortedGroupIDs() {
		g := c.groups[id]
		switch {
		case !c.expireGroupOffsets(g):
		case g.consumer != nil:
			if len(g.consumer.members) == 0 {
				c.deleteConsumerState(g)
				c.dropGroup(g)
			}
		case g.state == StateEmpty:
			c.emit(groupTombstone(id))
			c.dropGroup(g)
		}
	}
}

// expireGroupOffsets deletes the group's expired offsets and reports
// whether none is left and no transaction that committed offsets for the
// group is open. An offset with a pending transactional offset for its
// partition does not expire until the transaction ends. Kafka also skips
// the open-transaction check for a group without committed offsets; here
// such a group is kept too, so a transaction's offsets never commit into a
// group that was deleted under them.
func (c *Coordinator) expireGroupOffsets(g *group) bool {
	if len(g.offsets) == 0 {
		return len(g.txns) == 0
	}
	base := g.expirationBase()
	if base == nil {
		return false
	}
	now, retention := c.nowMs(), c.cfg.OffsetsRetention.Milliseconds()
	all := true
	for _, t := range g.sortedTopics() {
		if g.isSubscribedTo(t) {
			all = false
			continue
		}
		for _, p := range g.sortedPartitions(t) {
			o := g.offsets[t][p]
			expired := now-base(o) >= retention
			if o.expireMs >= 0 {
				expired = now >= o.expireMs // a retention the commit asked for
			}
			if !expired || g.hasPending(t, p) {
				all = false
				continue
			}
			g.deleteOffset(t, p)
			c.emit(offsetTombstone(g.id, t, p))
		}
	}
	return all && len(g.txns) == 0
}

// expirationBase returns the time an offset's retention counts from, or nil
// when the group's offsets do not expire now:
//   - an empty group with a protocol type: from when it became empty (Kafka
//     2.1+, KIP-211), or the commit for groups loaded from old records;
//   - a stable consumer group with known subscriptions: from the commit,
//     for topics no member subscribes to;
//   - a group without protocol type (commits only): from the commit.
func (g *group) expirationBase() func(*offset) int64 {
	commit := func(o *offset) int64 { return o.commitMs }
	switch {
	case g.consumer != nil:
		// Consumer groups: from the commit, for topics no member
		// subscribes to (Kafka's ConsumerGroup).
		return commit
	case g.protocolType == "":
		return commit
	case g.state == StateEmpty:
		if g.stateTimestamp < 0 {
			return commit
		}
		return func(*offset) int64 { return g.stateTimestamp }
	case g.protocolType == consumerProtocolType && g.subscribedKnown && g.state == StateStable:
		return commit
	}
	return nil
}
