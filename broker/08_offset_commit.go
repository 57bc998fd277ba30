package broker

// OffsetCommit (key 8), versions 2-10.
//
// Commits offsets for a group (v10 by topic id), with Kafka's member and generation checks; simple consumers commit with generation -1.
// The group logic is coordinator/group's state machine; the broker routes the
// request to the coordinator of the group's __consumer_offsets partition
// (NOT_COORDINATOR when that is not this broker) and answers once the records
// the request produced are durable.

var offsetCommitAPI = handler{key: 8, min: 2, max: 10, handle: (*Broker).handleGroupRequest}
