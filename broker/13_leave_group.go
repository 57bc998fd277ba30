package broker

// LeaveGroup (key 13), versions 0-5.
//
// Removes members, several at once from v3 (by member or instance id).
// The group logic is coordinator/group's state machine; the broker routes the
// request to the coordinator of the group's __consumer_offsets partition
// (NOT_COORDINATOR when that is not this broker) and answers once the records
// the request produced are durable.
//
// Authorization: READ on the group, else GROUP_AUTHORIZATION_FAILED (handleGroupRequest).

var leaveGroupAPI = handler{key: 13, min: 0, max: 5, handle: (*Broker).handleGroupRequest}
