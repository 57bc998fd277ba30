package storage

import (
	"fmt"
	"math"
	"time"
)

// Config holds the settings of one partition log. The names in the comments
// are Kafka's topic configs of the same meaning.
type Config struct {
	// SegmentBytes rolls the active segment once it would grow past this size
	// (segment.bytes).
	SegmentBytes int64
	// SegmentMs rolls the active segment once its first batch is older than
	// this (segment.ms), measured on record timestamps like Kafka.
	SegmentMs int64
	// SegmentIndexBytes bounds a segment's offset index (segment.index.bytes);
	// a full index rolls the segment.
	SegmentIndexBytes int64
	// IndexIntervalBytes is the number of log bytes between index entries
	// (index.interval.bytes).
	IndexIntervalBytes int64
	// FlushMessages is the number of appended records after which the log is
	// fsynced before the append is acknowledged (flush.messages). The default,
	// 1, makes every acknowledged append durable; concurrent appends share
	// fsyncs (group commit). Kafka's own default, math.MaxInt64, leaves
	// durability to the page cache and to replication.
	FlushMessages int64
	// FlushMs fsyncs the log in the background once its oldest unflushed
	// append is this old (flush.ms). math.MaxInt64 disables it.
	FlushMs int64
	// CleanupDelete is set when cleanup.policy contains "delete": only then
	// do RetentionMs and RetentionBytes delete segments. Segments wholly
	// below the log start offset are deleted either way.
	CleanupDelete bool
	// RetentionMs deletes a segment once its newest record is older than
	// this (retention.ms); -1 keeps segments however old they are.
	RetentionMs int64
	// RetentionBytes deletes the oldest segments while the log without them
	// would still hold at least this many bytes (retention.bytes); a
	// negative value sets no limit.
	RetentionBytes int64
	// FileDeleteDelayMs is how long a deleted segment's files stay on disk,
	// renamed with the .deleted suffix, before they are removed
	// (file.delete.delay.ms).
	FileDeleteDelayMs int64
	// Compact is set when cleanup.policy contains "compact": the cleaner
	// then keeps only the latest record of each key (see cleaner.go).
	Compact bool
	// MinCleanableDirtyRatio is the share of the cleanable log that must be
	// dirty (not yet cleaned) before the cleaner cleans it
	// (min.cleanable.dirty.ratio).
	MinCleanableDirtyRatio float64
	// MinCompactionLagMs keeps a segment out of cleaning until its newest
	// record is this old (min.compaction.lag.ms).
	MinCompactionLagMs int64
	// MaxCompactionLagMs makes a log cleanable, whatever its dirty ratio,
	// once its oldest dirty batch is this old; it also bounds segment.ms
	// of a compacted log, so the active segment rolls and becomes
	// cleanable in time (max.compaction.lag.ms).
	MaxCompactionLagMs int64
	// DeleteRetentionMs is how long a tombstone stays after the cleaning
	// that first kept it (delete.retention.ms).
	DeleteRetentionMs int64
}

// DefaultConfig returns Kafka's topic defaults (cleanup.policy "delete",
// seven days' retention, no size limit), except FlushMessages, whose
// default of 1 makes appends durable before they are acknowledged.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:       1 << 30,
		SegmentMs:          7 * 24 * int64(time.Hour/time.Millisecond),
		SegmentIndexBytes:  10 << 20,
		IndexIntervalBytes: 4096,
		FlushMessages:      1,
		FlushMs:            math.MaxInt64,
		CleanupDelete:      true,
		RetentionMs:        7 * 24 * int64(time.Hour/time.Millisecond),
		RetentionBytes:     -1,
		FileDeleteDelayMs:  60_000,

		MinCleanableDirtyRatio: 0.5,
		MinCompactionLagMs:     0,
		MaxCompactionLagMs:     math.MaxInt64,
		DeleteRetentionMs:      24 * int64(time.Hour/time.Millisecond),
	}
}

// Validate checks the ranges Kafka enforces for these configs. Like Kafka,
// it takes any retention.bytes: every negative value means no limit.
func (c Config) Validate() error {
	switch {
	case c.SegmentBytes < 14:
		return fmt.Errorf("%w: segment.bytes %d below 14", ErrInvalidConfig, c.SegmentBytes)
	case c.SegmentBytes > math.MaxInt32:
		return fmt.Errorf("%w: segment.bytes %d above 2^31-1", ErrInvalidConfig, c.SegmentBytes)
	case c.SegmentMs < 1:
		return fmt.Errorf("%w: segment.ms %d below 1", ErrInvalidConfig, c.SegmentMs)
	case c.SegmentIndexBytes < 4:
		return fmt.Errorf("%w: segment.index.bytes %d below 4", ErrInvalidConfig, c.SegmentIndexBytes)
	case c.IndexIntervalBytes < 0:
		return fmt.Errorf("%w: index.interval.bytes %d below 0", ErrInvalidConfig, c.IndexIntervalBytes)
	case c.FlushMessages < 1:
		return fmt.Errorf("%w: flush.messages %d below 1", ErrInvalidConfig, c.FlushMessages)
	case c.FlushMs < 0:
		return fmt.Errorf("%w: flush.ms %d below 0", ErrInvalidConfig, c.FlushMs)
	case c.RetentionMs < -1:
		return fmt.Errorf("%w: retention.ms %d below -1", ErrInvalidConfig, c.RetentionMs)
	case c.FileDeleteDelayMs < 0:
		return fmt.Errorf("%w: file.delete.delay.ms %d below 0", ErrInvalidConfig, c.FileDeleteDelayMs)
	case !(c.MinCleanableDirtyRatio >= 0 && c.MinCleanableDirtyRatio <= 1):
		return fmt.Errorf("%w: min.cleanable.dirty.ratio %v not in [0, 1]", ErrInvalidConfig, c.MinCleanableDirtyRatio)
	case c.MinCompactionLagMs < 0:
		return fmt.Errorf("%w: min.compaction.lag.ms %d below 0", ErrInvalidConfig, c.MinCompactionLagMs)
	case c.MaxCompactionLagMs < 1:
		return fmt.Errorf("%w: max.compaction.lag.ms %d below 1", ErrInvalidConfig, c.MaxCompactionLagMs)
	case c.MinCompactionLagMs > c.MaxCompactionLagMs:
		return fmt.Errorf("%w: min.compaction.lag.ms %d above max.compaction.lag.ms %d",
			ErrInvalidConfig, c.MinCompactionLagMs, c.MaxCompactionLagMs)
	case c.DeleteRetentionMs < 0:
		return fmt.Errorf("%w: delete.retention.ms %d below 0", ErrInvalidConfig, c.DeleteRetentionMs)
	}
	return nil
}

// rollMs is the segment age that rolls the active segment: segment.ms,
// or max.compaction.lag.ms when that is lower on a compacted log, as Kafka
// does, so no record waits in the active segment past its lag.
func (c *Config) rollMs() int64 {
	if c.Compact && c.MaxCompactionLagMs < c.SegmentMs {
		return c.MaxCompactionLagMs
	}
	return c.SegmentMs
}

// syncBeforeAck reports whether every append waits for an fsync.
func (c Config) syncBeforeAck() bool { return c.FlushMessages <= 1 }
