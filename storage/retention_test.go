package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gregor-io/gregor/protocol/record"
)

// fakeClock is a clock that moves only when a test moves it.
type fakeClock struct{ ms atomic.Int64 }

func newFakeClock(ms int64) *fakeClock {
	c := &fakeClock{}
	c.ms.Store(ms)
	return c
}

func (c *fakeClock) now() time.Time   { return time.UnixMilli(c.ms.Load()) }
func (c *fakeClock) advance(ms int64) { c.ms.Add(ms) }
func (c *fakeClock) set(ms int64)     { c.ms.Store(ms) }

// retentionConfig is testConfig with retention off, for tests to turn on
// one rule at a time.
func retentionConfig() Config {
	c := testConfig()
	c.RetentionMs = -1
	c.RetentionBytes = -1
	c.FileDeleteDelayMs = 0
	return c
}

// openRetentionManager opens a Manager on a fake clock whose background
// retention never runs by itself during a test.
func openRetentionManager(t *testing.T, dir string, clock *fakeClock) *Manager {
	t.Helper()
	cfg := DefaultManagerConfig(dir)
	cfg.Now = clock.now
	cfg.RetentionCheckInterval = time.Hour
	m, err := OpenManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// fillLog appends count batches of two 400-byte records, batch i with
// timestamps tsOf(i) and tsOf(i)+1, and moves the high watermark to the end.
func fillLog(t *testing.T, l *Log, count int, tsOf func(i int) int64) *appended {
	t.Helper()
	var a appended
	for i := 0; i < count; i++ {
		a.add(t, l, makeBatch(t, 2, 400, tsOf(i), uint64(i), record.CodecNone))
	}
	l.SetHighWatermark(l.LogEndOffset())
	return &a
}

// segmentInfo is a segment's base, size and largest timestamp, taken from
// what the test appended rather than from the log's own bookkeeping.
type segmentInfo struct {
	base, size, maxTS int64
	firstBatch        int // index in appended.batches
}

func segmentsOf(t *testing.T, l *Log, a *appended) []segmentInfo {
	t.Helper()
	var out []segmentInfo
	for _, s := range *l.segs.Load() {
		out = append(out, segmentInfo{base: s.base, maxTS: -1, firstBatch: -1})
	}
	for i, b := range a.batches {
		k := sort.Search(len(out), func(k int) bool { return out[k].base > b.BaseOffset() }) - 1
		if out[k].firstBatch < 0 {
			out[k].firstBatch = i
		}
		out[k].size += int64(len(b))
		out[k].maxTS = max(out[k].maxTS, b.MaxTimestamp())
	}
	return out
}

// checkStartsAt checks that the log starts at segment first of segs and
// that it reads back exactly the batches from there on.
func checkStartsAt(t *testing.T, l *Log, a *appended, segs []segmentInfo, first int) {
	t.Helper()
	want := segs[first]
	if got := l.LogStartOffset(); got != want.base {
		t.Fatalf("log start %d, want %d (base of segment %d)", got, want.base, first)
	}
	if got := l.SegmentCount(); got != len(segs)-first {
		t.Fatalf("%d segments left, want %d", got, len(segs)-first)
	}
	if want.base > 0 {
		if _, err := l.Read(ReadOptions{Offset: want.base - 1, MaxBytes: 100}); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("read below the log start: %v, want ErrOffsetOutOfRange", err)
		}
	}
	equalBatches(t, readAll(t, l, want.base, 0), a.batches[want.firstBatch:])
}

func TestRetentionByTime(t *testing.T) {
	t.Parallel()
	const retention = 50_000
	clock := newFakeClock(0)
	m := openRetentionManager(t, t.TempDir(), clock)
	defer m.Close()
	cfg := retentionConfig()
	cfg.RetentionMs = retention
	l, err := m.Create(TopicPartition{Topic: "time", Partition: 0}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Batch i is stamped 1000 ms after batch i-1.
	a := fillLog(t, l, 200, func(i int) int64 { return 1_000_000 + int64(i)*1000 })
	segs := segmentsOf(t, l, a)
	if len(segs) < 6 {
		t.Fatalf("only %d segments; the test needs more", len(segs))
	}

	// Nothing is old enough yet.
	clock.set(segs[0].maxTS + retention)
	if n, err := m.RunRetention(); err != nil || n != 0 {
		t.Fatalf("retention at the edge of segment 0's age deleted %d (err %v), want 0", n, err)
	}
	// One millisecond later segment 0 is expired, segment 1 not.
	clock.advance(1)
	if n, err := m.RunRetention(); err != nil || n != 1 {
		t.Fatalf("deleted %d segments (err %v), want 1", n, err)
	}
	checkStartsAt(t, l, a, segs, 1)

	// Past segment 3's newest record: segments 1 to 3 go.
	clock.set(segs[3].maxTS + retention + 1)
	if n, err := m.RunRetention(); err != nil || n != 3 {
		t.Fatalf("deleted %d segments (err %v), want 3", n, err)
	}
	checkStartsAt(t, l, a, segs, 4)

	// Far in the future every segment is expired, but the active one stays.
	clock.set(segs[len(segs)-1].maxTS + 10*retention)
	if _, err := m.RunRetention(); err != nil {
		t.Fatal(err)
	}
	checkStartsAt(t, l, a, segs, len(segs)-1)
	if got := l.LogEndOffset(); got != a.batches[len(a.batches)-1].NextOffset() {
		t.Fatalf("log end %d changed", got)
	}
}

func TestRetentionByTimeStopsAtFirstKeptSegment(t *testing.T) {
	t.Parallel()
	const retention = 50_000
	clock := newFakeClock(0)
	m := openRetentionManager(t, t.TempDir(), clock)
	defer m.Close()
	cfg := retentionConfig()
	cfg.RetentionMs = retention
	l, err := m.Create(TopicPartition{Topic: "order", Partition: 0}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// All batches are old except one in the middle, stamped far later.
	const newBatch = 60
	a := fillLog(t, l, 200, func(i int) int64 {
		if i == newBatch {
			return 9_000_000
		}
		return 1_000_000 + int64(i)
	})
	segs := segmentsOf(t, l, a)
	holder := sort.Search(len(segs), func(k int) bool { return segs[k].base > a.batches[newBatch].BaseOffset() }) - 1
	if holder < 1 || holder >= len(segs)-2 {
		t.Fatalf("the recent batch is in segment %d of %d; the test needs one in the middle", holder, len(segs))
	}
	clock.set(5_000_000)
	if n, err := m.RunRetention(); err != nil || n != holder {
		t.Fatalf("deleted %d segments (err %v), want the %d before the recent one", n, err, holder)
	}
	checkStartsAt(t, l, a, segs, holder)
}

func TestRetentionBySize(t *testing.T) {
	t.Parallel()
	clock := newFakeClock(0)
	m := openRetentionManager(t, t.TempDir(), clock)
	defer m.Close()
	cfg := retentionConfig()
	cfg.RetentionBytes = 40 << 10
	l, err := m.Create(TopicPartition{Topic: "size", Partition: 0}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	a := fillLog(t, l, 300, func(i int) int64 { return int64(i) })
	segs := segmentsOf(t, l, a)
	// The expected count by the rule itself: the bytes over the limit must
	// cover a segment's whole size for it to go.
	var size int64
	for _, s := range segs {
		size += s.size
	}
	if size != l.Size() {
		t.Fatalf("log size %d, appended %d", l.Size(), size)
	}
	over, want := size-cfg.RetentionBytes, 0
	for want < len(segs)-1 && over >= segs[want].size {
		over -= segs[want].size
		want++
	}
	if n, err := m.RunRetention(); err != nil || n != want {
		t.Fatalf("deleted %d segments (err %v), want %d", n, err, want)
	}
	checkStartsAt(t, l, a, segs, want)
	if got := l.Size(); got < cfg.RetentionBytes || got > cfg.RetentionBytes+cfg.SegmentBytes {
		t.Fatalf("log size %d after retention, want within [%d, %d]", got, cfg.RetentionBytes, cfg.RetentionBytes+cfg.SegmentBytes)
	}
	// A second pass finds nothing more to delete.
	if n, err := m.RunRetention(); err != nil || n != 0 {
		t.Fatalf("second pass deleted %d (err %v)", n, err)
	}
	// Appending more keeps the log within the bound after each pass.
	for round := 0; round < 5; round++ {
		for i := 0; i < 40; i++ {
			a.add(t, l, makeBatch(t, 2, 400, int64(i), uint64(i), record.CodecNone))
		}
		l.SetHighWatermark(l.LogEndOffset())
		if _, err := m.RunRetention(); err != nil {
			t.Fatal(err)
		}
		if got := l.Size(); got < cfg.RetentionBytes || got > cfg.RetentionBytes+cfg.SegmentBytes {
			t.Fatalf("round %d: log size %d, want within [%d, %d]", round, got, cfg.RetentionBytes, cfg.RetentionBytes+cfg.SegmentBytes)
		}
	}
}

func TestRetentionKeeps(t *testing.T) {
	t.Parallel()
	clock := newFakeClock(1 << 40) // everything is long expired
	m := openRetentionManager(t, t.TempDir(), clock)
	defer m.Close()
	for name, tweak := range map[string]func(*Config){
		"no delete policy": func(c *Config) { c.CleanupDelete = false },
		"unlimited":        func(c *Config) { c.RetentionMs, c.RetentionBytes = -1, -1 },
		"below the limit":  func(c *Config) { c.RetentionMs, c.RetentionBytes = -1, 1<<30 },
	} {
		cfg := retentionConfig()
		cfg.RetentionMs, cfg.RetentionBytes = 1, 0
		tweak(&cfg)
		l, err := m.Create(TopicPartition{Topic: name, Partition: 0}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		fillLog(t, l, 100, func(i int) int64 { return int64(i) })
	}
	// Above the high watermark nothing goes, however old.
	cfg := retentionConfig()
	cfg.RetentionMs = 1
	hwLog, err := m.Create(TopicPartition{Topic: "hw", Partition: 0}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	a := fillLog(t, hwLog, 100, func(i int) int64 { return int64(i) })
	segs := segmentsOf(t, hwLog, a)
	hwLog.SetHighWatermark(segs[2].base - 2) // the last batch of segment 1

	counts := map[*Log]int{}
	for _, l := range m.Logs() {
		counts[l] = l.SegmentCount()
	}
	if _, err := m.RunRetention(); err != nil {
		t.Fatal(err)
	}
	for _, l := range m.Logs() {
		want := counts[l]
		if l == hwLog {
			want-- // only segment 0 ends below the high watermark
		}
		if got := l.SegmentCount(); got != want {
			t.Errorf("%s: %d segments after retention, want %d", l.TopicPartition().Topic, got, want)
		}
	}
	if got := hwLog.LogStartOffset(); got != segs[1].base {
		t.Errorf("hw: log start %d, want %d", got, segs[1].base)
	}
}

// deletedFiles lists the .deleted files in dir.
func deletedFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+deletedSuffix))
	if err != nil {
		t.Fatal(err)
	}
	for i := range m {
		m[i] = filepath.Base(m[i])
	}
	sort.Strings(m)
	return m
}

func TestDeletedFilesStayForTheDelay(t *testing.T) {
	t.Parallel()
	clock := newFakeClock(1 << 40)
	m := openRetentionManager(t, t.TempDir(), clock)
	defer m.Close()
	cfg := retentionConfig()
	cfg.RetentionMs = 1000
	cfg.FileDeleteDelayMs = 60_000
	l, err := m.Create(TopicPartition{Topic: "delay", Partition: 0}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	a := fillLog(t, l, 40, func(i int) int64 { return int64(i) })
	segs := segmentsOf(t, l, a)
	cfg.RetentionMs = -1 // delete by DeleteBelow first
	if err := l.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if err := l.DeleteBelow(segs[1].base); err != nil {
		t.Fatal(err)
	}
	want := []string{
		segmentFileName(0, indexSuffix+deletedSuffix),
		segmentFileName(0, logSuffix+deletedSuffix),
		segmentFileName(0, timeIndexSuffix+deletedSuffix),
	}
	if got := deletedFiles(t, l.Dir()); !slices.Equal(got, want) {
		t.Fatalf("after DeleteBelow: deleted files %v, want %v", got, want)
	}
	if _, err := os.Stat(filepath.Join(l.Dir(), segmentFileName(0, logSuffix))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("segment 0's .log still there under its name: %v", err)
	}

	clock.advance(30_000)
	cfg.RetentionMs = 1000
	if err := l.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if n, err := m.RunRetention(); err != nil || n != len(segs)-2 {
		t.Fatalf("retention deleted %d (err %v), want %d", n, err, len(segs)-2)
	}
	if got := len(deletedFiles(t, l.Dir())); got != 3*(len(segs)-1) {
		t.Fatalf("%d deleted files, want %d", got, 3*(len(segs)-1))
	}
	// Segment 0's delay ends 30 s from now, the others' 60 s.
	clock.advance(29_999)
	if _, err := m.RunRetention(); err != nil {
		t.Fatal(err)
	}
	if got := len(deletedFiles(t, l.Dir())); got != 3*(len(segs)-1) {
		t.Fatalf("1 ms before segment 0's delay ends: %d deleted files, want %d", got, 3*(len(segs)-1))
	}
	clock.advance(1)
	if _, err := m.RunRetention(); err != nil {
		t.Fatal(err)
	}
	if got := len(deletedFiles(t, l.Dir())); got != 3*(len(segs)-2) {
		t.Fatalf("when segment 0's delay ended: %d deleted files, want %d", got, 3*(len(segs)-2))
	}
	clock.advance(30_000)
	if _, err := m.RunRetention(); err != nil {
		t.Fatal(err)
	}
	if got := deletedFiles(t, l.Dir()); len(got) != 0 {
		t.Fatalf("after every delay: deleted files %v left", got)
	}
}

func TestDeletedFilesRemovedByTheBackgroundTask(t *testing.T) {
	t.Parallel()
	cfg := DefaultManagerConfig(t.TempDir())
	cfg.RetentionCheckInterval = time.Millisecond
	m, err := OpenManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	lcfg := retentionConfig()
	lcfg.RetentionBytes = 0
	lcfg.FileDeleteDelayMs = 10
	l, err := m.Create(TopicPartition{Topic: "bg", Partition: 0}, lcfg)
	if err != nil {
		t.Fatal(err)
	}
	fillLog(t, l, 60, func(i int) int64 { return int64(i) })
	deadline := time.Now().Add(10 * time.Second)
	for l.SegmentCount() > 1 || len(deletedFiles(t, l.Dir())) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: %d segments, deleted files %v", l.SegmentCount(), deletedFiles(t, l.Dir()))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRetentionAcrossReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clock := newFakeClock(1 << 40)
	m := openRetentionManager(t, dir, clock)
	cfg := retentionConfig()
	cfg.RetentionMs = 1000
	cfg.FileDeleteDelayMs = 60_000
	tp := TopicPartition{Topic: "reopen", Partition: 0}
	l, err := m.Create(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	a := fillLog(t, l, 100, func(i int) int64 { return int64(i) })
	segs := segmentsOf(t, l, a)
	if n, err := m.RunRetention(); err != nil || n != len(segs)-1 {
		t.Fatalf("deleted %d (err %v), want %d", n, err, len(segs)-1)
	}
	start := segs[len(segs)-1].base
	// The pass wrote the new start to the checkpoint at once.
	starts, err := readOffsetCheckpoint(filepath.Join(dir, logStartFile))
	if err != nil {
		t.Fatal(err)
	}
	if starts[tp] != start {
		t.Fatalf("log-start-offset-checkpoint has %d, want %d", starts[tp], start)
	}
	partDir := l.Dir()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if got := len(deletedFiles(t, partDir)); got != 3*(len(segs)-1) {
		t.Fatalf("%d deleted files left at close, want %d", got, 3*(len(segs)-1))
	}

	for _, clean := range []bool{true, false} {
		if !clean {
			// An unclean shutdown: recovery scans the log, with a
			// leftover .deleted file beside it.
			if err := os.Remove(filepath.Join(dir, cleanShutdownFile)); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(partDir, segmentFileName(0, logSuffix+deletedSuffix)), []byte("junk"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		m = openRetentionManager(t, dir, clock)
		if got := deletedFiles(t, partDir); len(got) != 0 {
			t.Fatalf("clean %v: deleted files %v left after open", clean, got)
		}
		l, _ = m.Get(tp)
		if got := l.LogStartOffset(); got != start {
			t.Fatalf("clean %v: log start %d after reopen, want %d", clean, got, start)
		}
		equalBatches(t, readAll(t, l, start, 0), a.batches[segs[len(segs)-1].firstBatch:])
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReaderKeepsDeletedSegment(t *testing.T) {
	t.Parallel()
	clock := newFakeClock(1 << 40)
	m := openRetentionManager(t, t.TempDir(), clock)
	defer m.Close()
	cfg := retentionConfig()
	cfg.RetentionMs = 1000
	cfg.FileDeleteDelayMs = 0
	l, err := m.Create(TopicPartition{Topic: "reader", Partition: 0}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	a := fillLog(t, l, 60, func(i int) int64 { return int64(i) })
	segs := segmentsOf(t, l, a)
	res, err := l.Read(ReadOptions{Offset: 0, MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	if n, err := m.RunRetention(); err != nil || n != len(segs)-1 {
		t.Fatalf("deleted %d (err %v), want %d", n, err, len(segs)-1)
	}
	// With no delay the files are gone from the directory already.
	if got := deletedFiles(t, l.Dir()); len(got) != 0 {
		t.Fatalf("deleted files %v left with no delay", got)
	}
	got, err := res.AppendTo(nil)
	if err != nil {
		t.Fatalf("reading a held slice of a deleted segment: %v", err)
	}
	var want []byte
	for _, b := range a.batches[:segs[1].firstBatch] {
		want = append(want, b...)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("held slice read %d bytes, not the %d bytes of segment 0", len(got), len(want))
	}
	var buf bytes.Buffer
	if _, err := res.WriteTo(&buf); err != nil || !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("WriteTo of a held slice: %d bytes, err %v", buf.Len(), err)
	}
	if _, err := l.Read(ReadOptions{Offset: 0, MaxBytes: 100}); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("new read of a deleted offset: %v, want ErrOffsetOutOfRange", err)
	}
}

func TestRetentionConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		set  func(*Config)
		ok   bool
	}{
		{"defaults", func(*Config) {}, true},
		{"retention.ms -1", func(c *Config) { c.RetentionMs = -1 }, true},
		{"retention.ms 0", func(c *Config) { c.RetentionMs = 0 }, true},
		{"retention.ms -2", func(c *Config) { c.RetentionMs = -2 }, false},
		{"retention.bytes -5", func(c *Config) { c.RetentionBytes = -5 }, true},
		{"file.delete.delay.ms 0", func(c *Config) { c.FileDeleteDelayMs = 0 }, true},
		{"file.delete.delay.ms -1", func(c *Config) { c.FileDeleteDelayMs = -1 }, false},
	} {
		c := DefaultConfig()
		tt.set(&c)
		if err := c.Validate(); (err == nil) != tt.ok {
			t.Errorf("%s: Validate() = %v, want ok %v", tt.name, err, tt.ok)
		}
	}
	d := DefaultConfig()
	if d.RetentionMs != 604_800_000 || d.RetentionBytes != -1 || d.FileDeleteDelayMs != 60_000 || !d.CleanupDelete {
		t.Errorf("defaults: retention.ms %d, retention.bytes %d, file.delete.delay.ms %d, delete %v; want Kafka's",
			d.RetentionMs, d.RetentionBytes, d.FileDeleteDelayMs, d.CleanupDelete)
	}
}

// TestRemoveDueWaitsForTheBackgroundLoop: files due are gone when
// removeDue returns, even when the background loop, woken by schedule,
// took them off the list first and is still removing them.
func TestRemoveDueWaitsForTheBackgroundLoop(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clock := newFakeClock(1 << 40)
	d := newDeleter(clock.now, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	for i := range 500 {
		paths := make([]string, 4)
		for j := range paths {
			paths[j] = filepath.Join(dir, fmt.Sprintf("%d-%d.log.deleted", i, j))
			if err := os.WriteFile(paths[j], []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		d.schedule(paths, clock.now())
		if _, _, err := d.removeDue(); err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("round %d: %s still there after removeDue (stat: %v)", i, filepath.Base(p), err)
			}
		}
	}
}
