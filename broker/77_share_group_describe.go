package broker

// ShareGroupDescribe (key 77), version 1.
//
// Share groups (KIP-932): state, epochs, the assignor and each member's
// subscription and assignment. Several groups: each coordinator answers
// for its own (group_requests.go); a group that is not a share group is
// GROUP_ID_NOT_FOUND.
//
// Authorization, as Kafka's: a group without DESCRIBE is
// GROUP_AUTHORIZATION_FAILED and is not asked for; a described group
// reports the operations the principal may do on it when asked; and a
// group whose members' assignments hold a topic the principal may not
// DESCRIBE is shown as TOPIC_AUTHORIZATION_FAILED alone, without its
// members.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/protocol"
)

var shareGroupDescribeAPI = handler{key: 77, min: 1, max: 1, handle: (*Broker).handleShareGroupDescribe}

func (b *Broker) handleShareGroupDescribe(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.ShareGroupDescribeRequest)
	allowed, denied := authorizedGroups(c, acl.OpDescribe, req.GroupIDs)
	answers := askByGroup(ctx, b, c, hdr, allowed,
		func(ids []string) kmsg.Request { s := *req; s.GroupIDs = ids; return &s },
		func(r kmsg.Response) []kmsg.ShareGroupDescribeResponseGroup {
			return r.(*kmsg.ShareGroupDescribeResponse).Groups
		},
		func(g kmsg.ShareGroupDescribeResponseGroup) string { return g.GroupID })
	describable := c.topicsAllowed(acl.OpDescribe)
	hidden := func(g kmsg.ShareGroupDescribeResponseGroup) bool {
		for _, m := range g.Members {
			for _, tp := range m.Assignment.TopicPartitions {
				if tp.Topic != "" && !describable(tp.Topic) {
					return true
				}
			}
		}
		return false
	}
	out := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	for _, id := range req.GroupIDs {
		g, ok := answers[id]
		switch {
		case denied[id]:
			g = kmsg.NewShareGroupDescribeResponseGroup()
			g.GroupID, g.ErrorCode = id, int16(protocol.GroupAuthorizationFailed)
		case ok && hidden(g):
			g = kmsg.NewShareGroupDescribeResponseGroup()
			g.GroupID, g.ErrorCode = id, int16(protocol.TopicAuthorizationFailed)
			g.ErrorMessage = kmsg.StringPtr(groupHiddenTopicsMessage)
		case req.IncludeAuthorizedOperations && g.ErrorCode == 0:
			g.AuthorizedOperations = c.authorizedOps(acl.ResourceGroup, id)
		}
		out.Groups = append(out.Groups, g)
	}
	return out, nil
}
