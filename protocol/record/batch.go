// Package record reads, checks and patches Kafka RecordBatch v2 bytes.
//
// A Batch is a view over bytes: it decodes header fields on demand and never
// copies the records. The storage layer keeps batches exactly as producers sent
// them; only the base offset and the partition leader epoch, which lie outside
// the CRC, are patched in place when a batch is appended to a log.
//
// # RecordBatch v2 (all integers big-endian)
//
//	offset  size  field
//	     0     8  baseOffset            int64: offset of the first record
//	     8     4  batchLength           int32: bytes after this field (total size - 12)
//	    12     4  partitionLeaderEpoch  int32
//	    16     1  magic                 int8: always 2
//	    17     4  crc                   uint32: CRC-32C (Castagnoli) of bytes 21..end
//	    21     2  attributes            int16: see below
//	    23     4  lastOffsetDelta       int32: offset of the last record - baseOffset
//	    27     8  baseTimestamp         int64: timestamp of the first record (ms)
//	    35     8  maxTimestamp          int64: largest timestamp in the batch (ms)
//	    43     8  producerId            int64: -1 when not idempotent
//	    51     2  producerEpoch         int16
//	    53     4  baseSequence          int32
//	    57     4  recordCount           int32
//	    61     -  records               recordCount records, compressed as a whole
//	                                    when attributes say so
//
// Attributes: bits 0-2 compression codec (0 none, 1 gzip, 2 snappy, 3 lz4,
// 4 zstd), bit 3 timestamp type (0 CreateTime, 1 LogAppendTime), bit 4
// transactional, bit 5 control batch, bit 6 delete horizon set (KIP-534: the
// base timestamp is then the tombstone delete horizon).
//
// # Record (inside the records section, after decompression)
//
//	length          varint: bytes of the record after this field
//	attributes      int8: unused, 0
//	timestampDelta  varlong: timestamp - baseTimestamp
//	offsetDelta     varint: offset - baseOffset
//	keyLength       varint: -1 for a null key
//	key             bytes
//	valueLength     varint: -1 for a null value (a tombstone)
//	value           bytes
//	headerCount     varint
//	headers         headerCount x (keyLength varint, key, valueLength varint, value)
//
// Varints are zig-zag encoded, as in protocol buffers' sint32/sint64.
package record

import (
	"encoding/binary"
	"hash/crc32"
)

// Field offsets of the RecordBatch v2 header.
const (
	offBaseOffset    = 0
	offBatchLength   = 8
	offLeaderEpoch   = 12
	offMagic         = 16
	offCRC           = 17
	offAttributes    = 21
	offLastDelta     = 23
	offBaseTimestamp = 27
	offMaxTimestamp  = 35
	offProducerID    = 43
	offProducerEpoch = 51
	offBaseSequence  = 53
	offRecordCount   = 57

	// HeaderSize is the size of the RecordBatch v2 header, up to the records.
	HeaderSize = 61
	// LogOverhead is the size of baseOffset and batchLength: the bytes a
	// reader needs to learn where a batch ends.
	LogOverhead = 12
	// Magic is the only batch format version this package accepts.
	Magic = 2
)

// Attribute bits.
const (
	codecMask              = 0x07
	timestampTypeBit       = 0x08
	transactionalBit       = 0x10
	controlBit             = 0x20
	deleteHorizonBit       = 0x40
	NoProducerID           = -1
	NoSequence             = -1
	NoPartitionLeaderEpoch = -1
)

// Codec is a batch compression codec, as numbered in the attributes field.
type Codec int8

// Codecs Kafka defines.
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

// String returns Kafka's name for the codec (its compression.type value).
func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return "unknown"
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Batch is a view over one RecordBatch v2. It holds the bytes of exactly one
// batch (HeaderSize bytes at least); the accessors read the header in place.
// A Batch obtained from Next or Parse has had its length fields checked, but
// not its CRC or records: see Validate.
type Batch []byte

// BaseOffset is the offset of the batch's first record.
func (b Batch) BaseOffset() int64 { return int64(binary.BigEndian.Uint64(b[offBaseOffset:])) }

// LastOffset is the offset of the batch's last record (base + lastOffsetDelta).
func (b Batch) LastOffset() int64 { return b.BaseOffset() + int64(b.LastOffsetDelta()) }

// NextOffset is the offset that follows this batch.
func (b Batch) NextOffset() int64 { return b.LastOffset() + 1 }

// Length is the batchLength field: the size of the batch minus LogOverhead.
func (b Batch) Length() int32 { return int32(binary.BigEndian.Uint32(b[offBatchLength:])) }

// PartitionLeaderEpoch is the leader epoch under which the batch was appended.
func (b Batch) PartitionLeaderEpoch() int32 {
	return int32(binary.BigEndian.Uint32(b[offLeaderEpoch:]))
}

// Magic is the batch format version.
func (b Batch) Magic() int8 { return int8(b[offMagic]) }

// CRC is the stored CRC-32C.
func (b Batch) CRC() uint32 { return binary.BigEndian.Uint32(b[offCRC:]) }

// Attributes is the raw attributes field.
func (b Batch) Attributes() int16 { return int16(binary.BigEndian.Uint16(b[offAttributes:])) }

// Codec is the compression codec of the records section.
func (b Batch) Codec() Codec { return Codec(b.Attributes() & codecMask) }

// LogAppendTime reports whether the batch's timestamps are the broker's
// append time rather than the producer's create time.
func (b Batch) LogAppendTime() bool { return b.Attributes()&timestampTypeBit != 0 }

// Transactional reports whether the batch belongs to a transaction.
func (b Batch) Transactional() bool { return b.Attributes()&transactionalBit != 0 }

// Control reports whether the batch is a control batch (transaction markers).
func (b Batch) Control() bool { return b.Attributes()&controlBit != 0 }

// HasDeleteHorizon reports whether the base timestamp holds the delete
// horizon set by the log cleaner (KIP-534).
func (b Batch) HasDeleteHorizon() bool { return b.Attributes()&deleteHorizonBit != 0 }

// LastOffsetDelta is the lastOffsetDelta field.
func (b Batch) LastOffsetDelta() int32 { return int32(binary.BigEndian.Uint32(b[offLastDelta:])) }

// BaseTimestamp is the baseTimestamp field.
func (b Batch) BaseTimestamp() int64 { return int64(binary.BigEndian.Uint64(b[offBaseTimestamp:])) }

// MaxTimestamp is the maxTimestamp field.
func (b Batch) MaxTimestamp() int64 { return int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])) }

// ProducerID is the producer id, NoProducerID when not idempotent.
func (b Batch) ProducerID() int64 { return int64(binary.BigEndian.Uint64(b[offProducerID:])) }

// ProducerEpoch is the producer epoch.
func (b Batch) ProducerEpoch() int16 { return int16(binary.BigEndian.Uint16(b[offProducerEpoch:])) }

// BaseSequence is the sequence number of the first record.
func (b Batch) BaseSequence() int32 { return int32(binary.BigEndian.Uint32(b[offBaseSequence:])) }

// RecordCount is the declared number of records.
func (b Batch) RecordCount() int32 { return int32(binary.BigEndian.Uint32(b[offRecordCount:])) }

// Records is the records section, compressed when Codec is not CodecNone.
func (b Batch) Records() []byte { return b[HeaderSize:] }

// ComputeCRC computes the CRC-32C over attributes..end, the range the crc
// field covers.
func (b Batch) ComputeCRC() uint32 { return crc32.Checksum(b[offAttributes:], castagnoli) }

// SetBaseOffset patches the base offset. It lies outside the CRC, so the CRC
// stays valid.
func (b Batch) SetBaseOffset(o int64) { binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(o)) }

// SetPartitionLeaderEpoch patches the leader epoch, which lies outside the CRC.
func (b Batch) SetPartitionLeaderEpoch(e int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(e))
}

// SetLogAppendTime switches the batch to LogAppendTime with the given
// timestamp as its max timestamp, and rewrites the CRC. Kafka leaves the
// records untouched in that case: readers take every record's timestamp from
// the batch's max timestamp.
func (b Batch) SetLogAppendTime(ts int64) {
	attrs := uint16(b.Attributes()) | timestampTypeBit
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	b.UpdateCRC()
}

// SetMaxTimestamp rewrites the max timestamp and the CRC.
func (b Batch) SetMaxTimestamp(ts int64) {
	if b.MaxTimestamp() == ts {
		return
	}
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	b.UpdateCRC()
}

// UpdateCRC recomputes and stores the CRC.
func (b Batch) UpdateCRC() { binary.BigEndian.PutUint32(b[offCRC:], b.ComputeCRC()) }

// Size returns the total size in bytes of the batch whose first LogOverhead
// bytes are hdr, as its batchLength field declares, or -1 when the field is
// negative. It does not check that the size is plausible.
func Size(hdr []byte) int64 {
	n := int32(binary.BigEndian.Uint32(hdr[offBatchLength:]))
	if n < 0 {
		return -1
	}
	return int64(n) + LogOverhead
}

// Parse splits the first batch off buf. It checks the length fields only: the
// declared length must cover a full header and fit in buf. rest is what
// follows the batch.
func Parse(buf []byte) (b Batch, rest []byte, err error) {
	if len(buf) < LogOverhead {
		return nil, buf, ErrTruncated
	}
	size := Size(buf)
	if size < HeaderSize {
		return nil, buf, ErrBatchTooSmall
	}
	if size > int64(len(buf)) {
		return nil, buf, ErrTruncated
	}
	return Batch(buf[:size]), buf[size:], nil
}

// Iter walks the batches of a record set (batches back to back).
type Iter struct {
	buf []byte
	pos int
	err error
}

// NewIter returns an iterator over the batches in buf.
func NewIter(buf []byte) Iter { return Iter{buf: buf} }

// Next returns the next batch, or false at the end of buf or on an error
// (see Err). A record set that ends inside a batch is an error.
func (it *Iter) Next() (Batch, bool) {
	if it.err != nil || it.pos >= len(it.buf) {
		return nil, false
	}
	b, _, err := Parse(it.buf[it.pos:])
	if err != nil {
		it.err = err
		return nil, false
	}
	it.pos += len(b)
	return b, true
}

// Err is the error that stopped Next, or nil.
func (it *Iter) Err() error { return it.err }

// Pos is the byte position of the next batch in the record set.
func (it *Iter) Pos() int { return it.pos }

// SetLastOffsetDelta rewrites the last offset delta and the CRC. Log
// compaction keeps a rewritten batch's last offset, even when its last
// record is gone, so the batch's last sequence number survives.
func (b Batch) SetLastOffsetDelta(d int32) {
	if b.LastOffsetDelta() == d {
		return
	}
	binary.BigEndian.PutUint32(b[offLastDelta:], uint32(d))
	b.UpdateCRC()
}

// AppendEmpty appends to dst a batch with b's header and no records: the
// same base offset, last offset delta, timestamps, producer id, epoch and
// base sequence and leader epoch, uncompressed. Log compaction writes one
// where every record of a batch is gone but the batch must stay, as Kafka
// keeps an idempotent producer's last batch so its state survives.
func AppendEmpty(dst []byte, b Batch) []byte {
	start := len(dst)
	dst = append(dst, b[:HeaderSize]...)
	e := Batch(dst[start:])
	be := binary.BigEndian
	be.PutUint32(e[offBatchLength:], uint32(HeaderSize-LogOverhead))
	be.PutUint16(e[offAttributes:], uint16(b.Attributes())&^codecMask)
	be.PutUint32(e[offRecordCount:], 0)
	e.UpdateCRC()
	return dst
}
