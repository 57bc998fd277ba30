package group

import "errors"

// Sentinel errors. Compare with errors.Is.
var (
	// ErrInvalidConfig wraps every error of Config.Validate.
	ErrInvalidConfig = errors.New("group: invalid config")

	// ErrCorruptRecord: Replay got a group metadata or offset commit record
	// whose key or value does not decode. The partition cannot be loaded
	// faithfully; the broker should not become coordinator for it.
	ErrCorruptRecord = errors.New("group: corrupt __consumer_offsets record")

	// ErrLoaded: Replay was called after Loaded. Records the coordinator
	// wrote itself are already applied; replaying them would apply them
	// twice.
	ErrLoaded = errors.New("group: coordinator already loaded")
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
	errOffsetMetadataTooLarge    int16 = 12
	errCoordinatorLoadInProgress int16 = 14
	errCoordinatorNotAvailable   int16 = 15
	errNotCoordinator            int16 = 16
	errRecordListTooLarge        int16 = 18
	errNotEnoughReplicas         int16 = 19
	errIllegalGeneration         int16 = 22
	errInconsistentGroupProtocol int16 = 23
	errInvalidGroupID            int16 = 24
	errUnknownMemberID           int16 = 25
	errInvalidSessionTimeout     int16 = 26
	errRebalanceInProgress       int16 = 27
	errKafkaStorageError         int16 = 56
	errInvalidProducerIDMapping  int16 = 49
	errNonEmptyGroup             int16 = 68
	errGroupIDNotFound           int16 = 69
	errMemberIDRequired          int16 = 79
	errGroupMaxSizeReached       int16 = 81
	errFencedInstanceID          int16 = 82
	errGroupSubscribedToTopic    int16 = 86
	errUnstableOffsetCommit      int16 = 88
	errUnknownTopicID            int16 = 100
	errUnsupportedVersion        int16 = 35
	errInvalidRequest            int16 = 42
	errFencedMemberEpoch         int16 = 110
	errUnreleasedInstanceID      int16 = 111
	errUnsupportedAssignor       int16 = 112
	errStaleMemberEpoch          int16 = 113
	errInvalidRegularExpression  int16 = 128
)

// appendErrorCode maps the error of a failed append to the code the client
// gets, as Kafka's coordinator runtime does: errors a client cannot act on
// become COORDINATOR_NOT_AVAILABLE (retry) or NOT_COORDINATOR (look the
// coordinator up again).
func appendErrorCode(code int16) int16 {
	switch code {
	case errUnknownTopicOrPartition, errNotEnoughReplicas, errRequestTimedOut:
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
