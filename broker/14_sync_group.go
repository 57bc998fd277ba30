package broker

// SyncGroup (key 14), versions 0-5.
//
// The leader's assignment to every member; every member gets a well-formed assignment, empty when the leader gave it none.
// The group logic is coordinator/group's state machine; the broker routes the
// request to the coordinator of the group's __consumer_offsets partition
// (NOT_COORDINATOR when that is not this broker) and answers once the records
// the request produced are durable.
//
// Authorization: READ on the group, else GROUP_AUTHORIZATION_FAILED (handleGroupRequest).

var syncGroupAPI = handler{key: 14, min: 0, max: 5, handle: (*Broker).handleGroupRequest}
