package broker

// ConsumerGroupDescribe (key 69), versions 0-1 (v1 adds each member's
// type: 1, the consumer protocol, for every member Gregor serves).
//
// Consumer groups of the next-generation protocol (KIP-848): state, epochs,
// assignor, and each member's subscription, current and target
// assignment. Several groups: each coordinator answers for its own
// (group_requests.go); a classic group is GROUP_ID_NOT_FOUND, which tells
// the admin client to describe it with DescribeGroups instead.
//
// Authorization, as Kafka's (since 4.0): a group without DESCRIBE is
// GROUP_AUTHORIZATION_FAILED and is not asked for; a described group
// reports the operations the principal may do on it when asked; and a
// group whose members' current or target assignments hold a topic the
// principal may not DESCRIBE is shown as TOPIC_AUTHORIZATION_FAILED alone,
// without its members.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/protocol"
)

var consumerGroupDescribeAPI = handler{key: 69, min: 0, max: 1, handle: (*Broker).handleConsumerGroupDescribe}

// groupHiddenTopicsMessage is the message of a described group refused
// for its topics.
const groupHiddenTopicsMessage = "The group has topics the client is not authorized to describe."

func (b *Broker) handleConsumerGroupDescribe(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.ConsumerGroupDescribeRequest)
	allowed, denied := authorizedGroups(c, acl.OpDescribe, req.Groups)
	answers := askByGroup(ctx, b, c, hdr, allowed,
		func(ids []string) kmsg.Request { s := *req; s.Groups = ids; return &s },
		func(r kmsg.Response) []kmsg.ConsumerGroupDescribeResponseGroup {
			return r.(*kmsg.ConsumerGroupDescribeResponse).Groups
		},
		func(g kmsg.ConsumerGroupDescribeResponseGroup) string { return g.Group })
	describable := c.topicsAllowed(acl.OpDescribe)
	hidden := func(g kmsg.ConsumerGroupDescribeResponseGroup) bool {
		for _, m := range g.Members {
			for _, a := range [...]kmsg.Assignment{m.Assignment, m.TargetAssignment} {
				for _, tp := range a.TopicPartitions {
					if tp.Topic != "" && !describable(tp.Topic) {
						return true
					}
				}
			}
		}
		return false
	}
	out := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, id := range req.Groups {
		g, ok := answers[id]
		switch {
		case denied[id]:
			g = kmsg.NewConsumerGroupDescribeResponseGroup()
			g.Group, g.ErrorCode = id, int16(protocol.GroupAuthorizationFailed)
		case ok && hidden(g):
			g = kmsg.NewConsumerGroupDescribeResponseGroup()
			g.Group, g.ErrorCode = id, int16(protocol.TopicAuthorizationFailed)
			g.ErrorMessage = kmsg.StringPtr(groupHiddenTopicsMessage)
		case req.IncludeAuthorizedOperations && g.ErrorCode == 0:
			g.AuthorizedOperations = c.authorizedOps(acl.ResourceGroup, id)
		}
		out.Groups = append(out.Groups, g)
	}
	return out, nil
}
