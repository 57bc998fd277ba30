package broker

// OffsetDelete (key 47), versions 0-0.
//
// Deletes a group's committed offsets for partitions it is not subscribed to (GROUP_SUBSCRIBED_TO_TOPIC otherwise).
// The group logic is coordinator/group's state machine; the broker routes the
// request to the coordinator of the group's __consumer_offsets partition
// (NOT_COORDINATOR when that is not this broker) and answers once the records
// the request produced are durable.

var offsetDeleteAPI = handler{key: 47, min: 0, max: 0, handle: (*Broker).handleGroupRequest}
