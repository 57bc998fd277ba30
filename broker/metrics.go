package broker

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/coordinator/share"
	"github.com/gregor-io/gregor/protocol"
)

// metrics are the broker's request, connection, topic and storage metrics,
// registered through the Registerer the broker is given, never globally.
// With a nil Registerer they are still counted (the counters exist), just
// not exported. README.md's "Metrics" section lists them all.
//
// Nothing on a request's path formats a label or hashes one: per-API
// metrics are resolved at New (forAPI), per-topic ones when the broker
// opens a partition (forTopic), per-listener ones when a listener starts,
// error-code counters the first time a code is seen.
type metrics struct {
	requests    *prometheus.CounterVec
	failures    *prometheus.CounterVec
	errorCodes  *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	queueTime   *prometheus.HistogramVec
	localTime   *prometheus.HistogramVec
	fetchWait   prometheus.Histogram
	produceWait prometheus.Histogram
	connections prometheus.Gauge
	connCreated *prometheus.CounterVec
	connClosed  *prometheus.CounterVec

	bytesIn   *prometheus.CounterVec
	recordsIn *prometheus.CounterVec
	bytesOut  *prometheus.CounterVec

	fsync       prometheus.Histogram
	groupCommit prometheus.Histogram
	syncRecords prometheus.Histogram

	etcdLatency *prometheus.HistogramVec
	etcdErrors  *prometheus.CounterVec
	etcdOps     map[string]etcdOpMetrics // resolved at newMetrics; read only after
	sessionUp   prometheus.Gauge
	// activeController is 1 while this broker is the elected controller.
	activeController prometheus.Gauge

	// isrShrinks and isrExpands count members leaving and joining the
	// ISRs of partitions this broker leads.
	isrShrinks prometheus.Counter
	isrExpands prometheus.Counter
	// authentications counts SASL authentications by listener, mechanism
	// and outcome (authenticated, reauthenticated, failed).
	authentications *prometheus.CounterVec
	// tlsHandshakes counts TLS handshakes on SSL listeners by result;
	// tlsCertExpiry is each SSL listener's certificate's notAfter (tls.go).
	tlsHandshakes *prometheus.CounterVec
	tlsCertExpiry *prometheus.GaugeVec
	// authzDenied counts operations the authorizer denied.
	authzDenied prometheus.Counter
	// reassignBytesIn counts the bytes this broker's replica fetchers
	// appended to partitions a reassignment is adding it to.
	reassignBytesIn prometheus.Counter
	// logDirMoves and logDirMoveBytes are the moves between log dirs
	// under way and the bytes they copied (log_dir_moves.go).
	logDirMoves     prometheus.Gauge
	logDirMoveBytes prometheus.Counter

	// The transaction coordinators' (txn_drivers.go, txn_markers.go).
	txnOngoing       prometheus.Gauge
	txnCommits       prometheus.Counter
	txnAborts        prometheus.Counter
	txnTimeoutAborts prometheus.Counter
	txnMarkerErrors  *prometheus.CounterVec

	// The share partitions' (share_partitions.go): records by delivery
	// event (resolved per share.Event), writes of their state, and the
	// share partitions and sessions held (read at scrape through
	// shareCounts, set once the share manager exists).
	shareRecords     *prometheus.CounterVec
	shareEvents      [share.EventArchived + 1]prometheus.Counter
	shareWrites      prometheus.Histogram
	shareWriteErrors prometheus.Counter
	shareGauges      []prometheus.Collector
	shareCounts      atomic.Pointer[func() (parts, sessions int)]
}

// etcdOpMetrics are one etcd operation's series.
type etcdOpMetrics struct {
	latency prometheus.Observer
	errors  prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	topic := []string{"topic"}
	latencyBuckets := prometheus.ExponentialBuckets(0.0001, 2, 18) // 100µs to about 13s
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gregor_requests_total",
			Help: "Requests handled, by API and version.",
		}, []string{"api", "version"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gregor_request_failures_total",
			Help: "Requests that closed their connection instead of getting a response, by API.",
		}, []string{"api"}),
		errorCodes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gregor_request_errors_total",
			Help: "Non-zero Kafka error codes in responses, by API and numeric code: Produce and Fetch per partition, other APIs their top-level code.",
		}, []string{"api", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gregor_request_duration_seconds",
			Help:    "Total time of a request, by API: from its frame being read off the socket to its response being queued for the connection's writer (or to its handler returning, when there is no response); includes queue time and parked waits.",
			Buckets: latencyBuckets,
		}, []string{"api"}),
		queueTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gregor_request_queue_seconds",
			Help:    "Time from a request's frame being read off the socket to its handler starting, by API: the wait for a queued.max.requests slot.",
			Buckets: latencyBuckets,
		}, []string{"api"}),
		localTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gregor_request_local_seconds",
			Help:    "Time a request's handler ran, by API, decoding included and parked waits (fetch long poll, produce durability wait, group coordinator wait) excluded.",
			Buckets: latencyBuckets,
		}, []string{"api"}),
		fetchWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gregor_fetch_wait_seconds",
			Help:    "Time a Fetch long poll waited for min_bytes before answering; every Fetch is observed, 0 when it answered at once.",
			Buckets: append([]float64{0}, prometheus.ExponentialBuckets(0.001, 2, 16)...),
		}),
		produceWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gregor_produce_wait_seconds",
			Help:    "Time an acks=1 or acks=all Produce waited, after appending, for its batches to be durable (the fsync that acknowledges them); produces that needed no wait are not observed.",
			Buckets: latencyBuckets,
		}),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gregor_connections_open",
			Help: "Client connections open.",
		}),
		connCreated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gregor_connections_created_total",
			Help: "Client connections accepted and admitted, by listener.",
		}, []string{"listener"}),
		authentications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gregor_sasl_authentications_total",
			Help: "SASL authentications on SASL listeners, by listener, mechanism and result: authenticated, reauthenticated (KIP-368) or failed (the connection is closed).",
		}, []string{"listener", "mechanism", "result"}),
		tlsHandshakes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gregor_tls_handshakes_total",
			Help: "TLS handshakes on SSL listeners, by listener and result: ok, or failed (the connection is closed).",
		}, []string{"listener", "result"}),
		tlsCertExpiry: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gregor_tls_certificate_expiry_timestamp_seconds",
			Help: "When the certificate an SSL listener presents expires (its notAfter), in Unix seconds, by listener.",
		}, []string{"listener"}),
		connClosed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gregor_connections_closed_total",
			Help: "Client connections closed, by listener.",
		}, []string{"listener"}),
		bytesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gregor_topic_bytes_in_total",
			Help: "Record batch bytes appended by Produce, after validation, by topic.",
		}, topic),
		recordsIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gregor_topic_records_in_total",
			Help: "Records appended by Produce, after validation, by topic.",
		}, topic),
		bytesOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gregor_topic_bytes_out_total",
			Help: "Record batch bytes sent in Fetch responses, to consumers and followers, by topic.",
		}, topic),
		fsync: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gregor_storage_fsync_duration_seconds",
			Help:    "Duration of one fdatasync of a segment file.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 18),
		}),
		groupCommit: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gregor_storage_group_commit_logs",
			Help:    "Logs fsynced together in one group-commit round.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 12),
		}),
		syncRecords: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gregor_storage_sync_records",
			Help:    "Records one log's sync made durable: the appends one fsync served.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 16),
		}),
		etcdLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gregor_etcd_request_duration_seconds",
			Help:    "Round trip of the cluster registry's unary etcd requests (txn, get, lease_grant, ...), by operation, failed ones included; watches and keep-alive streams are not requests.",
			Buckets: prometheus.ExponentialBuckets(0.0002, 2, 16),
		}, []string{"op"}),
		etcdErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gregor_etcd_request_errors_total",
			Help: "The cluster registry's etcd requests that failed, by operation.",
		}, []string{"op"}),
		sessionUp: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gregor_etcd_session_up",
			Help: "1 while the broker's registration (its etcd lease session) is alive, 0 before it registers, while it re-registers after losing it, and after shutdown.",
		}),
		activeController: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gregor_controller_active",
			Help: "1 while this broker is the cluster's elected controller, else 0; summed over the brokers it is 1 in a healthy cluster.",
		}),
		isrShrinks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gregor_isr_shrinks_total",
			Help: "Replicas that left the ISR of a partition this broker leads (behind for replica.lag.time.max.ms, or dead).",
		}),
		isrExpands: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gregor_isr_expands_total",
			Help: "Replicas that joined the ISR of a partition this broker leads (caught up).",
		}),
		authzDenied: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gregor_authorizer_denied_total",
			Help: "Operations on a resource the authorizer denied (a request may ask for several).",
		}),
		reassignBytesIn: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gregor_reassignment_bytes_in_total",
			Help: "Record batch bytes this broker fetched as a follower into partitions a reassignment is adding it to (Kafka's ReassignmentBytesInPerSec).",
		}),
		logDirMoves: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gregor_log_dir_moves",
			Help: "Replicas moving between this broker's log dirs (AlterReplicaLogDirs): their future log copying or about to be put in place.",
		}),
		logDirMoveBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gregor_log_dir_move_bytes_total",
			Help: "Record batch bytes copied into future logs by moves between this broker's log dirs (throttled by replica.alter.log.dirs.io.max.bytes.per.second).",
		}),
		txnOngoing: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gregor_txn_ongoing",
			Help: "Transactions in progress (Ongoing, PrepareCommit or PrepareAbort) at the transaction coordinators this broker runs.",
		}),
		txnCommits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gregor_txn_commits_total",
			Help: "Transactions this broker's coordinators completed with a commit (every marker written, CompleteCommit durable).",
		}),
		txnAborts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gregor_txn_aborts_total",
			Help: "Transactions this broker's coordinators completed with an abort (CompleteAbort durable), timed out and fenced ones included.",
		}),
		txnTimeoutAborts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gregor_txn_timeout_aborts_total",
			Help: "Transactions this broker's coordinators began to abort because they ran past their transaction timeout.",
		}),
		txnMarkerErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gregor_txn_marker_errors_total",
			Help: "Transaction markers a partition leader answered with an error, by numeric Kafka error code; code -1 counts WriteTxnMarkers requests that got no answer (connection or decoding failures).",
		}, []string{"code"}),
	}
	m.shareRecords = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gregor_share_records_total",
		Help: "Share group records by delivery event on the share partitions this broker leads: acquired, accepted, released, rejected (acknowledged so), lock_expired, member_released (their member's share session closed), archived (at the delivery count limit).",
	}, []string{"event"})
	for e := share.EventAcquired; e <= share.EventArchived; e++ {
		m.shareEvents[e] = m.shareRecords.WithLabelValues(e.String())
	}
	m.shareWrites = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "gregor_share_state_write_seconds",
		Help:    "Time to make a share partition's new state durable at its share coordinator (WriteShareGroupState, in process or to another broker), which an acknowledgement's answer waits for; failed writes included.",
		Buckets: latencyBuckets,
	})
	m.shareWriteErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gregor_share_state_write_errors_total",
		Help: "Share partition state writes that failed; the partition is loaded again on next use and the acknowledgement fails.",
	})
	counts := func() (int, int) {
		if f := m.shareCounts.Load(); f != nil {
			return (*f)()
		}
		return 0, 0
	}
	m.shareGauges = []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "gregor_share_partitions",
			Help: "Share partitions (a share group's state on a partition this broker leads) held in memory.",
		}, func() float64 { p, _ := counts(); return float64(p) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "gregor_share_sessions",
			Help: "Open share sessions (ShareFetch sessions of share group members) on this broker.",
		}, func() float64 { _, s := counts(); return float64(s) }),
	}
	m.etcdOps = map[string]etcdOpMetrics{}
	for _, op := range []string{cluster.OpGet, cluster.OpPut, cluster.OpDelete, cluster.OpCompact, cluster.OpDo, cluster.OpTxn,
		cluster.OpGrant, cluster.OpRevoke, cluster.OpTimeToLive, cluster.OpLeases, cluster.OpKeepOnce} {
		m.etcdOps[op] = etcdOpMetrics{latency: m.etcdLatency.WithLabelValues(op), errors: m.etcdErrors.WithLabelValues(op)}
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.failures, m.errorCodes, m.latency, m.queueTime, m.localTime, m.fetchWait, m.produceWait, m.connections, m.connCreated, m.connClosed, m.authentications, m.tlsHandshakes, m.tlsCertExpiry,
			m.bytesIn, m.recordsIn, m.bytesOut, m.fsync, m.groupCommit, m.syncRecords, m.etcdLatency, m.etcdErrors, m.sessionUp, m.activeController,
			m.isrShrinks, m.isrExpands, m.authzDenied, m.reassignBytesIn, m.logDirMoves, m.logDirMoveBytes, m.txnOngoing, m.txnCommits, m.txnAborts, m.txnTimeoutAborts, m.txnMarkerErrors,
			m.shareRecords, m.shareWrites, m.shareWriteErrors)
		reg.MustRegister(m.shareGauges...)
	}
	return m
}

// txnMarkerError counts a marker error (code -1: a request without an
// answer).
func (m *metrics) txnMarkerError(code protocol.ErrorCode) {
	m.txnMarkerErrors.WithLabelValues(strconv.Itoa(int(code))).Inc()
}

// EtcdRequest and SessionUp make metrics the cluster.Observer the broker
// opens its cluster registry with.
func (m *metrics) EtcdRequest(op string, d time.Duration, err error) {
	om, ok := m.etcdOps[op]
	if !ok { // an operation added to cluster but not above
		om = etcdOpMetrics{latency: m.etcdLatency.WithLabelValues(op), errors: m.etcdErrors.WithLabelValues(op)}
	}
	om.latency.Observe(d.Seconds())
	if err != nil {
		om.errors.Inc()
	}
}

// SessionUp implements cluster.Observer.
func (m *metrics) SessionUp(up bool) {
	if up {
		m.sessionUp.Set(1)
	} else {
		m.sessionUp.Set(0)
	}
}

// ActiveController implements cluster.Observer.
func (m *metrics) ActiveController(active bool) {
	if active {
		m.activeController.Set(1)
	} else {
		m.activeController.Set(0)
	}
}

// Fsynced, GroupCommit and Synced make metrics the storage.Observer the
// broker opens its logs with.
func (m *metrics) Fsynced(d time.Duration) { m.fsync.Observe(d.Seconds()) }

// GroupCommit implements storage.Observer.
func (m *metrics) GroupCommit(logs int) { m.groupCommit.Observe(float64(logs)) }

// Synced implements storage.Observer.
func (m *metrics) Synced(records int64) { m.syncRecords.Observe(float64(records)) }

// topicMetrics are one topic's traffic counters, shared by its partitions.
type topicMetrics struct {
	bytesIn, recordsIn, bytesOut prometheus.Counter
}

// forTopic resolves a topic's counters; called when a partition is opened.
func (m *metrics) forTopic(topic string) *topicMetrics {
	return &topicMetrics{
		bytesIn:   m.bytesIn.WithLabelValues(topic),
		recordsIn: m.recordsIn.WithLabelValues(topic),
		bytesOut:  m.bytesOut.WithLabelValues(topic),
	}
}

// forgetTopic drops a deleted topic's series.
func (m *metrics) forgetTopic(topic string) {
	m.bytesIn.DeleteLabelValues(topic)
	m.recordsIn.DeleteLabelValues(topic)
	m.bytesOut.DeleteLabelValues(topic)
}

// maxErrorCode bounds the error codes whose counters are kept resolved;
// Kafka's are below it. Slot 0 holds -1 (UNKNOWN_SERVER_ERROR), as 0 is no
// error. A code outside is resolved at each occurrence.
const maxErrorCode = 256

// apiMetrics are one API's request metrics, resolved from their label
// values once, so a request costs no label hashing or formatting.
type apiMetrics struct {
	requests []prometheus.Counter // by version - min
	min      int16
	latency  prometheus.Observer // total
	queue    prometheus.Observer
	local    prometheus.Observer
	failures prometheus.Counter

	name     string
	errorVec *prometheus.CounterVec
	codesMu  sync.Mutex // serialises resolving a code's counter
	codes    [maxErrorCode]atomic.Pointer[prometheus.Counter]
}

// forAPI resolves the metrics of an API's served versions.
func (m *metrics) forAPI(key, minVersion, maxVersion int16) *apiMetrics {
	name := apiName(key)
	am := &apiMetrics{min: minVersion, latency: m.latency.WithLabelValues(name), failures: m.failures.WithLabelValues(name),
		queue: m.queueTime.WithLabelValues(name), local: m.localTime.WithLabelValues(name),
		name: name, errorVec: m.errorCodes}
	for v := minVersion; v <= maxVersion; v++ {
		am.requests = append(am.requests, m.requests.WithLabelValues(name, strconv.Itoa(int(v))))
	}
	return am
}

// countError counts one non-zero error code in a response. The counter is
// resolved the first time the API answers with the code.
func (am *apiMetrics) countError(code int16) {
	var slot *atomic.Pointer[prometheus.Counter]
	switch {
	case code == -1:
		slot = &am.codes[0]
	case code > 0 && code < maxErrorCode:
		slot = &am.codes[code]
	default:
		am.errorVec.WithLabelValues(am.name, strconv.Itoa(int(code))).Inc()
		return
	}
	if c := slot.Load(); c != nil {
		(*c).Inc()
		return
	}
	am.codesMu.Lock()
	c := slot.Load()
	if c == nil {
		counter := am.errorVec.WithLabelValues(am.name, strconv.Itoa(int(code)))
		c = &counter
		slot.Store(c)
	}
	am.codesMu.Unlock()
	(*c).Inc()
}

// countResponseErrors counts the error codes of a response: every
// partition's for Produce and Fetch, the top-level code for the APIs that
// have one. A type switch and a walk over the partitions, nothing more.
func (am *apiMetrics) countResponseErrors(resp kmsg.Response) {
	var top int16
	switch r := resp.(type) {
	case *kmsg.ProduceResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				if c := r.Topics[i].Partitions[j].ErrorCode; c != 0 {
					am.countError(c)
				}
			}
		}
	case *kmsg.FetchResponse:
		top = r.ErrorCode
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				if c := r.Topics[i].Partitions[j].ErrorCode; c != 0 {
					am.countError(c)
				}
			}
		}
	case *kmsg.ApiVersionsResponse:
		top = r.ErrorCode
	case *kmsg.FindCoordinatorResponse:
		top = r.ErrorCode
	case *kmsg.JoinGroupResponse:
		top = r.ErrorCode
	case *kmsg.SyncGroupResponse:
		top = r.ErrorCode
	case *kmsg.HeartbeatResponse:
		top = r.ErrorCode
	case *kmsg.LeaveGroupResponse:
		top = r.ErrorCode
	case *kmsg.OffsetFetchResponse:
		top = r.ErrorCode
	case *kmsg.OffsetDeleteResponse:
		top = r.ErrorCode
	case *kmsg.ListGroupsResponse:
		top = r.ErrorCode
	case *kmsg.InitProducerIDResponse:
		top = r.ErrorCode
	case *kmsg.DescribeClusterResponse:
		top = r.ErrorCode
	case *kmsg.UnregisterBrokerResponse:
		top = r.ErrorCode
	case *kmsg.DescribeLogDirsResponse:
		top = r.ErrorCode
	}
	if top != 0 {
		am.countError(top)
	}
}

func apiName(key int16) string {
	if n := kmsg.NameForKey(key); n != "" {
		return n
	}
	return strconv.Itoa(int(key))
}
