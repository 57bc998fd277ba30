package broker

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/protocol"
)

// startAuthzBroker starts a broker with the StandardAuthorizer and super
// user User:admin, on which a connection's principal is "User:" and its
// client id (authentication stands in for it in these tests).
func startAuthzBroker(t *testing.T, mutate ...func(*Config)) *Broker {
	t.Helper()
	b := startBroker(t, append([]func(*Config){func(c *Config) {
		c.AuthorizerClassName = StandardAuthorizer
		c.SuperUsers = []string{"User:admin"}
	}}, mutate...)...)
	byClientID := func(id string) string { return "User:" + id }
	b.testPrincipal.Store(&byClientID)
	return b
}

// dialWireAs connects to b as user (its client id).
func dialWireAs(t *testing.T, b *Broker, user string) *wireConn {
	t.Helper()
	w := dialWire(t, b)
	w.fmt = kmsg.NewRequestFormatter(kmsg.FormatterClientID(user))
	return w
}

// clientAs is a franz-go client of b acting as user.
func clientAs(t *testing.T, b *Broker, user string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return newClient(t, b, append([]kgo.Opt{kgo.ClientID(user)}, opts...)...)
}

// allow is an ALLOW binding of a literal resource for principal from any
// host.
func allow(rt acl.ResourceType, name, principal string, op acl.Operation) acl.Binding {
	return acl.Binding{ResourceType: rt, Name: name, PatternType: acl.PatternLiteral, Principal: principal,
		Host: acl.Wildcard, Operation: op, Permission: acl.PermissionAllow}
}

// createACLs creates bindings through w, which must be allowed to.
func (w *wireConn) createACLs(bindings ...acl.Binding) {
	w.t.Helper()
	req := kmsg.NewPtrCreateACLsRequest()
	req.SetVersion(3)
	for _, bd := range bindings {
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName = kmsg.ACLResourceType(bd.ResourceType), bd.Name
		cr.ResourcePatternType = kmsg.ACLResourcePatternType(bd.PatternType)
		cr.Principal, cr.Host = bd.Principal, bd.Host
		cr.Operation, cr.PermissionType = kmsg.ACLOperation(bd.Operation), kmsg.ACLPermissionType(bd.Permission)
		req.Creations = append(req.Creations, cr)
	}
	resp := w.mustRoundTrip(req).(*kmsg.CreateACLsResponse)
	for i, r := range resp.Results {
		if r.ErrorCode != 0 {
			w.t.Fatalf("create %s: %s", bindings[i], protocol.ErrorCode(r.ErrorCode))
		}
	}
}

// TestACLAPIs: with the authorizer on, ACLs are created, described and
// deleted by a principal allowed to (a super user, then one granted ALTER
// and DESCRIBE on the cluster), refused with CLUSTER_AUTHORIZATION_FAILED
// for one that is not, and invalid bindings get INVALID_REQUEST.
func TestACLAPIs(t *testing.T) {
	t.Parallel()
	b := startAuthzBroker(t)
	admin, alice, bob := dialWireAs(t, b, "admin"), dialWireAs(t, b, "alice"), dialWireAs(t, b, "bob")

	describe := func(w *wireConn) *kmsg.DescribeACLsResponse {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.SetVersion(3)
		req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		return w.mustRoundTrip(req).(*kmsg.DescribeACLsResponse)
	}
	checkCode(t, "bob describes", describe(bob).ErrorCode, protocol.ClusterAuthorizationFailed)
	if got := describe(admin); got.ErrorCode != 0 || len(got.Resources) != 0 {
		t.Fatalf("admin describes a fresh cluster: %s, %d resources", protocol.ErrorCode(got.ErrorCode), len(got.Resources))
	}
	admin.createACLs(allow(acl.ResourceCluster, acl.ClusterName, "User:alice", acl.OpAlter),
		allow(acl.ResourceTopic, "orders", "User:bob", acl.OpRead),
		acl.Binding{ResourceType: acl.ResourceTopic, Name: "orders-", PatternType: acl.PatternPrefixed, Principal: "User:bob",
			Host: "10.0.0.1", Operation: acl.OpWrite, Permission: acl.PermissionDeny})
	// ALTER implies DESCRIBE: alice may describe, and create.
	got := describe(alice)
	if got.ErrorCode != 0 || len(got.Resources) != 3 {
		t.Fatalf("alice describes: %s, %d resources, want 3", protocol.ErrorCode(got.ErrorCode), len(got.Resources))
	}
	alice.createACLs(allow(acl.ResourceGroup, "g", "User:bob", acl.OpRead))

	bad := kmsg.NewPtrCreateACLsRequest()
	bad.SetVersion(3)
	for _, c := range []struct {
		rt   kmsg.ACLResourceType
		name string
		pt   kmsg.ACLResourcePatternType
		who  string
	}{
		{kmsg.ACLResourceTypeCluster, "other", kmsg.ACLResourcePatternTypeLiteral, "User:bob"},
		{kmsg.ACLResourceTypeTopic, "", kmsg.ACLResourcePatternTypeLiteral, "User:bob"},
		{kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeMatch, "User:bob"},
		{kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral, "bob"},
	} {
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType, cr.Principal = c.rt, c.name, c.pt, c.who
		cr.Host, cr.Operation, cr.PermissionType = "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		bad.Creations = append(bad.Creations, cr)
	}
	for i, r := range alice.mustRoundTrip(bad).(*kmsg.CreateACLsResponse).Results {
		checkCode(t, fmt.Sprintf("invalid creation %d", i), r.ErrorCode, protocol.InvalidRequest)
	}
	bobCreate := kmsg.NewPtrCreateACLsRequest()
	bobCreate.SetVersion(3)
	bobCreate.Creations = bad.Creations[:1]
	checkCode(t, "bob creates", bob.mustRoundTrip(bobCreate).(*kmsg.CreateACLsResponse).Results[0].ErrorCode,
		protocol.ClusterAuthorizationFailed)

	// A MATCH filter finds the literal and prefixed bindings that apply to
	// topic orders-eu; deleting by it removes just those.
	del := kmsg.NewPtrDeleteACLsRequest()
	del.SetVersion(3)
	f := kmsg.NewDeleteACLsRequestFilter()
	name := "orders-eu"
	f.ResourceType, f.ResourceName, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, &name, kmsg.ACLResourcePatternTypeMatch
	f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	del.Filters = append(del.Filters, f)
	checkCode(t, "bob deletes", bob.mustRoundTrip(del).(*kmsg.DeleteACLsResponse).Results[0].ErrorCode, protocol.ClusterAuthorizationFailed)
	res := admin.mustRoundTrip(del).(*kmsg.DeleteACLsResponse).Results[0]
	if res.ErrorCode != 0 || len(res.MatchingACLs) != 1 || res.MatchingACLs[0].ResourceName != "orders-" || res.MatchingACLs[0].Host != "10.0.0.1" {
		t.Fatalf("delete by MATCH orders-eu: %s, %+v", protocol.ErrorCode(res.ErrorCode), res.MatchingACLs)
	}
	if got := describe(admin); len(got.Resources) != 3 {
		t.Fatalf("%d resources after the delete, want 3 (cluster, orders, group g)", len(got.Resources))
	}
}
