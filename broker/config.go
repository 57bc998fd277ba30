package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gregor-io/gregor/coordinator/group"
	"github.com/gregor-io/gregor/coordinator/txn"
)

// ErrInvalidConfig is returned by Config.Validate.
var ErrInvalidConfig = errors.New("broker: invalid config")

// Config is a broker's configuration. Fields that mean what a Kafka broker
// config means carry its name in the comment and its default in
// DefaultConfig; cmd/gregor maps the dotted names onto the fields.
type Config struct {
	// NodeID identifies the broker in the cluster (node.id).
	NodeID int32
	// Listeners are the addresses the Kafka protocol is served on
	// (listeners), as NAME://host:port; port 0 picks a free port.
	Listeners []string
	// AdvertisedListeners are the addresses clients are told to use
	// (advertised.listeners), as NAME://host:port, matched to Listeners
	// by name. A listener without an entry here is advertised at its
	// bound address (an unspecified host as localhost, port 0 as the port
	// bound). Kafka instead leaves such a listener out of the broker's
	// registration, so that clients connected to it are told of no broker;
	// Gregor advertises every listener it serves.
	AdvertisedListeners []string
	// ListenerSecurityProtocolMap gives each listener name its security
	// protocol (listener.security.protocol.map, NAME:PROTOCOL,...; names
	// and protocols are case-insensitive). Every listener must be named
	// in it. All four of Kafka's protocols are served: PLAINTEXT, SSL
	// (tls.go), SASL_PLAINTEXT and SASL_SSL (SASL over TLS, sasl_conn.go).
	ListenerSecurityProtocolMap string
	// ListenerConfigs are the per-listener settings, by their whole key
	// (listener.name.<listener>.<setting>, the listener name in lower case
	// as Kafka writes it): listener.name.sasl_plaintext.sasl.enabled.mechanisms,
	// listener.name.sasl_plaintext.plain.sasl.jaas.config, ...
	ListenerConfigs map[string]string
	// SASLEnabledMechanisms are the SASL mechanisms a SASL listener offers
	// (sasl.enabled.mechanisms; a listener's own
	// listener.name.<l>.sasl.enabled.mechanisms beats it). Gregor has
	// PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512; Kafka's default, GSSAPI, is
	// refused at start on a broker with a SASL listener.
	SASLEnabledMechanisms []string
	// OAuthBearerConfigs are the broker's sasl.oauthbearer.* settings by
	// their whole key (sasl.oauthbearer.jwks.endpoint.url,
	// sasl.oauthbearer.expected.audience, ...); a listener's own
	// listener.name.<l>.oauthbearer.sasl.oauthbearer.* beat them.
	OAuthBearerConfigs map[string]string
	// SASLMechanismInterBrokerProtocol is the mechanism the broker's own
	// connections use when the inter-broker listener is a SASL one
	// (sasl.mechanism.inter.broker.protocol), with the username and
	// password of that listener's JAAS config for the mechanism.
	SASLMechanismInterBrokerProtocol string
	// SASLServerMaxReceiveSize bounds the frames a connection may send
	// before it has authenticated (sasl.server.max.receive.size); a
	// larger one closes the connection.
	SASLServerMaxReceiveSize int32
	// ConnectionsMaxReauth is the longest a SASL authentication holds
	// (connections.max.reauth.ms; 0 for ever): past it the client must
	// authenticate again on the connection (KIP-368), or is disconnected
	// at its next request.
	ConnectionsMaxReauth time.Duration
	// FailedAuthenticationDelay holds back the answer to a failed
	// authentication and the close that follows
	// (connection.failed.authentication.delay.ms), which slows a client
	// guessing passwords.
	FailedAuthenticationDelay time.Duration
	// InterBrokerListenerName is the listener brokers reach each other on
	// (inter.broker.listener.name): replica fetchers, transaction markers,
	// share state calls. Empty picks, as Kafka's default
	// security.inter.broker.protocol does, the listener named PLAINTEXT;
	// without one, where Kafka refuses to start, the first listener, which
	// is what Gregor used before it had this setting.
	InterBrokerListenerName string
	// SSL is the ssl.* settings of SSL listeners (tls.go); a listener's
	// listener.name.<listener>.ssl.* in ListenerConfigs beat them.
	SSL SSLConfig
	// Rack is the broker's rack (broker.rack), or empty.
	Rack string
	// LogDirs hold the partition logs (log.dirs).
	LogDirs []string
	// AdminListener is the host:port of the HTTP server for metrics and
	// health checks (admin.listener); empty disables it.
	AdminListener string

	// EtcdEndpoints are the client URLs of an external etcd cluster
	// (etcd.endpoints); empty starts an embedded member in the first log dir.
	EtcdEndpoints []string
	// EtcdClientAddr and EtcdPeerAddr are the embedded member's listen
	// addresses (etcd.client.addr, etcd.peer.addr); port 0 picks free ports.
	EtcdClientAddr string
	EtcdPeerAddr   string
	// EtcdInitialCluster makes the embedded member one of several that
	// brokers embed (etcd.initial.cluster, etcd's initial-cluster form).
	// With EtcdPeerAddr on every interface, this broker's entry may name
	// it by a host name, which it is advertised at (cluster.Config).
	EtcdInitialCluster string
	// SessionTimeout bounds how long a dead broker stays registered
	// (broker.session.timeout.ms).
	SessionTimeout time.Duration
	// ControlledShutdownEnable makes Close ask the controller to move this
	// broker's leaderships to other in-sync replicas first, waiting at
	// most SessionTimeout (controlled.shutdown.enable).
	ControlledShutdownEnable bool
	// ReplicaLagTimeMax is how long a follower may go without catching up
	// with its leader before the leader takes it out of the ISR
	// (replica.lag.time.max.ms).
	ReplicaLagTimeMax time.Duration
	// ReplicaFetchWaitMax is how long a follower's fetch waits at the
	// leader for new records (replica.fetch.wait.max.ms).
	ReplicaFetchWaitMax time.Duration
	// ReplicaSelector picks the replica a consumer should fetch from
	// (replica.selector.class, KIP-392): empty or LeaderSelector, the
	// leader; RackAwareReplicaSelector, an in-sync replica in the
	// consumer's rack.
	ReplicaSelector string
	// AutoLeaderRebalanceEnable has the controller give partitions back to
	// their preferred leaders every LeaderImbalanceCheckInterval
	// (auto.leader.rebalance.enable, leader.imbalance.check.interval.seconds).
	AutoLeaderRebalanceEnable    bool
	LeaderImbalanceCheckInterval time.Duration
	// ReplicationQuotaWindowNum and ReplicationQuotaWindowSize are the
	// samples the replication throttles measure their rate over, and the
	// length of each (replication.quota.window.num,
	// replication.quota.window.size.seconds; whole seconds).
	ReplicationQuotaWindowNum  int32
	ReplicationQuotaWindowSize time.Duration
	// QuotaWindowNum and QuotaWindowSize are the samples the client
	// quotas (producer_byte_rate, consumer_byte_rate, request_percentage)
	// measure rates over, and the length of each (quota.window.num,
	// quota.window.size.seconds; whole seconds).
	QuotaWindowNum  int32
	QuotaWindowSize time.Duration
	// ControllerQuotaWindowNum and ControllerQuotaWindowSize size the
	// controller_mutation_rate token bucket: it holds the quota times
	// that many windows of that length of mutations
	// (controller.quota.window.num, controller.quota.window.size.seconds;
	// whole seconds).
	ControllerQuotaWindowNum  int32
	ControllerQuotaWindowSize time.Duration

	// NumPartitions is the partition count of auto-created topics and of
	// CreateTopics requests with -1 (num.partitions).
	NumPartitions int32
	// DefaultReplicationFactor likewise (default.replication.factor).
	DefaultReplicationFactor int16
	// AutoCreateTopicsEnable lets Metadata requests create topics
	// (auto.create.topics.enable).
	AutoCreateTopicsEnable bool
	// AuthorizerClassName is authorizer.class.name: empty for none (every
	// request is allowed and ACL requests answer SECURITY_DISABLED), or
	// StandardAuthorizer, which decides with the ACLs in the registry.
	AuthorizerClassName string
	// SuperUsers are the principals the authorizer allows everything
	// (super.users, "User:admin;User:ops").
	SuperUsers []string
	// AllowEveryoneIfNoACLFound allows a request on a resource no ACL
	// names (allow.everyone.if.no.acl.found).
	AllowEveryoneIfNoACLFound bool
	// MessageMaxBytes is the largest record batch accepted
	// (message.max.bytes), the default of topics' max.message.bytes.
	MessageMaxBytes int32
	// FetchMaxBytes caps the bytes one consumer Fetch response carries,
	// whatever the request's max_bytes asks for (fetch.max.bytes); the
	// first batch still goes whole when it is larger (KIP-74).
	FetchMaxBytes int32
	// SocketRequestMaxBytes is the largest request frame accepted
	// (socket.request.max.bytes); larger ones close the connection.
	SocketRequestMaxBytes int32
	// MaxConnections caps the broker's open client connections
	// (max.connections). At the cap the listeners stop accepting until a
	// connection closes, as Kafka's acceptor waits for a free slot: new
	// connections wait in the kernel's accept backlog. As in Kafka, the
	// inter-broker listener is exempt.
	MaxConnections int32
	// MaxConnectionsPerIP caps the connections from one IP address
	// (max.connections.per.ip); a connection beyond it is closed at once.
	MaxConnectionsPerIP int32
	// MaxConnectionsPerIPOverrides are per-address exceptions to
	// MaxConnectionsPerIP (max.connections.per.ip.overrides, written
	// "host:count,ip:count"); host names are resolved when the broker starts.
	MaxConnectionsPerIPOverrides map[string]int32
	// MaxConnectionCreationRate bounds the connections per second the
	// broker accepts over its listeners, the inter-broker listener left
	// out when there are several (max.connection.creation.rate); beyond
	// it the listener's accepting is delayed, as Kafka's acceptor waits. A
	// listener's own bound is
	// listener.name.<listener>.max.connection.creation.rate in
	// ListenerConfigs, else this one (conn_rates.go). Both change
	// dynamically.
	MaxConnectionCreationRate int32
	// ConnectionsMaxIdle closes a connection that has sent nothing for
	// this long (connections.max.idle.ms).
	ConnectionsMaxIdle time.Duration
	// QueuedMaxRequests bounds the requests read from connections but not
	// yet handled, over the whole broker (queued.max.requests). When it is
	// reached, connections stop reading until a request completes. See
	// requestSlots for how this maps onto Kafka's request queue.
	QueuedMaxRequests int32

	// OffsetsTopicNumPartitions, OffsetsTopicReplicationFactor and
	// OffsetsTopicSegmentBytes shape __consumer_offsets when it is created
	// (offsets.topic.num.partitions, offsets.topic.replication.factor,
	// offsets.topic.segment.bytes). Unlike Kafka, which refuses to create
	// the topic until that many brokers are registered, the replication
	// factor is capped at the brokers there are: a single node needs no
	// setup.
	OffsetsTopicNumPartitions     int32
	OffsetsTopicReplicationFactor int16
	OffsetsTopicSegmentBytes      int64
	// Groups configures the group coordinator (group.min.session.timeout.ms,
	// group.max.session.timeout.ms, group.initial.rebalance.delay.ms,
	// group.max.size, offsets.retention.minutes, ...).
	Groups group.Config

	// TransactionStateLogNumPartitions, TransactionStateLogReplicationFactor,
	// TransactionStateLogMinISR and TransactionStateLogSegmentBytes shape
	// __transaction_state when it is created
	// (transaction.state.log.num.partitions, .replication.factor, .min.isr,
	// .segment.bytes). The replication factor is capped at the brokers there
	// are, as for __consumer_offsets, and min.insync.replicas at the
	// replication factor, as for every topic.
	TransactionStateLogNumPartitions     int32
	TransactionStateLogReplicationFactor int16
	TransactionStateLogMinISR            int32
	TransactionStateLogSegmentBytes      int64

	// ShareStateTopicNumPartitions, ShareStateTopicReplicationFactor,
	// ShareStateTopicMinISR and ShareStateTopicSegmentBytes shape
	// __share_group_state, where the share coordinators keep share groups'
	// state (share.coordinator.state.topic.num.partitions, 50;
	// .replication.factor, 3; .min.isr, 2; .segment.bytes, 100 MiB).
	ShareStateTopicNumPartitions     int32
	ShareStateTopicReplicationFactor int16
	ShareStateTopicMinISR            int32
	ShareStateTopicSegmentBytes      int64
	// ShareRecordLockDuration is how long a share group member holds the
	// records it acquired before they are offered again
	// (group.share.record.lock.duration.ms, 30000); ShareDeliveryCountLimit
	// how often a record is delivered before it is archived
	// (group.share.delivery.count.limit, 5); SharePartitionMaxRecordLocks
	// the most records in flight per share partition
	// (group.share.partition.max.record.locks, 2000). A group's configs
	// share.record.lock.duration.ms, share.delivery.count.limit and
	// share.partition.max.record.locks override them for that group.
	ShareRecordLockDuration      time.Duration
	ShareDeliveryCountLimit      int16
	SharePartitionMaxRecordLocks int32
	// ShareMinRecordLockDuration .. ShareMaxPartitionMaxRecordLocks bound
	// what a group's configs may set, and the three defaults above must lie
	// within them (group.share.min.record.lock.duration.ms, 15000;
	// group.share.max.record.lock.duration.ms, 60000;
	// group.share.min.delivery.count.limit, 2;
	// group.share.max.delivery.count.limit, 10;
	// group.share.min.partition.max.record.locks, 100;
	// group.share.max.partition.max.record.locks, 4000).
	ShareMinRecordLockDuration      time.Duration
	ShareMaxRecordLockDuration      time.Duration
	ShareMinDeliveryCountLimit      int16
	ShareMaxDeliveryCountLimit      int16
	ShareMinPartitionMaxRecordLocks int32
	ShareMaxPartitionMaxRecordLocks int32

	// Transactions configures the transaction coordinator
	// (transaction.max.timeout.ms, transactional.id.expiration.ms, the
	// cleanup intervals). Its ProducerIDs, Topics and
	// OffsetsTopicPartitions are the broker's to set: leave them zero.
	Transactions txn.Config
	// TransactionPartitionVerification
	// (transaction.partition.verification.enable): a partition leader asks
	// the transaction coordinator whether a partition was added to a
	// producer's transaction before the producer's first transactional
	// write to it is appended (KIP-890 part 1).
	TransactionPartitionVerification bool
	// AddPartitionsRetryBackoff and AddPartitionsRetryMax
	// (add.partitions.to.txn.retry.backoff.ms, 20;
	// add.partitions.to.txn.retry.backoff.max.ms, 100): how often and for
	// how long a leader adding a partition to a transaction version 2
	// producer's transaction tries again while the coordinator answers
	// CONCURRENT_TRANSACTIONS or the previous transaction's marker is not
	// written here yet, before the client gets the retriable error.
	AddPartitionsRetryBackoff time.Duration
	AddPartitionsRetryMax     time.Duration

	// LogRetentionCheckInterval is how often every log's retention runs
	// (log.retention.check.interval.ms).
	LogRetentionCheckInterval time.Duration
	// LogCleanerEnable runs the log cleaner, which compacts topics whose
	// cleanup.policy has "compact", __consumer_offsets among them
	// (log.cleaner.enable).
	LogCleanerEnable bool
	// LogCleanerBackoff is how long the cleaner sleeps when it found no
	// log to clean (log.cleaner.backoff.ms).
	LogCleanerBackoff time.Duration
	// LogCleanerDedupeBufferSize bounds the cleaner's key-to-offset map
	// (log.cleaner.dedupe.buffer.size).
	LogCleanerDedupeBufferSize int64
	// LogWritebackBytes is Gregor's own (log.writeback.bytes): in logs
	// whose appends are not fsynced before they are acknowledged, writeback
	// of a log's newest bytes to disk is started each time this many have
	// been appended, so that dirty data never piles up into the kernel's
	// writeback bursts and writer throttling, and at once for an append of
	// 64 KiB or more to a log holding no pages in the page-cache window, so
	// that the window can drop them clean. 0 leaves it to the kernel.
	LogWritebackBytes int64
	// LogPageCacheKeepBytes is Gregor's own (log.pagecache.keep.bytes):
	// what the logs appended is held in the page cache to the newest this
	// many bytes appended to any of them, older appends dropped, so that
	// the cache reuses its own pages instead of growing. It pays where new
	// memory is slow to get (a VM whose free memory goes back to the host);
	// readers further behind read from disk. 0 leaves the page cache to
	// the kernel, as Kafka does; -1, the default, is AutoPageCacheKeepBytes
	// where the kernel reports free pages to a hypervisor
	// (storage.FreePageReporting) and 0 elsewhere.
	LogPageCacheKeepBytes int64
	// LogPrefaultBytes is Gregor's own (log.prefault.bytes): a log that
	// takes appends fast has its active segment file extended this far
	// ahead of its end and those pages read into the page cache in the
	// background, so that appends copy into pages already there instead
	// of allocating them (costly where new memory is slow to get, as on a
	// VM whose free memory goes back to the host). The tail is cut off
	// when the segment is sealed or the broker stops. 0 turns it off: the
	// file grows with each append, as Kafka's do; -1, the default, is
	// AutoPrefaultBytes without a page-cache window and 0 with one, whose
	// freed pages the appends reuse.
	LogPrefaultBytes int64

	// StaticTopicDefaults are broker-level settings of topic-config
	// synonyms given at start-up (log.segment.bytes, log.retention.hours,
	// log.flush.interval.messages, ...), by their broker config names.
	// Without log.flush.interval.messages the broker uses 1: appends are
	// fsynced before they are acknowledged.
	StaticTopicDefaults map[string]string

	// Logger receives the broker's logs; nil discards them.
	Logger *slog.Logger
	// Registerer takes the broker's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Gatherer serves /metrics on the admin listener; nil serves none.
	Gatherer prometheus.Gatherer
}

const (
	// AutoPageCacheKeepBytes is log.pagecache.keep.bytes -1 where the
	// kernel reports free pages to a hypervisor.
	AutoPageCacheKeepBytes = 256 << 20
	// AutoPrefaultBytes is log.prefault.bytes -1 without a page-cache
	// window.
	AutoPrefaultBytes = 16 << 20
)

// pageCacheSettings resolves log.pagecache.keep.bytes and log.prefault.bytes
// of -1; reporting tells whether the kernel reports free pages to a
// hypervisor. A window frees pages that appends reuse, so it has no use for
// prefaulting, which zero-fills pages ahead of the appends (measured: a
// 64 MiB window took one partition from 450 to 610-750 MiB/s with a 16 MiB
// prefault and to 1,175-1,240 without).
func pageCacheSettings(keep, prefault int64, reporting bool) (int64, int64) {
	if keep < 0 {
		keep = 0
		if reporting {
			keep = AutoPageCacheKeepBytes
		}
	}
	if prefault < 0 {
		prefault = 0
		if keep == 0 {
			prefault = AutoPrefaultBytes
		}
	}
	return keep, prefault
}

// StandardAuthorizer is the authorizer of authorizer.class.name, by Kafka's
// class name: ACLs in the cluster's registry.
const StandardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// The replica selectors of replica.selector.class, by Kafka's class names.
const (
	LeaderSelector           = "org.apache.kafka.common.replica.LeaderSelector"
	RackAwareReplicaSelector = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
)

// DefaultConfig returns Kafka's defaults for a single node with data in
// ./data, serving on localhost:9092.
func DefaultConfig() Config {
	return Config{
		NodeID:         1,
		Listeners:      []string{"PLAINTEXT://localhost:9092"},
		LogDirs:        []string{"./data"},
		AdminListener:  "localhost:9644",
		EtcdClientAddr: "127.0.0.1:2379",
		EtcdPeerAddr:   "127.0.0.1:2380",
		SessionTimeout: 9 * time.Second,

		ListenerSecurityProtocolMap:      DefaultListenerSecurityProtocolMap,
		SASLEnabledMechanisms:            []string{"GSSAPI"},
		SASLMechanismInterBrokerProtocol: "GSSAPI",
		SASLServerMaxReceiveSize:         512 << 10,
		FailedAuthenticationDelay:        100 * time.Millisecond,

		ControlledShutdownEnable:     true,
		ReplicaLagTimeMax:            30 * time.Second,
		ReplicaFetchWaitMax:          500 * time.Millisecond,
		AutoLeaderRebalanceEnable:    true,
		LeaderImbalanceCheckInterval: 300 * time.Second,
		ReplicationQuotaWindowNum:    11,
		ReplicationQuotaWindowSize:   time.Second,
		QuotaWindowNum:               11,
		QuotaWindowSize:              time.Second,
		ControllerQuotaWindowNum:     11,
		ControllerQuotaWindowSize:    time.Second,

		NumPartitions:             1,
		DefaultReplicationFactor:  1,
		AutoCreateTopicsEnable:    true,
		MessageMaxBytes:           1048588,
		SocketRequestMaxBytes:     100 << 20,
		FetchMaxBytes:             55 << 20,
		MaxConnections:            math.MaxInt32,
		MaxConnectionsPerIP:       math.MaxInt32,
		MaxConnectionCreationRate: math.MaxInt32,
		ConnectionsMaxIdle:        10 * time.Minute,
		QueuedMaxRequests:         500,

		LogRetentionCheckInterval:  5 * time.Minute,
		LogCleanerEnable:           true,
		LogCleanerBackoff:          15 * time.Second,
		LogCleanerDedupeBufferSize: 128 << 20,
		LogWritebackBytes:          4 << 20,
		LogPageCacheKeepBytes:      -1,
		LogPrefaultBytes:           -1,

		OffsetsTopicNumPartitions:     50,
		OffsetsTopicReplicationFactor: 3,
		OffsetsTopicSegmentBytes:      100 << 20,
		Groups:                        group.DefaultConfig(),

		TransactionStateLogNumPartitions:     50,
		TransactionStateLogReplicationFactor: 3,
		TransactionStateLogMinISR:            2,
		TransactionStateLogSegmentBytes:      100 << 20,
		ShareStateTopicNumPartitions:         50,
		ShareStateTopicReplicationFactor:     3,
		ShareStateTopicMinISR:                2,
		ShareStateTopicSegmentBytes:          100 << 20,
		ShareRecordLockDuration:              30 * time.Second,
		ShareDeliveryCountLimit:              5,
		SharePartitionMaxRecordLocks:         2000,
		ShareMinRecordLockDuration:           15 * time.Second,
		ShareMaxRecordLockDuration:           60 * time.Second,
		ShareMinDeliveryCountLimit:           2,
		ShareMaxDeliveryCountLimit:           10,
		ShareMinPartitionMaxRecordLocks:      100,
		ShareMaxPartitionMaxRecordLocks:      4000,
		Transactions:                         txn.DefaultConfig(),
		TransactionPartitionVerification:     true,
		AddPartitionsRetryBackoff:            20 * time.Millisecond,
		AddPartitionsRetryMax:                100 * time.Millisecond,
		SSL:                                  DefaultSSLConfig(),
	}
}

// DefaultListenerSecurityProtocolMap is Kafka's default of
// listener.security.protocol.map, spelled as Kafka reports it: each
// security protocol is also the name of a listener that speaks it.
const DefaultListenerSecurityProtocolMap = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"

// The security protocols of listener.security.protocol.map, by Kafka's
// names.
const (
	ProtocolPlaintext     = "PLAINTEXT"
	ProtocolSSL           = "SSL"
	ProtocolSASLPlaintext = "SASL_PLAINTEXT"
	ProtocolSASLSSL       = "SASL_SSL"
)

// Listener is a parsed listeners entry.
type Listener struct {
	// Name is upper case, as Kafka normalises listener names.
	Name string
	Host string
	Port int32
}

// ParseListener parses NAME://host:port.
func ParseListener(s string) (Listener, error) {
	name, addr, ok := strings.Cut(s, "://")
	if !ok || name == "" {
		return Listener{}, fmt.Errorf("%w: listener %q is not NAME://host:port", ErrInvalidConfig, s)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return Listener{}, fmt.Errorf("%w: listener %q: %w", ErrInvalidConfig, s, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return Listener{}, fmt.Errorf("%w: listener %q: bad port", ErrInvalidConfig, s)
	}
	return Listener{Name: strings.ToUpper(name), Host: host, Port: int32(p)}, nil
}

// ParseSecurityProtocolMap parses listener.security.protocol.map:
// comma-separated NAME:PROTOCOL pairs. Names and protocols are taken in
// upper case; a protocol Kafka does not have, a name given twice or an
// entry without a colon is an error.
func ParseSecurityProtocolMap(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, proto, ok := strings.Cut(entry, ":")
		name, proto = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || name == "" {
			return nil, fmt.Errorf("%w: listener.security.protocol.map entry %q is not NAME:PROTOCOL", ErrInvalidConfig, entry)
		}
		switch proto {
		case ProtocolPlaintext, ProtocolSSL, ProtocolSASLPlaintext, ProtocolSASLSSL:
		default:
			return nil, fmt.Errorf("%w: listener.security.protocol.map: unknown security protocol %q for listener %s (Kafka's are %s, %s, %s and %s)",
				ErrInvalidConfig, proto, name, ProtocolPlaintext, ProtocolSSL, ProtocolSASLPlaintext, ProtocolSASLSSL)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%w: listener.security.protocol.map names listener %s twice", ErrInvalidConfig, name)
		}
		out[name] = proto
	}
	return out, nil
}

// listenerSetup is the listener settings of a Config, checked and put
// together.
type listenerSetup struct {
	// listeners are the listeners entries, in their order.
	listeners []Listener
	// advertised holds the advertised.listeners entries by name.
	advertised map[string]Listener
	// protocols is listener.security.protocol.map.
	protocols map[string]string
	// interBroker names the inter-broker listener.
	interBroker string
	// protected is the listener the broker-wide connection limits
	// (max.connections, max.connection.creation.rate) leave out: the
	// inter-broker one when there are several listeners, as Kafka's
	// ConnectionQuotas protects it; "" with a single listener, whose
	// connections all count.
	protected string
	// tls serves the SSL listeners, by name (tls.go).
	tls map[string]*listenerTLS
	// sasl holds the authentication setup of each SASL listener, by name.
	sasl map[string]*saslListener
	// interBrokerSASL is how the broker's own connections authenticate,
	// nil when the inter-broker listener is not a SASL one.
	interBrokerSASL *saslCredentials
}

// resolveListeners checks listeners, advertised.listeners,
// listener.security.protocol.map and inter.broker.listener.name together.
func (c *Config) resolveListeners() (listenerSetup, error) {
	var ls listenerSetup
	if len(c.Listeners) == 0 {
		return ls, fmt.Errorf("%w: no listeners", ErrInvalidConfig)
	}
	var err error
	if ls.protocols, err = ParseSecurityProtocolMap(c.ListenerSecurityProtocolMap); err != nil {
		return ls, err
	}
	known := func(l Listener, key string) error {
		if _, ok := ls.protocols[l.Name]; !ok {
			return fmt.Errorf("%w: %s: listener %s has no security protocol in listener.security.protocol.map", ErrInvalidConfig, key, l.Name)
		}
		return nil
	}
	names := map[string]bool{}
	for _, spec := range c.Listeners {
		l, err := ParseListener(spec)
		if err != nil {
			return ls, err
		}
		if names[l.Name] {
			return ls, fmt.Errorf("%w: listeners: listener name %s used twice", ErrInvalidConfig, l.Name)
		}
		if err := known(l, "listeners"); err != nil {
			return ls, err
		}
		names[l.Name] = true
		ls.listeners = append(ls.listeners, l)
	}
	ls.advertised = map[string]Listener{}
	for _, spec := range c.AdvertisedListeners {
		l, err := ParseListener(spec)
		if err != nil {
			return ls, err
		}
		switch {
		case !names[l.Name]:
			return ls, fmt.Errorf("%w: advertised.listeners: %s is not the name of a listener in listeners", ErrInvalidConfig, l.Name)
		case ls.advertised[l.Name] != Listener{}:
			return ls, fmt.Errorf("%w: advertised.listeners: listener name %s used twice", ErrInvalidConfig, l.Name)
		}
		ls.advertised[l.Name] = l
	}
	ls.interBroker = strings.ToUpper(strings.TrimSpace(c.InterBrokerListenerName))
	switch {
	case ls.interBroker == "" && names[ProtocolPlaintext]:
		ls.interBroker = ProtocolPlaintext
	case ls.interBroker == "":
		ls.interBroker = ls.listeners[0].Name
	case !names[ls.interBroker]:
		return ls, fmt.Errorf("%w: inter.broker.listener.name %s is not the name of a listener in listeners", ErrInvalidConfig, ls.interBroker)
	}
	if len(ls.listeners) > 1 {
		ls.protected = ls.interBroker
	}
	if err := c.tlsListeners(&ls); err != nil {
		return ls, err
	}
	if err := c.resolveSASL(&ls); err != nil {
		return ls, err
	}
	return ls, nil
}

// ParseConnectionOverrides parses max.connections.per.ip.overrides:
// comma-separated host:count or ip:count pairs (an IPv6 address in
// brackets), as Kafka writes them. An empty string gives no overrides.
func ParseConnectionOverrides(s string) (map[string]int32, error) {
	out := map[string]int32{}
	for _, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		i := strings.LastIndexByte(entry, ':')
		if i <= 0 {
			return nil, fmt.Errorf("%w: max.connections.per.ip.overrides entry %q is not host:count", ErrInvalidConfig, entry)
		}
		host := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(entry[:i]), "["), "]")
		n, err := strconv.ParseInt(strings.TrimSpace(entry[i+1:]), 10, 32)
		if err != nil || n < 0 || host == "" {
			return nil, fmt.Errorf("%w: max.connections.per.ip.overrides entry %q is not host:count", ErrInvalidConfig, entry)
		}
		out[host] = int32(n)
	}
	return out, nil
}

// Validate checks the config.
func (c *Config) Validate() error {
	if c.NodeID < 0 {
		return fmt.Errorf("%w: node.id %d below 0", ErrInvalidConfig, c.NodeID)
	}
	if _, err := c.resolveListeners(); err != nil {
		return err
	}
	if len(c.LogDirs) == 0 {
		return fmt.Errorf("%w: no log.dirs", ErrInvalidConfig)
	}
	switch {
	case c.AddPartitionsRetryBackoff < 0 || c.AddPartitionsRetryMax < 0:
		return fmt.Errorf("%w: add.partitions.to.txn.retry.backoff.ms (%v) and add.partitions.to.txn.retry.backoff.max.ms (%v) must not be negative",
			ErrInvalidConfig, c.AddPartitionsRetryBackoff, c.AddPartitionsRetryMax)
	case c.AuthorizerClassName != "" && c.AuthorizerClassName != StandardAuthorizer:
		return fmt.Errorf("%w: authorizer.class.name %q: Gregor has %s", ErrInvalidConfig, c.AuthorizerClassName, StandardAuthorizer)
	case c.ReplicaSelector != "" && c.ReplicaSelector != LeaderSelector && c.ReplicaSelector != RackAwareReplicaSelector:
		return fmt.Errorf("%w: replica.selector.class %q: Gregor has %s and %s", ErrInvalidConfig, c.ReplicaSelector,
			LeaderSelector, RackAwareReplicaSelector)
	case c.ReplicaLagTimeMax < time.Millisecond:
		return fmt.Errorf("%w: replica.lag.time.max.ms below 1", ErrInvalidConfig)
	case c.ReplicaFetchWaitMax < 0 || c.ReplicaFetchWaitMax >= c.ReplicaLagTimeMax:
		return fmt.Errorf("%w: replica.fetch.wait.max.ms must be at least 0 and below replica.lag.time.max.ms", ErrInvalidConfig)
	case c.AutoLeaderRebalanceEnable && c.LeaderImbalanceCheckInterval < time.Second:
		return fmt.Errorf("%w: leader.imbalance.check.interval.seconds below 1", ErrInvalidConfig)
	case c.ReplicationQuotaWindowNum < 1:
		return fmt.Errorf("%w: replication.quota.window.num %d below 1", ErrInvalidConfig, c.ReplicationQuotaWindowNum)
	case c.ReplicationQuotaWindowSize < time.Second || c.ReplicationQuotaWindowSize%time.Second != 0:
		return fmt.Errorf("%w: replication.quota.window.size.seconds must be a whole number of seconds, at least 1", ErrInvalidConfig)
	case c.QuotaWindowNum < 1:
		return fmt.Errorf("%w: quota.window.num %d below 1", ErrInvalidConfig, c.QuotaWindowNum)
	case c.QuotaWindowSize < time.Second || c.QuotaWindowSize%time.Second != 0:
		return fmt.Errorf("%w: quota.window.size.seconds must be a whole number of seconds, at least 1", ErrInvalidConfig)
	case c.ControllerQuotaWindowNum < 1:
		return fmt.Errorf("%w: controller.quota.window.num %d below 1", ErrInvalidConfig, c.ControllerQuotaWindowNum)
	case c.ControllerQuotaWindowSize < time.Second || c.ControllerQuotaWindowSize%time.Second != 0:
		return fmt.Errorf("%w: controller.quota.window.size.seconds must be a whole number of seconds, at least 1", ErrInvalidConfig)
	case c.NumPartitions < 1:
		return fmt.Errorf("%w: num.partitions %d below 1", ErrInvalidConfig, c.NumPartitions)
	case c.DefaultReplicationFactor < 1:
		return fmt.Errorf("%w: default.replication.factor %d below 1", ErrInvalidConfig, c.DefaultReplicationFactor)
	case c.MessageMaxBytes < 0:
		return fmt.Errorf("%w: message.max.bytes %d below 0", ErrInvalidConfig, c.MessageMaxBytes)
	case c.FetchMaxBytes < 1024:
		return fmt.Errorf("%w: fetch.max.bytes %d below 1024", ErrInvalidConfig, c.FetchMaxBytes)
	case c.SASLServerMaxReceiveSize < 1:
		return fmt.Errorf("%w: sasl.server.max.receive.size %d below 1", ErrInvalidConfig, c.SASLServerMaxReceiveSize)
	case c.ConnectionsMaxReauth < 0:
		return fmt.Errorf("%w: connections.max.reauth.ms below 0", ErrInvalidConfig)
	case c.FailedAuthenticationDelay < 0 || c.FailedAuthenticationDelay >= c.ConnectionsMaxIdle:
		return fmt.Errorf("%w: connection.failed.authentication.delay.ms must be at least 0 and below connections.max.idle.ms", ErrInvalidConfig)
	case c.SocketRequestMaxBytes < 1:
		return fmt.Errorf("%w: socket.request.max.bytes %d below 1", ErrInvalidConfig, c.SocketRequestMaxBytes)
	case c.MaxConnections < 0:
		return fmt.Errorf("%w: max.connections %d below 0", ErrInvalidConfig, c.MaxConnections)
	case c.MaxConnectionsPerIP < 0:
		return fmt.Errorf("%w: max.connections.per.ip %d below 0", ErrInvalidConfig, c.MaxConnectionsPerIP)
	case c.MaxConnectionCreationRate < 0:
		return fmt.Errorf("%w: max.connection.creation.rate %d below 0", ErrInvalidConfig, c.MaxConnectionCreationRate)
	case c.ConnectionsMaxIdle < time.Millisecond:
		return fmt.Errorf("%w: connections.max.idle.ms below 1", ErrInvalidConfig)
	case c.QueuedMaxRequests < 1:
		return fmt.Errorf("%w: queued.max.requests %d below 1", ErrInvalidConfig, c.QueuedMaxRequests)
	case c.SessionTimeout < time.Second || c.SessionTimeout > math.MaxInt32*time.Millisecond:
		return fmt.Errorf("%w: broker.session.timeout.ms out of range", ErrInvalidConfig)
	case c.LogRetentionCheckInterval < time.Millisecond:
		return fmt.Errorf("%w: log.retention.check.interval.ms below 1", ErrInvalidConfig)
	case c.LogCleanerBackoff < 0:
		return fmt.Errorf("%w: log.cleaner.backoff.ms below 0", ErrInvalidConfig)
	case c.LogCleanerDedupeBufferSize < 1<<20:
		return fmt.Errorf("%w: log.cleaner.dedupe.buffer.size %d below 1048576", ErrInvalidConfig, c.LogCleanerDedupeBufferSize)
	case c.LogWritebackBytes < 0:
		return fmt.Errorf("%w: log.writeback.bytes %d below 0", ErrInvalidConfig, c.LogWritebackBytes)
	case c.LogPrefaultBytes < -1:
		return fmt.Errorf("%w: log.prefault.bytes %d below -1", ErrInvalidConfig, c.LogPrefaultBytes)
	case c.LogPageCacheKeepBytes < -1:
		return fmt.Errorf("%w: log.pagecache.keep.bytes %d below -1", ErrInvalidConfig, c.LogPageCacheKeepBytes)
	case c.OffsetsTopicNumPartitions < 1:
		return fmt.Errorf("%w: offsets.topic.num.partitions %d below 1", ErrInvalidConfig, c.OffsetsTopicNumPartitions)
	case c.OffsetsTopicReplicationFactor < 1:
		return fmt.Errorf("%w: offsets.topic.replication.factor %d below 1", ErrInvalidConfig, c.OffsetsTopicReplicationFactor)
	case c.OffsetsTopicSegmentBytes < 1<<20:
		return fmt.Errorf("%w: offsets.topic.segment.bytes %d below 1048576", ErrInvalidConfig, c.OffsetsTopicSegmentBytes)
	case c.TransactionStateLogNumPartitions < 1:
		return fmt.Errorf("%w: transaction.state.log.num.partitions %d below 1", ErrInvalidConfig, c.TransactionStateLogNumPartitions)
	case c.TransactionStateLogReplicationFactor < 1:
		return fmt.Errorf("%w: transaction.state.log.replication.factor %d below 1", ErrInvalidConfig, c.TransactionStateLogReplicationFactor)
	case c.TransactionStateLogMinISR < 1:
		return fmt.Errorf("%w: transaction.state.log.min.isr %d below 1", ErrInvalidConfig, c.TransactionStateLogMinISR)
	case c.TransactionStateLogSegmentBytes < 1<<20:
		return fmt.Errorf("%w: transaction.state.log.segment.bytes %d below 1048576", ErrInvalidConfig, c.TransactionStateLogSegmentBytes)
	case c.ShareStateTopicNumPartitions < 1:
		return fmt.Errorf("%w: share.coordinator.state.topic.num.partitions %d below 1", ErrInvalidConfig, c.ShareStateTopicNumPartitions)
	case c.ShareStateTopicReplicationFactor < 1:
		return fmt.Errorf("%w: share.coordinator.state.topic.replication.factor %d below 1", ErrInvalidConfig, c.ShareStateTopicReplicationFactor)
	case c.ShareStateTopicMinISR < 1:
		return fmt.Errorf("%w: share.coordinator.state.topic.min.isr %d below 1", ErrInvalidConfig, c.ShareStateTopicMinISR)
	case c.ShareStateTopicSegmentBytes < 1<<20:
		return fmt.Errorf("%w: share.coordinator.state.topic.segment.bytes %d below 1048576", ErrInvalidConfig, c.ShareStateTopicSegmentBytes)
	}
	// Each share group setting, its bounds (Kafka's group.share.min/max.*)
	// and the range they must lie in.
	for _, s := range []struct {
		name           string
		v, lo, hi      int64
		floor, ceil    int64
		loName, hiName string
	}{
		{"group.share.record.lock.duration.ms", c.ShareRecordLockDuration.Milliseconds(), c.ShareMinRecordLockDuration.Milliseconds(),
			c.ShareMaxRecordLockDuration.Milliseconds(), 1000, 3600000, "group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms"},
		{"group.share.delivery.count.limit", int64(c.ShareDeliveryCountLimit), int64(c.ShareMinDeliveryCountLimit),
			int64(c.ShareMaxDeliveryCountLimit), 2, 10, "group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"},
		{"group.share.partition.max.record.locks", int64(c.SharePartitionMaxRecordLocks), int64(c.ShareMinPartitionMaxRecordLocks),
			int64(c.ShareMaxPartitionMaxRecordLocks), 100, 10000, "group.share.min.partition.max.record.locks", "group.share.max.partition.max.record.locks"},
	} {
		switch {
		case s.v < s.floor || s.v > s.ceil:
			return fmt.Errorf("%w: %s %d outside %d-%d", ErrInvalidConfig, s.name, s.v, s.floor, s.ceil)
		case s.lo < s.floor || s.hi > s.ceil:
			return fmt.Errorf("%w: %s and %s (%d, %d) outside %d-%d", ErrInvalidConfig, s.loName, s.hiName, s.lo, s.hi, s.floor, s.ceil)
		case s.v < s.lo || s.v > s.hi:
			return fmt.Errorf("%w: %s %d outside %s (%d) to %s (%d)", ErrInvalidConfig, s.name, s.v, s.loName, s.lo, s.hiName, s.hi)
		}
	}
	for host, n := range c.MaxConnectionsPerIPOverrides {
		if host == "" || n < 0 {
			return fmt.Errorf("%w: max.connections.per.ip.overrides: %q:%d", ErrInvalidConfig, host, n)
		}
	}
	if err := c.Groups.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	// The producer id source is the broker's own (txnDrivers); a stand-in
	// lets Validate check the settings that come from the config.
	tc := c.Transactions
	tc.OffsetsTopicPartitions = c.OffsetsTopicNumPartitions
	tc.ProducerIDs = txn.ProducerIDFunc(func() (int64, bool) { return 0, false })
	if err := tc.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return nil
}
