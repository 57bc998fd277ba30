package group

import (
	"fmt"
	"io"
	"math"
	"time"
)

// Config holds the group coordinator settings. Fields that mean the same as a
// Kafka broker setting carry its name in their comment; durations replace
// Kafka's milliseconds and minutes. Build one with DefaultConfig and change
// what differs; New calls Validate.
type Config struct {
	// MinSessionTimeout and MaxSessionTimeout bound the session timeout a
	// JoinGroup may ask for (group.min.session.timeout.ms, 6000;
	// group.max.session.timeout.ms, 1800000). Outside them the join fails
	// with INVALID_SESSION_TIMEOUT.
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration

	// InitialRebalanceDelay is how long the first rebalance of an empty
	// group waits for more members (group.initial.rebalance.delay.ms, 3000).
	// Each member that joins meanwhile extends the wait by this much again,
	// up to the group's rebalance timeout in total.
	InitialRebalanceDelay time.Duration

	// MaxSize is the most members a group may have (group.max.size,
	// MaxInt32); more get GROUP_MAX_SIZE_REACHED.
	MaxSize int32

	// OffsetsRetention is how long committed offsets are kept once their
	// group is empty (offsets.retention.minutes, 10080 = 7 days). See
	// "Offset expiration" in the package documentation.
	OffsetsRetention time.Duration

	// OffsetsRetentionCheckInterval is how often expired offsets and dead
	// groups are looked for (offsets.retention.check.interval.ms, 600000).
	OffsetsRetentionCheckInterval time.Duration

	// OffsetMetadataMaxBytes limits the metadata string of a commit
	// (offset.metadata.max.bytes, 4096); a longer one fails that partition
	// with OFFSET_METADATA_TOO_LARGE. Like Kafka, the length is counted in
	// UTF-16 code units (Java's String.length), not in bytes.
	OffsetMetadataMaxBytes int

	// NewMemberJoinTimeout bounds how long a JoinGroup of a member that was
	// never part of a generation stays parked (Kafka's internal
	// group.classic.new.member.join.timeout.ms, 5 minutes): such a member
	// cannot heartbeat, and a client that gave up on its request would
	// otherwise hold the rebalance until its rebalance timeout.
	NewMemberJoinTimeout time.Duration

	// Topics resolves topic names and ids for OffsetCommit (unknown topics
	// and partitions fail with UNKNOWN_TOPIC_OR_PARTITION, unknown ids with
	// UNKNOWN_TOPIC_ID), OffsetFetch v10 and OffsetDelete. Nil accepts every
	// topic name and resolves no topic id, so OffsetCommit and OffsetFetch
	// v10 then fail every topic with UNKNOWN_TOPIC_ID.
	Topics Topics

	// ConsumerSessionTimeout is how long a consumer group member (KIP-848)
	// stays without a heartbeat before it is fenced
	// (group.consumer.session.timeout.ms, 45000).
	ConsumerSessionTimeout time.Duration
	// ConsumerHeartbeatInterval is the heartbeat interval consumer group
	// members are told to keep (group.consumer.heartbeat.interval.ms,
	// 5000).
	ConsumerHeartbeatInterval time.Duration
	// ConsumerMinSessionTimeout .. ConsumerMaxHeartbeatInterval bound the
	// consumer.session.timeout.ms and consumer.heartbeat.interval.ms a
	// group's configs may set (group.consumer.min.session.timeout.ms,
	// 45000; group.consumer.max.session.timeout.ms, 60000;
	// group.consumer.min.heartbeat.interval.ms, 5000;
	// group.consumer.max.heartbeat.interval.ms, 15000). The defaults above
	// must lie within them. The coordinator does not read them: the broker
	// checks group configs against them when they are written.
	ConsumerMinSessionTimeout    time.Duration
	ConsumerMaxSessionTimeout    time.Duration
	ConsumerMinHeartbeatInterval time.Duration
	ConsumerMaxHeartbeatInterval time.Duration
	// ConsumerAssignors are the server-side assignors consumer groups may
	// ask for, the first the default (group.consumer.assignors, "uniform,
	// range").
	ConsumerAssignors []string
	// MigrationPolicy says which online migrations between the classic
	// and the consumer protocol a group with members may make
	// (group.consumer.migration.policy: bidirectional, the default;
	// upgrade; downgrade; disabled). See migration.go.
	MigrationPolicy string

	// ShareSessionTimeout is how long a share group member stays without
	// a heartbeat before it is removed (group.share.session.timeout.ms,
	// 45000); ShareHeartbeatInterval the interval members are told to
	// keep (group.share.heartbeat.interval.ms, 5000); ShareMaxSize the
	// most members a share group may have (group.share.max.size, 200).
	ShareSessionTimeout    time.Duration
	ShareHeartbeatInterval time.Duration
	ShareMaxSize           int32
	// ShareMinSessionTimeout .. ShareMaxHeartbeatInterval bound a group's
	// share.session.timeout.ms and share.heartbeat.interval.ms as the
	// Consumer ones above do (group.share.min.session.timeout.ms, 45000;
	// group.share.max.session.timeout.ms, 60000;
	// group.share.min.heartbeat.interval.ms, 5000;
	// group.share.max.heartbeat.interval.ms, 15000).
	ShareMinSessionTimeout    time.Duration
	ShareMaxSessionTimeout    time.Duration
	ShareMinHeartbeatInterval time.Duration
	ShareMaxHeartbeatInterval time.Duration

	// Overrides returns a group's own settings (its GROUP configs), over
	// the ones above; zero fields keep those. Nil means none. Called from
	// inside Step and Tick, so it must not block.
	Overrides func(groupID string) Overrides

	// Rand is where new member ids get their randomness. Nil means
	// crypto/rand. Tests set it to make member ids reproducible.
	Rand io.Reader
}

// Topics is what the coordinator needs to know about the cluster's topics.
// The broker implements it over its metadata cache. Both methods are called
// from inside Step, so they must not block.
type Topics interface {
	// TopicByName returns the id and partition count of a topic; ok is
	// false when no such topic exists.
	TopicByName(name string) (id [16]byte, partitions int32, ok bool)
	// TopicByID returns the name and partition count of a topic id; ok is
	// false when no topic has that id.
	TopicByID(id [16]byte) (name string, partitions int32, ok bool)
}

// TopicLister is an optional part of Topics: the names of the topics a
// consumer group's regular expression may match (internal topics left
// out). Without it a regular expression matches nothing.
type TopicLister interface {
	TopicNames() []string
}

// Overrides are the settings a group may set for itself (Kafka's group
// configs consumer.session.timeout.ms, consumer.heartbeat.interval.ms,
// share.session.timeout.ms and share.heartbeat.interval.ms).
type Overrides struct {
	ConsumerSessionTimeout    time.Duration
	ConsumerHeartbeatInterval time.Duration
	ShareSessionTimeout       time.Duration
	ShareHeartbeatInterval    time.Duration
}

// overrides returns a group's settings, the defaults filled in.
func (c *Config) overrides(groupID string) Overrides {
	o := Overrides{}
	if c.Overrides != nil {
		o = c.Overrides(groupID)
	}
	pick := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	pick(&o.ConsumerSessionTimeout, c.ConsumerSessionTimeout)
	pick(&o.ConsumerHeartbeatInterval, c.ConsumerHeartbeatInterval)
	pick(&o.ShareSessionTimeout, c.ShareSessionTimeout)
	pick(&o.ShareHeartbeatInterval, c.ShareHeartbeatInterval)
	return o
}

// DefaultConfig returns Kafka 4.x's defaults.
func DefaultConfig() Config {
	return Config{
		MinSessionTimeout:             6 * time.Second,
		MaxSessionTimeout:             30 * time.Minute,
		InitialRebalanceDelay:         3 * time.Second,
		MaxSize:                       math.MaxInt32,
		OffsetsRetention:              7 * 24 * time.Hour,
		OffsetsRetentionCheckInterval: 10 * time.Minute,
		OffsetMetadataMaxBytes:        4096,
		NewMemberJoinTimeout:          5 * time.Minute,
		ConsumerSessionTimeout:        45 * time.Second,
		ConsumerHeartbeatInterval:     5 * time.Second,
		ConsumerMinSessionTimeout:     45 * time.Second,
		ConsumerMaxSessionTimeout:     60 * time.Second,
		ConsumerMinHeartbeatInterval:  5 * time.Second,
		ConsumerMaxHeartbeatInterval:  15 * time.Second,
		ConsumerAssignors:             []string{"uniform", "range"},
		MigrationPolicy:               MigrationBidirectional,
		ShareSessionTimeout:           45 * time.Second,
		ShareHeartbeatInterval:        5 * time.Second,
		ShareMaxSize:                  200,
		ShareMinSessionTimeout:        45 * time.Second,
		ShareMaxSessionTimeout:        60 * time.Second,
		ShareMinHeartbeatInterval:     5 * time.Second,
		ShareMaxHeartbeatInterval:     15 * time.Second,
	}
}

// Validate reports the first setting that is out of range, wrapped around
// ErrInvalidConfig.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch {
	case c.MinSessionTimeout <= 0:
		return bad("group.min.session.timeout.ms must be positive, is %v", c.MinSessionTimeout)
	case c.MaxSessionTimeout < c.MinSessionTimeout:
		return bad("group.max.session.timeout.ms (%v) is below group.min.session.timeout.ms (%v)",
			c.MaxSessionTimeout, c.MinSessionTimeout)
	case c.MaxSessionTimeout > math.MaxInt32*time.Millisecond:
		return bad("group.max.session.timeout.ms must fit an int32 of milliseconds, is %v", c.MaxSessionTimeout)
	case c.InitialRebalanceDelay < 0:
		return bad("group.initial.rebalance.delay.ms must not be negative, is %v", c.InitialRebalanceDelay)
	case c.MaxSize < 1:
		return bad("group.max.size must be at least 1, is %d", c.MaxSize)
	case c.OffsetsRetention < time.Minute:
		return bad("offsets.retention.minutes must be at least 1 minute, is %v", c.OffsetsRetention)
	case c.OffsetsRetentionCheckInterval <= 0:
		return bad("offsets.retention.check.interval.ms must be positive, is %v", c.OffsetsRetentionCheckInterval)
	case c.OffsetMetadataMaxBytes < 0:
		return bad("offset.metadata.max.bytes must not be negative, is %d", c.OffsetMetadataMaxBytes)
	case c.NewMemberJoinTimeout <= 0:
		return bad("new member join timeout must be positive, is %v", c.NewMemberJoinTimeout)
	case c.ConsumerSessionTimeout <= 0:
		return bad("group.consumer.session.timeout.ms must be positive, is %v", c.ConsumerSessionTimeout)
	case c.ConsumerHeartbeatInterval <= 0 || c.ConsumerHeartbeatInterval >= c.ConsumerSessionTimeout:
		return bad("group.consumer.heartbeat.interval.ms (%v) must be positive and below group.consumer.session.timeout.ms (%v)",
			c.ConsumerHeartbeatInterval, c.ConsumerSessionTimeout)
	case c.MigrationPolicy != MigrationBidirectional && c.MigrationPolicy != MigrationUpgrade &&
		c.MigrationPolicy != MigrationDowngrade && c.MigrationPolicy != MigrationDisabled:
		return bad("group.consumer.migration.policy must be one of bidirectional, upgrade, downgrade, disabled; is %q", c.MigrationPolicy)
	case len(c.ConsumerAssignors) == 0:
		return bad("group.consumer.assignors must name at least one assignor")
	case c.ShareSessionTimeout <= 0:
		return bad("group.share.session.timeout.ms must be positive, is %v", c.ShareSessionTimeout)
	case c.ShareHeartbeatInterval <= 0 || c.ShareHeartbeatInterval >= c.ShareSessionTimeout:
		return bad("group.share.heartbeat.interval.ms (%v) must be positive and below group.share.session.timeout.ms (%v)",
			c.ShareHeartbeatInterval, c.ShareSessionTimeout)
	case c.ShareMaxSize < 1:
		return bad("group.share.max.size must be at least 1, is %d", c.ShareMaxSize)
	}
	for _, r := range []struct {
		name, min, max string
		v, lo, hi      time.Duration
	}{
		{"group.consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms",
			c.ConsumerSessionTimeout, c.ConsumerMinSessionTimeout, c.ConsumerMaxSessionTimeout},
		{"group.consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms",
			c.ConsumerHeartbeatInterval, c.ConsumerMinHeartbeatInterval, c.ConsumerMaxHeartbeatInterval},
		{"group.share.session.timeout.ms", "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms",
			c.ShareSessionTimeout, c.ShareMinSessionTimeout, c.ShareMaxSessionTimeout},
		{"group.share.heartbeat.interval.ms", "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms",
			c.ShareHeartbeatInterval, c.ShareMinHeartbeatInterval, c.ShareMaxHeartbeatInterval},
	} {
		switch {
		case r.lo < time.Millisecond:
			return bad("%s must be at least 1 ms, is %v", r.min, r.lo)
		case r.hi > math.MaxInt32*time.Millisecond:
			return bad("%s must fit an int32 of milliseconds, is %v", r.max, r.hi)
		case r.v < r.lo || r.v > r.hi:
			return bad("%s (%v) must lie within %s (%v) and %s (%v)", r.name, r.v, r.min, r.lo, r.max, r.hi)
		}
	}
	for _, name := range c.ConsumerAssignors {
		if _, ok := assignors[name]; !ok {
			return bad("group.consumer.assignors: unknown assignor %q (known: uniform, range)", name)
		}
	}
	return nil
}
