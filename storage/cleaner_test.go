package storage

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gregor-io/gregor/protocol/record"
)

// kv is one record of a compacted log: its offset, key and value (nil: a
// tombstone).
type kv struct {
	offset int64
	key    string
	value  []byte
}

func (r kv) String() string {
	if r.value == nil {
		return fmt.Sprintf("%d:%s=<nil>", r.offset, r.key)
	}
	return fmt.Sprintf("%d:%s=%q", r.offset, r.key, r.value)
}

// compactConfig is a compacted log config with small segments, cleaning at
// any dirty ratio.
func compactConfig(segmentBytes int64) Config {
	c := DefaultConfig()
	c.SegmentBytes = segmentBytes
	c.IndexIntervalBytes = 256
	c.CleanupDelete = false
	c.Compact = true
	c.MinCleanableDirtyRatio = 0
	c.FileDeleteDelayMs = 0
	return c
}

// openCleanerManager opens a Manager on a fake clock whose background
// cleaner and retention do not run: tests run passes themselves.
func openCleanerManager(t testing.TB, dir string, clock *fakeClock, dedupeEntries int) *Manager {
	t.Helper()
	cfg := DefaultManagerConfig(dir)
	cfg.Now = clock.now
	cfg.RetentionCheckInterval = time.Hour
	cfg.CleanerEnable = false
	if dedupeEntries > 0 {
		cfg.CleanerDedupeBufferSize = int64(float64(dedupeEntries*offsetMapEntrySize)/offsetMapLoadFactor) + 1
	}
	m, err := OpenManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// keyedBatch builds a batch of records (key, value) with timestamps from ts.
func keyedBatch(t testing.TB, recs []kv, ts int64, codec record.Codec) []byte {
	t.Helper()
	rs := make([]record.Record, len(recs))
	for i, r := range recs {
		rs[i] = record.Record{OffsetDelta: int32(i), TimestampDelta: int64(i), Key: []byte(r.key), Value: r.value}
	}
	b, err := record.Build(nil, record.BatchHeader{
		Codec: codec, BaseTimestamp: ts, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
	}, rs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// appendKeyed appends recs as one batch and returns them with their offsets.
func appendKeyed(t testing.TB, l *Log, recs []kv, ts int64, codec record.Codec) []kv {
	t.Helper()
	res, err := l.Append(keyedBatch(t, recs, ts, codec), AppendOptions{AssignOffsets: true})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]kv, len(recs))
	for i, r := range recs {
		r.offset = res.FirstOffset + int64(i)
		out[i] = r
	}
	return out
}

// settle fsyncs the log and moves the high watermark to its end, so that
// every sealed segment is cleanable.
func settle(t testing.TB, l *Log) {
	t.Helper()
	if err := l.Flush(context.Background(), l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	l.SetHighWatermark(l.LogEndOffset())
}

// readRecords reads every data record from offset 0 through the log's
// reads (transaction markers are left out).
func readRecords(t testing.TB, l *Log) []kv {
	t.Helper()
	var out []kv
	prevEnd := int64(-1)
	for _, b := range readAll(t, l, l.LogStartOffset(), 0) {
		if b.BaseOffset() <= prevEnd {
			t.Fatalf("batch at %d overlaps the previous one ending at %d", b.BaseOffset(), prevEnd)
		}
		prevEnd = b.LastOffset()
		if b.Control() {
			continue
		}
		err := record.ForEachRecord(b, nil, func(off, _ int64, r *record.Record) error {
			if off > b.LastOffset() {
				return fmt.Errorf("record %d past its batch's last offset %d", off, b.LastOffset())
			}
			var v []byte
			if r.Value != nil {
				v = append([]byte{}, r.Value...)
			}
			out = append(out, kv{offset: off, key: string(r.Key), value: v})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// compacted is the brute-force model: the records of all that, with those
// below end reduced to the latest per key (tombstones dropped too when
// dropTombstones).
func compacted(all []kv, end int64, dropTombstones bool) []kv {
	latest := map[string]int64{}
	for _, r := range all {
		if r.offset < end {
			latest[r.key] = r.offset
		}
	}
	var out []kv
	for _, r := range all {
		if r.offset >= end || (latest[r.key] == r.offset && (!dropTombstones || r.value != nil)) {
			out = append(out, r)
		}
	}
	return out
}

func sameRecords(t testing.TB, what string, got, want []kv) {
	t.Helper()
	n := min(len(got), len(want))
	for i := 0; i < n; i++ {
		if got[i].offset != want[i].offset || got[i].key != want[i].key || !bytes.Equal(got[i].value, want[i].value) ||
			(got[i].value == nil) != (want[i].value == nil) {
			t.Fatalf("%s: record %d is %v, want %v", what, i, got[i], want[i])
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d records, want %d", what, len(got), len(want))
	}
}

// cleanUntilDone runs forced passes until the whole cleanable range is
// clean (several when the offset map is small).
func cleanUntilDone(t testing.TB, m *Manager, l *Log) CleanStats {
	t.Helper()
	var total CleanStats
	for i := 0; ; i++ {
		st, err := m.CleanNow(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		total.add(st)
		c, err := l.cleanableState(m.now().UnixMilli())
		if err != nil {
			t.Fatal(err)
		}
		if c.firstDirty >= c.firstUncleanable {
			return total
		}
		if i > 10_000 {
			t.Fatalf("cleaning does not finish: first dirty %d, first uncleanable %d", c.firstDirty, c.firstUncleanable)
		}
	}
}

func activeBase(l *Log) int64 {
	segs := *l.segs.Load()
	return segs[len(segs)-1].base
}

func randomValue(rng *rand.Rand) []byte {
	v := make([]byte, 8+rng.IntN(120))
	for i := range v {
		v[i] = 'a' + byte(rng.IntN(4)) // compressible
	}
	return v
}

// TestCleanerMatchesModel compares cleaning with the brute-force model on
// random logs: random keys, tombstones, codecs, segment sizes and offset
// map bounds, several rounds of appends and cleanings.
func TestCleanerMatchesModel(t *testing.T) {
	codecs := []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd}
	for iter := 0; iter < 6; iter++ {
		seed := uint64(time.Now().UnixNano()) + uint64(iter)
		if s, err := strconv.ParseUint(os.Getenv("GREGOR_CLEANER_SEED"), 10, 64); err == nil {
			seed = s
		}
		t.Run(fmt.Sprint(iter), func(t *testing.T) {
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(seed, seed))
			clock := newFakeClock(1_700_000_000_000)
			dedupe := []int{0, 40, 200}[rng.IntN(3)]
			m := openCleanerManager(t, t.TempDir(), clock, dedupe)
			defer m.Close()
			// Segments of at least 2 KiB: a batch of 12 records with
			// 128-byte values (the most a round appends) fits in one.
			l, err := m.Create(TopicPartition{Topic: "c", Partition: 0}, compactConfig(int64(2048+rng.IntN(8192))))
			if err != nil {
				t.Fatal(err)
			}
			keys := 1 + rng.IntN(60)
			var all []kv
			for round := 0; round < 4; round++ {
				for b := 0; b < 20+rng.IntN(60); b++ {
					n := 1 + rng.IntN(12)
					recs := make([]kv, n)
					for i := range recs {
						recs[i].key = fmt.Sprintf("key-%d", rng.IntN(keys))
						if rng.IntN(8) > 0 {
							recs[i].value = randomValue(rng)
						}
					}
					all = append(all, appendKeyed(t, l, recs, clock.now().UnixMilli(), codecs[rng.IntN(len(codecs))])...)
				}
				settle(t, l)
				cleanUntilDone(t, m, l)
				if fd, ab, rp := l.FirstDirtyOffset(), activeBase(l), l.RecoveryPoint(); fd != ab {
					t.Fatalf("round %d: cleaned up to %d, the active segment starts at %d (recovery point %d)", round, fd, ab, rp)
				}
				want := compacted(all, activeBase(l), false)
				sameRecords(t, fmt.Sprintf("round %d", round), readRecords(t, l), want)
				all = want
			}
		})
	}
}

// TestCleanerTombstones: a tombstone stays delete.retention.ms after the
// cleaning that first kept it, and goes at the first cleaning after.
func TestCleanerTombstones(t *testing.T) {
	clock := newFakeClock(1_700_000_000_000)
	m := openCleanerManager(t, t.TempDir(), clock, 0)
	defer m.Close()
	cfg := compactConfig(2048)
	cfg.DeleteRetentionMs = 10_000
	l, err := m.Create(TopicPartition{Topic: "c", Partition: 0}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var all []kv
	for i := 0; i < 200; i++ {
		all = append(all, appendKeyed(t, l, []kv{{key: fmt.Sprintf("k%d", i%20), value: []byte(fmt.Sprint("v", i))}},
			clock.now().UnixMilli(), record.CodecNone)...)
	}
	for i := 0; i < 5; i++ {
		all = append(all, appendKeyed(t, l, []kv{{key: fmt.Sprintf("k%d", i)}}, clock.now().UnixMilli(), record.CodecLZ4)...)
	}
	// Fill past the tombstones so that they are in a sealed segment.
	lastTombstone := all[len(all)-1].offset
	for i := 0; l.SegmentCount() < 12 || activeBase(l) <= lastTombstone; i++ {
		all = append(all, appendKeyed(t, l, []kv{{key: fmt.Sprintf("x%d", i%3), value: []byte("filler")}},
			clock.now().UnixMilli(), record.CodecNone)...)
	}
	settle(t, l)
	if st, err := m.RunCleaner(context.Background()); err != nil || st.Logs != 1 {
		t.Fatalf("first pass: %+v, %v", st, err)
	}
	end := activeBase(l)
	sameRecords(t, "first pass keeps the tombstones", readRecords(t, l), compacted(all, end, false))

	clock.advance(9_999)
	if st, err := m.RunCleaner(context.Background()); err != nil || st.Logs != 0 {
		t.Fatalf("a pass before the horizon cleaned: %+v, %v", st, err)
	}
	cleanUntilDone(t, m, l) // even forced, the tombstones stay
	sameRecords(t, "before the horizon", readRecords(t, l), compacted(all, end, false))

	clock.advance(1)
	if st, err := m.RunCleaner(context.Background()); err != nil || st.Logs != 1 {
		t.Fatalf("the horizon did not trigger a pass: %+v, %v", st, err)
	}
	sameRecords(t, "after the horizon", readRecords(t, l), compacted(all, end, true))
}

// TestCleanerMinCompactionLag: segments whose newest record is younger
// than min.compaction.lag.ms are not cleaned.
func TestCleanerMinCompactionLag(t *testing.T) {
	clock := newFakeClock(1_700_000_000_000)
	m := openCleanerManager(t, t.TempDir(), clock, 0)
	defer m.Close()
	cfg := compactConfig(2048)
	cfg.MinCompactionLagMs = 5_000
	l, err := m.Create(TopicPartition{Topic: "c", Partition: 0}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var all []kv
	for i := 0; l.SegmentCount() < 6; i++ {
		all = append(all, appendKeyed(t, l, []kv{{key: fmt.Sprintf("k%d", i%5), value: []byte(fmt.Sprint("old", i))}},
			clock.now().UnixMilli(), record.CodecNone)...)
	}
	oldEnd := activeBase(l)
	clock.advance(3_000)
	for i := 0; l.SegmentCount() < 12; i++ {
		all = append(all, appendKeyed(t, l, []kv{{key: fmt.Sprintf("k%d", i%5), value: []byte(fmt.Sprint("new", i))}},
			clock.now().UnixMilli(), record.CodecNone)...)
	}
	settle(t, l)
	// Nothing is old enough yet.
	clock.advance(1_000)
	if st, err := m.CleanNow(context.Background()); err != nil || st.RecordsRead != 0 {
		t.Fatalf("cleaned young segments: %+v, %v", st, err)
	}
	sameRecords(t, "young", readRecords(t, l), all)
	// The first segments are old enough, the later ones not.
	clock.advance(1_001)
	cleanUntilDone(t, m, l)
	if fd := l.FirstDirtyOffset(); fd != oldEnd {
		t.Fatalf("first dirty offset %d, want %d (the first young segment)", fd, oldEnd)
	}
	sameRecords(t, "old cleaned", readRecords(t, l), compacted(all, oldEnd, false))
	clock.advance(3_000)
	cleanUntilDone(t, m, l)
	sameRecords(t, "all cleaned", readRecords(t, l), compacted(all, activeBase(l), false))
}

// TestCleanerDirtyRatio: a log is cleaned only once its dirty share is
// above min.cleanable.dirty.ratio.
func TestCleanerDirtyRatio(t *testing.T) {
	clock := newFakeClock(1_700_000_000_000)
	m := openCleanerManager(t, t.TempDir(), clock, 0)
	defer m.Close()
	cfg := compactConfig(4096)
	cfg.MinCleanableDirtyRatio = 0.5
	l, err := m.Create(TopicPartition{Topic: "c", Partition: 0}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	appendRecs := func(n int) {
		for end := i + n; i < end; i++ {
			appendKeyed(t, l, []kv{{key: fmt.Sprintf("k%d", i), value: bytes.Repeat([]byte("v"), 100)}},
				clock.now().UnixMilli(), record.CodecNone)
		}
		settle(t, l)
	}
	appendRecs(400) // distinct keys: cleaning keeps everything
	if st, err := m.RunCleaner(context.Background()); err != nil || st.Logs != 1 {
		t.Fatalf("an all-dirty log was not cleaned: %+v, %v", st, err)
	}
	appendRecs(100)
	c, err := l.cleanableState(clock.now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	if c.ratio() > 0.5 {
		t.Fatalf("dirty ratio %v after a small append", c.ratio())
	}
	if st, err := m.RunCleaner(context.Background()); err != nil || st.Logs != 0 {
		t.Fatalf("cleaned at dirty ratio %v: %+v, %v", c.ratio(), st, err)
	}
	appendRecs(600)
	c, _ = l.cleanableState(clock.now().UnixMilli())
	if c.ratio() <= 0.5 {
		t.Fatalf("dirty ratio %v after a large append", c.ratio())
	}
	if st, err := m.RunCleaner(context.Background()); err != nil || st.Logs != 1 {
		t.Fatalf("not cleaned at dirty ratio %v: %+v, %v", c.ratio(), st, err)
	}
}

// TestCleanerMaxCompactionLag: past max.compaction.lag.ms a log is cleaned
// whatever its dirty ratio.
func TestCleanerMaxCompactionLag(t *testing.T) {
	clock := newFakeClock(1_700_000_000_000)
	m := openCleanerManager(t, t.TempDir(), clock, 0)
	defer m.Close()
	cfg := compactConfig(4096)
	cfg.MinCleanableDirtyRatio = 1
	cfg.MaxCompactionLagMs = 60_000
	l, err := m.Create(TopicPartition{Topic: "c", Partition: 0}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; l.SegmentCount() < 4; i++ {
		appendKeyed(t, l, []kv{{key: "same", value: []byte(fmt.Sprint(i))}}, clock.now().UnixMilli(), record.CodecNone)
	}
	settle(t, l)
	if st, _ := m.RunCleaner(context.Background()); st.Logs != 0 {
		t.Fatal("cleaned before the lag at a ratio of 1")
	}
	clock.advance(60_001)
	if st, err := m.RunCleaner(context.Background()); err != nil || st.Logs != 1 {
		t.Fatalf("not cleaned past max.compaction.lag.ms: %+v, %v", st, err)
	}
}

// TestCleanerCheckpointSurvivesReopen: the first dirty offset is written
// to cleaner-offset-checkpoint and read back at open; leftover .cleaned
// files are removed.
func TestCleanerCheckpointSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	clock := newFakeClock(1_700_000_000_000)
	m := openCleanerManager(t, dir, clock, 0)
	tp := TopicPartition{Topic: "c", Partition: 3}
	l, err := m.Create(tp, compactConfig(2048))
	if err != nil {
		t.Fatal(err)
	}
	var all []kv
	for i := 0; l.SegmentCount() < 5; i++ {
		all = append(all, appendKeyed(t, l, []kv{{key: fmt.Sprintf("k%d", i%7), value: []byte(fmt.Sprint(i))}},
			clock.now().UnixMilli(), record.CodecZstd)...)
	}
	settle(t, l)
	cleanUntilDone(t, m, l)
	fd := l.FirstDirtyOffset()
	if fd != activeBase(l) || fd == 0 {
		t.Fatalf("first dirty offset %d, want %d", fd, activeBase(l))
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, cleanerCheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("0\n1\nc 3 %d\n", fd); string(data) != want {
		t.Fatalf("checkpoint %q, want %q", data, want)
	}
	// A cleaning interrupted before its swap leaves .cleaned files.
	leftover := filepath.Join(l.Dir(), segmentFileName(0, logSuffix)+cleanedSuffix)
	if err := os.WriteFile(leftover, []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	m = openCleanerManager(t, dir, clock, 0)
	defer m.Close()
	l, _ = m.Get(tp)
	if got := l.FirstDirtyOffset(); got != fd {
		t.Fatalf("first dirty offset after reopen %d, want %d", got, fd)
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Fatalf(".cleaned leftover not removed: %v", err)
	}
	sameRecords(t, "after reopen", readRecords(t, l), compacted(all, fd, false))
}

// TestCleanerReaderKeepsReplacedSegment: a slice read before a cleaning
// stays readable after its segment was replaced, and a new read sees the
// cleaned log.
func TestCleanerReaderKeepsReplacedSegment(t *testing.T) {
	clock := newFakeClock(1_700_000_000_000)
	m := openCleanerManager(t, t.TempDir(), clock, 0)
	defer m.Close()
	l, err := m.Create(TopicPartition{Topic: "c", Partition: 0}, compactConfig(2048))
	if err != nil {
		t.Fatal(err)
	}
	var all []kv
	for i := 0; l.SegmentCount() < 4; i++ {
		all = append(all, appendKeyed(t, l, []kv{{key: "k", value: []byte(fmt.Sprint(i))}},
			clock.now().UnixMilli(), record.CodecNone)...)
	}
	settle(t, l)
	res, err := l.Read(ReadOptions{Offset: 0, MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	before, err := res.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	cleanUntilDone(t, m, l)
	after, err := res.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("a held slice changed under a cleaning")
	}
	sameRecords(t, "new read", readRecords(t, l), compacted(all, activeBase(l), false))
	ents, _ := os.ReadDir(l.Dir())
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), cleanedSuffix) || strings.HasSuffix(e.Name(), swapSuffix) {
			t.Fatalf("leftover %s after cleaning", e.Name())
		}
	}
}

// TestCleanerKeepsProducerState: a rewritten batch keeps its last offset
// and producer fields, and an idempotent producer's last batch stays, empty,
// when all its records are gone.
func TestCleanerKeepsProducerState(t *testing.T) {
	clock := newFakeClock(1_700_000_000_000)
	m := openCleanerManager(t, t.TempDir(), clock, 0)
	defer m.Close()
	l, err := m.Create(TopicPartition{Topic: "c", Partition: 0}, compactConfig(1024))
	if err != nil {
		t.Fatal(err)
	}
	build := func(seq int32, keys ...string) []byte {
		rs := make([]record.Record, len(keys))
		for i, k := range keys {
			rs[i] = record.Record{OffsetDelta: int32(i), Key: []byte(k), Value: []byte("v")}
		}
		b, err := record.Build(nil, record.BatchHeader{BaseTimestamp: clock.now().UnixMilli(),
			ProducerID: 7, ProducerEpoch: 1, BaseSequence: seq, Codec: record.CodecLZ4}, rs)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if _, err := l.Append(build(0, "a", "b", "c"), AppendOptions{AssignOffsets: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(build(3, "x", "y"), AppendOptions{AssignOffsets: true}); err != nil {
		t.Fatal(err)
	}
	for i := 0; l.SegmentCount() < 3; i++ {
		appendKeyed(t, l, []kv{{key: []string{"c", "x", "y"}[i%3], value: []byte("later")}}, clock.now().UnixMilli(), record.CodecNone)
	}
	settle(t, l)
	cleanUntilDone(t, m, l)
	got := readAll(t, l, 0, 0)
	if got[0].BaseOffset() != 0 || got[0].LastOffset() != 2 || got[0].RecordCount() != 2 || got[0].BaseSequence() != 0 ||
		got[0].ProducerID() != 7 || got[0].Codec() != record.CodecLZ4 {
		t.Fatalf("first batch: base %d last %d count %d seq %d pid %d codec %v", got[0].BaseOffset(), got[0].LastOffset(),
			got[0].RecordCount(), got[0].BaseSequence(), got[0].ProducerID(), got[0].Codec())
	}
	if got[1].BaseOffset() != 3 || got[1].LastOffset() != 4 || got[1].RecordCount() != 0 || got[1].BaseSequence() != 3 {
		t.Fatalf("producer's last batch: base %d last %d count %d seq %d", got[1].BaseOffset(), got[1].LastOffset(),
			got[1].RecordCount(), got[1].BaseSequence())
	}
}

// acceptanceLog fills a log with records over 1,000 keys, the last
// tombstones for 100 of them, and returns the live keys' latest values.
func acceptanceLog(t testing.TB, l *Log, records int) map[string]string {
	t.Helper()
	const keys, perBatch = 1000, 100
	want := map[string]string{}
	recs := make([]record.Record, perBatch)
	var buf []byte
	n := 0
	for n < records {
		for i := range recs {
			k, v := fmt.Sprintf("key-%04d", (n+i)%keys), fmt.Sprintf("value-%d", n+i)
			recs[i] = record.Record{OffsetDelta: int32(i), TimestampDelta: int64(i), Key: []byte(k), Value: []byte(v)}
			want[k] = v
		}
		var err error
		buf, err = record.Build(buf[:0], record.BatchHeader{Codec: record.CodecLZ4, BaseTimestamp: 1_700_000_000_000,
			ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(buf, AppendOptions{AssignOffsets: true}); err != nil {
			t.Fatal(err)
		}
		n += perBatch
	}
	tomb := make([]record.Record, 100)
	for i := range tomb {
		k := fmt.Sprintf("key-%04d", i*10)
		tomb[i] = record.Record{OffsetDelta: int32(i), Key: []byte(k)}
		delete(want, k)
	}
	b, err := record.Build(nil, record.BatchHeader{BaseTimestamp: 1_700_000_000_000, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, tomb)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(b, AppendOptions{AssignOffsets: true}); err != nil {
		t.Fatal(err)
	}
	// Roll, so that the tombstones are cleanable too.
	l.mu.Lock()
	_, err = l.rollLocked(l.leo.Load())
	l.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	settle(t, l)
	return want
}

func acceptanceConfig() Config {
	c := compactConfig(1 << 20)
	c.FlushMessages = 1 << 30 // the fill is not what is measured
	c.DeleteRetentionMs = 0
	return c
}

// TestCleanerAcceptance: records over 1,000 keys with tombstones for 100
// keys compact to the latest value of each of the 900 live keys, and a
// reader from the beginning sees exactly that: 1,000,000 records, or
// 200,000 with -short or under the race detector (which makes cleaning
// 1,000,000 records take minutes).
func TestCleanerAcceptance(t *testing.T) {
	records := 1_000_000
	if testing.Short() || raceEnabled {
		records = 200_000
	}
	clock := newFakeClock(1_700_000_000_000)
	m := openCleanerManager(t, t.TempDir(), clock, 0)
	defer m.Close()
	l, err := m.Create(TopicPartition{Topic: "c", Partition: 0}, acceptanceConfig())
	if err != nil {
		t.Fatal(err)
	}
	want := acceptanceLog(t, l, records)
	start := time.Now()
	st := cleanUntilDone(t, m, l)
	// A second pass at or after the horizon (delete.retention.ms 0 here)
	// removes the tombstones.
	clock.advance(1)
	st2 := cleanUntilDone(t, m, l)
	t.Logf("%d records: cleaned %d MB in %v (then %d MB)", records, st.BytesRead>>20, time.Since(start), st2.BytesRead>>20)
	got := map[string]string{}
	for _, r := range readRecords(t, l) {
		if r.value == nil {
			t.Fatalf("tombstone %v left", r)
		}
		if _, dup := got[r.key]; dup {
			t.Fatalf("key %s twice", r.key)
		}
		got[r.key] = string(r.value)
	}
	if len(got) != 900 || len(want) != 900 {
		t.Fatalf("%d keys left, want 900", len(got))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("key %s: %q, want %q", k, got[k], v)
		}
	}
}

// BenchmarkClean measures the cleaner's throughput: MB/s of log read and
// rewritten by the cleaning of 200,000 records over 1,000 keys.
func BenchmarkClean(b *testing.B) {
	var bytesRead int64
	var took time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		clock := newFakeClock(1_700_000_000_000)
		m := openCleanerManager(b, b.TempDir(), clock, 0)
		l, err := m.Create(TopicPartition{Topic: "c", Partition: 0}, acceptanceConfig())
		if err != nil {
			b.Fatal(err)
		}
		acceptanceLog(b, l, 200_000)
		size := l.Size()
		b.StartTimer()
		start := time.Now()
		st, err := m.CleanNow(context.Background())
		took += time.Since(start)
		b.StopTimer()
		if err != nil || st.Logs != 1 {
			b.Fatalf("%+v, %v", st, err)
		}
		bytesRead += size
		m.Close()
	}
	b.ReportMetric(float64(bytesRead)/(1<<20)/took.Seconds(), "MB/s")
}
