package broker

// ListGroups (key 16), versions 0-5.
//
// Every group of every local coordinator, filtered by state (v4+) and type (v5+).
// The group logic is coordinator/group's state machine; the broker routes the
// request to the coordinator of the group's __consumer_offsets partition
// (NOT_COORDINATOR when that is not this broker) and answers once the records
// the request produced are durable.
//
// Authorization, as Kafka's: DESCRIBE on the cluster lists every group;
// without it, only the groups with DESCRIBE on them are listed.

var listGroupsAPI = handler{key: 16, min: 0, max: 5, handle: (*Broker).handleListGroups}
