package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"
)

// patchHeader changes header fields of a copy of b with fn and rewrites the
// CRC, so that only the change itself is wrong.
func patchHeader(b Batch, fn func(b Batch)) Batch {
	c := Batch(bytes.Clone(b))
	fn(c)
	c.UpdateCRC()
	return c
}

func putInt32(off int, v int32) func(Batch) {
	return func(b Batch) { binary.BigEndian.PutUint32(b[off:], uint32(v)) }
}

// recordErrorIndexes checks that err is a RecordErrors and returns its
// indexes, after checking each wraps want.
func recordErrorIndexes(t *testing.T, err error, want error) []int32 {
	t.Helper()
	var res RecordErrors
	if !errors.As(err, &res) {
		t.Fatalf("error %v (%T), want RecordErrors", err, err)
	}
	var idx []int32
	for _, re := range res {
		if !errors.Is(re, want) {
			t.Errorf("record %d: error %v, want one wrapping %v", re.Index, re.Err, want)
		}
		idx = append(idx, re.Index)
	}
	return idx
}

func TestGoldenValidate(t *testing.T) {
	t.Parallel()
	for _, g := range goldenFiles(t) {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			it := NewIter(g.data)
			scratch := make([]byte, 0, 16)
			for i, w := range g.set.Batches {
				b, ok := it.Next()
				if !ok {
					t.Fatalf("batch %d: %v", i, it.Err())
				}
				if err := CheckIntegrity(b); err != nil {
					t.Fatalf("batch %d: CheckIntegrity: %v, want nil", i, err)
				}
				if err := ValidateHeader(b); err != nil {
					t.Fatalf("batch %d: ValidateHeader: %v, want nil", i, err)
				}
				info, err := Validate(b, ValidateOptions{})
				if err != nil {
					t.Fatalf("batch %d: Validate without records: %v, want nil", i, err)
				}
				if info.MaxTimestamp != w.MaxTimestamp || info.MaxTimestampDelta != w.LastOffsetDelta {
					t.Errorf("batch %d: header-only info %+v, want max timestamp %d at the last delta %d",
						i, info, w.MaxTimestamp, w.LastOffsetDelta)
				}

				// Scratch starts at 16 bytes: records cross its refills.
				scratchCap := cap(scratch)
				info, err = Validate(b, ValidateOptions{Records: true, Scratch: &scratch})
				if err != nil {
					t.Fatalf("batch %d: Validate with records: %v, want nil", i, err)
				}
				// The first record with the largest timestamp.
				maxTS, maxDelta := int64(math.MinInt64), int32(0)
				for _, r := range w.Records {
					if r.Timestamp > maxTS {
						maxTS, maxDelta = r.Timestamp, int32(r.Offset-w.BaseOffset)
					}
				}
				if info.MaxTimestamp != maxTS || info.MaxTimestampDelta != maxDelta {
					t.Errorf("batch %d: info %+v, want max timestamp %d at delta %d", i, info, maxTS, maxDelta)
				}
				if maxTS != w.MaxTimestamp {
					t.Errorf("batch %d: header max timestamp %d, records' max %d", i, w.MaxTimestamp, maxTS)
				}
				if len(scratch) != 0 || cap(scratch) != scratchCap {
					t.Errorf("batch %d: Scratch came back with length %d and capacity %d, want it reused empty (capacity %d)",
						i, len(scratch), cap(scratch), scratchCap)
				}

				compareRecords(t, fmt.Sprintf("batch %d", i), decodeAll(t, b), w.Records)

				// The same through a reused scratch buffer.
				var got []gotRecord
				err = ForEachRecord(b, &scratch, func(off, ts int64, r *Record) error {
					got = append(got, gotRecord{off, ts, cloneRecord(r)})
					return nil
				})
				if err != nil {
					t.Fatalf("batch %d: ForEachRecord with scratch: %v", i, err)
				}
				compareRecords(t, fmt.Sprintf("batch %d with scratch", i), got, w.Records)
			}
		})
	}
}

// TestGoldenCodecsAgree: the five codec batches hold the same 20 records, and
// decompressing each gives exactly the records section of the uncompressed one.
func TestGoldenCodecsAgree(t *testing.T) {
	t.Parallel()
	plain := goldenBatchBytes(t, "batch-none")
	for _, name := range []string{"batch-gzip", "batch-snappy", "batch-lz4", "batch-zstd"} {
		b := goldenBatchBytes(t, name)
		got, err := Decompress(nil, b.Codec(), b.Records(), 1<<20)
		if err != nil {
			t.Fatalf("%s: Decompress: %v", name, err)
		}
		if !bytes.Equal(got, plain.Records()) {
			t.Fatalf("%s: decompressed %d bytes that differ from the %d of batch-none's records", name, len(got), len(plain.Records()))
		}
	}
}

// TestCheckIntegrityFlippedByte flips every byte, then every bit, of a small
// batch. Only the base offset and leader epoch may change unnoticed: they lie
// outside the CRC (a base offset flipped negative is caught by its range).
func TestCheckIntegrityFlippedByte(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"batch-idempotent", "batch-gzip"} {
		orig := goldenBatchBytes(t, name)
		wantFor := func(pos int, b Batch) error {
			switch {
			case pos < offBatchLength && b.BaseOffset() < 0:
				return ErrInvalidRecord // a base offset no log can hold
			case pos < offBatchLength:
				return nil // base offset
			case pos < offLeaderEpoch:
				return ErrTruncated // the length no longer matches the bytes
			case pos < offMagic:
				return nil // leader epoch
			case pos == offMagic:
				return ErrMagic
			default:
				return ErrCorrupt // the CRC field or the bytes it covers
			}
		}
		for pos := range orig {
			for _, mask := range []byte{0xff, 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80} {
				b := Batch(bytes.Clone(orig))
				b[pos] ^= mask
				err := CheckIntegrity(b)
				if want := wantFor(pos, b); !errors.Is(err, want) { // errors.Is(err, nil) holds only for a nil err
					t.Fatalf("%s: byte %d ^ %#02x: CheckIntegrity %v, want %v", name, pos, mask, err, want)
				}
			}
		}
	}
}

// TestParseFlippedLength flips bits of the batch length and feeds the bytes
// through Parse, as log recovery does: a longer length is truncation, one
// below the header is too small, and a shorter one that still parses fails
// on the CRC.
func TestParseFlippedLength(t *testing.T) {
	t.Parallel()
	orig := goldenBatchBytes(t, "batch-idempotent") // 127 bytes, length 0x73
	if len(orig) != 127 {
		t.Fatalf("batch-idempotent is %d bytes, the cases below assume 127", len(orig))
	}
	cases := []struct {
		pos  int
		mask byte
		want error
	}{
		{8, 0xff, ErrBatchTooSmall}, // 0xff000073: negative
		{8, 0x80, ErrBatchTooSmall}, // negative
		{8, 0x01, ErrTruncated},     // 0x01000073
		{9, 0xff, ErrTruncated},
		{10, 0xff, ErrTruncated},
		{10, 0x01, ErrTruncated}, // 0x173
		{11, 0xff, ErrTruncated}, // 0x8c = 140
		{11, 0x80, ErrTruncated}, // 0xf3
		{11, 0x01, ErrCorrupt},   // 0x72: a batch one byte short, CRC mismatch
		{11, 0x40, ErrCorrupt},   // 0x33 = 51: still a whole header
		{11, 0x70, ErrBatchTooSmall},
		{11, 0x73, ErrBatchTooSmall}, // zero
	}
	for _, c := range cases {
		buf := bytes.Clone(orig)
		buf[c.pos] ^= c.mask
		b, _, err := Parse(buf)
		if err == nil {
			err = CheckIntegrity(b)
		}
		if !errors.Is(err, c.want) {
			t.Errorf("byte %d ^ %#02x (length %#x): %v, want %v", c.pos, c.mask,
				binary.BigEndian.Uint32(buf[offBatchLength:]), err, c.want)
		}
	}
}

func TestCheckIntegrityTruncated(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"batch-none", "batch-zstd"} {
		b := goldenBatchBytes(t, name)
		for n := 0; n < len(b); n++ {
			want := ErrTruncated
			if n < HeaderSize {
				want = ErrBatchTooSmall
			}
			cut := b[:n:n]
			if err := CheckIntegrity(cut); !errors.Is(err, want) {
				t.Fatalf("%s cut to %d bytes: CheckIntegrity %v, want %v", name, n, err, want)
			}
			if err := ValidateHeader(cut); !errors.Is(err, want) {
				t.Fatalf("%s cut to %d bytes: ValidateHeader %v, want %v", name, n, err, want)
			}
			if _, err := Validate(cut, ValidateOptions{Records: true}); !errors.Is(err, want) {
				t.Fatalf("%s cut to %d bytes: Validate %v, want %v", name, n, err, want)
			}
		}
		long := append(bytes.Clone(b), 0)
		if err := CheckIntegrity(long); !errors.Is(err, ErrTruncated) {
			t.Fatalf("%s with a byte more than its length: %v, want %v", name, err, ErrTruncated)
		}
	}
}

// TestValidateTruncatedRecords cuts the records section and fixes up the
// length and CRC, as a buggy producer might send: the header checks pass, the
// record walk does not.
func TestValidateTruncatedRecords(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		want error
	}{
		{"batch-none", ErrInvalidRecord},
		{"batch-headers", ErrInvalidRecord},
		{"batch-gzip", ErrCorrupt},
		{"batch-snappy", ErrCorrupt},
		{"batch-lz4", ErrCorrupt},
		{"batch-zstd", ErrCorrupt},
	} {
		b := goldenBatchBytes(t, c.name)
		for n := HeaderSize; n < len(b); n++ {
			cut := patchHeader(b[:n], putInt32(offBatchLength, int32(n-LogOverhead)))
			if err := ValidateHeader(cut); err != nil {
				t.Fatalf("%s cut to %d bytes: ValidateHeader %v, want nil", c.name, n, err)
			}
			want := c.want
			switch {
			case n == HeaderSize && (c.name == "batch-lz4" || c.name == "batch-zstd"):
				// No bytes are an empty lz4 or zstd stream: they
				// decompress to no records.
				want = ErrInvalidRecord
			case n == HeaderSize+xerialHeaderLen && c.name == "batch-snappy":
				// So is a xerial stream cut right after its header.
				want = ErrInvalidRecord
			}
			_, err := Validate(cut, ValidateOptions{Records: true})
			if !errors.Is(err, want) {
				t.Fatalf("%s cut to %d bytes: Validate %v, want %v", c.name, n, err, want)
			}
			if err := ForEachRecord(cut, nil, func(int64, int64, *Record) error { return nil }); err == nil {
				t.Fatalf("%s cut to %d bytes: ForEachRecord succeeded", c.name, n)
			}
		}
	}
}

func TestValidateHeaderRejects(t *testing.T) {
	t.Parallel()
	b := goldenBatchBytes(t, "batch-none") // 20 records
	cases := []struct {
		name string
		b    Batch
		want error
	}{
		{"count above offset range", patchHeader(b, putInt32(offRecordCount, 21)), ErrInvalidRecord},
		{"count below offset range", patchHeader(b, putInt32(offRecordCount, 19)), ErrInvalidRecord},
		{"zero count", patchHeader(b, putInt32(offRecordCount, 0)), ErrInvalidRecord},
		{"negative count", patchHeader(b, putInt32(offRecordCount, -1)), ErrInvalidRecord},
		{"last delta above count", patchHeader(b, putInt32(offLastDelta, 20)), ErrInvalidRecord},
		{"negative last delta", patchHeader(b, putInt32(offLastDelta, -1)), ErrInvalidRecord},
		{"max last delta", patchHeader(b, func(b Batch) {
			putInt32(offLastDelta, math.MaxInt32)(b)
			putInt32(offRecordCount, math.MinInt32)(b) // MaxInt32+1 wrapped
		}), ErrInvalidRecord},
		{"magic 1", patchHeader(b, func(b Batch) { b[offMagic] = 1 }), ErrMagic},
		{"magic 3", patchHeader(b, func(b Batch) { b[offMagic] = 3 }), ErrMagic},
		{"codec 5", patchHeader(b, func(b Batch) { b[offAttributes+1] |= 5 }), ErrUnknownCodec},
		{"codec 7", patchHeader(b, func(b Batch) { b[offAttributes+1] |= 7 }), ErrUnknownCodec},
		{"idempotent without sequence", patchHeader(b, func(b Batch) {
			binary.BigEndian.PutUint64(b[offProducerID:], 77)
			putInt32(offBaseSequence, NoSequence)(b)
		}), ErrInvalidRecord},
		{"stale CRC", func() Batch { c := Batch(bytes.Clone(b)); c[offBaseTimestamp]++; return c }(), ErrCorrupt},
	}
	for _, c := range cases {
		if err := ValidateHeader(c.b); !errors.Is(err, c.want) {
			t.Errorf("%s: ValidateHeader %v, want %v", c.name, err, c.want)
		}
		if _, err := Validate(c.b, ValidateOptions{Records: true}); !errors.Is(err, c.want) {
			t.Errorf("%s: Validate %v, want %v", c.name, err, c.want)
		}
	}

	// CheckIntegrity, for stored batches, cares about none of the record
	// shape checks but the sign of the last offset delta.
	for _, c := range cases[:5] {
		if err := CheckIntegrity(c.b); err != nil {
			t.Errorf("%s: CheckIntegrity %v, want nil", c.name, err)
		}
	}
	if err := CheckIntegrity(cases[5].b); !errors.Is(err, ErrInvalidRecord) {
		t.Errorf("negative last delta: CheckIntegrity %v, want %v", err, ErrInvalidRecord)
	}

	// An idempotent batch with a sequence, and a producer id of -1 with no
	// sequence, are both fine.
	idem := goldenBatchBytes(t, "batch-idempotent")
	if err := ValidateHeader(idem); err != nil {
		t.Errorf("idempotent batch with sequence 17: %v, want nil", err)
	}
	if b.ProducerID() != NoProducerID || b.BaseSequence() != NoSequence {
		t.Fatalf("batch-none: producer %d sequence %d, want -1 -1", b.ProducerID(), b.BaseSequence())
	}
}

// TestValidateRecordCountMismatch declares more or fewer records than the
// section holds, with header fields that agree with each other.
func TestValidateRecordCountMismatch(t *testing.T) {
	t.Parallel()
	b := goldenBatchBytes(t, "batch-nulls") // 6 records
	for _, n := range []int32{1, 5, 7, 100} {
		c := patchHeader(b, func(b Batch) {
			putInt32(offRecordCount, n)(b)
			putInt32(offLastDelta, n-1)(b)
		})
		if err := ValidateHeader(c); err != nil {
			t.Fatalf("count %d: ValidateHeader %v, want nil", n, err)
		}
		if _, err := Validate(c, ValidateOptions{Records: true}); !errors.Is(err, ErrInvalidRecord) {
			t.Fatalf("count %d of 6 records: Validate %v, want %v", n, err, ErrInvalidRecord)
		}
		if _, err := Validate(c, ValidateOptions{}); err != nil {
			t.Fatalf("count %d: Validate without records %v, want nil (the records are not read)", n, err)
		}
	}
}

func TestValidateOffsetDeltasMustBeDense(t *testing.T) {
	t.Parallel()
	for _, deltas := range [][]int32{{0, 2, 1}, {1, 1, 2}, {0, 0, 2}, {2, 1, 0}} {
		recs := make([]Record, len(deltas))
		for i, d := range deltas {
			recs[i] = Record{OffsetDelta: d, Key: []byte("k"), Value: []byte("v")}
		}
		b, err := Build(nil, BatchHeader{ProducerID: -1, BaseSequence: -1, BaseTimestamp: 1}, recs)
		if err != nil {
			t.Fatal(err)
		}
		if err := ValidateHeader(b); err != nil {
			t.Fatalf("deltas %v: ValidateHeader %v, want nil (last delta 2, 3 records)", deltas, err)
		}
		if _, err := Validate(b, ValidateOptions{Records: true}); !errors.Is(err, ErrInvalidRecord) {
			t.Fatalf("deltas %v: Validate %v, want %v", deltas, err, ErrInvalidRecord)
		}
	}
}

// TestValidateSparseOffsets: a compacted batch keeps its offsets sparse. It is
// a sound stored batch but not one a producer may send.
func TestValidateSparseOffsets(t *testing.T) {
	t.Parallel()
	recs := []Record{
		{OffsetDelta: 0, TimestampDelta: 0, Key: []byte("a"), Value: []byte("1")},
		{OffsetDelta: 3, TimestampDelta: 5, Key: []byte("b"), Value: nil},
		{OffsetDelta: 7, TimestampDelta: 9, Key: []byte("c"), Value: []byte("3")},
	}
	for c := CodecNone; c <= CodecZstd; c++ {
		b, err := Build(nil, BatchHeader{BaseOffset: 50, Codec: c, BaseTimestamp: 1000, ProducerID: -1, BaseSequence: -1}, recs)
		if err != nil {
			t.Fatalf("%v: Build: %v", c, err)
		}
		if err := CheckIntegrity(Batch(b)); err != nil {
			t.Fatalf("%v: CheckIntegrity of a compacted batch: %v, want nil", c, err)
		}
		if Batch(b).LastOffsetDelta() != 7 || Batch(b).RecordCount() != 3 {
			t.Fatalf("%v: last delta %d count %d, want 7 and 3", c, Batch(b).LastOffsetDelta(), Batch(b).RecordCount())
		}
		if err := ValidateHeader(Batch(b)); !errors.Is(err, ErrInvalidRecord) {
			t.Fatalf("%v: ValidateHeader of a compacted batch: %v, want %v", c, err, ErrInvalidRecord)
		}
		var offsets []int64
		for _, r := range decodeAll(t, Batch(b)) {
			offsets = append(offsets, r.offset)
		}
		if want := []int64{50, 53, 57}; !slices.Equal(offsets, want) {
			t.Fatalf("%v: offsets %v, want %v", c, offsets, want)
		}
	}
}

func TestValidateControlBatch(t *testing.T) {
	t.Parallel()
	// A transaction marker as a coordinator writes it: key version 0, type 1
	// (commit); value version 0, coordinator epoch 3.
	b, err := Build(nil, BatchHeader{
		Control: true, Transactional: true, ProducerID: 9, ProducerEpoch: 1, BaseSequence: -1, BaseTimestamp: 5,
	}, []Record{{Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 0, 3}}})
	if err != nil {
		t.Fatal(err)
	}
	if !Batch(b).Control() {
		t.Fatal("Build did not set the control bit")
	}
	if err := CheckIntegrity(Batch(b)); err != nil {
		t.Fatalf("CheckIntegrity of a control batch: %v, want nil", err)
	}
	for _, opts := range []ValidateOptions{{}, {Records: true}} {
		if _, err := Validate(Batch(b), opts); !errors.Is(err, ErrInvalidRecord) {
			t.Fatalf("Validate %+v of a control batch: %v, want %v", opts, err, ErrInvalidRecord)
		}
	}
}

func TestValidateRequireKeys(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		want []int32
	}{
		{"batch-nulls", []int32{0, 3}}, // records 2 and 5 have empty, not null, keys
		{"batch-headers", []int32{3}},
		{"records-multi", []int32{0, 1}}, // the third batch's two records
	}
	for _, c := range cases {
		g := loadGolden(t, c.name)
		var got []int32
		it := NewIter(g.data)
		for b, ok := it.Next(); ok; b, ok = it.Next() {
			_, err := Validate(b, ValidateOptions{Records: true, RequireKeys: true})
			if err != nil {
				if !errors.Is(err, ErrInvalidRecord) {
					t.Fatalf("%s: Validate %v, want one wrapping %v", c.name, err, ErrInvalidRecord)
				}
				got = append(got, recordErrorIndexes(t, err, ErrInvalidRecord)...)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: record errors at %v, want %v", c.name, got, c.want)
		}
	}
	// Without Records the keys are not looked at.
	if _, err := Validate(goldenBatchBytes(t, "batch-nulls"), ValidateOptions{RequireKeys: true}); err != nil {
		t.Errorf("RequireKeys without Records: %v, want nil", err)
	}
}

func TestValidateTimestamps(t *testing.T) {
	t.Parallel()
	const base = 1700000000000 // the golden corpus: record i at base+7i, record 3 at base-1000, 11 at base+50000
	opts := ValidateOptions{Records: true, CheckTimestamps: true, Now: base + 100, TimestampBeforeMax: 500, TimestampAfterMax: 10000}
	for _, name := range []string{"batch-none", "batch-gzip", "batch-snappy", "batch-lz4", "batch-zstd"} {
		b := goldenBatchBytes(t, name)
		info, err := Validate(b, opts)
		if !errors.Is(err, ErrInvalidTimestamp) {
			t.Fatalf("%s: Validate %v, want %v", name, err, ErrInvalidTimestamp)
		}
		if got := recordErrorIndexes(t, err, ErrInvalidTimestamp); !slices.Equal(got, []int32{3, 11}) {
			t.Fatalf("%s: timestamp errors at %v, want [3 11]", name, got)
		}
		if info.MaxTimestamp != base+50000 || info.MaxTimestampDelta != 11 {
			t.Fatalf("%s: info %+v with record errors, want max timestamp %d at delta 11", name, info, int64(base+50000))
		}

		// Looser bounds accept every record; negative bounds check nothing.
		for _, o := range []ValidateOptions{
			{Records: true, CheckTimestamps: true, Now: base + 100, TimestampBeforeMax: 1100, TimestampAfterMax: 49900},
			{Records: true, CheckTimestamps: true, Now: base + 100, TimestampBeforeMax: -1, TimestampAfterMax: -1},
			{Records: true, CheckTimestamps: true, Now: 0, TimestampBeforeMax: -1, TimestampAfterMax: math.MaxInt64},
			{Records: true, CheckTimestamps: false, Now: 0},
		} {
			if _, err := Validate(b, o); err != nil {
				t.Fatalf("%s: Validate with before %d after %d check %v: %v, want nil",
					name, o.TimestampBeforeMax, o.TimestampAfterMax, o.CheckTimestamps, err)
			}
		}
		// One millisecond tighter on each side rejects the edge records.
		tight := opts
		tight.TimestampBeforeMax, tight.TimestampAfterMax = 1099, 49899
		if got := recordErrorIndexes(t, mustErr(Validate(b, tight)), ErrInvalidTimestamp); !slices.Equal(got, []int32{3, 11}) {
			t.Fatalf("%s: bounds one ms tight: errors at %v, want [3 11]", name, got)
		}

		// LogAppendTime batches are exempt: the broker overwrites their time.
		lat := Batch(bytes.Clone(b))
		lat.SetLogAppendTime(base)
		if _, err := Validate(lat, opts); err != nil {
			t.Fatalf("%s with LogAppendTime: Validate %v, want nil", name, err)
		}
	}

	// Missing keys and bad timestamps are listed together, in record order.
	b := goldenBatchBytes(t, "batch-nulls") // timestamps base..base+5, null keys at 0 and 3
	o := ValidateOptions{Records: true, RequireKeys: true, CheckTimestamps: true, Now: base + 4, TimestampBeforeMax: 1, TimestampAfterMax: 0}
	_, err := Validate(b, o)
	var res RecordErrors
	if !errors.As(err, &res) {
		t.Fatalf("Validate %v, want RecordErrors", err)
	}
	type want struct {
		index int32
		err   error
	}
	wants := []want{{0, ErrInvalidRecord}, {0, ErrInvalidTimestamp}, {1, ErrInvalidTimestamp}, {2, ErrInvalidTimestamp}, {3, ErrInvalidRecord}, {5, ErrInvalidTimestamp}}
	if len(res) != len(wants) {
		t.Fatalf("record errors %v, want %d of them", res, len(wants))
	}
	for i, w := range wants {
		if res[i].Index != w.index || !errors.Is(res[i], w.err) {
			t.Errorf("record error %d: %v, want record %d with %v", i, res[i], w.index, w.err)
		}
	}
}

func mustErr(_ BatchInfo, err error) error { return err }

// TestValidateExtremeTimestamps: timestamps far from now, and timestamp
// deltas that overflow, fall outside any finite bound.
func TestValidateExtremeTimestamps(t *testing.T) {
	t.Parallel()
	const now = 1700000000000
	const day = 24 * 3600 * 1000
	cases := []struct {
		name       string
		base       int64
		delta      int64
		wantMax    int64 // the max timestamp Validate reports
		wantReject bool
	}{
		{"now", now, 0, now, false},
		{"minimum timestamp", math.MinInt64, 0, -1, true},
		{"just above minimum", math.MinInt64 + 1, 0, -1, true},
		{"negative and far", -now, 0, -1, true},
		{"no timestamp: unchecked, as in Kafka", -1, 0, -1, false},
		{"one before no timestamp", -2, 0, -1, true},
		{"maximum timestamp", math.MaxInt64, 0, math.MaxInt64, true},
		{"delta overflows up", math.MaxInt64 - 10, 20, math.MaxInt64, true},
		{"delta overflows down", math.MinInt64 + 10, -20, math.MaxInt64, true},
		{"negative base, delta back to now", -now, 2 * now, now, false},
	}
	for _, c := range cases {
		b, err := Build(nil, BatchHeader{BaseTimestamp: c.base, ProducerID: -1, BaseSequence: -1},
			[]Record{{TimestampDelta: c.delta, Key: []byte("k")}})
		if err != nil {
			t.Fatal(err)
		}
		info, err := Validate(Batch(b), ValidateOptions{Records: true, CheckTimestamps: true, Now: now, TimestampBeforeMax: day, TimestampAfterMax: day})
		if c.wantReject {
			if !errors.Is(err, ErrInvalidTimestamp) {
				t.Errorf("%s: Validate %v, want %v", c.name, err, ErrInvalidTimestamp)
			}
		} else if err != nil {
			t.Errorf("%s: Validate %v, want nil", c.name, err)
		}
		if info.MaxTimestamp != c.wantMax {
			t.Errorf("%s: max timestamp %d, want %d", c.name, info.MaxTimestamp, c.wantMax)
		}
	}
}

func TestValidateDecompressLimit(t *testing.T) {
	t.Parallel()
	big := make([]Record, 64)
	for i := range big {
		big[i] = Record{OffsetDelta: int32(i), Key: []byte("k"), Value: bytes.Repeat([]byte{'x'}, 1024)}
	}
	for c := CodecGzip; c <= CodecZstd; c++ {
		b, err := Build(nil, BatchHeader{Codec: c, ProducerID: -1, BaseSequence: -1}, big)
		if err != nil {
			t.Fatal(err)
		}
		raw := 0
		for i := range big {
			raw += len(AppendRecord(nil, &big[i]))
		}
		if _, err := Validate(Batch(b), ValidateOptions{Records: true, MaxDecompressed: raw - 1}); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%v: Validate with a limit one below the %d record bytes: %v, want %v", c, raw, err, ErrTooLarge)
		}
		if _, err := Validate(Batch(b), ValidateOptions{Records: true, MaxDecompressed: raw}); err != nil {
			t.Errorf("%v: Validate with a limit of exactly %d: %v, want nil", c, raw, err)
		}
		// Uncompressed records are not subject to the limit: they are
		// already in memory.
		plain, _ := Build(nil, BatchHeader{ProducerID: -1, BaseSequence: -1}, big)
		if _, err := Validate(Batch(plain), ValidateOptions{Records: true, MaxDecompressed: 10}); err != nil {
			t.Errorf("uncompressed batch with MaxDecompressed 10: %v, want nil", err)
		}
	}
}

func TestForEachRecordStopsOnError(t *testing.T) {
	t.Parallel()
	b := goldenBatchBytes(t, "batch-lz4")
	stop := errors.New("stop")
	calls := 0
	err := ForEachRecord(b, nil, func(off, ts int64, r *Record) error {
		calls++
		if calls == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 3 {
		t.Fatalf("ForEachRecord returned %v after %d calls, want %v after 3", err, calls, stop)
	}
}

func TestRecordErrors(t *testing.T) {
	t.Parallel()
	one := RecordErrors{{Index: 4, Err: fmt.Errorf("%w: no key", ErrInvalidRecord)}}
	if got, want := one.Error(), "record 4: record: invalid record: no key"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	two := append(one, RecordError{Index: 9, Err: fmt.Errorf("%w: late", ErrInvalidTimestamp)})
	if got, want := two.Error(), "record 4: record: invalid record: no key (and 1 more)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	err := fmt.Errorf("produce: %w", two)
	if !errors.Is(err, ErrInvalidRecord) || !errors.Is(err, ErrInvalidTimestamp) || errors.Is(err, ErrCorrupt) {
		t.Errorf("errors.Is through wrapped RecordErrors: invalid record %v, timestamp %v, corrupt %v; want true, true, false",
			errors.Is(err, ErrInvalidRecord), errors.Is(err, ErrInvalidTimestamp), errors.Is(err, ErrCorrupt))
	}
	var re RecordError
	if !errors.As(err, &re) || re.Index != 4 {
		t.Errorf("errors.As RecordError: %+v, want the one at index 4", re)
	}
}

// withRecords returns a copy of b with its records section replaced by
// recs and its length and CRC fixed: a batch only its records can fail.
func withRecords(b Batch, recs []byte) Batch {
	out := Batch(append(bytes.Clone(b[:HeaderSize]), recs...))
	putInt32(offBatchLength, int32(len(out)-LogOverhead))(out)
	out.UpdateCRC()
	return out
}

// allocated returns the bytes fn allocates.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// allocatedWarm returns the bytes fn allocates with the pools warm as in a
// running broker: the first run within budget, else the fewest of 20. The
// race detector drops a quarter of what is put in a sync.Pool, and a
// dropped lz4 block costs a new 4 MiB buffer: under -race 83 of 200 runs
// of a 16 MiB lz4 record allocated one, so five runs all did about once in
// a hundred.
func allocatedWarm(budget uint64, fn func()) uint64 {
	least := uint64(math.MaxUint64)
	for range 20 {
		if least = min(least, allocated(fn)); least <= budget {
			break
		}
	}
	return least
}

// TestValidateBombMemory: a compressed batch of 100 MiB of zeros, a few KiB
// on the wire, is refused at its first record (a zero length) with next to
// no allocation, and so is one below the limit. Validate reads compressed
// records as a stream; it used to decompress the whole batch first. Not
// parallel, so that the allocations counted are its own.
func TestValidateBombMemory(t *testing.T) {
	const size = 100 << 20
	const budget = 2 << 20
	good, err := Build(nil, BatchHeader{ProducerID: -1, BaseSequence: -1}, []Record{{Key: []byte("k")}})
	if err != nil {
		t.Fatal(err)
	}
	for c, bm := range bombs() {
		payload := bm.all[:size/(1<<20)*len(bm.one)]
		if c == CodecSnappy {
			payload = bm.all[:xerialHeaderLen+size/(1<<20)*(len(bm.one)-xerialHeaderLen)]
		}
		b := patchHeader(withRecords(Batch(good), payload), func(b Batch) { b[offAttributes+1] |= byte(c) })
		for _, limit := range []int{100 << 20, 1 << 20} {
			opts := ValidateOptions{Records: true, MaxDecompressed: limit}
			var vErr error
			first := allocated(func() { _, vErr = Validate(b, opts) })
			if !errors.Is(vErr, ErrInvalidRecord) {
				t.Fatalf("%v bomb of %d bytes, limit %d MiB: %v, want %v", c, len(payload), limit>>20, vErr, ErrInvalidRecord)
			}
			again := allocatedWarm(budget, func() { _, vErr = Validate(b, opts) })
			if !errors.Is(vErr, ErrInvalidRecord) {
				t.Fatalf("%v bomb, again: %v, want %v", c, vErr, ErrInvalidRecord)
			}
			t.Logf("%v: %d MiB of zeros in %d bytes, limit %d MiB: refused (%v) allocating %d KiB, then %d KiB",
				c, size>>20, len(payload), limit>>20, vErr, first>>10, again>>10)
			if again > budget {
				t.Errorf("%v: refusing a %d MiB bomb allocated %d KiB, want at most %d", c, size>>20, again>>10, budget>>10)
			}
		}
	}
}

// TestValidateLargeRecordMemory: a record larger than the read buffer, one
// value of 16 MiB of zeros, is walked across refills without being held:
// accepted below the limit, refused above it, either way with little
// allocation.
func TestValidateLargeRecordMemory(t *testing.T) {
	const size = 16 << 20
	const budget = 2 << 20
	rec := []Record{{Key: []byte("k"), Value: make([]byte, size), Headers: []Header{{Key: []byte("h"), Value: []byte("v")}}}}
	for _, c := range []Codec{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		b, err := Build(nil, BatchHeader{Codec: c, ProducerID: -1, BaseSequence: -1}, rec)
		if err != nil {
			t.Fatal(err)
		}
		for _, limit := range []int{64 << 20, size} {
			var vErr error
			got := allocatedWarm(budget, func() {
				_, vErr = Validate(Batch(b), ValidateOptions{Records: true, RequireKeys: true, MaxDecompressed: limit})
			})
			var want error
			if limit == size {
				want = ErrTooLarge // the record's framing is above the value
			}
			if !errors.Is(vErr, want) {
				t.Fatalf("%v: a %d MiB record, limit %d MiB: %v, want %v", c, size>>20, limit>>20, vErr, want)
			}
			t.Logf("%v: a %d MiB record in %d bytes, limit %d MiB: %v, allocating %d KiB", c, size>>20, len(b), limit>>20, vErr, got>>10)
			// A zstd decoder that met a failed batch is not pooled (its
			// window is the frame's to choose), so the next one is new.
			if got > budget && (c != CodecZstd || vErr == nil) {
				t.Errorf("%v: validating a %d MiB record allocated %d KiB, want at most %d", c, size>>20, got>>10, budget>>10)
			}
		}
	}
}
