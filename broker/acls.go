package broker

// DescribeAcls (key 29), CreateAcls (key 30) and DeleteAcls (key 31),
// versions 1-3.
//
// Gregor has no authorizer yet, so these answer as a Kafka broker with no
// authorizer.class.name does: SECURITY_DISABLED for the request (describe)
// or for each creation and filter, and nothing changes. A client learns at
// once that ACLs are off, instead of reading a closed connection as a
// network failure and retrying.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
)

var (
	describeAclsAPI = handler{key: 29, min: 1, max: 3, handle: (*Broker).handleDescribeAcls}
	createAclsAPI   = handler{key: 30, min: 1, max: 3, handle: (*Broker).handleCreateAcls}
	deleteAclsAPI   = handler{key: 31, min: 1, max: 3, handle: (*Broker).handleDeleteAcls}
)

// noAuthorizer is the error every ACL request and result gets.
func noAuthorizer() (int16, *string) {
	msg := "ACLs are not enabled: this broker has no authorizer."
	return int16(protocol.SecurityDisabled), &msg
}

func (b *Broker) handleDescribeAcls(_ context.Context, _ *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	resp := r.(*kmsg.DescribeACLsRequest).ResponseKind().(*kmsg.DescribeACLsResponse)
	resp.ErrorCode, resp.ErrorMessage = noAuthorizer()
	return resp, nil
}

func (b *Broker) handleCreateAcls(_ context.Context, _ *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	for range req.Creations {
		res := kmsg.NewCreateACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = noAuthorizer()
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}

func (b *Broker) handleDeleteAcls(_ context.Context, _ *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	for range req.Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = noAuthorizer()
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
