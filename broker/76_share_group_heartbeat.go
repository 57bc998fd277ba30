package broker

// ShareGroupHeartbeat (key 76), version 1.
//
// Share groups (KIP-932): a member joins (epoch 0, with the member id it
// made itself), heartbeats and leaves (-1) with this one request, and the
// group coordinator assigns it partitions it may share with other members
// (coordinator/group's share.go, "simple" assignor). Routed like every
// group request to the coordinator of the group's __consumer_offsets
// partition. Version 0 was Kafka 4.0's early access and is not served, as
// in Kafka 4.1 and later.
//
// Authorization, as Kafka's: READ on the group (GROUP_AUTHORIZATION_FAILED),
// then DESCRIBE on every subscribed topic (TOPIC_AUTHORIZATION_FAILED for
// the whole request if one is refused; handleGroupRequest).

var shareGroupHeartbeatAPI = handler{key: 76, min: 1, max: 1, handle: (*Broker).handleGroupRequest}
