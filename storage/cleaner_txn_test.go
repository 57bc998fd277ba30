package storage

import (
	"context"
	"fmt"
	"testing"

	"github.com/gregor-io/gregor/protocol/record"
)

// TestCleanerTransactions: compaction removes the records of aborted
// transactions (which never supersede committed ones), keeps their markers
// for the cleaning that removes their batches, then gives the markers of
// transactions with nothing left a delete horizon, after which a cleaning
// drops them; markers of transactions with records left stay.
func TestCleanerTransactions(t *testing.T) {
	t.Parallel()
	clock := newFakeClock(1_700_000_000_000)
	m := openCleanerManager(t, t.TempDir(), clock, 0)
	defer m.Close()
	cfg := compactConfig(2048)
	cfg.DeleteRetentionMs = 10_000
	l, err := m.Create(TopicPartition{Topic: "c", Partition: 0}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	seq := map[int64]int32{}
	txn := func(pid int64, recs ...string) {
		t.Helper()
		rs := make([]record.Record, len(recs)/2)
		for i := range rs {
			rs[i] = record.Record{OffsetDelta: int32(i), Key: []byte(recs[2*i]), Value: []byte(recs[2*i+1])}
		}
		b, err := record.Build(nil, record.BatchHeader{Transactional: true, BaseTimestamp: clock.now().UnixMilli(),
			ProducerID: pid, BaseSequence: seq[pid]}, rs)
		if err != nil {
			t.Fatal(err)
		}
		seq[pid] += int32(len(rs))
		if _, err := l.Append(b, AppendOptions{AssignOffsets: true}); err != nil {
			t.Fatal(err)
		}
	}
	end := func(pid int64, commit bool) int64 {
		t.Helper()
		res, err := l.AppendTxnMarker(TxnMarker{ProducerID: pid, Commit: commit}, 0)
		if err != nil {
			t.Fatal(err)
		}
		return res.FirstOffset
	}
	txn(1, "a", "c1", "b", "c1")
	commit1 := end(1, true)
	txn(2, "a", "aborted", "c", "aborted")
	abort2 := end(2, false)
	txn(3, "d", "aborted")
	txn(1, "b", "c2")
	abort3 := end(3, false)
	commit1b := end(1, true)
	// Later committed transactions of 2 and 3, so that their aborted
	// batches are not their last (which compaction keeps, empty).
	txn(2, "e", "c3")
	end(2, true)
	txn(3, "f", "c3")
	end(3, true)
	for i := 0; l.SegmentCount() < 6; i++ {
		appendKeyed(t, l, []kv{{key: fmt.Sprintf("x%d", i%3), value: []byte("filler")}}, clock.now().UnixMilli(), record.CodecNone)
	}
	settle(t, l)
	if got := l.LastStableOffset(); got != l.LogEndOffset() {
		t.Fatalf("last stable offset %d, want the log end %d", got, l.LogEndOffset())
	}
	// Offsets: 0 txn 1, 2 commit, 3 txn 2, 5 abort, 6 txn 3, 7 txn 1, 8 abort
	// (producer 1 open from 7), 9 commit.
	wantAborts := []AbortedTxn{{2, 3, abort2, 6}, {3, 6, abort3, 7}}
	wantAborted(t, l, 0, l.LastStableOffset(), wantAborts, "before cleaning")

	type view struct {
		values  map[string][]string
		markers map[int64]bool // marker offsets present
	}
	look := func() view {
		v := view{values: map[string][]string{}, markers: map[int64]bool{}}
		for _, b := range readAll(t, l, l.LogStartOffset(), 0) {
			if b.Control() {
				v.markers[b.BaseOffset()] = true
				continue
			}
			err := record.ForEachRecord(b, nil, func(_, _ int64, r *record.Record) error {
				v.values[string(r.Key)] = append(v.values[string(r.Key)], string(r.Value))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		return v
	}
	check := func(when string, markers map[int64]bool) {
		t.Helper()
		v := look()
		for k, want := range map[string]string{"a": "c1", "b": "c2", "e": "c3", "f": "c3"} {
			if got := v.values[k]; len(got) != 1 || got[0] != want {
				t.Fatalf("%s: key %s has %q, want only %q", when, k, got, want)
			}
		}
		for _, k := range []string{"c", "d"} {
			if got := v.values[k]; len(got) != 0 {
				t.Fatalf("%s: key %s of an aborted transaction has %q", when, k, got)
			}
		}
		for off, want := range markers {
			if v.markers[off] != want {
				t.Fatalf("%s: marker at %d present %v, want %v", when, off, v.markers[off], want)
			}
		}
	}
	all := map[int64]bool{commit1: true, abort2: true, abort3: true, commit1b: true}
	if _, err := m.CleanNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	check("first cleaning", all)
	wantAborted(t, l, 0, l.LastStableOffset(), wantAborts, "first cleaning keeps the aborted list with the markers")

	if _, err := m.CleanNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	check("second cleaning: markers get a horizon", all)
	wantAborted(t, l, 0, l.LastStableOffset(), nil, "second cleaning: nothing left to abort")

	clock.advance(9_999)
	if _, err := m.CleanNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	check("before the horizon", all)
	clock.advance(1)
	if st, err := m.RunCleaner(context.Background()); err != nil || st.Logs != 1 {
		t.Fatalf("the markers' horizon did not trigger a pass: %+v, %v", st, err)
	}
	// The first commit of producer 1 keeps its marker (a=c1 is left);
	// the second's records are left too (b=c2).
	check("after the horizon", map[int64]bool{commit1: true, abort2: false, abort3: false, commit1b: true})
}
