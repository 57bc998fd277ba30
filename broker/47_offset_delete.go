package broker

// OffsetDelete (key 47), versions 0-0.
//
// Deletes a group's committed offsets for partitions it is not subscribed to (GROUP_SUBSCRIBED_TO_TOPIC otherwise).
// The group logic is coordinator/group's state machine; the broker routes the
// request to the coordinator of the group's __consumer_offsets partition
// (NOT_COORDINATOR when that is not this broker) and answers once the records
// the request produced are durable.
//
// Authorization, as Kafka's: DELETE on the group for the whole request
// (GROUP_AUTHORIZATION_FAILED), then READ on each topic: the partitions of
// a topic without it are TOPIC_AUTHORIZATION_FAILED and keep their
// offsets. The coordinator answers for the others, and for the group.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/protocol"
)

var offsetDeleteAPI = handler{key: 47, min: 0, max: 0, handle: (*Broker).handleOffsetDelete}

func (b *Broker) handleOffsetDelete(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.OffsetDeleteRequest)
	if !c.authorized(acl.OpDelete, acl.ResourceGroup, req.Group) {
		return groupDenial(r, protocol.GroupAuthorizationFailed), nil
	}
	readable := c.topicsAllowed(acl.OpRead)
	kept := make([]kmsg.OffsetDeleteRequestTopic, 0, len(req.Topics))
	var denied []kmsg.OffsetDeleteResponseTopic
	for _, t := range req.Topics {
		if readable(t.Topic) {
			kept = append(kept, t)
			continue
		}
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, int16(protocol.TopicAuthorizationFailed)
			rt.Partitions = append(rt.Partitions, rp)
		}
		denied = append(denied, rt)
	}
	if len(denied) == 0 {
		return b.askGroup(ctx, c, hdr, req.Group, r), nil
	}
	// The coordinator is asked even with no topic left, as Kafka's is: it
	// answers for the group. The refused topics come first.
	sub := *req
	sub.Topics = kept
	resp := b.askGroup(ctx, c, hdr, req.Group, &sub).(*kmsg.OffsetDeleteResponse)
	resp.Topics = append(denied, resp.Topics...)
	return resp, nil
}
