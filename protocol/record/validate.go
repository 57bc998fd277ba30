package record

import (
	"fmt"
	"math"
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
	// Zero means 64 MiB.
	MaxDecompressed int
	// Scratch, when not nil, is reused for decompression.
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
	recs := b.Records()
	if c := b.Codec(); c != CodecNone {
		limit := opts.MaxDecompressed
		if limit <= 0 {
			limit = defaultMaxDecompressed
		}
		var scratch []byte
		if opts.Scratch != nil {
			scratch = (*opts.Scratch)[:0]
		}
		var err error
		scratch, err = Decompress(scratch, c, recs, limit)
		if opts.Scratch != nil {
			*opts.Scratch = scratch
		}
		if err != nil {
			return info, err
		}
		recs = scratch
	}
	var recErrs RecordErrors
	base := b.BaseTimestamp()
	it := NewRecordIter(recs, b.RecordCount())
	var i int32
	for r := it.Next(); r != nil; r = it.Next() {
		if r.OffsetDelta != i {
			return info, fmt.Errorf("%w: record %d has offset delta %d", ErrInvalidRecord, i, r.OffsetDelta)
		}
		ts := base + r.TimestampDelta
		if (r.TimestampDelta > 0 && ts < base) || (r.TimestampDelta < 0 && ts > base) {
			ts = math.MaxInt64 // overflow: out of any bound
		}
		if ts > info.MaxTimestamp {
			info.MaxTimestamp, info.MaxTimestampDelta = ts, i
		}
		if opts.RequireKeys && r.Key == nil {
			recErrs = append(recErrs, RecordError{Index: i,
				Err: fmt.Errorf("%w: compacted topic cannot accept a record without a key", ErrInvalidRecord)})
		}
		// Kafka leaves records without a timestamp (-1) unchecked.
		if opts.CheckTimestamps && !b.LogAppendTime() && ts != noTimestamp && !withinBounds(ts, opts) {
			recErrs = append(recErrs, RecordError{Index: i,
				Err: fmt.Errorf("%w: timestamp %d outside [now-%d, now+%d]", ErrInvalidTimestamp,
					ts, opts.TimestampBeforeMax, opts.TimestampAfterMax)})
		}
		i++
	}
	if err := it.Err(); err != nil {
		return info, err
	}
	if i != b.RecordCount() {
		return info, fmt.Errorf("%w: %d records for a declared count of %d", ErrInvalidRecord, i, b.RecordCount())
	}
	if len(recErrs) > 0 {
		return info, recErrs
	}
	return info, nil
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
