package broker

// Heartbeat (key 12), versions 0-4.
//
// Keeps a member alive; REBALANCE_IN_PROGRESS tells it to rejoin.
// The group logic is coordinator/group's state machine; the broker routes the
// request to the coordinator of the group's __consumer_offsets partition
// (NOT_COORDINATOR when that is not this broker) and answers once the records
// the request produced are durable.
//
// Authorization: READ on the group, else GROUP_AUTHORIZATION_FAILED (handleGroupRequest).

var heartbeatAPI = handler{key: 12, min: 0, max: 4, handle: (*Broker).handleGroupRequest}
