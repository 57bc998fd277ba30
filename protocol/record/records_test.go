package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

func TestAppendRecordRoundTrip(t *testing.T) {
	t.Parallel()
	recs := []Record{
		{},
		{Key: []byte{}, Value: []byte{}},
		{Key: []byte("k"), Value: []byte("v"), TimestampDelta: 1, OffsetDelta: 1},
		{Key: nil, Value: []byte("null key")},
		{Key: []byte("tombstone"), Value: nil},
		{Key: bytes.Repeat([]byte{'k'}, 300), Value: bytes.Repeat([]byte{'v'}, 70000)}, // multi-byte lengths
		{TimestampDelta: math.MinInt64, OffsetDelta: math.MinInt32},
		{TimestampDelta: math.MaxInt64, OffsetDelta: math.MaxInt32},
		{TimestampDelta: -1, OffsetDelta: -1},
		{Attributes: -1, Key: []byte("attrs")},
		{Key: []byte("h"), Headers: []Header{
			{Key: []byte("a"), Value: []byte("1")},
			{Key: []byte{}, Value: []byte{}},
			{Key: []byte("null"), Value: nil},
			{Key: []byte("a"), Value: bytes.Repeat([]byte{0}, 200)},
		}},
	}
	var buf []byte
	for i := range recs {
		one := AppendRecord(nil, &recs[i])
		// The length prefix counts exactly the bytes after it.
		n, w := binary.Varint(one)
		if w <= 0 || int(n) != len(one)-w {
			t.Fatalf("record %d: length prefix %d (%d bytes) for %d bytes of body", i, n, w, len(one)-w)
		}
		buf = append(buf, one...)
	}
	it := NewRecordIter(buf, int32(len(recs)))
	for i := range recs {
		r := it.Next()
		if r == nil {
			t.Fatalf("record %d: Next returned nil, err %v", i, it.Err())
		}
		want := &recs[i]
		if r.Attributes != want.Attributes || r.TimestampDelta != want.TimestampDelta || r.OffsetDelta != want.OffsetDelta {
			t.Errorf("record %d: attributes %d timestamp delta %d offset delta %d, want %d %d %d", i,
				r.Attributes, r.TimestampDelta, r.OffsetDelta, want.Attributes, want.TimestampDelta, want.OffsetDelta)
		}
		if !sameNullable(r.Key, want.Key) || !sameNullable(r.Value, want.Value) {
			t.Errorf("record %d: key %q value %q, want %q %q", i,
				showNullable(r.Key), showNullable(r.Value), showNullable(want.Key), showNullable(want.Value))
		}
		if len(r.Headers) != len(want.Headers) {
			t.Fatalf("record %d: %d headers, want %d", i, len(r.Headers), len(want.Headers))
		}
		for j, h := range want.Headers {
			if !sameNullable(r.Headers[j].Key, h.Key) || !sameNullable(r.Headers[j].Value, h.Value) {
				t.Errorf("record %d header %d: %q=%q, want %q=%q", i, j, showNullable(r.Headers[j].Key),
					showNullable(r.Headers[j].Value), showNullable(h.Key), showNullable(h.Value))
			}
		}
		// Key and value alias the buffer, capped so that appending to one
		// cannot overwrite what follows.
		if r.Key != nil && cap(r.Key) != len(r.Key) || r.Value != nil && cap(r.Value) != len(r.Value) {
			t.Errorf("record %d: key cap %d len %d, value cap %d len %d; want caps equal to lengths",
				i, cap(r.Key), len(r.Key), cap(r.Value), len(r.Value))
		}
	}
	if r := it.Next(); r != nil || it.Err() != nil {
		t.Fatalf("after the last record: %+v, err %v; want nil, nil", r, it.Err())
	}
}

// rec assembles record bytes from pieces: a varint per int64, raw bytes as
// given. body does the same and prefixes the length.
func rec(parts ...any) []byte {
	var b []byte
	for _, p := range parts {
		switch p := p.(type) {
		case int:
			b = binary.AppendVarint(b, int64(p))
		case int64:
			b = binary.AppendVarint(b, p)
		case []byte:
			b = append(b, p...)
		case string:
			b = append(b, p...)
		default:
			panic("rec: bad part")
		}
	}
	return b
}

func body(parts ...any) []byte {
	b := rec(parts...)
	return append(binary.AppendVarint(nil, int64(len(b))), b...)
}

func TestRecordIterMalformed(t *testing.T) {
	t.Parallel()
	attrs := []byte{0}
	valid := body(attrs, 0, 0, 1, "k", 1, "v", 0)
	cases := []struct {
		name  string
		buf   []byte
		count int32
	}{
		{"no bytes for a record", nil, 1},
		{"unterminated length", []byte{0x80}, 1},
		{"overlong length varint", bytes.Repeat([]byte{0xff}, 11), 1},
		{"negative length", rec(-2), 1},
		{"length beyond buffer", rec(10, "abc"), 1},
		{"empty record", rec(0), 1},
		{"unterminated timestamp delta", body(attrs, []byte{0x80}), 1},
		{"missing offset delta", body(attrs, 0), 1},
		{"offset delta above int32", body(attrs, 0, int64(math.MaxInt32)+1, -1, -1, 0), 1},
		{"offset delta below int32", body(attrs, 0, int64(math.MinInt32)-1, -1, -1, 0), 1},
		{"key length below -1", body(attrs, 0, 0, -2, -1, 0), 1},
		{"key beyond record", body(attrs, 0, 0, 5, "ab"), 1},
		{"missing value", body(attrs, 0, 0, -1), 1},
		{"value beyond record", body(attrs, 0, 0, -1, 9, "abc"), 1},
		{"missing header count", body(attrs, 0, 0, -1, -1), 1},
		{"negative header count", body(attrs, 0, 0, -1, -1, -1), 1},
		{"header count beyond record", body(attrs, 0, 0, -1, -1, 3, 0, 0, 0, 0), 1},
		{"huge header count", body(attrs, 0, 0, -1, -1, int64(math.MaxInt64)), 1},
		{"null header key", body(attrs, 0, 0, -1, -1, 1, -1, 0), 1},
		{"header key beyond record", body(attrs, 0, 0, -1, -1, 1, 3, "a"), 1},
		{"header value beyond record", body(attrs, 0, 0, -1, -1, 1, 1, "a", 4, "b"), 1},
		{"header value length below -1", body(attrs, 0, 0, -1, -1, 1, 1, "a", -3), 1},
		{"bytes left in record", body(attrs, 0, 0, -1, -1, 0, "x"), 1},
		{"bytes after the declared records", append(bytes.Clone(valid), 0), 1},
		{"a record after the declared count", append(bytes.Clone(valid), valid...), 1},
		{"fewer records than declared", valid, 2},
		{"bytes with no records declared", valid, 0},
		{"bytes with a negative count", valid, -1},
	}
	for _, c := range cases {
		it := NewRecordIter(c.buf, c.count)
		n := 0
		for it.Next() != nil {
			n++
		}
		if !errors.Is(it.Err(), ErrInvalidRecord) {
			t.Errorf("%s: Err %v after %d records, want %v", c.name, it.Err(), n, ErrInvalidRecord)
		}
		// Once failed, the iterator stays failed.
		if r := it.Next(); r != nil {
			t.Errorf("%s: Next returned a record after the error", c.name)
		}
	}

	// The valid record, and nothing at all, decode cleanly.
	for _, c := range []struct {
		buf   []byte
		count int32
		want  int
	}{{valid, 1, 1}, {nil, 0, 0}, {nil, -5, 0}, {append(bytes.Clone(valid), valid...), 2, 2}} {
		it := NewRecordIter(c.buf, c.count)
		n := 0
		for it.Next() != nil {
			n++
		}
		if it.Err() != nil || n != c.want {
			t.Errorf("%d bytes, count %d: %d records, err %v; want %d, nil", len(c.buf), c.count, n, it.Err(), c.want)
		}
	}
}

// TestRecordIterNoAllocs: walking records allocates nothing once the headers
// slice has grown.
func TestRecordIterNoAllocs(t *testing.T) {
	b := goldenBatchBytes(t, "batch-headers")
	plain := goldenBatchBytes(t, "batch-none")
	it := NewRecordIter(b.Records(), b.RecordCount())
	for it.Next() != nil {
	}
	allocs := testing.AllocsPerRun(100, func() {
		it := NewRecordIter(plain.Records(), plain.RecordCount())
		for it.Next() != nil {
		}
		if it.Err() != nil {
			t.Fatal(it.Err())
		}
	})
	if allocs != 0 {
		t.Fatalf("walking 20 records allocated %.1f times, want 0", allocs)
	}
}

// TestRecordIterHeadersReused: the headers slice is reused, so a caller that
// keeps headers past Next must copy them; the record pointer stays the same.
func TestRecordIterHeadersReused(t *testing.T) {
	t.Parallel()
	b := goldenBatchBytes(t, "batch-headers")
	it := NewRecordIter(b.Records(), b.RecordCount())
	var first *Record
	for r := it.Next(); r != nil; r = it.Next() {
		if first == nil {
			first = r
		} else if r != first {
			t.Fatalf("Next returned a new *Record; the doc says it is reused")
		}
	}
	if it.Err() != nil {
		t.Fatal(it.Err())
	}
}

// TestVarintMatchesBinary: the inlined varint decodes as binary.Varint
// does, value and length, on every input: each encoding of up to two bytes,
// every length of a valid encoding, overlong encodings, overflows at the
// tenth byte and beyond, truncations and empty input.
func TestVarintMatchesBinary(t *testing.T) {
	check := func(b []byte) {
		t.Helper()
		v, n := varint(b)
		wv, wn := binary.Varint(b)
		if v != wv || n != wn {
			t.Fatalf("varint(% x) = %d, %d; binary.Varint gives %d, %d", b, v, n, wv, wn)
		}
	}
	check(nil)
	for a := range 256 {
		check([]byte{byte(a)})
		for b := range 256 {
			check([]byte{byte(a), byte(b)})
		}
	}
	for _, v := range []int64{0, -1, 1, 63, -64, 64, 8191, -8192, 8192, math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64} {
		enc := binary.AppendVarint(nil, v)
		check(enc)
		check(append(enc, 0xff, 0x01))
		for cut := range len(enc) {
			check(enc[:cut])
		}
	}
	for n := 8; n <= 12; n++ {
		for _, last := range []byte{0x00, 0x01, 0x02, 0x7f} {
			b := append(bytes.Repeat([]byte{0x80}, n), last)
			check(b)
			check(append(bytes.Repeat([]byte{0xff}, n), last))
		}
	}
}
