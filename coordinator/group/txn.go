package group

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file is transactional offset commits (TxnOffsetCommit, KIP-98 and
// KIP-447), after Kafka 4.x's OffsetMetadataManager: the offsets a
// transaction commits are written at once, in a transactional batch of the
// producer, but stay pending, invisible to OffsetFetch, until the
// transaction's COMMIT marker lands in the partition; an ABORT marker
// drops them.

// TxnRecords is the transactional part of an Output: offset commit records
// that one producer's transaction wrote (TxnOffsetCommit). The driver
// appends them as one transactional batch of that producer id and epoch,
// after the Output's Records.
type TxnRecords struct {
	ProducerID    int64
	ProducerEpoch int16
	Records       []Record

	undo *txnUndo // how TxnAppendFailed puts the pending offsets back
}

// pendingTxn is what one producer's open transaction committed for one
// group: topic -> partition -> offset. An entry may be empty (its offsets
// were deleted); the group still counts the transaction as open until its
// marker, as Kafka does.
type pendingTxn map[string]map[int32]*offset

// txnUndo is the state a TxnOffsetCommit changed, kept to revert it when the
// producer's batch is refused.
type txnUndo struct {
	group        string
	createdGroup bool // the request made a simple group
	producerID   int64
	prev         pendingTxn // the producer's pending offsets before; nil: none
}

// txnOffsetCommit handles TxnOffsetCommit (v0-v5). v3+ carries the member
// id, generation and group.instance.id, checked as OffsetCommit checks them
// (KIP-447), except that a request without them is accepted in a group
// with members (v0-v2 never send them), and a group completing a rebalance
// takes the commit. Unknown topics and partitions fail first, as Kafka's
// broker checks them before its coordinator.
func (c *Coordinator) txnOffsetCommit(in Input, req *kmsg.TxnOffsetCommitRequest) {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	resp.Version = req.Version
	defer c.respond(in.Token, resp)

	generation, memberID, instanceID := int32(-1), "", (*string)(nil)
	if req.Version >= 3 {
		generation, memberID, instanceID = req.Generation, req.MemberID, req.InstanceID
	}

	ids := make([][16]byte, len(req.Topics))
	anyValid := false
	for i, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		count, code := int32(-1), errNone
		if c.cfg.Topics != nil {
			var ok bool
			if ids[i], count, ok = c.cfg.Topics.TopicByName(t.Topic); !ok {
				code = errUnknownTopicOrPartition
			}
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
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
	each := func(fn func(i int, p kmsg.TxnOffsetCommitRequestTopicPartition, rp *kmsg.TxnOffsetCommitResponseTopicPartition)) {
		for i := range req.Topics {
			for j, p := range req.Topics[i].Partitions {
				if rp := &resp.Topics[i].Partitions[j]; rp.ErrorCode == errNone {
					fn(i, p, rp)
				}
			}
		}
	}
	fail := func(code int16) {
		each(func(_ int, _ kmsg.TxnOffsetCommitRequestTopicPartition, rp *kmsg.TxnOffsetCommitResponseTopicPartition) {
			rp.ErrorCode = code
		})
	}

	if req.Group == "" {
		fail(errInvalidGroupID)
		return
	}
	if req.ProducerID < 0 {
		// Kafka would write such a commit as a plain, immediately
		// visible one; a transactional request without a producer is
		// refused here instead.
		fail(errInvalidProducerIDMapping)
		return
	}
	g := c.groups[req.Group]
	created := false
	switch {
	case g == nil && generation < 0:
		// A producer committing for a consumer without group management:
		// a simple group is made, as by OffsetCommit.
		g = newGroup(req.Group, c.nowMs())
		c.groups[g.id] = g
		created = true
	case g == nil:
		fail(errIllegalGeneration)
		return
	case g.consumer != nil:
		if code := c.validateConsumerCommit(g, in.Version, memberID, generation, true); code != errNone {
			fail(code)
			return
		}
	default:
		if code := g.validateTxnCommit(generation, memberID, instanceID); code != errNone {
			fail(code)
			return
		}
	}

	undo := &txnUndo{group: g.id, createdGroup: created, producerID: req.ProducerID}
	if prev, ok := g.txns[req.ProducerID]; ok {
		undo.prev = make(pendingTxn, len(prev))
		for t, ps := range prev {
			undo.prev[t] = maps.Clone(ps)
		}
	}
	var recs []Record
	each(func(i int, p kmsg.TxnOffsetCommitRequestTopicPartition, rp *kmsg.TxnOffsetCommitResponseTopicPartition) {
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
			expireMs:    -1,
			topicID:     ids[i],
		}
		c.setPending(g, req.ProducerID, req.Topics[i].Topic, p.Partition, o)
		recs = append(recs, offsetRecord(g.id, req.Topics[i].Topic, p.Partition, o))
	})
	if len(recs) > 0 {
		c.out.Txn = &TxnRecords{ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch, Records: recs, undo: undo}
	}
}

// validateTxnCommit checks who commits transactionally (Kafka's
// validateOffsetCommit with isTransactional): generation -1 is accepted in
// an empty group, and without member id in any group; otherwise the member
// and its generation must be current.
func (g *group) validateTxnCommit(generation int32, memberID string, instanceID *string) int16 {
	if generation < 0 && (g.state == StateEmpty || (memberID == "" && instanceID == nil)) {
		return errNone
	}
	if code := g.validateMember(memberID, instanceID); code != errNone {
		return code
	}
	if generation != g.generation {
		return errIllegalGeneration
	}
	return errNone
}

// setPending records o as the producer's pending offset of a partition of
// group g.
func (c *Coordinator) setPending(g *group, producerID int64, topic string, partition int32, o *offset) {
	o.ordinal = c.nextOrdinal()
	p := g.txns[producerID]
	if p == nil {
		p = pendingTxn{}
		g.txns[producerID] = p
	}
	ps := p[topic]
	if ps == nil {
		ps = map[int32]*offset{}
		p[topic] = ps
	}
	ps[partition] = o
	groups := c.txnGroups[producerID]
	if groups == nil {
		groups = map[string]bool{}
		c.txnGroups[producerID] = groups
	}
	groups[g.id] = true
}

// nextOrdinal numbers every offset the coordinator applies, in log order.
// A transaction's offsets replace a committed offset at its COMMIT marker
// only when they were written after it (Kafka compares record offsets):
// a plain commit made while the transaction was open wins.
func (c *Coordinator) nextOrdinal() int64 {
	c.ordinal++
	return c.ordinal
}

// completeTxn applies the end of a producer's transaction on this
// partition: on commit its pending offsets become the committed ones
// (unless a later plain commit superseded them), on abort they are
// dropped. A producer with nothing pending is ignored.
func (c *Coordinator) completeTxn(producerID int64, commit bool) {
	groups := c.txnGroups[producerID]
	delete(c.txnGroups, producerID)
	for _, id := range slices.Sorted(maps.Keys(groups)) {
		g := c.groups[id]
		if g == nil {
			continue
		}
		p := g.txns[producerID]
		delete(g.txns, producerID)
		if !commit {
			continue
		}
		for t, ps := range p {
			for part, o := range ps {
				if cur := g.offsets[t][part]; cur == nil || o.ordinal > cur.ordinal {
					g.setOffset(t, part, o)
				}
			}
		}
	}
}

// TxnCompleted is called by the driver when a transaction marker of
// producerID (COMMIT when commit, else ABORT) was appended to the partition
// after loading: the producer's pending offsets become committed or are
// dropped. Markers of producers with nothing pending change nothing. The
// marker is already durable (the broker wrote it), so the Output carries no
// records; it is only for NextTick.
func (c *Coordinator) TxnCompleted(now time.Time, producerID int64, commit bool) Output {
	c.now = now
	if c.phase != phaseFenced {
		c.completeTxn(producerID, commit)
	}
	return c.flush()
}

// ReplayTxnMarker applies a COMMIT (commit) or ABORT transaction marker of
// producerID while loading, in log order with the records passed to Replay
// and ReplayTransactional. A marker for a producer with nothing pending is
// ignored; pending offsets whose marker never comes stay pending after
// Loaded (the transaction coordinator writes the marker later, and the
// driver then calls TxnCompleted).
func (c *Coordinator) ReplayTxnMarker(producerID int64, commit bool) error {
	if c.phase != phaseLoading {
		return ErrLoaded
	}
	c.completeTxn(producerID, commit)
	return nil
}

// ReplayTransactional is Replay for a record of a transactional batch of
// producerID: an offset commit stays pending under the producer until
// ReplayTxnMarker replays its marker. Tombstones and group records apply
// as with Replay.
func (c *Coordinator) ReplayTransactional(producerID int64, key, value []byte) error {
	if c.phase != phaseLoading {
		return ErrLoaded
	}
	if producerID < 0 {
		return fmt.Errorf("%w: transactional record without producer id", ErrCorruptRecord)
	}
	return c.replay(key, value, producerID)
}

// TxnAppendFailed is called when out.Txn could not be appended because the
// partition refused the producer (a fenced or stale producer epoch: code is
// the Kafka error code, INVALID_PRODUCER_EPOCH or PRODUCER_FENCED) while
// out.Records, if any, were appended. It reverts the pending offsets the
// TxnOffsetCommit made and returns out.Responses with that request's answer
// failed with code on every partition, as Kafka fails the whole request.
// The driver must call it before giving the coordinator anything else:
// an Output with Txn is persisted before the next Step.
//
// For any other failure (the log, the leadership) use AppendFailed, which
// fences the coordinator.
func (c *Coordinator) TxnAppendFailed(out Output, code int16) []Response {
	if out.Txn != nil && out.Txn.undo != nil {
		c.revert(out.Txn.undo)
		out.Txn.undo = nil
	}
	mapped := appendErrorCode(code)
	resps := make([]Response, 0, len(out.Responses))
	for _, r := range out.Responses {
		if _, ok := r.Body.(*kmsg.TxnOffsetCommitResponse); ok {
			r = Response{Token: r.Token, Body: failResponse(r.Body, mapped)}
		}
		resps = append(resps, r)
	}
	return resps
}

func (c *Coordinator) revert(u *txnUndo) {
	g := c.groups[u.group]
	if g == nil {
		return
	}
	if u.createdGroup {
		delete(c.groups, u.group)
	} else if u.prev != nil {
		g.txns[u.producerID] = u.prev
		return
	} else {
		delete(g.txns, u.producerID)
	}
	if groups := c.txnGroups[u.producerID]; groups != nil {
		delete(groups, u.group)
		if len(groups) == 0 {
			delete(c.txnGroups, u.producerID)
		}
	}
}

// hasPending reports whether an open transaction committed an offset for
// the partition.
func (g *group) hasPending(topic string, partition int32) bool {
	for _, p := range g.txns {
		if _, ok := p[topic][partition]; ok {
			return true
		}
	}
	return false
}

// dropPending deletes the partition's pending offsets of every open
// transaction (a tombstone for the partition was written), and reports
// whether there were any. The transactions stay open.
func (g *group) dropPending(topic string, partition int32) bool {
	found := false
	for _, p := range g.txns {
		ps := p[topic]
		if _, ok := ps[partition]; ok {
			found = true
			delete(ps, partition)
			if len(ps) == 0 {
				delete(p, topic)
			}
		}
	}
	return found
}

// pendingPartitions returns the topics and partitions with pending offsets
// that have no committed offset, sorted, for the tombstones of a deletion.
func (g *group) pendingPartitions(topics func(string) bool) []topicPartition {
	seen := map[topicPartition]bool{}
	for _, p := range g.txns {
		for t, ps := range p {
			if !topics(t) {
				continue
			}
			for part := range ps {
				if _, ok := g.offsets[t][part]; !ok {
					seen[topicPartition{t, part}] = true
				}
			}
		}
	}
	out := slices.Collect(maps.Keys(seen))
	slices.SortFunc(out, func(a, b topicPartition) int {
		return cmp.Or(strings.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
	})
	return out
}

type topicPartition struct {
	topic     string
	partition int32
}

// forgetTxns removes a group that is dropped from the producers' index.
func (c *Coordinator) forgetTxns(g *group) {
	for pid := range g.txns {
		if groups := c.txnGroups[pid]; groups != nil {
			delete(groups, g.id)
			if len(groups) == 0 {
				delete(c.txnGroups, pid)
			}
		}
	}
}
