package acl

import (
	"slices"
	"sort"
	"strings"
)

// Request is what an authorization is asked for: who, from where, what,
// on which resource (by its literal name).
type Request struct {
	Principal    string // "Type:name"
	Host         string // the client's address, as a string
	Operation    Operation
	ResourceType ResourceType
	Name         string
}

// Authorizer decides requests against a fixed set of bindings. It is
// immutable: a change of the bindings makes a new one (New), which the
// broker swaps in whole, so a decision never sees half a change.
type Authorizer struct {
	superUsers   map[string]bool
	allowNoACL   bool
	byType       map[ResourceType]*typeIndex
	bindingCount int
}

// typeIndex holds one resource type's bindings by how they match a name.
type typeIndex struct {
	literal  map[string][]Binding // by name, the wildcard "*" included
	prefixed []Binding            // sorted by name
}

// Config is what an Authorizer decides with besides the bindings.
type Config struct {
	// SuperUsers are principals allowed everything (super.users).
	SuperUsers []string
	// AllowIfNoACL allows a request on a resource no binding matches
	// (allow.everyone.if.no.acl.found); false denies it.
	AllowIfNoACL bool
}

// New returns an authorizer over bindings (which it copies); invalid
// bindings (see Binding.Validate) are left out and returned.
func New(cfg Config, bindings []Binding) (*Authorizer, []Binding) {
	a := &Authorizer{superUsers: map[string]bool{}, allowNoACL: cfg.AllowIfNoACL, byType: map[ResourceType]*typeIndex{}}
	for _, u := range cfg.SuperUsers {
		a.superUsers[strings.TrimSpace(u)] = true
	}
	var bad []Binding
	for _, b := range bindings {
		if b.Validate() != nil {
			bad = append(bad, b)
			continue
		}
		ix := a.byType[b.ResourceType]
		if ix == nil {
			ix = &typeIndex{literal: map[string][]Binding{}}
			a.byType[b.ResourceType] = ix
		}
		if b.PatternType == PatternLiteral {
			ix.literal[b.Name] = append(ix.literal[b.Name], b)
		} else {
			ix.prefixed = append(ix.prefixed, b)
		}
		a.bindingCount++
	}
	for _, ix := range a.byType {
		slices.SortFunc(ix.prefixed, func(x, y Binding) int { return strings.Compare(x.Name, y.Name) })
	}
	return a, bad
}

// Len is the number of bindings the authorizer holds.
func (a *Authorizer) Len() int { return a.bindingCount }

// IsSuperUser reports whether principal is one of super.users.
func (a *Authorizer) IsSuperUser(principal string) bool { return a.superUsers[principal] }

// Authorize decides one request (see the package documentation).
func (a *Authorizer) Authorize(r Request) bool {
	if a.superUsers[r.Principal] {
		return true
	}
	ix := a.byType[r.ResourceType]
	if ix == nil {
		return a.allowNoACL
	}
	var found, allowed bool
	check := func(bs []Binding) bool { // true: denied
		for _, b := range bs {
			found = true
			switch result(r, b) {
			case PermissionDeny:
				return true
			case PermissionAllow:
				allowed = true
			}
		}
		return false
	}
	if check(ix.literal[r.Name]) {
		return false
	}
	if r.Name != Wildcard && check(ix.literal[Wildcard]) {
		return false
	}
	// The prefixed bindings whose name starts r.Name: a prefix sorts at
	// or before the name, so only those up to its place are looked at.
	i := sort.Search(len(ix.prefixed), func(k int) bool { return ix.prefixed[k].Name > r.Name })
	for j := i - 1; j >= 0; j-- {
		if strings.HasPrefix(r.Name, ix.prefixed[j].Name) && check(ix.prefixed[j:j+1]) {
			return false
		}
	}
	switch {
	case allowed:
		return true
	case found:
		return false
	}
	return a.allowNoACL
}

// result is what binding b, whose pattern matches the request's resource,
// says of the request: PermissionAllow, PermissionDeny, or
// PermissionUnknown when it does not apply (another principal, host or
// operation). Only ALLOW bindings imply operations.
func result(r Request, b Binding) Permission {
	if b.Principal != r.Principal && b.Principal != WildcardPrincipal {
		return PermissionUnknown
	}
	if b.Host != Wildcard && b.Host != r.Host {
		return PermissionUnknown
	}
	if b.Operation != OpAll && b.Operation != r.Operation {
		if b.Permission != PermissionAllow {
			return PermissionUnknown
		}
		switch r.Operation {
		case OpDescribe:
			if b.Operation != OpRead && b.Operation != OpWrite && b.Operation != OpDelete && b.Operation != OpAlter {
				return PermissionUnknown
			}
		case OpDescribeConfigs:
			if b.Operation != OpAlterConfigs {
				return PermissionUnknown
			}
		default:
			return PermissionUnknown
		}
	}
	return b.Permission
}

// AuthorizeByResourceType reports whether principal from host may do op on
// some resource of type rt (Kafka's authorizeByResourceType, which
// idempotent producers without IDEMPOTENT_WRITE on the cluster go through:
// WRITE on any topic). It is allowed when a request on a resource no
// binding names would be, or when an ALLOW binding for op (or ALL) of the
// principal (or User:*) from host (or "*") is not covered by a DENY one: a
// literal "*" DENY covers everything, a literal DENY its own name, a
// prefixed DENY every name it starts. Operations are not implied here.
func (a *Authorizer) AuthorizeByResourceType(principal, host string, op Operation, rt ResourceType) bool {
	if a.Authorize(Request{Principal: principal, Host: host, Operation: op, ResourceType: rt, Name: "hardcode"}) {
		return true
	}
	ix := a.byType[rt]
	if ix == nil {
		return false
	}
	applies := func(b Binding) bool {
		return (b.Principal == principal || b.Principal == WildcardPrincipal) &&
			(b.Host == host || b.Host == Wildcard) && (b.Operation == op || b.Operation == OpAll)
	}
	denyLiteral, allowLiteral := map[string]bool{}, []string(nil)
	var denyPrefix, allowPrefix []string
	for _, bs := range ix.literal {
		for _, b := range bs {
			switch {
			case !applies(b):
			case b.Permission == PermissionDeny:
				denyLiteral[b.Name] = true
			default:
				allowLiteral = append(allowLiteral, b.Name)
			}
		}
	}
	for _, b := range ix.prefixed {
		switch {
		case !applies(b):
		case b.Permission == PermissionDeny:
			denyPrefix = append(denyPrefix, b.Name)
		default:
			allowPrefix = append(allowPrefix, b.Name)
		}
	}
	if denyLiteral[Wildcard] {
		return false
	}
	covered := func(name string) bool {
		for _, p := range denyPrefix {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
	for _, name := range allowLiteral {
		if name == Wildcard || (!denyLiteral[name] && !covered(name)) {
			return true
		}
	}
	for _, name := range allowPrefix {
		if !covered(name) {
			return true
		}
	}
	return false
}

// supportedOperations are the operations a resource type has (Kafka's
// AclEntry.supportedOperations), reported as authorized operations.
var supportedOperations = map[ResourceType][]Operation{
	ResourceTopic:           {OpRead, OpWrite, OpCreate, OpDescribe, OpDelete, OpAlter, OpDescribeConfigs, OpAlterConfigs},
	ResourceGroup:           {OpRead, OpDescribe, OpDelete, OpDescribeConfigs, OpAlterConfigs},
	ResourceCluster:         {OpCreate, OpClusterAction, OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite, OpAlter, OpDescribe},
	ResourceTransactionalID: {OpDescribe, OpWrite},
	ResourceDelegationToken: {OpDescribe},
	ResourceUser:            {OpCreateTokens, OpDescribeTokens},
}

// AuthorizedOperations returns the operations of rt's supported ones that
// the request (its Operation ignored) may do, as Kafka's bit field: bit n
// set for operation code n. A nil authorizer allows them all.
func (a *Authorizer) AuthorizedOperations(r Request) int32 {
	var bits int32
	for _, op := range supportedOperations[r.ResourceType] {
		r.Operation = op
		if a == nil || a.Authorize(r) {
			bits |= 1 << op
		}
	}
	return bits
}
