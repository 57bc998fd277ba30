package broker

// ConsumerGroupDescribe (key 69), versions 0-1 (v1 adds each member's
// type: 1, the consumer protocol, for every member Gregor serves).
//
// Consumer groups of the next-generation protocol (KIP-848): state, epochs,
// assignor, and each member's subscription, current and target
// assignment. Several groups: each coordinator answers for its own
// (group_requests.go); a classic group is GROUP_ID_NOT_FOUND, which tells
// the admin client to describe it with DescribeGroups instead.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
)

var consumerGroupDescribeAPI = handler{key: 69, min: 0, max: 1, handle: (*Broker).handleConsumerGroupDescribe}

func (b *Broker) handleConsumerGroupDescribe(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.ConsumerGroupDescribeRequest)
	answers := askByGroup(ctx, b, c, hdr, req.Groups,
		func(ids []string) kmsg.Request { s := *req; s.Groups = ids; return &s },
		func(r kmsg.Response) []kmsg.ConsumerGroupDescribeResponseGroup {
			return r.(*kmsg.ConsumerGroupDescribeResponse).Groups
		},
		func(g kmsg.ConsumerGroupDescribeResponseGroup) string { return g.Group })
	out := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, id := range req.Groups {
		out.Groups = append(out.Groups, answers[id])
	}
	return out, nil
}
