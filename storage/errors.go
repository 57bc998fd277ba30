package storage

import "errors"

// Sentinel errors. The broker maps them to Kafka error codes in one place:
// ErrOffsetOutOfRange to OFFSET_OUT_OF_RANGE, ErrLogFailed and ErrClosed to
// KAFKA_STORAGE_ERROR (or NOT_LEADER_OR_FOLLOWER while a partition moves),
// ErrRecordTooLarge (a batch larger than segment.bytes) to
// RECORD_LIST_TOO_LARGE.
var (
	ErrClosed            = errors.New("storage: log closed")
	ErrLogFailed         = errors.New("storage: log failed after an I/O error")
	ErrOffsetOutOfRange  = errors.New("storage: offset out of range")
	ErrOffsetOrder       = errors.New("storage: batch offsets not above the log end")
	ErrRecordTooLarge    = errors.New("storage: batch larger than a segment can hold")
	ErrInvalidConfig     = errors.New("storage: invalid config")
	ErrUnknownPartition  = errors.New("storage: unknown partition")
	ErrPartitionExists   = errors.New("storage: partition already exists")
	ErrCorruptIndex      = errors.New("storage: corrupt index")
	ErrCorruptCheckpoint = errors.New("storage: corrupt checkpoint file")
	// Idempotent producer checks, mapped to INVALID_PRODUCER_EPOCH and
	// OUT_OF_ORDER_SEQUENCE_NUMBER.
	ErrInvalidProducerEpoch = errors.New("storage: producer epoch fenced")
	ErrOutOfOrderSequence   = errors.New("storage: out of order sequence number")
	// Transaction checks, mapped to INVALID_TXN_STATE (a non-transactional
	// batch from a producer inside a transaction) and
	// TRANSACTION_COORDINATOR_FENCED (a marker from a coordinator epoch
	// older than the last marker's).
	ErrInvalidTxnState              = errors.New("storage: invalid transaction state")
	ErrTransactionCoordinatorFenced = errors.New("storage: transaction coordinator fenced")
)
