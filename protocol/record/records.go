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

// decodeRecord decodes one record from buf into r and returns the bytes after it.
func decodeRecord(buf []byte, r *Record) ([]byte, error) {
	length, n := binary.Varint(buf)
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
	body = body[1:]
	var ok bool
	if r.TimestampDelta, body, ok = varlong(body); !ok {
		return nil, errRecord("bad timestamp delta")
	}
	var od int64
	if od, body, ok = varlong(body); !ok || od < math.MinInt32 || od > math.MaxInt32 {
		return nil, errRecord("bad offset delta")
	}
	r.OffsetDelta = int32(od)
	if r.Key, body, ok = nullableBytes(body); !ok {
		return nil, errRecord("bad key")
	}
	if r.Value, body, ok = nullableBytes(body); !ok {
		return nil, errRecord("bad value")
	}
	var nh int64
	if nh, body, ok = varlong(body); !ok || nh < 0 {
		return nil, errRecord("bad header count")
	}
	// Every header takes at least two bytes, which bounds the count before
	// anything is allocated for it.
	if nh > int64(len(body))/2 {
		return nil, errRecord("header count beyond record")
	}
	r.Headers = r.Headers[:0]
	for i := int64(0); i < nh; i++ {
		var h Header
		if h.Key, body, ok = nullableBytes(body); !ok || h.Key == nil {
			return nil, errRecord("bad header key")
		}
		if h.Value, body, ok = nullableBytes(body); !ok {
			return nil, errRecord("bad header value")
		}
		r.Headers = append(r.Headers, h)
	}
	if len(body) != 0 {
		return nil, errRecord("bytes left in record")
	}
	return rest, nil
}

func varlong(b []byte) (int64, []byte, bool) {
	v, n := binary.Varint(b)
	if n <= 0 {
		return 0, b, false
	}
	return v, b[n:], true
}

// nullableBytes reads a varint length and that many bytes; length -1 is null.
func nullableBytes(b []byte) ([]byte, []byte, bool) {
	n, b, ok := varlong(b)
	if !ok || n < -1 || n > int64(len(b)) {
		return nil, b, false
	}
	if n == -1 {
		return nil, b, true
	}
	return b[:n:n], b[n:], true
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
