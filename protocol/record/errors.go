package record

import (
	"errors"
	"fmt"
)

// Errors returned by this package. The broker maps them to Kafka error codes:
// ErrCorrupt and ErrTruncated to CORRUPT_MESSAGE, ErrInvalidTimestamp to
// INVALID_TIMESTAMP, ErrUnknownCodec to UNSUPPORTED_COMPRESSION_TYPE, and the
// other record-shape errors to INVALID_RECORD.
var (
	ErrTruncated        = errors.New("record: batch truncated")
	ErrBatchTooSmall    = errors.New("record: batch length below header size")
	ErrCorrupt          = errors.New("record: batch CRC mismatch")
	ErrMagic            = errors.New("record: unsupported magic")
	ErrUnknownCodec     = errors.New("record: unknown compression codec")
	ErrInvalidRecord    = errors.New("record: invalid record")
	ErrInvalidTimestamp = errors.New("record: timestamp out of range")
	ErrTooLarge         = errors.New("record: decompressed records exceed limit")
)

// RecordError is a problem with one record of a batch, reported to producers
// in the record_errors of a produce response.
type RecordError struct {
	Index int32 // position of the record in its batch
	Err   error // ErrInvalidRecord or ErrInvalidTimestamp, wrapped with detail
}

func (e RecordError) Error() string { return fmt.Sprintf("record %d: %v", e.Index, e.Err) }

// Unwrap returns the underlying sentinel.
func (e RecordError) Unwrap() error { return e.Err }

// RecordErrors is the set of per-record problems in one batch.
type RecordErrors []RecordError

func (es RecordErrors) Error() string {
	if len(es) == 1 {
		return es[0].Error()
	}
	return fmt.Sprintf("%v (and %d more)", es[0], len(es)-1)
}

// Unwrap returns the per-record errors so that errors.Is sees their sentinels.
func (es RecordErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i := range es {
		out[i] = es[i]
	}
	return out
}
