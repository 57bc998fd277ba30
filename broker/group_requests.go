package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/coordinator/group"
	"github.com/gregor-io/gregor/coordinator/share"
	"github.com/gregor-io/gregor/protocol"
)

// handleGroupRequest routes a request about one group to the coordinator
// of that group's __consumer_offsets partition. The group logic, versions'
// behaviour and errors are coordinator/group's; see its package doc.
//
// With an authorizer, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
// ConsumerGroupHeartbeat and ShareGroupHeartbeat need READ on the group,
// and the two heartbeats DESCRIBE on every topic they subscribe to by name
// (a regular expression's matches are not checked here), as Kafka checks
// them before its coordinator sees the request: a denied request is
// answered here with GROUP_AUTHORIZATION_FAILED or
// TOPIC_AUTHORIZATION_FAILED and never reaches the coordinator. A SyncGroup
// of v5+ without protocol type or name is not checked: Kafka refuses it
// with INCONSISTENT_GROUP_PROTOCOL first, and so does the coordinator.
// TxnOffsetCommit, routed here too, is checked by its own handler.
func (b *Broker) handleGroupRequest(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	var id string
	var subscribed []string
	check := true
	switch req := r.(type) {
	case *kmsg.JoinGroupRequest:
		id = req.Group
	case *kmsg.SyncGroupRequest:
		id = req.Group
		check = hdr.APIVersion < 5 || req.ProtocolType != nil && req.Protocol != nil
	case *kmsg.HeartbeatRequest:
		id = req.Group
	case *kmsg.LeaveGroupRequest:
		id = req.Group
	case *kmsg.TxnOffsetCommitRequest:
		id, check = req.Group, false
	case *kmsg.ConsumerGroupHeartbeatRequest:
		id, subscribed = req.Group, req.SubscribedTopicNames
	case *kmsg.ShareGroupHeartbeatRequest:
		id, subscribed = req.GroupID, req.SubscribedTopicNames
	}
	if check {
		if !c.authorized(acl.OpRead, acl.ResourceGroup, id) {
			return groupDenial(r, protocol.GroupAuthorizationFailed), nil
		}
		for _, t := range subscribed {
			if !c.authorized(acl.OpDescribe, acl.ResourceTopic, t) {
				return groupDenial(r, protocol.TopicAuthorizationFailed), nil
			}
		}
	}
	return b.askGroup(ctx, c, hdr, id, r), nil
}

// askGroup asks the coordinator of group id for r's answer:
// NOT_COORDINATOR when the offsets topic does not exist yet.
func (b *Broker) askGroup(ctx context.Context, c *conn, hdr protocol.RequestHeader, id string, r kmsg.Request) kmsg.Response {
	p := b.groupPartition(id)
	if p < 0 {
		return group.ErrorResponse(r, int16(protocol.NotCoordinator))
	}
	return b.groups.ask(ctx, p, c, hdr, r)
}

// groupDenial is the answer to a group request refused with code: code
// wherever the response has room for an error, as the coordinator fails a
// whole request. A refused JoinGroup names no member, as Kafka's does not.
func groupDenial(r kmsg.Request, code protocol.ErrorCode) kmsg.Response {
	resp := group.ErrorResponse(r, int16(code))
	if jr, ok := resp.(*kmsg.JoinGroupResponse); ok {
		jr.MemberID = ""
	}
	return resp
}

// groupTopicName is the name of the topic with id in md, if it exists:
// requests that name topics by id are authorized by the name.
func groupTopicName(md *cluster.Metadata, id [16]byte) (string, bool) {
	t := md.TopicsByID[cluster.TopicID(id)]
	if t == nil {
		return "", false
	}
	return t.Name, true
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

// authorizedGroups splits ids into those c's principal may do op on, in
// order, and the others.
func authorizedGroups(c *conn, op acl.Operation, ids []string) ([]string, map[string]bool) {
	allowed := make([]string, 0, len(ids))
	denied := map[string]bool{}
	for _, id := range ids {
		if c.authorized(op, acl.ResourceGroup, id) {
			allowed = append(allowed, id)
		} else {
			denied[id] = true
		}
	}
	return allowed, denied
}

// handleDescribeGroups: a group without DESCRIBE is GROUP_AUTHORIZATION_FAILED
// and is not asked for; a described group (no error) reports the
// operations the principal may do on it when asked (v3+).
func (b *Broker) handleDescribeGroups(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DescribeGroupsRequest)
	allowed, denied := authorizedGroups(c, acl.OpDescribe, req.Groups)
	answers := askByGroup(ctx, b, c, hdr, allowed,
		func(ids []string) kmsg.Request { s := *req; s.Groups = ids; return &s },
		func(r kmsg.Response) []kmsg.DescribeGroupsResponseGroup {
			return r.(*kmsg.DescribeGroupsResponse).Groups
		},
		func(g kmsg.DescribeGroupsResponseGroup) string { return g.Group })
	wantOps := hdr.APIVersion >= 3 && req.IncludeAuthorizedOperations
	out := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		if denied[id] {
			g := kmsg.NewDescribeGroupsResponseGroup()
			g.Group, g.ErrorCode = id, int16(protocol.GroupAuthorizationFailed)
			out.Groups = append(out.Groups, g)
			continue
		}
		g := answers[id]
		if wantOps && g.ErrorCode == 0 {
			g.AuthorizedOperations = c.authorizedOps(acl.ResourceGroup, id)
		}
		out.Groups = append(out.Groups, g)
	}
	return out, nil
}

// handleDeleteGroups: a group without DELETE is GROUP_AUTHORIZATION_FAILED,
// and nothing of it is deleted.
func (b *Broker) handleDeleteGroups(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DeleteGroupsRequest)
	allowed, denied := authorizedGroups(c, acl.OpDelete, req.Groups)
	// An empty share group's state goes first, at its share coordinators,
	// as Kafka deletes it: a group made again under the id starts afresh.
	for _, id := range allowed {
		consumed, members, code := b.shareGroupInfo(ctx, id)
		if code != protocol.None || members > 0 {
			continue
		}
		b.deleteShareState(ctx, id, consumed)
	}
	answers := askByGroup(ctx, b, c, hdr, allowed,
		func(ids []string) kmsg.Request { s := *req; s.Groups = ids; return &s },
		func(r kmsg.Response) []kmsg.DeleteGroupsResponseGroup { return r.(*kmsg.DeleteGroupsResponse).Groups },
		func(g kmsg.DeleteGroupsResponseGroup) string { return g.Group })
	out := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, id := range req.Groups {
		if denied[id] {
			g := kmsg.NewDeleteGroupsResponseGroup()
			g.Group, g.ErrorCode = id, int16(protocol.GroupAuthorizationFailed)
			out.Groups = append(out.Groups, g)
			continue
		}
		out.Groups = append(out.Groups, answers[id])
	}
	return out, nil
}

// handleListGroups asks every local coordinator and lists all their groups.
// A coordinator still loading makes the answer COORDINATOR_LOAD_IN_PROGRESS
// (with the groups of the others), as Kafka answers. A principal with
// DESCRIBE on the cluster sees every group; any other only those it may
// DESCRIBE, the rest left out without an error.
func (b *Broker) handleListGroups(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	all := c.authorizedCluster(acl.OpDescribe)
	out := r.ResponseKind().(*kmsg.ListGroupsResponse)
	for _, d := range b.groups.all() {
		resp := b.groups.ask(ctx, d.partition, c, hdr, r).(*kmsg.ListGroupsResponse)
		if resp.ErrorCode != 0 && out.ErrorCode == 0 {
			out.ErrorCode = resp.ErrorCode
		}
		for _, g := range resp.Groups {
			if all || c.authorized(acl.OpDescribe, acl.ResourceGroup, g.Group) {
				out.Groups = append(out.Groups, g)
			}
		}
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
