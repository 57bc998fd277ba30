package storage

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gregor-io/gregor/protocol/record"
)

// fuzzTP is the partition the fuzz targets open.
var fuzzTP = TopicPartition{Topic: "fuzz", Partition: 0}

// fuzzValidLog returns a segment's worth of real batches back to back, as a
// leader writes them: dense offsets from 0, leader epochs 0 then 3. There is
// a batch of every codec built by record.Build, and, when protocol/record's
// golden files are there, the batches kafka-python wrote for them (every
// codec again, plus idempotent, transactional and header-carrying ones).
func fuzzValidLog(tb testing.TB) ([]byte, []record.Batch) {
	tb.Helper()
	var sets [][]byte
	for i, c := range []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd} {
		sets = append(sets, makeBatch(tb, 2+i, 24, int64(1000+10*i), uint64(i), c))
	}
	// Transactions: producer 70's aborted, 71's committed, 72's left open.
	for i, pid := range []int64{70, 71, 70, 72} {
		b, err := record.Build(nil, record.BatchHeader{Transactional: true, BaseTimestamp: int64(1100 + i),
			ProducerID: pid, BaseSequence: int32(i)}, []record.Record{{Key: []byte("t"), Value: []byte("txn")}})
		if err != nil {
			tb.Fatal(err)
		}
		sets = append(sets, b)
		if i == 1 {
			sets = append(sets, record.BuildEndTxnMarker(nil, 71, 0, record.EndTxnMarker{Commit: true, CoordinatorEpoch: 1}, 1200))
		}
		if i == 2 {
			sets = append(sets, record.BuildEndTxnMarker(nil, 70, 0, record.EndTxnMarker{CoordinatorEpoch: 1}, 1201))
		}
	}
	golden, _ := filepath.Glob(filepath.Join("..", "protocol", "record", "testdata", "batch-*.bin"))
	for _, path := range golden {
		data, err := os.ReadFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		if len(data) <= 1024 { // the large ones would only slow the fuzzer down
			sets = append(sets, data)
		}
	}
	var log []byte
	var batches []record.Batch
	next := int64(0)
	for i, set := range sets {
		it := record.NewIter(set)
		for b, ok := it.Next(); ok; b, ok = it.Next() {
			if err := record.CheckIntegrity(b); err != nil {
				tb.Fatalf("seed batch %d: %v", i, err)
			}
			start := len(log)
			log = append(log, b...)
			nb := record.Batch(log[start:])
			nb.SetBaseOffset(next)
			nb.SetPartitionLeaderEpoch(int32(3 * (2 * i / len(sets))))
			next = nb.NextOffset()
		}
		if it.Err() != nil {
			tb.Fatalf("seed set %d: %v", i, it.Err())
		}
	}
	// Slice the batches only now: log moved while it grew.
	for it := record.NewIter(log); ; {
		b, ok := it.Next()
		if !ok {
			break
		}
		batches = append(batches, b)
	}
	return log, batches
}

// fuzzSegment is one segment file of a fuzzed log.
type fuzzSegment struct {
	base int64
	data []byte
}

// expectRecovered is what recovery of segs (by base offset, the first at 0)
// must keep. In each segment, the longest run of batches from its start that
// each pass record.CheckIntegrity, start at or above the segment's base and
// the end of the batch before (offsets only go up; compacted logs and
// followers' logs may have gaps), do not overflow an int64, and end within
// 2^32 offsets of the segment base, as the index's relative offsets need,
// and end below the next segment's base. Every segment stays, with that
// run; end is where the log ends: past the last segment's run, or at its
// base when it keeps nothing.
func expectRecovered(segs []fuzzSegment) ([]record.Batch, int64) {
	var out []record.Batch
	var end int64
	for i, seg := range segs {
		next := seg.base
		file := seg.data
		for len(file) >= record.LogOverhead {
			size := record.Size(file)
			if size < record.HeaderSize || size > int64(len(file)) {
				break
			}
			b := record.Batch(file[:size])
			if record.CheckIntegrity(b) != nil || b.BaseOffset() < next ||
				b.LastOffset() < b.BaseOffset() || b.LastOffset()-seg.base > math.MaxUint32 ||
				(i+1 < len(segs) && b.LastOffset() >= segs[i+1].base) {
				break
			}
			out = append(out, b)
			next = b.NextOffset()
			file = file[size:]
		}
		end = next // the last segment's end, or its base when it keeps nothing
	}
	return out, end
}

// Fuzz modes: how the fuzzer's bytes make the segment file.
const (
	fuzzCutAppend = iota // the valid log cut at `at`, then data: a torn tail
	fuzzOverwrite        // the valid log with data written over it from `at`
	fuzzInsert           // data inserted into the valid log at `at`
	fuzzRaw              // data is the whole file
	fuzzModes

	fuzzGarbageIndex     = 1 << 2 // idx is written as the offset index
	fuzzGarbageTimeIndex = 1 << 3 // idx is written as the time index
	fuzzGarbageTxnIndex  = 1 << 5 // idx is written as the txn index
	// fuzzSplit cuts the file into three segments where the valid log's
	// batches at a third and two thirds start, with those batches' base
	// offsets as the segments' bases.
	fuzzSplit = 1 << 4
)

// FuzzRecovery writes a log as a crash may leave it (a valid log cut short,
// overwritten, spliced with garbage, or garbage alone; in one segment or
// three; with garbage index files), opens it after an unclean shutdown and
// checks that recovery keeps exactly the valid prefix, that the log reads
// back as whole batches with increasing offsets, and that it takes appends
// and reopens, clean and unclean.
func FuzzRecovery(f *testing.F) {
	valid, batches := fuzzValidLog(f)
	n := uint32(len(valid))
	boundary := func(i int) uint32 { // position of batch i
		var pos int
		for _, b := range batches[:i] {
			pos += len(b)
		}
		return uint32(pos)
	}
	f.Add(uint8(fuzzCutAppend), n, []byte(nil), []byte(nil))   // the valid log as it is
	f.Add(uint8(fuzzCutAppend), n-1, []byte(nil), []byte(nil)) // the last batch torn
	f.Add(uint8(fuzzCutAppend), boundary(3)+30, make([]byte, 4096), []byte(nil))
	f.Add(uint8(fuzzCutAppend), boundary(2), []byte(batches[0]), []byte(nil))               // a batch again, at an old offset
	f.Add(uint8(fuzzOverwrite), boundary(1)+40, []byte{0xff}, []byte(nil))                  // a flipped byte under the CRC
	f.Add(uint8(fuzzOverwrite), boundary(4)+8, []byte{0x7f, 0xff, 0xff, 0xff}, []byte(nil)) // a huge batch length
	f.Add(uint8(fuzzOverwrite), boundary(2)+7, []byte{0}, []byte(nil))                      // a base offset moved down
	f.Add(uint8(fuzzInsert), boundary(3), []byte(batches[1]), []byte(nil))
	f.Add(uint8(fuzzInsert), boundary(1), []byte{0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 50}, []byte(nil))
	f.Add(uint8(fuzzRaw), uint32(0), valid, []byte(nil))
	f.Add(uint8(fuzzRaw), uint32(0), []byte(batches[len(batches)-1]), []byte(nil)) // a log starting above 0
	idx := make([]byte, 0, 64)
	for i := range 4 {
		idx = binary.BigEndian.AppendUint32(idx, uint32(3*i))
		idx = binary.BigEndian.AppendUint32(idx, uint32(100*i))
	}
	f.Add(uint8(fuzzCutAppend|fuzzGarbageIndex), n, []byte(nil), idx)
	f.Add(uint8(fuzzOverwrite|fuzzGarbageIndex|fuzzGarbageTimeIndex), boundary(5), []byte{1, 2, 3}, idx[:12])
	third := len(batches) / 3
	f.Add(uint8(fuzzCutAppend|fuzzSplit|fuzzGarbageTxnIndex), n, []byte(nil), idx)
	f.Add(uint8(fuzzCutAppend|fuzzSplit), n, []byte(nil), []byte(nil))
	f.Add(uint8(fuzzCutAppend|fuzzSplit), boundary(third)+20, []byte(nil), []byte(nil)) // the middle segment empty
	f.Add(uint8(fuzzOverwrite|fuzzSplit), boundary(third-1)+30, []byte{0}, []byte(nil)) // damage before a roll
	f.Add(uint8(fuzzOverwrite|fuzzSplit|fuzzGarbageIndex), boundary(2*third)+20, []byte{9}, idx)

	f.Fuzz(func(t *testing.T, mode uint8, at uint32, data, idx []byte) {
		if len(data) > 256<<10 || len(idx) > 64<<10 {
			t.Skip("inputs this large only slow the fuzzer down")
		}
		pos := int(at % (n + 1))
		var file []byte
		intact := 0 // valid batches that lie wholly before the first byte changed
		switch mode % fuzzModes {
		case fuzzCutAppend:
			file = append(append(file, valid[:pos]...), data...)
		case fuzzOverwrite:
			file = append(file, valid...)
			if end := pos + len(data); end > len(file) {
				file = append(file, make([]byte, end-len(file))...)
			}
			copy(file[pos:], data)
		case fuzzInsert:
			file = append(append(append(file, valid[:pos]...), data...), valid[pos:]...)
		case fuzzRaw:
			file, pos = data, 0
		}
		for end := 0; intact < len(batches); intact++ {
			if end += len(batches[intact]); end > pos {
				break
			}
		}

		segs := []fuzzSegment{{base: 0, data: file}}
		if mode&fuzzSplit != 0 {
			segs = segs[:0]
			from := 0
			for i, k := range []int{0, len(batches) / 3, 2 * len(batches) / 3} {
				to := len(file)
				if i < 2 {
					to = min(int(boundary((i+1)*len(batches)/3)), len(file))
				}
				segs = append(segs, fuzzSegment{base: batches[k].BaseOffset(), data: file[from:to]})
				from = to
			}
		}

		dir := t.TempDir()
		writeFile := func(base int64, suffix string, b []byte) {
			if err := os.WriteFile(filepath.Join(dir, segmentFileName(base, suffix)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, seg := range segs {
			writeFile(seg.base, logSuffix, seg.data)
			if mode&fuzzGarbageIndex != 0 {
				writeFile(seg.base, indexSuffix, idx)
			}
			if mode&fuzzGarbageTimeIndex != 0 {
				writeFile(seg.base, timeIndexSuffix, idx)
			}
			if mode&fuzzGarbageTxnIndex != 0 {
				writeFile(seg.base, txnIndexSuffix, idx)
			}
		}
		cfg := DefaultConfig()
		cfg.IndexIntervalBytes = 128
		cfg.FlushMessages = math.MaxInt64

		l, err := Open(dir, fuzzTP, cfg, OpenState{}, nil)
		if err != nil {
			t.Fatalf("open after a crash: %v", err)
		}
		want, wantEnd := expectRecovered(segs)
		got := checkFuzzLog(t, l, want, wantEnd)
		checkFuzzTxns(t, l, got)
		for i := range intact {
			if i >= len(got) || !bytes.Equal(got[i], batches[i]) {
				t.Fatalf("recovery lost valid batch %d (offset %d), which lies before the first changed byte %d; kept %d batches",
					i, batches[i].BaseOffset(), pos, len(got))
			}
		}
		var size int64
		for _, b := range want {
			size += int64(len(b))
		}
		var onDisk int64
		paths, _ := filepath.Glob(filepath.Join(dir, "*"+logSuffix))
		for _, path := range paths {
			onDisk += fileSize(t, path)
		}
		if onDisk != size || l.Size() != size {
			t.Fatalf("segment files hold %d bytes after recovery (log size %d), want the %d bytes of valid batches",
				onDisk, l.Size(), size)
		}

		// The log takes an append at its end.
		leo := l.LogEndOffset()
		set := makeBatch(t, 2, 10, 5000, 99, record.CodecNone)
		res, err := l.Append(set, AppendOptions{AssignOffsets: true})
		if err != nil {
			t.Fatalf("append after recovery at log end %d: %v", leo, err)
		}
		if res.FirstOffset != leo || res.LastOffset != leo+1 {
			t.Fatalf("append after recovery got offsets %d..%d, want %d..%d", res.FirstOffset, res.LastOffset, leo, leo+1)
		}
		want = append(want[:len(want):len(want)], set)
		checkFuzzLog(t, l, want, leo+2)
		leo = l.LogEndOffset()
		if err := l.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}

		// Clean and unclean reopens find the same log.
		for _, st := range []OpenState{{Clean: true, RecoveryPoint: leo}, {}} {
			l, err := Open(dir, fuzzTP, cfg, st, nil)
			if err != nil {
				t.Fatalf("reopen (clean %v): %v", st.Clean, err)
			}
			checkFuzzTxns(t, l, checkFuzzLog(t, l, want, leo))
			if err := l.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
		}
	})
}

// checkFuzzTxns checks that the log's last stable offset (with the high
// watermark at the log end) and aborted transactions are what a replay of
// its batches gives.
func checkFuzzTxns(t *testing.T, l *Log, got []record.Batch) {
	t.Helper()
	l.SetHighWatermark(l.LogEndOffset())
	want := replayTxns(t, got)
	wantLSO := l.LogEndOffset()
	for _, o := range want.ongoing {
		wantLSO = min(wantLSO, max(o, l.LogStartOffset()))
	}
	if lso := l.LastStableOffset(); lso != wantLSO {
		t.Fatalf("last stable offset %d, want %d (open transactions %v)", lso, wantLSO, want.ongoing)
	}
	aborted, err := l.AbortedTransactions(l.LogStartOffset(), l.LogEndOffset())
	if err != nil {
		t.Fatalf("aborted transactions: %v", err)
	}
	if (len(aborted) > 0 || len(want.aborted) > 0) && !reflect.DeepEqual(aborted, want.aborted) {
		t.Fatalf("aborted transactions %+v, want %+v", aborted, want.aborted)
	}
}

// checkFuzzLog checks that l holds exactly want, read from the log start to
// the log end, and that a read at each batch's first and last offset finds
// that batch. It returns what it read.
func checkFuzzLog(t *testing.T, l *Log, want []record.Batch, wantEnd int64) []record.Batch {
	t.Helper()
	if l.LogEndOffset() != wantEnd {
		t.Fatalf("log end offset %d, want %d (%d valid batches)", l.LogEndOffset(), wantEnd, len(want))
	}
	got := readAll(t, l, l.LogStartOffset(), 0)
	next := int64(math.MinInt64)
	for i, b := range got {
		if b.BaseOffset() < next || b.LastOffset() < b.BaseOffset() {
			t.Fatalf("batch %d has offsets %d..%d after a batch ending before %d", i, b.BaseOffset(), b.LastOffset(), next)
		}
		next = b.NextOffset()
	}
	if len(got) != len(want) {
		t.Fatalf("log holds %d batches, want the %d valid ones", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("batch %d (offset %d) differs from the valid batch at offset %d", i, got[i].BaseOffset(), want[i].BaseOffset())
		}
	}
	for _, b := range want {
		for _, off := range []int64{b.BaseOffset(), b.LastOffset()} {
			res, err := l.Read(ReadOptions{Offset: off, MaxBytes: 1, MinOneBatch: true})
			if err != nil {
				t.Fatalf("read at %d: %v", off, err)
			}
			buf, err := res.AppendTo(nil)
			res.Release()
			if err != nil {
				t.Fatalf("read at %d: %v", off, err)
			}
			if !bytes.Equal(buf, b) {
				t.Fatalf("read at %d returned %d bytes, want the batch at %d (%d bytes)", off, len(buf), b.BaseOffset(), len(b))
			}
		}
	}
	return got
}

// A batch whose base offset lies so near math.MaxInt64 that its last offset
// overflows (the base offset is outside the CRC, so one damaged field does
// it) must end the valid prefix: offsets past it would run backwards. Found
// by FuzzRecovery.
func TestRecoveryStopsAtOffsetOverflow(t *testing.T) {
	t.Parallel()
	valid, batches := fuzzValidLog(t)
	file := append([]byte(nil), valid...)
	pos := len(batches[0]) + len(batches[1])
	binary.BigEndian.PutUint64(file[pos:], math.MaxInt64-1) // batch 2 holds 4 records: its last offset overflows
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, segmentFileName(0, logSuffix)), file, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir, fuzzTP, DefaultConfig(), OpenState{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if leo, want := l.LogEndOffset(), batches[1].NextOffset(); leo != want {
		t.Errorf("log end offset %d after recovery, want %d: recovery kept the batch at %d whose last offset overflows, and what follows it",
			leo, want, int64(math.MaxInt64-1))
	}

	// A follower's append of such a batch is refused too.
	f := openTestLog(t, t.TempDir(), DefaultConfig(), OpenState{})
	defer f.Close()
	b := append(record.Batch(nil), batches[2]...)
	b.SetBaseOffset(math.MaxInt64 - 1)
	if res, err := f.Append(b, AppendOptions{}); err == nil {
		t.Errorf("follower append of a batch at %d with last offset delta %d succeeded (offsets %d..%d, log end now %d), want an error",
			b.BaseOffset(), b.LastOffsetDelta(), res.FirstOffset, res.LastOffset, f.LogEndOffset())
	}
}
