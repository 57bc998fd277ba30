package broker

// DescribeClientQuotas (key 48), versions 0-1, and
// DescribeUserScramCredentials (key 50), version 0.
//
// DescribeClientQuotas answers from this broker's view of the registry
// (AlterClientQuotas, 49_alter_client_quotas.go, writes it): every entity
// the filter matches, with its quotas. A filter component matches the
// entities that have its type with that name (match type 0), the default
// (1, a null name) or any name (2); an entity must match every component,
// and with strict set have no other part. Entities come sorted by their
// parts (type, then default before names), their values by key. Invalid
// filters get Kafka's errors: UNSUPPORTED_VERSION for an entity type other
// than user, client-id and ip; INVALID_REQUEST for one that repeats an
// entity type, mixes ip with user or client-id, or whose match string does
// not fit its match type.
//
// DescribeUserScramCredentials answers from this broker's view of the
// registry (AlterUserScramCredentials, 51_alter_user_scram_credentials.go,
// writes it): for each user its mechanisms and iteration counts, never
// the keys. No users named (null or empty) lists every user that has a
// credential, by name; a named user with none gets RESOURCE_NOT_FOUND,
// one named twice DUPLICATE_RESOURCE (the users named once first, then
// those named more often). Mechanisms come in code order.
//
// Authorization comes first, as in Kafka: DescribeClientQuotas needs
// DESCRIBE_CONFIGS on the cluster, DescribeUserScramCredentials DESCRIBE
// on it. A denied request gets CLUSTER_AUTHORIZATION_FAILED at the top,
// with no message (Kafka sends none for its default text) and no entries;
// for SCRAM also a result per user asked for, carrying the error and, as
// Kafka's error response has it, no user name.

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/protocol"
)

var (
	describeClientQuotasAPI = handler{key: 48, min: 0, max: 1, handle: (*Broker).handleDescribeClientQuotas}
	describeScramAPI        = handler{key: 50, min: 0, max: 0, handle: (*Broker).handleDescribeUserScramCredentials}
)

// Quota filter match types.
const (
	quotaMatchExact   = 0
	quotaMatchDefault = 1
	quotaMatchAny     = 2
)

func (b *Broker) handleDescribeClientQuotas(_ context.Context, c *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	if !c.authorizedCluster(acl.OpDescribeConfigs) {
		resp.ErrorCode = int16(protocol.ClusterAuthorizationFailed)
		return resp, nil
	}
	code, msg := checkQuotaFilter(req.Components)
	resp.ErrorCode, resp.ErrorMessage = int16(code), &msg
	if code != protocol.None {
		return resp, nil
	}
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	type part struct {
		typ string
		n   cluster.QuotaName
	}
	partsOf := func(e cluster.QuotaEntity) []part {
		var ps []part
		for _, p := range []part{{quotaTypeClientID, e.ClientID}, {quotaTypeIP, e.IP}, {quotaTypeUser, e.User}} {
			if p.n.Set {
				ps = append(ps, p)
			}
		}
		return ps
	}
	matches := func(ps []part) bool {
		if req.Strict && len(ps) != len(req.Components) {
			return false
		}
		for _, fc := range req.Components {
			i := slices.IndexFunc(ps, func(p part) bool { return p.typ == fc.EntityType })
			if i < 0 {
				return false
			}
			n := ps[i].n
			switch fc.MatchType {
			case quotaMatchExact:
				if n.Default || n.Name != *fc.Match {
					return false
				}
			case quotaMatchDefault:
				if !n.Default {
					return false
				}
			}
		}
		return true
	}
	for e, vals := range b.cluster.Snapshot().ClientQuotas {
		ps := partsOf(e)
		if !matches(ps) {
			continue
		}
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, p := range ps {
			x := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			x.Type = p.typ
			if !p.n.Default {
				x.Name = &p.n.Name
			}
			entry.Entity = append(entry.Entity, x)
		}
		for _, k := range slices.Sorted(maps.Keys(vals)) {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, vals[k]
			entry.Values = append(entry.Values, v)
		}
		resp.Entries = append(resp.Entries, entry)
	}
	slices.SortFunc(resp.Entries, func(x, y kmsg.DescribeClientQuotasResponseEntry) int {
		return slices.CompareFunc(x.Entity, y.Entity, func(a, b kmsg.DescribeClientQuotasResponseEntryEntity) int {
			if c := cmp.Compare(a.Type, b.Type); c != 0 {
				return c
			}
			switch {
			case a.Name == nil && b.Name == nil:
				return 0
			case a.Name == nil:
				return -1
			case b.Name == nil:
				return 1
			}
			return cmp.Compare(*a.Name, *b.Name)
		})
	})
	return resp, nil
}

// checkQuotaFilter returns the error code and message for a
// DescribeClientQuotas filter: NONE and "" when it is valid.
func checkQuotaFilter(components []kmsg.DescribeClientQuotasRequestComponent) (protocol.ErrorCode, string) {
	seen := map[string]bool{}
	for _, c := range components {
		// Kafka's order of checks: an empty type, a repeated type, an
		// unknown type, then the match.
		if c.EntityType == "" {
			return protocol.InvalidRequest, "Invalid empty entity type."
		}
		if seen[c.EntityType] {
			return protocol.InvalidRequest, fmt.Sprintf("The filter names entity type %s more than once.", c.EntityType)
		}
		switch c.EntityType {
		case "user", "client-id", "ip":
		default:
			return protocol.UnsupportedVersion, fmt.Sprintf("Entity type %q is not supported.", c.EntityType)
		}
		switch c.MatchType {
		case quotaMatchExact:
			if c.Match == nil {
				return protocol.InvalidRequest, "An exact match (match type 0) needs a match string; it is null."
			}
		case quotaMatchDefault:
			if c.Match != nil {
				return protocol.InvalidRequest, "A default match (match type 1) takes no match string."
			}
		case quotaMatchAny:
			if c.Match != nil {
				return protocol.InvalidRequest, "A match of any entity of the type (match type 2) takes no match string."
			}
		default:
			return protocol.InvalidRequest, fmt.Sprintf("Unknown match type %d.", c.MatchType)
		}
		seen[c.EntityType] = true
	}
	if seen["ip"] && (seen["user"] || seen["client-id"]) {
		return protocol.InvalidRequest, "An ip filter component cannot be combined with a user or client-id one."
	}
	return protocol.None, ""
}

func (b *Broker) handleDescribeUserScramCredentials(_ context.Context, c *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if !c.authorizedCluster(acl.OpDescribe) {
		resp.ErrorCode = int16(protocol.ClusterAuthorizationFailed)
		for range req.Users {
			res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
			res.ErrorCode = resp.ErrorCode
			resp.Results = append(resp.Results, res)
		}
		return resp, nil
	}
	empty := ""
	resp.ErrorMessage = &empty
	creds := b.cluster.Snapshot().SCRAM
	mechanisms := []cluster.ScramMechanism{cluster.ScramSHA256, cluster.ScramSHA512}
	describe := func(name string) kmsg.DescribeUserSCRAMCredentialsResponseResult {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = name
		for _, m := range mechanisms {
			if cr, ok := creds[cluster.ScramKey{User: name, Mechanism: m}]; ok {
				info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				info.Mechanism, info.Iterations = int8(m), cr.Iterations
				res.CredentialInfos = append(res.CredentialInfos, info)
			}
		}
		return res
	}
	if len(req.Users) == 0 {
		var users []string
		for k := range creds {
			users = append(users, k.User)
		}
		slices.Sort(users)
		for _, u := range slices.Compact(users) {
			resp.Results = append(resp.Results, describe(u))
		}
		return resp, nil
	}
	count := map[string]int{}
	var order []string
	for _, u := range req.Users {
		if count[u.Name]++; count[u.Name] == 1 {
			order = append(order, u.Name)
		}
	}
	// The users named once, then those named more often.
	for _, dup := range []bool{false, true} {
		for _, name := range order {
			if (count[name] > 1) != dup {
				continue
			}
			var res kmsg.DescribeUserSCRAMCredentialsResponseResult
			var msg string
			switch {
			case dup:
				res = kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
				res.User, res.ErrorCode = name, int16(protocol.DuplicateResource)
				msg = "The request names user " + name + " more than once."
			default:
				if res = describe(name); len(res.CredentialInfos) > 0 {
					resp.Results = append(resp.Results, res)
					continue
				}
				res.ErrorCode = int16(protocol.ResourceNotFound)
				msg = "User " + name + " has no SCRAM credentials."
			}
			res.ErrorMessage = &msg
			resp.Results = append(resp.Results, res)
		}
	}
	return resp, nil
}
