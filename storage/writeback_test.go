package storage

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gregor-io/gregor/protocol/record"
)

// TestWriteBehind: where appends are not fsynced before the ack, writeback
// of each segment's newest bytes is started every writebackBytes, over
// consecutive ranges from the segment's start; with fsync before the ack,
// or with writebackBytes 0, it is left to the kernel.
func TestWriteBehind(t *testing.T) {
	t.Parallel()
	const every = 8 << 10
	for _, tc := range []struct {
		name  string
		flush int64
		bytes int64
		want  bool
	}{
		{"page cache", math.MaxInt64, every, true},
		{"flush every 1000", 1000, every, true},
		{"durable", 1, every, false},
		{"off", math.MaxInt64, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, disk, _ := appendUnderFaultDisk(t, tc.flush, logEnv{writebackBytes: tc.bytes})
			disk.mu.Lock()
			calls := append([]rangeCall(nil), disk.writebacks...)
			disk.mu.Unlock()
			if !tc.want {
				if len(calls) != 0 {
					t.Fatalf("writeback started %d times, want none: %+v", len(calls), calls)
				}
				return
			}

			// Per segment file: ranges of at least every bytes, each
			// starting where the last ended, the first at 0, and
			// everything but the last (active) segment's tail covered
			// within every bytes of its end.
			next := consecutiveRanges(t, "writeback", calls, every)
			segs := *l.segs.Load()
			if len(segs) < 3 {
				t.Fatalf("%d segments, want several", len(segs))
			}
			for _, s := range segs {
				name := segmentFileName(s.base, logSuffix)
				if size := s.size.Load(); size-next[name] >= every || next[name] > size {
					t.Errorf("%s: %d bytes, writeback started up to %d", name, size, next[name])
				}
			}
		})
	}
}

// appendUnderFaultDisk opens a log with flush.messages flush and env in a
// new dir under a fault disk, with 16 KiB segments, and appends 40 batches
// of 3 records of 500 bytes, so that the log rolls several times. It
// returns the log (closed at the end of the test), the disk and the size of
// the largest batch.
func appendUnderFaultDisk(t *testing.T, flush int64, env logEnv) (*Log, *faultDisk, int) {
	t.Helper()
	dir := t.TempDir()
	disk := newFaultDisk(t, dir)
	cfg := testConfig()
	cfg.FlushMessages = flush
	l, err := openLog(dir, TopicPartition{Topic: "t", Partition: 0}, cfg, OpenState{}, nil, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	largest := 0
	for i := range 40 {
		b := makeBatch(t, 3, 500, 1000, uint64(i), record.CodecNone)
		largest = max(largest, len(b))
		if _, err := l.Append(b, AppendOptions{AssignOffsets: true}); err != nil {
			t.Fatal(err)
		}
	}
	return l, disk, largest
}

// consecutiveRanges checks that calls cover each file in ranges of at least
// least bytes, each starting where the file's last ended, the first at 0,
// and returns where each file's ranges end.
func consecutiveRanges(t *testing.T, what string, calls []rangeCall, least int64) map[string]int64 {
	t.Helper()
	next := map[string]int64{}
	for _, c := range calls {
		if c.off != next[c.name] || c.n < least {
			t.Fatalf("%s of %s [%d, +%d) after %d: want consecutive ranges of at least %d bytes",
				what, c.name, c.off, c.n, next[c.name], least)
		}
		next[c.name] = c.off + c.n
	}
	return next
}

// TestDropBehind: with a page-cache window, what was appended more than the
// window before the log's end is dropped from the page cache, over
// consecutive ranges of each segment from its start, and never the
// window's bytes; older bytes at the latest a mark's worth and a drop's
// (a quarter window) later, whether appends are fsynced or not; and a read behind the window drops what lies before it.
// Without a window nothing is dropped.
func TestDropBehind(t *testing.T) {
	t.Parallel()
	const keep = 8 << 10
	for _, tc := range []struct {
		name  string
		flush int64
		keep  int64
	}{
		{"page cache", math.MaxInt64, keep},
		{"durable", 1, keep},
		{"off", math.MaxInt64, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, disk, largest := appendUnderFaultDisk(t, tc.flush, logEnv{cache: newCacheWindow(tc.keep)})
			disk.mu.Lock()
			calls := append([]rangeCall(nil), disk.drops...)
			disk.mu.Unlock()
			if tc.keep == 0 {
				if len(calls) != 0 {
					t.Fatalf("page cache dropped %d times, want never: %+v", len(calls), calls)
				}
				return
			}
			next := consecutiveRanges(t, "drop", calls, 1)
			segs := *l.segs.Load()
			if len(segs) < 4 {
				t.Fatalf("%d segments, want several", len(segs))
			}
			// Segment by segment from the newest: never a byte of the last
			// keep dropped, and everything older than keep plus what a
			// quarter window and a batch add between passes dropped.
			newer := int64(0)
			for i := len(segs) - 1; i >= 0; i-- {
				s := segs[i]
				name := segmentFileName(s.base, logSuffix)
				size := s.size.Load()
				most := size - max(tc.keep-newer, 0)
				least := size - max(tc.keep+tc.keep/4+int64(largest)-newer, 0)
				if next[name] > max(most, 0) || next[name] < least {
					t.Errorf("%s: %d bytes, %d after it; dropped up to %d, want [%d, %d]", name, size, newer, next[name], least, most)
				}
				newer += size
			}
			if len(next) < 2 {
				t.Errorf("drops in %d segments, want older segments dropped whole: %+v", len(next), calls)
			}

			// A read behind the window drops what lies before it in its
			// segment (up to readBehindBytes); one inside the window
			// drops nothing.
			for _, rc := range []struct {
				offset int64
				want   bool
			}{{6, true}, {l.LogEndOffset() - 1, false}} {
				disk.mu.Lock()
				before := len(disk.drops)
				disk.mu.Unlock()
				r, err := l.Read(ReadOptions{Offset: rc.offset, MaxBytes: 1 << 20, MaxOffset: l.LogEndOffset()})
				if err != nil || r.Len == 0 || r.Pos == 0 {
					t.Fatalf("read at %d: [%d, +%d), %v; want bytes past the segment's start", rc.offset, r.Pos, r.Len, err)
				}
				want := rangeCall{filepath.Base(r.File().Name()), 0, r.Pos}
				r.Release()
				disk.mu.Lock()
				got := append([]rangeCall(nil), disk.drops[before:]...)
				disk.mu.Unlock()
				if rc.want && (len(got) != 1 || got[0] != want) {
					t.Errorf("read at %d: drops %+v, want %+v", rc.offset, got, want)
				}
				if !rc.want && len(got) != 0 {
					t.Errorf("read at %d, inside the window: drops %+v, want none", rc.offset, got)
				}
			}
		})
	}
}

// openWindowLogs opens n logs sharing window w, with flush.messages flush,
// writebackBytes wb and 1 MiB segments, each in a dir of its own under a
// fault disk; they close at the end of the test.
func openWindowLogs(t *testing.T, w *cacheWindow, flush, wb int64, n int) ([]*Log, []*faultDisk) {
	t.Helper()
	logs, disks := make([]*Log, n), make([]*faultDisk, n)
	for i := range logs {
		dir := t.TempDir()
		disks[i] = newFaultDisk(t, dir)
		cfg := testConfig()
		cfg.FlushMessages, cfg.SegmentBytes = flush, 1<<20
		l, err := openLog(dir, TopicPartition{Topic: "t", Partition: int32(i)}, cfg, OpenState{}, nil, logEnv{cache: w, writebackBytes: wb})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		logs[i] = l
	}
	return logs, disks
}

// TestCacheWindowSharedByLogs: the window is the newest bytes appended to any
// of the logs that share it, not a window per log: two logs taking turns
// each hold about half of it, together at least all of it.
func TestCacheWindowSharedByLogs(t *testing.T) {
	t.Parallel()
	const keep = 16 << 10
	w := newCacheWindow(keep)
	logs, disks := openWindowLogs(t, w, math.MaxInt64, 0, 2)
	largest := 0
	for i := range 80 {
		b := makeBatch(t, 3, 500, 1000, uint64(i), record.CodecNone)
		largest = max(largest, len(b))
		if _, err := logs[i%2].Append(b, AppendOptions{AssignOffsets: true}); err != nil {
			t.Fatal(err)
		}
	}
	total := int64(0)
	for i, l := range logs {
		appended := int64(0)
		for _, s := range *l.segs.Load() {
			appended += s.size.Load()
		}
		disks[i].mu.Lock()
		calls := append([]rangeCall(nil), disks[i].drops...)
		disks[i].mu.Unlock()
		dropped := int64(0)
		for _, n := range consecutiveRanges(t, "drop", calls, 1) {
			dropped += n
		}
		held := appended - dropped
		// Its half of the window, a mark's and a drop's worth of the
		// clock, and a batch.
		if most := int64(keep/2 + keep/4 + largest); held > most || held <= 0 {
			t.Errorf("log %d: %d bytes appended, %d dropped: holds %d, want (0, %d]", i, appended, dropped, held, most)
		}
		total += held
	}
	if total < keep-int64(largest) {
		t.Errorf("the logs hold %d bytes together, want at least the window's %d less a batch", total, keep)
	}
}

// TestCacheWindowIdleLogs: logs that append once and never again (a
// producer visiting many partitions in turn) are held to the window too:
// an append that moves the clock past them wakes the keeper, which drops
// each such log's pages whole, leaves the window's newest bytes alone and
// stops tracking a log with nothing left to drop.
func TestCacheWindowIdleLogs(t *testing.T) {
	t.Parallel()
	const keep = 16 << 10
	w := newCacheWindow(keep)
	logs, disks := openWindowLogs(t, w, math.MaxInt64, 0, 12)
	// Two batches to each log in turn, and the clock after each log's.
	ends := make([]int64, len(logs))
	for i, l := range logs {
		for j := range 2 {
			b := makeBatch(t, 3, 500, 1000, uint64(2*i+j), record.CodecNone)
			if _, err := l.Append(b, AppendOptions{AssignOffsets: true}); err != nil {
				t.Fatal(err)
			}
		}
		ends[i] = w.clock.Load()
	}
	if len(w.kick) != 1 {
		t.Fatal("the clock moved past the first logs and the keeper was not woken")
	}
	<-w.kick
	w.expire()

	horizon := w.clock.Load() - keep
	starts := append([]int64{0}, ends[:len(ends)-1]...)
	idle, held := 0, 0
	for i, l := range logs {
		disks[i].mu.Lock()
		calls := append([]rangeCall(nil), disks[i].drops...)
		disks[i].mu.Unlock()
		name := segmentFileName(0, logSuffix)
		size := (*l.segs.Load())[0].size.Load()
		dropped := consecutiveRanges(t, "drop", calls, 1)[name]
		switch {
		case ends[i] <= horizon:
			idle++
			if dropped != size {
				t.Errorf("log %d, appended before the window: dropped %d of its %d bytes, want all", i, dropped, size)
			}
			if l.cacheAt >= 0 {
				t.Errorf("log %d: nothing left to drop, still in the keeper's heap at %d", i, l.cacheAt)
			}
		case starts[i] >= horizon:
			held++
			if dropped != 0 {
				t.Errorf("log %d, inside the window: dropped %d bytes, want none", i, dropped)
			}
			if l.cacheAt < 0 {
				t.Errorf("log %d holds pages and is not in the keeper's heap", i)
			}
		}
	}
	if idle < 4 || held < 3 {
		t.Fatalf("%d logs behind the window and %d inside it, want several of each", idle, held)
	}
	least := int64(math.MaxInt64)
	for _, l := range logs {
		if l.cacheAt >= 0 {
			least = min(least, l.cacheKey)
		}
	}
	if got := w.due.Load(); got != least || got <= horizon {
		t.Errorf("keeper due at %d, want the least key of the logs it tracks, %d, past the window's start %d", got, least, horizon)
	}
}

// TestWriteBehindColdLogs: in page-cache mode, a log that holds no pages in
// the window (it was idle, or the keeper dropped what it had) starts
// writeback of an append of at least cacheDropMin at once, not after
// writebackBytes: a producer visiting thousands of partitions in turn
// brings each a batch at a time, and pages still dirty when the window
// moves past them cannot be dropped. A log already holding pages, or an
// append below cacheDropMin, waits for writebackBytes as before.
func TestWriteBehindColdLogs(t *testing.T) {
	t.Parallel()
	w := newCacheWindow(1 << 20)
	logs, disks := openWindowLogs(t, w, math.MaxInt64, 1<<30, 2)
	appendTo := func(l *Log, valueSize int, tag uint64) int64 {
		t.Helper()
		if _, err := l.Append(makeBatch(t, 1, valueSize, 1000, tag, record.CodecNone), AppendOptions{AssignOffsets: true}); err != nil {
			t.Fatal(err)
		}
		segs := *l.segs.Load()
		return segs[len(segs)-1].size.Load()
	}
	writebacks := func(i int) []rangeCall {
		disks[i].mu.Lock()
		defer disks[i].mu.Unlock()
		return append([]rangeCall(nil), disks[i].writebacks...)
	}

	// Log 0: a large append to a cold log is written back at once; the
	// next one, to a log now holding pages, is not.
	first := appendTo(logs[0], cacheDropMin, 1)
	appendTo(logs[0], cacheDropMin, 2)
	want := []rangeCall{{segmentFileName(0, logSuffix), 0, first}}
	if got := writebacks(0); len(got) != 1 || got[0] != want[0] {
		t.Errorf("two large appends to a cold log: writebacks %+v, want %+v", got, want)
	}
	// Log 1: a small append to a cold log is left alone.
	appendTo(logs[1], 100, 3)
	if got := writebacks(1); len(got) != 0 {
		t.Errorf("a small append to a cold log: writebacks %+v, want none", got)
	}

	// Once the window has moved past log 0 and the keeper dropped its
	// pages, it is cold again: its next large append starts writeback of
	// everything pending, the second append's bytes too.
	for i := range 20 {
		appendTo(logs[1], cacheDropMin, uint64(10+i))
	}
	<-w.kick
	w.expire()
	if len(logs[0].marks) != 0 {
		t.Fatalf("log 0 still holds %d marks after the keeper's visit", len(logs[0].marks))
	}
	third := appendTo(logs[0], cacheDropMin, 5)
	want = append(want, rangeCall{segmentFileName(0, logSuffix), first, third - first})
	if got := writebacks(0); !slices.Equal(got, want) {
		t.Errorf("a large append after the keeper dropped the log: writebacks %+v, want %+v", got, want)
	}

	// Durable logs are fsynced before the ack and never start writeback.
	durable, ddisks := openWindowLogs(t, newCacheWindow(1<<20), 1, 1<<30, 1)
	appendTo(durable[0], cacheDropMin, 4)
	ddisks[0].mu.Lock()
	defer ddisks[0].mu.Unlock()
	if len(ddisks[0].writebacks) != 0 {
		t.Errorf("durable log: writebacks %+v, want none", ddisks[0].writebacks)
	}
}

// TestFreePageReporting reads a virtio balloon's features from sysfs: only
// a balloon (device 0x0005) with feature bit 5 reports free pages.
func TestFreePageReporting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		devs map[string][2]string // virtioN: device, features
		want bool
	}{
		{"reporting balloon", map[string][2]string{"virtio0": {"0x0002", "0000010000"}, "virtio1": {"0x0005\n", "0110010000\n"}}, true},
		{"balloon without reporting", map[string][2]string{"virtio0": {"0x0005", "0110000000"}}, false},
		{"bit 5 of another device", map[string][2]string{"virtio0": {"0x0002", "0000010000"}}, false},
		{"no virtio", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			for name, d := range tc.devs {
				dir := filepath.Join(root, "sys/bus/virtio/devices", name)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				for file, v := range map[string]string{"device": d[0], "features": d[1]} {
					if err := os.WriteFile(filepath.Join(dir, file), []byte(v), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			if got := FreePageReporting(root); got != tc.want {
				t.Errorf("FreePageReporting = %v, want %v", got, tc.want)
			}
		})
	}
}
