package cluster

// Client quotas in the registry, which AlterClientQuotas writes and every
// broker enforces: one key per quota entity, laid out as Kafka laid them
// out in ZooKeeper,
//
//	P/quotas/users/<user>                     {"quotas":{"producer_byte_rate":1048576}}
//	P/quotas/users/<user>/clients/<client id>  {"quotas":{...}}
//	P/quotas/clients/<client id>               {"quotas":{...}}
//	P/quotas/ips/<ip>                          {"quotas":{"connection_creation_rate":10}}
//
// with each name path-escaped, and "<default>" for the default entity of
// its type (Kafka's null name). Path escaping writes '<' and '>' as %3C
// and %3E, so no name is ever spelled "<default>". A key holds at least
// one quota: an entity whose last quota goes has its key deleted. Values
// are Kafka's doubles; the registry does not check keys or values, the
// broker does before writing.

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// QuotaName is one part of a QuotaEntity: absent, a name, or the default
// entity of its type.
type QuotaName struct {
	// Set: the entity has this part. Default: it is the default entity
	// (Kafka's null name), and Name is "".
	Set, Default bool
	Name         string
}

// Named is the part naming name.
func Named(name string) QuotaName { return QuotaName{Set: true, Name: name} }

// DefaultName is the part naming the default entity of its type.
func DefaultName() QuotaName { return QuotaName{Set: true, Default: true} }

// QuotaEntity is who client quotas apply to: a user, a client id, a user
// and a client id, or an IP address (connection_creation_rate), each a
// name or the default. It is comparable, so it keys maps.
type QuotaEntity struct {
	User, ClientID, IP QuotaName
}

// String writes e as Kafka's tools do, e.g. "user=alice, client-id=<default>".
func (e QuotaEntity) String() string {
	var parts []string
	for _, p := range []struct {
		typ string
		n   QuotaName
	}{{"user", e.User}, {"client-id", e.ClientID}, {"ip", e.IP}} {
		switch {
		case !p.n.Set:
		case p.n.Default:
			parts = append(parts, p.typ+"=<default>")
		default:
			parts = append(parts, p.typ+"="+p.n.Name)
		}
	}
	return strings.Join(parts, ", ")
}

// valid reports whether e is one of the shapes the key layout has.
func (e QuotaEntity) valid() bool {
	ok := func(n QuotaName) bool { return !n.Set || n.Default != (n.Name != "") }
	if !ok(e.User) || !ok(e.ClientID) || !ok(e.IP) {
		return false
	}
	if e.IP.Set {
		return !e.User.Set && !e.ClientID.Set
	}
	return e.User.Set || e.ClientID.Set
}

// QuotaChange alters one entity's quotas: Set gives keys their values,
// Remove takes keys away (a key not set is no error).
type QuotaChange struct {
	Entity QuotaEntity
	Set    map[string]float64
	Remove []string
}

// quotaRecord is the value of a P/quotas/... key.
type quotaRecord struct {
	Quotas map[string]float64 `json:"quotas"`
}

// quotaDefaultName is the key segment of a default entity.
const quotaDefaultName = "<default>"

// quotaTxnEntities bounds the entities of one quota transaction (two
// operations each), below etcd's default --max-txn-ops (128).
const quotaTxnEntities = 32

func (k keyspace) quotaPrefix() string { return k.root + "quotas/" }

func quotaSegment(n QuotaName) string {
	if n.Default {
		return quotaDefaultName
	}
	return url.PathEscape(n.Name)
}

// quota is e's key; e must be valid.
func (k keyspace) quota(e QuotaEntity) string {
	switch {
	case e.IP.Set:
		return k.quotaPrefix() + "ips/" + quotaSegment(e.IP)
	case e.User.Set && e.ClientID.Set:
		return k.quotaPrefix() + "users/" + quotaSegment(e.User) + "/clients/" + quotaSegment(e.ClientID)
	case e.User.Set:
		return k.quotaPrefix() + "users/" + quotaSegment(e.User)
	}
	return k.quotaPrefix() + "clients/" + quotaSegment(e.ClientID)
}

// parseQuotaName reads a key segment back; ok is false for one this
// version does not write.
func parseQuotaName(s string) (QuotaName, bool) {
	if s == quotaDefaultName {
		return DefaultName(), true
	}
	n, err := url.PathUnescape(s)
	if err != nil || n == "" || url.PathEscape(n) != s {
		return QuotaName{}, false
	}
	return Named(n), true
}

// parseQuotaKey reads an entity back from the part of its key after
// quotas/.
func parseQuotaKey(tail string) (QuotaEntity, bool) {
	parts := strings.Split(tail, "/")
	var e QuotaEntity
	var ok, ok2 bool
	switch {
	case len(parts) == 2 && parts[0] == "users":
		e.User, ok = parseQuotaName(parts[1])
		return e, ok
	case len(parts) == 4 && parts[0] == "users" && parts[2] == "clients":
		e.User, ok = parseQuotaName(parts[1])
		e.ClientID, ok2 = parseQuotaName(parts[3])
		return e, ok && ok2
	case len(parts) == 2 && parts[0] == "clients":
		e.ClientID, ok = parseQuotaName(parts[1])
		return e, ok
	case len(parts) == 2 && parts[0] == "ips":
		e.IP, ok = parseQuotaName(parts[1])
		return e, ok
	}
	return QuotaEntity{}, false
}

// AlterClientQuotas applies changes, each entity read and written with a
// compare on its key, so concurrent alterations from other brokers are
// never lost, and returns once this node's metadata shows them. Every
// entity must be valid (a user, a client id, both, or an IP, each a name
// or the default) and appear once. Up to 32 entities change in one
// transaction, all or none: a failure part way through a larger batch
// leaves the earlier transactions' changes stored.
func (c *Cluster) AlterClientQuotas(ctx context.Context, changes []QuotaChange) error {
	if err := c.checkOpen(); err != nil {
		return err
	}
	seen := map[QuotaEntity]bool{}
	for _, ch := range changes {
		if !ch.Entity.valid() || seen[ch.Entity] {
			return fmt.Errorf("alter client quotas: bad or repeated entity %q", ch.Entity)
		}
		seen[ch.Entity] = true
	}
	var lastRev int64
	for start := 0; start < len(changes); start += quotaTxnEntities {
		rev, err := c.alterQuotasTxn(ctx, changes[start:min(start+quotaTxnEntities, len(changes))])
		if err != nil {
			return fmt.Errorf("alter client quotas: %w", err)
		}
		lastRev = max(lastRev, rev)
	}
	if lastRev == 0 {
		return nil
	}
	return c.awaitVisible(ctx, lastRev)
}

// alterQuotasTxn applies changes in one compare-and-swap transaction and
// returns its revision (0 when nothing changed).
func (c *Cluster) alterQuotasTxn(ctx context.Context, changes []QuotaChange) (int64, error) {
	for range maxAttempts {
		reads := make([]clientv3.Op, len(changes))
		for i, ch := range changes {
			reads[i] = clientv3.OpGet(c.keys.quota(ch.Entity))
		}
		octx, cancel := c.opCtx(ctx)
		read, err := c.client.Txn(octx).Then(reads...).Commit() // all at one revision
		cancel()
		if err != nil {
			return 0, err
		}
		var cmps []clientv3.Cmp
		var ops []clientv3.Op
		for i, ch := range changes {
			key := c.keys.quota(ch.Entity)
			var cur quotaRecord
			var modRev int64
			if kvs := read.Responses[i].GetResponseRange().Kvs; len(kvs) > 0 {
				if err := unmarshal(kvs[0].Value, &cur); err != nil {
					return 0, fmt.Errorf("decode quota record %s: %w", key, err)
				}
				modRev = kvs[0].ModRevision
			}
			next := maps.Clone(cur.Quotas)
			if next == nil {
				next = map[string]float64{}
			}
			maps.Copy(next, ch.Set)
			for _, k := range ch.Remove {
				delete(next, k)
			}
			if maps.Equal(next, cur.Quotas) || (len(next) == 0 && modRev == 0) {
				continue
			}
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", modRev))
			if len(next) == 0 {
				ops = append(ops, clientv3.OpDelete(key))
			} else {
				ops = append(ops, clientv3.OpPut(key, encode(quotaRecord{Quotas: next})))
			}
		}
		if len(ops) == 0 {
			return 0, nil
		}
		octx, cancel = c.opCtx(ctx)
		resp, err := c.client.Txn(octx).If(cmps...).Then(ops...).Commit()
		cancel()
		if err != nil {
			return 0, err
		}
		if resp.Succeeded {
			return resp.Header.Revision, nil
		}
	}
	return 0, ErrConflict
}
