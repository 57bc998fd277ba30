package acl

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func allow(rt ResourceType, name string, pt PatternType, principal, host string, op Operation) Binding {
	return Binding{ResourceType: rt, Name: name, PatternType: pt, Principal: principal, Host: host, Operation: op, Permission: PermissionAllow}
}

func deny(rt ResourceType, name string, pt PatternType, principal, host string, op Operation) Binding {
	b := allow(rt, name, pt, principal, host, op)
	b.Permission = PermissionDeny
	return b
}

func req(principal, host string, op Operation, rt ResourceType, name string) Request {
	return Request{Principal: principal, Host: host, Operation: op, ResourceType: rt, Name: name}
}

// TestAuthorizeKafkaSemantics: the decisions of Kafka's StandardAuthorizer
// for a small set of bindings, case by case.
func TestAuthorizeKafkaSemantics(t *testing.T) {
	bindings := []Binding{
		allow(ResourceTopic, "orders", PatternLiteral, "User:alice", "*", OpRead),
		allow(ResourceTopic, "orders", PatternLiteral, "User:bob", "10.0.0.1", OpWrite),
		allow(ResourceTopic, "secret-", PatternPrefixed, "User:alice", "*", OpAll),
		deny(ResourceTopic, "secret-", PatternPrefixed, "User:*", "*", OpRead),
		allow(ResourceTopic, "public", PatternLiteral, "User:*", "*", OpRead),
		allow(ResourceTopic, "*", PatternLiteral, "User:carol", "*", OpDescribe),
		allow(ResourceGroup, "g", PatternPrefixed, "User:alice", "*", OpRead),
		allow(ResourceCluster, ClusterName, PatternLiteral, "User:alice", "*", OpAlterConfigs),
	}
	for _, noACL := range []bool{false, true} {
		a, bad := New(Config{SuperUsers: []string{"User:admin"}, AllowIfNoACL: noACL}, bindings)
		if len(bad) != 0 || a.Len() != len(bindings) {
			t.Fatalf("bindings refused: %v", bad)
		}
		cases := []struct {
			r    Request
			want bool
		}{
			{req("User:alice", "1.2.3.4", OpRead, ResourceTopic, "orders"), true},
			{req("User:alice", "1.2.3.4", OpDescribe, ResourceTopic, "orders"), true}, // implied by READ
			{req("User:alice", "1.2.3.4", OpWrite, ResourceTopic, "orders"), false},   // the topic has ACLs, none grants
			{req("User:bob", "10.0.0.1", OpWrite, ResourceTopic, "orders"), true},
			{req("User:bob", "10.0.0.2", OpWrite, ResourceTopic, "orders"), false}, // another host
			{req("User:bob", "10.0.0.1", OpDescribe, ResourceTopic, "orders"), true},
			{req("User:dave", "1.2.3.4", OpRead, ResourceTopic, "orders"), false},
			{req("User:alice", "1.2.3.4", OpWrite, ResourceTopic, "secret-plans"), true},          // ALL
			{req("User:alice", "1.2.3.4", OpRead, ResourceTopic, "secret-plans"), false},          // DENY wins
			{req("User:alice", "1.2.3.4", OpDescribe, ResourceTopic, "secret-plans"), true},       // DENY READ implies nothing
			{req("User:alice", "1.2.3.4", OpRead, ResourceTopic, "secret"), false},                // not under the prefix, but the literal * binding gives every topic ACLs
			{req("User:dave", "1.2.3.4", OpRead, ResourceTopic, "public"), true},                  // User:*
			{req("User:carol", "1.2.3.4", OpDescribe, ResourceTopic, "anything"), true},           // literal *
			{req("User:carol", "1.2.3.4", OpRead, ResourceTopic, "anything"), false},              // * makes every topic have ACLs
			{req("User:alice", "1.2.3.4", OpRead, ResourceGroup, "g1"), true},                     // prefixed group
			{req("User:alice", "1.2.3.4", OpDescribe, ResourceGroup, "g1"), true},                 // implied
			{req("User:alice", "1.2.3.4", OpDelete, ResourceGroup, "g1"), false},                  // has ACLs
			{req("User:alice", "1.2.3.4", OpRead, ResourceGroup, "other"), noACL},                 // none
			{req("User:alice", "1.2.3.4", OpDescribeConfigs, ResourceCluster, ClusterName), true}, // implied by ALTER_CONFIGS
			{req("User:alice", "1.2.3.4", OpDescribe, ResourceCluster, ClusterName), false},       // ALTER_CONFIGS does not imply DESCRIBE
			{req("User:admin", "1.2.3.4", OpRead, ResourceTopic, "secret-plans"), true},           // super user
			{req("User:alice", "1.2.3.4", OpWrite, ResourceTransactionalID, "tx"), noACL},         // no binding of the type
		}
		for _, c := range cases {
			if got := a.Authorize(c.r); got != c.want {
				t.Errorf("allow.everyone.if.no.acl.found=%v: %+v: %v, want %v", noACL, c.r, got, c.want)
			}
		}
	}
}

func TestBindingValidate(t *testing.T) {
	good := allow(ResourceTopic, "t", PatternLiteral, "User:a", "*", OpRead)
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(*Binding){
		"resource any":      func(b *Binding) { b.ResourceType = ResourceAny },
		"pattern match":     func(b *Binding) { b.PatternType = PatternMatch },
		"operation any":     func(b *Binding) { b.Operation = OpAny },
		"permission any":    func(b *Binding) { b.Permission = PermissionAny },
		"empty name":        func(b *Binding) { b.Name = "" },
		"cluster name":      func(b *Binding) { b.ResourceType = ResourceCluster },
		"principal no type": func(b *Binding) { b.Principal = "alice" },
		"principal empty":   func(b *Binding) { b.Principal = "User:" },
		"empty host":        func(b *Binding) { b.Host = "" },
	} {
		b := good
		mutate(&b)
		if err := b.Validate(); err == nil {
			t.Errorf("%s: %v accepted", name, b)
		}
	}
}

// TestFilterMatches: Kafka's filter semantics for DescribeAcls and
// DeleteAcls, MATCH and ANY pattern types included.
func TestFilterMatches(t *testing.T) {
	lit := allow(ResourceTopic, "secret-x", PatternLiteral, "User:a", "*", OpRead)
	star := allow(ResourceTopic, "*", PatternLiteral, "User:a", "*", OpRead)
	pre := allow(ResourceTopic, "secret-", PatternPrefixed, "User:a", "*", OpRead)
	other := allow(ResourceTopic, "public", PatternLiteral, "User:b", "h", OpWrite)
	group := allow(ResourceGroup, "secret-x", PatternLiteral, "User:a", "*", OpRead)
	str := func(s string) *string { return &s }
	all := Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny}
	cases := []struct {
		name string
		f    func(f *Filter)
		want []bool // lit, star, pre, other, group
	}{
		{"everything", func(*Filter) {}, []bool{true, true, true, true, true}},
		{"match secret-x", func(f *Filter) { f.ResourceType, f.PatternType, f.Name = ResourceTopic, PatternMatch, str("secret-x") },
			[]bool{true, true, true, false, false}},
		{"any secret-x", func(f *Filter) { f.PatternType, f.Name = PatternAny, str("secret-x") }, []bool{true, false, false, false, true}},
		{"prefixed secret-", func(f *Filter) { f.PatternType, f.Name = PatternPrefixed, str("secret-") }, []bool{false, false, true, false, false}},
		{"literal only", func(f *Filter) { f.PatternType = PatternLiteral }, []bool{true, true, false, true, true}},
		{"principal b", func(f *Filter) { f.Principal = str("User:b") }, []bool{false, false, false, true, false}},
		{"host h write", func(f *Filter) { f.Host, f.Operation = str("h"), OpWrite }, []bool{false, false, false, true, false}},
		{"deny", func(f *Filter) { f.Permission = PermissionDeny }, []bool{false, false, false, false, false}},
	}
	for _, c := range cases {
		f := all
		c.f(&f)
		for i, b := range []Binding{lit, star, pre, other, group} {
			if got := f.Matches(b); got != c.want[i] {
				t.Errorf("%s: %v: %v, want %v", c.name, b, got, c.want[i])
			}
		}
	}
	if err := (Filter{ResourceType: ResourceUnknown, PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny}).Validate(); err == nil {
		t.Error("a filter with an unknown resource type was accepted")
	}
}

// TestAuthorizeAgainstScan: the indexed authorizer decides as a scan of
// every binding with the same rules does, over random bindings and
// requests.
func TestAuthorizeAgainstScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"a", "ab", "abc", "b", "ba", "*", "x"}
	principals := []string{"User:p", "User:q", WildcardPrincipal}
	ops := []Operation{OpAll, OpRead, OpWrite, OpDescribe, OpAlter, OpAlterConfigs, OpDescribeConfigs, OpDelete}
	for round := range 300 {
		var bs []Binding
		for range rng.IntN(8) {
			b := Binding{ResourceType: ResourceTopic + ResourceType(rng.IntN(2)), Name: names[rng.IntN(len(names))],
				PatternType: PatternLiteral + PatternType(rng.IntN(2)), Principal: principals[rng.IntN(len(principals))],
				Host: []string{"*", "h1", "h2"}[rng.IntN(3)], Operation: ops[rng.IntN(len(ops))],
				Permission: PermissionDeny + Permission(rng.IntN(2))}
			bs = append(bs, b)
		}
		noACL := rng.IntN(2) == 0
		a, _ := New(Config{AllowIfNoACL: noACL}, bs)
		for range 20 {
			r := Request{Principal: principals[rng.IntN(2)], Host: []string{"h1", "h2"}[rng.IntN(2)],
				Operation: ops[1+rng.IntN(len(ops)-1)], ResourceType: ResourceTopic + ResourceType(rng.IntN(2)),
				Name: names[rng.IntN(len(names)-2)] + []string{"", "z"}[rng.IntN(2)]}
			if got, want := a.Authorize(r), scan(bs, r, noACL); got != want {
				t.Fatalf("round %d: %+v with %v: %v, scan says %v", round, r, bs, got, want)
			}
		}
	}
}

func scan(bs []Binding, r Request, noACL bool) bool {
	found, allowed := false, false
	for _, b := range bs {
		if b.ResourceType != r.ResourceType {
			continue
		}
		matches := b.Name == r.Name || (b.PatternType == PatternLiteral && b.Name == Wildcard) ||
			(b.PatternType == PatternPrefixed && strings.HasPrefix(r.Name, b.Name))
		if b.PatternType == PatternLiteral && b.Name != Wildcard && b.Name != r.Name {
			matches = false
		}
		if !matches {
			continue
		}
		found = true
		switch result(r, b) {
		case PermissionDeny:
			return false
		case PermissionAllow:
			allowed = true
		}
	}
	if allowed {
		return true
	}
	return !found && noACL
}
