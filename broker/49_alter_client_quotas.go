package broker

// AlterClientQuotas (key 49), versions 0-1.
//
// Sets and removes client quotas in the registry (coordinator/cluster,
// quotas.go), where every broker's watch picks them up and enforces them
// (client_quotas.go). An entity is a user, a client id, a user and a
// client id, or an IP address; a null name is the default entity of its
// type. Checked as Kafka's controller checks them, each failure
// INVALID_REQUEST for that entity alone: an entity with no part, an
// unknown entity type, an empty name, ip combined with user or client-id,
// an ip that is neither an address nor a host name that resolves, a key
// the entity type does not take (user and client-id take
// producer_byte_rate, consumer_byte_rate, request_percentage and
// controller_mutation_rate; ip takes connection_creation_rate), a value
// not above 0, a fractional or too large value for an integer key. A
// removal is not checked: removing a key that is not set does nothing. An
// entity whose ops name one key twice, or that appears in two entries, is
// refused whole; Kafka writes the first entry of a repeated entity and
// still reports the error, Gregor writes neither.
//
// The response has one entry per distinct entity, in request order, its
// parts sorted by type. validate_only answers the same without writing.
// The changes that pass are written in one registry transaction (up to 32
// entities; more take several), so a quota is in force on this broker when
// the response leaves, and on the others once their watch delivers it.
//
// Needs ALTER_CONFIGS on the cluster; without it every entry gets
// CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"
	"fmt"
	"math"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/broker/quota"
	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/protocol"
)

var alterClientQuotasAPI = handler{key: 49, min: 0, max: 1, handle: (*Broker).handleAlterClientQuotas}

// quotaKeyType is the Kafka config type of a quota key, for its checks.
type quotaKeyType int

const (
	quotaLong quotaKeyType = iota
	quotaInt
	quotaDouble
)

var (
	userClientQuotaKeys = map[string]quotaKeyType{
		quota.ProducerByteRate:       quotaLong,
		quota.ConsumerByteRate:       quotaLong,
		quota.RequestPercentage:      quotaDouble,
		quota.ControllerMutationRate: quotaDouble,
	}
	ipQuotaKeys = map[string]quotaKeyType{quota.ConnectionCreationRate: quotaInt}
)

// Quota entity types, as on the wire.
const (
	quotaTypeUser     = "user"
	quotaTypeClientID = "client-id"
	quotaTypeIP       = "ip"
)

func (b *Broker) handleAlterClientQuotas(ctx context.Context, c *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	if !c.authorizedCluster(acl.OpAlterConfigs) {
		msg := "Cluster authorization failed."
		for _, e := range req.Entries {
			out := kmsg.NewAlterClientQuotasResponseEntry()
			out.ErrorCode, out.ErrorMessage = int16(protocol.ClusterAuthorizationFailed), &msg
			for _, en := range e.Entity {
				x := kmsg.NewAlterClientQuotasResponseEntryEntity()
				x.Type, x.Name = en.Type, en.Name
				out.Entity = append(out.Entity, x)
			}
			resp.Entries = append(resp.Entries, out)
		}
		return resp, nil
	}

	type result struct {
		parts  map[string]*string // by entity type, nil: the default
		entity cluster.QuotaEntity
		change cluster.QuotaChange
		code   protocol.ErrorCode
		msg    string
	}
	var results []*result
	byKey := map[string]*result{}
	for _, e := range req.Entries {
		// As Kafka reads the request: a type named twice in one entity
		// keeps its last name.
		parts := map[string]*string{}
		for _, en := range e.Entity {
			parts[en.Type] = en.Name
		}
		key := quotaPartsKey(parts)
		if prev := byKey[key]; prev != nil {
			prev.code, prev.msg = protocol.InvalidRequest, fmt.Sprintf("Entity %s is altered by more than one entry; not altering it.", key)
			continue
		}
		res := &result{parts: parts}
		byKey[key] = res
		results = append(results, res)
		res.entity, res.code, res.msg = checkQuotaEntity(parts)
		if res.code != protocol.None {
			continue
		}
		keys := userClientQuotaKeys
		if res.entity.IP.Set {
			keys = ipQuotaKeys
		}
		res.change = cluster.QuotaChange{Entity: res.entity, Set: map[string]float64{}}
		seen := map[string]bool{}
		for _, op := range e.Ops {
			if seen[op.Key] {
				res.code, res.msg = protocol.InvalidRequest, fmt.Sprintf("Quota key %s is named more than once; not altering %s.", op.Key, key)
				break
			}
			seen[op.Key] = true
			if op.Remove {
				res.change.Remove = append(res.change.Remove, op.Key)
				continue
			}
			if msg := checkQuotaValue(keys, op.Key, op.Value); msg != "" {
				res.code, res.msg = protocol.InvalidRequest, msg
				break
			}
			res.change.Set[op.Key] = op.Value
		}
	}

	if !req.ValidateOnly {
		var changes []cluster.QuotaChange
		for _, res := range results {
			if res.code == protocol.None {
				changes = append(changes, res.change)
			}
		}
		if len(changes) > 0 {
			if err := b.cluster.AlterClientQuotas(ctx, changes); err != nil {
				code := errorCode(err)
				for _, res := range results {
					if res.code == protocol.None {
						res.code, res.msg = code, err.Error()
					}
				}
			} else {
				// The quotas hold on this broker from its next request on.
				b.waitApplied(ctx, b.cluster.Snapshot().Revision, leaderApplyWait)
			}
		}
	}
	for _, res := range results {
		out := kmsg.NewAlterClientQuotasResponseEntry()
		out.ErrorCode = int16(res.code)
		if res.code != protocol.None {
			out.ErrorMessage = &res.msg
		}
		types := make([]string, 0, len(res.parts))
		for t := range res.parts {
			types = append(types, t)
		}
		slices.Sort(types)
		for _, t := range types {
			x := kmsg.NewAlterClientQuotasResponseEntryEntity()
			x.Type, x.Name = t, res.parts[t]
			out.Entity = append(out.Entity, x)
		}
		resp.Entries = append(resp.Entries, out)
	}
	return resp, nil
}

// quotaPartsKey writes an entity's parts as one string, for finding an
// entity named twice.
func quotaPartsKey(parts map[string]*string) string {
	var out []string
	for t, n := range parts {
		if n == nil {
			out = append(out, t+"=<default>")
		} else {
			out = append(out, t+"="+*n)
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// checkQuotaEntity turns an entity's parts into a registry entity, with
// Kafka's checks and errors.
func checkQuotaEntity(parts map[string]*string) (cluster.QuotaEntity, protocol.ErrorCode, string) {
	var e cluster.QuotaEntity
	if len(parts) == 0 {
		return e, protocol.InvalidRequest, "An entity needs at least one of user, client-id and ip."
	}
	types := make([]string, 0, len(parts))
	for t := range parts {
		types = append(types, t)
	}
	slices.Sort(types)
	for _, t := range types {
		n := parts[t]
		var qn cluster.QuotaName
		switch {
		case n == nil:
			qn = cluster.DefaultName()
		case *n == "":
			return e, protocol.InvalidRequest, fmt.Sprintf("An empty %s name is not allowed; a null name is the default %s.", t, t)
		default:
			qn = cluster.Named(*n)
		}
		switch t {
		case quotaTypeUser:
			e.User = qn
		case quotaTypeClientID:
			e.ClientID = qn
		case quotaTypeIP:
			e.IP = qn
		default:
			return e, protocol.InvalidRequest, fmt.Sprintf("Unknown quota entity type %q.", t)
		}
	}
	if e.IP.Set && (e.User.Set || e.ClientID.Set) {
		return e, protocol.InvalidRequest, "An ip entity cannot be combined with a user or client-id."
	}
	if e.IP.Set && !e.IP.Default && !validQuotaIP(e.IP.Name) {
		return e, protocol.InvalidRequest, fmt.Sprintf("%s is neither an IP address nor a host name that resolves.", e.IP.Name)
	}
	return e, protocol.None, ""
}

// validQuotaIP reports whether s is an IP address or a host name that
// resolves (within a second), as Kafka accepts it.
func validQuotaIP(s string) bool {
	if net.ParseIP(s) != nil {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupHost(ctx, s)
	return err == nil && len(addrs) > 0
}

// checkQuotaValue returns why value may not be set for key among keys, ""
// when it may.
func checkQuotaValue(keys map[string]quotaKeyType, key string, value float64) string {
	typ, ok := keys[key]
	if !ok {
		return fmt.Sprintf("Unknown quota key %s for this entity type.", key)
	}
	if !(value > 0) {
		return fmt.Sprintf("Quota %s must be above 0; %v is not.", key, value)
	}
	switch typ {
	case quotaLong:
		if value > math.MaxInt64 {
			return fmt.Sprintf("Quota %s of %v does not fit a long.", key, value)
		}
	case quotaInt:
		if value > math.MaxInt32 {
			return fmt.Sprintf("Quota %s of %v does not fit an int.", key, value)
		}
	case quotaDouble:
		return ""
	}
	if math.Abs(math.Mod(value, 1)) > 1e-6 {
		return fmt.Sprintf("Quota %s takes whole numbers; %v is not one.", key, value)
	}
	return ""
}
