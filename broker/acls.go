package broker

// DescribeAcls (key 29), CreateAcls (key 30) and DeleteAcls (key 31),
// versions 1-3.
//
// With no authorizer (authorizer.class.name empty) they answer as Kafka
// does then: SECURITY_DISABLED for the request (describe) or for each
// creation and filter, and nothing changes; a client learns at once that
// ACLs are off. With one, the bindings live in the registry
// (coordinator/cluster), where every broker sees them: describing needs
// DESCRIBE on the cluster, creating and deleting ALTER, else
// CLUSTER_AUTHORIZATION_FAILED. A creation or deletion is answered once
// this broker's own view holds it (or after aclApplyWait), so that a
// client's next request here is decided by it.
//
// As in Kafka, a request naming the UNKNOWN value (0) of any of its enums
// (resource type, pattern type, operation, permission type) in its filter,
// a creation or a filter does not parse: the connection is closed.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/protocol"
)

var (
	describeAclsAPI = handler{key: 29, min: 1, max: 3, handle: (*Broker).handleDescribeAcls}
	createAclsAPI   = handler{key: 30, min: 1, max: 3, handle: (*Broker).handleCreateAcls}
	deleteAclsAPI   = handler{key: 31, min: 1, max: 3, handle: (*Broker).handleDeleteAcls}
)

// aclApplyWait bounds how long an ACL change waits to be seen here.
const aclApplyWait = 5 * time.Second

// noAuthorizer is the error every ACL request and result gets without an
// authorizer.
func noAuthorizer() (int16, *string) {
	msg := "No Authorizer is configured."
	return int16(protocol.SecurityDisabled), &msg
}

// notAuthorized is the error of an ACL request whose principal lacks the
// cluster operation it needs.
func notAuthorized(op acl.Operation) (int16, *string) {
	msg := fmt.Sprintf("%s on the cluster is not authorized.", op)
	return int16(protocol.ClusterAuthorizationFailed), &msg
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

// waitACLs waits until this broker's view of the ACLs satisfies done, at
// most aclApplyWait.
func (b *Broker) waitACLs(ctx context.Context, done func([]acl.Binding) bool) {
	ctx, cancel := context.WithTimeout(ctx, aclApplyWait)
	defer cancel()
	for {
		ch := b.cluster.Changed()
		if done(b.cluster.Snapshot().ACLs) {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// aclChangeRefused is the error every creation or filter of a CreateAcls
// or DeleteAcls gets before its own checks: CLUSTER_AUTHORIZATION_FAILED
// without ALTER on the cluster, SECURITY_DISABLED without an authorizer;
// 0 when neither holds.
func (b *Broker) aclChangeRefused(c *conn) (int16, *string) {
	switch {
	case !c.authorizedCluster(acl.OpAlter):
		return notAuthorized(acl.OpAlter)
	case b.cfg.AuthorizerClassName == "":
		return noAuthorizer()
	}
	return 0, nil
}

// aclFilter is a DescribeAcls or DeleteAcls filter in the acl package's
// terms.
func aclFilter(rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType, principal, host *string,
	op kmsg.ACLOperation, perm kmsg.ACLPermissionType) acl.Filter {
	return acl.Filter{ResourceType: acl.ResourceType(rt), Name: name, PatternType: acl.PatternType(pt),
		Principal: principal, Host: host, Operation: acl.Operation(op), Permission: acl.Permission(perm)}
}

func (b *Broker) handleDescribeAcls(_ context.Context, c *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DescribeACLsRequest)
	if anyUnknown(int8(req.ResourceType), int8(req.ResourcePatternType), int8(req.Operation), int8(req.PermissionType)) {
		return nil, errUnknownACLEnum("DescribeAcls")
	}
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	switch {
	case !c.authorizedCluster(acl.OpDescribe):
		resp.ErrorCode, resp.ErrorMessage = notAuthorized(acl.OpDescribe)
		return resp, nil
	case b.cfg.AuthorizerClassName == "":
		resp.ErrorCode, resp.ErrorMessage = noAuthorizer()
		return resp, nil
	}
	f := aclFilter(req.ResourceType, req.ResourceName, req.ResourcePatternType, req.Principal, req.Host,
		req.Operation, req.PermissionType)
	if err := f.Validate(); err != nil {
		msg := err.Error()
		resp.ErrorCode, resp.ErrorMessage = int16(protocol.InvalidRequest), &msg
		return resp, nil
	}
	type resourceKey struct {
		rt   acl.ResourceType
		name string
		pt   acl.PatternType
	}
	byResource := map[resourceKey]int{}
	for _, bd := range b.cluster.Snapshot().ACLs {
		if !f.Matches(bd) {
			continue
		}
		k := resourceKey{bd.ResourceType, bd.Name, bd.PatternType}
		i, ok := byResource[k]
		if !ok {
			i = len(resp.Resources)
			byResource[k] = i
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName = kmsg.ACLResourceType(bd.ResourceType), bd.Name
			res.ResourcePatternType = kmsg.ACLResourcePatternType(bd.PatternType)
			resp.Resources = append(resp.Resources, res)
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host = bd.Principal, bd.Host
		a.Operation, a.PermissionType = kmsg.ACLOperation(bd.Operation), kmsg.ACLPermissionType(bd.Permission)
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, a)
	}
	return resp, nil
}

func (b *Broker) handleCreateAcls(ctx context.Context, c *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.CreateACLsRequest)
	for _, cr := range req.Creations {
		if anyUnknown(int8(cr.ResourceType), int8(cr.ResourcePatternType), int8(cr.Operation), int8(cr.PermissionType)) {
			return nil, errUnknownACLEnum("CreateAcls")
		}
	}
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
	failCode, failMsg := b.aclChangeRefused(c)
	var valid []acl.Binding
	var validAt []int
	for i, cr := range req.Creations {
		res := &resp.Results[i]
		*res = kmsg.NewCreateACLsResponseResult()
		if failCode != 0 {
			res.ErrorCode, res.ErrorMessage = failCode, failMsg
			continue
		}
		bd := acl.Binding{ResourceType: acl.ResourceType(cr.ResourceType), Name: cr.ResourceName,
			PatternType: acl.PatternType(cr.ResourcePatternType), Principal: cr.Principal, Host: cr.Host,
			Operation: acl.Operation(cr.Operation), Permission: acl.Permission(cr.PermissionType)}
		if err := bd.Validate(); err != nil {
			msg := err.Error()
			res.ErrorCode, res.ErrorMessage = int16(protocol.InvalidRequest), &msg
			continue
		}
		valid = append(valid, bd)
		validAt = append(validAt, i)
	}
	if len(valid) == 0 {
		return resp, nil
	}
	if err := b.cluster.CreateACLs(ctx, valid); err != nil {
		b.logger.Warn("creating ACLs failed", "err", err)
		msg := err.Error()
		for _, i := range validAt {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = int16(protocol.UnknownServerError), &msg
		}
		return resp, nil
	}
	b.waitACLs(ctx, func(have []acl.Binding) bool {
		for _, bd := range valid {
			if !slices.Contains(have, bd) {
				return false
			}
		}
		return true
	})
	return resp, nil
}

func (b *Broker) handleDeleteAcls(ctx context.Context, c *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DeleteACLsRequest)
	for _, f := range req.Filters {
		if anyUnknown(int8(f.ResourceType), int8(f.ResourcePatternType), int8(f.Operation), int8(f.PermissionType)) {
			return nil, errUnknownACLEnum("DeleteAcls")
		}
	}
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
	failCode, failMsg := b.aclChangeRefused(c)
	var filters []acl.Filter
	var filterAt []int
	for i, rf := range req.Filters {
		res := &resp.Results[i]
		*res = kmsg.NewDeleteACLsResponseResult()
		if failCode != 0 {
			res.ErrorCode, res.ErrorMessage = failCode, failMsg
			continue
		}
		f := aclFilter(rf.ResourceType, rf.ResourceName, rf.ResourcePatternType, rf.Principal, rf.Host,
			rf.Operation, rf.PermissionType)
		if err := f.Validate(); err != nil {
			msg := err.Error()
			res.ErrorCode, res.ErrorMessage = int16(protocol.InvalidRequest), &msg
			continue
		}
		filters = append(filters, f)
		filterAt = append(filterAt, i)
	}
	if len(filters) == 0 {
		return resp, nil
	}
	deleted, err := b.cluster.DeleteACLs(ctx, filters)
	if err != nil {
		b.logger.Warn("deleting ACLs failed", "err", err)
		msg := err.Error()
		for _, i := range filterAt {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = int16(protocol.UnknownServerError), &msg
		}
		return resp, nil
	}
	var gone []acl.Binding
	for j, i := range filterAt {
		for _, bd := range deleted[j] {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName = kmsg.ACLResourceType(bd.ResourceType), bd.Name
			m.ResourcePatternType = kmsg.ACLResourcePatternType(bd.PatternType)
			m.Principal, m.Host = bd.Principal, bd.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(bd.Operation), kmsg.ACLPermissionType(bd.Permission)
			resp.Results[i].MatchingACLs = append(resp.Results[i].MatchingACLs, m)
			gone = append(gone, bd)
		}
	}
	b.waitACLs(ctx, func(have []acl.Binding) bool {
		for _, bd := range gone {
			if slices.Contains(have, bd) {
				return false
			}
		}
		return true
	})
	return resp, nil
}
