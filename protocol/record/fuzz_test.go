package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

// Run one for a while with, for example:
//
//	go test -run='^$' -fuzz=FuzzValidate -fuzztime=60s ./protocol/record/

// isSentinel reports whether err wraps one of the package's errors, as every
// error from a decoder must so that the broker can map it to a Kafka code.
func isSentinel(err error) bool {
	for _, s := range []error{ErrTruncated, ErrBatchTooSmall, ErrCorrupt, ErrMagic, ErrUnknownCodec,
		ErrInvalidRecord, ErrInvalidTimestamp, ErrTooLarge} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// fuzzSeedBatches returns every golden batch, each on its own, and a few
// built ones the golden files lack.
func fuzzSeedBatches(f testing.TB) [][]byte {
	var out [][]byte
	for _, g := range goldenFiles(f) {
		out = append(out, g.data)
		it := NewIter(g.data)
		for b, ok := it.Next(); ok; b, ok = it.Next() {
			if len(g.set.Batches) > 1 {
				out = append(out, b)
			}
		}
	}
	recs := []Record{
		{OffsetDelta: 0, Key: []byte("a"), Value: []byte("1"), Headers: []Header{{Key: []byte("h"), Value: nil}}},
		{OffsetDelta: 1, TimestampDelta: -5, Key: nil, Value: nil},
	}
	for _, h := range []BatchHeader{
		{Codec: CodecNone, BaseTimestamp: 1700000000000, ProducerID: -1, BaseSequence: -1},
		{Codec: CodecSnappy, LogAppendTime: true, BaseTimestamp: 1700000000000, ProducerID: -1, BaseSequence: -1},
		{Codec: CodecGzip, Control: true, Transactional: true, ProducerID: 1, BaseSequence: 0},
		{Codec: CodecZstd, DeleteHorizon: true, BaseTimestamp: math.MinInt64, ProducerID: 2, BaseSequence: 5},
	} {
		b, err := Build(nil, h, recs)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	sparse, err := Build(nil, BatchHeader{Codec: CodecLZ4, ProducerID: -1, BaseSequence: -1},
		[]Record{{OffsetDelta: 0, Key: []byte("x")}, {OffsetDelta: 4, Key: []byte("y")}})
	if err != nil {
		f.Fatal(err)
	}
	return append(out, sparse)
}

// FuzzValidate feeds record sets to the iterator and every batch to Validate.
// Whatever Validate accepts must be sound: the other checks accept it, its
// records can be walked, and rebuilt from them it validates the same way.
//
// flags pick the options (the high four bits the size of the buffer
// compressed records are streamed through); with bit 3 set the input is made one batch with a
// matching length and CRC first, so that mutations reach the records rather
// than stop at the CRC.
func FuzzValidate(f *testing.F) {
	for _, b := range fuzzSeedBatches(f) {
		for _, flags := range []byte{0, 3, 8, 8 | 1, 8 | 2, 8 | 4, 8 | 0x50} {
			f.Add(b, flags)
		}
	}
	scratch := make([]byte, 0, 1024)
	f.Fuzz(func(t *testing.T, data []byte, flags byte) {
		opts := ValidateOptions{
			Records:            true,
			RequireKeys:        flags&1 != 0,
			CheckTimestamps:    flags&2 != 0,
			Now:                1700000000000,
			TimestampBeforeMax: 3600 * 1000,
			TimestampAfterMax:  60 * 1000,
			MaxDecompressed:    1 << 20,
		}
		if flags&4 != 0 {
			opts.Scratch = &scratch
		}
		if flags&8 != 0 && len(data) >= HeaderSize && len(data)-LogOverhead <= math.MaxInt32 {
			b := Batch(bytes.Clone(data))
			binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-LogOverhead))
			b.UpdateCRC()
			data = b
		}
		it := NewIter(data)
		for b, ok := it.Next(); ok; b, ok = it.Next() {
			checkValidate(t, b, opts)
			checkStreamAgrees(t, b, opts, binary.MaxVarintLen64+int(flags>>4))
		}
		if err := it.Err(); err != nil && !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrBatchTooSmall) {
			t.Fatalf("Iter stopped with %v, want %v or %v", err, ErrTruncated, ErrBatchTooSmall)
		}
		if it.Pos() > len(data) {
			t.Fatalf("Iter at %d past the %d bytes", it.Pos(), len(data))
		}
	})
}

func checkValidate(t *testing.T, b Batch, opts ValidateOptions) {
	info, err := Validate(b, opts)
	var recErrs RecordErrors
	if err != nil && !errors.As(err, &recErrs) {
		if !isSentinel(err) {
			t.Fatalf("Validate: %v wraps none of the package's errors", err)
		}
		return
	}
	// Only per-record problems, or none: the batch itself is sound.
	if err := CheckIntegrity(b); err != nil {
		t.Fatalf("Validate accepted a batch CheckIntegrity rejects: %v", err)
	}
	if err := ValidateHeader(b); err != nil {
		t.Fatalf("Validate accepted a batch ValidateHeader rejects: %v", err)
	}
	if _, err := Validate(b, ValidateOptions{}); err != nil {
		t.Fatalf("Validate with records accepted a batch it rejects without: %v", err)
	}
	for _, re := range recErrs {
		if re.Index < 0 || re.Index >= b.RecordCount() {
			t.Fatalf("record error at index %d of %d records", re.Index, b.RecordCount())
		}
		if !errors.Is(re, ErrInvalidRecord) && !errors.Is(re, ErrInvalidTimestamp) {
			t.Fatalf("record error %v is neither invalid record nor invalid timestamp", re)
		}
	}

	var recs []Record
	var i int64
	err = ForEachRecord(b, nil, func(off, ts int64, r *Record) error {
		if off != b.BaseOffset()+i {
			t.Fatalf("record %d at offset %d, want %d", i, off, b.BaseOffset()+i)
		}
		if b.LogAppendTime() && ts != b.MaxTimestamp() {
			t.Fatalf("record %d of a LogAppendTime batch has timestamp %d, want %d", i, ts, b.MaxTimestamp())
		}
		recs = append(recs, cloneRecord(r))
		i++
		return nil
	})
	if err != nil {
		t.Fatalf("ForEachRecord failed on a batch Validate accepted: %v", err)
	}
	if int64(len(recs)) != int64(b.RecordCount()) {
		t.Fatalf("ForEachRecord saw %d records, header says %d", len(recs), b.RecordCount())
	}

	// Rebuilt from its records, the batch validates the same way.
	rebuilt, err := Build(nil, BatchHeader{
		BaseOffset:           b.BaseOffset(),
		PartitionLeaderEpoch: b.PartitionLeaderEpoch(),
		Codec:                b.Codec(),
		LogAppendTime:        b.LogAppendTime(),
		Transactional:        b.Transactional(),
		DeleteHorizon:        b.HasDeleteHorizon(),
		BaseTimestamp:        b.BaseTimestamp(),
		ProducerID:           b.ProducerID(),
		ProducerEpoch:        b.ProducerEpoch(),
		BaseSequence:         b.BaseSequence(),
	}, recs)
	if err != nil {
		t.Fatalf("Build from the records of a valid batch: %v", err)
	}
	opts.Scratch = nil
	info2, err2 := Validate(Batch(rebuilt), opts)
	var recErrs2 RecordErrors
	if err2 != nil && !errors.As(err2, &recErrs2) {
		t.Fatalf("the rebuilt batch fails Validate: %v", err2)
	}
	if len(recErrs2) != len(recErrs) {
		t.Fatalf("the rebuilt batch has %d record errors, the original %d", len(recErrs2), len(recErrs))
	}
	for k := range recErrs {
		if recErrs[k].Index != recErrs2[k].Index {
			t.Fatalf("record error %d at index %d in the rebuilt batch, %d in the original", k, recErrs2[k].Index, recErrs[k].Index)
		}
	}
	if info2 != info {
		t.Fatalf("rebuilt batch info %+v, original %+v", info2, info)
	}
}

// checkStreamAgrees: Validate's walk of a compressed batch's records as a
// stream, through a buffer of bufCap bytes that records cross, agrees with
// the walk of the same records decompressed whole (as an uncompressed
// batch): the same info and errors when they decompress within the limit,
// an error when they do not.
func checkStreamAgrees(t *testing.T, b Batch, opts ValidateOptions, bufCap int) {
	if b.Codec() == CodecNone || ValidateHeader(b) != nil || b.Control() {
		return
	}
	small := make([]byte, 0, bufCap)
	opts.Scratch = &small
	info, err := Validate(b, opts)
	if cap(small) != bufCap {
		t.Fatalf("Validate replaced a Scratch of %d bytes with one of %d", bufCap, cap(small))
	}
	limit := opts.MaxDecompressed
	if limit <= 0 {
		limit = defaultMaxDecompressed
	}
	raw, derr := Decompress(nil, b.Codec(), b.Records(), limit)
	if derr != nil {
		if err == nil {
			t.Fatalf("Validate accepted records that do not decompress: %v", derr)
		}
		return
	}
	plain := patchHeader(withRecords(b, raw), func(b Batch) { b[offAttributes+1] &^= 7 })
	opts.Scratch = nil
	info2, err2 := Validate(plain, opts)
	for _, s := range []error{ErrCorrupt, ErrTooLarge, ErrInvalidRecord, ErrInvalidTimestamp} {
		if errors.Is(err, s) != errors.Is(err2, s) {
			t.Fatalf("streamed: %v; decompressed whole: %v", err, err2)
		}
	}
	var re, re2 RecordErrors
	if errors.As(err, &re) != errors.As(err2, &re2) || len(re) != len(re2) {
		t.Fatalf("streamed: %v; decompressed whole: %v", err, err2)
	}
	for i := range re {
		if re[i].Index != re2[i].Index {
			t.Fatalf("record error %d at index %d streamed, %d decompressed whole", i, re[i].Index, re2[i].Index)
		}
	}
	if info != info2 {
		t.Fatalf("streamed: info %+v (%v); decompressed whole: %+v (%v)", info, err, info2, err2)
	}
}

// streamAll reads src decompressed with c through the reader Validate
// streams records from, 16 bytes at a time.
func streamAll(c Codec, src []byte, limit int) ([]byte, error) {
	st := new(streamState)
	var cr codecReader
	if err := cr.open(st, c, src, limit); err != nil {
		return nil, err
	}
	defer cr.close(st, true)
	s := recordStream{r: cr.r, codec: cr.name, buf: make([]byte, 0, 16), limit: int64(limit)}
	var out []byte
	for s.fill(1) {
		out = append(out, s.buf[s.pos:]...)
		s.pos = len(s.buf)
	}
	return out, s.failure()
}

// FuzzDecompress: no input makes a codec panic or produce more than the
// limit; what decodes, decodes exactly up to its size and survives a round
// trip through Compress.
func FuzzDecompress(f *testing.F) {
	for _, b := range fuzzSeedBatches(f) {
		if len(b) >= HeaderSize && Batch(b).Codec() != CodecNone {
			f.Add(byte(Batch(b).Codec()), Batch(b).Records())
		}
	}
	for _, c := range codecs {
		comp, err := Compress(nil, c, testPayload(3000, 9))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(byte(c), comp)
	}
	f.Add(byte(CodecZstd), []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x68, 0x0b, 0x00, 0x00, 'x'})
	f.Add(byte(7), []byte("unknown"))

	const limit = 64 << 10
	prefix := []byte("pre")
	f.Fuzz(func(t *testing.T, codec byte, data []byte) {
		c := Codec(int8(codec))
		out, err := Decompress(bytes.Clone(prefix), c, data, limit)
		if c > CodecNone && c <= CodecZstd {
			// The stream Validate reads gives the same bytes, or fails too.
			streamed, serr := streamAll(c, data, limit)
			if (serr == nil) != (err == nil) || (err == nil && !bytes.Equal(streamed, out[len(prefix):])) {
				t.Fatalf("streamed %d bytes, %v; Decompress %d bytes, %v", len(streamed), serr, len(out)-len(prefix), err)
			}
			if serr != nil && !isSentinel(serr) {
				t.Fatalf("the stream failed with %v, which wraps none of the package's errors", serr)
			}
		}
		if !bytes.HasPrefix(out, prefix) {
			t.Fatalf("Decompress lost the bytes before its output: %q", out[:min(len(out), 3)])
		}
		if err != nil {
			if len(out) != len(prefix) {
				t.Fatalf("Decompress failed (%v) but left %d bytes of output", err, len(out)-len(prefix))
			}
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrUnknownCodec) {
				t.Fatalf("Decompress: %v wraps none of ErrCorrupt, ErrTooLarge, ErrUnknownCodec", err)
			}
			return
		}
		got := out[len(prefix):]
		if len(got) > limit {
			t.Fatalf("Decompress produced %d bytes over a limit of %d", len(got), limit)
		}
		if c < CodecNone || c > CodecZstd {
			t.Fatalf("Decompress accepted unknown codec %d", c)
		}
		exact, err := Decompress(nil, c, data, len(got))
		if err != nil || !bytes.Equal(exact, got) {
			t.Fatalf("with a limit of exactly %d bytes: %d bytes, %v", len(got), len(exact), err)
		}
		if len(got) > 0 {
			if _, err := Decompress(nil, c, data, len(got)-1); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("with a limit one below the %d bytes: %v, want %v", len(got), err, ErrTooLarge)
			}
		}
		comp, err := Compress(nil, c, got)
		if err != nil {
			t.Fatalf("Compress of %d decoded bytes: %v", len(got), err)
		}
		back, err := Decompress(nil, c, comp, limit)
		if err != nil || !bytes.Equal(back, got) {
			t.Fatalf("round trip of %d decoded bytes: %d bytes back, %v", len(got), len(back), err)
		}
	})
}

// FuzzRecordIter: decoding never panics, errors are ErrInvalidRecord, and
// what decodes re-encodes (canonically, so no longer) to the same records.
func FuzzRecordIter(f *testing.F) {
	for _, b := range fuzzSeedBatches(f) {
		it := NewIter(b)
		for bb, ok := it.Next(); ok; bb, ok = it.Next() {
			recs := bb.Records()
			if bb.Codec() != CodecNone {
				var err error
				if recs, err = Decompress(nil, bb.Codec(), recs, 1<<20); err != nil {
					f.Fatal(err)
				}
			}
			f.Add(recs, bb.RecordCount())
			f.Add(recs, bb.RecordCount()+1)
		}
	}
	f.Add([]byte{}, int32(0))
	f.Add([]byte{0x02, 0x00}, int32(1))

	f.Fuzz(checkRecordIter)
}

func checkRecordIter(t *testing.T, data []byte, count int32) {
	{
		it := NewRecordIter(data, count)
		var reenc []byte
		var recs []Record
		for r := it.Next(); r != nil; r = it.Next() {
			recs = append(recs, cloneRecord(r))
			reenc = AppendRecord(reenc, r)
			if int64(len(recs)) > int64(count) {
				t.Fatalf("decoded %d records of %d declared", len(recs), count)
			}
		}
		if err := it.Err(); err != nil {
			if !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("Err %v, want one wrapping %v", err, ErrInvalidRecord)
			}
			return
		}
		if want := max(count, 0); int32(len(recs)) != want {
			t.Fatalf("no error after %d records of %d declared", len(recs), want)
		}
		if len(reenc) > len(data) {
			t.Fatalf("re-encoded %d records to %d bytes, more than the %d they came from", len(recs), len(reenc), len(data))
		}
		it2 := NewRecordIter(reenc, int32(len(recs)))
		for i := range recs {
			r := it2.Next()
			if r == nil {
				t.Fatalf("re-encoded record %d does not decode: %v", i, it2.Err())
			}
			w := recs[i]
			if r.Attributes != w.Attributes || r.TimestampDelta != w.TimestampDelta || r.OffsetDelta != w.OffsetDelta ||
				!sameNullable(r.Key, w.Key) || !sameNullable(r.Value, w.Value) || len(r.Headers) != len(w.Headers) {
				t.Fatalf("re-encoded record %d decodes to %+v, want %+v", i, *r, w)
			}
			for j := range w.Headers {
				if !sameNullable(r.Headers[j].Key, w.Headers[j].Key) || !sameNullable(r.Headers[j].Value, w.Headers[j].Value) {
					t.Fatalf("re-encoded record %d header %d differs", i, j)
				}
			}
		}
		if it2.Next() != nil || it2.Err() != nil {
			t.Fatalf("re-encoded records end badly: %v", it2.Err())
		}
	}
}
