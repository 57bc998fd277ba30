package broker

// ConsumerGroupHeartbeat (key 68), versions 0-1.
//
// The next-generation consumer group protocol (KIP-848): a member joins,
// heartbeats and leaves with this one request, and the coordinator assigns
// the partitions (server-side assignors). The group logic is
// coordinator/group's state machine (consumer.go); the broker routes the
// request to the coordinator of the group's __consumer_offsets partition
// (NOT_COORDINATOR when that is not this broker), as for the classic group
// APIs. v1 (Kafka 4.0) has the client make its member id and adds regular
// expression subscriptions.
//
// Authorization, as Kafka's: READ on the group (GROUP_AUTHORIZATION_FAILED),
// then DESCRIBE on every topic named in SubscribedTopicNames
// (TOPIC_AUTHORIZATION_FAILED for the whole request if one is refused;
// handleGroupRequest). The topics a regular expression matches are
// filtered by the member's DESCRIBE ACLs in the coordinator, as Kafka's
// are (group.Input.TopicDescribable).

var consumerGroupHeartbeatAPI = handler{key: 68, min: 0, max: 1, handle: (*Broker).handleGroupRequest}
