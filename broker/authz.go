package broker

// Authorization: with authorizer.class.name set, each request is checked
// as Kafka checks it, by the principal of its connection (User:ANONYMOUS
// on a PLAINTEXT listener) and the client's address, against the ACLs in
// the registry (coordinator/acl decides). Each API's handler asks for the
// operations Kafka asks for; a denied request gets the API's authorization
// error and no data.

import (
	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/protocol"
)

// anonymous is the principal of a connection that did not authenticate.
const anonymous = "User:ANONYMOUS"

// authzCache is the authorizer built from one metadata view's ACLs: a view
// with the same bindings (metadata keeps the slice of an unchanged set)
// reuses it.
type authzCache struct {
	acls []acl.Binding
	a    *acl.Authorizer
}

// authorizer returns the authorizer deciding with md's ACLs, nil when no
// authorizer is configured.
func (b *Broker) authorizer(md *cluster.Metadata) *acl.Authorizer {
	if b.cfg.AuthorizerClassName == "" {
		return nil
	}
	if c := b.authz.Load(); c != nil && sameSlice(c.acls, md.ACLs) {
		return c.a
	}
	a, bad := acl.New(acl.Config{SuperUsers: b.cfg.SuperUsers, AllowIfNoACL: b.cfg.AllowEveryoneIfNoACLFound}, md.ACLs)
	for _, bb := range bad {
		b.logger.Warn("ignoring an invalid ACL in the registry", "acl", bb.String())
	}
	b.authz.Store(&authzCache{acls: md.ACLs, a: a})
	return a
}

// sameSlice reports whether x and y are the same slice (not just equal).
func sameSlice(x, y []acl.Binding) bool {
	return len(x) == len(y) && (len(x) == 0 || &x[0] == &y[0])
}

// authorized reports whether c's principal may do op on the resource of
// type rt named name; always, with no authorizer.
func (c *conn) authorized(op acl.Operation, rt acl.ResourceType, name string) bool {
	if c.b.cfg.AuthorizerClassName == "" {
		return true
	}
	a := c.b.authorizer(c.b.cluster.Snapshot())
	ok := a.Authorize(acl.Request{Principal: c.principal, Host: c.host, Operation: op, ResourceType: rt, Name: name})
	if !ok {
		c.b.metrics.authzDenied.Inc()
	}
	return ok
}

// authorizedCluster is authorized for the cluster resource.
func (c *conn) authorizedCluster(op acl.Operation) bool {
	return c.authorized(op, acl.ResourceCluster, acl.ClusterName)
}

// authorizedClusterQuietly is authorizedCluster for a check Kafka makes
// without recording a denial, because another check follows that may
// still allow the request: a denial here is not counted.
func (c *conn) authorizedClusterQuietly(op acl.Operation) bool {
	if c.b.cfg.AuthorizerClassName == "" {
		return true
	}
	return c.b.authorizer(c.b.cluster.Snapshot()).Authorize(acl.Request{Principal: c.principal, Host: c.host,
		Operation: op, ResourceType: acl.ResourceCluster, Name: acl.ClusterName})
}

// authorizedByType reports whether c's principal may do op on some
// resource of type rt (see acl.Authorizer.AuthorizeByResourceType).
func (c *conn) authorizedByType(op acl.Operation, rt acl.ResourceType) bool {
	if c.b.cfg.AuthorizerClassName == "" {
		return true
	}
	return c.b.authorizer(c.b.cluster.Snapshot()).AuthorizeByResourceType(c.principal, c.host, op, rt)
}

// topicsAllowed returns a function reporting whether c's principal
// may do op on a topic, asking the authorizer once per name for one
// request, as Kafka checks each distinct topic of a request once.
func (c *conn) topicsAllowed(op acl.Operation) func(name string) bool {
	if c.b.cfg.AuthorizerClassName == "" {
		return func(string) bool { return true }
	}
	seen := map[string]bool{}
	return func(name string) bool {
		ok, found := seen[name]
		if !found {
			ok = c.authorized(op, acl.ResourceTopic, name)
			seen[name] = ok
		}
		return ok
	}
}

// authorizedOps is the bit field of the operations c's principal may do
// on a resource, as responses report them (every supported one with no
// authorizer).
func (c *conn) authorizedOps(rt acl.ResourceType, name string) int32 {
	return c.b.authorizer(c.b.cluster.Snapshot()).AuthorizedOperations(
		acl.Request{Principal: c.principal, Host: c.host, ResourceType: rt, Name: name})
}

// clusterAuthorizedOps is what Metadata and DescribeCluster report for
// the cluster when asked: its authorized operations, or none without
// DESCRIBE on it.
func (c *conn) clusterAuthorizedOps() int32 {
	if !c.authorizedCluster(acl.OpDescribe) {
		return 0
	}
	return c.authorizedOps(acl.ResourceCluster, acl.ClusterName)
}

// authorizationError is the error of a denied operation on a resource of
// type rt (Kafka's AclEntry.authorizationError).
func authorizationError(rt acl.ResourceType) protocol.ErrorCode {
	switch rt {
	case acl.ResourceTopic:
		return protocol.TopicAuthorizationFailed
	case acl.ResourceGroup:
		return protocol.GroupAuthorizationFailed
	case acl.ResourceTransactionalID:
		return protocol.TransactionalIDAuthorizationFailed
	case acl.ResourceDelegationToken:
		return protocol.DelegationTokenAuthorizationFailed
	}
	return protocol.ClusterAuthorizationFailed
}
