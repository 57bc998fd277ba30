package txn

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// load replays records into a new coordinator (as the driver does when the
// broker becomes leader of the partition) and loads it at now.
func load(t *testing.T, records []Record, now time.Time) (*Coordinator, Output) {
	t.Helper()
	c, err := New(testConfig(&counter{next: 100}), 8)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range records {
		if err := c.Replay(r.Key, r.Value); err != nil {
			t.Fatalf("replay record %d: %v", i, err)
		}
	}
	return c, c.Loaded(now)
}

// durable is what a loaded coordinator must hold: the state of every id
// but the epoch before the last bump, which Kafka keeps in memory only.
func durable(c *Coordinator) map[string]meta {
	out := map[string]meta{}
	for id, t := range c.txns {
		m := t.clone()
		m.lastEpoch = -1
		if len(m.partitions) == 0 {
			m.partitions = nil
		}
		out[id] = m
	}
	return out
}

func TestReplayGivesSameState(t *testing.T) {
	h := newHarness(t)
	a, b, c, d := h.producerV0("a"), h.producerV2("b"), h.producerV2("c"), h.producerV0("d")
	a.mustInit()
	b.mustInit()
	c.mustInit()
	d.mustInit()
	wantCode(t, "a add", a.add("t", 0, 1), errNone)
	wantCode(t, "b add", b.add("t", 2), errNone)
	wantCode(t, "b commit", b.endCode(true), errNone)
	h.writeMarkers()
	wantCode(t, "c add", c.add("u", 0), errNone)
	wantCode(t, "c abort", c.endCode(false), errNone) // markers not written
	wantCode(t, "d add", d.add("u", 1), errNone)
	wantCode(t, "d fenced", h.producerV0("d").init(), errConcurrentTransactions)

	loaded, out := load(t, h.records, h.now)
	deepEqual(t, "replayed state", durable(loaded), durable(h.c))
	// Markers of the transactions that were being ended are written
	// again, with the new coordinator epoch.
	deepEqual(t, "markers resent on load", sortedMarkers(out.Markers), []Marker{
		{"c", "u", 0, 1002, 1, false, 8},
		{"d", "u", 1, 1003, 1, false, 8},
	})
	if len(out.Records) != 0 || len(out.Responses) != 0 {
		t.Fatalf("load writes nothing else: %+v", out)
	}
	// A marker of the old coordinator epoch is not taken.
	old := h.markers[0]
	if o := loaded.MarkerWritten(h.now, old); len(o.Records) != 0 {
		t.Fatal("a marker of the previous coordinator epoch completes nothing")
	}
	for _, m := range out.Markers {
		o := loaded.MarkerWritten(h.now, m)
		if len(o.Records) != 1 {
			t.Fatalf("marker of %s completes the transaction: %+v", m.TransactionalID, o)
		}
		loaded.Appended(h.now, o.Append)
	}
	if loaded.txns["c"].state != StateCompleteAbort || loaded.txns["d"].state != StateCompleteAbort {
		t.Fatal("loaded aborts complete")
	}
}

func TestLoadCompletesPrepareWithoutPartitions(t *testing.T) {
	m := meta{producerID: 5, prevProducerID: -1, nextProducerID: -1, epoch: 3, lastEpoch: -1, timeoutMs: 1000,
		state: StatePrepareCommit, startMs: 1, lastUpdateMs: 2}
	c, out := load(t, []Record{txnRecord("x", m)}, t0)
	if len(out.Markers) != 0 || len(out.Records) != 1 {
		t.Fatalf("a prepared transaction with no partition left completes at once: %+v", out)
	}
	c.Appended(t0, out.Append)
	if st := c.txns["x"]; st.state != StateCompleteCommit || st.lastUpdateMs != t0.UnixMilli() {
		t.Fatalf("completed: %+v", st.meta)
	}
}

func TestLoading(t *testing.T) {
	c, err := New(testConfig(&counter{}), 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []kmsg.Request{
		initReq(4, strp("a"), 1000, -1, -1), addReq(3, "a", 1, 0, "t", 0), endReq(3, "a", 1, 0, true),
		describeReq("a"), kmsg.NewPtrListTransactionsRequest(), addOffsetsReq(), batchReq(),
	} {
		out := c.Step(t0, Input{Token: 1, Version: req.GetVersion(), Request: req})
		if len(out.Responses) != 1 || len(out.Records) != 0 {
			t.Fatalf("%T while loading: %+v", req, out)
		}
		if code := errorCodes(out.Responses[0].Body); code != errCoordinatorLoadInProgress {
			t.Fatalf("%T while loading: code %d", req, code)
		}
	}
	if out := c.Tick(t0.Add(time.Hour)); len(out.Records) != 0 || !out.NextTick.IsZero() {
		t.Fatal("no timers run while loading")
	}
	out := c.Loaded(t0)
	if out.NextTick != t0.Add(10*time.Second) {
		t.Fatalf("the timeout check is armed at load: %v", out.NextTick)
	}
	if err := c.Replay(txnKey("a"), nil); !errors.Is(err, ErrLoaded) {
		t.Fatalf("replay after load: %v", err)
	}
}

// errorCodes returns the first error code in a response.
func errorCodes(r kmsg.Response) int16 {
	switch r := r.(type) {
	case *kmsg.InitProducerIDResponse:
		return r.ErrorCode
	case *kmsg.AddPartitionsToTxnResponse:
		if r.Version >= 4 {
			return r.Transactions[0].Topics[0].Partitions[0].ErrorCode
		}
		return r.Topics[0].Partitions[0].ErrorCode
	case *kmsg.EndTxnResponse:
		return r.ErrorCode
	case *kmsg.AddOffsetsToTxnResponse:
		return r.ErrorCode
	case *kmsg.DescribeTransactionsResponse:
		return r.TransactionStates[0].ErrorCode
	case *kmsg.ListTransactionsResponse:
		return r.ErrorCode
	}
	return -100
}

func TestAppendFailed(t *testing.T) {
	h := newHarness(t)
	a, b := h.producerV0("a"), h.producerV0("b")
	a.mustInit()
	b.mustInit()
	h.hold = true
	ta := h.send(addReq(1, "a", a.pid, a.epoch, "t", 0))
	tb := h.send(endReq(1, "b", b.pid, b.epoch, true)) // no transaction: answered now
	tc := h.send(initReq(1, strp("c"), 1000, -1, -1))
	wantCode(t, "b end", response[*kmsg.EndTxnResponse](h, tb).ErrorCode, errInvalidTxnState)
	failed := h.c.AppendFailed(errNotEnoughReplicas)
	h.answer(failed)
	wantCode(t, "a add", addCodes(response[*kmsg.AddPartitionsToTxnResponse](h, ta))[0], errCoordinatorNotAvailable)
	r := response[*kmsg.InitProducerIDResponse](h, tc)
	if r.ErrorCode != errCoordinatorNotAvailable || r.ProducerID != -1 {
		t.Fatalf("c init: %+v", r)
	}
	// Fenced: the held appends are unknown now, requests get
	// NOT_COORDINATOR.
	for _, id := range h.held {
		if out := h.c.Appended(h.now, id); len(out.Responses)+len(out.Markers)+len(out.Records) != 0 {
			t.Fatal("an append reported after the failure does nothing")
		}
	}
	h.held = nil
	h.hold = false
	wantCode(t, "after failure", a.init(), errNotCoordinator)
	if out := h.c.Tick(h.now.Add(time.Hour)); !out.NextTick.IsZero() {
		t.Fatal("a fenced coordinator has no timers")
	}
}

func TestUnload(t *testing.T) {
	h := newHarness(t)
	a := h.producerV0("a")
	a.mustInit()
	wantCode(t, "add", a.add("t", 0), errNone)
	h.hold = true
	tok := a.end(true)
	out := h.c.Unload()
	h.answer(out)
	wantCode(t, "end waiting at unload", response[*kmsg.EndTxnResponse](h, tok).ErrorCode, errNotCoordinator)
	wantCode(t, "after unload", a.endCode(true), errNotCoordinator)
	if o := h.c.MarkerWritten(h.now, Marker{TransactionalID: "a", Topic: "t", ProducerID: 1000, Commit: true, CoordinatorEpoch: 7}); len(o.Records) != 0 {
		t.Fatal("markers are ignored once unloaded")
	}
}

func TestAppendErrorCodes(t *testing.T) {
	for in, want := range map[int16]int16{
		errNotEnoughReplicas: errCoordinatorNotAvailable, errRequestTimedOut: errCoordinatorNotAvailable,
		errNotLeaderOrFollower: errNotCoordinator, errKafkaStorageError: errNotCoordinator,
		errMessageTooLarge: errUnknownServerError, errNone: errCoordinatorNotAvailable, 87: 87,
	} {
		wantCode(t, "append error", appendErrorCode(in), want)
	}
}

func addOffsetsReq() *kmsg.AddOffsetsToTxnRequest {
	r := kmsg.NewPtrAddOffsetsToTxnRequest()
	r.Version, r.TransactionalID, r.ProducerID, r.Group = 3, "a", 1, "g"
	return r
}

func batchReq() *kmsg.AddPartitionsToTxnRequest {
	r := kmsg.NewPtrAddPartitionsToTxnRequest()
	r.Version = 5
	r.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{{TransactionalID: "a", ProducerID: 1,
		Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "t", Partitions: []int32{0, 1}}}}}
	return r
}
