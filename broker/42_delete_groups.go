package broker

// DeleteGroups (key 42), versions 0-2.
//
// Deletes empty groups and their offsets (NON_EMPTY_GROUP otherwise).
// The group logic is coordinator/group's state machine; the broker routes the
// request to the coordinator of the group's __consumer_offsets partition
// (NOT_COORDINATOR when that is not this broker) and answers once the records
// the request produced are durable. An empty share group's state is
// deleted at its share coordinators first (DeleteShareGroupState), as Kafka
// does, so that a group made again under its id starts afresh.
//
// Authorization, as Kafka's: DELETE on each group, else
// GROUP_AUTHORIZATION_FAILED for it and nothing of it is deleted.

var deleteGroupsAPI = handler{key: 42, min: 0, max: 2, handle: (*Broker).handleDeleteGroups}
