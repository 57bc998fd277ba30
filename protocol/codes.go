package protocol

import (
	"errors"
	"strconv"

	"github.com/gregor-io/gregor/protocol/record"
)

// ErrorCode is a Kafka error code, as carried in response bodies. Codes are
// data, not Go errors: a handler works with Go errors and turns them into a
// code in one place, ErrorCodeFor, when it builds the response.
type ErrorCode int16

// Kafka's error codes, -1 through 133, with Kafka's names in
// CamelCase. String returns the name as Kafka spells it.
const (
	UnknownServerError                 ErrorCode = -1
	None                               ErrorCode = 0
	OffsetOutOfRange                   ErrorCode = 1
	CorruptMessage                     ErrorCode = 2
	UnknownTopicOrPartition            ErrorCode = 3
	InvalidFetchSize                   ErrorCode = 4
	LeaderNotAvailable                 ErrorCode = 5
	NotLeaderOrFollower                ErrorCode = 6
	RequestTimedOut                    ErrorCode = 7
	BrokerNotAvailable                 ErrorCode = 8
	ReplicaNotAvailable                ErrorCode = 9
	MessageTooLarge                    ErrorCode = 10
	StaleControllerEpoch               ErrorCode = 11
	OffsetMetadataTooLarge             ErrorCode = 12
	NetworkException                   ErrorCode = 13
	CoordinatorLoadInProgress          ErrorCode = 14
	CoordinatorNotAvailable            ErrorCode = 15
	NotCoordinator                     ErrorCode = 16
	InvalidTopicException              ErrorCode = 17
	RecordListTooLarge                 ErrorCode = 18
	NotEnoughReplicas                  ErrorCode = 19
	NotEnoughReplicasAfterAppend       ErrorCode = 20
	InvalidRequiredAcks                ErrorCode = 21
	IllegalGeneration                  ErrorCode = 22
	InconsistentGroupProtocol          ErrorCode = 23
	InvalidGroupID                     ErrorCode = 24
	UnknownMemberID                    ErrorCode = 25
	InvalidSessionTimeout              ErrorCode = 26
	RebalanceInProgress                ErrorCode = 27
	InvalidCommitOffsetSize            ErrorCode = 28
	TopicAuthorizationFailed           ErrorCode = 29
	GroupAuthorizationFailed           ErrorCode = 30
	ClusterAuthorizationFailed         ErrorCode = 31
	InvalidTimestamp                   ErrorCode = 32
	UnsupportedSASLMechanism           ErrorCode = 33
	IllegalSASLState                   ErrorCode = 34
	UnsupportedVersion                 ErrorCode = 35
	TopicAlreadyExists                 ErrorCode = 36
	InvalidPartitions                  ErrorCode = 37
	InvalidReplicationFactor           ErrorCode = 38
	InvalidReplicaAssignment           ErrorCode = 39
	InvalidConfig                      ErrorCode = 40
	NotController                      ErrorCode = 41
	InvalidRequest                     ErrorCode = 42
	UnsupportedForMessageFormat        ErrorCode = 43
	PolicyViolation                    ErrorCode = 44
	OutOfOrderSequenceNumber           ErrorCode = 45
	DuplicateSequenceNumber            ErrorCode = 46
	InvalidProducerEpoch               ErrorCode = 47
	InvalidTxnState                    ErrorCode = 48
	InvalidProducerIDMapping           ErrorCode = 49
	InvalidTransactionTimeout          ErrorCode = 50
	ConcurrentTransactions             ErrorCode = 51
	TransactionCoordinatorFenced       ErrorCode = 52
	TransactionalIDAuthorizationFailed ErrorCode = 53
	SecurityDisabled                   ErrorCode = 54
	OperationNotAttempted              ErrorCode = 55
	KafkaStorageError                  ErrorCode = 56
	LogDirNotFound                     ErrorCode = 57
	SASLAuthenticationFailed           ErrorCode = 58
	UnknownProducerID                  ErrorCode = 59
	ReassignmentInProgress             ErrorCode = 60
	DelegationTokenAuthDisabled        ErrorCode = 61
	DelegationTokenNotFound            ErrorCode = 62
	DelegationTokenOwnerMismatch       ErrorCode = 63
	DelegationTokenRequestNotAllowed   ErrorCode = 64
	DelegationTokenAuthorizationFailed ErrorCode = 65
	DelegationTokenExpired             ErrorCode = 66
	InvalidPrincipalType               ErrorCode = 67
	NonEmptyGroup                      ErrorCode = 68
	GroupIDNotFound                    ErrorCode = 69
	FetchSessionIDNotFound             ErrorCode = 70
	InvalidFetchSessionEpoch           ErrorCode = 71
	ListenerNotFound                   ErrorCode = 72
	TopicDeletionDisabled              ErrorCode = 73
	FencedLeaderEpoch                  ErrorCode = 74
	UnknownLeaderEpoch                 ErrorCode = 75
	UnsupportedCompressionType         ErrorCode = 76
	StaleBrokerEpoch                   ErrorCode = 77
	OffsetNotAvailable                 ErrorCode = 78
	MemberIDRequired                   ErrorCode = 79
	PreferredLeaderNotAvailable        ErrorCode = 80
	GroupMaxSizeReached                ErrorCode = 81
	FencedInstanceID                   ErrorCode = 82
	EligibleLeadersNotAvailable        ErrorCode = 83
	ElectionNotNeeded                  ErrorCode = 84
	NoReassignmentInProgress           ErrorCode = 85
	GroupSubscribedToTopic             ErrorCode = 86
	InvalidRecord                      ErrorCode = 87
	UnstableOffsetCommit               ErrorCode = 88
	ThrottlingQuotaExceeded            ErrorCode = 89
	ProducerFenced                     ErrorCode = 90
	ResourceNotFound                   ErrorCode = 91
	DuplicateResource                  ErrorCode = 92
	UnacceptableCredential             ErrorCode = 93
	InconsistentVoterSet               ErrorCode = 94
	InvalidUpdateVersion               ErrorCode = 95
	FeatureUpdateFailed                ErrorCode = 96
	PrincipalDeserializationFailure    ErrorCode = 97
	SnapshotNotFound                   ErrorCode = 98
	PositionOutOfRange                 ErrorCode = 99
	UnknownTopicID                     ErrorCode = 100
	DuplicateBrokerRegistration        ErrorCode = 101
	BrokerIDNotRegistered              ErrorCode = 102
	InconsistentTopicID                ErrorCode = 103
	InconsistentClusterID              ErrorCode = 104
	TransactionalIDNotFound            ErrorCode = 105
	FetchSessionTopicIDError           ErrorCode = 106
	IneligibleReplica                  ErrorCode = 107
	NewLeaderElected                   ErrorCode = 108
	OffsetMovedToTieredStorage         ErrorCode = 109
	FencedMemberEpoch                  ErrorCode = 110
	UnreleasedInstanceID               ErrorCode = 111
	UnsupportedAssignor                ErrorCode = 112
	StaleMemberEpoch                   ErrorCode = 113
	MismatchedEndpointType             ErrorCode = 114
	UnsupportedEndpointType            ErrorCode = 115
	UnknownControllerID                ErrorCode = 116
	UnknownSubscriptionID              ErrorCode = 117
	TelemetryTooLarge                  ErrorCode = 118
	InvalidRegistration                ErrorCode = 119
	TransactionAbortable               ErrorCode = 120
	InvalidRecordState                 ErrorCode = 121
	ShareSessionNotFound               ErrorCode = 122
	InvalidShareSessionEpoch           ErrorCode = 123
	FencedStateEpoch                   ErrorCode = 124
	InvalidVoterKey                    ErrorCode = 125
	DuplicateVoter                     ErrorCode = 126
	VoterNotFound                      ErrorCode = 127
	InvalidRegularExpression           ErrorCode = 128
	RebootstrapRequired                ErrorCode = 129
	StreamsInvalidTopology             ErrorCode = 130
	StreamsInvalidTopologyEpoch        ErrorCode = 131
	StreamsTopologyFenced              ErrorCode = 132
	ShareSessionLimitReached           ErrorCode = 133
)

// lastKnownCode is the highest code in the table below.
const lastKnownCode = ShareSessionLimitReached

// errorCodeInfo is indexed by code+1, so that UNKNOWN_SERVER_ERROR (-1) is
// entry 0. retriable is Kafka's marking: whether the code's exception in the
// Java client is a RetriableException, which the protocol documentation's
// error table repeats.
var errorCodeInfo = [lastKnownCode + 2]struct {
	name      string
	retriable bool
}{
	UnknownServerError + 1:                 {"UNKNOWN_SERVER_ERROR", false},
	None + 1:                               {"NONE", false},
	OffsetOutOfRange + 1:                   {"OFFSET_OUT_OF_RANGE", false},
	CorruptMessage + 1:                     {"CORRUPT_MESSAGE", true},
	UnknownTopicOrPartition + 1:            {"UNKNOWN_TOPIC_OR_PARTITION", true},
	InvalidFetchSize + 1:                   {"INVALID_FETCH_SIZE", false},
	LeaderNotAvailable + 1:                 {"LEADER_NOT_AVAILABLE", true},
	NotLeaderOrFollower + 1:                {"NOT_LEADER_OR_FOLLOWER", true},
	RequestTimedOut + 1:                    {"REQUEST_TIMED_OUT", true},
	BrokerNotAvailable + 1:                 {"BROKER_NOT_AVAILABLE", false},
	ReplicaNotAvailable + 1:                {"REPLICA_NOT_AVAILABLE", true},
	MessageTooLarge + 1:                    {"MESSAGE_TOO_LARGE", false},
	StaleControllerEpoch + 1:               {"STALE_CONTROLLER_EPOCH", false},
	OffsetMetadataTooLarge + 1:             {"OFFSET_METADATA_TOO_LARGE", false},
	NetworkException + 1:                   {"NETWORK_EXCEPTION", true},
	CoordinatorLoadInProgress + 1:          {"COORDINATOR_LOAD_IN_PROGRESS", true},
	CoordinatorNotAvailable + 1:            {"COORDINATOR_NOT_AVAILABLE", true},
	NotCoordinator + 1:                     {"NOT_COORDINATOR", true},
	InvalidTopicException + 1:              {"INVALID_TOPIC_EXCEPTION", false},
	RecordListTooLarge + 1:                 {"RECORD_LIST_TOO_LARGE", false},
	NotEnoughReplicas + 1:                  {"NOT_ENOUGH_REPLICAS", true},
	NotEnoughReplicasAfterAppend + 1:       {"NOT_ENOUGH_REPLICAS_AFTER_APPEND", true},
	InvalidRequiredAcks + 1:                {"INVALID_REQUIRED_ACKS", false},
	IllegalGeneration + 1:                  {"ILLEGAL_GENERATION", false},
	InconsistentGroupProtocol + 1:          {"INCONSISTENT_GROUP_PROTOCOL", false},
	InvalidGroupID + 1:                     {"INVALID_GROUP_ID", false},
	UnknownMemberID + 1:                    {"UNKNOWN_MEMBER_ID", false},
	InvalidSessionTimeout + 1:              {"INVALID_SESSION_TIMEOUT", false},
	RebalanceInProgress + 1:                {"REBALANCE_IN_PROGRESS", false},
	InvalidCommitOffsetSize + 1:            {"INVALID_COMMIT_OFFSET_SIZE", false},
	TopicAuthorizationFailed + 1:           {"TOPIC_AUTHORIZATION_FAILED", false},
	GroupAuthorizationFailed + 1:           {"GROUP_AUTHORIZATION_FAILED", false},
	ClusterAuthorizationFailed + 1:         {"CLUSTER_AUTHORIZATION_FAILED", false},
	InvalidTimestamp + 1:                   {"INVALID_TIMESTAMP", false},
	UnsupportedSASLMechanism + 1:           {"UNSUPPORTED_SASL_MECHANISM", false},
	IllegalSASLState + 1:                   {"ILLEGAL_SASL_STATE", false},
	UnsupportedVersion + 1:                 {"UNSUPPORTED_VERSION", false},
	TopicAlreadyExists + 1:                 {"TOPIC_ALREADY_EXISTS", false},
	InvalidPartitions + 1:                  {"INVALID_PARTITIONS", false},
	InvalidReplicationFactor + 1:           {"INVALID_REPLICATION_FACTOR", false},
	InvalidReplicaAssignment + 1:           {"INVALID_REPLICA_ASSIGNMENT", false},
	InvalidConfig + 1:                      {"INVALID_CONFIG", false},
	NotController + 1:                      {"NOT_CONTROLLER", true},
	InvalidRequest + 1:                     {"INVALID_REQUEST", false},
	UnsupportedForMessageFormat + 1:        {"UNSUPPORTED_FOR_MESSAGE_FORMAT", false},
	PolicyViolation + 1:                    {"POLICY_VIOLATION", false},
	OutOfOrderSequenceNumber + 1:           {"OUT_OF_ORDER_SEQUENCE_NUMBER", false},
	DuplicateSequenceNumber + 1:            {"DUPLICATE_SEQUENCE_NUMBER", false},
	InvalidProducerEpoch + 1:               {"INVALID_PRODUCER_EPOCH", false},
	InvalidTxnState + 1:                    {"INVALID_TXN_STATE", false},
	InvalidProducerIDMapping + 1:           {"INVALID_PRODUCER_ID_MAPPING", false},
	InvalidTransactionTimeout + 1:          {"INVALID_TRANSACTION_TIMEOUT", false},
	ConcurrentTransactions + 1:             {"CONCURRENT_TRANSACTIONS", true},
	TransactionCoordinatorFenced + 1:       {"TRANSACTION_COORDINATOR_FENCED", false},
	TransactionalIDAuthorizationFailed + 1: {"TRANSACTIONAL_ID_AUTHORIZATION_FAILED", false},
	SecurityDisabled + 1:                   {"SECURITY_DISABLED", false},
	OperationNotAttempted + 1:              {"OPERATION_NOT_ATTEMPTED", false},
	KafkaStorageError + 1:                  {"KAFKA_STORAGE_ERROR", true},
	LogDirNotFound + 1:                     {"LOG_DIR_NOT_FOUND", false},
	SASLAuthenticationFailed + 1:           {"SASL_AUTHENTICATION_FAILED", false},
	UnknownProducerID + 1:                  {"UNKNOWN_PRODUCER_ID", false},
	ReassignmentInProgress + 1:             {"REASSIGNMENT_IN_PROGRESS", false},
	DelegationTokenAuthDisabled + 1:        {"DELEGATION_TOKEN_AUTH_DISABLED", false},
	DelegationTokenNotFound + 1:            {"DELEGATION_TOKEN_NOT_FOUND", false},
	DelegationTokenOwnerMismatch + 1:       {"DELEGATION_TOKEN_OWNER_MISMATCH", false},
	DelegationTokenRequestNotAllowed + 1:   {"DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", false},
	DelegationTokenAuthorizationFailed + 1: {"DELEGATION_TOKEN_AUTHORIZATION_FAILED", false},
	DelegationTokenExpired + 1:             {"DELEGATION_TOKEN_EXPIRED", false},
	InvalidPrincipalType + 1:               {"INVALID_PRINCIPAL_TYPE", false},
	NonEmptyGroup + 1:                      {"NON_EMPTY_GROUP", false},
	GroupIDNotFound + 1:                    {"GROUP_ID_NOT_FOUND", false},
	FetchSessionIDNotFound + 1:             {"FETCH_SESSION_ID_NOT_FOUND", true},
	InvalidFetchSessionEpoch + 1:           {"INVALID_FETCH_SESSION_EPOCH", true},
	ListenerNotFound + 1:                   {"LISTENER_NOT_FOUND", true},
	TopicDeletionDisabled + 1:              {"TOPIC_DELETION_DISABLED", false},
	FencedLeaderEpoch + 1:                  {"FENCED_LEADER_EPOCH", true},
	UnknownLeaderEpoch + 1:                 {"UNKNOWN_LEADER_EPOCH", true},
	UnsupportedCompressionType + 1:         {"UNSUPPORTED_COMPRESSION_TYPE", false},
	StaleBrokerEpoch + 1:                   {"STALE_BROKER_EPOCH", false},
	OffsetNotAvailable + 1:                 {"OFFSET_NOT_AVAILABLE", true},
	MemberIDRequired + 1:                   {"MEMBER_ID_REQUIRED", false},
	PreferredLeaderNotAvailable + 1:        {"PREFERRED_LEADER_NOT_AVAILABLE", true},
	GroupMaxSizeReached + 1:                {"GROUP_MAX_SIZE_REACHED", false},
	FencedInstanceID + 1:                   {"FENCED_INSTANCE_ID", false},
	EligibleLeadersNotAvailable + 1:        {"ELIGIBLE_LEADERS_NOT_AVAILABLE", true},
	ElectionNotNeeded + 1:                  {"ELECTION_NOT_NEEDED", true},
	NoReassignmentInProgress + 1:           {"NO_REASSIGNMENT_IN_PROGRESS", false},
	GroupSubscribedToTopic + 1:             {"GROUP_SUBSCRIBED_TO_TOPIC", false},
	InvalidRecord + 1:                      {"INVALID_RECORD", false},
	UnstableOffsetCommit + 1:               {"UNSTABLE_OFFSET_COMMIT", true},
	ThrottlingQuotaExceeded + 1:            {"THROTTLING_QUOTA_EXCEEDED", true},
	ProducerFenced + 1:                     {"PRODUCER_FENCED", false},
	ResourceNotFound + 1:                   {"RESOURCE_NOT_FOUND", false},
	DuplicateResource + 1:                  {"DUPLICATE_RESOURCE", false},
	UnacceptableCredential + 1:             {"UNACCEPTABLE_CREDENTIAL", false},
	InconsistentVoterSet + 1:               {"INCONSISTENT_VOTER_SET", false},
	InvalidUpdateVersion + 1:               {"INVALID_UPDATE_VERSION", false},
	FeatureUpdateFailed + 1:                {"FEATURE_UPDATE_FAILED", false},
	PrincipalDeserializationFailure + 1:    {"PRINCIPAL_DESERIALIZATION_FAILURE", false},
	SnapshotNotFound + 1:                   {"SNAPSHOT_NOT_FOUND", false},
	PositionOutOfRange + 1:                 {"POSITION_OUT_OF_RANGE", false},
	UnknownTopicID + 1:                     {"UNKNOWN_TOPIC_ID", true},
	DuplicateBrokerRegistration + 1:        {"DUPLICATE_BROKER_REGISTRATION", false},
	BrokerIDNotRegistered + 1:              {"BROKER_ID_NOT_REGISTERED", false},
	InconsistentTopicID + 1:                {"INCONSISTENT_TOPIC_ID", true},
	InconsistentClusterID + 1:              {"INCONSISTENT_CLUSTER_ID", false},
	TransactionalIDNotFound + 1:            {"TRANSACTIONAL_ID_NOT_FOUND", false},
	FetchSessionTopicIDError + 1:           {"FETCH_SESSION_TOPIC_ID_ERROR", true},
	IneligibleReplica + 1:                  {"INELIGIBLE_REPLICA", false},
	NewLeaderElected + 1:                   {"NEW_LEADER_ELECTED", false},
	OffsetMovedToTieredStorage + 1:         {"OFFSET_MOVED_TO_TIERED_STORAGE", false},
	FencedMemberEpoch + 1:                  {"FENCED_MEMBER_EPOCH", false},
	UnreleasedInstanceID + 1:               {"UNRELEASED_INSTANCE_ID", false},
	UnsupportedAssignor + 1:                {"UNSUPPORTED_ASSIGNOR", false},
	StaleMemberEpoch + 1:                   {"STALE_MEMBER_EPOCH", false},
	MismatchedEndpointType + 1:             {"MISMATCHED_ENDPOINT_TYPE", false},
	UnsupportedEndpointType + 1:            {"UNSUPPORTED_ENDPOINT_TYPE", false},
	UnknownControllerID + 1:                {"UNKNOWN_CONTROLLER_ID", false},
	UnknownSubscriptionID + 1:              {"UNKNOWN_SUBSCRIPTION_ID", false},
	TelemetryTooLarge + 1:                  {"TELEMETRY_TOO_LARGE", false},
	InvalidRegistration + 1:                {"INVALID_REGISTRATION", false},
	TransactionAbortable + 1:               {"TRANSACTION_ABORTABLE", false},
	InvalidRecordState + 1:                 {"INVALID_RECORD_STATE", false},
	ShareSessionNotFound + 1:               {"SHARE_SESSION_NOT_FOUND", true},
	InvalidShareSessionEpoch + 1:           {"INVALID_SHARE_SESSION_EPOCH", true},
	FencedStateEpoch + 1:                   {"FENCED_STATE_EPOCH", false},
	InvalidVoterKey + 1:                    {"INVALID_VOTER_KEY", false},
	DuplicateVoter + 1:                     {"DUPLICATE_VOTER", false},
	VoterNotFound + 1:                      {"VOTER_NOT_FOUND", false},
	InvalidRegularExpression + 1:           {"INVALID_REGULAR_EXPRESSION", false},
	RebootstrapRequired + 1:                {"REBOOTSTRAP_REQUIRED", false},
	StreamsInvalidTopology + 1:             {"STREAMS_INVALID_TOPOLOGY", false},
	StreamsInvalidTopologyEpoch + 1:        {"STREAMS_INVALID_TOPOLOGY_EPOCH", false},
	StreamsTopologyFenced + 1:              {"STREAMS_TOPOLOGY_FENCED", false},
	ShareSessionLimitReached + 1:           {"SHARE_SESSION_LIMIT_REACHED", true},
}

// String returns Kafka's name for the code, such as "NOT_LEADER_OR_FOLLOWER",
// or "UNKNOWN_ERROR_CODE(n)" for a code this package does not know.
func (c ErrorCode) String() string {
	if c >= UnknownServerError && c <= lastKnownCode {
		return errorCodeInfo[c+1].name
	}
	return "UNKNOWN_ERROR_CODE(" + strconv.Itoa(int(c)) + ")"
}

// Retriable reports whether Kafka marks the code retriable: a client may
// send the same request again, usually after refreshing metadata, and expect
// it to succeed. Unknown codes are not retriable.
func (c ErrorCode) Retriable() bool {
	return c >= UnknownServerError && c <= lastKnownCode && errorCodeInfo[c+1].retriable
}

// ErrorCodeFor is the one place a Go error becomes a Kafka error code: nil is
// None, an error carrying a code (see CodedError) gives that code,
// protocol/record's errors map as Kafka maps the same failures, and anything
// else is UnknownServerError. The broker handles the errors of the packages
// protocol may not import (storage, for one) before calling it.
//
// The record mapping, by what Kafka does with a producer's batch:
//   - ErrCorrupt, ErrTruncated, ErrBatchTooSmall: CORRUPT_MESSAGE. Kafka
//     throws CorruptRecordException for a CRC mismatch and for a batch size
//     below the minimum overhead or beyond the bytes.
//   - ErrMagic: INVALID_RECORD. Produce v3 and later may only carry magic 2
//     batches; Kafka rejects a v0/v1 message set in them with
//     InvalidRecordException. (A magic above 2 fails earlier in Kafka, in its
//     batch iterator, as CORRUPT_MESSAGE; the sentinel does not tell the two
//     apart, and only a broken client sends either.)
//   - ErrUnknownCodec: UNSUPPORTED_COMPRESSION_TYPE.
//   - ErrTooLarge (records decompress beyond the broker's limit):
//     MESSAGE_TOO_LARGE. Kafka has no such limit, but this is the code for a
//     batch the broker will not take because of its size, and the Java
//     producer answers it by splitting the batch and retrying, which is the
//     right response.
//   - ErrInvalidTimestamp: INVALID_TIMESTAMP, checked before
//     ErrInvalidRecord: as in Kafka's LogValidator, a batch whose record
//     errors include a timestamp out of range fails as INVALID_TIMESTAMP.
//   - ErrInvalidRecord: INVALID_RECORD.
func ErrorCodeFor(err error) ErrorCode {
	if err == nil {
		return None
	}
	if ce, ok := errors.AsType[CodedError](err); ok {
		return ce.KafkaErrorCode()
	}
	switch {
	case errors.Is(err, record.ErrCorrupt),
		errors.Is(err, record.ErrTruncated),
		errors.Is(err, record.ErrBatchTooSmall):
		return CorruptMessage
	case errors.Is(err, record.ErrUnknownCodec):
		return UnsupportedCompressionType
	case errors.Is(err, record.ErrMagic):
		return InvalidRecord
	case errors.Is(err, record.ErrTooLarge):
		return MessageTooLarge
	case errors.Is(err, record.ErrInvalidTimestamp):
		return InvalidTimestamp
	case errors.Is(err, record.ErrInvalidRecord):
		return InvalidRecord
	}
	return UnknownServerError
}

// CodedError is an error that knows its Kafka error code. Packages that
// import protocol (replication, the coordinators) return errors implementing
// it, for example for a fenced epoch, and ErrorCodeFor passes the code
// through, however deeply the error is wrapped.
type CodedError interface {
	error
	KafkaErrorCode() ErrorCode
}
