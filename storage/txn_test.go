package storage

import (
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/gregor-io/gregor/protocol/record"
)

// txnBatch builds a transactional batch of n records for a producer.
func txnBatch(t testing.TB, pid int64, epoch int16, seq int32, n int) []byte {
	t.Helper()
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{OffsetDelta: int32(i), Key: []byte("k"), Value: []byte("v")}
	}
	b, err := record.Build(nil, record.BatchHeader{Transactional: true,
		BaseTimestamp: time.Now().UnixMilli(), ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustAppend(t testing.TB, l *Log, set []byte) AppendResult {
	t.Helper()
	res, err := l.Append(set, AppendOptions{AssignOffsets: true})
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	return res
}

func mustMarker(t testing.TB, l *Log, pid int64, epoch int16, coord int32, commit bool) int64 {
	t.Helper()
	res, err := l.AppendTxnMarker(TxnMarker{ProducerID: pid, ProducerEpoch: epoch, CoordinatorEpoch: coord, Commit: commit}, 0)
	if err != nil {
		t.Fatalf("marker for producer %d (commit %v): %v", pid, commit, err)
	}
	return res.FirstOffset
}

func wantLSO(t testing.TB, l *Log, want int64, when string) {
	t.Helper()
	if got := l.LastStableOffset(); got != want {
		t.Fatalf("%s: last stable offset %d, want %d (hw %d, leo %d)", when, got, want, l.HighWatermark(), l.LogEndOffset())
	}
}

func wantAborted(t testing.TB, l *Log, from, upTo int64, want []AbortedTxn, when string) {
	t.Helper()
	got, err := l.AbortedTransactions(from, upTo)
	if err != nil {
		t.Fatalf("%s: aborted transactions: %v", when, err)
	}
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: aborted transactions in [%d, %d) = %+v, want %+v", when, from, upTo, got, want)
	}
}

func TestTxnCommitAbortAndLastStableOffset(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := openTestLog(t, dir, testConfig(), OpenState{})
	hwToEnd := func() { l.SetHighWatermark(l.LogEndOffset()) }

	mustAppend(t, l, txnBatch(t, 1, 0, 0, 3)) // 0..2, producer 1's transaction
	hwToEnd()
	wantLSO(t, l, 0, "producer 1 open")
	if first, ok := l.OngoingTxn(1); !ok || first != 0 {
		t.Fatalf("OngoingTxn(1) = %d, %v; want 0, true", first, ok)
	}
	mustAppend(t, l, txnBatch(t, 2, 0, 0, 2))                                   // 3..4
	mustAppend(t, l, buildBatch(t, 1, time.Now().UnixMilli(), record.CodecNone, // 5, not transactional
		func(int) []byte { return []byte("plain") }))
	mustAppend(t, l, txnBatch(t, 1, 0, 3, 1)) // 6: producer 1 again, same transaction
	if _, err := l.Append(idemBatch(t, 1, 0, 4, 1), AppendOptions{AssignOffsets: true}); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("non-transactional batch inside a transaction: %v, want ErrInvalidTxnState", err)
	}

	abort := mustMarker(t, l, 1, 0, 5, false) // 7
	if abort != 7 {
		t.Fatalf("abort marker at %d, want 7", abort)
	}
	if _, ok := l.OngoingTxn(1); ok {
		t.Fatal("producer 1 still has a transaction after its marker")
	}
	// The marker is not below the high watermark yet: still unstable.
	wantLSO(t, l, 0, "abort marker above the high watermark")
	hwToEnd()
	wantLSO(t, l, 3, "producer 1 aborted and replicated, producer 2 open")
	commit := mustMarker(t, l, 2, 0, 5, true) // 8
	hwToEnd()
	wantLSO(t, l, 9, "all decided")
	if commit != 8 {
		t.Fatalf("commit marker at %d, want 8", commit)
	}
	aborted := []AbortedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: 7, LastStableOffset: 3}}
	wantAborted(t, l, 0, 9, aborted, "after the markers")
	wantAborted(t, l, 7, 9, aborted, "fetch from the marker")
	wantAborted(t, l, 8, 9, nil, "fetch past the marker")

	// Epoch rules.
	if _, err := l.AppendTxnMarker(TxnMarker{ProducerID: 1, ProducerEpoch: 0, CoordinatorEpoch: 4}, 0); !errors.Is(err, ErrTransactionCoordinatorFenced) {
		t.Fatalf("marker from an older coordinator: %v, want ErrTransactionCoordinatorFenced", err)
	}
	mustMarker(t, l, 2, 3, 5, false) // a higher producer epoch fences epoch 0
	if _, err := l.AppendTxnMarker(TxnMarker{ProducerID: 2, ProducerEpoch: 2, CoordinatorEpoch: 5}, 0); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("marker with an older producer epoch: %v, want ErrInvalidProducerEpoch", err)
	}
	if _, err := l.Append(txnBatch(t, 2, 0, 2, 1), AppendOptions{AssignOffsets: true}); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("data from a fenced epoch: %v, want ErrInvalidProducerEpoch", err)
	}
	// An empty transaction's abort marker adds no entry.
	wantAborted(t, l, 0, l.LogEndOffset(), aborted, "after an abort of nothing")

	// A read_committed read stops at the last stable offset.
	mustAppend(t, l, txnBatch(t, 3, 0, 0, 2))
	open := l.LogEndOffset() - 2
	mustAppend(t, l, txnBatch(t, 4, 0, 0, 1))
	hwToEnd()
	wantLSO(t, l, open, "producer 3 open")
	res, err := l.Read(ReadOptions{Offset: 0, MaxBytes: 1 << 20, ReadCommitted: true})
	if err != nil {
		t.Fatal(err)
	}
	buf, err := res.AppendTo(nil)
	res.Release()
	if err != nil {
		t.Fatal(err)
	}
	if res.LastStableOffset != open {
		t.Fatalf("read result last stable offset %d, want %d", res.LastStableOffset, open)
	}
	it := record.NewIter(buf)
	var last int64 = -1
	for b, ok := it.Next(); ok; b, ok = it.Next() {
		last = b.LastOffset()
	}
	if last != open-1 {
		t.Fatalf("read_committed read ends at %d, want %d", last, open-1)
	}

	// A clean reopen and a crash both restore the same state.
	wantState := func(l *Log, when string) {
		t.Helper()
		l.SetHighWatermark(l.LogEndOffset())
		wantLSO(t, l, open, when)
		wantAborted(t, l, 0, l.LogEndOffset(), aborted, when)
		if first, ok := l.OngoingTxn(3); !ok || first != open {
			t.Fatalf("%s: OngoingTxn(3) = %d, %v; want %d, true", when, first, ok, open)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, segmentFileName(0, txnIndexSuffix))); err != nil {
		t.Fatalf("txn index not written at close: %v", err)
	}
	l = openTestLog(t, dir, testConfig(), OpenState{Clean: true})
	wantState(l, "clean reopen")
	crash(l)
	l = openTestLog(t, dir, testConfig(), OpenState{})
	wantState(l, "recovery")
	// Recovery rebuilt the txn index from the log.
	if err := os.Remove(filepath.Join(dir, segmentFileName(0, txnIndexSuffix))); err != nil {
		t.Fatal(err)
	}
	crash(l)
	l = openTestLog(t, dir, testConfig(), OpenState{})
	wantState(l, "recovery without the txn index file")
	l.Close()
}

func TestTxnTruncateBelowMarkerReopens(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := openTestLog(t, dir, testConfig(), OpenState{})
	defer l.Close()
	mustAppend(t, l, txnBatch(t, 7, 0, 0, 2)) // 0..1
	m := mustMarker(t, l, 7, 0, 0, false)     // 2
	l.SetHighWatermark(l.LogEndOffset())
	wantLSO(t, l, 3, "aborted")
	wantAborted(t, l, 0, 3, []AbortedTxn{{7, 0, 2, 3}}, "aborted")
	if err := l.TruncateTo(m); err != nil {
		t.Fatal(err)
	}
	if first, ok := l.OngoingTxn(7); !ok || first != 0 {
		t.Fatalf("after truncating the marker: OngoingTxn(7) = %d, %v; want 0, true", first, ok)
	}
	wantLSO(t, l, 0, "marker truncated")
	wantAborted(t, l, 0, 2, nil, "marker truncated")
	// A follower appends the leader's marker again.
	mustMarker(t, l, 7, 0, 0, false)
	l.SetHighWatermark(l.LogEndOffset())
	wantAborted(t, l, 0, 3, []AbortedTxn{{7, 0, 2, 3}}, "marker again")
}

// TestTxnAcrossSegmentsAndRetention runs transactions over many small
// segments and checks the aborted list against a model, then deletes old
// segments and checks their txn index files go with them.
func TestTxnAcrossSegmentsAndRetention(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := testConfig()
	cfg.SegmentBytes = 1 << 10
	l := openTestLog(t, dir, cfg, OpenState{})
	seq := map[int64]int32{}
	var want []AbortedTxn
	open := map[int64]int64{}
	for i := 0; i < 120; i++ {
		pid := int64(i % 3)
		if first, ok := open[pid]; ok && i%5 == 0 {
			commit := i%10 == 0
			m := mustMarker(t, l, pid, 0, 0, commit)
			delete(open, pid)
			if !commit {
				lso := m + 1
				for _, o := range open {
					lso = min(lso, o)
				}
				want = append(want, AbortedTxn{pid, first, m, lso})
			}
			continue
		}
		res := mustAppend(t, l, txnBatch(t, pid, 0, seq[pid], 4))
		seq[pid] += 4
		if _, ok := open[pid]; !ok {
			open[pid] = res.FirstOffset
		}
	}
	l.SetHighWatermark(l.LogEndOffset())
	if l.SegmentCount() < 5 {
		t.Fatalf("only %d segments", l.SegmentCount())
	}
	wantAborted(t, l, 0, l.LogEndOffset(), want, "all")
	// A fetch from the middle gets the transactions whose marker is at or
	// above it.
	mid := l.LogEndOffset() / 2
	var wantMid []AbortedTxn
	for _, a := range want {
		if a.LastOffset >= mid {
			wantMid = append(wantMid, a)
		}
	}
	wantAborted(t, l, mid, l.LastStableOffset(), wantMid, "from the middle")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, cfg, OpenState{Clean: true})
	defer l.Close()
	l.SetHighWatermark(l.LogEndOffset())
	wantAborted(t, l, 0, l.LogEndOffset(), want, "reopened")

	files := func() map[string]bool {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, e := range ents {
			out[e.Name()] = true
		}
		return out
	}
	before := files()
	segs := *l.segs.Load()
	withTxn := 0
	for _, s := range segs {
		if before[filepath.Base(s.txn.path)] {
			withTxn++
		}
	}
	if withTxn < 2 {
		t.Fatalf("only %d segments have a txn index file", withTxn)
	}
	cut := segs[len(segs)/2].base
	if err := l.DeleteBelow(cut); err != nil {
		t.Fatal(err)
	}
	after := files()
	for _, s := range segs {
		name := filepath.Base(s.txn.path)
		if s.base < cut && after[name] {
			t.Fatalf("txn index %s of a deleted segment is still there", name)
		}
		if s.base >= cut && before[name] && !after[name] {
			t.Fatalf("txn index %s of a kept segment is gone", name)
		}
	}
	var kept []AbortedTxn
	for _, a := range want {
		if a.LastOffset >= cut {
			kept = append(kept, a)
		}
	}
	wantAborted(t, l, cut, l.LogEndOffset(), kept, "after deleting old segments")
}

// TestTxnIndexDamagedIsRebuilt damages a sealed segment's txn index; the
// first read of it rebuilds it from the log.
func TestTxnIndexDamagedIsRebuilt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := testConfig()
	cfg.SegmentBytes = 1 << 10
	l := openTestLog(t, dir, cfg, OpenState{})
	var want []AbortedTxn
	for i := int64(0); i < 30; i++ {
		res := mustAppend(t, l, txnBatch(t, i, 0, 0, 3))
		m := mustMarker(t, l, i, 0, 0, i%2 == 0)
		if i%2 == 1 {
			want = append(want, AbortedTxn{i, res.FirstOffset, m, m + 1})
		}
	}
	l.SetHighWatermark(l.LogEndOffset())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, segmentFileName(0, txnIndexSuffix))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, damage := range [][]byte{data[:len(data)-5], append(append([]byte(nil), data...), data[:txnEntrySize]...)} {
		if err := os.WriteFile(path, damage, 0o644); err != nil {
			t.Fatal(err)
		}
		l = openTestLog(t, dir, cfg, OpenState{Clean: true, HighWatermark: 1 << 20})
		wantAborted(t, l, 0, l.LogEndOffset(), want, "damaged txn index")
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != string(data) {
			t.Fatalf("rebuilt txn index differs from the one appends wrote (%v)", err)
		}
	}
}

func TestTxnSnapshotCarriesOpenTransactions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := testConfig()
	cfg.SegmentBytes = 1 << 10
	l := openTestLog(t, dir, cfg, OpenState{})
	mustAppend(t, l, txnBatch(t, 9, 1, 0, 2))
	mustMarker(t, l, 8, 0, 3, true) // coordinator epoch 3 for producer 8
	for i := 0; i < 40; i++ {
		mustAppend(t, l, makeBatch(t, 2, 64, 100, uint64(i), record.CodecNone))
	}
	if l.SegmentCount() < 4 {
		t.Fatalf("only %d segments", l.SegmentCount())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Only the snapshots matter now: the first segment's batches are gone
	// from the replay (it starts at the newest snapshot).
	l = openTestLog(t, dir, cfg, OpenState{Clean: true, HighWatermark: 1 << 20})
	defer l.Close()
	wantLSO(t, l, 0, "reopened with producer 9's transaction open")
	if _, err := l.AppendTxnMarker(TxnMarker{ProducerID: 8, CoordinatorEpoch: 2}, 0); !errors.Is(err, ErrTransactionCoordinatorFenced) {
		t.Fatalf("older coordinator after reopen: %v, want ErrTransactionCoordinatorFenced", err)
	}
	mustMarker(t, l, 9, 1, 0, true)
	l.SetHighWatermark(l.LogEndOffset())
	wantLSO(t, l, l.LogEndOffset(), "committed")
}

func TestProducerSnapshotV1StillRead(t *testing.T) {
	t.Parallel()
	ps := newProducerState()
	b := record.Batch(idemBatch(t, 5, 2, 0, 3))
	b.SetBaseOffset(40)
	ps.apply(b, nil)
	v2 := ps.encode()
	// The same state as version 1 wrote it.
	v1 := []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 1}
	v1 = append(v1, v2[10:10+8+2]...)
	v1 = append(v1, v2[10+snapProducerV2-1:]...)
	putCRC := func(buf []byte) {
		s := buf[6:]
		c := crcOf(s)
		buf[2], buf[3], buf[4], buf[5] = byte(c>>24), byte(c>>16), byte(c>>8), byte(c)
	}
	putCRC(v1)
	got, err := decodeProducerSnapshot(v1)
	if err != nil {
		t.Fatalf("version 1 snapshot: %v", err)
	}
	e := got.entries[5]
	if e == nil || e.epoch != 2 || e.txnFirst != -1 || e.coordinatorEpoch != -1 || len(e.batches) != 1 || e.batches[0].lastOffset != 42 {
		t.Fatalf("version 1 snapshot decoded as %+v", e)
	}
}

func crcOf(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// TestTxnVerificationGuard: a transactional write that begins its
// producer's transaction here needs the producer's current verification
// guard; a marker written between the verification and the write (the
// transaction ended) voids the guard, so the late write cannot open a
// transaction no coordinator knows of.
func TestTxnVerificationGuard(t *testing.T) {
	t.Parallel()
	l := openTestLog(t, t.TempDir(), testConfig(), OpenState{})
	verified := func(g uint64) AppendOptions { return AppendOptions{AssignOffsets: true, VerifyTxn: true, Guard: g} }

	if _, err := l.Append(txnBatch(t, 1, 0, 0, 1), verified(0)); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("unverified write: %v, want ErrInvalidTxnState", err)
	}
	g, inTxn, pending := l.VerificationGuard(1, 0, 0)
	if inTxn || pending || g == 0 {
		t.Fatalf("VerificationGuard(1) = %d, %v, %v; want a guard", g, inTxn, pending)
	}
	if g2, _, _ := l.VerificationGuard(1, 0, 0); g2 != g {
		t.Fatalf("a second verification got guard %d, want the same %d", g2, g)
	}
	if _, err := l.Append(txnBatch(t, 1, 0, 0, 1), verified(g+1)); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("write with another guard: %v, want ErrInvalidTxnState", err)
	}
	if _, err := l.Append(txnBatch(t, 1, 0, 0, 2), verified(g)); err != nil {
		t.Fatalf("verified write: %v", err)
	}
	// Inside its transaction the producer needs no guard.
	if _, inTxn, _ := l.VerificationGuard(1, 0, 0); !inTxn {
		t.Fatal("VerificationGuard inside the transaction: not in a transaction")
	}
	// A write of a later epoch (transaction version 2: the transaction
	// ended and bumped the epoch, its marker is not here yet) waits for
	// the marker, and the log refuses to let it join the open one.
	if _, inTxn, pending := l.VerificationGuard(1, 1, 0); inTxn || !pending {
		t.Fatalf("VerificationGuard at the next epoch inside the transaction: inTxn %v pending %v, want pending", inTxn, pending)
	}
	if _, err := l.Append(txnBatch(t, 1, 1, 0, 1), verified(0)); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("next epoch's write into the open transaction: %v, want ErrInvalidTxnState", err)
	}
	if _, err := l.Append(txnBatch(t, 1, 0, 2, 1), verified(0)); err != nil {
		t.Fatalf("write inside the verified transaction: %v", err)
	}
	mustMarker(t, l, 1, 0, 0, true)

	// Verified, then the transaction ends (a marker) before the write.
	g, _, _ = l.VerificationGuard(1, 0, 3)
	mustMarker(t, l, 1, 0, 0, false)
	if _, err := l.Append(txnBatch(t, 1, 0, 3, 1), verified(g)); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("write verified before a marker: %v, want ErrInvalidTxnState", err)
	}
	if _, ok := l.OngoingTxn(1); ok {
		t.Fatal("the late write opened a transaction")
	}
	// Without verification (the broker's check off), writes go as before.
	mustAppend(t, l, txnBatch(t, 1, 0, 3, 1))
}

// TestTxnVerificationLowestSequence: a producer with two batches in flight
// to a partition where its transaction is not open yet had the first one
// refused (its verification failed) and the second verified. The second
// may not begin the transaction: landing first, it would leave the first
// out of sequence on every retry. It is refused out of sequence until the
// first is in, and then goes in after it.
func TestTxnVerificationLowestSequence(t *testing.T) {
	t.Parallel()
	l := openTestLog(t, t.TempDir(), testConfig(), OpenState{})
	verified := func(g uint64) AppendOptions { return AppendOptions{AssignOffsets: true, VerifyTxn: true, Guard: g} }

	g, _, _ := l.VerificationGuard(7, 0, 0)  // batch A, sequences 0-4: its verification then fails
	g2, _, _ := l.VerificationGuard(7, 0, 5) // batch B, sequences 5-9: verified
	if g2 != g {
		t.Fatalf("second verification got guard %d, want %d", g2, g)
	}
	if _, err := l.Append(txnBatch(t, 7, 0, 5, 5), verified(g)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("batch B before A: %v, want ErrOutOfOrderSequence", err)
	}
	if _, ok := l.OngoingTxn(7); ok {
		t.Fatal("batch B opened the transaction")
	}
	// A's retry is verified again and goes in; then B's retry.
	if g3, _, _ := l.VerificationGuard(7, 0, 0); g3 != g {
		t.Fatalf("A's retry got guard %d, want %d", g3, g)
	}
	if _, err := l.Append(txnBatch(t, 7, 0, 0, 5), verified(g)); err != nil {
		t.Fatalf("batch A: %v", err)
	}
	if _, err := l.Append(txnBatch(t, 7, 0, 5, 5), verified(0)); err != nil {
		t.Fatalf("batch B after A: %v", err)
	}
	mustMarker(t, l, 7, 0, 0, true)

	// A newer epoch's verification starts over from its own sequence.
	l.VerificationGuard(7, 0, 10)
	g, _, _ = l.VerificationGuard(7, 1, 3)
	if _, err := l.Append(txnBatch(t, 7, 1, 3, 1), verified(g)); !errors.Is(err, ErrOutOfOrderSequence) {
		// epoch 1 starts at sequence 0: refused, but by the epoch rule.
		t.Fatalf("epoch 1 at sequence 3: %v, want ErrOutOfOrderSequence", err)
	}
	g, _, _ = l.VerificationGuard(7, 1, 0)
	if _, err := l.Append(txnBatch(t, 7, 1, 0, 1), verified(g)); err != nil {
		t.Fatalf("epoch 1 at sequence 0: %v", err)
	}
}
