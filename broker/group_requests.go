package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/group"
	"github.com/gregor-io/gregor/coordinator/share"
	"github.com/gregor-io/gregor/protocol"
)

// handleGroupRequest routes a request about one group to the coordinator
// of that group's __consumer_offsets partition. The group logic, versions'
// behaviour and errors are coordinator/group's; see its package doc.
func (b *Broker) handleGroupRequest(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	var id string
	switch req := r.(type) {
	case *kmsg.JoinGroupRequest:
		id = req.Group
	case *kmsg.SyncGroupRequest:
		id = req.Group
	case *kmsg.HeartbeatRequest:
		id = req.Group
	case *kmsg.LeaveGroupRequest:
		id = req.Group
	case *kmsg.OffsetCommitRequest:
		id = req.Group
	case *kmsg.OffsetDeleteRequest:
		id = req.Group
	case *kmsg.TxnOffsetCommitRequest:
		id = req.Group
	case *kmsg.ConsumerGroupHeartbeatRequest:
		id = req.Group
	case *kmsg.ShareGroupHeartbeatRequest:
		id = req.GroupID
	case *kmsg.OffsetFetchRequest:
		if hdr.APIVersion >= 8 {
			return b.handleOffsetFetchGroups(ctx, c, hdr, req), nil
		}
		id = req.Group
	}
	p := b.groupPartition(id)
	if p < 0 {
		return group.ErrorResponse(r, int16(protocol.NotCoordinator)), nil
	}
	return b.groups.ask(ctx, p, c, hdr, r), nil
}

// byPartition splits group ids by coordinator partition, keeping the order
// in which each partition first appears.
func (b *Broker) byPartition(ids []string) ([]int32, map[int32][]string) {
	var order []int32
	split := map[int32][]string{}
	for _, id := range ids {
		p := b.groupPartition(id)
		if _, ok := split[p]; !ok {
			order = append(order, p)
		}
		split[p] = append(split[p], id)
	}
	return order, split
}

// askByGroup splits a multi-group request by coordinator: sub builds the
// request for one coordinator's share of ids, groups and key read the
// answer. It returns every group's answer by id (NOT_COORDINATOR for
// groups whose coordinator is not here).
func askByGroup[G any](ctx context.Context, b *Broker, c *conn, hdr protocol.RequestHeader, ids []string,
	sub func(ids []string) kmsg.Request, groups func(kmsg.Response) []G, key func(G) string) map[string]G {
	order, split := b.byPartition(ids)
	answers := make(map[string]G, len(ids))
	for _, p := range order {
		req := sub(split[p])
		var resp kmsg.Response
		if p < 0 {
			resp = group.ErrorResponse(req, int16(protocol.NotCoordinator))
		} else {
			resp = b.groups.ask(ctx, p, c, hdr, req)
		}
		for _, g := range groups(resp) {
			answers[key(g)] = g
		}
	}
	return answers
}

// handleOffsetFetchGroups serves OffsetFetch v8+, which may name several
// groups: each coordinator answers for its groups, in request order.
func (b *Broker) handleOffsetFetchGroups(ctx context.Context, c *conn, hdr protocol.RequestHeader, req *kmsg.OffsetFetchRequest) kmsg.Response {
	ids := make([]string, len(req.Groups))
	byID := map[string]kmsg.OffsetFetchRequestGroup{}
	for i, g := range req.Groups {
		ids[i] = g.Group
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
	out := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	for _, id := range ids {
		out.Groups = append(out.Groups, answers[id])
	}
	return out
}

func (b *Broker) handleDescribeGroups(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DescribeGroupsRequest)
	answers := askByGroup(ctx, b, c, hdr, req.Groups,
		func(ids []string) kmsg.Request { s := *req; s.Groups = ids; return &s },
		func(r kmsg.Response) []kmsg.DescribeGroupsResponseGroup {
			return r.(*kmsg.DescribeGroupsResponse).Groups
		},
		func(g kmsg.DescribeGroupsResponseGroup) string { return g.Group })
	out := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		out.Groups = append(out.Groups, answers[id])
	}
	return out, nil
}

func (b *Broker) handleDeleteGroups(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DeleteGroupsRequest)
	// An empty share group's state goes first, at its share coordinators,
	// as Kafka deletes it: a group made again under the id starts afresh.
	for _, id := range req.Groups {
		consumed, members, code := b.shareGroupInfo(ctx, id)
		if code != protocol.None || members > 0 {
			continue
		}
		b.deleteShareState(ctx, id, consumed)
	}
	answers := askByGroup(ctx, b, c, hdr, req.Groups,
		func(ids []string) kmsg.Request { s := *req; s.Groups = ids; return &s },
		func(r kmsg.Response) []kmsg.DeleteGroupsResponseGroup { return r.(*kmsg.DeleteGroupsResponse).Groups },
		func(g kmsg.DeleteGroupsResponseGroup) string { return g.Group })
	out := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, id := range req.Groups {
		out.Groups = append(out.Groups, answers[id])
	}
	return out, nil
}

// handleListGroups asks every local coordinator and lists all their groups.
// A coordinator still loading makes the answer COORDINATOR_LOAD_IN_PROGRESS
// (with the groups of the others), as Kafka answers.
func (b *Broker) handleListGroups(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	out := r.ResponseKind().(*kmsg.ListGroupsResponse)
	for _, d := range b.groups.all() {
		resp := b.groups.ask(ctx, d.partition, c, hdr, r).(*kmsg.ListGroupsResponse)
		if resp.ErrorCode != 0 && out.ErrorCode == 0 {
			out.ErrorCode = resp.ErrorCode
		}
		out.Groups = append(out.Groups, resp.Groups...)
	}
	return out, nil
}

// deleteShareState deletes a share group's state on every partition of the
// topics it consumed.
func (b *Broker) deleteShareState(ctx context.Context, groupID string, consumed map[string][16]byte) {
	md := b.cluster.Snapshot()
	for name, id := range consumed {
		t := md.Topics[name]
		if t == nil || [16]byte(t.ID) != id {
			continue
		}
		for p := range int32(len(t.Partitions)) {
			if code := b.shares.state.remove(ctx, share.Key{Group: groupID, TopicID: id, Partition: p}); code != protocol.None {
				b.loggerFor("share").Warn("deleting a share group's state failed", "group", groupID, "topic", name, "partition", p, "code", code)
			}
		}
	}
}
