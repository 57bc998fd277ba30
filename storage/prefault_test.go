package storage

import (
	"bytes"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gregor-io/gregor/protocol/record"
)

const testAhead = 64 << 10

// prefaultLog opens a log in a new dir with 1 MiB segments and a
// prefaulter of testAhead whose requests the test drains itself. The log
// is closed at the end of the test.
func prefaultLog(t *testing.T, p *prefaulter) (*Log, Config) {
	t.Helper()
	cfg := testConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.FlushMessages = math.MaxInt64
	l, err := openLog(t.TempDir(), TopicPartition{Topic: "t", Partition: 0}, cfg, OpenState{}, nil, logEnv{prefault: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, cfg
}

// appendBatches appends n batches of 3 records of 500 bytes and returns
// them as appended.
func appendBatches(t *testing.T, l *Log, n int, check func()) []record.Batch {
	t.Helper()
	var out []record.Batch
	for i := range n {
		b := makeBatch(t, 3, 500, 1000, uint64(i), record.CodecNone)
		if _, err := l.Append(b, AppendOptions{AssignOffsets: true}); err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
		if check != nil {
			check()
		}
	}
	return out
}

// TestPrefault: once a log took testAhead bytes, its active segment's file
// reaches at least half of testAhead (and at most testAhead) past the log's
// end, within segment.bytes; the tail's pages are asked for in consecutive
// ranges; the log's share of the budget is its tail; sealed segments and a
// closed log's files end at their last batch, and the log reads back and
// opens again as written.
func TestPrefault(t *testing.T) {
	t.Parallel()
	p := newPrefaulter(testAhead)
	l, cfg := prefaultLog(t, p)
	check := func() {
		t.Helper()
		segs := *l.segs.Load()
		for i, s := range segs {
			size, file := s.size.Load(), fileSize(t, s.logPath)
			if i < len(segs)-1 || l.appended < testAhead {
				if file != size {
					t.Fatalf("%s: file of %d bytes, %d in batches (sealed or log not hot)", s.logPath, file, size)
				}
				continue
			}
			if low := min(size+testAhead/2, cfg.SegmentBytes); file < low || file > max(size+testAhead, size) {
				t.Fatalf("%s: file of %d bytes with %d in batches, want [%d, %d]", s.logPath, file, size, low, size+testAhead)
			}
			if l.tail != file-size || p.tails.Load() != l.tail {
				t.Fatalf("tail share %d, budget use %d, want %d", l.tail, p.tails.Load(), file-size)
			}
		}
	}
	want := appendBatches(t, l, 2000, check)
	if n := len(*l.segs.Load()); n < 3 {
		t.Fatalf("%d segments, want several", n)
	}

	var calls []rangeCall
	for len(p.reqs) > 0 {
		r := <-p.reqs
		calls = append(calls, rangeCall{filepath.Base(r.seg.logPath), r.off, r.n})
	}
	if len(calls) == 0 {
		t.Fatal("no prefault asked for")
	}
	// Each segment's ranges run on from where the last ended; the first
	// starts at the segment's end at the time.
	first := map[string]int64{}
	for _, c := range calls {
		if _, ok := first[c.name]; !ok {
			first[c.name] = c.off
		}
	}
	next := map[string]int64{}
	for _, c := range calls {
		if n, ok := next[c.name]; (ok && c.off != n) || c.n <= 0 {
			t.Fatalf("prefault of %s [%d, +%d) after %d: want consecutive ranges", c.name, c.off, c.n, n)
		}
		next[c.name] = c.off + c.n
	}

	equalBatches(t, readAll(t, l, 0, 0), want)
	leo := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, s := range *l.segs.Load() {
		if size, file := s.size.Load(), fileSize(t, s.logPath); size != file {
			t.Fatalf("closed: %s file of %d bytes, %d in batches", s.logPath, file, size)
		}
	}
	if p.tails.Load() != 0 {
		t.Fatalf("closed: budget use %d, want 0", p.tails.Load())
	}
	l2, err := openLog(l.dir, l.tp, cfg, OpenState{Clean: true}, nil, logEnv{prefault: p})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if l2.LogEndOffset() != leo {
		t.Fatalf("clean open: log end %d, want %d", l2.LogEndOffset(), leo)
	}
	want = append(want, appendBatches(t, l2, 10, nil)...)
	equalBatches(t, readAll(t, l2, 0, 0), want)
}

// TestPrefaultCrash: a log that stops without closing leaves its active
// segment's tail of zeros; recovery cuts it without calling it damage, and
// a sealed segment's tail of zeros (a crash between extending and sealing)
// does not cost the segments after it. A tail that is not all zeros still
// counts as damage.
func TestPrefaultCrash(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		garbage bool
	}{{"zeros", false}, {"garbage", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newPrefaulter(testAhead)
			l, cfg := prefaultLog(t, p)
			want := appendBatches(t, l, 1500, nil)
			segs := *l.segs.Load()
			active := segs[len(segs)-1]
			if fileSize(t, active.logPath) <= active.size.Load() {
				t.Fatal("active segment not extended")
			}
			// Stop as a killed process does: no trim, no flush.
			l.mu.Lock()
			l.mu.closed = true
			l.mu.Unlock()
			l.closeFiles()

			sealed := segs[0]
			tail := make([]byte, 8<<10)
			if tc.garbage {
				tail[100] = 1
			}
			f, err := os.OpenFile(sealed.logPath, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.WriteAt(tail, sealed.size.Load())
			f.Close()
			if err != nil {
				t.Fatal(err)
			}

			var logs bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, nil))
			l2, err := openLog(l.dir, l.tp, cfg, OpenState{RecoveryPoint: 0}, logger, logEnv{prefault: p})
			if err != nil {
				t.Fatal(err)
			}
			defer l2.Close()
			damaged := strings.Contains(logs.String(), "damaged")
			if tc.garbage {
				// Only the garbage goes: the segments after it hold
				// valid batches and stay.
				if !damaged || len(*l2.segs.Load()) != len(segs) {
					t.Fatalf("garbage after a sealed segment: %d of %d segments left, log:\n%s",
						len(*l2.segs.Load()), len(segs), logs.String())
				}
				equalBatches(t, readAll(t, l2, 0, 0), want)
				return
			}
			if damaged {
				t.Fatalf("recovery called a tail of zeros damage:\n%s", logs.String())
			}
			for _, s := range *l2.segs.Load() {
				if size, file := s.size.Load(), fileSize(t, s.logPath); size != file {
					t.Fatalf("recovered: %s file of %d bytes, %d in batches", s.logPath, file, size)
				}
			}
			equalBatches(t, readAll(t, l2, 0, 0), want)
		})
	}
}

// TestPrefaultBudget: logs sharing a prefaulter keep tails within its
// budget; a tail given back (the log closed) lets another log extend.
func TestPrefaultBudget(t *testing.T) {
	t.Parallel()
	p := newPrefaulter(testAhead)
	p.budget = testAhead
	a, _ := prefaultLog(t, p)
	b, _ := prefaultLog(t, p)
	appendBatches(t, a, 100, nil)
	appendBatches(t, b, 100, nil)
	if a.tail == 0 || b.tail != 0 || p.tails.Load() != a.tail {
		t.Fatalf("tails %d and %d, budget use %d: want only the first log's", a.tail, b.tail, p.tails.Load())
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	appendBatches(t, b, 1, nil)
	if b.tail == 0 || p.tails.Load() != b.tail {
		t.Fatalf("after the first log closed: tail %d, budget use %d", b.tail, p.tails.Load())
	}
}

// TestPrefaultTruncate: truncation cuts an extended segment's tail with its
// batches, and appends after it extend again from the new end.
func TestPrefaultTruncate(t *testing.T) {
	t.Parallel()
	p := newPrefaulter(testAhead)
	l, _ := prefaultLog(t, p)
	want := appendBatches(t, l, 200, nil)
	if err := l.TruncateTo(150 * 3); err != nil {
		t.Fatal(err)
	}
	segs := *l.segs.Load()
	active := segs[len(segs)-1]
	if size, file := active.size.Load(), fileSize(t, active.logPath); size != file || l.tail != 0 || p.tails.Load() != 0 {
		t.Fatalf("truncated: file of %d bytes, %d in batches, tail share %d, budget use %d", file, size, l.tail, p.tails.Load())
	}
	want = append(want[:150], appendBatches(t, l, 20, nil)...)
	if size, file := active.size.Load(), fileSize(t, active.logPath); file < size+testAhead/2 {
		t.Fatalf("appends after truncation: file of %d bytes, %d in batches, want extended", file, size)
	}
	equalBatches(t, readAll(t, l, 0, 0), want)
}
