package storage

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/gregor-io/gregor/protocol/record"
)

func TestAppendReadEveryOffsetAcrossSegments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := openTestLog(t, dir, testConfig(), OpenState{})
	rng := rand.New(rand.NewPCG(1, 2))
	var a appended
	for _, b := range randomBatches(t, rng, 300) {
		a.add(t, l, b)
	}
	if n := l.SegmentCount(); n < 5 {
		t.Fatalf("want several segments, got %d", n)
	}
	leo := l.LogEndOffset()
	if want := a.batches[len(a.batches)-1].NextOffset(); leo != want {
		t.Fatalf("log end %d, want %d", leo, want)
	}
	equalBatches(t, readAll(t, l, 0, 0), a.batches)
	for off := int64(0); off < leo; off++ {
		res, err := l.Read(ReadOptions{Offset: off, MaxBytes: 1, MinOneBatch: true})
		if err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
		buf, err := res.AppendTo(nil)
		res.Release()
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := record.Parse(buf)
		if err != nil {
			t.Fatalf("read %d: first batch: %v", off, err)
		}
		want, _ := a.batchFor(off)
		if b.BaseOffset() != want.BaseOffset() || string(b) != string(want) {
			t.Fatalf("read %d: got batch at %d, want the one at %d", off, b.BaseOffset(), want.BaseOffset())
		}
		if res.BaseOffset != want.BaseOffset() {
			t.Fatalf("read %d: slice base offset %d, want %d", off, res.BaseOffset, want.BaseOffset())
		}
	}
	// At the end: empty; past it: out of range.
	if res, err := l.Read(ReadOptions{Offset: leo, MaxBytes: 100}); err != nil || res.Len != 0 {
		t.Fatalf("read at end: len %d err %v, want empty", res.Len, err)
	}
	if _, err := l.Read(ReadOptions{Offset: leo + 1, MaxBytes: 100}); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read past end: %v, want ErrOffsetOutOfRange", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestReadBounds(t *testing.T) {
	t.Parallel()
	l := openTestLog(t, t.TempDir(), testConfig(), OpenState{})
	defer l.Close()
	var a appended
	for i := 0; i < 10; i++ {
		a.add(t, l, makeBatch(t, 5, 100, 1000, uint64(i), record.CodecNone))
	}
	// MaxOffset at a batch boundary stops before that batch.
	l.SetHighWatermark(25)
	got := readAll(t, l, 0, l.HighWatermark())
	equalBatches(t, got, a.batches[:5])
	// MaxBytes cuts inside a batch; without MinOneBatch a too-small limit
	// returns less than a batch, with it the whole first batch.
	res, err := l.Read(ReadOptions{Offset: 0, MaxBytes: 10})
	if err != nil || res.Len != 10 {
		t.Fatalf("read 10 bytes: len %d err %v", res.Len, err)
	}
	res.Release()
	res, err = l.Read(ReadOptions{Offset: 0, MaxBytes: 10, MinOneBatch: true})
	if err != nil || res.Len != int64(len(a.batches[0])) {
		t.Fatalf("read min one batch: len %d err %v, want %d", res.Len, err, len(a.batches[0]))
	}
	res.Release()
	// A read spanning batches ends where MaxBytes says, possibly mid-batch.
	res, err = l.Read(ReadOptions{Offset: 0, MaxBytes: int64(len(a.batches[0])) + 7})
	if err != nil || res.Len != int64(len(a.batches[0]))+7 {
		t.Fatalf("read: len %d err %v", res.Len, err)
	}
	res.Release()
}

// randomIndexedLog opens a log with an index interval below maxInterval
// and appends 200 random batches to it, all drawn from rng.
func randomIndexedLog(t *testing.T, rng *rand.Rand, maxInterval int) (*Log, *appended) {
	t.Helper()
	cfg := testConfig()
	cfg.IndexIntervalBytes = int64(rng.IntN(maxInterval))
	l := openTestLog(t, t.TempDir(), cfg, OpenState{})
	a := &appended{}
	for _, b := range randomBatches(t, rng, 200) {
		a.add(t, l, b)
	}
	return l, a
}

// TestReadWholeBatches: a read with WholeBatches returns whole batches
// only, as many of them from the one holding the offset as fit MaxBytes
// within its segment (the first alone, whatever its size, with
// MinOneBatch; none without), whatever the index interval.
func TestReadWholeBatches(t *testing.T) {
	t.Parallel()
	for seed := uint64(0); seed < 4; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		l, a := randomIndexedLog(t, rng, 3000)
		segBase := map[int64]bool{}
		for _, s := range *l.segs.Load() {
			segBase[s.base] = true
		}
		for range 400 {
			off := rng.Int64N(l.LogEndOffset())
			maxBytes := rng.Int64N(6000)
			minOne := rng.IntN(2) == 0
			res, err := l.Read(ReadOptions{Offset: off, MaxBytes: maxBytes, MinOneBatch: minOne, WholeBatches: true})
			if err != nil {
				t.Fatalf("read %d max %d: %v", off, maxBytes, err)
			}
			buf, err := res.AppendTo(nil)
			res.Release()
			if err != nil {
				t.Fatal(err)
			}
			// The batches of the log from the one holding off.
			first, _ := a.batchFor(off)
			i := 0
			for a.batches[i].BaseOffset() != first.BaseOffset() {
				i++
			}
			n, rest := 0, buf
			for len(rest) > 0 {
				b, tail, err := record.Parse(rest)
				if err != nil {
					t.Fatalf("read %d max %d: %d bytes, not whole batches: %v", off, maxBytes, len(buf), err)
				}
				if string(b) != string(a.batches[i+n]) {
					t.Fatalf("read %d max %d: batch %d is not the log's", off, maxBytes, n)
				}
				n, rest = n+1, tail
			}
			switch {
			case n == 0 && (minOne || int64(len(first)) <= maxBytes):
				t.Fatalf("read %d max %d min one %v: nothing, first batch %d bytes", off, maxBytes, minOne, len(first))
			case int64(len(buf)) > maxBytes && n > 1:
				t.Fatalf("read %d max %d: %d batches, %d bytes", off, maxBytes, n, len(buf))
			case n > 0 && i+n < len(a.batches):
				next := a.batches[i+n]
				if int64(len(buf)+len(next)) <= maxBytes && !segBase[next.BaseOffset()] {
					t.Fatalf("read %d max %d: %d bytes; the next batch (%d) fits and is in the same segment", off, maxBytes, len(buf), len(next))
				}
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestIndexLookupMatchesScan(t *testing.T) {
	t.Parallel()
	for seed := uint64(0); seed < 5; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		l, _ := randomIndexedLog(t, rng, 2000)
		for _, s := range *l.segs.Load() {
			f, err := s.acquire()
			if err != nil {
				t.Fatal(err)
			}
			// Brute force: positions of every batch in the segment.
			type bp struct{ pos, base, last int64 }
			var all []bp
			hs := newHeaderScanner(f, s.size.Load())
			for pos := int64(0); pos < s.size.Load(); {
				h, err := hs.header(pos)
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, bp{pos, h.BaseOffset(), h.LastOffset()})
				pos += record.Size(h)
			}
			for target := s.base; target < s.ib.next; target++ {
				var want bp
				for _, x := range all {
					if x.last >= target {
						want = x
						break
					}
				}
				pos, base, err := s.findPosition(f, target, s.size.Load())
				if err != nil || pos != want.pos || base != want.base {
					t.Fatalf("seed %d segment %d target %d: got (%d, %d, %v), want (%d, %d)",
						seed, s.base, target, pos, base, err, want.pos, want.base)
				}
				// The index hint itself never points past the target's batch.
				if hint := lookupOffset(s.idx.entries(), s.base, target); hint > want.pos {
					t.Fatalf("index hint %d beyond batch position %d", hint, want.pos)
				}
			}
			s.release()
		}
		l.Close()
	}
}

func TestOffsetForTimestamp(t *testing.T) {
	t.Parallel()
	l := openTestLog(t, t.TempDir(), testConfig(), OpenState{})
	defer l.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	type rec struct{ off, ts int64 }
	var recs []rec
	for i := 0; i < 200; i++ {
		n := 1 + rng.IntN(10)
		// Timestamps mostly rise, sometimes step back, as producers' clocks do.
		ts := int64(10_000 + i*20 - rng.IntN(30))
		codec := []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy}[rng.IntN(3)]
		res, err := l.Append(makeBatch(t, n, 200, ts, uint64(i), codec), AppendOptions{AssignOffsets: true})
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j < n; j++ {
			recs = append(recs, rec{res.FirstOffset + int64(j), ts + int64(j)})
		}
	}
	check := func(target int64) {
		var want *rec
		for i := range recs {
			if recs[i].ts >= target {
				want = &recs[i]
				break
			}
		}
		got, ok, err := l.OffsetForTimestamp(target)
		if err != nil {
			t.Fatalf("target %d: %v", target, err)
		}
		if want == nil {
			if ok {
				t.Fatalf("target %d: got offset %d, want none", target, got.Offset)
			}
			return
		}
		if !ok || got.Offset != want.off || got.Timestamp != want.ts {
			t.Fatalf("target %d: got (%d, %d, %v), want (%d, %d)", target, got.Offset, got.Timestamp, ok, want.off, want.ts)
		}
	}
	for target := int64(9_900); target < 14_100; target += 7 {
		check(target)
	}
	maxRec := recs[0]
	for _, r := range recs {
		if r.ts > maxRec.ts {
			maxRec = r
		}
	}
	got, ok, err := l.MaxTimestamp()
	if err != nil || !ok || got.Offset != maxRec.off || got.Timestamp != maxRec.ts {
		t.Fatalf("max timestamp: got (%d, %d, %v, %v), want (%d, %d)", got.Offset, got.Timestamp, ok, err, maxRec.off, maxRec.ts)
	}
	// After a clean reopen, the answers come from the persisted time indexes.
	dir := l.Dir()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, testConfig(), OpenState{Clean: true, RecoveryPoint: l.LogEndOffset()})
	for target := int64(9_900); target < 14_100; target += 13 {
		check(target)
	}
}

func TestCleanReopenContinues(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := testConfig()
	l := openTestLog(t, dir, cfg, OpenState{})
	var a appended
	for i := 0; i < 100; i++ {
		a.add(t, l, makeBatch(t, 3, 300, int64(1000+i), uint64(i), record.CodecNone))
	}
	leo := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, cfg, OpenState{Clean: true, RecoveryPoint: leo})
	if l.LogEndOffset() != leo {
		t.Fatalf("log end after reopen %d, want %d", l.LogEndOffset(), leo)
	}
	for i := 100; i < 200; i++ {
		a.add(t, l, makeBatch(t, 3, 300, int64(1000+i), uint64(i), record.CodecNone))
	}
	equalBatches(t, readAll(t, l, 0, 0), a.batches)
	// The rebuilt indexes equal the ones appends wrote.
	for _, s := range *l.segs.Load() {
		f, _ := s.acquire()
		res := scanSegment(f, s.size.Load(), s.base, cfg.IndexIntervalBytes, true)
		s.release()
		if string(res.idx) != string(s.idx.entries()) {
			t.Fatalf("segment %d: offset index differs from a rebuild", s.base)
		}
	}
	l.Close()
}

func TestTruncateTo(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	batches := randomBatches(t, rng, 120)
	for _, cut := range []int{0, 1, 17, 60, 119} {
		dir := t.TempDir()
		l := openTestLog(t, dir, testConfig(), OpenState{})
		var a appended
		for _, b := range batches {
			a.add(t, l, append([]byte(nil), b...))
		}
		target := a.batches[cut].BaseOffset() + 1 // inside the batch: it goes whole
		if err := l.TruncateTo(target); err != nil {
			t.Fatal(err)
		}
		if l.LogEndOffset() != a.batches[cut].BaseOffset() {
			t.Fatalf("cut %d: log end %d, want %d", cut, l.LogEndOffset(), a.batches[cut].BaseOffset())
		}
		a.batches = a.batches[:cut]
		equalBatches(t, readAll(t, l, 0, 0), a.batches)
		for i := 0; i < 30; i++ {
			a.add(t, l, makeBatch(t, 2, 500, 5000, uint64(1000+i), record.CodecNone))
		}
		equalBatches(t, readAll(t, l, 0, 0), a.batches)
		leo := l.LogEndOffset()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = openTestLog(t, dir, testConfig(), OpenState{})
		if l.LogEndOffset() != leo {
			t.Fatalf("cut %d: log end after recovery %d, want %d", cut, l.LogEndOffset(), leo)
		}
		equalBatches(t, readAll(t, l, 0, 0), a.batches)
		l.Close()
	}
}

// TestTruncateToTheEndDropsAnEmptyEpoch: a leadership taken at the log's
// end, with nothing written under it, is forgotten when a leader that does
// not know it truncates this log to its end (else the follower would ask
// with that epoch again, and diverge at every fetch); truncating above the
// end changes nothing.
func TestTruncateToTheEndDropsAnEmptyEpoch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := openTestLog(t, dir, testConfig(), OpenState{})
	var a appended
	for i := 0; i < 5; i++ {
		a.add(t, l, makeBatch(t, 2, 400, 1000, uint64(i), record.CodecNone))
	}
	before := l.LatestEpoch()
	if err := l.AssignEpoch(before + 3); err != nil {
		t.Fatal(err)
	}
	leo := l.LogEndOffset()
	if err := l.TruncateTo(leo + 1); err != nil {
		t.Fatal(err)
	}
	if got := l.LatestEpoch(); got != before+3 {
		t.Fatalf("after a truncation above the end: latest epoch %d, want %d", got, before+3)
	}
	if err := l.TruncateTo(leo); err != nil {
		t.Fatal(err)
	}
	if got := l.LatestEpoch(); got != before || l.LogEndOffset() != leo {
		t.Fatalf("after a truncation to the end: latest epoch %d, log end %d; want %d, %d", got, l.LogEndOffset(), before, leo)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, testConfig(), OpenState{})
	defer l.Close()
	if got := l.LatestEpoch(); got != before {
		t.Fatalf("after a restart: latest epoch %d, want %d", got, before)
	}
	equalBatches(t, readAll(t, l, 0, 0), a.batches)
}

func TestDeleteBelow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := openTestLog(t, dir, testConfig(), OpenState{})
	var a appended
	for i := 0; i < 200; i++ {
		a.add(t, l, makeBatch(t, 2, 400, 1000, uint64(i), record.CodecNone))
	}
	segsBefore := l.SegmentCount()
	mid := a.batches[150].BaseOffset()
	if err := l.DeleteBelow(mid); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != mid {
		t.Fatalf("log start %d, want %d", l.LogStartOffset(), mid)
	}
	if l.SegmentCount() >= segsBefore {
		t.Fatalf("segments %d, want fewer than %d", l.SegmentCount(), segsBefore)
	}
	if _, err := l.Read(ReadOptions{Offset: mid - 1, MaxBytes: 100}); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below log start: %v, want ErrOffsetOutOfRange", err)
	}
	got := readAll(t, l, mid, 0)
	equalBatches(t, got, a.batches[150:])
	if err := l.DeleteBelow(l.LogEndOffset() + 1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("delete past end: %v", err)
	}
	l.Close()
}

func TestFollowerAppendKeepsOffsets(t *testing.T) {
	t.Parallel()
	leader := openTestLog(t, t.TempDir(), testConfig(), OpenState{})
	defer leader.Close()
	follower := openTestLog(t, t.TempDir(), testConfig(), OpenState{})
	defer follower.Close()
	for i := 0; i < 50; i++ {
		epoch := int32(i / 10)
		if _, err := leader.Append(makeBatch(t, 3, 200, 1000, uint64(i), record.CodecNone),
			AppendOptions{AssignOffsets: true, LeaderEpoch: epoch}); err != nil {
			t.Fatal(err)
		}
	}
	all := readAll(t, leader, 0, 0)
	for _, b := range all {
		if _, err := follower.Append(append([]byte(nil), b...), AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	equalBatches(t, readAll(t, follower, 0, 0), all)
	if _, err := follower.Append(append([]byte(nil), all[0]...), AppendOptions{}); !errors.Is(err, ErrOffsetOrder) {
		t.Fatalf("append below log end: %v, want ErrOffsetOrder", err)
	}
	// Both logs know the same epoch history.
	for e := int32(0); e <= 5; e++ {
		le, lo := leader.EndOffsetForEpoch(e)
		fe, fo := follower.EndOffsetForEpoch(e)
		if le != fe || lo != fo {
			t.Fatalf("epoch %d: leader (%d, %d), follower (%d, %d)", e, le, lo, fe, fo)
		}
	}
	if e, o := leader.EndOffsetForEpoch(2); e != 2 || o != 90 {
		t.Fatalf("end offset for epoch 2: (%d, %d), want (2, 90)", e, o)
	}
	if e, o := leader.EndOffsetForEpoch(4); e != 4 || o != 150 {
		t.Fatalf("end offset for latest epoch: (%d, %d), want (4, 150)", e, o)
	}
}

func TestFlushMakesDurableAndWakesWaiters(t *testing.T) {
	t.Parallel()
	m, err := OpenManager(DefaultManagerConfig(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := m.Create(TopicPartition{Topic: "a", Partition: 0}, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	ch := l.Changed()
	res, err := l.Append(makeBatch(t, 4, 100, 1, 1, record.CodecNone), AppendOptions{AssignOffsets: true})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	default:
		t.Fatal("append did not signal Changed")
	}
	if !res.NeedsFlush {
		t.Fatal("default flush policy did not ask for a flush")
	}
	if l.DurableOffset() >= res.LastOffset+1 {
		t.Fatalf("durable offset %d before the flush", l.DurableOffset())
	}
	if err := l.Flush(context.Background(), res.LastOffset+1); err != nil {
		t.Fatal(err)
	}
	if l.DurableOffset() < res.LastOffset+1 {
		t.Fatalf("durable offset %d after flush, want >= %d", l.DurableOffset(), res.LastOffset+1)
	}
	// Page-cache mode: no flush asked for.
	cfg := testConfig()
	cfg.FlushMessages = 1 << 62
	if err := l.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	res, err = l.Append(makeBatch(t, 4, 100, 1, 1, record.CodecNone), AppendOptions{AssignOffsets: true})
	if err != nil || res.NeedsFlush {
		t.Fatalf("page-cache append: needs flush %v, err %v", res.NeedsFlush, err)
	}
}

func TestEpochCache(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/" + epochCheckpointFile
	c, err := loadEpochCache(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []epochEntry{{0, 0}, {1, 10}, {3, 30}, {2, 35}, {5, 50}} {
		if _, err := c.assign(e.epoch, e.start, true); err != nil {
			t.Fatal(err)
		}
	}
	want := []epochEntry{{0, 0}, {1, 10}, {3, 30}, {5, 50}}
	if got := c.snapshot(); !equalEpochs(got, want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	cases := []struct {
		ask       int32
		epoch     int32
		endOffset int64
	}{{0, 0, 10}, {1, 1, 30}, {2, 1, 30}, {3, 3, 50}, {4, 3, 50}, {5, 5, 77}, {6, -1, -1}, {-1, -1, -1}}
	for _, tc := range cases {
		if e, o := c.endOffsetFor(tc.ask, 77); e != tc.epoch || o != tc.endOffset {
			t.Fatalf("endOffsetFor(%d) = (%d, %d), want (%d, %d)", tc.ask, e, o, tc.epoch, tc.endOffset)
		}
	}
	if err := c.truncateFromEnd(30); err != nil {
		t.Fatal(err)
	}
	if err := c.truncateFromStart(12); err != nil {
		t.Fatal(err)
	}
	want = []epochEntry{{1, 12}}
	if got := c.snapshot(); !equalEpochs(got, want) {
		t.Fatalf("after truncation %v, want %v", got, want)
	}
	again, err := loadEpochCache(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.snapshot(); !equalEpochs(got, want) {
		t.Fatalf("reloaded %v, want %v", got, want)
	}
}

func equalEpochs(a, b []epochEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestAutoHighWatermark(t *testing.T) {
	t.Parallel()
	m, err := OpenManager(DefaultManagerConfig(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	durableCfg := testConfig()
	pageCacheCfg := testConfig()
	pageCacheCfg.FlushMessages = 1 << 62
	for name, cfg := range map[string]Config{"durable": durableCfg, "page-cache": pageCacheCfg} {
		l, err := m.Create(TopicPartition{Topic: name, Partition: 0}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		l.SetAutoHighWatermark(true)
		wake := make(chan struct{}, 1)
		unsubscribe := l.Subscribe(wake)
		res, err := l.Append(makeBatch(t, 3, 100, 1, 1, record.CodecNone), AppendOptions{AssignOffsets: true})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-wake:
		default:
			t.Fatalf("%s: no wake-up after append", name)
		}
		if name == "durable" {
			if hw := l.HighWatermark(); hw != 0 {
				t.Fatalf("durable: high watermark %d before the flush, want 0", hw)
			}
			if err := l.Flush(context.Background(), res.LastOffset+1); err != nil {
				t.Fatal(err)
			}
		}
		if hw := l.HighWatermark(); hw != 3 {
			t.Fatalf("%s: high watermark %d, want 3", name, hw)
		}
		// Reads bounded by the high watermark see the batch.
		if got := readAll(t, l, 0, l.HighWatermark()); len(got) != 1 {
			t.Fatalf("%s: %d batches below the high watermark, want 1", name, len(got))
		}
		unsubscribe()
	}
}
