package storage

import (
	"errors"
	"math"
	"testing"

	"github.com/gregor-io/gregor/protocol/record"
)

// idemBatch builds an idempotent producer batch of n records.
func idemBatch(t testing.TB, pid int64, epoch int16, seq int32, n int) []byte {
	t.Helper()
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{OffsetDelta: int32(i), Value: []byte("v")}
	}
	b, err := record.Build(nil, record.BatchHeader{
		BaseTimestamp: 100, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq,
	}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestIdempotentProducerChecks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := openTestLog(t, dir, testConfig(), OpenState{})
	app := func(pid int64, epoch int16, seq int32, n int) (AppendResult, error) {
		return l.Append(idemBatch(t, pid, epoch, seq, n), AppendOptions{AssignOffsets: true})
	}
	mustAppend := func(pid int64, epoch int16, seq int32, n int, wantFirst int64, wantDup bool) {
		t.Helper()
		res, err := app(pid, epoch, seq, n)
		if err != nil {
			t.Fatalf("append pid %d epoch %d seq %d: %v", pid, epoch, seq, err)
		}
		if res.FirstOffset != wantFirst || res.Duplicate != wantDup {
			t.Fatalf("append pid %d epoch %d seq %d: first %d duplicate %v, want %d %v",
				pid, epoch, seq, res.FirstOffset, res.Duplicate, wantFirst, wantDup)
		}
	}
	mustFail := func(pid int64, epoch int16, seq int32, n int, want error) {
		t.Helper()
		if _, err := app(pid, epoch, seq, n); !errors.Is(err, want) {
			t.Fatalf("append pid %d epoch %d seq %d: %v, want %v", pid, epoch, seq, err, want)
		}
	}
	mustAppend(7, 0, 0, 3, 0, false)            // seq 0-2 at offsets 0-2
	mustAppend(7, 0, 3, 2, 3, false)            // seq 3-4 at 3-4
	mustAppend(7, 0, 0, 3, 0, true)             // retry of the first batch: its offsets
	mustAppend(7, 0, 3, 2, 3, true)             // retry of the second
	mustFail(7, 0, 6, 1, ErrOutOfOrderSequence) // gap
	mustFail(7, 0, 4, 1, ErrOutOfOrderSequence) // overlap, not a known batch
	mustAppend(8, 0, 42, 1, 5, false)           // unknown producer: any sequence
	mustFail(7, 1, 5, 1, ErrOutOfOrderSequence) // new epoch must start at 0
	mustAppend(7, 1, 0, 1, 6, false)            // bumped epoch
	mustFail(7, 0, 5, 1, ErrInvalidProducerEpoch)
	if l.LogEndOffset() != 7 {
		t.Fatalf("log end %d, want 7: rejected and duplicate batches must not be appended", l.LogEndOffset())
	}
	// Only the last five batches are remembered for duplicates.
	for i := int32(1); i <= 6; i++ {
		mustAppend(7, 1, i, 1, 6+int64(i), false)
	}
	mustAppend(7, 1, 2, 1, 8, true)
	mustFail(7, 1, 1, 1, ErrOutOfOrderSequence)
	// Sequences wrap after MaxInt32.
	mustAppend(9, 0, math.MaxInt32-1, 2, l.LogEndOffset(), false)
	mustAppend(9, 0, 0, 1, l.LogEndOffset(), false)

	// The state survives a clean restart (snapshot) and an unclean one
	// (replay from the log).
	leo := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, clean := range []bool{true, false} {
		l = openTestLog(t, dir, testConfig(), OpenState{Clean: clean, RecoveryPoint: leo})
		if res, err := l.Append(idemBatch(t, 7, 1, 6, 1), AppendOptions{AssignOffsets: true}); err != nil || !res.Duplicate || res.FirstOffset != 12 {
			t.Fatalf("clean=%v: retry after restart: %+v %v, want duplicate at 12", clean, res, err)
		}
		if _, err := l.Append(idemBatch(t, 7, 0, 7, 1), AppendOptions{AssignOffsets: true}); !errors.Is(err, ErrInvalidProducerEpoch) {
			t.Fatalf("clean=%v: fenced epoch after restart: %v", clean, err)
		}
		if clean {
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		} else {
			crash(l)
		}
	}
	// After a truncation the state is what the remaining log says.
	l = openTestLog(t, dir, testConfig(), OpenState{})
	if err := l.TruncateTo(5); err != nil {
		t.Fatal(err)
	}
	if res, err := l.Append(idemBatch(t, 7, 0, 5, 1), AppendOptions{AssignOffsets: true}); err != nil || res.Duplicate {
		t.Fatalf("append after truncation: %+v %v, want a fresh append of seq 5", res, err)
	}
	l.Close()
}

func TestProducerSnapshotRoundTripAndDamage(t *testing.T) {
	t.Parallel()
	ps := newProducerState()
	for pid := int64(0); pid < 20; pid++ {
		for i := int32(0); i < int32(pid%7)+1; i++ {
			b := record.Batch(idemBatch(t, pid, int16(pid%3), i*2, 2))
			b.SetBaseOffset(pid*100 + int64(i)*2)
			ps.apply(b, nil)
		}
	}
	buf := ps.encode()
	got, err := decodeProducerSnapshot(buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.entries) != len(ps.entries) {
		t.Fatalf("%d producers decoded, want %d", len(got.entries), len(ps.entries))
	}
	for pid, e := range ps.entries {
		g := got.entries[pid]
		if g == nil || g.epoch != e.epoch || len(g.batches) != len(e.batches) {
			t.Fatalf("producer %d: got %+v, want %+v", pid, g, e)
		}
		for i := range e.batches {
			if g.batches[i] != e.batches[i] {
				t.Fatalf("producer %d batch %d: got %+v, want %+v", pid, i, g.batches[i], e.batches[i])
			}
		}
	}
	for i := range buf {
		bad := append([]byte(nil), buf...)
		bad[i] ^= 0x21
		if _, err := decodeProducerSnapshot(bad); err == nil {
			t.Fatalf("flipped byte %d accepted", i)
		}
		if _, err := decodeProducerSnapshot(buf[:i]); err == nil {
			t.Fatalf("snapshot cut at %d accepted", i)
		}
	}
}
