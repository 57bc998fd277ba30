package broker

// DescribeGroups (key 15), versions 0-6.
//
// Group state, protocol and members with their metadata and assignments. Several groups: each coordinator answers for its own (group_requests.go).
// The group logic is coordinator/group's state machine; the broker routes the
// request to the coordinator of the group's __consumer_offsets partition
// (NOT_COORDINATOR when that is not this broker) and answers once the records
// the request produced are durable.
//
// Authorization, as Kafka's: DESCRIBE on each group, else
// GROUP_AUTHORIZATION_FAILED for it; v3+ reports the principal's
// operations on a described group when asked.

var describeGroupsAPI = handler{key: 15, min: 0, max: 6, handle: (*Broker).handleDescribeGroups}
