package broker

// JoinGroup (key 11), versions 0-9.
//
// The classic rebalance protocol: MEMBER_ID_REQUIRED for a new member (v4+, KIP-394), static members (group.instance.id, KIP-345), protocol selection, session and rebalance timeouts, group.initial.rebalance.delay.ms, group.max.size.
// The group logic is coordinator/group's state machine; the broker routes the
// request to the coordinator of the group's __consumer_offsets partition
// (NOT_COORDINATOR when that is not this broker) and answers once the records
// the request produced are durable.
//
// Authorization: READ on the group, else GROUP_AUTHORIZATION_FAILED (handleGroupRequest).

var joinGroupAPI = handler{key: 11, min: 0, max: 9, handle: (*Broker).handleGroupRequest}
