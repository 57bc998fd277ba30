package group

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// logEntry is one record of the partition as the harness appended it, or a
// transaction marker (marker set).
type logEntry struct {
	producerID int64 // -1: a plain batch
	rec        Record
	marker     bool
	commit     bool
}

// txnCommit sends a TxnOffsetCommit of producer pid (epoch 0) for group,
// committing offsets to partitions 0.. of topic, and returns the Output
// and the response.
func (h *harness) txnCommit(version int16, pid int64, group string, generation int32, memberID string, topic string, offsets ...int64) (Output, *kmsg.TxnOffsetCommitResponse) {
	h.t.Helper()
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = version
	req.TransactionalID = "tx"
	req.Group = group
	req.ProducerID = pid
	req.Generation = generation
	req.MemberID = memberID
	rt := kmsg.TxnOffsetCommitRequestTopic{Topic: topic}
	for p, o := range offsets {
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = int32(p), o, 3
		rp.Metadata = strPtr("txn")
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = []kmsg.TxnOffsetCommitRequestTopic{rt}
	return h.stepTxn(req)
}

func (h *harness) stepTxn(req *kmsg.TxnOffsetCommitRequest) (Output, *kmsg.TxnOffsetCommitResponse) {
	h.t.Helper()
	h.token++
	out := h.take(h.c.Step(h.now, Input{Token: h.token, Version: req.Version, Request: req}))
	return out, response[*kmsg.TxnOffsetCommitResponse](h, h.token)
}

// complete ends producer pid's transaction as a marker would.
func (h *harness) complete(pid int64, commit bool) {
	h.t.Helper()
	out := h.take(h.c.TxnCompleted(h.now, pid, commit))
	if len(out.Records) != 0 || out.Txn != nil || len(out.Responses) != 0 {
		h.t.Fatalf("TxnCompleted produced %+v", out)
	}
	h.log = append(h.log, logEntry{producerID: pid, marker: true, commit: commit})
}

// fetchStable fetches the offsets of partitions 0..n-1 of topic in group
// with OffsetFetch v8, with or without require_stable.
func (h *harness) fetchStable(group, topic string, n int32, requireStable bool) []kmsg.OffsetFetchResponseGroupTopicPartition {
	h.t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	req.RequireStable = requireStable
	rg := kmsg.OffsetFetchRequestGroup{Group: group, Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: topic}}}
	for p := int32(0); p < n; p++ {
		rg.Topics[0].Partitions = append(rg.Topics[0].Partitions, p)
	}
	req.Groups = []kmsg.OffsetFetchRequestGroup{rg}
	g := response[*kmsg.OffsetFetchResponse](h, h.send("admin", req)).Groups[0]
	wantCode(h.t, "OffsetFetch group", g.ErrorCode, errNone)
	return g.Topics[0].Partitions
}

// offsetsOf returns the offset or, when it failed, -(error code) of each
// partition.
func offsetsOf(ps []kmsg.OffsetFetchResponseGroupTopicPartition) []int64 {
	out := make([]int64, len(ps))
	for i, p := range ps {
		out[i] = p.Offset
		if p.ErrorCode != errNone {
			out[i] = -int64(p.ErrorCode)
		}
	}
	return out
}

func txnCodes(r *kmsg.TxnOffsetCommitResponse) []int16 {
	var out []int16
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	return out
}

func TestTxnOffsetsPendingUntilCommit(t *testing.T) {
	h := newHarness(t, testConfig())
	out, resp := h.txnCommit(4, 7, "g", -1, "", "t", 10, 20)
	deepEqual(t, "codes", txnCodes(resp), []int16{0, 0})
	if len(out.Records) != 0 || out.Txn == nil || out.Txn.ProducerID != 7 || len(out.Txn.Records) != 2 {
		t.Fatalf("output: %+v", out)
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(out.Txn.Records[1].Value); err != nil || v.Offset != 20 || v.LeaderEpoch != 3 || v.Metadata != "txn" {
		t.Fatalf("record value %+v, %v", v, err)
	}

	// Pending: invisible, and unstable to a fetch that requires stable
	// offsets; fetching everything lists only committed partitions.
	deepEqual(t, "fetch", offsetsOf(h.fetchStable("g", "t", 3, false)), []int64{-1, -1, -1})
	deepEqual(t, "fetch stable", offsetsOf(h.fetchStable("g", "t", 3, true)), []int64{-88, -88, -1})
	if f := h.fetchAll("g")[0]; len(f.Topics) != 0 {
		t.Fatalf("fetch all: %+v", f.Topics)
	}
	// OffsetFetch v7 (one group) answers the same.
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.Group, req.RequireStable = 7, "g", true
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	r7 := response[*kmsg.OffsetFetchResponse](h, h.send("admin", req))
	wantCode(t, "v7 partition", r7.Topics[0].Partitions[0].ErrorCode, errUnstableOffsetCommit)

	// A marker of another producer changes nothing.
	h.complete(8, true)
	deepEqual(t, "fetch stable after other marker", offsetsOf(h.fetchStable("g", "t", 2, true)), []int64{-88, -88})

	h.complete(7, true)
	ps := h.fetchStable("g", "t", 2, true)
	deepEqual(t, "fetch after commit", offsetsOf(ps), []int64{10, 20})
	if ps[0].LeaderEpoch != 3 || ps[0].Metadata == nil || *ps[0].Metadata != "txn" {
		t.Fatalf("committed partition: %+v", ps[0])
	}
	// A second marker finds nothing pending.
	h.complete(7, false)
	deepEqual(t, "fetch after a late abort", offsetsOf(h.fetchStable("g", "t", 2, false)), []int64{10, 20})
}

func TestTxnOffsetsAbort(t *testing.T) {
	h := newHarness(t, testConfig())
	s := h.consumer("g", "s", "t")
	s.memberID, s.generation = "", -1
	s.commit(9, "t", 5)
	h.txnCommit(3, 7, "g", -1, "", "t", 9, 9)
	deepEqual(t, "fetch", offsetsOf(h.fetchStable("g", "t", 2, false)), []int64{5, -1})
	deepEqual(t, "fetch stable", offsetsOf(h.fetchStable("g", "t", 2, true)), []int64{-88, -88})
	h.complete(7, false)
	deepEqual(t, "fetch stable after abort", offsetsOf(h.fetchStable("g", "t", 2, true)), []int64{5, -1})
}

// TestTxnOffsetsAndPlainCommits: at the COMMIT marker a transaction's
// offset replaces a committed one written before it, not one written after.
func TestTxnOffsetsAndPlainCommits(t *testing.T) {
	h := newHarness(t, testConfig())
	s := h.consumer("g", "s", "t")
	s.memberID, s.generation = "", -1
	s.commit(9, "t", 1, 1)
	h.txnCommit(3, 7, "g", -1, "", "t", 50, 50)
	s.commit(9, "t", 2) // partition 0 only, after the transaction's commit
	// The same transaction commits partition 1 again: its last offset counts.
	h.txnCommit(3, 7, "g", -1, "", "t", 60, 60)
	h.complete(7, true)
	deepEqual(t, "fetch", offsetsOf(h.fetchStable("g", "t", 2, true)), []int64{60, 60})

	h.txnCommit(3, 9, "g", -1, "", "t", 70, 70)
	s.commit(9, "t", 3)
	h.complete(9, true)
	deepEqual(t, "fetch", offsetsOf(h.fetchStable("g", "t", 2, true)), []int64{3, 70})
}

func TestTxnOffsetCommitValidation(t *testing.T) {
	cfg := testConfig()
	cfg.OffsetMetadataMaxBytes = 4
	cfg.Topics = fakeTopics{"t": {id: [16]byte{1}, partitions: 2}, "u": {id: [16]byte{2}, partitions: 1}}
	h := newHarness(t, cfg)
	a := h.consumer("g", "a", "t")
	b := h.consumer("g", "b", "t").static("ib")
	h.stabilize(a, b)

	type tc struct {
		name       string
		version    int16
		group      string
		pid        int64
		generation int32
		member     string
		instance   *string
		want       int16
	}
	for _, c := range []tc{
		{"member and generation", 3, "g", 1, a.generation, a.memberID, nil, errNone},
		{"v3 without member in a group with members", 3, "g", 1, -1, "", nil, errNone},
		{"v2 ignores member fields", 2, "g", 1, 99, "nobody", nil, errNone},
		{"stale generation", 3, "g", 1, a.generation - 1, a.memberID, nil, errIllegalGeneration},
		{"unknown member", 3, "g", 1, a.generation, "nobody", nil, errUnknownMemberID},
		{"generation without member", 3, "g", 1, a.generation, "", nil, errUnknownMemberID},
		{"fenced instance", 3, "g", 1, b.generation, a.memberID, strPtr("ib"), errFencedInstanceID},
		{"static member", 3, "g", 1, b.generation, b.memberID, strPtr("ib"), errNone},
		{"unknown group with generation", 3, "nope", 1, 1, "m", nil, errIllegalGeneration},
		{"unknown group without generation", 3, "simple", 1, -1, "", nil, errNone},
		{"empty group, generation -1 with a member id", 3, "simple", 1, -1, "gone", nil, errNone},
		{"generation -1 with an unknown member id", 3, "g", 1, -1, "gone", nil, errUnknownMemberID},
		{"empty group id", 4, "", 1, -1, "", nil, errInvalidGroupID},
		{"no producer id", 4, "g", -1, -1, "", nil, errInvalidProducerIDMapping},
	} {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version, req.Group, req.ProducerID = c.version, c.group, c.pid
		req.Generation, req.MemberID, req.InstanceID = c.generation, c.member, c.instance
		req.Topics = []kmsg.TxnOffsetCommitRequestTopic{
			{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}, {Partition: 2, Offset: 1}}},
			{Topic: "gone", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}},
		}
		out, resp := h.stepTxn(req)
		// Unknown topics and partitions fail whatever the group says.
		deepEqual(t, c.name, txnCodes(resp), []int16{c.want, errUnknownTopicOrPartition, errUnknownTopicOrPartition})
		if (out.Txn != nil) != (c.want == errNone) {
			t.Fatalf("%s: records %+v", c.name, out.Txn)
		}
		h.complete(1, false)
	}

	// Metadata over offset.metadata.max.bytes fails its partition only.
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version, req.Group, req.ProducerID = 5, "g", 2
	req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "u", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{
		{Partition: 0, Offset: 1, Metadata: strPtr("12345")},
	}}, {Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{
		{Partition: 1, Offset: 4, Metadata: strPtr("1234")},
	}}}
	out, resp := h.stepTxn(req)
	deepEqual(t, "metadata", txnCodes(resp), []int16{errOffsetMetadataTooLarge, errNone})
	if out.Txn == nil || len(out.Txn.Records) != 1 {
		t.Fatalf("records: %+v", out.Txn)
	}
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(out.Txn.Records[0].Key); err != nil || k.Topic != "t" || k.Partition != 1 {
		t.Fatalf("record key %+v %v", k, err)
	}

	// While loading and once fenced.
	c, err := New(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	o := c.Step(t0, Input{Version: 3, Request: req})
	deepEqual(t, "loading", txnCodes(o.Responses[0].Body.(*kmsg.TxnOffsetCommitResponse)), []int16{errCoordinatorLoadInProgress, errCoordinatorLoadInProgress})
	c.Loaded(t0)
	c.Unload()
	o = c.Step(t0, Input{Version: 3, Request: req})
	deepEqual(t, "fenced", txnCodes(o.Responses[0].Body.(*kmsg.TxnOffsetCommitResponse)), []int16{errNotCoordinator, errNotCoordinator})
}

// TestTxnOffsetCommitInRebalance: a group completing a rebalance takes
// transactional commits of the current generation (OffsetCommit answers
// REBALANCE_IN_PROGRESS there).
func TestTxnOffsetCommitInRebalance(t *testing.T) {
	h := newHarness(t, testConfig())
	a := h.consumer("g", "a", "t")
	tok := a.joinFully()
	h.waitAnswered(tok)
	a.joined(tok)
	h.wantState("g", "CompletingRebalance")
	wantCode(t, "plain commit", a.commit(9, "t", 1).Topics[0].Partitions[0].ErrorCode, errRebalanceInProgress)
	_, resp := h.txnCommit(3, 1, "g", a.generation, a.memberID, "t", 1)
	deepEqual(t, "txn commit", txnCodes(resp), []int16{errNone})
}

func TestTxnAppendFailed(t *testing.T) {
	h := newHarness(t, testConfig())
	h.txnCommit(3, 7, "g", -1, "", "t", 10)
	out, _ := h.txnCommit(3, 7, "g", -1, "", "t", 11, 21)
	resps := h.c.TxnAppendFailed(out, 47)
	if len(resps) != 1 {
		t.Fatalf("responses: %+v", resps)
	}
	deepEqual(t, "codes", txnCodes(resps[0].Body.(*kmsg.TxnOffsetCommitResponse)), []int16{47, 47})
	// The first commit of the transaction is pending as it was.
	deepEqual(t, "fetch stable", offsetsOf(h.fetchStable("g", "t", 2, true)), []int64{-88, -1})
	h.complete(7, true)
	deepEqual(t, "fetch after commit", offsetsOf(h.fetchStable("g", "t", 2, true)), []int64{10, -1})

	// A refused first commit of a producer for a new group leaves no group.
	out, _ = h.txnCommit(3, 8, "fresh", -1, "", "t", 1)
	h.c.TxnAppendFailed(out, 90)
	h.wantState("fresh", "Dead")
	if len(h.c.txnGroups) != 0 {
		t.Fatalf("producers left: %v", h.c.txnGroups)
	}
	// The coordinator keeps serving.
	_, resp := h.txnCommit(3, 8, "fresh", -1, "", "t", 2)
	deepEqual(t, "after a refusal", txnCodes(resp), []int16{errNone})
}

func TestTxnOffsetsDeleted(t *testing.T) {
	h := newHarness(t, testConfig())
	s := h.consumer("g", "s", "t")
	s.memberID, s.generation = "", -1
	s.commit(9, "t", 5)
	h.txnCommit(3, 7, "g", -1, "", "t", 6, 6)
	h.txnCommit(3, 8, "g", -1, "", "u", 1)

	// OffsetDelete of a partition with only a pending offset writes a
	// tombstone and drops it.
	del := kmsg.NewPtrOffsetDeleteRequest()
	del.Group = "g"
	del.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "u", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	n := len(h.records)
	dr := response[*kmsg.OffsetDeleteResponse](h, h.send("admin", del))
	wantCode(t, "OffsetDelete", dr.Topics[0].Partitions[0].ErrorCode, errNone)
	if len(h.records) != n+1 || recordName(t, h.records[n].Key) != "offset g/u/0" {
		t.Fatalf("OffsetDelete wrote %d records", len(h.records)-n)
	}
	deepEqual(t, "u after OffsetDelete", offsetsOf(h.fetchStable("g", "u", 1, true)), []int64{-1})
	h.complete(8, true)
	deepEqual(t, "u after its commit", offsetsOf(h.fetchStable("g", "u", 1, true)), []int64{-1})

	// DeleteGroups tombstones committed and pending partitions.
	n = len(h.records)
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"g"}
	wantCode(t, "DeleteGroups", response[*kmsg.DeleteGroupsResponse](h, h.send("admin", dg)).Groups[0].ErrorCode, errNone)
	var names []string
	for _, r := range h.records[n:] {
		names = append(names, recordName(t, r.Key))
	}
	deepEqual(t, "deletion records", names, []string{"offset g/t/0", "offset g/t/1", "group g"})
	h.complete(7, true)
	deepEqual(t, "after the commit of a deleted group's transaction", offsetsOf(h.fetchStable("g", "t", 2, true)), []int64{-1, -1})
	h.wantState("g", "Dead")

	// Topic deletion tombstones pending partitions too.
	h.txnCommit(3, 9, "h", -1, "", "t", 1)
	out := h.take(h.c.DeleteTopicOffsets(h.now, "t"))
	if len(out.Records) != 1 || recordName(t, out.Records[0].Key) != "offset h/t/0" {
		t.Fatalf("topic deletion wrote %+v", out.Records)
	}
	deepEqual(t, "after topic deletion", offsetsOf(h.fetchStable("h", "t", 1, true)), []int64{-1})
}

func TestTxnOffsetsExpiry(t *testing.T) {
	h := newHarness(t, testConfig())
	week := 7 * 24 * time.Hour
	s := h.consumer("g", "s", "t")
	s.memberID, s.generation = "", -1
	s.commit(9, "t", 5, 5)
	h.txnCommit(3, 7, "g", -1, "", "t", 6) // partition 0 only
	h.txnCommit(3, 8, "only-pending", -1, "", "t", 1)
	h.advance(week + 11*time.Minute)
	// Partition 1 expired; partition 0 waits for the transaction, and so
	// does the group; a group with only pending offsets stays.
	deepEqual(t, "g", offsetsOf(h.fetchStable("g", "t", 2, false)), []int64{5, -1})
	h.wantState("g", "Empty")
	h.wantState("only-pending", "Empty")
	h.complete(7, false)
	h.complete(8, true)
	h.advance(11 * time.Minute)
	h.wantState("g", "Dead")
	// only-pending's offset was committed at its commit's time, a week ago.
	h.wantState("only-pending", "Dead")
}

// TestTxnReplay loads a partition holding transactional batches and
// markers: committed transactions show, aborted ones do not, and one whose
// marker is not in the log yet stays pending, to be completed later.
func TestTxnReplay(t *testing.T) {
	h := newHarness(t, testConfig())
	s := h.consumer("g", "s", "t")
	s.memberID, s.generation = "", -1
	s.commit(9, "t", 1, 1, 1)
	h.txnCommit(3, 7, "g", -1, "", "t", 10)          // committed
	h.txnCommit(3, 8, "g", -1, "", "t", 20, 20)      // aborted
	h.txnCommit(3, 9, "g", -1, "", "t", 30, 30, 30)  // open at the end
	h.txnCommit(3, 10, "other", -1, "", "t", 40, 40) // committed, then superseded
	s.commit(9, "t", 2)
	h.complete(7, true)
	h.complete(8, false)
	h.complete(11, true) // nothing pending
	h.complete(10, true)
	h.txnCommit(3, 7, "g", -1, "", "u", 50) // the producer's next transaction, open

	groups := []string{"g", "other"}
	want := snapshot(t, h.c, h.now, groups)
	wantStable := offsetsOf(h.fetchStable("g", "t", 3, true))
	deepEqual(t, "stable before replay", wantStable, []int64{-88, -88, -88})
	// Partition 0: the plain commit of 2 came after the committed
	// transaction's 10.
	deepEqual(t, "before replay", offsetsOf(h.fetchStable("g", "t", 3, false)), []int64{2, 1, 1})
	deepEqual(t, "other before replay", offsetsOf(h.fetchStable("other", "t", 2, true)), []int64{40, 40})

	loaded, err := New(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range h.log {
		switch {
		case e.marker:
			err = loaded.ReplayTxnMarker(e.producerID, e.commit)
		case e.producerID >= 0:
			err = loaded.ReplayTransactional(e.producerID, bytes.Clone(e.rec.Key), bytes.Clone(e.rec.Value))
		default:
			err = loaded.Replay(bytes.Clone(e.rec.Key), bytes.Clone(e.rec.Value))
		}
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	h.c = loaded
	h.take(loaded.Loaded(h.now))
	got := snapshot(t, loaded, h.now, groups)
	deepEqual(t, "OffsetFetch after replay", got[2], want[2])
	deepEqual(t, "stable after replay", offsetsOf(h.fetchStable("g", "t", 3, true)), wantStable)
	deepEqual(t, "u after replay", offsetsOf(h.fetchStable("g", "u", 1, true)), []int64{-88})

	// The open transactions end after loading.
	h.complete(9, true)
	h.complete(7, false)
	// Partition 0 keeps the plain commit written after the transaction's.
	deepEqual(t, "after the late commit", offsetsOf(h.fetchStable("g", "t", 3, true)), []int64{2, 30, 30})
	deepEqual(t, "u after the abort", offsetsOf(h.fetchStable("g", "u", 1, true)), []int64{-1})

	if err := loaded.ReplayTxnMarker(1, true); !errors.Is(err, ErrLoaded) {
		t.Fatalf("marker replay after load: %v", err)
	}
	if err := loaded.ReplayTransactional(1, nil, nil); !errors.Is(err, ErrLoaded) {
		t.Fatalf("transactional replay after load: %v", err)
	}
}

// TestTxnReplayTombstones: a tombstone in the log deletes the pending
// offsets of its partition; a group tombstone ends the group's metadata
// but not its offsets, pending ones included (they are records of their
// own, tombstoned first when the group is deleted).
func TestTxnReplayTombstones(t *testing.T) {
	c, err := New(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	o := &offset{offset: 7, leaderEpoch: -1, commitMs: 1, expireMs: -1}
	r := offsetRecord("g", "t", 0, o)
	r1 := offsetRecord("g", "t", 1, o)
	steps := []error{
		c.ReplayTransactional(5, r.Key, r.Value),
		c.ReplayTransactional(5, r1.Key, r1.Value),
		c.Replay(r.Key, nil),
		c.ReplayTransactional(-1, r.Key, r.Value),
	}
	for i, err := range steps[:3] {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if !errors.Is(steps[3], ErrCorruptRecord) || !strings.Contains(steps[3].Error(), "producer") {
		t.Fatalf("transactional record without producer: %v", steps[3])
	}
	g := c.groups["g"]
	if g.hasPending("t", 0) || !g.hasPending("t", 1) {
		t.Fatalf("pending after the tombstone: %+v", g.txns)
	}
	if err := c.Replay(groupKey("g"), nil); err != nil {
		t.Fatal(err)
	}
	if g := c.groups["g"]; g == nil || !g.hasPending("t", 1) {
		t.Fatalf("pending offsets after the group tombstone: %+v", g)
	}
	if err := c.ReplayTxnMarker(5, true); err != nil || c.groups["g"].offsets["t"][1] == nil {
		t.Fatalf("commit of the transaction after the group tombstone: %v, %+v", err, c.groups["g"])
	}
	if len(c.txnGroups) != 0 {
		t.Fatalf("producers left after the commit: %v", c.txnGroups)
	}
}

// FuzzTxnReplay replays a log of plain and transactional offset commits,
// markers and tombstones of one group, as the program bytes say, and
// compares what OffsetFetch answers, with and without require_stable,
// against a model: a COMMIT marker makes the producer's pending offsets
// committed where no later plain commit exists, an ABORT drops them, an
// offset tombstone deletes the partition's committed and pending offsets,
// a group tombstone all of the group's. Then the open transactions are
// committed after loading, through TxnCompleted, and compared again.
func FuzzTxnReplay(f *testing.F) {
	f.Add([]byte{1, 0, 2})
	f.Add([]byte{1, 9, 0, 2, 17, 3, 4})
	f.Add([]byte{0, 1, 8, 0, 2, 33, 5, 1, 10})
	f.Add([]byte{1, 41, 4, 0, 2, 42, 5, 1})
	f.Fuzz(func(t *testing.T, program []byte) {
		if len(program) > 200 {
			return
		}
		type val struct{ offset, ord int64 }
		committed := map[int32]val{}
		pending := map[int64]map[int32]val{}
		var ord int64
		c, err := New(testConfig())
		if err != nil {
			t.Fatal(err)
		}
		commit := func(pid int64) {
			for p, v := range pending[pid] {
				if cur, ok := committed[p]; !ok || v.ord > cur.ord {
					committed[p] = v
				}
			}
			delete(pending, pid)
		}
		for i, op := range program {
			pid, part := int64(op>>3)%3, int32(op>>5)%2
			o := &offset{offset: int64(i), leaderEpoch: -1, expireMs: -1}
			r := offsetRecord("g", "t", part, o)
			switch op % 6 {
			case 0:
				err = c.Replay(r.Key, r.Value)
				ord++
				committed[part] = val{int64(i), ord}
			case 1:
				err = c.ReplayTransactional(pid, r.Key, r.Value)
				ord++
				if pending[pid] == nil {
					pending[pid] = map[int32]val{}
				}
				pending[pid][part] = val{int64(i), ord}
			case 2:
				err = c.ReplayTxnMarker(pid, true)
				commit(pid)
			case 3:
				err = c.ReplayTxnMarker(pid, false)
				delete(pending, pid)
			case 4:
				err = c.Replay(r.Key, nil)
				delete(committed, part)
				for _, ps := range pending {
					delete(ps, part)
				}
			case 5:
				// The group's metadata ends; its offsets are
				// records of their own and stay.
				err = c.Replay(groupKey("g"), nil)
			}
			if err != nil {
				t.Fatalf("op %d: %v", i, err)
			}
		}
		h := &harness{t: t, c: c, now: t0, resps: make(map[int]kmsg.Response)}
		h.take(c.Loaded(t0))
		check := func(when string) {
			t.Helper()
			var plain, stable []int64
			for p := int32(0); p < 2; p++ {
				want := int64(-1)
				if v, ok := committed[p]; ok {
					want = v.offset
				}
				plain = append(plain, want)
				for _, ps := range pending {
					if _, ok := ps[p]; ok {
						want = -int64(errUnstableOffsetCommit)
					}
				}
				stable = append(stable, want)
			}
			deepEqual(t, when+": fetch", offsetsOf(h.fetchStable("g", "t", 2, false)), plain)
			deepEqual(t, when+": fetch stable", offsetsOf(h.fetchStable("g", "t", 2, true)), stable)
		}
		check("after replay")
		for pid := int64(0); pid < 3; pid++ {
			h.take(c.TxnCompleted(h.now, pid, true))
			commit(pid)
		}
		check("after the commits")
		if len(c.txnGroups) != 0 {
			t.Fatalf("producers left: %v", c.txnGroups)
		}
	})
}
