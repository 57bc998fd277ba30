package txn

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Sentinel errors. Compare with errors.Is.
var (
	// ErrInvalidConfig wraps every error of Config.Validate.
	ErrInvalidConfig = errors.New("txn: invalid config")

	// ErrCorruptRecord: Replay got a __transaction_state record whose key
	// or value does not decode, or holds a state Kafka never writes. The
	// partition cannot be loaded faithfully; the broker should not become
	// coordinator for it.
	ErrCorruptRecord = errors.New("txn: corrupt __transaction_state record")

	// ErrLoaded: Replay was called after Loaded. Records the coordinator
	// wrote itself are already applied; replaying them would apply them
	// twice.
	ErrLoaded = errors.New("txn: coordinator already loaded")
)

// Kafka error codes used by the coordinator. They are data in responses,
// not Go errors; the numbers are the protocol's (Errors.java).
const (
	errNone                      int16 = 0
	errUnknownServerError        int16 = -1
	errUnknownTopicOrPartition   int16 = 3
	errInvalidFetchSize          int16 = 4
	errNotLeaderOrFollower       int16 = 6
	errRequestTimedOut           int16 = 7
	errMessageTooLarge           int16 = 10
	errCoordinatorLoadInProgress int16 = 14
	errCoordinatorNotAvailable   int16 = 15
	errNotCoordinator            int16 = 16
	errRecordListTooLarge        int16 = 18
	errNotEnoughReplicas         int16 = 19
	errNotEnoughReplicasAfter    int16 = 20
	errTopicAuthorizationFailed  int16 = 29
	errInvalidRequest            int16 = 42
	errInvalidProducerEpoch      int16 = 47
	errInvalidTxnState           int16 = 48
	errInvalidProducerIDMapping  int16 = 49
	errInvalidTransactionTimeout int16 = 50
	errConcurrentTransactions    int16 = 51
	errOperationNotAttempted     int16 = 55
	errKafkaStorageError         int16 = 56
	errProducerFenced            int16 = 90
	errTransactionalIDNotFound   int16 = 105
	errTransactionAbortable      int16 = 120
	errInvalidRegularExpression  int16 = 128
)

// appendErrorCode maps the error of a failed append to the code the client
// gets, as Kafka's transaction state manager does: errors a client cannot
// act on become COORDINATOR_NOT_AVAILABLE (retry) or NOT_COORDINATOR (look
// the coordinator up again).
func appendErrorCode(code int16) int16 {
	switch code {
	case errUnknownTopicOrPartition, errNotEnoughReplicas, errNotEnoughReplicasAfter, errRequestTimedOut:
		return errCoordinatorNotAvailable
	case errNotLeaderOrFollower, errKafkaStorageError:
		return errNotCoordinator
	case errMessageTooLarge, errRecordListTooLarge, errInvalidFetchSize:
		return errUnknownServerError
	case errNone:
		// A failure reported without a code: the client should retry.
		return errCoordinatorNotAvailable
	}
	return code
}

// fencedCode is the code a client that speaks version v of an API with
// fencedSince as the first version knowing PRODUCER_FENCED gets for a
// fenced producer: older clients only understand INVALID_PRODUCER_EPOCH
// (KIP-588).
func fencedCode(code int16, v, fencedSince int16) int16 {
	if code == errProducerFenced && v < fencedSince {
		return errInvalidProducerEpoch
	}
	return code
}

// ErrorResponse answers req, at its version, with code everywhere the
// response has room for one. The broker uses it for requests that reach no
// coordinator (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, ...).
func ErrorResponse(req kmsg.Request, code int16) kmsg.Response { return errorResponse(req, code) }
