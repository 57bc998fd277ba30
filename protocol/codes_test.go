package protocol

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gregor-io/gregor/protocol/record"
)

func TestErrorCodeNamesAndNumbers(t *testing.T) {
	// Numbers and names from Kafka's protocol documentation.
	for _, c := range []struct {
		code ErrorCode
		num  int16
		name string
	}{
		{UnknownServerError, -1, "UNKNOWN_SERVER_ERROR"},
		{None, 0, "NONE"},
		{OffsetOutOfRange, 1, "OFFSET_OUT_OF_RANGE"},
		{CorruptMessage, 2, "CORRUPT_MESSAGE"},
		{UnknownTopicOrPartition, 3, "UNKNOWN_TOPIC_OR_PARTITION"},
		{InvalidFetchSize, 4, "INVALID_FETCH_SIZE"},
		{LeaderNotAvailable, 5, "LEADER_NOT_AVAILABLE"},
		{NotLeaderOrFollower, 6, "NOT_LEADER_OR_FOLLOWER"},
		{RequestTimedOut, 7, "REQUEST_TIMED_OUT"},
		{MessageTooLarge, 10, "MESSAGE_TOO_LARGE"},
		{InvalidTopicException, 17, "INVALID_TOPIC_EXCEPTION"},
		{RecordListTooLarge, 18, "RECORD_LIST_TOO_LARGE"},
		{NotEnoughReplicas, 19, "NOT_ENOUGH_REPLICAS"},
		{InvalidRequiredAcks, 21, "INVALID_REQUIRED_ACKS"},
		{InvalidTimestamp, 32, "INVALID_TIMESTAMP"},
		{UnsupportedSASLMechanism, 33, "UNSUPPORTED_SASL_MECHANISM"},
		{UnsupportedVersion, 35, "UNSUPPORTED_VERSION"},
		{TopicAlreadyExists, 36, "TOPIC_ALREADY_EXISTS"},
		{InvalidPartitions, 37, "INVALID_PARTITIONS"},
		{InvalidReplicationFactor, 38, "INVALID_REPLICATION_FACTOR"},
		{InvalidReplicaAssignment, 39, "INVALID_REPLICA_ASSIGNMENT"},
		{InvalidConfig, 40, "INVALID_CONFIG"},
		{InvalidRequest, 42, "INVALID_REQUEST"},
		{UnsupportedForMessageFormat, 43, "UNSUPPORTED_FOR_MESSAGE_FORMAT"},
		{OutOfOrderSequenceNumber, 45, "OUT_OF_ORDER_SEQUENCE_NUMBER"},
		{DuplicateSequenceNumber, 46, "DUPLICATE_SEQUENCE_NUMBER"},
		{InvalidProducerEpoch, 47, "INVALID_PRODUCER_EPOCH"},
		{KafkaStorageError, 56, "KAFKA_STORAGE_ERROR"},
		{UnknownProducerID, 59, "UNKNOWN_PRODUCER_ID"},
		{FetchSessionIDNotFound, 70, "FETCH_SESSION_ID_NOT_FOUND"},
		{InvalidFetchSessionEpoch, 71, "INVALID_FETCH_SESSION_EPOCH"},
		{FencedLeaderEpoch, 74, "FENCED_LEADER_EPOCH"},
		{UnknownLeaderEpoch, 75, "UNKNOWN_LEADER_EPOCH"},
		{UnsupportedCompressionType, 76, "UNSUPPORTED_COMPRESSION_TYPE"},
		{OffsetNotAvailable, 78, "OFFSET_NOT_AVAILABLE"},
		{MemberIDRequired, 79, "MEMBER_ID_REQUIRED"},
		{InvalidRecord, 87, "INVALID_RECORD"},
		{ProducerFenced, 90, "PRODUCER_FENCED"},
		{PositionOutOfRange, 99, "POSITION_OUT_OF_RANGE"},
		{UnknownTopicID, 100, "UNKNOWN_TOPIC_ID"},
		{InconsistentTopicID, 103, "INCONSISTENT_TOPIC_ID"},
		{FencedMemberEpoch, 110, "FENCED_MEMBER_EPOCH"},
		{TransactionAbortable, 120, "TRANSACTION_ABORTABLE"},
		{InvalidRegularExpression, 128, "INVALID_REGULAR_EXPRESSION"},
		{ShareSessionLimitReached, 133, "SHARE_SESSION_LIMIT_REACHED"},
	} {
		if int16(c.code) != c.num || c.code.String() != c.name {
			t.Errorf("got %d %s, want %d %s", int16(c.code), c.code, c.num, c.name)
		}
	}
}

func TestErrorCodeTableComplete(t *testing.T) {
	seen := map[string]ErrorCode{}
	for c := UnknownServerError; c <= lastKnownCode; c++ {
		name := c.String()
		if name == "" || strings.HasPrefix(name, "UNKNOWN_ERROR_CODE") || strings.ToUpper(name) != name {
			t.Fatalf("code %d has name %q", c, name)
		}
		if prev, dup := seen[name]; dup {
			t.Fatalf("codes %d and %d are both %s", prev, c, name)
		}
		seen[name] = c
	}
	for _, c := range []ErrorCode{-2, lastKnownCode + 1, 1000, -32768} {
		if got, want := c.String(), fmt.Sprintf("UNKNOWN_ERROR_CODE(%d)", c); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
		if c.Retriable() {
			t.Fatalf("unknown code %d reported retriable", c)
		}
	}
}

func TestErrorCodeRetriable(t *testing.T) {
	// Kafka's marking: the code's exception is a RetriableException.
	retriable := []ErrorCode{
		CorruptMessage, UnknownTopicOrPartition, LeaderNotAvailable, NotLeaderOrFollower,
		RequestTimedOut, ReplicaNotAvailable, NetworkException, CoordinatorLoadInProgress,
		CoordinatorNotAvailable, NotCoordinator, NotEnoughReplicas, NotEnoughReplicasAfterAppend,
		NotController, ConcurrentTransactions, KafkaStorageError, FetchSessionIDNotFound,
		InvalidFetchSessionEpoch, ListenerNotFound, FencedLeaderEpoch, UnknownLeaderEpoch,
		OffsetNotAvailable, PreferredLeaderNotAvailable, EligibleLeadersNotAvailable,
		ElectionNotNeeded, UnstableOffsetCommit, ThrottlingQuotaExceeded, UnknownTopicID,
		InconsistentTopicID, FetchSessionTopicIDError, ShareSessionNotFound,
		InvalidShareSessionEpoch, ShareSessionLimitReached,
	}
	want := map[ErrorCode]bool{}
	for _, c := range retriable {
		want[c] = true
	}
	for c := UnknownServerError; c <= lastKnownCode; c++ {
		if got := c.Retriable(); got != want[c] {
			t.Errorf("%s (%d): got retriable %v, want %v", c, c, got, want[c])
		}
	}
}

// buildBatch returns a valid uncompressed or compressed batch of n records.
func buildBatch(t *testing.T, codec record.Codec, n int, withKeys bool) record.Batch {
	t.Helper()
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{OffsetDelta: int32(i), TimestampDelta: int64(i), Value: make([]byte, 100)}
		if withKeys {
			recs[i].Key = []byte("k")
		}
	}
	b, err := record.Build(nil, record.BatchHeader{
		Codec: codec, BaseTimestamp: 1_700_000_000_000,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
	}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The record mapping, driven by real validation failures rather than bare
// sentinels.
func TestErrorCodeForRecordErrors(t *testing.T) {
	records := record.ValidateOptions{Records: true}
	for _, c := range []struct {
		name   string
		mangle func(record.Batch) record.Batch
		opts   record.ValidateOptions
		want   ErrorCode
	}{
		{"valid", nil, records, None},
		{"crc mismatch", func(b record.Batch) record.Batch {
			b[len(b)-1] ^= 1
			return b
		}, records, CorruptMessage},
		{"truncated", func(b record.Batch) record.Batch { return b[:len(b)-1] }, records, CorruptMessage},
		{"below header size", func(b record.Batch) record.Batch { return b[:record.HeaderSize-1] }, records, CorruptMessage},
		{"magic 1", func(b record.Batch) record.Batch {
			b[16] = 1
			return b
		}, records, InvalidRecord},
		{"unknown codec", func(b record.Batch) record.Batch {
			b[22] |= 7 // attributes low byte: codec 7
			b.UpdateCRC()
			return b
		}, records, UnsupportedCompressionType},
		{"missing key", nil, record.ValidateOptions{Records: true, RequireKeys: true}, InvalidRecord},
		{"timestamp out of range", nil, record.ValidateOptions{
			Records: true, RequireKeys: true, CheckTimestamps: true,
			Now: 1_800_000_000_000, TimestampBeforeMax: 1000, TimestampAfterMax: 1000,
		}, InvalidTimestamp},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := buildBatch(t, record.CodecNone, 3, false)
			if c.mangle != nil {
				b = c.mangle(b)
			}
			_, err := record.Validate(b, c.opts)
			if got := ErrorCodeFor(err); got != c.want {
				t.Fatalf("validation error %v: got %s, want %s", err, got, c.want)
			}
		})
	}

	t.Run("decompressed too large", func(t *testing.T) {
		b := buildBatch(t, record.CodecGzip, 100, true)
		_, err := record.Validate(b, record.ValidateOptions{Records: true, MaxDecompressed: 1000})
		if got := ErrorCodeFor(err); got != MessageTooLarge {
			t.Fatalf("validation error %v: got %s, want MESSAGE_TOO_LARGE", err, got)
		}
	})
}

type fencedError struct{}

func (fencedError) Error() string             { return "fenced" }
func (fencedError) KafkaErrorCode() ErrorCode { return FencedLeaderEpoch }

func TestErrorCodeFor(t *testing.T) {
	for _, c := range []struct {
		err  error
		want ErrorCode
	}{
		{nil, None},
		{errors.New("disk on fire"), UnknownServerError},
		{fmt.Errorf("append: %w", record.ErrCorrupt), CorruptMessage},
		{record.ErrTruncated, CorruptMessage},
		{record.ErrBatchTooSmall, CorruptMessage},
		{record.ErrMagic, InvalidRecord},
		{record.ErrUnknownCodec, UnsupportedCompressionType},
		{record.ErrInvalidRecord, InvalidRecord},
		{record.ErrInvalidTimestamp, InvalidTimestamp},
		{record.ErrTooLarge, MessageTooLarge},
		// A batch whose record errors include a bad timestamp fails as
		// INVALID_TIMESTAMP, whatever else is wrong with its records.
		{record.RecordErrors{
			{Index: 0, Err: record.ErrInvalidRecord},
			{Index: 2, Err: fmt.Errorf("%w: too old", record.ErrInvalidTimestamp)},
		}, InvalidTimestamp},
		{record.RecordErrors{{Index: 1, Err: record.ErrInvalidRecord}}, InvalidRecord},
		{fencedError{}, FencedLeaderEpoch},
		{fmt.Errorf("fetch: %w", fmt.Errorf("partition 3: %w", fencedError{})), FencedLeaderEpoch},
	} {
		if got := ErrorCodeFor(c.err); got != c.want {
			t.Errorf("ErrorCodeFor(%v): got %s, want %s", c.err, got, c.want)
		}
	}
}
