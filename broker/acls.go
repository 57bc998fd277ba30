package broker

// DescribeAcls (key 29), CreateAcls (key 30) and DeleteAcls (key 31),
// versions 1-3.
//
// Gregor has no authorizer yet, so these answer as a Kafka broker with no
// authorizer.class.name does: SECURITY_DISABLED for the request (describe)
// or for each creation and filter, and nothing changes. A client learns at
// once that ACLs are off, instead of reading a closed connection as a
// network failure and retrying.
//
// As in Kafka, a request naming the UNKNOWN value (0) of any of its enums
// (resource type, pattern type, operation, permission type) in its filter,
// a creation or a filter does not parse: the connection is closed.

import (
	"context"
	"fmt"

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

// errUnknownACLEnum closes the connection on an ACL request naming an
// enum's UNKNOWN value.
func errUnknownACLEnum(what string) error {
	return fmt.Errorf("%w: %s names an UNKNOWN resource, pattern, operation or permission type", errCloseConn, what)
}

// anyUnknown reports whether any of an ACL's enum codes is UNKNOWN (0).
func anyUnknown(codes ...int8) bool {
	for _, c := range codes {
		if c == 0 {
			return true
		}
	}
	return false
}

func (b *Broker) handleDescribeAcls(_ context.Context, _ *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DescribeACLsRequest)
	if anyUnknown(int8(req.ResourceType), int8(req.ResourcePatternType), int8(req.Operation), int8(req.PermissionType)) {
		return nil, errUnknownACLEnum("DescribeAcls")
	}
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	resp.ErrorCode, resp.ErrorMessage = noAuthorizer()
	return resp, nil
}

func (b *Broker) handleCreateAcls(_ context.Context, _ *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.CreateACLsRequest)
	for _, c := range req.Creations {
		if anyUnknown(int8(c.ResourceType), int8(c.ResourcePatternType), int8(c.Operation), int8(c.PermissionType)) {
			return nil, errUnknownACLEnum("CreateAcls")
		}
	}
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
	for _, f := range req.Filters {
		if anyUnknown(int8(f.ResourceType), int8(f.ResourcePatternType), int8(f.Operation), int8(f.PermissionType)) {
			return nil, errUnknownACLEnum("DeleteAcls")
		}
	}
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	for range req.Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = noAuthorizer()
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
