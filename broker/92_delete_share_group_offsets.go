package broker

// DeleteShareGroupOffsets (key 92), version 0.
//
// Deletes a share group's state on every partition of the named topics at
// their share coordinators; the group's next fetch of such a partition
// starts from share.auto.offset.reset again. Sent to the group's
// coordinator; the group must have no members (NON_EMPTY_GROUP).
//
// Authorization, as Kafka's: DELETE on the group for the whole request
// (GROUP_AUTHORIZATION_FAILED), then READ on each topic: a topic without it
// is TOPIC_AUTHORIZATION_FAILED and keeps its state. A group with members
// is NON_EMPTY_GROUP whatever the topics, as Kafka 4.4 answers
// (compat-tests/authz).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/share"
	"github.com/gregor-io/gregor/protocol"
)

var deleteShareGroupOffsetsAPI = handler{key: 92, min: 0, max: 0, handle: (*Broker).handleDeleteShareGroupOffsets}

func (b *Broker) handleDeleteShareGroupOffsets(ctx context.Context, c *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DeleteShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	if !c.authorized(acl.OpDelete, acl.ResourceGroup, req.GroupID) {
		resp.ErrorCode = int16(protocol.GroupAuthorizationFailed)
		return resp, nil
	}
	readable := c.topicsAllowed(acl.OpRead)
	refused := func(name string) kmsg.DeleteShareGroupOffsetsResponseTopic {
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic, rt.ErrorCode = name, int16(protocol.TopicAuthorizationFailed)
		rt.ErrorMessage = kmsg.StringPtr("Topic authorization failed.")
		return rt
	}
	c.releaseSlot()
	_, members, code := b.shareGroupInfo(ctx, req.GroupID)
	if code == protocol.None && members > 0 {
		code = protocol.NonEmptyGroup
	}
	if code != protocol.None {
		resp.ErrorCode = int16(code)
		return resp, nil
	}
	md := b.cluster.Snapshot()
	for _, t := range req.Topics {
		if !readable(t.Topic) {
			resp.Topics = append(resp.Topics, refused(t.Topic))
			continue
		}
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		mt := md.Topics[t.Topic]
		if mt == nil {
			rt.ErrorCode = int16(protocol.UnknownTopicOrPartition)
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		rt.TopicID = [16]byte(mt.ID)
		for p := range int32(len(mt.Partitions)) {
			key := share.Key{Group: req.GroupID, TopicID: rt.TopicID, Partition: p}
			if code := b.shares.state.remove(ctx, key); code != protocol.None && rt.ErrorCode == 0 {
				rt.ErrorCode = int16(code)
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
