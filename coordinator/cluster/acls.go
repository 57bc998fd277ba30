package cluster

// ACLs in the registry, which every broker's authorizer reads (broker/authz.go):
// one key per binding, the binding spelled out in the key so that a
// create is a put of the same key (creating an ACL twice keeps one) and a
// delete is a delete of exactly the keys a filter matched.
//
//	P/acls/<resource type>/<pattern type>/<name>/<principal>/<host>/<operation>/<permission>  {}
//
// The enums are Kafka's numeric codes; name, principal and host are
// path-escaped (a name may hold any character, "/" included).

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gregor-io/gregor/coordinator/acl"
)

// aclTxnOps bounds the operations of one ACL transaction, below etcd's
// default --max-txn-ops (128) so that an external etcd needs no setting.
const aclTxnOps = 64

func (k keyspace) aclPrefix() string { return k.root + "acls/" }

func (k keyspace) acl(b acl.Binding) string {
	return k.aclPrefix() + strconv.Itoa(int(b.ResourceType)) + "/" + strconv.Itoa(int(b.PatternType)) + "/" +
		url.PathEscape(b.Name) + "/" + url.PathEscape(b.Principal) + "/" + url.PathEscape(b.Host) + "/" +
		strconv.Itoa(int(b.Operation)) + "/" + strconv.Itoa(int(b.Permission))
}

// parseACL reads a binding back from the part of its key after acls/; ok
// is false for a key this version does not write (or a binding that does
// not validate).
func parseACL(tail string) (acl.Binding, bool) {
	parts := strings.Split(tail, "/")
	if len(parts) != 7 {
		return acl.Binding{}, false
	}
	var codes [4]int8
	for i, p := range []string{parts[0], parts[1], parts[5], parts[6]} {
		v, err := strconv.ParseInt(p, 10, 8)
		if err != nil || strconv.FormatInt(v, 10) != p {
			return acl.Binding{}, false
		}
		codes[i] = int8(v)
	}
	var strs [3]string
	for i, p := range parts[2:5] {
		s, err := url.PathUnescape(p)
		if err != nil {
			return acl.Binding{}, false
		}
		strs[i] = s
	}
	b := acl.Binding{ResourceType: acl.ResourceType(codes[0]), PatternType: acl.PatternType(codes[1]),
		Name: strs[0], Principal: strs[1], Host: strs[2], Operation: acl.Operation(codes[2]), Permission: acl.Permission(codes[3])}
	if b.Validate() != nil {
		return acl.Binding{}, false
	}
	return b, true
}

// CreateACLs stores bindings, each of which must validate
// (acl.Binding.Validate); one already stored stays as it is. Up to 64
// bindings go in one transaction: a failure part way leaves the earlier
// transactions' bindings stored.
func (c *Cluster) CreateACLs(ctx context.Context, bindings []acl.Binding) error {
	if err := c.checkOpen(); err != nil {
		return err
	}
	for _, b := range bindings {
		if err := b.Validate(); err != nil {
			return err
		}
	}
	for chunk := range slices.Chunk(bindings, aclTxnOps) {
		ops := make([]clientv3.Op, 0, len(chunk))
		seen := map[string]bool{}
		for _, b := range chunk {
			if k := c.keys.acl(b); !seen[k] {
				seen[k] = true
				ops = append(ops, clientv3.OpPut(k, "{}"))
			}
		}
		octx, cancel := c.opCtx(ctx)
		_, err := c.client.Txn(octx).Then(ops...).Commit()
		cancel()
		if err != nil {
			return fmt.Errorf("create ACLs: %w", err)
		}
	}
	return nil
}

// DeleteACLs deletes the bindings each filter matches and returns them, by
// filter (a binding two filters match is reported by both, as Kafka does).
// Two requests deleting the same binding at once may both report it.
func (c *Cluster) DeleteACLs(ctx context.Context, filters []acl.Filter) ([][]acl.Binding, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	octx, cancel := c.opCtx(ctx)
	resp, err := c.client.Get(octx, c.keys.aclPrefix(), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	cancel()
	if err != nil {
		return nil, fmt.Errorf("read ACLs: %w", err)
	}
	out := make([][]acl.Binding, len(filters))
	var del []string
	picked := map[string]bool{}
	for _, kv := range resp.Kvs {
		key := string(kv.Key)
		b, ok := parseACL(strings.TrimPrefix(key, c.keys.aclPrefix()))
		if !ok {
			continue
		}
		for i, f := range filters {
			if f.Matches(b) {
				out[i] = append(out[i], b)
				if !picked[key] {
					picked[key] = true
					del = append(del, key)
				}
			}
		}
	}
	for chunk := range slices.Chunk(del, aclTxnOps) {
		ops := make([]clientv3.Op, 0, len(chunk))
		for _, k := range chunk {
			ops = append(ops, clientv3.OpDelete(k))
		}
		octx, cancel := c.opCtx(ctx)
		_, err := c.client.Txn(octx).Then(ops...).Commit()
		cancel()
		if err != nil {
			return nil, fmt.Errorf("delete ACLs: %w", err)
		}
	}
	return out, nil
}
