package broker

// OffsetCommit (key 8), versions 2-10.
//
// Commits offsets for a group (v10 by topic id), with Kafka's member and generation checks; simple consumers commit with generation -1.
// The group logic is coordinator/group's state machine; the broker routes the
// request to the coordinator of the group's __consumer_offsets partition
// (NOT_COORDINATOR when that is not this broker) and answers once the records
// the request produced are durable.
//
// Authorization, as Kafka's: READ on the group for the whole request
// (GROUP_AUTHORIZATION_FAILED on every partition), then READ on each topic:
// the partitions of a topic without it are TOPIC_AUTHORIZATION_FAILED and
// are not committed, the others are. A v10 topic id that names no topic has
// no name to check and is left to the coordinator (UNKNOWN_TOPIC_ID).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/protocol"
)

var offsetCommitAPI = handler{key: 8, min: 2, max: 10, handle: (*Broker).handleOffsetCommit}

func (b *Broker) handleOffsetCommit(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.OffsetCommitRequest)
	if !c.authorized(acl.OpRead, acl.ResourceGroup, req.Group) {
		return groupDenial(r, protocol.GroupAuthorizationFailed), nil
	}
	md := b.cluster.Snapshot()
	readable := c.topicsAllowed(acl.OpRead)
	kept := make([]kmsg.OffsetCommitRequestTopic, 0, len(req.Topics))
	var denied []kmsg.OffsetCommitResponseTopic
	for _, t := range req.Topics {
		name, known := t.Topic, true
		if hdr.APIVersion >= 10 {
			name, known = groupTopicName(md, t.TopicID)
		}
		if !known || readable(name) {
			kept = append(kept, t)
			continue
		}
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, int16(protocol.TopicAuthorizationFailed)
			rt.Partitions = append(rt.Partitions, rp)
		}
		denied = append(denied, rt)
	}
	if len(denied) == 0 {
		return b.askGroup(ctx, c, hdr, req.Group, r), nil
	}
	// The refused topics come first, then the coordinator's answer for
	// the others; with none left the coordinator is not asked.
	out := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	out.Topics = denied
	if len(kept) == 0 {
		return out, nil
	}
	sub := *req
	sub.Topics = kept
	resp := b.askGroup(ctx, c, hdr, req.Group, &sub).(*kmsg.OffsetCommitResponse)
	out.ThrottleMillis = resp.ThrottleMillis
	out.Topics = append(out.Topics, resp.Topics...)
	return out, nil
}
