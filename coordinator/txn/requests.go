package txn

import (
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/group"
)

// Topics of Kafka's own: AddPartitionsToTxn may not add them (Kafka refuses
// them with TOPIC_AUTHORIZATION_FAILED); AddOffsetsToTxn adds the group's
// partition of __consumer_offsets.
const (
	offsetsTopic = "__consumer_offsets"
	stateTopic   = "__transaction_state"
)

// initProducerID handles InitProducerId (Kafka's handleInitProducerId):
// a new producer id without transactional id; with one, the next epoch of
// its producer id (a new producer id once the epoch is exhausted), after
// aborting an ongoing transaction with a bumped epoch.
func (c *Coordinator) initProducerID(in Input, req *kmsg.InitProducerIDRequest) {
	v := in.Version
	answer := func(code int16, pid int64, epoch int16) kmsg.Response {
		r := kmsg.NewPtrInitProducerIDResponse()
		r.Version = v
		r.ErrorCode = fencedCode(code, v, 4)
		r.ProducerID, r.ProducerEpoch = pid, epoch
		if code != errNone {
			r.ProducerID, r.ProducerEpoch = noProducerID, noProducerEpoch
		}
		return r
	}
	fail := func(code int16) { c.respond(in.Token, answer(code, 0, 0)) }

	if req.TransactionalID == nil {
		// An idempotent producer: any id will do, epoch 0.
		id, ok := c.cfg.ProducerIDs.NextProducerID()
		if !ok {
			fail(errCoordinatorLoadInProgress)
			return
		}
		c.respond(in.Token, answer(errNone, id, 0))
		return
	}
	id := *req.TransactionalID
	expected := false
	if v >= 3 {
		switch {
		case req.ProducerID == noProducerID && req.ProducerEpoch == noProducerEpoch:
		case req.ProducerID == noProducerID || req.ProducerEpoch == noProducerEpoch:
			fail(errInvalidRequest)
			return
		default:
			expected = true
		}
	}
	switch {
	case id == "":
		fail(errInvalidRequest)
		return
	case req.TransactionTimeoutMillis <= 0 || int64(req.TransactionTimeoutMillis) > c.cfg.MaxTimeout.Milliseconds():
		fail(errInvalidTransactionTimeout)
		return
	}
	t := c.txns[id]
	if t == nil {
		pid, ok := c.cfg.ProducerIDs.NextProducerID()
		if !ok {
			fail(errCoordinatorLoadInProgress)
			return
		}
		t = &txn{id: id, fresh: true, meta: meta{
			producerID:     pid,
			prevProducerID: noProducerID,
			nextProducerID: noProducerID,
			epoch:          noProducerEpoch,
			lastEpoch:      noProducerEpoch,
			timeoutMs:      req.TransactionTimeoutMillis,
			state:          StateEmpty,
			startMs:        -1,
			lastUpdateMs:   c.now.UnixMilli(),
		}}
		c.txns[id] = t
	}
	if t.pending != nil {
		fail(errConcurrentTransactions)
		return
	}
	// KIP-360: a producer that gives its id and epoch is recovering; it
	// is fenced unless the id is new to the coordinator, its producer id
	// is the current one, or it is the previous one at an exhausted epoch
	// (a retry of the rotation whose answer was lost).
	if expected && t.epoch != noProducerEpoch && req.ProducerID != t.producerID &&
		(req.ProducerID != t.prevProducerID || !epochExhausted(req.ProducerEpoch)) {
		fail(errProducerFenced)
		return
	}
	switch t.state {
	case StatePrepareCommit, StatePrepareAbort:
		fail(errConcurrentTransactions)
		return
	case StateOngoing:
		// Abort it with a bumped epoch, which fences the producer of
		// the transaction; the client retries and then gets the epoch
		// after that one.
		if !c.fenceAbort(t, &waiter{
			token: in.Token,
			done:  func() kmsg.Response { return answer(errConcurrentTransactions, 0, 0) },
			fail:  func(code int16) kmsg.Response { return answer(code, 0, 0) },
		}) {
			fail(errCoordinatorLoadInProgress)
		}
		return
	}
	to := t.clone()
	to.state = StateEmpty
	to.partitions = nil
	to.startMs = -1
	to.timeoutMs = req.TransactionTimeoutMillis
	to.nextProducerID = noProducerID
	to.clientTV = 0
	switch {
	case epochExhausted(t.epoch) && (!expected || req.ProducerEpoch == t.epoch):
		pid, ok := c.cfg.ProducerIDs.NextProducerID()
		if !ok {
			fail(errCoordinatorLoadInProgress)
			return
		}
		to.prevProducerID, to.producerID, to.epoch, to.lastEpoch = t.producerID, pid, 0, noProducerEpoch
		if expected {
			to.lastEpoch = t.epoch
		}
	case !expected:
		to.epoch, to.lastEpoch = t.epoch+1, noProducerEpoch
	case t.epoch == noProducerEpoch || req.ProducerEpoch == t.epoch:
		// Recovering with no other producer initialized meanwhile.
		to.epoch, to.lastEpoch = t.epoch+1, t.epoch
	case req.ProducerEpoch == t.lastEpoch:
		// A retry of an InitProducerId that bumped the epoch: answer
		// the same epoch again.
	default:
		fail(errProducerFenced)
		return
	}
	c.transition(t, transitInit, to, Record{})
	c.wait(waiter{
		token: in.Token,
		done:  func() kmsg.Response { return answer(errNone, t.producerID, t.epoch) },
		fail:  func(code int16) kmsg.Response { return answer(code, 0, 0) },
	})
}

// fenceAbort aborts t's ongoing transaction on the coordinator's own
// initiative (a new producer of the id, or the timeout), with the epoch
// bumped so the producer of the transaction is fenced: Kafka's
// PrepareEpochFence followed by PrepareAbort, in one record. The
// transaction keeps its client's transaction version: with version 2, the
// producer's own abort at the old epoch is then answered as a retry of
// this one, so a producer whose transaction timed out carries on with the
// new epoch (KIP-890), and an abort at the last epoch moves to a new
// producer id once its markers are written. w, if not nil, is answered
// when the abort is durable. It returns false, and does nothing, when a
// new producer id is needed and none is at hand.
func (c *Coordinator) fenceAbort(t *txn, w *waiter) bool {
	to := t.clone()
	to.state = StatePrepareAbort
	to.epoch = bump(t.epoch)
	to.lastEpoch = noProducerEpoch
	to.nextProducerID = noProducerID
	if t.clientTV >= tv2 && epochExhausted(t.epoch) {
		pid, ok := c.cfg.ProducerIDs.NextProducerID()
		if !ok {
			return false
		}
		to.nextProducerID = pid
	}
	c.transition(t, transitFenceAbort, to, Record{})
	if w != nil {
		c.wait(*w)
	}
	return true
}

// prepareAdd adds partitions to id's transaction (Kafka's
// handleAddPartitionsToTransaction). tv is the client's transaction
// version, or -1 when the request does not tell (AddOffsetsToTxn, which
// both versions send): the id's stays. started reports that a record was
// written: the answer waits for it.
func (c *Coordinator) prepareAdd(id string, pid int64, epoch int16, tps []topicPartition, tv int16) (code int16, started bool) {
	if id == "" {
		return errInvalidRequest, false
	}
	t := c.txns[id]
	switch {
	case t != nil && (t.pending != nil || t.state.preparing()):
		// Checked first, as Kafka does since KAFKA-18660: a version 2
		// producer whose end moved it to a new producer id learns that id
		// before the transaction completes with it, and must be told to
		// retry rather than that its id is wrong.
		return errConcurrentTransactions, false
	case t == nil || t.fresh || t.producerID != pid:
		return errInvalidProducerIDMapping, false
	case t.epoch != epoch:
		return errProducerFenced, false
	}
	if t.state == StateOngoing {
		all := true
		for _, tp := range tps {
			all = all && t.hasPartition(tp)
		}
		if all {
			return errNone, false
		}
	}
	to := t.clone()
	if t.state.complete() {
		to.startMs = c.now.UnixMilli()
	}
	to.state = StateOngoing
	to.partitions = t.withPartitions(tps)
	to.nextProducerID = noProducerID
	if tv >= 0 {
		to.clientTV = tv
	}
	c.transition(t, transitAdd, to, Record{})
	return errNone, true
}

// verify answers a verify-only AddPartitionsToTxn v4+ transaction, sent by
// partition leaders before they append a transactional batch (KIP-890
// part 1): each partition is NONE if in the transaction, else
// TRANSACTION_ABORTABLE.
func (c *Coordinator) verify(id string, pid int64, epoch int16, tps []topicPartition) []int16 {
	codes := make([]int16, len(tps))
	set := func(code int16) []int16 {
		for i := range codes {
			codes[i] = code
		}
		return codes
	}
	t := c.txns[id]
	switch {
	case id == "":
		return set(errInvalidRequest)
	case t == nil || t.fresh || t.producerID != pid:
		return set(errInvalidProducerIDMapping)
	case t.epoch != epoch:
		return set(errProducerFenced)
	case t.state.preparing():
		return set(errConcurrentTransactions)
	}
	for i, tp := range tps {
		if !t.hasPartition(tp) {
			codes[i] = errTransactionAbortable
		}
	}
	return codes
}

// addPartitions handles AddPartitionsToTxn: v0-v3 for one transaction of a
// client, v4+ for batches from partition leaders, some verify-only.
func (c *Coordinator) addPartitions(in Input, req *kmsg.AddPartitionsToTxnRequest) {
	v := in.Version
	type txnReq struct {
		id      string
		pid     int64
		epoch   int16
		verify  bool
		tps     []topicPartition
		codes   []int16
		started bool
	}
	var reqs []*txnReq
	if v < 4 {
		r := &txnReq{id: req.TransactionalID, pid: req.ProducerID, epoch: req.ProducerEpoch}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				r.tps = append(r.tps, topicPartition{Topic: t.Topic, Partition: p})
			}
		}
		reqs = append(reqs, r)
	} else {
		for _, tr := range req.Transactions {
			r := &txnReq{id: tr.TransactionalID, pid: tr.ProducerID, epoch: tr.ProducerEpoch, verify: tr.VerifyOnly}
			for _, t := range tr.Topics {
				for _, p := range t.Partitions {
					r.tps = append(r.tps, topicPartition{Topic: t.Topic, Partition: p})
				}
			}
			reqs = append(reqs, r)
		}
	}
	tv := int16(0)
	if v >= 5 {
		tv = tv2
	}
	anyStarted := false
	for _, r := range reqs {
		r.codes = make([]int16, len(r.tps))
		if c.checkPartitions(in, v, r.tps, r.codes) {
			continue
		}
		if r.verify {
			r.codes = c.verify(r.id, r.pid, r.epoch, r.tps)
			continue
		}
		code, started := c.prepareAdd(r.id, r.pid, r.epoch, r.tps, tv)
		for i := range r.codes {
			r.codes[i] = fencedCode(code, v, 2)
		}
		r.started = started
		anyStarted = anyStarted || started
	}
	build := func(failCode int16) kmsg.Response {
		resp := kmsg.NewPtrAddPartitionsToTxnResponse()
		resp.Version = v
		for _, r := range reqs {
			codes := r.codes
			if r.started && failCode != errNone {
				codes = make([]int16, len(r.tps))
				for i := range codes {
					codes[i] = fencedCode(failCode, v, 2)
				}
			}
			if v < 4 {
				resp.Topics = addPartitionsTopics(r.tps, codes)
				continue
			}
			rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
			rt.TransactionalID = r.id
			for _, t := range addPartitionsTopics(r.tps, codes) {
				tt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				tt.Topic = t.Topic
				for _, p := range t.Partitions {
					tt.Partitions = append(tt.Partitions, kmsg.AddPartitionsToTxnResponseTransactionTopicPartition{Partition: p.Partition, ErrorCode: p.ErrorCode})
				}
				rt.Topics = append(rt.Topics, tt)
			}
			resp.Transactions = append(resp.Transactions, rt)
		}
		return resp
	}
	if !anyStarted {
		c.respond(in.Token, build(errNone))
		return
	}
	c.wait(waiter{token: in.Token, done: func() kmsg.Response { return build(errNone) }, fail: build})
}

// checkPartitions fails a transaction's partitions that do not exist or,
// for clients (v0-v3), that the client may not write; the others then get
// OPERATION_NOT_ATTEMPTED, as Kafka answers. It reports whether any failed.
func (c *Coordinator) checkPartitions(in Input, v int16, tps []topicPartition, codes []int16) bool {
	failed := false
	for i, tp := range tps {
		switch {
		case v < 4 && (tp.Topic == offsetsTopic || tp.Topic == stateTopic ||
			in.TopicAuthorized != nil && !in.TopicAuthorized(tp.Topic)):
			codes[i] = errTopicAuthorizationFailed
		case c.cfg.Topics != nil && !partitionExists(c.cfg.Topics, tp):
			codes[i] = errUnknownTopicOrPartition
		default:
			continue
		}
		failed = true
	}
	if failed {
		for i := range codes {
			if codes[i] == errNone {
				codes[i] = errOperationNotAttempted
			}
		}
	}
	return failed
}

func partitionExists(ts Topics, tp topicPartition) bool {
	n, ok := ts.Partitions(tp.Topic)
	return ok && tp.Partition >= 0 && tp.Partition < n
}

// addPartitionsTopics groups per-partition codes by topic, in request
// order.
func addPartitionsTopics(tps []topicPartition, codes []int16) []kmsg.AddPartitionsToTxnResponseTopic {
	var out []kmsg.AddPartitionsToTxnResponseTopic
	idx := map[string]int{}
	for i, tp := range tps {
		j, ok := idx[tp.Topic]
		if !ok {
			j = len(out)
			idx[tp.Topic] = j
			t := kmsg.NewAddPartitionsToTxnResponseTopic()
			t.Topic = tp.Topic
			out = append(out, t)
		}
		out[j].Partitions = append(out[j].Partitions, kmsg.AddPartitionsToTxnResponseTopicPartition{Partition: tp.Partition, ErrorCode: codes[i]})
	}
	return out
}

// addOffsets handles AddOffsetsToTxn: the group's __consumer_offsets
// partition joins the transaction, so its TxnOffsetCommit records get the
// markers.
func (c *Coordinator) addOffsets(in Input, req *kmsg.AddOffsetsToTxnRequest) {
	v := in.Version
	answer := func(code int16) kmsg.Response {
		r := kmsg.NewPtrAddOffsetsToTxnResponse()
		r.Version = v
		r.ErrorCode = fencedCode(code, v, 2)
		return r
	}
	tp := topicPartition{Topic: offsetsTopic, Partition: group.PartitionFor(req.Group, c.cfg.OffsetsTopicPartitions)}
	code, started := c.prepareAdd(req.TransactionalID, req.ProducerID, req.ProducerEpoch, []topicPartition{tp}, -1)
	if !started {
		c.respond(in.Token, answer(code))
		return
	}
	c.wait(waiter{token: in.Token, done: func() kmsg.Response { return answer(errNone) }, fail: answer})
}

// endTxn handles EndTxn (Kafka's handleEndTransaction). From v5 the client
// uses transaction version 2: every end bumps the epoch, the response
// carries the producer id and epoch of the next transaction, and a retry
// is recognized by its epoch being one below the current one. A version 2
// client may also abort when no transaction is open (Empty, or the last
// one complete, at the current epoch): its partitions are added by the
// leaders it wrote to, so it cannot know whether any was, and the empty
// abort bumps the epoch so that nothing it sent before lands in its next
// transaction.
func (c *Coordinator) endTxn(in Input, req *kmsg.EndTxnRequest) {
	v := in.Version
	answer := func(code int16, pid int64, epoch int16) kmsg.Response {
		r := kmsg.NewPtrEndTxnResponse()
		r.Version = v
		r.ErrorCode = fencedCode(code, v, 2)
		r.ProducerID, r.ProducerEpoch = pid, epoch
		if code != errNone {
			r.ProducerID, r.ProducerEpoch = noProducerID, noProducerEpoch
		}
		return r
	}
	fail := func(code int16) { c.respond(in.Token, answer(code, 0, 0)) }
	tv := int16(0)
	if v >= 5 {
		tv = tv2
	}
	t := c.txns[req.TransactionalID]
	switch {
	case req.TransactionalID == "":
		fail(errInvalidRequest)
		return
	case t == nil || t.fresh:
		fail(errInvalidProducerIDMapping)
		return
	}
	storedTV2 := t.clientTV >= tv2
	retryOnOverflow := storedTV2 && t.prevProducerID == req.ProducerID &&
		req.ProducerEpoch == math.MaxInt16-1 && t.epoch == 0
	retryOnBump := storedTV2 && int32(t.epoch) == int32(req.ProducerEpoch)+1
	valid := req.ProducerEpoch == t.epoch
	if storedTV2 {
		switch {
		case t.state.preparing():
			// One below: a retry of this end. The current epoch: the
			// next transaction's end, come before this one's markers
			// are all written (answered CONCURRENT_TRANSACTIONS below,
			// which clients retry).
			valid = retryOnBump || req.ProducerEpoch == t.epoch
		case t.state == StateCompleteCommit || t.state == StateCompleteAbort:
			// The current epoch is a new end (an empty abort, or an
			// invalid transition); one below, a retry.
			valid = retryOnBump || retryOnOverflow || req.ProducerEpoch == t.epoch
		}
	}
	switch {
	case t.producerID != req.ProducerID && !retryOnOverflow:
		fail(errInvalidProducerIDMapping)
		return
	case !valid:
		fail(errProducerFenced)
		return
	case t.pending != nil:
		fail(errConcurrentTransactions)
		return
	}
	commit := req.Commit
	switch t.state {
	case StateOngoing:
	case StateCompleteCommit, StateCompleteAbort:
		retry := retryOnBump || retryOnOverflow
		if !storedTV2 {
			retry = req.ProducerEpoch == t.epoch // the end kept the epoch
		}
		switch {
		case retry && commit == (t.state == StateCompleteCommit):
			// A retry of the end that completed.
			c.respond(in.Token, answer(errNone, t.producerID, t.epoch))
			return
		case retry || commit || tv < tv2:
			fail(errInvalidTxnState)
			return
		}
		// An empty abort of a version 2 client.
	case StateEmpty:
		if commit || tv < tv2 {
			fail(errInvalidTxnState)
			return
		}
		// An empty abort of a version 2 client.
	case StatePrepareCommit, StatePrepareAbort:
		if storedTV2 && !retryOnBump {
			fail(errConcurrentTransactions)
			return
		}
		if commit == (t.state == StatePrepareCommit) {
			fail(errConcurrentTransactions)
		} else {
			fail(errInvalidTxnState)
		}
		return
	default:
		fail(errInvalidTxnState)
		return
	}
	to := t.clone()
	to.state = StatePrepareAbort
	if commit {
		to.state = StatePrepareCommit
	}
	to.clientTV = tv
	to.nextProducerID = noProducerID
	if tv >= tv2 {
		if epochExhausted(t.epoch) {
			pid, ok := c.cfg.ProducerIDs.NextProducerID()
			if !ok {
				fail(errCoordinatorLoadInProgress)
				return
			}
			to.nextProducerID = pid
		}
		to.epoch, to.lastEpoch = bump(t.epoch), t.epoch
	}
	c.transition(t, transitEnd, to, Record{})
	c.wait(waiter{
		token: in.Token,
		done: func() kmsg.Response {
			if t.nextProducerID != noProducerID {
				return answer(errNone, t.nextProducerID, 0)
			}
			return answer(errNone, t.producerID, t.epoch)
		},
		fail: func(code int16) kmsg.Response { return answer(code, 0, 0) },
	})
}
