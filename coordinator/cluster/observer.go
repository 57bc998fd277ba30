package cluster

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Observer receives the registry events the broker turns into metrics. This
// package does not depend on a metrics library; whoever opens the Cluster
// implements Observer with one (the broker uses Prometheus). Calls come from
// any goroutine, concurrently, so implementations must be safe for
// concurrent use and cheap.
type Observer interface {
	// EtcdRequest reports one unary etcd request this node made: its
	// operation (one of the Op* constants), how long the round trip took,
	// and its error, nil on success. Watches and lease keep-alive streams
	// are not requests and are not reported.
	EtcdRequest(op string, d time.Duration, err error)
	// SessionUp reports the state of the broker registration's session:
	// true once Register (or the background re-registration) has created
	// the registration, false when its session is lost or Close revokes it.
	SessionUp(up bool)
	// ActiveController reports this broker's controller role: true when it
	// is elected, false when its term ends.
	ActiveController(active bool)
}

// The operations EtcdRequest reports.
const (
	OpGet        = "get"
	OpPut        = "put"
	OpDelete     = "delete"
	OpCompact    = "compact"
	OpDo         = "do"
	OpTxn        = "txn"
	OpGrant      = "lease_grant"
	OpRevoke     = "lease_revoke"
	OpTimeToLive = "lease_time_to_live"
	OpLeases     = "lease_leases"
	OpKeepOnce   = "lease_keepalive_once"
)

// nopObserver is the Observer of a Cluster configured without one.
type nopObserver struct{}

func (nopObserver) EtcdRequest(string, time.Duration, error) {}
func (nopObserver) SessionUp(bool)                           {}
func (nopObserver) ActiveController(bool)                    {}

// observe times one request for obs.
func observe[T any](obs Observer, op string, f func() (T, error)) (T, error) {
	start := time.Now()
	resp, err := f()
	obs.EtcdRequest(op, time.Since(start), err)
	return resp, err
}

// observedKV reports every unary KV request to an Observer. It replaces the
// client's KV (as etcd's namespace package does), so every call site in
// this package is covered without wrapping each one.
type observedKV struct {
	clientv3.KV
	obs Observer
}

func (kv observedKV) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	return observe(kv.obs, OpPut, func() (*clientv3.PutResponse, error) { return kv.KV.Put(ctx, key, val, opts...) })
}

func (kv observedKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	return observe(kv.obs, OpGet, func() (*clientv3.GetResponse, error) { return kv.KV.Get(ctx, key, opts...) })
}

func (kv observedKV) Delete(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	return observe(kv.obs, OpDelete, func() (*clientv3.DeleteResponse, error) { return kv.KV.Delete(ctx, key, opts...) })
}

func (kv observedKV) Compact(ctx context.Context, rev int64, opts ...clientv3.CompactOption) (*clientv3.CompactResponse, error) {
	return observe(kv.obs, OpCompact, func() (*clientv3.CompactResponse, error) { return kv.KV.Compact(ctx, rev, opts...) })
}

func (kv observedKV) Do(ctx context.Context, op clientv3.Op) (clientv3.OpResponse, error) {
	return observe(kv.obs, OpDo, func() (clientv3.OpResponse, error) { return kv.KV.Do(ctx, op) })
}

func (kv observedKV) Txn(ctx context.Context) clientv3.Txn {
	return observedTxn{Txn: kv.KV.Txn(ctx), obs: kv.obs}
}

// observedTxn times a transaction's Commit, the one call that talks to etcd.
type observedTxn struct {
	clientv3.Txn
	obs Observer
}

func (t observedTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	return observedTxn{Txn: t.Txn.If(cs...), obs: t.obs}
}

func (t observedTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	return observedTxn{Txn: t.Txn.Then(ops...), obs: t.obs}
}

func (t observedTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	return observedTxn{Txn: t.Txn.Else(ops...), obs: t.obs}
}

func (t observedTxn) Commit() (*clientv3.TxnResponse, error) {
	return observe(t.obs, OpTxn, t.Txn.Commit)
}

// observedLease reports the unary lease requests; KeepAlive, a stream the
// session runs, passes through.
type observedLease struct {
	clientv3.Lease
	obs Observer
}

func (l observedLease) Grant(ctx context.Context, ttl int64) (*clientv3.LeaseGrantResponse, error) {
	return observe(l.obs, OpGrant, func() (*clientv3.LeaseGrantResponse, error) { return l.Lease.Grant(ctx, ttl) })
}

func (l observedLease) Revoke(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseRevokeResponse, error) {
	return observe(l.obs, OpRevoke, func() (*clientv3.LeaseRevokeResponse, error) { return l.Lease.Revoke(ctx, id) })
}

func (l observedLease) TimeToLive(ctx context.Context, id clientv3.LeaseID, opts ...clientv3.LeaseOption) (*clientv3.LeaseTimeToLiveResponse, error) {
	return observe(l.obs, OpTimeToLive, func() (*clientv3.LeaseTimeToLiveResponse, error) { return l.Lease.TimeToLive(ctx, id, opts...) })
}

func (l observedLease) Leases(ctx context.Context) (*clientv3.LeaseLeasesResponse, error) {
	return observe(l.obs, OpLeases, func() (*clientv3.LeaseLeasesResponse, error) { return l.Lease.Leases(ctx) })
}

func (l observedLease) KeepAliveOnce(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	return observe(l.obs, OpKeepOnce, func() (*clientv3.LeaseKeepAliveResponse, error) { return l.Lease.KeepAliveOnce(ctx, id) })
}
