package cluster

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gregor-io/gregor/coordinator/acl"
)

// TestACLs: bindings are stored one key each (twice is once), seen by
// another node's metadata, and deleted by filters that report what they
// matched; names with "/" and any character survive the key.
func TestACLs(t *testing.T) {
	t.Parallel()
	a := open(t, embeddedConfig(t.TempDir(), 1))
	b := open(t, externalConfig(a, 2))
	ctx := testCtx(t)
	bind := func(name string, pt acl.PatternType, principal string, op acl.Operation, perm acl.Permission) acl.Binding {
		return acl.Binding{ResourceType: acl.ResourceTopic, Name: name, PatternType: pt, Principal: principal, Host: "*",
			Operation: op, Permission: perm}
	}
	bs := []acl.Binding{
		bind("orders", acl.PatternLiteral, "User:alice", acl.OpRead, acl.PermissionAllow),
		bind("orders", acl.PatternLiteral, "User:alice", acl.OpRead, acl.PermissionAllow), // again
		bind("secret-", acl.PatternPrefixed, "User:*", acl.OpRead, acl.PermissionDeny),
		bind("we/ird %2F näme", acl.PatternLiteral, "User:bob/x", acl.OpWrite, acl.PermissionAllow),
		{ResourceType: acl.ResourceCluster, Name: acl.ClusterName, PatternType: acl.PatternLiteral, Principal: "User:alice",
			Host: "10.0.0.1", Operation: acl.OpAlter, Permission: acl.PermissionAllow},
	}
	if err := a.CreateACLs(ctx, bs); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateACLs(ctx, []acl.Binding{bind("", acl.PatternLiteral, "User:a", acl.OpRead, acl.PermissionAllow)}); err == nil {
		t.Fatal("an invalid binding was stored")
	}
	sorted := func(bs []acl.Binding) string {
		var s []string
		for _, b := range bs {
			s = append(s, b.String())
		}
		slices.Sort(s)
		return strings.Join(slices.Compact(s), "\n")
	}
	want := sorted(bs)
	eventually(t, func() string {
		if got := sorted(b.Snapshot().ACLs); got != want {
			return fmt.Sprintf("node 2 sees ACLs\n%s\nwant\n%s", got, want)
		}
		return ""
	})
	if n := len(b.Snapshot().ACLs); n != 4 {
		t.Fatalf("%d bindings stored, want 4 (one created twice)", n)
	}

	str := func(s string) *string { return &s }
	all := acl.Filter{ResourceType: acl.ResourceAny, PatternType: acl.PatternAny, Operation: acl.OpAny, Permission: acl.PermissionAny}
	matchSecret := all
	matchSecret.ResourceType, matchSecret.PatternType, matchSecret.Name = acl.ResourceTopic, acl.PatternMatch, str("secret-x")
	alice := all
	alice.Principal = str("User:alice")
	got, err := b.DeleteACLs(ctx, []acl.Filter{matchSecret, alice})
	if err != nil {
		t.Fatal(err)
	}
	if len(got[0]) != 1 || got[0][0] != bs[2] || len(got[1]) != 2 {
		t.Fatalf("deleted %v / %v", got[0], got[1])
	}
	eventually(t, func() string {
		if got := sorted(a.Snapshot().ACLs); got != sorted(bs[3:4]) {
			return "node 1 sees ACLs " + got
		}
		return ""
	})
}

// TestParseACLKey: a key round-trips; keys this version does not write
// are not bindings.
func TestParseACLKey(t *testing.T) {
	k := newKeyspace("/p")
	b := acl.Binding{ResourceType: acl.ResourceGroup, Name: "a/b c", PatternType: acl.PatternPrefixed, Principal: "User:x",
		Host: "::1", Operation: acl.OpDescribe, Permission: acl.PermissionDeny}
	if pk := k.parse(k.acl(b)); pk.kind != kindACL || pk.acl != b {
		t.Fatalf("parsed %+v", pk)
	}
	for _, bad := range []string{"acls/3/4/a/User:x/*/8", "acls/3/4/a/User:x/*/8/2/9", "acls/03/4/a/User:x/*/8/2",
		"acls/3/2/a/User:x/*/8/2", "acls/3/4//User:x/*/8/2", "acls/3/4/a/x/*/8/2", "acls/3/4/a%zz/User:x/*/8/2"} {
		if pk := k.parse("/p/" + bad); pk.kind == kindACL {
			t.Errorf("%s parsed as %v", bad, pk.acl)
		}
	}
}
