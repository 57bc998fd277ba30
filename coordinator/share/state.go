package share

// Delivery states of records, with Kafka's numbers (RecordState). Only
// Available, Acknowledged and Archived are ever written to the durable
// State: an acquired record is written as Available with its delivery count.
const (
	Available    int8 = 0
	Acquired     int8 = 1
	Acknowledged int8 = 2
	Archived     int8 = 4
)

// Acknowledgement types of ShareFetch and ShareAcknowledge, with Kafka's
// numbers. Gap marks offsets that hold no record (compacted away, or a
// control record); Renew (ShareAcknowledge v2, KIP-1222) extends a lock.
const (
	AckGap     int8 = 0
	AckAccept  int8 = 1
	AckRelease int8 = 2
	AckReject  int8 = 3
	AckRenew   int8 = 4
)

// State is the durable state of one share partition, as the share
// coordinator keeps it (ShareSnapshotValue): the start offset, every
// in-flight batch at or after it, and the epochs that fence stale writers.
type State struct {
	// StateEpoch is bumped by each InitializeShareGroupState (a reset of
	// the group's offsets); writes of an older state epoch are fenced.
	StateEpoch int32
	// LeaderEpoch is the partition leader epoch of the last reader or
	// writer; writes of an older leader epoch are fenced.
	LeaderEpoch int32
	// StartOffset is the share-partition start offset (SPSO): every record
	// below it is done. -1 means not initialized yet.
	StartOffset int64
	// Batches are the in-flight records at or after StartOffset that are
	// not plainly Available with delivery count 0, in ascending offset
	// order, not overlapping. Offsets not covered are Available and never
	// delivered.
	Batches []StateBatch
}

// StateBatch is a run of consecutive offsets in one delivery state with one
// delivery count (Kafka's PersisterStateBatch).
type StateBatch struct {
	FirstOffset   int64
	LastOffset    int64
	DeliveryState int8 // Available, Acknowledged or Archived
	DeliveryCount int16
}

// Key names one share partition: a share group, a topic (by id) and a
// partition. Its String form is the share coordinator key Kafka hashes to
// find the __share_group_state partition (CoordinatorPartition).
type Key struct {
	Group     string
	TopicID   [16]byte
	Partition int32
}
