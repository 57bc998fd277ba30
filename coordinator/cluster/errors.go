package cluster

import "errors"

// Sentinel errors. Callers compare with errors.Is; the broker maps them to
// Kafka error codes in one place.
var (
	// ErrClosed is returned by every call made after Close.
	ErrClosed = errors.New("cluster: closed")

	// ErrTopicExists: a topic of that name exists (TOPIC_ALREADY_EXISTS).
	ErrTopicExists = errors.New("cluster: topic already exists")

	// ErrTopicIDExists: the caller asked for a topic id another topic has.
	ErrTopicIDExists = errors.New("cluster: topic id already in use")

	// ErrUnknownTopic: no topic of that name or id (UNKNOWN_TOPIC_OR_PARTITION
	// or UNKNOWN_TOPIC_ID).
	ErrUnknownTopic = errors.New("cluster: unknown topic")

	// ErrInvalidTopic: the name is not a legal Kafka topic name
	// (INVALID_TOPIC_EXCEPTION), or the topic id is reserved.
	ErrInvalidTopic = errors.New("cluster: invalid topic")

	// ErrInvalidAssignment: a replica assignment is empty, repeats a broker or
	// names a negative broker id (INVALID_REPLICA_ASSIGNMENT).
	ErrInvalidAssignment = errors.New("cluster: invalid replica assignment")

	// ErrInvalidPartitions: CreatePartitions does not start from the
	// topic's current partition count (INVALID_PARTITIONS).
	ErrInvalidPartitions = errors.New("cluster: invalid partition count")

	// ErrNodeIDInUse: another live process holds the registration of this
	// node id (its lease has not expired).
	ErrNodeIDInUse = errors.New("cluster: node id registered by another live broker")

	// ErrRegistryLost is a registry with no cluster id found by a node
	// whose log dirs belong to a cluster: the registry was lost or
	// replaced, and a new cluster must not be started over the logs.
	ErrRegistryLost = errors.New("cluster: the registry holds no cluster, but the log dirs belong to one")

	// ErrMemberNoSpace: the embedded etcd member's dir has too little
	// free space to start it.
	ErrMemberNoSpace = errors.New("cluster: no room for the embedded etcd")

	// ErrMemberDamaged: the embedded etcd member's database file is
	// damaged.
	ErrMemberDamaged = errors.New("cluster: the embedded etcd's database is damaged")

	// ErrNotRegistered: the call needs this broker's live registration,
	// and it has none (Register not called, or the session is being
	// renewed).
	ErrNotRegistered = errors.New("cluster: broker not registered")

	// ErrBrokerNotRegistered: UnregisterBroker names a node id the
	// registry does not hold (BROKER_ID_NOT_REGISTERED).
	ErrBrokerNotRegistered = errors.New("cluster: broker id not registered")

	// ErrAlreadyRegistered: Register was called twice on one Cluster.
	ErrAlreadyRegistered = errors.New("cluster: broker already registered")

	// ErrProducerIDsExhausted: the next producer id block would pass MaxInt64.
	ErrProducerIDsExhausted = errors.New("cluster: producer ids exhausted")

	// ErrConflict: a compare-and-swap lost to concurrent writers too many
	// times in a row. Nothing was written; the call may be retried.
	ErrConflict = errors.New("cluster: too many conflicting concurrent updates")

	// ErrNotVisible: the write was committed in etcd, but the metadata cache
	// did not reach its revision before the deadline (REQUEST_TIMED_OUT, as
	// Kafka answers when a change outlives the request's timeout).
	ErrNotVisible = errors.New("cluster: write committed but not yet visible in the metadata cache")

	// ErrNoReassignment is a cancellation of a partition with no
	// reassignment in flight (NO_REASSIGNMENT_IN_PROGRESS).
	ErrNoReassignment = errors.New("cluster: no partition reassignment is in progress")

	// ErrInvalidReplicationFactor is a reassignment that would change the
	// replication factor, asked not to (KIP-860; INVALID_REPLICATION_FACTOR).
	ErrInvalidReplicationFactor = errors.New("cluster: invalid replication factor")
)

// Elections (ElectLeaders).
var (
	// ErrElectionNotNeeded: the preferred replica already leads (a
	// preferred election), or the partition has a live leader (unclean).
	ErrElectionNotNeeded = errors.New("cluster: leader election not needed")
	// ErrPreferredNotAvailable: the preferred replica is not live or not
	// in the ISR.
	ErrPreferredNotAvailable = errors.New("cluster: preferred leader not available")
	// ErrEligibleNotAvailable: no live replica may lead.
	ErrEligibleNotAvailable = errors.New("cluster: eligible leaders not available")
)
