package txn

import (
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestCommit(t *testing.T) {
	for _, v := range []int16{0, 2} {
		h := newHarness(t)
		p := h.producerV0("a")
		if v == 2 {
			p = h.producerV2("a")
		}
		p.mustInit()
		wantCode(t, "add", p.add("t", 1, 0), errNone)
		wantCode(t, "add again", p.add("t", 0), errNone)
		wantCode(t, "add more", p.add("u", 3), errNone)
		if n := len(h.records); n != 3 {
			t.Fatalf("adding a partition already in the transaction writes nothing: %d records", n)
		}
		st := h.state("a")
		deepEqual(t, "partitions", st.partitions, []topicPartition{{"t", 0}, {"t", 1}, {"u", 3}})
		if st.state != StateOngoing || st.startMs != t0.UnixMilli() {
			t.Fatalf("ongoing: %+v", st)
		}
		epoch := p.epoch
		h.hold = true
		tok := p.end(true)
		if h.answered(tok) || len(h.markers) != 0 {
			t.Fatal("EndTxn is answered, and markers written, once PrepareCommit is durable")
		}
		h.release()
		p.took(tok)
		wantCode(t, "end", response[*kmsg.EndTxnResponse](h, tok).ErrorCode, errNone)
		wantEpoch := epoch
		if v == 2 {
			wantEpoch++ // KIP-890 part 2: every end bumps the epoch
		}
		if h.state("a").state != StatePrepareCommit || h.state("a").epoch != wantEpoch {
			t.Fatalf("prepare commit: %+v", h.state("a"))
		}
		deepEqual(t, "markers", sortedMarkers(h.markers), []Marker{
			{"a", "t", 0, 1000, wantEpoch, true, 7},
			{"a", "t", 1, 1000, wantEpoch, true, 7},
			{"a", "u", 3, 1000, wantEpoch, true, 7},
		})
		ms := h.markers
		h.markers = nil
		h.take(h.c.MarkerWritten(h.now, ms[0]))
		h.take(h.c.MarkerWritten(h.now, ms[0])) // a duplicate report is ignored
		h.take(h.c.MarkerWritten(h.now, ms[1]))
		if h.state("a").state != StatePrepareCommit || len(h.state("a").partitions) != 1 {
			t.Fatalf("two markers of three: %+v", h.state("a"))
		}
		h.take(h.c.MarkerWritten(h.now, ms[2]))
		st = h.state("a")
		if st.state != StateCompleteCommit || len(st.partitions) != 0 || st.epoch != wantEpoch {
			t.Fatalf("complete: %+v", st)
		}
		if v == 2 && p.epoch != wantEpoch {
			t.Fatalf("EndTxn v5 answers the new epoch: %d", p.epoch)
		}
		// The next transaction starts at its own time.
		h.advance(time.Second)
		wantCode(t, "next add", p.add("t", 5), errNone)
		if st := h.state("a"); st.startMs != h.now.UnixMilli() {
			t.Fatalf("next transaction start: %d", st.startMs)
		}
	}
}

// TestFenceZombie: a second producer of the same id bumps the epoch; the
// ongoing transaction of the first is aborted, and the first producer's
// requests are fenced.
func TestFenceZombie(t *testing.T) {
	for _, tc := range []struct {
		name   string
		zombie func(h *harness, id string) *producer
		// What the zombie's requests get while the abort is written,
		// and once the new producer has its epoch.
		addAborting, commitAborting, abortAborting int16
		fenced                                     int16
	}{
		{"v0 client", (*harness).producerV0, errConcurrentTransactions, errInvalidProducerEpoch, errInvalidProducerEpoch, errInvalidProducerEpoch},
		// A version 2 producer's abort at the old epoch reads as a retry
		// of the coordinator's abort; its commit cannot be one.
		{"v2 client", (*harness).producerV2, errConcurrentTransactions, errInvalidTxnState, errConcurrentTransactions, errProducerFenced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			zombie := tc.zombie(h, "a")
			zombie.mustInit()
			wantCode(t, "zombie add", zombie.add("t", 0), errNone)

			fresh := h.producerV2("a")
			wantCode(t, "new producer's init", fresh.init(), errConcurrentTransactions)
			st := h.state("a")
			if st.state != StatePrepareAbort || st.epoch != zombie.epoch+1 {
				t.Fatalf("the ongoing transaction is aborted with a bumped epoch: %+v", st)
			}
			deepEqual(t, "abort markers", h.markers, []Marker{{"a", "t", 0, 1000, zombie.epoch + 1, false, 7}})
			wantCode(t, "init while markers are written", fresh.init(), errConcurrentTransactions)
			wantCode(t, "zombie add while aborting", zombie.add("t", 1), tc.addAborting)
			wantCode(t, "zombie commit while aborting", zombie.endCode(true), tc.commitAborting)
			wantCode(t, "zombie abort while aborting", zombie.endCode(false), tc.abortAborting)
			h.writeMarkers()
			if h.state("a").state != StateCompleteAbort {
				t.Fatalf("aborted: %+v", h.state("a"))
			}
			zombieEpoch := zombie.epoch
			fresh.mustInit()
			if fresh.epoch != zombieEpoch+2 {
				t.Fatalf("new producer's epoch %d, zombie's %d", fresh.epoch, zombieEpoch)
			}
			wantCode(t, "zombie add", zombie.add("t", 1), tc.fenced)
			wantCode(t, "zombie commit", zombie.endCode(true), tc.fenced)
			wantCode(t, "zombie abort", zombie.endCode(false), tc.fenced)
			if zombie.initV < 3 {
				// Without KIP-360 an InitProducerId just takes the id
				// over again, fencing the other.
				wantCode(t, "zombie init", zombie.init(), errNone)
				wantCode(t, "new producer add", fresh.add("t", 1), errProducerFenced)
			} else {
				wantCode(t, "zombie init (KIP-360)", zombie.init(), errProducerFenced)
				wantCode(t, "new producer add", fresh.add("t", 1), errNone)
			}
		})
	}
}

// TestTimeoutAbort: a transaction open longer than its timeout is aborted
// with a bumped epoch. A version 0 producer is fenced by it; a version 2
// producer aborts and carries on with the new epoch (KIP-890).
func TestTimeoutAbort(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		h := newHarness(t)
		p := h.producerV0("a")
		if v2 {
			p = h.producerV2("a")
		}
		tok := h.send(initReq(p.initV, strp("a"), 30000, -1, -1))
		r := response[*kmsg.InitProducerIDResponse](h, tok)
		p.pid, p.epoch = r.ProducerID, r.ProducerEpoch
		wantCode(t, "add", p.add("t", 0), errNone)
		h.advance(30 * time.Second)
		if h.state("a").state != StateOngoing {
			t.Fatal("a transaction is aborted after its timeout, not at it")
		}
		h.advance(10 * time.Second)
		st := h.state("a")
		if st.state != StatePrepareAbort || st.epoch != p.epoch+1 {
			t.Fatalf("timed out: %+v", st)
		}
		h.writeMarkers()
		if !v2 {
			wantCode(t, "v0 commit after the timeout", p.endCode(true), errInvalidProducerEpoch)
			wantCode(t, "v0 abort after the timeout", p.endCode(false), errInvalidProducerEpoch)
			continue
		}
		wantCode(t, "v2 commit after the timeout", p.endCode(true), errInvalidTxnState)
		wantCode(t, "v2 abort after the timeout", p.endCode(false), errNone)
		if p.epoch != 1 {
			t.Fatalf("the abort answers the epoch of the coordinator's abort: %d", p.epoch)
		}
		wantCode(t, "next transaction", p.add("t", 0), errNone)
		wantCode(t, "next commit", p.endCode(true), errNone)
	}
}

// TestTimeoutAbortAtLastEpoch: a version 2 transaction that times out at
// the last epoch moves to a new producer id when its abort completes, and
// the producer's own abort is answered with that id.
func TestTimeoutAbortAtLastEpoch(t *testing.T) {
	h := newHarness(t)
	p := h.producerV2("a")
	p.mustInit()
	h.c.txns["a"].epoch = math.MaxInt16 - 1
	p.epoch = math.MaxInt16 - 1
	wantCode(t, "add", p.add("t", 0), errNone)
	h.ids.empty = true
	h.advance(70 * time.Second)
	if st := h.state("a"); st.state != StateOngoing {
		t.Fatalf("no producer id at hand: the abort waits for the next check: %+v", st)
	}
	h.ids.empty = false
	h.advance(10 * time.Second)
	if st := h.state("a"); st.state != StatePrepareAbort || st.epoch != math.MaxInt16 || st.nextProducerID != 1001 {
		t.Fatalf("aborting: %+v", st)
	}
	h.writeMarkers()
	if st := h.state("a"); st.producerID != 1001 || st.epoch != 0 || st.prevProducerID != 1000 {
		t.Fatalf("aborted: %+v", st)
	}
	wantCode(t, "abort at the old id", p.endCode(false), errNone)
	if p.pid != 1001 || p.epoch != 0 {
		t.Fatalf("the producer carries on with %d/%d", p.pid, p.epoch)
	}
}

func TestConcurrentTransactions(t *testing.T) {
	h := newHarness(t)
	p := h.producerV0("a")
	p.mustInit()
	h.hold = true
	tok := h.send(addReq(1, "a", p.pid, p.epoch, "t", 0))
	wantCode(t, "add while an add is pending", p.add("t", 1), errConcurrentTransactions)
	wantCode(t, "end while an add is pending", p.endCode(true), errConcurrentTransactions)
	wantCode(t, "init while an add is pending", p.init(), errConcurrentTransactions)
	h.release()
	deepEqual(t, "pending add", addCodes(response[*kmsg.AddPartitionsToTxnResponse](h, tok)), []int16{0})
	tok = p.end(true)
	wantCode(t, "end", response[*kmsg.EndTxnResponse](h, tok).ErrorCode, errNone)
	wantCode(t, "add while committing", p.add("t", 1), errConcurrentTransactions)
	wantCode(t, "commit again while committing", p.endCode(true), errConcurrentTransactions)
	wantCode(t, "abort while committing", p.endCode(false), errInvalidTxnState)
	wantCode(t, "init while committing", p.init(), errConcurrentTransactions)
}

func TestEndTxnStates(t *testing.T) {
	h := newHarness(t)
	p := h.producerV0("a")
	p.mustInit()
	wantCode(t, "end with no transaction", p.endCode(true), errInvalidTxnState)
	wantCode(t, "add", p.add("t", 0), errNone)
	tok := h.send(endReq(1, "a", 999, p.epoch, true))
	wantCode(t, "other producer id", response[*kmsg.EndTxnResponse](h, tok).ErrorCode, errInvalidProducerIDMapping)
	tok = h.send(endReq(1, "nope", 1000, 0, true))
	wantCode(t, "unknown id", response[*kmsg.EndTxnResponse](h, tok).ErrorCode, errInvalidProducerIDMapping)
	tok = h.send(endReq(1, "", 1000, 0, true))
	wantCode(t, "empty id", response[*kmsg.EndTxnResponse](h, tok).ErrorCode, errInvalidRequest)
	wantCode(t, "commit", p.endCode(true), errNone)
	h.writeMarkers()
	wantCode(t, "retried commit", p.endCode(true), errNone)
	wantCode(t, "abort after commit", p.endCode(false), errInvalidTxnState)
}

// TestEndTxnV5 covers KIP-890 part 2: the epoch is bumped at every end, a
// retry with the epoch before is answered as the end was, and an end at
// the last epoch rotates the producer id.
func TestEndTxnV5(t *testing.T) {
	h := newHarness(t)
	p := h.producerV2("a")
	p.mustInit()
	wantCode(t, "add", p.add("t", 0), errNone)
	old := p.epoch
	wantCode(t, "commit", p.endCode(true), errNone)
	if p.epoch != old+1 {
		t.Fatalf("new epoch %d, was %d", p.epoch, old)
	}
	retry := endReq(5, "a", 1000, old, true)
	r := response[*kmsg.EndTxnResponse](h, h.send(retry))
	if r.ErrorCode != errConcurrentTransactions {
		t.Fatalf("retry while markers are written: %+v", r)
	}
	// The next transaction's end (an empty abort) before the markers
	// are written waits for them.
	r = response[*kmsg.EndTxnResponse](h, h.send(endReq(5, "a", 1000, old+1, false)))
	wantCode(t, "next end while markers are written", r.ErrorCode, errConcurrentTransactions)
	h.writeMarkers()
	r = response[*kmsg.EndTxnResponse](h, h.send(retry))
	if r.ErrorCode != 0 || r.ProducerID != 1000 || r.ProducerEpoch != old+1 {
		t.Fatalf("retry after completion: %+v", r)
	}
	r = response[*kmsg.EndTxnResponse](h, h.send(endReq(5, "a", 1000, old, false)))
	wantCode(t, "retry as abort", r.ErrorCode, errInvalidTxnState)
	r = response[*kmsg.EndTxnResponse](h, h.send(endReq(5, "a", 1000, old+1, true)))
	wantCode(t, "commit with no transaction at the new epoch", r.ErrorCode, errInvalidTxnState)
	// An abort with no transaction (the producer cannot know whether a
	// leader added a partition for it) bumps the epoch and completes at
	// once: there are no markers to write.
	r = response[*kmsg.EndTxnResponse](h, h.send(endReq(5, "a", 1000, old+1, false)))
	if r.ErrorCode != 0 || r.ProducerID != 1000 || r.ProducerEpoch != old+2 {
		t.Fatalf("empty abort: %+v", r)
	}
	if st := h.state("a"); st.state != StateCompleteAbort || st.epoch != old+2 || len(h.markers) != 0 {
		t.Fatalf("after the empty abort: %+v, markers %v", st, h.markers)
	}
	r = response[*kmsg.EndTxnResponse](h, h.send(endReq(5, "a", 1000, old+1, false)))
	if r.ErrorCode != 0 || r.ProducerEpoch != old+2 {
		t.Fatalf("retry of the empty abort: %+v", r)
	}
	r = response[*kmsg.EndTxnResponse](h, h.send(endReq(5, "a", 1000, old+2, false)))
	if r.ErrorCode != 0 || r.ProducerEpoch != old+3 {
		t.Fatalf("second empty abort: %+v", r)
	}
	p.epoch = old + 3

	// Overflow: an end at the last epoch but one moves to a new producer
	// id once its markers are written.
	h.c.txns["a"].epoch = math.MaxInt16 - 1
	p.epoch = math.MaxInt16 - 1
	wantCode(t, "add at the last epoch", p.add("t", 0), errNone)
	wantCode(t, "commit at the last epoch", p.endCode(true), errNone)
	if p.pid != 1001 || p.epoch != 0 {
		t.Fatalf("EndTxn answers the next producer id: %d/%d", p.pid, p.epoch)
	}
	deepEqual(t, "markers use the old id", h.markers, []Marker{{"a", "t", 0, 1000, math.MaxInt16, true, 7}})
	wantCode(t, "add with the new id while the markers are written", p.add("t", 1), errConcurrentTransactions)
	h.writeMarkers()
	st := h.state("a")
	if st.producerID != 1001 || st.epoch != 0 || st.prevProducerID != 1000 || st.nextProducerID != -1 {
		t.Fatalf("after rotation: %+v", st)
	}
	r = response[*kmsg.EndTxnResponse](h, h.send(endReq(5, "a", 1000, math.MaxInt16-1, true)))
	if r.ErrorCode != 0 || r.ProducerID != 1001 || r.ProducerEpoch != 0 {
		t.Fatalf("retry of the overflowing end: %+v", r)
	}
	wantCode(t, "add with the new id", p.add("t", 1), errNone)

	// From Empty (just initialized), too; a version 0 client's end with
	// no transaction stays INVALID_TXN_STATE (TestEndTxnChecks).
	q := h.producerV2("b")
	q.mustInit()
	r = response[*kmsg.EndTxnResponse](h, h.send(endReq(5, "b", q.pid, q.epoch, false)))
	if r.ErrorCode != 0 || r.ProducerEpoch != q.epoch+1 {
		t.Fatalf("empty abort after InitProducerId: %+v", r)
	}
	r = response[*kmsg.EndTxnResponse](h, h.send(endReq(5, "b", q.pid, q.epoch+1, true)))
	wantCode(t, "empty commit", r.ErrorCode, errInvalidTxnState)
}

func TestAddPartitionsChecks(t *testing.T) {
	h := newHarness(t)
	h.c.cfg.Topics = topicsMap{"t": 2, "u": 1}
	p := h.producerV0("a")
	p.mustInit()
	req := addReq(3, "a", p.pid, p.epoch, "t", 0, 5)
	req.Topics = append(req.Topics, kmsg.AddPartitionsToTxnRequestTopic{Topic: "u", Partitions: []int32{0}},
		kmsg.AddPartitionsToTxnRequestTopic{Topic: "__consumer_offsets", Partitions: []int32{0}},
		kmsg.AddPartitionsToTxnRequestTopic{Topic: "secret", Partitions: []int32{0}})
	tok := h.send(req)
	deepEqual(t, "codes", addCodes(response[*kmsg.AddPartitionsToTxnResponse](h, tok)),
		[]int16{errOperationNotAttempted, errUnknownTopicOrPartition, errOperationNotAttempted, errTopicAuthorizationFailed, errUnknownTopicOrPartition})
	if h.state("a").state != StateEmpty {
		t.Fatal("a failed check adds nothing")
	}
	h.token++
	h.take(h.c.Step(h.now, Input{Token: h.token, Version: 3, Request: addReq(3, "a", p.pid, p.epoch, "u", 0),
		TopicAuthorized: func(topic string) bool { return topic != "u" }}))
	deepEqual(t, "unauthorized", addCodes(response[*kmsg.AddPartitionsToTxnResponse](h, h.token)), []int16{errTopicAuthorizationFailed})
	for _, tc := range []struct {
		name string
		req  *kmsg.AddPartitionsToTxnRequest
		want int16
	}{
		{"empty id", addReq(3, "", 1000, 0, "t", 0), errInvalidRequest},
		{"unknown id", addReq(3, "b", 1000, 0, "t", 0), errInvalidProducerIDMapping},
		{"other producer id", addReq(3, "a", 5, 0, "t", 0), errInvalidProducerIDMapping},
		{"old epoch v1", addReq(1, "a", 1000, -1, "t", 0), errInvalidProducerEpoch},
		{"old epoch v2", addReq(2, "a", 1000, -1, "t", 0), errProducerFenced},
	} {
		deepEqual(t, tc.name, addCodes(response[*kmsg.AddPartitionsToTxnResponse](h, h.send(tc.req))), []int16{tc.want})
	}
}

type topicsMap map[string]int32

func (m topicsMap) Partitions(topic string) (int32, bool) {
	n, ok := m[topic]
	return n, ok
}

// TestAddPartitionsBatch covers the v4+ form partition leaders send:
// several transactions, some verify-only (KIP-890 part 1).
func TestAddPartitionsBatch(t *testing.T) {
	h := newHarness(t)
	a, b := h.producerV2("a"), h.producerV2("b")
	a.mustInit()
	b.mustInit()
	wantCode(t, "a add", a.add("t", 0), errNone)
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 5
	tr := func(id string, pid int64, epoch int16, verify bool, parts ...int32) kmsg.AddPartitionsToTxnRequestTransaction {
		return kmsg.AddPartitionsToTxnRequestTransaction{TransactionalID: id, ProducerID: pid, ProducerEpoch: epoch, VerifyOnly: verify,
			Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "t", Partitions: parts}}}
	}
	req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{
		tr("a", a.pid, a.epoch, true, 0, 1),
		tr("b", b.pid, b.epoch, false, 2),
		tr("c", 5, 0, true, 0),
		tr("a2", a.pid, a.epoch+1, true, 0),
	}
	req.Transactions[3].TransactionalID = "a"
	h.hold = true
	tok := h.send(req)
	if h.answered(tok) {
		t.Fatal("the batch waits for b's record")
	}
	h.release()
	r := response[*kmsg.AddPartitionsToTxnResponse](h, tok)
	got := map[string][]int16{}
	for i, rt := range r.Transactions {
		key := rt.TransactionalID
		if i == 3 {
			key = "a fenced"
		}
		for _, p := range rt.Topics[0].Partitions {
			got[key] = append(got[key], p.ErrorCode)
		}
	}
	deepEqual(t, "batch codes", got, map[string][]int16{
		"a":        {errNone, errTransactionAbortable},
		"b":        {errNone},
		"c":        {errInvalidProducerIDMapping},
		"a fenced": {errProducerFenced},
	})
	if st := h.state("b"); st.state != StateOngoing || st.clientTV != tv2 {
		t.Fatalf("b: %+v", st)
	}
}

func TestAddOffsets(t *testing.T) {
	h := newHarness(t)
	p := h.producerV0("a")
	p.mustInit()
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = 3, "a", p.pid, p.epoch, "my-group"
	wantCode(t, "add offsets", response[*kmsg.AddOffsetsToTxnResponse](h, h.send(req)).ErrorCode, errNone)
	want := topicPartition{"__consumer_offsets", PartitionFor("my-group", 50)}
	deepEqual(t, "partitions", h.state("a").partitions, []topicPartition{want})
	req.ProducerEpoch--
	req.Version = 1
	wantCode(t, "old epoch v1", response[*kmsg.AddOffsetsToTxnResponse](h, h.send(req)).ErrorCode, errInvalidProducerEpoch)
	req.Version = 2
	wantCode(t, "old epoch v2", response[*kmsg.AddOffsetsToTxnResponse](h, h.send(req)).ErrorCode, errProducerFenced)
}

func TestDescribeAndList(t *testing.T) {
	h := newHarness(t)
	a, b, c := h.producerV0("a"), h.producerV0("b"), h.producerV0("c")
	a.mustInit()
	b.mustInit()
	c.mustInit()
	wantCode(t, "a add", a.add("t", 1, 0), errNone)
	h.advance(5 * time.Second)
	wantCode(t, "b add", b.add("u", 0), errNone)

	r := response[*kmsg.DescribeTransactionsResponse](h, h.send(describeReq("a", "c", "zz", "")))
	deepEqual(t, "describe", r.TransactionStates, []kmsg.DescribeTransactionsResponseTransactionState{
		{TransactionalID: "a", State: "Ongoing", TimeoutMillis: 60000, StartTimestamp: t0.UnixMilli(), ProducerID: 1000,
			Topics: []kmsg.DescribeTransactionsResponseTransactionStateTopic{{Topic: "t", Partitions: []int32{0, 1}}}},
		{TransactionalID: "c", State: "Empty", TimeoutMillis: 60000, StartTimestamp: -1, ProducerID: 1002},
		{TransactionalID: "zz", ErrorCode: errTransactionalIDNotFound},
		{TransactionalID: "", ErrorCode: errInvalidRequest},
	})

	list := func(v int16, states []string, pids []int64, durationMs int64, pattern *string) []string {
		req := kmsg.NewPtrListTransactionsRequest()
		req.Version, req.StateFilters, req.ProducerIDFilters, req.DurationFilterMillis, req.TransactionalIDPattern = v, states, pids, durationMs, pattern
		r := response[*kmsg.ListTransactionsResponse](h, h.send(req))
		var ids []string
		for _, s := range r.TransactionStates {
			ids = append(ids, s.TransactionalID+":"+s.TransactionState)
		}
		ids = append(ids, r.UnknownStateFilters...)
		return ids
	}
	deepEqual(t, "all", list(0, nil, nil, -1, nil), []string{"a:Ongoing", "b:Ongoing", "c:Empty"})
	deepEqual(t, "by state", list(0, []string{"Empty", "Bogus"}, nil, -1, nil), []string{"c:Empty", "Bogus"})
	deepEqual(t, "by producer id", list(0, nil, []int64{1001}, -1, nil), []string{"b:Ongoing"})
	deepEqual(t, "longer than 3s", list(1, []string{"Ongoing"}, nil, 3000, nil), []string{"a:Ongoing"})
	deepEqual(t, "duration ignored before v1", list(0, []string{"Ongoing"}, nil, 3000, nil), []string{"a:Ongoing", "b:Ongoing"})
	deepEqual(t, "pattern", list(2, nil, nil, -1, strp("^[bc]$")), []string{"b:Ongoing", "c:Empty"})
	req := kmsg.NewPtrListTransactionsRequest()
	req.Version, req.TransactionalIDPattern = 2, strp("(")
	wantCode(t, "bad pattern", response[*kmsg.ListTransactionsResponse](h, h.send(req)).ErrorCode, errInvalidRegularExpression)
}

func TestExpiration(t *testing.T) {
	h := newHarness(t)
	a, b := h.producerV0("a"), h.producerV0("b")
	a.mustInit()
	b.mustInit()
	h.advance(6 * 24 * time.Hour)
	a.mustInit() // a's last update is now
	wantCode(t, "b add", b.add("t", 0), errNone)
	wantCode(t, "b commit", b.endCode(true), errNone)
	h.writeMarkers()
	n := len(h.records)
	h.advance(24*time.Hour + time.Hour)
	if len(h.records) != n {
		t.Fatalf("nothing idle for 7 days yet: %d new records", len(h.records)-n)
	}
	h.advance(6 * 24 * time.Hour)
	deepEqual(t, "tombstones", h.records[n:], []Record{txnTombstone("a"), txnTombstone("b")})
	if len(h.c.txns) != 0 {
		t.Fatal("expired ids are removed")
	}
	r := response[*kmsg.DescribeTransactionsResponse](h, h.send(describeReq("a")))
	wantCode(t, "describe expired", r.TransactionStates[0].ErrorCode, errTransactionalIDNotFound)
}

func TestExpirationSkipsOpenTransactions(t *testing.T) {
	h := newHarness(t)
	a := h.producerV0("a")
	tok := h.send(initReq(1, strp("a"), 900000, -1, -1))
	a.pid, a.epoch = 1000, 0
	wantCode(t, "init", response[*kmsg.InitProducerIDResponse](h, tok).ErrorCode, errNone)
	wantCode(t, "add", a.add("t", 0), errNone)
	// Keep the markers unwritten: the abort stays PrepareAbort for ever.
	h.advance(8 * 24 * time.Hour)
	if h.state("a").state != StatePrepareAbort {
		t.Fatalf("timed out and aborting: %+v", h.state("a"))
	}
}

func TestAddOffsetsKeepsTransactionVersion(t *testing.T) {
	h := newHarness(t)
	p := h.producerV2("a")
	p.mustInit()
	wantCode(t, "add", p.add("t", 0), errNone)
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = 4, "a", p.pid, p.epoch, "g"
	wantCode(t, "add offsets", response[*kmsg.AddOffsetsToTxnResponse](h, h.send(req)).ErrorCode, errNone)
	if st := h.state("a"); st.clientTV != tv2 || len(st.partitions) != 2 {
		t.Fatalf("after AddOffsetsToTxn: %+v", st)
	}
}

// TestEndWithoutPartitions: a transaction begun with no partition (an
// AddPartitionsToTxn of none) completes as soon as its end is durable.
func TestEndWithoutPartitions(t *testing.T) {
	h := newHarness(t)
	p := h.producerV0("a")
	p.mustInit()
	if r := response[*kmsg.AddPartitionsToTxnResponse](h, h.send(addReq(1, "a", p.pid, p.epoch, "t"))); len(r.Topics) != 0 {
		t.Fatalf("no partitions, no results: %+v", r)
	}
	if h.state("a").state != StateOngoing {
		t.Fatalf("begun: %+v", h.state("a"))
	}
	wantCode(t, "commit", p.endCode(true), errNone)
	if st := h.state("a"); st.state != StateCompleteCommit || len(h.markers) != 0 {
		t.Fatalf("no markers to write: %+v, %d markers", st, len(h.markers))
	}
}

// TestTimeoutWaitsForPending: a transaction whose record is on its way is
// not aborted until the record is durable; then the next check aborts it.
func TestTimeoutWaitsForPending(t *testing.T) {
	h := newHarness(t)
	p := h.producerV0("a")
	tok := h.send(initReq(1, strp("a"), 1000, -1, -1))
	r := response[*kmsg.InitProducerIDResponse](h, tok)
	p.pid, p.epoch = r.ProducerID, r.ProducerEpoch
	wantCode(t, "add", p.add("t", 0), errNone)
	h.hold = true
	h.send(addReq(1, "a", p.pid, p.epoch, "t", 1))
	h.advance(20 * time.Second)
	if st := h.state("a"); st.state != StateOngoing || h.c.txns["a"].pending == nil {
		t.Fatalf("a pending transaction is left alone: %+v", st)
	}
	h.release()
	h.advance(10 * time.Second)
	if st := h.state("a"); st.state != StatePrepareAbort || len(st.partitions) != 2 {
		t.Fatalf("aborted at the next check: %+v", st)
	}
}

// TestExpiringIsGone: while an id's tombstone is on its way, Describe and
// List treat it as gone (Kafka's Dead), and InitProducerId waits.
func TestExpiringIsGone(t *testing.T) {
	h := newHarnessWith(t, func(cfg *Config) {
		cfg.TransactionalIDExpiration = time.Hour
		cfg.RemoveExpiredInterval = time.Hour
	})
	p := h.producerV0("a")
	p.mustInit()
	h.hold = true
	h.advance(time.Hour)
	deepEqual(t, "tombstone", h.records[len(h.records)-1], txnTombstone("a"))
	r := response[*kmsg.DescribeTransactionsResponse](h, h.send(describeReq("a")))
	wantCode(t, "describe expiring", r.TransactionStates[0].ErrorCode, errTransactionalIDNotFound)
	if l := response[*kmsg.ListTransactionsResponse](h, h.send(kmsg.NewPtrListTransactionsRequest())); len(l.TransactionStates) != 0 {
		t.Fatalf("list: %+v", l.TransactionStates)
	}
	wantCode(t, "init while expiring", p.init(), errConcurrentTransactions)
	h.release()
	p.mustInit()
	if p.pid != 1001 || p.epoch != 0 {
		t.Fatalf("a new id after expiration: %d/%d", p.pid, p.epoch)
	}
}
