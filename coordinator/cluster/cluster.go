package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
)

// Cluster is this node's handle on the cluster metadata: an etcd client (and
// the embedded etcd member when there are no external endpoints), the
// watch-fed metadata cache, and the broker registration. All methods are safe
// for concurrent use.
type Cluster struct {
	cfg       Config
	log       *slog.Logger
	keys      keyspace
	member    *embed.Etcd // nil with external endpoints
	etcdLogs  *etcdLogs
	client    *clientv3.Client
	endpoints []string
	clusterID string
	obs       Observer // cfg.Observer, or a no-op one

	// view is the published cache. Only Open and then the watch goroutine
	// store it; readers never lock.
	view atomic.Pointer[view]

	// electedKick wakes the control loop when this node is elected.
	electedKick chan struct{}

	// ctx lives until Close, which cancels it to stop every goroutine
	// started through goAttachLocked and every session keep-alive.
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error

	mu struct {
		sync.Mutex
		closed bool          // set by Close before it waits for goroutines
		reg    *registration // nil until Register; session nil while (re)registering
		lost   chan struct{} // closed at the next session loss
		// controller is this broker's term as controller, nil when it is
		// not the controller.
		controller *controllerRole
		// shuttingDown is set by ControlledShutdown: registrations
		// made from then on carry it.
		shuttingDown bool
	}
}

// view pairs a Metadata with the channel closed when a newer one replaces it.
type view struct {
	m       *Metadata
	changed chan struct{}
}

// Open connects to the cluster metadata: it starts the embedded etcd member
// when cfg.Endpoints is empty, connects a client, creates the cluster id if
// this is a new cluster, loads the metadata cache and starts the watch that
// keeps it current. ctx bounds Open only; Close ends the rest. A nil logger
// discards.
func Open(ctx context.Context, cfg Config, logger *slog.Logger) (_ *Cluster, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Cluster{cfg: cfg, log: logger, keys: newKeyspace(cfg.Prefix), obs: cfg.Observer,
		electedKick: make(chan struct{}, 1)}
	if c.obs == nil {
		c.obs = nopObserver{}
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.mu.lost = make(chan struct{})
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()

	logs, err := etcdLogging(cfg)
	if err != nil {
		return nil, err
	}
	c.etcdLogs = logs
	c.endpoints = cfg.Endpoints
	if len(c.endpoints) == 0 {
		start := time.Now()
		if c.member, c.endpoints, err = startMember(ctx, cfg, logs, c.log); err != nil {
			return nil, err
		}
		c.log.Info("embedded etcd member ready", "dir", filepath.Join(cfg.DataDir, "etcd"),
			"client_urls", c.endpoints, "took", time.Since(start))
	}
	c.client, err = clientv3.New(clientv3.Config{
		Endpoints:   c.endpoints,
		DialTimeout: cfg.DialTimeout,
		// gRPC pings on idle connections, so that a connection to a
		// member cut off by dropped packets (no reset, no error) is closed
		// within a few seconds and the client turns to the other
		// endpoints (external etcd). 5 s is the least interval an etcd
		// server accepts by default (--grpc-keepalive-min-time).
		DialKeepAliveTime:    5 * time.Second,
		DialKeepAliveTimeout: 2 * time.Second,
		Logger:               logs.lg.Named("client"),
		// Large topics are created in one transaction; see maxRequestBytes.
		MaxCallSendMsgSize: maxRequestBytes + 1<<20,
	})
	if err != nil {
		return nil, fmt.Errorf("connect to etcd %v: %w", c.endpoints, err)
	}
	c.client.KV = observedKV{KV: c.client.KV, obs: c.obs}
	c.client.Lease = observedLease{Lease: c.client.Lease, obs: c.obs}
	if c.clusterID, err = c.ensureClusterID(ctx); err != nil {
		return nil, err
	}
	st, err := c.load(ctx)
	if err != nil {
		return nil, err
	}
	c.publish(st.last)
	c.mu.Lock()
	c.goAttachLocked(func() { c.watchLoop(st) })
	c.goAttachLocked(c.controlLoop)
	if c.member != nil {
		c.goAttachLocked(c.watchMember)
	}
	c.mu.Unlock()
	c.log.Info("cluster metadata open", "cluster_id", c.clusterID, "endpoints", c.endpoints,
		"prefix", cfg.Prefix, "revision", st.last.Revision, "topics", len(st.last.Topics),
		"brokers", len(st.last.Brokers))
	return c, nil
}

// Close leaves the cluster and releases everything, in this order:
//  1. cancel the lifetime context and wait for the goroutines (the metadata
//     watch, the registration keeper), so that nothing reacts to what follows;
//  2. revoke the registration lease, so the broker disappears from the
//     cluster at once instead of after SessionTTL (a revoke that fails, the
//     registry unreachable, is logged: the lease then expires by itself);
//  3. close the etcd client;
//  4. stop the embedded member, last, because 2 and 3 still talk to it.
//
// Close is idempotent; later calls return the first call's result.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.close() })
	return c.closeErr
}

func (c *Cluster) close() error {
	var errs []error
	c.cancel()
	c.mu.Lock()
	c.mu.closed = true // no goroutine starts after this
	c.mu.Unlock()
	c.wg.Wait()

	c.mu.Lock()
	reg := c.mu.reg
	c.mu.reg = nil
	c.mu.Unlock()
	if reg != nil && reg.session != nil {
		if err := c.revoke(reg.session); err != nil {
			// Nothing is lost: the registration goes when its lease
			// expires, as after a crash. Typically the registry lost its
			// quorum first (the brokers embedding it stopped together).
			c.log.Warn("could not revoke the broker registration lease; it expires by itself",
				"ttl", c.cfg.SessionTTL, "err", err)
		}
		c.obs.SessionUp(false)
	}
	if c.client != nil {
		if err := c.client.Close(); err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, fmt.Errorf("close etcd client: %w", err))
		}
	}
	stopped := true
	if c.member != nil {
		if stopped = stopMember(c.member, c.cfg.StopTimeout); !stopped {
			errs = append(errs, fmt.Errorf("the embedded etcd did not stop within %s; left behind (%s)",
				c.cfg.StopTimeout, c.memberCause()))
		}
	}
	if c.etcdLogs != nil && stopped {
		c.etcdLogs.close()
	}
	c.log.Info("cluster metadata closed")
	return errors.Join(errs...)
}

// watchMember logs the embedded member's serving errors and its stopping
// before Close (both fatal to it; the cache then goes stale and write
// methods fail, which is what the broker sees and reports).
func (c *Cluster) watchMember() {
	errc, stopped := c.member.Err(), c.member.Server.StopNotify()
	for {
		select {
		case err, ok := <-errc:
			if !ok {
				return
			}
			c.log.Error("embedded etcd member failed", "err", err)
		case <-stopped:
			c.log.Error("embedded etcd member stopped")
			stopped = nil
		case <-c.ctx.Done():
			return
		}
	}
}

// goAttachLocked runs f in a goroutine that Close waits for, unless Close
// has begun (then it returns false and f does not run). f must return once
// c.ctx is done. c.mu must be held: that orders the start before Close's wait.
func (c *Cluster) goAttachLocked(f func()) bool {
	if c.mu.closed {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
	return true
}

// ClusterID is the cluster's id, in Kafka's form (22 characters of unpadded
// base64url). It is created once, by the first node to open the cluster, and
// never changes.
func (c *Cluster) ClusterID() string { return c.clusterID }

// ClientURLs are the etcd endpoints this node uses. With an embedded member
// they are its actual client URLs (the port picked when the configured one
// is 0), so that other nodes or tests can connect to it.
func (c *Cluster) ClientURLs() []string { return append([]string(nil), c.endpoints...) }

// Snapshot returns the current metadata cache: an immutable view, read
// without locking. Successive calls return views of non-decreasing revision.
func (c *Cluster) Snapshot() *Metadata { return c.view.Load().m }

// Changed returns a channel that is closed when a Snapshot newer than the
// current one is published. Take the channel before reading Snapshot, so
// that no change can fall between the two.
func (c *Cluster) Changed() <-chan struct{} { return c.view.Load().changed }

// publish makes m the current Snapshot and wakes the waiters of the previous
// one. Only Open (before the watch starts) and the watch goroutine call it.
func (c *Cluster) publish(m *Metadata) {
	old := c.view.Swap(&view{m: m, changed: make(chan struct{})})
	if old != nil {
		close(old.changed)
	}
}

// opCtx bounds one etcd request by RequestTimeout and by Close.
func (c *Cluster) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	stop := context.AfterFunc(c.ctx, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// checkOpen returns ErrClosed once Close has begun.
func (c *Cluster) checkOpen() error {
	if c.ctx.Err() != nil {
		return ErrClosed
	}
	return nil
}

// ensureClusterID reads the cluster id, creating it first if this is a new
// cluster. Create-if-absent in one transaction: when several nodes start a
// new cluster at once, exactly one id wins and all of them read it.
func (c *Cluster) ensureClusterID(ctx context.Context) (string, error) {
	key := c.keys.clusterID()
	fresh := randomID().String()
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	if want := c.cfg.ExpectClusterID; want != "" {
		resp, err := c.client.Get(octx, key)
		if err != nil {
			return "", fmt.Errorf("read cluster id: %w", err)
		}
		if len(resp.Kvs) == 0 {
			where := "the etcd cluster at " + strings.Join(c.endpoints, ",")
			if c.member != nil {
				where = "the embedded etcd in " + filepath.Join(c.cfg.DataDir, "etcd")
			}
			return "", fmt.Errorf("%w: %s is empty, but the log dirs hold the logs of cluster %s. "+
				"Restore that etcd data (or point etcd.endpoints at the cluster's etcd) and start again; "+
				"to give up the logs and start a new cluster, move the log dirs' contents away",
				ErrRegistryLost, where, want)
		}
	}
	resp, err := c.client.Txn(octx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, encode(clusterIDRecord{ID: fresh}))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return "", fmt.Errorf("create cluster id: %w", err)
	}
	if resp.Succeeded {
		c.log.Info("created new cluster id", "cluster_id", fresh)
		return fresh, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	var r clusterIDRecord
	if len(kvs) == 0 {
		return "", fmt.Errorf("read cluster id %s: key vanished", key)
	}
	if err := unmarshal(kvs[0].Value, &r); err != nil {
		return "", fmt.Errorf("read cluster id %s: %w", key, err)
	}
	if r.ID == "" {
		return "", fmt.Errorf("read cluster id %s: no id in %q", key, kvs[0].Value)
	}
	return r.ID, nil
}

// maxRequestBytes and maxTxnOps raise the embedded member's limits above
// etcd's defaults (1.5 MiB, 128 ops) so that a topic with thousands of
// partitions can be created in one transaction. An external etcd needs
// --max-txn-ops of at least partitions+4 for the largest topic created.
const (
	maxRequestBytes = 8 << 20
	maxTxnOps       = 16384
)

// startMember starts the embedded single etcd member and waits until it is
// ready to serve. It returns the member and the client URLs to dial. Every
// failure says its cause (etcd's last error and the free space when etcd
// gives none of its own), and a member that will not stop is left behind
// after cfg.StopTimeout rather than hang the caller.
func startMember(ctx context.Context, cfg Config, logs *etcdLogs, logger *slog.Logger) (*embed.Etcd, []string, error) {
	ec := embed.NewConfig()
	ec.Name = cfg.memberName()
	ec.Dir = filepath.Join(cfg.DataDir, "etcd")
	curl := url.URL{Scheme: "http", Host: cfg.ClientListenAddr}
	purl := url.URL{Scheme: "http", Host: cfg.PeerListenAddr}
	apurl, acurl := cfg.advertisedURLs()
	ec.ListenClientUrls, ec.AdvertiseClientUrls = []url.URL{curl}, []url.URL{acurl}
	ec.ListenPeerUrls, ec.AdvertisePeerUrls = []url.URL{purl}, []url.URL{apurl}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	if cfg.InitialCluster != "" {
		ec.InitialCluster = cfg.InitialCluster
		// Members started with different tokens refuse each other: a
		// cluster of its own per Gregor cluster prefix.
		ec.InitialClusterToken = "gregor" + cfg.Prefix
	}
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(logs.lg)
	// Gregor talks gRPC only; the JSON gateway would be one more HTTP surface.
	ec.EnableGRPCGateway = false
	// Keep one hour of history: enough for any watcher to catch up after a
	// pause (one that cannot reloads), and the database does not grow forever.
	ec.AutoCompactionMode = embed.CompactorModePeriodic
	ec.AutoCompactionRetention = "1h"
	ec.MaxRequestBytes = maxRequestBytes
	ec.MaxTxnOps = maxTxnOps

	fail := func(err error) error {
		msg := fmt.Sprintf("start embedded etcd in %s: %v", ec.Dir, err)
		if cause := logs.last.String(); cause != "" && !strings.Contains(msg, cause) {
			msg += "; etcd's last error: " + cause
		}
		if space := memberFreeSpace(cfg.DataDir); space != "" {
			msg += " (" + space + ")"
		}
		return &memberError{msg: msg, err: err}
	}
	if err := os.MkdirAll(ec.Dir, 0o700); err != nil {
		return nil, nil, fail(err)
	}
	if err := checkMemberSpace(ec.Dir); err != nil {
		return nil, nil, err
	}
	if ok, err := checkBackend(ctx, ec.Dir); err != nil {
		return nil, nil, err
	} else if !ok {
		logger.Warn("could not check the embedded etcd's database before opening it", "dir", ec.Dir)
	}
	e, err := startEtcd(ec)
	if err != nil {
		return nil, nil, fail(err)
	}
	stop := func(err error) error {
		if !stopMember(e, cfg.StopTimeout) {
			err = fmt.Errorf("%w; it did not stop within %s and is left behind", err, cfg.StopTimeout)
		}
		return fail(err)
	}
	timer := time.NewTimer(cfg.StartTimeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		return nil, nil, stop(err)
	case <-timer.C:
		return nil, nil, stop(fmt.Errorf("not ready after %s", cfg.StartTimeout))
	case <-ctx.Done():
		return nil, nil, stop(ctx.Err())
	}
	// The client dials this member alone. A broker shares its member's
	// fate: cut off with it, the member loses its leader, the watch and
	// the session end (WithRequireLeader), and the broker is fenced, as
	// it should be. Dialling the other members as well spread requests,
	// watches and keep-alives over all of them (gRPC round robin), so that
	// in a partition the brokers of the majority had some on connections
	// to the cut-off member, which no error ends when packets are dropped:
	// their sessions lapsed and their metadata watch went silent for as
	// long as the partition lasted, and no leadership moved.
	eps := make([]string, 0, len(e.Clients))
	for _, l := range e.Clients {
		eps = append(eps, "http://"+dialable(l.Addr()))
	}
	return e, eps, nil
}

// memberError is a failed start of the embedded member: its message says
// the cause; it unwraps to what failed.
type memberError struct {
	msg string
	err error
}

func (e *memberError) Error() string { return e.msg }
func (e *memberError) Unwrap() error { return e.err }

// memberCause is etcd's last error, or "no error logged".
func (c *Cluster) memberCause() string {
	if s := c.etcdLogs.last.String(); s != "" {
		return "etcd's last error: " + s
	}
	return "etcd logged no error"
}

// dialable turns a listener address into one a local client can dial: a
// wildcard host (0.0.0.0, ::) becomes loopback.
func dialable(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok || !ta.IP.IsUnspecified() {
		return a.String()
	}
	if ta.IP.To4() != nil {
		return net.JoinHostPort("127.0.0.1", fmt.Sprint(ta.Port))
	}
	return net.JoinHostPort("::1", fmt.Sprint(ta.Port))
}
