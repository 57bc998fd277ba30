package record

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Header is one record header. A nil Value is a null header value.
type Header struct {
	Key   []byte
	Value []byte
}

// Record is one decoded record. Key and Value alias the buffer it was decoded
// from; nil means null. Headers is reused by RecordIter between records.
type Record struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	Key            []byte
	Value          []byte
	Headers        []Header
}

// RecordIter decodes the records of an uncompressed records section one at a
// time, without allocating except to grow the reused headers slice.
type RecordIter struct {
	buf  []byte
	left int32 // records still declared
	rec  Record
	err  error
}

// NewRecordIter iterates count records in buf (an uncompressed records
// section). Decoding stops with an error when a record is malformed, when buf
// ends before count records, or when bytes remain after them.
func NewRecordIter(buf []byte, count int32) RecordIter {
	return RecordIter{buf: buf, left: count}
}

// Next decodes the next record. The returned pointer is valid until the next
// call. It returns nil at the end or on error (see Err).
func (it *RecordIter) Next() *Record {
	if it.err != nil {
		return nil
	}
	if it.left <= 0 {
		if len(it.buf) != 0 {
			it.err = fmt.Errorf("%w: %d bytes after the declared records", ErrInvalidRecord, len(it.buf))
		}
		return nil
	}
	it.left--
	rest, err := decodeRecord(it.buf, &it.rec)
	if err != nil {
		it.err = err
		return nil
	}
	it.buf = rest
	return &it.rec
}

// Err is the decoding error that stopped Next, or nil.
func (it *RecordIter) Err() error { return it.err }

func errRecord(what string) error { return fmt.Errorf("%w: %s", ErrInvalidRecord, what) }

// decodeRecord decodes one record from buf into r and returns the bytes
// after it. Its varints are decoded inline: for small records the calls
// would cost more than the decoding.
func decodeRecord(buf []byte, r *Record) ([]byte, error) {
	length, n := varint(buf)
	if n <= 0 {
		return nil, errRecord("bad record length")
	}
	buf = buf[n:]
	if length < 0 || length > int64(len(buf)) {
		return nil, errRecord("record length beyond batch")
	}
	body, rest := buf[:length], buf[length:]
	if len(body) < 1 {
		return nil, errRecord("empty record")
	}
	r.Attributes = int8(body[0])
	p := 1
	if r.TimestampDelta, n = varint(body[p:]); n <= 0 {
		return nil, errRecord("bad timestamp delta")
	}
	p += n
	od, n := varint(body[p:])
	if n <= 0 || od < math.MinInt32 || od > math.MaxInt32 {
		return nil, errRecord("bad offset delta")
	}
	p += n
	r.OffsetDelta = int32(od)
	var ok bool
	size, n := varint(body[p:])
	if r.Key, p, ok = nullableAt(body, p, size, n); !ok {
		return nil, errRecord("bad key")
	}
	size, n = varint(body[p:])
	if r.Value, p, ok = nullableAt(body, p, size, n); !ok {
		return nil, errRecord("bad value")
	}
	nh, n := varint(body[p:])
	if n <= 0 || nh < 0 {
		return nil, errRecord("bad header count")
	}
	p += n
	// Every header takes at least two bytes, which bounds the count before
	// anything is allocated for it.
	if nh > int64(len(body)-p)/2 {
		return nil, errRecord("header count beyond record")
	}
	r.Headers = r.Headers[:0]
	for i := int64(0); i < nh; i++ {
		var h Header
		size, n = varint(body[p:])
		if h.Key, p, ok = nullableAt(body, p, size, n); !ok || h.Key == nil {
			return nil, errRecord("bad header key")
		}
		size, n = varint(body[p:])
		if h.Value, p, ok = nullableAt(body, p, size, n); !ok {
			return nil, errRecord("bad header value")
		}
		r.Headers = append(r.Headers, h)
	}
	if p != len(body) {
		return nil, errRecord("bytes left in record")
	}
	return rest, nil
}

// nullableAt takes the nullable bytes whose varint length, size, was read
// from b[p:] in n bytes (n <= 0: a bad varint): nil for -1, and the
// position after them.
func nullableAt(b []byte, p int, size int64, n int) ([]byte, int, bool) {
	if n <= 0 || size < -1 || size > int64(len(b)-p-n) {
		return nil, p, false
	}
	p += n
	if size == -1 {
		return nil, p, true
	}
	return b[p : p+int(size) : p+int(size)], p + int(size), true
}

// varint is binary.Varint, to the same results on every input (overlong
// and overflowing encodings included), written so that the compiler
// inlines it.
func varint(b []byte) (int64, int) {
	var u uint64
	for i, c := range b {
		if i == binary.MaxVarintLen64 {
			return 0, -(i + 1) // overflow
		}
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, -(i + 1) // overflow
			}
			u |= uint64(c) << (7 * i)
			return int64(u>>1) ^ -int64(u&1), i + 1
		}
		u |= uint64(c&0x7f) << (7 * i)
	}
	return 0, 0
}

// AppendRecord encodes r (with its offset and timestamp deltas) onto dst.
func AppendRecord(dst []byte, r *Record) []byte {
	var body [64]byte
	n := 1 // attributes
	body[0] = byte(r.Attributes)
	n += binary.PutVarint(body[n:], r.TimestampDelta)
	n += binary.PutVarint(body[n:], int64(r.OffsetDelta))
	size := n + bytesSize(r.Key) + bytesSize(r.Value) + varintSize(int64(len(r.Headers)))
	for _, h := range r.Headers {
		size += bytesSize(h.Key) + bytesSize(h.Value)
	}
	dst = binary.AppendVarint(dst, int64(size))
	dst = append(dst, body[:n]...)
	dst = appendBytes(dst, r.Key)
	dst = appendBytes(dst, r.Value)
	dst = binary.AppendVarint(dst, int64(len(r.Headers)))
	for _, h := range r.Headers {
		dst = appendBytes(dst, h.Key)
		dst = appendBytes(dst, h.Value)
	}
	return dst
}

func varintSize(v int64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutVarint(b[:], v)
}

func bytesSize(b []byte) int {
	if b == nil {
		return varintSize(-1)
	}
	return varintSize(int64(len(b))) + len(b)
}

func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}
