package record

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The golden files in testdata/ are record sets written by kafka-python (see
// testdata/gen_batches.py). NAME.json lists what NAME.bin holds.

type goldenSet struct {
	Description string        `json:"description"`
	Batches     []goldenBatch `json:"batches"`
}

type goldenBatch struct {
	Size                 int            `json:"size"`
	BaseOffset           int64          `json:"baseOffset"`
	BatchLength          int32          `json:"batchLength"`
	PartitionLeaderEpoch int32          `json:"partitionLeaderEpoch"`
	Magic                int8           `json:"magic"`
	CRC                  uint32         `json:"crc"`
	Attributes           int16          `json:"attributes"`
	Codec                string         `json:"codec"`
	Transactional        bool           `json:"transactional"`
	LastOffsetDelta      int32          `json:"lastOffsetDelta"`
	BaseTimestamp        int64          `json:"baseTimestamp"`
	MaxTimestamp         int64          `json:"maxTimestamp"`
	ProducerID           int64          `json:"producerId"`
	ProducerEpoch        int16          `json:"producerEpoch"`
	BaseSequence         int32          `json:"baseSequence"`
	RecordCount          int32          `json:"recordCount"`
	Records              []goldenRecord `json:"records"`
}

// goldenRecord is a record as the JSON lists it; encoding/json decodes the
// base64 strings, and leaves null as a nil slice.
type goldenRecord struct {
	Offset    int64          `json:"offset"`
	Timestamp int64          `json:"timestamp"`
	Key       []byte         `json:"key"`
	Value     []byte         `json:"value"`
	Headers   []goldenHeader `json:"headers"`
}

type goldenHeader struct {
	Key   []byte `json:"key"`
	Value []byte `json:"value"`
}

type golden struct {
	name string // file name without extension
	data []byte // the .bin file
	set  goldenSet
}

// goldenFiles loads every testdata/*.bin with its .json, sorted by name.
func goldenFiles(tb testing.TB) []golden {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.bin"))
	if err != nil {
		tb.Fatal(err)
	}
	if len(paths) < 12 {
		tb.Fatalf("found %d golden files in testdata, want at least 12", len(paths))
	}
	var out []golden
	for _, p := range paths {
		out = append(out, loadGolden(tb, strings.TrimSuffix(filepath.Base(p), ".bin")))
	}
	return out
}

func loadGolden(tb testing.TB, name string) golden {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name+".bin"))
	if err != nil {
		tb.Fatal(err)
	}
	js, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		tb.Fatal(err)
	}
	g := golden{name: name, data: data}
	if err := json.Unmarshal(js, &g.set); err != nil {
		tb.Fatalf("%s.json: %v", name, err)
	}
	if len(g.set.Batches) == 0 {
		tb.Fatalf("%s.json lists no batches", name)
	}
	return g
}

// goldenBatchBytes returns a copy of the only batch of the named golden file.
func goldenBatchBytes(tb testing.TB, name string) Batch {
	tb.Helper()
	g := loadGolden(tb, name)
	if len(g.set.Batches) != 1 {
		tb.Fatalf("%s holds %d batches, want 1", name, len(g.set.Batches))
	}
	return Batch(bytes.Clone(g.data))
}

// gotRecord is a decoded record copied out of the buffer it aliases.
type gotRecord struct {
	offset, timestamp int64
	rec               Record
}

// decodeAll collects the records of b through ForEachRecord.
func decodeAll(tb testing.TB, b Batch) []gotRecord {
	tb.Helper()
	var out []gotRecord
	err := ForEachRecord(b, nil, func(offset, ts int64, r *Record) error {
		out = append(out, gotRecord{offset, ts, cloneRecord(r)})
		return nil
	})
	if err != nil {
		tb.Fatalf("ForEachRecord: %v", err)
	}
	return out
}

func cloneRecord(r *Record) Record {
	c := *r
	c.Key = cloneNullable(r.Key)
	c.Value = cloneNullable(r.Value)
	c.Headers = nil
	for _, h := range r.Headers {
		c.Headers = append(c.Headers, Header{Key: cloneNullable(h.Key), Value: cloneNullable(h.Value)})
	}
	return c
}

// cloneNullable copies b, keeping nil (null) apart from empty.
func cloneNullable(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// sameNullable reports whether a and b are both null or hold the same bytes.
func sameNullable(a, b []byte) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

func showNullable(b []byte) string {
	if b == nil {
		return "null"
	}
	if len(b) > 40 {
		return strings.ToValidUTF8(string(b[:40]), "?") + "..."
	}
	return strings.ToValidUTF8(string(b), "?")
}

// compareRecords checks decoded records against the golden list, byte for
// byte, null apart from empty.
func compareRecords(t *testing.T, what string, got []gotRecord, want []goldenRecord) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: decoded %d records, want %d", what, len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.offset != w.Offset || g.timestamp != w.Timestamp {
			t.Errorf("%s: record %d at offset %d timestamp %d, want offset %d timestamp %d",
				what, i, g.offset, g.timestamp, w.Offset, w.Timestamp)
		}
		if !sameNullable(g.rec.Key, w.Key) {
			t.Errorf("%s: record %d key %q, want %q", what, i, showNullable(g.rec.Key), showNullable(w.Key))
		}
		if !sameNullable(g.rec.Value, w.Value) {
			t.Errorf("%s: record %d value %q, want %q", what, i, showNullable(g.rec.Value), showNullable(w.Value))
		}
		if g.rec.Attributes != 0 {
			t.Errorf("%s: record %d attributes %d, want 0", what, i, g.rec.Attributes)
		}
		if len(g.rec.Headers) != len(w.Headers) {
			t.Errorf("%s: record %d has %d headers, want %d", what, i, len(g.rec.Headers), len(w.Headers))
			continue
		}
		for j, wh := range w.Headers {
			gh := g.rec.Headers[j]
			if !sameNullable(gh.Key, wh.Key) || !sameNullable(gh.Value, wh.Value) {
				t.Errorf("%s: record %d header %d is %q=%q, want %q=%q", what, i, j,
					showNullable(gh.Key), showNullable(gh.Value), showNullable(wh.Key), showNullable(wh.Value))
			}
		}
	}
}

func codecByName(t testing.TB, name string) Codec {
	t.Helper()
	for c := CodecNone; c <= CodecZstd; c++ {
		if c.String() == name {
			return c
		}
	}
	t.Fatalf("unknown codec name %q", name)
	return 0
}

func TestGoldenHeaders(t *testing.T) {
	t.Parallel()
	for _, g := range goldenFiles(t) {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			it := NewIter(g.data)
			for i, w := range g.set.Batches {
				b, ok := it.Next()
				if !ok {
					t.Fatalf("batch %d: Next returned no batch (err %v), want one of %d bytes", i, it.Err(), w.Size)
				}
				checkHeader(t, b, w)
			}
			if b, ok := it.Next(); ok {
				t.Fatalf("Next returned an extra batch of %d bytes after the %d listed", len(b), len(g.set.Batches))
			}
			if err := it.Err(); err != nil {
				t.Fatalf("Err after the last batch: %v, want nil", err)
			}
			if it.Pos() != len(g.data) {
				t.Fatalf("Pos after the last batch: %d, want %d", it.Pos(), len(g.data))
			}
		})
	}
}

func checkHeader(t *testing.T, b Batch, w goldenBatch) {
	t.Helper()
	type field struct {
		name      string
		got, want any
	}
	fields := []field{
		{"size", len(b), w.Size},
		{"BaseOffset", b.BaseOffset(), w.BaseOffset},
		{"Length", b.Length(), w.BatchLength},
		{"PartitionLeaderEpoch", b.PartitionLeaderEpoch(), w.PartitionLeaderEpoch},
		{"Magic", b.Magic(), w.Magic},
		{"CRC", b.CRC(), w.CRC},
		{"ComputeCRC", b.ComputeCRC(), w.CRC},
		{"Attributes", b.Attributes(), w.Attributes},
		{"Codec", b.Codec().String(), w.Codec},
		{"Transactional", b.Transactional(), w.Transactional},
		{"Control", b.Control(), false},
		{"LogAppendTime", b.LogAppendTime(), false},
		{"HasDeleteHorizon", b.HasDeleteHorizon(), false},
		{"LastOffsetDelta", b.LastOffsetDelta(), w.LastOffsetDelta},
		{"LastOffset", b.LastOffset(), w.BaseOffset + int64(w.LastOffsetDelta)},
		{"NextOffset", b.NextOffset(), w.BaseOffset + int64(w.LastOffsetDelta) + 1},
		{"BaseTimestamp", b.BaseTimestamp(), w.BaseTimestamp},
		{"MaxTimestamp", b.MaxTimestamp(), w.MaxTimestamp},
		{"ProducerID", b.ProducerID(), w.ProducerID},
		{"ProducerEpoch", b.ProducerEpoch(), w.ProducerEpoch},
		{"BaseSequence", b.BaseSequence(), w.BaseSequence},
		{"RecordCount", b.RecordCount(), w.RecordCount},
		{"len(Records)", len(b.Records()), w.Size - HeaderSize},
		{"Size", Size(b), int64(w.Size)},
	}
	for _, f := range fields {
		if f.got != f.want {
			t.Errorf("%s = %v, want %v", f.name, f.got, f.want)
		}
	}
}

func TestCodecString(t *testing.T) {
	t.Parallel()
	want := map[Codec]string{
		CodecNone: "none", CodecGzip: "gzip", CodecSnappy: "snappy", CodecLZ4: "lz4", CodecZstd: "zstd",
		5: "unknown", 7: "unknown", -1: "unknown",
	}
	for c, w := range want {
		if got := c.String(); got != w {
			t.Errorf("Codec(%d).String() = %q, want %q", c, got, w)
		}
	}
}

func TestSize(t *testing.T) {
	t.Parallel()
	cases := []struct {
		length int32
		want   int64
	}{
		{0, 12}, {49, 61}, {1 << 20, 1<<20 + 12}, {-1, -1}, {-1 << 31, -1}, {1<<31 - 1, 1<<31 - 1 + 12},
	}
	for _, c := range cases {
		hdr := make([]byte, LogOverhead)
		binary.BigEndian.PutUint32(hdr[offBatchLength:], uint32(c.length))
		if got := Size(hdr); got != c.want {
			t.Errorf("Size with batchLength %d = %d, want %d", c.length, got, c.want)
		}
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	b := goldenBatchBytes(t, "batch-idempotent")
	trailer := []byte("next batch")
	buf := append(slices.Clip(bytes.Clone(b)), trailer...)

	got, rest, err := Parse(buf)
	if err != nil {
		t.Fatalf("Parse of a batch followed by %d bytes: %v, want nil", len(trailer), err)
	}
	if !bytes.Equal(got, b) {
		t.Fatalf("Parse returned %d bytes, want the %d of the batch", len(got), len(b))
	}
	if !bytes.Equal(rest, trailer) {
		t.Fatalf("Parse rest = %q, want %q", rest, trailer)
	}

	withLength := func(n int32) []byte {
		c := bytes.Clone(buf)
		binary.BigEndian.PutUint32(c[offBatchLength:], uint32(n))
		return c
	}
	cases := []struct {
		name string
		buf  []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"11 bytes", buf[:11], ErrTruncated},
		{"log overhead only", buf[:12], ErrTruncated},
		{"header only", buf[:HeaderSize], ErrTruncated},
		{"one byte short", buf[:len(b)-1], ErrTruncated},
		{"negative length", withLength(-1), ErrBatchTooSmall},
		{"most negative length", withLength(-1 << 31), ErrBatchTooSmall},
		{"zero length", withLength(0), ErrBatchTooSmall},
		{"length one below header", withLength(HeaderSize - LogOverhead - 1), ErrBatchTooSmall},
		{"length beyond buffer", withLength(int32(len(buf))), ErrTruncated},
		{"max length", withLength(1<<31 - 1), ErrTruncated},
	}
	for _, c := range cases {
		got, rest, err := Parse(c.buf)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: Parse error %v, want %v", c.name, err, c.want)
		}
		if got != nil || len(rest) != len(c.buf) {
			t.Errorf("%s: Parse returned a %d-byte batch and %d bytes rest, want none and all %d",
				c.name, len(got), len(rest), len(c.buf))
		}
	}

	// A length of exactly a header's worth parses: the view is only the
	// header, which CheckIntegrity then judges on its CRC.
	hdrOnly := withLength(HeaderSize - LogOverhead)
	got, rest, err = Parse(hdrOnly)
	if err != nil || len(got) != HeaderSize || len(rest) != len(hdrOnly)-HeaderSize {
		t.Fatalf("Parse with a header-sized length: %d-byte batch, %d rest, err %v; want %d, %d, nil",
			len(got), len(rest), err, HeaderSize, len(hdrOnly)-HeaderSize)
	}
	if err := CheckIntegrity(got); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("CheckIntegrity of the cut header: %v, want %v", err, ErrCorrupt)
	}
}

// TestParseTruncated cuts a record set at every length: Parse and the
// iterator report ErrTruncated, and nothing panics.
func TestParseTruncated(t *testing.T) {
	t.Parallel()
	g := loadGolden(t, "batch-gzip")
	for n := 0; n < len(g.data); n++ {
		cut := g.data[:n:n]
		if _, _, err := Parse(cut); !errors.Is(err, ErrTruncated) {
			t.Fatalf("Parse of %d of %d bytes: %v, want %v", n, len(g.data), err, ErrTruncated)
		}
		it := NewIter(cut)
		if b, ok := it.Next(); ok {
			t.Fatalf("Next on %d of %d bytes returned a %d-byte batch, want none", n, len(g.data), len(b))
		}
		if n == 0 {
			if it.Err() != nil {
				t.Fatalf("Err on an empty record set: %v, want nil", it.Err())
			}
			continue
		}
		if !errors.Is(it.Err(), ErrTruncated) {
			t.Fatalf("Err on %d of %d bytes: %v, want %v", n, len(g.data), it.Err(), ErrTruncated)
		}
	}
}

func TestIterMultiBatch(t *testing.T) {
	t.Parallel()
	g := loadGolden(t, "records-multi")
	want := []struct {
		base   int64
		epoch  int32
		codec  Codec
		count  int32
		offset []int64
	}{
		{100, 5, CodecNone, 3, []int64{100, 101, 102}},
		{103, 5, CodecGzip, 4, []int64{103, 104, 105, 106}},
		{107, 6, CodecSnappy, 2, []int64{107, 108}},
	}
	it := NewIter(g.data)
	pos := 0
	for i, w := range want {
		if it.Pos() != pos {
			t.Fatalf("Pos before batch %d = %d, want %d", i, it.Pos(), pos)
		}
		b, ok := it.Next()
		if !ok {
			t.Fatalf("Next for batch %d: none, err %v", i, it.Err())
		}
		pos += len(b)
		if b.BaseOffset() != w.base || b.PartitionLeaderEpoch() != w.epoch || b.Codec() != w.codec || b.RecordCount() != w.count {
			t.Errorf("batch %d: base %d epoch %d codec %v count %d, want %d %d %v %d", i,
				b.BaseOffset(), b.PartitionLeaderEpoch(), b.Codec(), b.RecordCount(), w.base, w.epoch, w.codec, w.count)
		}
		if err := CheckIntegrity(b); err != nil {
			t.Errorf("batch %d: CheckIntegrity: %v, want nil", i, err)
		}
		var offsets []int64
		for _, r := range decodeAll(t, b) {
			offsets = append(offsets, r.offset)
		}
		if !slices.Equal(offsets, w.offset) {
			t.Errorf("batch %d: record offsets %v, want %v", i, offsets, w.offset)
		}
		compareRecords(t, fmt.Sprintf("batch %d", i), decodeAll(t, b), g.set.Batches[i].Records)
	}
	if b, ok := it.Next(); ok || it.Err() != nil {
		t.Fatalf("Next after the last batch: %d bytes, ok %v, err %v; want none, false, nil", len(b), ok, it.Err())
	}
}

// TestIterTruncatedTrailingBatch cuts a record set inside its last batch: the
// whole batches before come out, then Err says why the rest did not.
func TestIterTruncatedTrailingBatch(t *testing.T) {
	t.Parallel()
	g := loadGolden(t, "records-multi")
	third := g.set.Batches[0].Size + g.set.Batches[1].Size
	for n := third + 1; n < len(g.data); n++ {
		it := NewIter(g.data[:n])
		got := 0
		for _, ok := it.Next(); ok; _, ok = it.Next() {
			got++
		}
		if got != 2 {
			t.Fatalf("cut at %d: %d batches, want 2", n, got)
		}
		if !errors.Is(it.Err(), ErrTruncated) {
			t.Fatalf("cut at %d: Err %v, want %v", n, it.Err(), ErrTruncated)
		}
		if it.Pos() != third {
			t.Fatalf("cut at %d: Pos %d, want %d (the start of the cut batch)", n, it.Pos(), third)
		}
		// Next keeps failing once it has failed.
		if _, ok := it.Next(); ok {
			t.Fatalf("cut at %d: Next succeeded after an error", n)
		}
	}

	// A trailing batch whose length is below the header size stops the
	// iterator with ErrBatchTooSmall, not a panic on a short view.
	bad := append(bytes.Clone(g.data), make([]byte, HeaderSize)...)
	binary.BigEndian.PutUint32(bad[len(g.data)+offBatchLength:], 10)
	it := NewIter(bad)
	for _, ok := it.Next(); ok; _, ok = it.Next() {
	}
	if !errors.Is(it.Err(), ErrBatchTooSmall) || it.Pos() != len(g.data) {
		t.Fatalf("trailing batch of length 10: Err %v at Pos %d, want %v at %d", it.Err(), it.Pos(), ErrBatchTooSmall, len(g.data))
	}
}

func TestSetBaseOffsetAndLeaderEpochKeepCRC(t *testing.T) {
	t.Parallel()
	for _, g := range goldenFiles(t) {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			data := bytes.Clone(g.data)
			it := NewIter(data)
			for b, ok := it.Next(); ok; b, ok = it.Next() {
				crc := b.CRC()
				want := decodeAll(t, b)
				b.SetBaseOffset(1<<40 + 7)
				b.SetPartitionLeaderEpoch(42)
				if b.BaseOffset() != 1<<40+7 || b.PartitionLeaderEpoch() != 42 {
					t.Fatalf("after the patches: base offset %d, epoch %d; want %d, 42", b.BaseOffset(), b.PartitionLeaderEpoch(), int64(1<<40+7))
				}
				if b.CRC() != crc {
					t.Fatalf("CRC field changed from %08x to %08x", crc, b.CRC())
				}
				if err := CheckIntegrity(b); err != nil {
					t.Fatalf("CheckIntegrity after the patches: %v, want nil", err)
				}
				if _, err := Validate(b, ValidateOptions{Records: true}); err != nil {
					t.Fatalf("Validate after the patches: %v, want nil", err)
				}
				for i, r := range decodeAll(t, b) {
					if wantOff := want[i].offset - want[0].offset + 1<<40 + 7; r.offset != wantOff {
						t.Fatalf("record %d at offset %d after SetBaseOffset, want %d", i, r.offset, wantOff)
					}
				}
				b.SetPartitionLeaderEpoch(NoPartitionLeaderEpoch)
				if b.PartitionLeaderEpoch() != -1 {
					t.Fatalf("epoch %d after setting NoPartitionLeaderEpoch, want -1", b.PartitionLeaderEpoch())
				}
			}
			if it.Err() != nil {
				t.Fatal(it.Err())
			}
		})
	}
}

func TestSetLogAppendTime(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"batch-none", "batch-lz4", "batch-transactional"} {
		b := goldenBatchBytes(t, name)
		attrs, crc := b.Attributes(), b.CRC()
		const appendTime = 1800000000000
		b.SetLogAppendTime(appendTime)
		if !b.LogAppendTime() || b.MaxTimestamp() != appendTime {
			t.Fatalf("%s: LogAppendTime %v, max timestamp %d; want true, %d", name, b.LogAppendTime(), b.MaxTimestamp(), int64(appendTime))
		}
		if got, want := b.Attributes(), attrs|timestampTypeBit; got != want {
			t.Fatalf("%s: attributes %#x, want %#x (the old ones plus the timestamp type)", name, got, want)
		}
		if b.CRC() == crc {
			t.Fatalf("%s: CRC still %08x after SetLogAppendTime", name, crc)
		}
		if err := CheckIntegrity(b); err != nil {
			t.Fatalf("%s: CheckIntegrity after SetLogAppendTime: %v, want nil", name, err)
		}
		for i, r := range decodeAll(t, b) {
			if r.timestamp != appendTime {
				t.Fatalf("%s: record %d has timestamp %d, want the append time %d", name, i, r.timestamp, int64(appendTime))
			}
		}
		// Validate reports the record timestamps it found, not the append
		// time: the broker sets that after validation.
		info, err := Validate(b, ValidateOptions{Records: true})
		if err != nil {
			t.Fatalf("%s: Validate after SetLogAppendTime: %v, want nil", name, err)
		}
		if info.MaxTimestamp == appendTime {
			t.Fatalf("%s: Validate took the max timestamp from the header", name)
		}
	}
}

func TestSetMaxTimestamp(t *testing.T) {
	t.Parallel()
	b := goldenBatchBytes(t, "batch-gzip")
	crc := b.CRC()
	b.SetMaxTimestamp(b.MaxTimestamp())
	if b.CRC() != crc {
		t.Fatalf("CRC changed from %08x to %08x when the max timestamp did not", crc, b.CRC())
	}
	b.SetMaxTimestamp(1234)
	if b.MaxTimestamp() != 1234 {
		t.Fatalf("max timestamp %d, want 1234", b.MaxTimestamp())
	}
	if b.CRC() == crc {
		t.Fatalf("CRC still %08x after the max timestamp changed", crc)
	}
	if err := CheckIntegrity(b); err != nil {
		t.Fatalf("CheckIntegrity after SetMaxTimestamp: %v, want nil", err)
	}
	if b.LogAppendTime() {
		t.Fatal("SetMaxTimestamp switched the batch to LogAppendTime")
	}
}
