package broker

// OffsetFetch (key 9), versions 1-10.
//
// Committed offsets and their metadata; -1 with no error for unknown groups and partitions (librdkafka depends on it). v7+ require_stable: UNSTABLE_OFFSET_COMMIT for a partition with offsets of an open transaction (TxnOffsetCommit). v8+ may name several groups: each coordinator answers for its own (group_requests.go). v10 by topic id.
// The group logic is coordinator/group's state machine; the broker routes the
// request to the coordinator of the group's __consumer_offsets partition
// (NOT_COORDINATOR when that is not this broker) and answers once the records
// the request produced are durable.

var offsetFetchAPI = handler{key: 9, min: 1, max: 10, handle: (*Broker).handleGroupRequest}
