package txn

import (
	"fmt"
	"math"
	"time"
)

// Config holds the transaction coordinator settings. Fields that mean the
// same as a Kafka broker setting carry its name in their comment; durations
// replace Kafka's milliseconds. Build one with DefaultConfig and change what
// differs; New calls Validate.
type Config struct {
	// MaxTimeout bounds the transaction timeout an InitProducerId may ask
	// for (transaction.max.timeout.ms, 900000); above it, or at zero or
	// below, the request fails with INVALID_TRANSACTION_TIMEOUT.
	MaxTimeout time.Duration

	// TransactionalIDExpiration is how long a transactional id that is
	// Empty, CompleteCommit or CompleteAbort is kept after its last update
	// (transactional.id.expiration.ms, 604800000 = 7 days). It is then
	// removed with a tombstone.
	TransactionalIDExpiration time.Duration

	// AbortTimedOutInterval is how often transactions past their timeout
	// are looked for and aborted
	// (transaction.abort.timed.out.transaction.cleanup.interval.ms, 10000).
	AbortTimedOutInterval time.Duration

	// RemoveExpiredInterval is how often expired transactional ids are
	// looked for (transaction.remove.expired.transaction.cleanup.interval.ms,
	// 3600000).
	RemoveExpiredInterval time.Duration

	// OffsetsTopicPartitions is the partition count of __consumer_offsets
	// (offsets.topic.num.partitions, 50). AddOffsetsToTxn adds the group's
	// partition of that topic to the transaction, found with
	// group.PartitionFor.
	OffsetsTopicPartitions int32

	// ProducerIDs hands out producer ids. Required.
	ProducerIDs ProducerIDs

	// Topics says which partitions exist, for AddPartitionsToTxn (unknown
	// ones fail with UNKNOWN_TOPIC_OR_PARTITION, the others of the same
	// transaction with OPERATION_NOT_ATTEMPTED). Nil accepts every
	// partition.
	Topics Topics
}

// ProducerIDs is the coordinator's source of new producer ids: the broker
// implements it over the producer id blocks it takes from the cluster
// metadata. It is called from inside Step and MarkerWritten, so it must not
// block: when no id is at hand it returns ok false (the request then fails
// with COORDINATOR_LOAD_IN_PROGRESS, as Kafka answers while it waits for a
// block, and the client retries) and fetches the next block in the
// background.
type ProducerIDs interface {
	NextProducerID() (id int64, ok bool)
}

// ProducerIDFunc adapts a function to ProducerIDs.
type ProducerIDFunc func() (int64, bool)

// NextProducerID calls f.
func (f ProducerIDFunc) NextProducerID() (int64, bool) { return f() }

// Topics is what the coordinator needs to know about the cluster's topics.
// The broker implements it over its metadata cache; it is called from
// inside Step, so it must not block.
type Topics interface {
	// Partitions returns a topic's partition count; ok is false when no
	// such topic exists.
	Partitions(topic string) (n int32, ok bool)
}

// DefaultConfig returns Kafka 4.x's defaults. ProducerIDs is left nil: the
// broker must set it.
func DefaultConfig() Config {
	return Config{
		MaxTimeout:                15 * time.Minute,
		TransactionalIDExpiration: 7 * 24 * time.Hour,
		AbortTimedOutInterval:     10 * time.Second,
		RemoveExpiredInterval:     time.Hour,
		OffsetsTopicPartitions:    50,
	}
}

// Validate reports the first setting that is out of range, wrapped around
// ErrInvalidConfig.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch {
	case c.MaxTimeout < time.Millisecond || c.MaxTimeout > math.MaxInt32*time.Millisecond:
		return bad("transaction.max.timeout.ms must be 1 ms to MaxInt32 ms, is %v", c.MaxTimeout)
	case c.TransactionalIDExpiration < time.Millisecond:
		return bad("transactional.id.expiration.ms must be positive, is %v", c.TransactionalIDExpiration)
	case c.AbortTimedOutInterval < time.Millisecond:
		return bad("transaction.abort.timed.out.transaction.cleanup.interval.ms must be positive, is %v", c.AbortTimedOutInterval)
	case c.RemoveExpiredInterval < time.Millisecond:
		return bad("transaction.remove.expired.transaction.cleanup.interval.ms must be positive, is %v", c.RemoveExpiredInterval)
	case c.OffsetsTopicPartitions < 1:
		return bad("offsets.topic.num.partitions must be at least 1, is %d", c.OffsetsTopicPartitions)
	case c.ProducerIDs == nil:
		return bad("no producer id source")
	}
	return nil
}
