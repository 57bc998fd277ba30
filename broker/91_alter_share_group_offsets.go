package broker

// AlterShareGroupOffsets (key 91), version 0.
//
// Moves a share group's start offset on partitions: the share coordinator
// initializes each partition's state anew at the next state epoch, with no
// records in flight, which fences the writes of the state the partition's
// leader still holds; the leader then loads the new state. Sent to the
// group's coordinator; the group must have no members (NON_EMPTY_GROUP).
//
// Authorization, as Kafka's: READ on the group for the whole request
// (GROUP_AUTHORIZATION_FAILED), then READ on each topic: the partitions of
// a topic without it are TOPIC_AUTHORIZATION_FAILED and keep their start
// offset. A group with members is NON_EMPTY_GROUP whatever the topics, as
// Kafka 4.4 answers (compat-tests/authz).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/share"
	"github.com/gregor-io/gregor/protocol"
)

var alterShareGroupOffsetsAPI = handler{key: 91, min: 0, max: 0, handle: (*Broker).handleAlterShareGroupOffsets}

func (b *Broker) handleAlterShareGroupOffsets(ctx context.Context, c *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.AlterShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	if !c.authorized(acl.OpRead, acl.ResourceGroup, req.GroupID) {
		resp.ErrorCode = int16(protocol.GroupAuthorizationFailed)
		return resp, nil
	}
	readable := c.topicsAllowed(acl.OpRead)
	md := b.cluster.Snapshot()
	refused := func(t kmsg.AlterShareGroupOffsetsRequestTopic) kmsg.AlterShareGroupOffsetsResponseTopic {
		rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		if mt := md.Topics[t.Topic]; mt != nil {
			rt.TopicID = [16]byte(mt.ID)
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, int16(protocol.TopicAuthorizationFailed)
			rp.ErrorMessage = kmsg.StringPtr("Topic authorization failed.")
			rt.Partitions = append(rt.Partitions, rp)
		}
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
	for _, t := range req.Topics {
		if !readable(t.Topic) {
			resp.Topics = append(resp.Topics, refused(t))
			continue
		}
		rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		mt := md.Topics[t.Topic]
		if mt != nil {
			rt.TopicID = [16]byte(mt.ID)
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case mt == nil || p.Partition < 0 || int(p.Partition) >= len(mt.Partitions):
				rp.ErrorCode = int16(protocol.UnknownTopicOrPartition)
			case p.StartOffset < 0:
				rp.ErrorCode = int16(protocol.InvalidRequest)
			default:
				key := share.Key{Group: req.GroupID, TopicID: rt.TopicID, Partition: p.Partition}
				sum, code := b.shares.state.summary(ctx, key)
				epoch := int32(0)
				if code == protocol.None {
					epoch = sum.StateEpoch + 1
				}
				rp.ErrorCode = int16(b.shares.state.initialize(ctx, key, epoch, p.StartOffset))
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
