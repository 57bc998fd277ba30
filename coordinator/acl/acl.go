// Package acl holds access control lists as Kafka defines them (KIP-11,
// KIP-290's prefixed patterns) and an authorizer that decides with the
// semantics of Kafka's StandardAuthorizer:
//
//   - A binding grants (ALLOW) or refuses (DENY) one operation on the
//     resources a pattern names to one principal from one host. A pattern
//     is LITERAL (the name itself, or "*" for every resource of its type)
//     or PREFIXED (every name that starts with it).
//   - Super users may do anything. Otherwise, among the bindings whose
//     pattern matches the resource, whose principal is the request's (or
//     "User:*") and whose host is the client's address (or "*"), a DENY
//     for the operation (or for ALL) wins; else an ALLOW for it (or for
//     ALL, or, for DESCRIBE, one for READ, WRITE, DELETE or ALTER; for
//     DESCRIBE_CONFIGS, one for ALTER_CONFIGS) allows. A DENY implies
//     nothing: denying READ does not deny DESCRIBE.
//   - When no binding matches the resource at all (whoever and whatever it
//     is for), allow.everyone.if.no.acl.found decides; when some do but
//     none grants, the request is denied.
//
// The numeric values of the enums are Kafka's (they go on the wire in
// CreateAcls, DescribeAcls and DeleteAcls).
package acl

import (
	"errors"
	"fmt"
	"strings"
)

// ResourceType is the kind of resource a binding is on.
type ResourceType int8

// Kafka's resource types.
const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1 // filters only
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
	ResourceUser            ResourceType = 7
)

// PatternType says how a binding's resource name matches names.
type PatternType int8

// Kafka's pattern types.
const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1 // filters only: any pattern type, the name exactly
	PatternMatch    PatternType = 2 // filters only: the patterns that match the name
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4
)

// Operation is what a binding grants or refuses.
type Operation int8

// Kafka's operations.
const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1 // filters only
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
	OpCreateTokens    Operation = 13
	OpDescribeTokens  Operation = 14
	OpTwoPhaseCommit  Operation = 15
)

// Permission is a binding's verdict.
type Permission int8

// Kafka's permission types.
const (
	PermissionUnknown Permission = 0
	PermissionAny     Permission = 1 // filters only
	PermissionDeny    Permission = 2
	PermissionAllow   Permission = 3
)

// Wildcard is the resource name of a LITERAL binding that matches every
// resource of its type, and the host that matches every address.
const Wildcard = "*"

// WildcardPrincipal is the principal of bindings that apply to everyone.
const WildcardPrincipal = "User:*"

// ClusterName is the only name of the CLUSTER resource.
const ClusterName = "kafka-cluster"

// ErrInvalid is a binding CreateAcls refuses (INVALID_REQUEST).
var ErrInvalid = errors.New("acl: invalid binding")

// Binding is one ACL: a resource pattern and an access control entry.
type Binding struct {
	ResourceType ResourceType
	Name         string
	PatternType  PatternType
	Principal    string // "Type:name", e.g. "User:alice"
	Host         string // a client address, or "*"
	Operation    Operation
	Permission   Permission
}

func (b Binding) String() string {
	return fmt.Sprintf("(%s %s %q) %s %s from %s %s", b.PatternType, b.ResourceType, b.Name, b.Permission, b.Principal, b.Host, b.Operation)
}

// Validate checks a binding as Kafka does before it stores one: concrete
// enums, a non-empty name ("kafka-cluster" for the cluster), a principal
// of the form Type:name and a host.
func (b Binding) Validate() error {
	switch {
	case b.ResourceType < ResourceTopic || b.ResourceType > ResourceUser:
		return fmt.Errorf("%w: invalid resource type %d", ErrInvalid, b.ResourceType)
	case b.PatternType != PatternLiteral && b.PatternType != PatternPrefixed:
		return fmt.Errorf("%w: invalid pattern type %d", ErrInvalid, b.PatternType)
	case b.Operation < OpAll || b.Operation > OpTwoPhaseCommit:
		return fmt.Errorf("%w: invalid operation %d", ErrInvalid, b.Operation)
	case b.Permission != PermissionAllow && b.Permission != PermissionDeny:
		return fmt.Errorf("%w: invalid permission type %d", ErrInvalid, b.Permission)
	case b.ResourceType == ResourceCluster && b.Name != ClusterName:
		return fmt.Errorf("%w: the only valid name for the CLUSTER resource is %s", ErrInvalid, ClusterName)
	case b.Name == "":
		return fmt.Errorf("%w: invalid empty resource name", ErrInvalid)
	case b.Host == "":
		return fmt.Errorf("%w: invalid empty host", ErrInvalid)
	}
	if typ, name, ok := strings.Cut(b.Principal, ":"); !ok || typ == "" || name == "" {
		return fmt.Errorf("%w: principal %q is not Type:name", ErrInvalid, b.Principal)
	}
	return nil
}

// Filter selects bindings for DescribeAcls and DeleteAcls. Nil strings
// match anything; the enums' Any values too.
type Filter struct {
	ResourceType ResourceType
	Name         *string
	PatternType  PatternType
	Principal    *string
	Host         *string
	Operation    Operation
	Permission   Permission
}

// Validate refuses filters with an unknown value, as Kafka does
// (INVALID_REQUEST).
func (f Filter) Validate() error {
	switch {
	case f.ResourceType <= ResourceUnknown || f.ResourceType > ResourceUser:
		return fmt.Errorf("%w: filter with resource type %d", ErrInvalid, f.ResourceType)
	case f.PatternType <= PatternUnknown || f.PatternType > PatternPrefixed:
		return fmt.Errorf("%w: filter with pattern type %d", ErrInvalid, f.PatternType)
	case f.Operation <= OpUnknown || f.Operation > OpTwoPhaseCommit:
		return fmt.Errorf("%w: filter with operation %d", ErrInvalid, f.Operation)
	case f.Permission <= PermissionUnknown || f.Permission > PermissionAllow:
		return fmt.Errorf("%w: filter with permission type %d", ErrInvalid, f.Permission)
	}
	return nil
}

// Matches reports whether the filter selects b (Kafka's
// AclBindingFilter.matches).
func (f Filter) Matches(b Binding) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != b.ResourceType {
		return false
	}
	if f.PatternType != PatternAny && f.PatternType != PatternMatch && f.PatternType != b.PatternType {
		return false
	}
	if f.Name != nil {
		name := *f.Name
		switch {
		case f.PatternType == PatternAny || f.PatternType == b.PatternType:
			if name != b.Name {
				return false
			}
		case b.PatternType == PatternLiteral:
			if name != b.Name && b.Name != Wildcard {
				return false
			}
		case b.PatternType == PatternPrefixed:
			if !strings.HasPrefix(name, b.Name) {
				return false
			}
		default:
			return false
		}
	}
	switch {
	case f.Principal != nil && *f.Principal != b.Principal,
		f.Host != nil && *f.Host != b.Host,
		f.Operation != OpAny && f.Operation != b.Operation,
		f.Permission != PermissionAny && f.Permission != b.Permission:
		return false
	}
	return true
}

// The enums' names, by code.
var (
	resourceTypeNames = []string{"UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER"}
	patternTypeNames  = []string{"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"}
	operationNames    = []string{"UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE",
		"CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "CREATE_TOKENS", "DESCRIBE_TOKENS",
		"TWO_PHASE_COMMIT"}
	permissionNames = []string{"UNKNOWN", "ANY", "DENY", "ALLOW"}
)

// name returns names[v], "UNKNOWN" outside them.
func name(names []string, v int8) string {
	if v < 0 || int(v) >= len(names) {
		return "UNKNOWN"
	}
	return names[v]
}

func (t ResourceType) String() string { return name(resourceTypeNames, int8(t)) }
func (p PatternType) String() string  { return name(patternTypeNames, int8(p)) }
func (o Operation) String() string    { return name(operationNames, int8(o)) }
func (p Permission) String() string   { return name(permissionNames, int8(p)) }
