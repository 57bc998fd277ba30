// Package broker serves the Kafka protocol: it wires the storage, the
// cluster registry and the protocol layer together, and holds one file per
// API key (NN_name.go) with the handler for that API and the versions it
// serves. ApiVersions is built from those handlers, so nothing is
// advertised that is not served.
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/broker/configs"
	"github.com/gregor-io/gregor/broker/quota"
	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/replication"
	"github.com/gregor-io/gregor/storage"
)

// handlers lists every API the broker serves.
var handlers = []handler{
	produceAPI,
	fetchAPI,
	listOffsetsAPI,
	metadataAPI,
	apiVersionsAPI,
	createTopicsAPI,
	deleteTopicsAPI,
	deleteRecordsAPI,
	initProducerIDAPI,
	addPartitionsToTxnAPI,
	addOffsetsToTxnAPI,
	endTxnAPI,
	writeTxnMarkersAPI,
	describeProducersAPI,
	describeTransactionsAPI,
	listTransactionsAPI,
	offsetForLeaderEpochAPI,
	createPartitionsAPI,
	electLeadersAPI,
	alterPartitionReassignmentsAPI,
	listPartitionReassignmentsAPI,
	describeClusterAPI,
	unregisterBrokerAPI,
	findCoordinatorAPI,
	joinGroupAPI,
	syncGroupAPI,
	heartbeatAPI,
	leaveGroupAPI,
	offsetCommitAPI,
	offsetFetchAPI,
	describeGroupsAPI,
	listGroupsAPI,
	deleteGroupsAPI,
	offsetDeleteAPI,
	txnOffsetCommitAPI,
	consumerGroupHeartbeatAPI,
	consumerGroupDescribeAPI,
	shareGroupHeartbeatAPI,
	shareGroupDescribeAPI,
	shareFetchAPI,
	shareAcknowledgeAPI,
	describeShareGroupOffsetsAPI,
	alterShareGroupOffsetsAPI,
	deleteShareGroupOffsetsAPI,
	describeConfigsAPI,
	describeLogDirsAPI,
	alterReplicaLogDirsAPI,
	alterConfigsAPI,
	incrementalAlterConfigsAPI,
	describeTopicPartitionsAPI,
	describeAclsAPI,
	createAclsAPI,
	deleteAclsAPI,
	describeClientQuotasAPI,
	alterClientQuotasAPI,
	describeScramAPI,
	alterScramAPI,
	updateFeaturesAPI,
	saslHandshakeAPI,
	saslAuthenticateAPI,
}

// Broker is one Gregor broker.
//
// Start order: admin HTTP (so /healthz and /metrics answer during a long
// recovery, and /readyz says 503), storage (recovery), cluster registry
// (embedded etcd when no endpoints), local partitions from the metadata,
// Kafka listeners, registration; then the broker is ready. Close first
// marks it not ready, then stops listeners and connections, so no request
// runs against a closing log; then the admin server, the registration and
// the registry; the logs last, which writes the clean-shutdown marker.
type Broker struct {
	cfg Config
	// authLogSecond is when a failed SASL authentication was last logged,
	// in Unix seconds (sasl_conn.go logs one a second at most).
	authLogSecond atomic.Int64
	// rangeLogSecond is when a consumer fetch out of range was last
	// logged, likewise.
	rangeLogSecond atomic.Int64
	logger         *slog.Logger // the "broker" component's (see loggers.go)
	// logBase is the handler every component logs to; logLevels their
	// levels (BROKER_LOGGER configs).
	logBase   slog.Handler
	logLevels *logLevels

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	apis *protocol.Registry
	// internalAPIs are the versions of internalHandlers, served and not
	// advertised.
	internalAPIs *protocol.Registry
	handlers     map[int16]*handler
	sessions     *fetchSessions
	metrics      *metrics
	// apiMetrics are the request metrics by API key, resolved at New.
	apiMetrics map[int16]*apiMetrics
	groups     *groupDrivers
	txns       *txnDrivers
	// shares are the share partitions this broker leads and their
	// sessions; shareCoords its share coordinators.
	shares      *shareManager
	shareCoords *shareCoordDrivers
	verifier    txnVerifier

	logs    *storage.Manager
	cluster *cluster.Cluster
	// authz is the authorizer of the ACLs last seen (authz.go).
	authz atomic.Pointer[authzCache]

	syncMu sync.Mutex // serialises syncPartitions
	parts  atomic.Pointer[partitionTable]
	// applied is the revision of the metadata syncPartitions last applied;
	// appliedCh is closed (and replaced) whenever it moves.
	applied struct {
		sync.Mutex
		rev int64
		ch  chan struct{}
	}
	// followers are the replica fetchers, by leader (replica_fetcher.go).
	followers replicaFetchers
	// pauseFetchers holds every replica fetcher between fetches, and
	// fetchesInFlight counts the fetches sent and not yet applied: tests
	// use them to let a leader take records its followers do not have.
	pauseFetchers   atomic.Bool
	fetchesInFlight atomic.Int32
	// produceRace, set by tests only, is called during a produce between
	// the leadership lookup and the append (appended false) and after the
	// append: tests move the partition's leadership there.
	produceRace atomic.Pointer[func(p *partition, appended bool)]
	// testPrincipal, set by tests only, names the principal of a
	// connection by its client id, as authentication will.
	testPrincipal atomic.Pointer[func(clientID string) string]
	// replQuotas are the replication throttles (replication_quota.go).
	replQuotas replicationQuotas
	// clientQuotas enforce the client quotas (client_quotas.go).
	clientQuotas clientQuotas
	// connRates are the connection creation rates (conn_rates.go).
	connRates *connRates
	// alterLogDirsRate is replica.alter.log.dirs.io.max.bytes.per.second;
	// dirMoves the moves between log dirs running (log_dir_moves.go).
	alterLogDirsRate atomic.Int64
	dirMoves         struct {
		sync.Mutex
		running map[storage.TopicPartition]bool
		pace    pacer
	}

	producerIDs struct {
		sync.Mutex
		next, end int64
		fetching  bool // producerIDNow is taking a block in the background
	}

	// quotas and slots are the connection and request limits (limits.go).
	quotas *connQuotas
	slots  requestSlots

	// lis is the checked listener settings; listeners are bound in its
	// order, so listeners[i] serves lis.listeners[i].
	lis       listenerSetup
	listeners []net.Listener
	admin     *http.Server
	adminLn   net.Listener
	// starting is set during Start's first sync of the logs with the
	// metadata (see syncPartitions).
	starting atomic.Bool
	// ready is set once Start has completed and cleared when Close begins;
	// /readyz reports it.
	ready atomic.Bool

	conns struct {
		sync.Mutex
		m      map[*conn]struct{}
		closed bool
	}
}

// New checks cfg and builds a broker; Start starts it.
func New(cfg Config) (*Broker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	lis, err := cfg.resolveListeners()
	if err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	b := &Broker{cfg: cfg, apis: &protocol.Registry{}, handlers: map[int16]*handler{},
		sessions: newFetchSessions(1000), metrics: newMetrics(cfg.Registerer),
		logBase: logger.Handler(), logLevels: newLogLevels(logger.Handler()), lis: lis}
	b.logger = b.loggerFor("broker")
	for _, lt := range lis.tls {
		lt.logger, lt.expiry = b.loggerFor("network"), b.metrics.tlsCertExpiry.WithLabelValues(lt.name)
		lt.expiry.Set(float64(lt.cur.Load().cert.Leaf.NotAfter.Unix()))
	}
	b.apiMetrics = map[int16]*apiMetrics{}
	for i := range handlers {
		h := &handlers[i]
		b.apis.Register(h.key, h.min, h.max)
		b.handlers[h.key] = h
		b.apiMetrics[h.key] = b.metrics.forAPI(h.key, h.min, h.max)
	}
	b.internalAPIs = &protocol.Registry{}
	for i := range internalHandlers {
		h := &internalHandlers[i]
		b.internalAPIs.Register(h.key, h.min, h.max)
		b.handlers[h.key] = h
		b.apiMetrics[h.key] = b.metrics.forAPI(h.key, h.min, h.max)
	}
	quotas, err := newConnQuotas(cfg)
	if err != nil {
		return nil, err
	}
	b.quotas, b.slots = quotas, make(requestSlots, cfg.QueuedMaxRequests)
	b.replQuotas = newReplicationQuotas(cfg.Registerer, int(cfg.ReplicationQuotaWindowNum), cfg.ReplicationQuotaWindowSize)
	b.clientQuotas = newClientQuotas(cfg.Registerer, quota.Config{Samples: int(cfg.QuotaWindowNum), Window: cfg.QuotaWindowSize,
		MutationSamples: int(cfg.ControllerQuotaWindowNum), MutationWindow: cfg.ControllerQuotaWindowSize})
	b.connRates = newConnRates(cfg.Registerer, cfg, b.listenerNames(), lis.protected)
	b.alterLogDirsRate.Store(configs.Unthrottled)
	b.groups = newGroupDrivers(b)
	b.txns = newTxnDrivers(b)
	b.shares = newShareManager(b)
	b.shareCoords = newShareCoordDrivers(b)
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(newGroupLagCollector(b), newLogCollector(b))
	}
	b.parts.Store(&partitionTable{byName: map[string][]*partition{}, names: map[cluster.TopicID]string{}})
	b.conns.m = map[*conn]struct{}{}
	return b, nil
}

// Start opens the logs and the registry and starts serving. On error,
// whatever was started is stopped again.
func (b *Broker) Start(ctx context.Context) (err error) {
	b.ctx, b.cancel = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			b.Close()
		}
	}()
	if b.cfg.AdminListener != "" {
		if err := b.startAdmin(); err != nil {
			return err
		}
	}
	mcfg := storage.DefaultManagerConfig(b.cfg.LogDirs...)
	mcfg.Logger = b.loggerFor("storage")
	mcfg.RetentionCheckInterval = b.cfg.LogRetentionCheckInterval
	mcfg.CleanerEnable = b.cfg.LogCleanerEnable
	mcfg.CleanerBackoff = b.cfg.LogCleanerBackoff
	mcfg.CleanerDedupeBufferSize = b.cfg.LogCleanerDedupeBufferSize
	mcfg.WritebackBytes = b.cfg.LogWritebackBytes
	reporting := storage.FreePageReporting("/")
	mcfg.PageCacheKeepBytes, mcfg.PrefaultBytes = pageCacheSettings(b.cfg.LogPageCacheKeepBytes, b.cfg.LogPrefaultBytes, reporting)
	b.logger.Info("page cache", "log.pagecache.keep.bytes", mcfg.PageCacheKeepBytes, "log.prefault.bytes", mcfg.PrefaultBytes,
		"free_page_reporting", reporting)
	mcfg.Observer = b.metrics
	logs, err := storage.OpenManager(mcfg)
	if err != nil {
		return fmt.Errorf("open logs: %w", err)
	}
	b.logs = logs

	ccfg := cluster.DefaultConfig()
	ccfg.Endpoints = b.cfg.EtcdEndpoints
	ccfg.DataDir = b.cfg.LogDirs[0]
	ccfg.ClientListenAddr, ccfg.PeerListenAddr = b.cfg.EtcdClientAddr, b.cfg.EtcdPeerAddr
	ccfg.InitialCluster = b.cfg.EtcdInitialCluster
	ccfg.NodeID = b.cfg.NodeID
	ccfg.SessionTTL = b.cfg.SessionTimeout
	ccfg.UncleanLeaderElection = strings.EqualFold(strings.TrimSpace(b.cfg.StaticTopicDefaults["unclean.leader.election.enable"]), "true")
	if b.cfg.AutoLeaderRebalanceEnable {
		ccfg.LeaderRebalanceInterval = b.cfg.LeaderImbalanceCheckInterval
	}
	ccfg.Observer = b.metrics
	// The log dirs' stamps (meta.properties) say which cluster and node
	// their logs belong to: a registry that lost its cluster, or another
	// node.id, is refused before any metadata is applied to the logs.
	if ccfg.ExpectClusterID, err = logs.ClusterIDOnDisk(); err != nil {
		return err
	}
	if err := logs.CheckNodeID(b.cfg.NodeID); err != nil {
		return err
	}
	cl, err := cluster.Open(ctx, ccfg, b.loggerFor("cluster"))
	if err != nil {
		return fmt.Errorf("open cluster registry: %w", err)
	}
	b.cluster = cl
	if err := logs.Stamp(cl.ClusterID(), b.cfg.NodeID); err != nil {
		return err
	}

	// Logs the registry does not know at start-up are kept as strays, not
	// deleted: only a deletion this broker sees happen removes a log.
	b.starting.Store(true)
	err = b.syncPartitions(cl.Snapshot())
	b.starting.Store(false)
	if err != nil {
		return err
	}
	b.resumeLogDirMoves()
	for _, l := range b.lis.listeners {
		ln, err := net.Listen("tcp", net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port))))
		if err != nil {
			return fmt.Errorf("listen %s://%s: %w", l.Name, net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port))), err)
		}
		b.listeners = append(b.listeners, ln)
		b.goTracked(func() { b.serve(ln, l.Name) })
	}
	if err := b.register(ctx); err != nil {
		return err
	}
	b.goTracked(b.watchMetadata)
	b.goTracked(b.watchReplicaLag)
	b.ready.Store(true)
	b.logger.Info("broker started", "node_id", b.cfg.NodeID, "listeners", b.Addrs(), "cluster_id", cl.ClusterID(),
		"log_dirs", b.cfg.LogDirs)
	if replication.UnsafeHighWatermark {
		b.logger.Error("built with chaos_unsafe_hw: high watermarks ignore followers and acknowledged records will be lost; a fault-harness build, never for data")
	}
	return nil
}

// register registers the broker in the cluster. A broker restarted after a
// crash finds its previous registration still held by a lease that has not
// expired yet. The registration names its owner, this host and the first
// log dir, which the storage manager holds locked: a registration with the
// same owner was left by a previous run of this broker and is taken over at
// once. Held by another owner (a second broker configured with this node
// id, or this one moved to another host or dir), it retries until that
// lease lapses (at most the session timeout) or ctx ends.
func (b *Broker) register(ctx context.Context) error {
	info := cluster.BrokerInfo{NodeID: b.cfg.NodeID, Rack: b.rack(), Owner: b.owner(), Endpoints: b.endpoints()}
	for _, e := range info.Endpoints {
		if e.Listener == b.lis.interBroker {
			info.Host, info.Port = e.Host, e.Port
		}
	}
	for waited := false; ; waited = true {
		err := b.cluster.Register(ctx, info)
		if !errors.Is(err, cluster.ErrNodeIDInUse) {
			if err != nil {
				return fmt.Errorf("register broker: %w", err)
			}
			return nil
		}
		if !waited {
			b.logger.Info("waiting for the previous registration of this node id to expire", "err", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("register broker: %w", err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// owner identifies this broker's process for cluster.BrokerInfo.Owner: the
// host name and the absolute path of the first log dir, which only one
// running process can hold (storage locks it). Empty, which turns takeover
// off, if either is unknown.
func (b *Broker) owner() string {
	hostname, err := os.Hostname()
	if err != nil || hostname == "" {
		return ""
	}
	dir, err := filepath.Abs(b.cfg.LogDirs[0])
	if err != nil {
		return ""
	}
	return hostname + ":" + dir
}

// endpoints returns the endpoint each listener advertises, in the
// listeners' order: its advertised.listeners entry, else its own address.
// Port 0 stands for the port the listener bound, and an unspecified host
// for localhost.
func (b *Broker) endpoints() []cluster.Endpoint {
	out := make([]cluster.Endpoint, 0, len(b.lis.listeners))
	for i, bound := range b.lis.listeners {
		l, ok := b.lis.advertised[bound.Name]
		if !ok {
			l = bound
		}
		if l.Port == 0 && i < len(b.listeners) {
			l.Port = int32(b.listeners[i].Addr().(*net.TCPAddr).Port)
		}
		if l.Host == "" || l.Host == "0.0.0.0" || l.Host == "::" {
			l.Host = "localhost"
		}
		out = append(out, cluster.Endpoint{Listener: l.Name, Host: l.Host, Port: l.Port, SecurityProtocol: b.lis.protocols[l.Name]})
	}
	return out
}

func (b *Broker) rack() *string {
	if b.cfg.Rack == "" {
		return nil
	}
	r := b.cfg.Rack
	return &r
}

// Addrs returns the bound Kafka listener addresses.
func (b *Broker) Addrs() []string {
	out := make([]string, len(b.listeners))
	for i, ln := range b.listeners {
		out[i] = ln.Addr().String()
	}
	return out
}

// Ready reports whether Start has completed and Close has not begun: the
// listeners are bound, the metadata is applied and every local log is
// recovered. The admin server's /readyz answers 200 exactly then.
func (b *Broker) Ready() bool { return b.ready.Load() }

// AdminAddr returns the bound admin HTTP address, or "".
func (b *Broker) AdminAddr() string {
	if b.adminLn == nil {
		return ""
	}
	return b.adminLn.Addr().String()
}

// ClusterID returns the cluster id.
func (b *Broker) ClusterID() string { return b.cluster.ClusterID() }

// watchMetadata keeps the local partitions in line with the registry. It
// takes the change channel before it reads the view it applies, so that a
// view published while it applies the previous one is applied next, not
// left until some later change.
func (b *Broker) watchMetadata() {
	for {
		ch := b.cluster.Changed()
		md := b.cluster.Snapshot()
		if rev, _ := b.appliedRevision(); md.Revision > rev {
			start := time.Now()
			if err := b.syncPartitions(md); err != nil {
				b.logger.Error("applying metadata failed", "err", err)
			}
			if took := time.Since(start); took > slowSync {
				// Until it is applied, partitions this broker now leads
				// wait in lookupLeader or answer NOT_LEADER_OR_FOLLOWER.
				b.logger.Warn("applying metadata was slow", "took", took, "revision", md.Revision)
			}
		}
		select {
		case <-b.ctx.Done():
			return
		case <-ch:
		}
	}
}

// slowSync is how long applying a metadata change may take before it is
// logged.
const slowSync = 200 * time.Millisecond

func (b *Broker) startAdmin() error {
	ln, err := net.Listen("tcp", b.cfg.AdminListener)
	if err != nil {
		return fmt.Errorf("listen admin %s: %w", b.cfg.AdminListener, err)
	}
	b.adminLn = ln
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := b.notReady(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	})
	if b.cfg.Gatherer != nil {
		mux.Handle("/metrics", promhttp.HandlerFor(b.cfg.Gatherer, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	}
	b.admin = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	b.goTracked(func() {
		if err := b.admin.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			b.logger.Error("admin server failed", "err", err)
		}
	})
	return nil
}

// goTracked starts a goroutine that Close waits for.
func (b *Broker) goTracked(fn func()) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		fn()
	}()
}

// trackConn adds or removes an open connection; adding fails once the
// broker is closing.
func (b *Broker) trackConn(c *conn, add bool) bool {
	b.conns.Lock()
	defer b.conns.Unlock()
	if !add {
		delete(b.conns.m, c)
		return true
	}
	if b.conns.closed {
		return false
	}
	b.conns.m[c] = struct{}{}
	return true
}

// Close shuts the broker down in the order the type's comment states.
func (b *Broker) Close() error {
	b.ready.Store(false)
	if b.cancel == nil {
		return nil
	}
	b.controlledShutdown()
	b.cancel()
	for _, ln := range b.listeners {
		ln.Close()
	}
	b.conns.Lock()
	b.conns.closed = true
	for c := range b.conns.m {
		c.close()
	}
	b.conns.Unlock()
	if b.admin != nil {
		b.admin.Close()
	}
	b.groups.stopAll()
	b.txns.stopAll()
	b.shareCoords.stopAll()
	b.shares.state.close()
	b.shares.dropAll()
	b.verifier.close()
	b.wg.Wait()
	var errs []error
	if b.cluster != nil {
		errs = append(errs, b.cluster.Close())
	}
	if b.logs != nil {
		errs = append(errs, b.logs.Close())
	}
	return errors.Join(errs...)
}

// controlledShutdown has the controller move this broker's leaderships to
// other in-sync replicas while it still serves, so that clients find the
// new leaders at once instead of after the session timeout; it waits at
// most the session timeout, after which the leaderships would move anyway.
func (b *Broker) controlledShutdown() {
	if !b.cfg.ControlledShutdownEnable || b.cluster == nil || !b.cluster.Registered() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.SessionTimeout)
	defer cancel()
	if err := b.cluster.ControlledShutdown(ctx); err != nil {
		b.logger.Warn("controlled shutdown incomplete; stopping anyway", "err", err)
	}
}

// nextProducerID hands out a producer id from the block this broker holds,
// taking a new block from the registry when it runs out.
func (b *Broker) nextProducerID(ctx context.Context) (int64, error) {
	b.producerIDs.Lock()
	defer b.producerIDs.Unlock()
	if b.producerIDs.next >= b.producerIDs.end {
		first, count, err := b.cluster.AllocateProducerIDs(ctx)
		if err != nil {
			return 0, err
		}
		b.producerIDs.next, b.producerIDs.end = first, first+count
	}
	id := b.producerIDs.next
	b.producerIDs.next++
	return id, nil
}

// apiVersionsResponse lists the served API ranges.
func (b *Broker) apiVersionsResponse() *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	b.apis.AppendAPIVersions(resp)
	addFeatures(resp)
	return resp
}
