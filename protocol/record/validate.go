package record

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
)

// ValidateOptions says which of Kafka's append-time checks to make.
type ValidateOptions struct {
	// Records walks every record (decompressing if needed): per-record
	// framing, dense offset deltas, the record count, keys and timestamps.
	// Without it only the header and CRC are checked.
	Records bool
	// RequireKeys rejects records without a key (compacted topics).
	RequireKeys bool
	// CheckTimestamps bounds CreateTime timestamps to
	// [Now-TimestampBeforeMax, Now+TimestampAfterMax], as Kafka's
	// message.timestamp.before.max.ms and message.timestamp.after.max.ms do.
	CheckTimestamps    bool
	Now                int64
	TimestampBeforeMax int64
	TimestampAfterMax  int64
	// MaxDecompressed bounds the decompressed size of a compressed batch.
	// Zero means 64 MiB. The records of a compressed batch are read as a
	// stream, never held whole, but every byte streamed counts.
	MaxDecompressed int
	// Scratch, when not nil, is reused as the buffer a compressed batch is
	// read through, whatever the batch's size: an empty one is given 16 KiB,
	// a smaller one is used as it is (records larger than the buffer are
	// parsed across refills). It is handed back empty, holding none of the
	// records.
	Scratch *[]byte
}

// BatchInfo is what validation learned about a batch.
type BatchInfo struct {
	// MaxTimestamp is the largest record timestamp, computed from the records
	// when they were walked and taken from the header otherwise.
	MaxTimestamp int64
	// MaxTimestampDelta is the offset delta of the (first) record carrying
	// MaxTimestamp; with records unwalked it is the last offset delta.
	MaxTimestampDelta int32
}

const defaultMaxDecompressed = 64 << 20

// ValidateHeader makes the checks Kafka makes on every batch a producer sends:
// magic 2, a batch length within the bytes, a matching CRC-32C, a known codec,
// an offset range matching the record count, no control batches, and a
// sequence number for idempotent batches. Kafka requires a producer's base
// offset to be 0; that check belongs to the produce path, since replicas send
// batches with their offsets assigned.
func ValidateHeader(b Batch) error {
	if err := CheckIntegrity(b); err != nil {
		return err
	}
	if b.Codec() > CodecZstd {
		return fmt.Errorf("%w: %d", ErrUnknownCodec, b.Codec())
	}
	if b.LastOffsetDelta() < 0 {
		return fmt.Errorf("%w: negative last offset delta %d", ErrInvalidRecord, b.LastOffsetDelta())
	}
	if int64(b.RecordCount()) != int64(b.LastOffsetDelta())+1 {
		return fmt.Errorf("%w: record count %d does not match offset range %d",
			ErrInvalidRecord, b.RecordCount(), int64(b.LastOffsetDelta())+1)
	}
	if b.ProducerID() >= 0 && b.BaseSequence() < 0 {
		return fmt.Errorf("%w: idempotent batch without sequence", ErrInvalidRecord)
	}
	return nil
}

// CheckIntegrity checks what every stored batch must satisfy, whoever wrote
// it: a batch length matching the bytes, magic 2 and a matching CRC-32C. Log
// recovery uses it to find where a log's valid prefix ends; compacted batches,
// whose offsets are sparse, pass it too.
func CheckIntegrity(b Batch) error {
	if len(b) < HeaderSize {
		return ErrBatchTooSmall
	}
	if Size(b) != int64(len(b)) {
		return fmt.Errorf("%w: batch length %d for %d bytes", ErrTruncated, b.Length(), len(b))
	}
	if b.Magic() != Magic {
		return fmt.Errorf("%w: %d", ErrMagic, b.Magic())
	}
	if b.CRC() != b.ComputeCRC() {
		return fmt.Errorf("%w: stored %08x, computed %08x", ErrCorrupt, b.CRC(), b.ComputeCRC())
	}
	if b.LastOffsetDelta() < 0 {
		return fmt.Errorf("%w: negative last offset delta %d", ErrInvalidRecord, b.LastOffsetDelta())
	}
	// The base offset lies outside the CRC: a damaged one must at least
	// leave the batch's offsets representable.
	if b.BaseOffset() < 0 || b.BaseOffset() > math.MaxInt64-int64(b.LastOffsetDelta()) {
		return fmt.Errorf("%w: base offset %d with last offset delta %d", ErrInvalidRecord, b.BaseOffset(), b.LastOffsetDelta())
	}
	return nil
}

// Validate checks a batch sent by a producer: ValidateHeader, then, as opts
// asks, every record. Structural problems return an error wrapping one of the
// package's sentinels; problems with single records (a missing key, a
// timestamp out of bounds) return RecordErrors, all of them, as Kafka lists
// them in the produce response.
func Validate(b Batch, opts ValidateOptions) (BatchInfo, error) {
	info := BatchInfo{MaxTimestamp: -1}
	if err := ValidateHeader(b); err != nil {
		return info, err
	}
	if b.Control() {
		return info, fmt.Errorf("%w: control batch from a producer", ErrInvalidRecord)
	}
	if !opts.Records {
		info.MaxTimestamp = b.MaxTimestamp()
		info.MaxTimestampDelta = b.LastOffsetDelta()
		return info, nil
	}
	ck := recordChecker{opts: opts, base: b.BaseTimestamp(), logAppend: b.LogAppendTime(), info: info}
	if b.Codec() == CodecNone {
		it := NewRecordIter(b.Records(), b.RecordCount())
		for r := it.Next(); r != nil; r = it.Next() {
			if err := ck.check(r.OffsetDelta, r.TimestampDelta, r.Key == nil); err != nil {
				return ck.info, err
			}
		}
		if err := it.Err(); err != nil {
			return ck.info, err
		}
	} else {
		limit := opts.MaxDecompressed
		if limit <= 0 {
			limit = defaultMaxDecompressed
		}
		var buf []byte
		if opts.Scratch != nil {
			buf = *opts.Scratch
		} else {
			st := streamBufs.Get().(*[]byte)
			defer streamBufs.Put(st)
			buf = *st
		}
		if cap(buf) == 0 {
			buf = make([]byte, 0, streamBufSize)
		} else if cap(buf) < binary.MaxVarintLen64 {
			buf = make([]byte, 0, binary.MaxVarintLen64)
		}
		buf, err := validateStream(b, &ck, limit, buf[:0])
		if opts.Scratch != nil {
			*opts.Scratch = buf[:0]
		}
		if err != nil {
			return ck.info, err
		}
	}
	return ck.finish(b.RecordCount())
}

// streamBufs hold the buffers compressed batches are read through when the
// caller gives no Scratch.
var streamBufs = sync.Pool{New: func() any { b := make([]byte, 0, streamBufSize); return &b }}

// recordChecker makes Validate's checks on each record in turn, whether
// the records come from a slice or a stream.
type recordChecker struct {
	opts      ValidateOptions
	base      int64
	logAppend bool
	info      BatchInfo
	next      int32 // the index, and so the offset delta, of the next record
	errs      RecordErrors
}

// check takes the next record's offset and timestamp deltas and whether its
// key is null. Only a structural problem, a wrong offset delta, is returned;
// per-record ones are collected for finish.
func (ck *recordChecker) check(offsetDelta int32, timestampDelta int64, nullKey bool) error {
	i, opts := ck.next, &ck.opts
	if offsetDelta != i {
		return fmt.Errorf("%w: record %d has offset delta %d", ErrInvalidRecord, i, offsetDelta)
	}
	ts := ck.base + timestampDelta
	if (timestampDelta > 0 && ts < ck.base) || (timestampDelta < 0 && ts > ck.base) {
		ts = math.MaxInt64 // overflow: out of any bound
	}
	if ts > ck.info.MaxTimestamp {
		ck.info.MaxTimestamp, ck.info.MaxTimestampDelta = ts, i
	}
	if opts.RequireKeys && nullKey {
		ck.errs = append(ck.errs, RecordError{Index: i,
			Err: fmt.Errorf("%w: compacted topic cannot accept a record without a key", ErrInvalidRecord)})
	}
	// Kafka leaves records without a timestamp (-1) unchecked.
	if opts.CheckTimestamps && !ck.logAppend && ts != noTimestamp && !withinBounds(ts, *opts) {
		ck.errs = append(ck.errs, RecordError{Index: i,
			Err: fmt.Errorf("%w: timestamp %d outside [now-%d, now+%d]", ErrInvalidTimestamp,
				ts, opts.TimestampBeforeMax, opts.TimestampAfterMax)})
	}
	ck.next++
	return nil
}

// finish checks that count records came and returns the record errors.
func (ck *recordChecker) finish(count int32) (BatchInfo, error) {
	if ck.next != count {
		return ck.info, fmt.Errorf("%w: %d records for a declared count of %d", ErrInvalidRecord, ck.next, count)
	}
	if len(ck.errs) > 0 {
		return ck.info, ck.errs
	}
	return ck.info, nil
}

// noTimestamp is the timestamp of a record that has none.
const noTimestamp = -1

// withinBounds takes the distance between ts and Now in uint64: for
// timestamps far apart (a base timestamp near math.MinInt64) Now-ts
// overflows int64, and would let the record through.
func withinBounds(ts int64, o ValidateOptions) bool {
	if o.TimestampBeforeMax >= 0 && ts < o.Now && uint64(o.Now)-uint64(ts) > uint64(o.TimestampBeforeMax) {
		return false
	}
	if o.TimestampAfterMax >= 0 && ts > o.Now && uint64(ts)-uint64(o.Now) > uint64(o.TimestampAfterMax) {
		return false
	}
	return true
}

// ForEachRecord decompresses b if needed and calls fn for each record with
// its absolute offset and timestamp. It stops at the first error fn returns.
// scratch, when not nil, is reused for the decompressed bytes.
func ForEachRecord(b Batch, scratch *[]byte, fn func(offset, timestamp int64, r *Record) error) error {
	recs := b.Records()
	if c := b.Codec(); c != CodecNone {
		var buf []byte
		if scratch != nil {
			buf = (*scratch)[:0]
		}
		var err error
		buf, err = Decompress(buf, c, recs, math.MaxInt32)
		if scratch != nil {
			*scratch = buf
		}
		if err != nil {
			return err
		}
		recs = buf
	}
	it := NewRecordIter(recs, b.RecordCount())
	base, logAppend := b.BaseTimestamp(), b.LogAppendTime()
	for r := it.Next(); r != nil; r = it.Next() {
		ts := base + r.TimestampDelta
		if logAppend {
			ts = b.MaxTimestamp()
		}
		if err := fn(b.BaseOffset()+int64(r.OffsetDelta), ts, r); err != nil {
			return err
		}
	}
	return it.Err()
}
