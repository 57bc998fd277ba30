package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gregor-io/gregor/protocol/record"
)

// gapLogConfig is a compacted log with small segments, cleaned at any
// dirty ratio.
func gapLogConfig() Config {
	c := testConfig()
	c.SegmentBytes = 2 << 10
	c.Compact, c.CleanupDelete = true, false
	c.MinCleanableDirtyRatio = 0
	c.FileDeleteDelayMs = 0
	return c
}

// openGapManager opens a Manager on dir whose background work waits an
// hour, as it does between a crash and its first checkpoint.
func openGapManager(t *testing.T, dir string) *Manager {
	t.Helper()
	mc := DefaultManagerConfig(dir)
	mc.Log = gapLogConfig()
	mc.CleanerEnable = false
	mc.CheckpointInterval = time.Hour
	mc.HighWatermarkCheckpointInterval = time.Hour
	m, err := OpenManager(mc)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return m
}

// killCopy copies dir as a kill -9 of the process using it leaves it (every
// write reached the page cache, nothing after this moment ran) and returns
// the copy's path.
func killCopy(t *testing.T, dir string) string {
	t.Helper()
	snap := filepath.Join(t.TempDir(), "after-kill")
	if err := copyTree(dir, snap); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(snap, dirLockFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return snap
}

// writeIdempotentKeys appends batches of an idempotent producer (each of
// producers writing in turn) over keys k0..k(keys-1), every value unique,
// and returns the latest value of each key. Every seventh batch starts
// with a key of its own, written once: the cleaner keeps it while it
// drops the batches after it, so cleaned segments end before the next
// segment's base.
func writeIdempotentKeys(t *testing.T, l *Log, producers, batches, keys int) map[string]string {
	t.Helper()
	latest := map[string]string{}
	seqs := make([]int32, producers)
	for i := range batches {
		p := i % producers
		recs := make([]record.Record, 4)
		for j := range recs {
			k := fmt.Sprintf("k%d", (i*4+j)%keys)
			if j == 0 && i%7 == 0 {
				k = fmt.Sprintf("once%d", i)
			}
			v := fmt.Sprintf("v%d-%d", i, j)
			recs[j] = record.Record{OffsetDelta: int32(j), Key: []byte(k), Value: []byte(v)}
			latest[k] = v
		}
		set, err := record.Build(nil, record.BatchHeader{BaseTimestamp: 1000 + int64(i), ProducerID: int64(7 + p),
			BaseSequence: seqs[p]}, recs)
		if err != nil {
			t.Fatal(err)
		}
		seqs[p] += 4
		res, err := l.Append(set, AppendOptions{AssignOffsets: true})
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		if err := l.Flush(context.Background(), res.LastOffset+1); err != nil {
			t.Fatal(err)
		}
	}
	return latest
}

// latestValues reads l whole and returns the last value of each key.
func latestValues(t *testing.T, l *Log) map[string]string {
	t.Helper()
	out := map[string]string{}
	var scratch []byte
	for _, b := range readAll(t, l, l.LogStartOffset(), 0) {
		err := record.ForEachRecord(b, &scratch, func(_, _ int64, r *record.Record) error {
			out[string(r.Key)] = string(r.Value)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// hasSegmentGap reports whether a segment of l ends before the next one's
// base.
func hasSegmentGap(l *Log) bool {
	segs := *l.segs.Load()
	for _, s := range segs[:len(segs)-1] {
		if err := s.loadIndexes(); err != nil {
			return false
		}
	}
	for i, s := range segs[:len(segs)-1] {
		f, err := s.acquire()
		if err != nil {
			return false
		}
		res := scanSegment(f, s.size.Load(), s.base, 4096, false)
		s.release()
		if res.ib.next < segs[i+1].base {
			return true
		}
	}
	return false
}

// TestRecoveryKeepsCompactionGaps is issue 27's first report: a compacted
// log written by idempotent producers, cleaned, then killed before the
// recovery point reached a checkpoint. Cleaned segments end before the
// next segment's base; recovery took that gap for damage and deleted every
// later segment, losing the latest value of every key and moving the log
// end back. After the kill the log must end where it did and hold every
// key's latest value.
func TestRecoveryKeepsCompactionGaps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m := openGapManager(t, dir)
	tp := TopicPartition{Topic: "gaps", Partition: 0}
	l, err := m.Create(tp, gapLogConfig())
	if err != nil {
		t.Fatal(err)
	}
	l.SetAutoHighWatermark(true)
	latest := writeIdempotentKeys(t, l, 5, 400, 30)
	st, err := m.CleanNow(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !hasSegmentGap(l) {
		t.Fatalf("the cleaning (%+v, %d segments, hw %d, rp %d) left no gap between segments: the test does not test recovery across one",
			st, l.SegmentCount(), l.HighWatermark(), l.RecoveryPoint())
	}
	leo := l.LogEndOffset()
	snap := killCopy(t, dir)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	m2 := openGapManager(t, snap)
	defer m2.Close()
	l2, ok := m2.Get(tp)
	if !ok {
		t.Fatal("log gone after the kill")
	}
	if got := l2.LogEndOffset(); got != leo {
		t.Fatalf("log end after the kill: %d, want %d", got, leo)
	}
	got := latestValues(t, l2)
	for k, v := range latest {
		if got[k] != v {
			t.Errorf("key %s after the kill: %q, want its latest value %q", k, got[k], v)
		}
	}
}

// TestCleanerRightAfterRecovery: after a kill the recovery point on disk is
// the one of the last checkpoint (every 60 s by default). Recovery scans
// and fsyncs from there, so the log is durable whole and the cleaner, which
// cleans only below the recovery point, cleans on its first pass instead of
// waiting for the next checkpoint.
func TestCleanerRightAfterRecovery(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m := openGapManager(t, dir)
	tp := TopicPartition{Topic: "dirty", Partition: 0}
	l, err := m.Create(tp, gapLogConfig())
	if err != nil {
		t.Fatal(err)
	}
	l.SetAutoHighWatermark(true)
	writeIdempotentKeys(t, l, 1, 200, 10)
	snap := killCopy(t, dir)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	m2 := openGapManager(t, snap)
	defer m2.Close()
	l2, _ := m2.Get(tp)
	l2.SetAutoHighWatermark(true) // as the broker does after opening a log
	if rp, leo := l2.RecoveryPoint(), l2.LogEndOffset(); rp != leo {
		t.Errorf("recovery point after recovery: %d, want the log end %d", rp, leo)
	}
	st, err := m2.RunCleaner(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Logs != 1 || st.RecordsKept >= st.RecordsRead {
		t.Fatalf("the first cleaner pass after recovery cleaned %d logs (%d of %d records kept), want the log cleaned",
			st.Logs, st.RecordsKept, st.RecordsRead)
	}
}

// TestCleanerSwapKilledAtEveryStep kills the process (takes its files as a
// kill -9 leaves them) after each step of a cleaning's segment swaps, one
// step per run, from the same log: the .cleaned files written, each rename
// to .swap, the dir fsync, each old segment renamed .deleted, each rename
// to the final name, the last dir fsync. After each, the reopened log ends
// where it did, holds the latest value of every key, holds only records
// that were appended, at their offsets, and no .cleaned or .swap file is
// left.
func TestCleanerSwapKilledAtEveryStep(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	tp := TopicPartition{Topic: "swap", Partition: 0}
	m := openGapManager(t, base)
	l, err := m.Create(tp, gapLogConfig())
	if err != nil {
		t.Fatal(err)
	}
	l.SetAutoHighWatermark(true)
	// Aborted transactions first, so that the first cleaned segment has
	// a txn index to swap in too.
	abortedAt := map[int64]bool{}
	for i := range 3 {
		tb, err := record.Build(nil, record.BatchHeader{Transactional: true, BaseTimestamp: 999, ProducerID: 100,
			BaseSequence: int32(i)}, []record.Record{{Key: []byte(fmt.Sprintf("ab%d", i)), Value: []byte("aborted")}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := l.Append(tb, AppendOptions{AssignOffsets: true})
		if err != nil {
			t.Fatal(err)
		}
		abortedAt[res.FirstOffset] = true
		if res, err = l.AppendTxnMarker(TxnMarker{ProducerID: 100}, 0); err != nil {
			t.Fatal(err)
		}
		if err := l.Flush(context.Background(), res.LastOffset+1); err != nil {
			t.Fatal(err)
		}
	}
	latest := writeIdempotentKeys(t, l, 3, 300, 25)
	leo := l.LogEndOffset()
	appended := map[int64][]byte{}
	for _, b := range readAll(t, l, 0, 0) {
		appended[b.BaseOffset()] = append([]byte(nil), b...)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	// clean cleans a copy of base, calling at(step) after each step.
	clean := func(at func(dir, step string)) {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "data")
		if err := copyTree(base, dir); err != nil {
			t.Fatal(err)
		}
		m := openGapManager(t, dir)
		defer m.Close()
		l, _ := m.Get(tp)
		l.SetAutoHighWatermark(true)
		l.stepHook = func(step string) { at(dir, step) }
		if _, err := m.CleanNow(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	var steps []string
	clean(func(_, step string) { steps = append(steps, step) })
	seen := map[string]bool{}
	for _, s := range steps {
		seen[s] = true
	}
	for _, want := range []string{".cleaned files written", "renamed 00000000000000000000.log.swap", ".swap files synced",
		"segment renamed .deleted", "renamed 00000000000000000000.log", "swap done"} {
		if !seen[want] {
			t.Fatalf("the cleaning made no step %q (steps %q): the test does not cover it", want, steps)
		}
	}
	txnSwap := false
	for _, s := range steps {
		txnSwap = txnSwap || strings.HasSuffix(s, txnIndexSuffix+swapSuffix)
	}
	if !txnSwap {
		t.Fatalf("the cleaning swapped in no txn index (steps %q): the test does not cover it", steps)
	}
	t.Logf("%d steps in the cleaning", len(steps))

	for k := range steps {
		var snap string
		i := 0
		clean(func(dir, step string) {
			if i == k {
				snap = killCopy(t, dir)
			}
			i++
		})
		what := fmt.Sprintf("killed after step %d (%s)", k, steps[k])
		func() {
			m := openGapManager(t, snap)
			defer m.Close()
			l2, ok := m.Get(tp)
			if !ok {
				t.Fatalf("%s: log gone", what)
			}
			if got := l2.LogEndOffset(); got != leo {
				t.Fatalf("%s: log end %d, want %d", what, got, leo)
			}
			got := latestValues(t, l2)
			for key, v := range latest {
				if got[key] != v {
					t.Fatalf("%s: key %s holds %q, want its latest value %q", what, key, got[key], v)
				}
			}
			aborted, err := l2.AbortedTransactions(0, l2.LastStableOffset())
			if err != nil {
				t.Fatalf("%s: aborted transactions: %v", what, err)
			}
			for _, b := range readAll(t, l2, 0, 0) {
				orig, ok := appended[b.BaseOffset()]
				if !ok || b.LastOffset() != record.Batch(orig).LastOffset() {
					t.Fatalf("%s: a batch at %d..%d that was not appended", what, b.BaseOffset(), b.LastOffset())
				}
				if abortedAt[b.BaseOffset()] && b.RecordCount() > 0 {
					covered := false
					for _, a := range aborted {
						covered = covered || a.FirstOffset <= b.BaseOffset() && b.BaseOffset() < a.LastOffset
					}
					if !covered {
						t.Fatalf("%s: aborted batch at %d is in no aborted transaction %+v", what, b.BaseOffset(), aborted)
					}
				}
			}
			for _, suffix := range []string{cleanedSuffix, swapSuffix} {
				left, _ := filepath.Glob(filepath.Join(snap, tp.DirName(), "*"+suffix))
				if len(left) > 0 {
					t.Fatalf("%s: files left after reopen: %v", what, left)
				}
			}
		}()
	}
}
