package broker

// ShareGroupDescribe (key 77), version 1.
//
// Share groups (KIP-932): state, epochs, the assignor and each member's
// subscription and assignment. Several groups: each coordinator answers
// for its own (group_requests.go); a group that is not a share group is
// GROUP_ID_NOT_FOUND.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
)

var shareGroupDescribeAPI = handler{key: 77, min: 1, max: 1, handle: (*Broker).handleShareGroupDescribe}

func (b *Broker) handleShareGroupDescribe(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.ShareGroupDescribeRequest)
	answers := askByGroup(ctx, b, c, hdr, req.GroupIDs,
		func(ids []string) kmsg.Request { s := *req; s.GroupIDs = ids; return &s },
		func(r kmsg.Response) []kmsg.ShareGroupDescribeResponseGroup {
			return r.(*kmsg.ShareGroupDescribeResponse).Groups
		},
		func(g kmsg.ShareGroupDescribeResponseGroup) string { return g.GroupID })
	out := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	for _, id := range req.GroupIDs {
		out.Groups = append(out.Groups, answers[id])
	}
	return out, nil
}
