package broker

// DescribeShareGroupOffsets (key 90), versions 0-1.
//
// The start offset (SPSO) of each partition of a share group, read from the
// share coordinators, and from v1 the lag: records from the start offset to
// the high watermark not yet acknowledged or archived.
// Sent to the group's coordinator, which knows the topics the group
// consumed; with no topics named, all of them. A partition the group never
// fetched has start offset -1. Not the group's coordinator:
// NOT_COORDINATOR; no share group: GROUP_ID_NOT_FOUND.
//
// Authorization, as Kafka's (checked as OffsetFetch is): DESCRIBE on each
// group (GROUP_AUTHORIZATION_FAILED for that group) and on each topic. A
// named topic without it is not read: its partitions are
// TOPIC_AUTHORIZATION_FAILED (start offset -1, no topic id), listed after
// the others; with no topics named, such topics are left out without an
// error.

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/group"
	"github.com/gregor-io/gregor/coordinator/share"
	"github.com/gregor-io/gregor/protocol"
)

var describeShareGroupOffsetsAPI = handler{key: 90, min: 0, max: 1, handle: (*Broker).handleDescribeShareGroupOffsets}

func (b *Broker) handleDescribeShareGroupOffsets(ctx context.Context, c *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	c.releaseSlot() // share coordinators answer over the network
	describable := c.topicsAllowed(acl.OpDescribe)
	for _, g := range req.Groups {
		rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		rg.GroupID = g.GroupID
		if !c.authorized(acl.OpDescribe, acl.ResourceGroup, g.GroupID) {
			rg.ErrorCode = int16(protocol.GroupAuthorizationFailed)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		consumed, _, code := b.shareGroupInfo(ctx, g.GroupID)
		if code != protocol.None {
			rg.ErrorCode = int16(code)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		type want struct {
			name  string
			parts []int32
		}
		var wants []want
		var denied []kmsg.DescribeShareGroupOffsetsResponseGroupTopic
		if g.Topics == nil {
			for _, name := range slices.Sorted(maps.Keys(consumed)) {
				if describable(name) {
					wants = append(wants, want{name: name})
				}
			}
		} else {
			for _, t := range g.Topics {
				if describable(t.Topic) {
					wants = append(wants, want{name: t.Topic, parts: t.Partitions})
					continue
				}
				rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
					rp.Partition, rp.StartOffset = p, -1
					rp.ErrorCode = int16(protocol.TopicAuthorizationFailed)
					rp.ErrorMessage = kmsg.StringPtr("Topic authorization failed.")
					rt.Partitions = append(rt.Partitions, rp)
				}
				denied = append(denied, rt)
			}
		}
		md := b.cluster.Snapshot()
		for _, w := range wants {
			rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			rt.Topic = w.name
			t := md.Topics[w.name]
			parts := w.parts
			if t != nil {
				rt.TopicID = [16]byte(t.ID)
				if parts == nil {
					for p := range int32(len(t.Partitions)) {
						parts = append(parts, p)
					}
				}
			}
			for _, p := range parts {
				rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				rp.Partition, rp.StartOffset, rp.LeaderEpoch, rp.Lag = p, -1, -1, -1
				switch {
				case t == nil || p < 0 || int(p) >= len(t.Partitions):
					rp.ErrorCode = int16(protocol.UnknownTopicOrPartition)
				default:
					sum, code := b.shares.state.summary(ctx, share.Key{Group: g.GroupID, TopicID: rt.TopicID, Partition: p})
					if code != protocol.None && code != protocol.UnknownTopicOrPartition {
						rp.ErrorCode = int16(code)
						break
					}
					if code == protocol.None && sum.StartOffset >= 0 {
						rp.StartOffset, rp.LeaderEpoch = sum.StartOffset, sum.LeaderEpoch
						if hw, ok := b.highWatermark(ctx, w.name, p); ok {
							rp.Lag = max(hw-sum.StartOffset-int64(sum.DeliveryCompleteCount), 0)
						}
					}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		rg.Topics = append(rg.Topics, denied...)
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

// shareGroupInfo asks this broker's coordinator of a share group for the
// topics the group consumed and its member count: NOT_COORDINATOR when
// the group's coordinator is elsewhere, GROUP_ID_NOT_FOUND when it is no
// share group.
func (b *Broker) shareGroupInfo(ctx context.Context, groupID string) (map[string][16]byte, int, protocol.ErrorCode) {
	p := b.groupPartition(groupID)
	if p < 0 {
		return nil, 0, protocol.NotCoordinator
	}
	d := b.groups.driver(p)
	if d == nil {
		return nil, 0, b.groups.missingDriverCode(p)
	}
	type answer struct {
		topics  map[string][16]byte
		members int
		ok      bool
	}
	done := make(chan answer, 1)
	req := groupRequest{inspect: func(c *group.Coordinator) {
		topics, members, ok := c.ShareGroup(groupID)
		done <- answer{topics, members, ok}
	}}
	select {
	case d.reqs <- req:
	case <-d.done:
		return nil, 0, protocol.NotCoordinator
	case <-ctx.Done():
		return nil, 0, protocol.CoordinatorNotAvailable
	}
	select {
	case a := <-done:
		if !a.ok {
			return nil, 0, protocol.GroupIDNotFound
		}
		return a.topics, a.members, protocol.None
	case <-d.done:
		return nil, 0, protocol.NotCoordinator
	case <-ctx.Done():
		return nil, 0, protocol.CoordinatorNotAvailable
	}
}

// highWatermark is a partition's high watermark: this broker's when it
// leads the partition, else its leader's, asked with ListOffsets (latest).
func (b *Broker) highWatermark(ctx context.Context, topic string, partition int32) (int64, bool) {
	if p, code := b.lookupPartition(topic, [16]byte{}, false, partition); code == protocol.None {
		return p.log().HighWatermark(), true
	}
	t := b.cluster.Snapshot().Topics[topic]
	if t == nil || int(partition) >= len(t.Partitions) || t.Partitions[partition].Leader < 0 {
		return 0, false
	}
	c, err := b.shares.state.conn(t.Partitions[partition].Leader)
	if err != nil {
		return 0, false
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(4)
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := c.roundTrip(rctx, b, req)
	if err != nil {
		return 0, false
	}
	for _, t := range resp.(*kmsg.ListOffsetsResponse).Topics {
		for _, p := range t.Partitions {
			if p.Partition == partition && p.ErrorCode == 0 {
				return p.Offset, true
			}
		}
	}
	return 0, false
}
