package broker

import (
	"context"
	"errors"

	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/storage"
)

// errorCode is the one place where the broker turns internal errors into
// Kafka error codes: storage's here, the record layer's in protocol.
func errorCode(err error) protocol.ErrorCode {
	switch {
	case err == nil:
		return protocol.None
	case errors.Is(err, storage.ErrOffsetOutOfRange):
		return protocol.OffsetOutOfRange
	case errors.Is(err, storage.ErrInvalidProducerEpoch):
		return protocol.InvalidProducerEpoch
	case errors.Is(err, storage.ErrOutOfOrderSequence):
		return protocol.OutOfOrderSequenceNumber
	case errors.Is(err, storage.ErrInvalidTxnState):
		return protocol.InvalidTxnState
	case errors.Is(err, storage.ErrTransactionCoordinatorFenced):
		return protocol.TransactionCoordinatorFenced
	case errors.Is(err, storage.ErrRecordTooLarge):
		// A batch within max.message.bytes but above segment.bytes: Kafka's
		// RecordBatchTooLargeException.
		return protocol.RecordListTooLarge
	case errors.Is(err, errNotLeader):
		return protocol.NotLeaderOrFollower
	case errors.Is(err, storage.ErrClosed), errors.Is(err, storage.ErrUnknownPartition):
		// The partition went away (deleted or moved) under the request.
		return protocol.NotLeaderOrFollower
	case errors.Is(err, storage.ErrLogFailed):
		return protocol.KafkaStorageError
	case errors.Is(err, context.DeadlineExceeded):
		return protocol.RequestTimedOut
	}
	return protocol.ErrorCodeFor(err)
}
