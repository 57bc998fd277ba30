package broker

// OffsetFetch (key 9), versions 1-10.
//
// Committed offsets and their metadata; -1 with no error for unknown groups and partitions (librdkafka depends on it). v7+ require_stable: UNSTABLE_OFFSET_COMMIT for a partition with offsets of an open transaction (TxnOffsetCommit). v8+ may name several groups: each coordinator answers for its own. v10 by topic id.
// The group logic is coordinator/group's state machine; the broker routes the
// request to the coordinator of the group's __consumer_offsets partition
// (NOT_COORDINATOR when that is not this broker) and answers once the records
// the request produced are durable.
//
// Authorization, as Kafka's: DESCRIBE on each group (a group without it is
// GROUP_AUTHORIZATION_FAILED: the group error from v2, on every requested
// partition before) and DESCRIBE on each topic. Named topics without it
// are not asked for: their partitions are TOPIC_AUTHORIZATION_FAILED
// (offset -1), listed after the coordinator's answer. A fetch of all
// topics (null topics, v2+) leaves such topics out without an error. A
// group the coordinator answers with an error gets that error alone. A v10
// topic id that names no topic has no name to check and is left to the
// coordinator (UNKNOWN_TOPIC_ID).

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/protocol"
)

var offsetFetchAPI = handler{key: 9, min: 1, max: 10, handle: (*Broker).handleOffsetFetch}

func (b *Broker) handleOffsetFetch(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.OffsetFetchRequest)
	if hdr.APIVersion >= 8 {
		return b.handleOffsetFetchGroups(ctx, c, hdr, req), nil
	}
	if !c.authorized(acl.OpDescribe, acl.ResourceGroup, req.Group) {
		return groupDenial(r, protocol.GroupAuthorizationFailed), nil
	}
	describable := c.topicsAllowed(acl.OpDescribe)
	if req.Topics == nil && hdr.APIVersion >= 2 {
		resp := b.askGroup(ctx, c, hdr, req.Group, r).(*kmsg.OffsetFetchResponse)
		if resp.ErrorCode == 0 {
			resp.Topics = slices.DeleteFunc(resp.Topics, func(t kmsg.OffsetFetchResponseTopic) bool {
				return !describable(t.Topic)
			})
		}
		return resp, nil
	}
	// Never nil: nil asks for every topic.
	kept := make([]kmsg.OffsetFetchRequestTopic, 0, len(req.Topics))
	var denied []kmsg.OffsetFetchResponseTopic
	for _, t := range req.Topics {
		if describable(t.Topic) {
			kept = append(kept, t)
			continue
		}
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.Metadata = p, -1, kmsg.StringPtr("")
			rp.ErrorCode = int16(protocol.TopicAuthorizationFailed)
			rt.Partitions = append(rt.Partitions, rp)
		}
		denied = append(denied, rt)
	}
	if len(denied) == 0 {
		return b.askGroup(ctx, c, hdr, req.Group, r), nil
	}
	sub := *req
	sub.Topics = kept
	resp := b.askGroup(ctx, c, hdr, req.Group, &sub).(*kmsg.OffsetFetchResponse)
	if resp.ErrorCode == 0 {
		resp.Topics = append(resp.Topics, denied...)
	}
	return resp, nil
}

// offsetFetchPlan is what the broker decided for one group of an
// OffsetFetch v8+ before asking its coordinator.
type offsetFetchPlan struct {
	refused bool                                 // no DESCRIBE on the group
	all     bool                                 // null topics: filter the answer
	denied  []kmsg.OffsetFetchResponseGroupTopic // named topics without DESCRIBE
}

// handleOffsetFetchGroups serves OffsetFetch v8+, which may name several
// groups: each coordinator answers for its groups, in request order.
func (b *Broker) handleOffsetFetchGroups(ctx context.Context, c *conn, hdr protocol.RequestHeader, req *kmsg.OffsetFetchRequest) kmsg.Response {
	md := b.cluster.Snapshot()
	describable := c.topicsAllowed(acl.OpDescribe)
	topicName := func(t kmsg.OffsetFetchRequestGroupTopic) (string, bool) {
		if hdr.APIVersion >= 10 {
			return groupTopicName(md, t.TopicID)
		}
		return t.Topic, true
	}
	plans := map[string]*offsetFetchPlan{}
	byID := map[string]kmsg.OffsetFetchRequestGroup{}
	var ids []string
	for _, g := range req.Groups {
		if p, done := plans[g.Group]; done {
			if !p.refused {
				ids = append(ids, g.Group)
			}
			continue
		}
		p := &offsetFetchPlan{}
		plans[g.Group] = p
		if !c.authorized(acl.OpDescribe, acl.ResourceGroup, g.Group) {
			p.refused = true
			continue
		}
		ids = append(ids, g.Group)
		if g.Topics == nil {
			p.all = true
			byID[g.Group] = g
			continue
		}
		kept := make([]kmsg.OffsetFetchRequestGroupTopic, 0, len(g.Topics)) // never nil: nil is all
		for _, t := range g.Topics {
			if name, known := topicName(t); !known || describable(name) {
				kept = append(kept, t)
				continue
			}
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, part := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition, rp.Offset, rp.Metadata = part, -1, kmsg.StringPtr("")
				rp.ErrorCode = int16(protocol.TopicAuthorizationFailed)
				rt.Partitions = append(rt.Partitions, rp)
			}
			p.denied = append(p.denied, rt)
		}
		g.Topics = kept
		byID[g.Group] = g
	}
	answers := askByGroup(ctx, b, c, hdr, ids,
		func(ids []string) kmsg.Request {
			s := *req
			s.Groups = nil
			for _, id := range ids {
				s.Groups = append(s.Groups, byID[id])
			}
			return &s
		},
		func(r kmsg.Response) []kmsg.OffsetFetchResponseGroup { return r.(*kmsg.OffsetFetchResponse).Groups },
		func(g kmsg.OffsetFetchResponseGroup) string { return g.Group })
	for id, p := range plans {
		a, ok := answers[id]
		if !ok || a.ErrorCode != 0 {
			continue
		}
		if p.all {
			a.Topics = slices.DeleteFunc(a.Topics, func(t kmsg.OffsetFetchResponseGroupTopic) bool {
				return !describable(t.Topic)
			})
		} else {
			a.Topics = append(a.Topics, p.denied...)
		}
		answers[id] = a
	}
	out := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	for _, g := range req.Groups {
		if plans[g.Group].refused {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, int16(protocol.GroupAuthorizationFailed)
			out.Groups = append(out.Groups, rg)
			continue
		}
		out.Groups = append(out.Groups, answers[g.Group])
	}
	return out
}
