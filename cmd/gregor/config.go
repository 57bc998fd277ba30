package main

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/gregor-io/gregor/broker"
	"github.com/gregor-io/gregor/broker/configs"
)

// This file turns the config file, GREGOR_ environment variables and flags
// into a broker.Config. Keys keep Kafka's names and meanings. Three kinds
// are read:
//
//   - serve's own keys (the keys table): broker configs that are fields of
//     broker.Config, plus Gregor's admin.listener, etcd.*, log.level and
//     log.format;
//   - topic defaults: every Kafka broker config that is the broker-level
//     synonym of a topic config (log.retention.hours for retention.ms, ...),
//     found in package configs, passed on as broker.Config.StaticTopicDefaults;
//   - anything else is ignored with a warning.

// envPrefix starts the environment variable of every key: node.id is read
// from GREGOR_NODE_ID.
const envPrefix = "GREGOR"

// flushMessages is the broker config whose default Gregor changes: Kafka
// leaves flushing to the page cache (9223372036854775807), Gregor fsyncs
// every write before it is acknowledged, with group commit.
const (
	flushMessages        = "log.flush.interval.messages"
	flushMessagesDurable = "1"
)

// serveConfig is what serve runs with.
type serveConfig struct {
	broker    broker.Config
	logLevel  slog.Level
	logFormat string // "text" or "json"
	// warnings are the keys that were given but are ignored, one message
	// each, to be logged once the logger exists.
	warnings []string
}

func defaultServeConfig() serveConfig {
	return serveConfig{broker: broker.DefaultConfig(), logLevel: slog.LevelInfo, logFormat: "text"}
}

// key is one of serve's own settings.
type key struct {
	name string
	// aliases are older names of the same setting, which the name beats
	// when both come from the same source (Kafka's log.dir for log.dirs).
	aliases []string
	// aliasUsage is the help of the aliases' flags.
	aliasUsage string
	// placeholder names the value in the flag's help.
	placeholder string
	usage       string
	// get formats the setting of c as it is written (for the help's
	// defaults); set parses s into c.
	get func(c *serveConfig) string
	set func(c *serveConfig, s string) error
}

// keys are serve's own settings, in the order the help lists them.
var keys = []key{
	withAliases(intField("node.id", "ID", "id of this broker in the cluster",
		func(c *serveConfig) *int32 { return &c.broker.NodeID }),
		"Kafka's older name of node.id; must equal it when both are set in one place", "broker.id"),
	listField("listeners", "LISTENERS",
		"comma-separated NAME://host:port the Kafka protocol is served on; port 0 picks a free port",
		func(c *serveConfig) *[]string { return &c.broker.Listeners }),
	listField("advertised.listeners", "LISTENERS",
		"comma-separated NAME://host:port clients are told to use, matched to listeners by name; a listener without one advertises its own address",
		func(c *serveConfig) *[]string { return &c.broker.AdvertisedListeners }),
	stringField("listener.security.protocol.map", "NAME:PROTOCOL,...",
		"security protocol of each listener name; every listener must have one: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL",
		func(c *serveConfig) *string { return &c.broker.ListenerSecurityProtocolMap }),
	stringField("inter.broker.listener.name", "NAME",
		"listener brokers reach each other on; empty means the one named PLAINTEXT, or the first listener when none is",
		func(c *serveConfig) *string { return &c.broker.InterBrokerListenerName }),
	listField("sasl.enabled.mechanisms", "MECHANISMS",
		"comma-separated SASL mechanisms SASL listeners offer: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (Kafka's default, GSSAPI, is not served); listener.name.<listener>.sasl.enabled.mechanisms sets one listener's",
		func(c *serveConfig) *[]string { return &c.broker.SASLEnabledMechanisms }),
	stringField("sasl.mechanism.inter.broker.protocol", "MECHANISM",
		"SASL mechanism of the broker's own connections when the inter-broker listener is a SASL one; its username and password come from listener.name.<listener>.<mechanism>.sasl.jaas.config",
		func(c *serveConfig) *string { return &c.broker.SASLMechanismInterBrokerProtocol }),
	intField("sasl.server.max.receive.size", "BYTES",
		"largest frame a connection to a SASL listener may send before it has authenticated; a larger one closes it",
		func(c *serveConfig) *int32 { return &c.broker.SASLServerMaxReceiveSize }),
	msField("connections.max.reauth.ms", 64,
		"longest a SASL authentication holds; 0 for ever. Past it the client must authenticate again on its connection, or is disconnected",
		func(c *serveConfig) *time.Duration { return &c.broker.ConnectionsMaxReauth }),
	msField("connection.failed.authentication.delay.ms", 32,
		"how long the answer to a failed authentication, and the close after it, are held back",
		func(c *serveConfig) *time.Duration { return &c.broker.FailedAuthenticationDelay }),
	sslKey("ssl.keystore.type"), sslKey("ssl.keystore.location"), sslKey("ssl.keystore.certificate.chain"),
	sslKey("ssl.keystore.key"), sslKey("ssl.key.password"), sslKey("ssl.truststore.type"),
	sslKey("ssl.truststore.location"), sslKey("ssl.truststore.certificates"), sslKey("ssl.client.auth"),
	sslKey("ssl.enabled.protocols"), sslKey("ssl.principal.mapping.rules"), sslKey("ssl.endpoint.identification.algorithm"),
	sslKey("ssl.cipher.suites"), sslKey("ssl.allow.dn.changes"), sslKey("ssl.allow.san.changes"),
	stringField("broker.rack", "RACK", "rack (or zone) of this broker, for clients that fetch from the closest replica",
		func(c *serveConfig) *string { return &c.broker.Rack }),
	withAliases(listField("log.dirs", "DIRS",
		"comma-separated directories for the partition logs; the first also holds the embedded etcd member's data",
		func(c *serveConfig) *[]string { return &c.broker.LogDirs }),
		"Kafka's older name of log.dirs; log.dirs wins when both are set in one place", "log.dir"),
	stringField("admin.listener", "HOST:PORT",
		"address of the HTTP admin server (/metrics, /healthz, /readyz); empty disables it",
		func(c *serveConfig) *string { return &c.broker.AdminListener }),
	listField("etcd.endpoints", "URLS",
		"comma-separated client URLs of an external etcd cluster; empty starts an embedded member in the first log dir",
		func(c *serveConfig) *[]string { return &c.broker.EtcdEndpoints }),
	stringField("etcd.client.addr", "HOST:PORT",
		"client listen address of the embedded etcd member; port 0 picks a free port",
		func(c *serveConfig) *string { return &c.broker.EtcdClientAddr }),
	stringField("etcd.peer.addr", "HOST:PORT",
		"peer listen address of the embedded etcd member; port 0 picks a free port",
		func(c *serveConfig) *string { return &c.broker.EtcdPeerAddr }),
	stringField("etcd.initial.cluster", "NAME=URL,...",
		"the embedded etcd members of a cluster that embeds etcd in several brokers, as etcd's initial-cluster: gregor-<node.id>=http://<etcd.peer.addr>,...; with etcd.peer.addr on every interface (0.0.0.0:2380), this broker's entry may name it by a host name at that port, which it is then advertised at (its client URL too, when etcd.client.addr is on every interface); empty runs a member of its own",
		func(c *serveConfig) *string { return &c.broker.EtcdInitialCluster }),
	msField("broker.session.timeout.ms", 64, "how long a broker that stopped sending heartbeats stays registered",
		func(c *serveConfig) *time.Duration { return &c.broker.SessionTimeout }),
	boolField("controlled.shutdown.enable",
		"whether a broker being stopped first has the controller move its leaderships to other in-sync replicas (waiting at most broker.session.timeout.ms)",
		func(c *serveConfig) *bool { return &c.broker.ControlledShutdownEnable }),
	msField("replica.lag.time.max.ms", 64, "how long a follower may go without catching up with its leader before it leaves the ISR",
		func(c *serveConfig) *time.Duration { return &c.broker.ReplicaLagTimeMax }),
	msField("replica.fetch.wait.max.ms", 32, "how long a follower's fetch waits at the leader for new records",
		func(c *serveConfig) *time.Duration { return &c.broker.ReplicaFetchWaitMax }),
	stringField("replica.selector.class", "CLASS",
		"which replica consumers fetch from: empty or org.apache.kafka.common.replica.LeaderSelector, the leader; org.apache.kafka.common.replica.RackAwareReplicaSelector, an in-sync replica in the consumer's client.rack",
		func(c *serveConfig) *string { return &c.broker.ReplicaSelector }),
	boolField("auto.leader.rebalance.enable",
		"whether the controller gives partitions back to their preferred leader, the first replica, once it is in sync",
		func(c *serveConfig) *bool { return &c.broker.AutoLeaderRebalanceEnable }),
	secondsField("leader.imbalance.check.interval.seconds", "how often the controller looks for partitions to give back to their preferred leader",
		func(c *serveConfig) *time.Duration { return &c.broker.LeaderImbalanceCheckInterval }),
	intField("replication.quota.window.num", "N",
		"samples the replication throttles (leader/follower.replication.throttled.rate) measure their rate over",
		func(c *serveConfig) *int32 { return &c.broker.ReplicationQuotaWindowNum }),
	secondsField("replication.quota.window.size.seconds", "length of each sample the replication throttles measure their rate over",
		func(c *serveConfig) *time.Duration { return &c.broker.ReplicationQuotaWindowSize }),
	intField("quota.window.num", "N",
		"samples the client quotas (producer_byte_rate, consumer_byte_rate, request_percentage) measure rates over",
		func(c *serveConfig) *int32 { return &c.broker.QuotaWindowNum }),
	secondsField("quota.window.size.seconds", "length of each sample the client quotas measure rates over",
		func(c *serveConfig) *time.Duration { return &c.broker.QuotaWindowSize }),
	intField("controller.quota.window.num", "N",
		"windows of controller.quota.window.size.seconds the controller_mutation_rate token bucket holds",
		func(c *serveConfig) *int32 { return &c.broker.ControllerQuotaWindowNum }),
	secondsField("controller.quota.window.size.seconds", "length of each window the controller_mutation_rate token bucket holds",
		func(c *serveConfig) *time.Duration { return &c.broker.ControllerQuotaWindowSize }),
	intField("num.partitions", "N", "partition count of topics created automatically or without a partition count",
		func(c *serveConfig) *int32 { return &c.broker.NumPartitions }),
	intField("default.replication.factor", "N",
		"replication factor of topics created automatically or without a replication factor",
		func(c *serveConfig) *int16 { return &c.broker.DefaultReplicationFactor }),
	boolField("auto.create.topics.enable", "whether a Metadata request for a missing topic creates it",
		func(c *serveConfig) *bool { return &c.broker.AutoCreateTopicsEnable }),
	stringField("authorizer.class.name", "CLASS",
		"empty for no authorizer (every request allowed); org.apache.kafka.metadata.authorizer.StandardAuthorizer decides with the cluster's ACLs",
		func(c *serveConfig) *string { return &c.broker.AuthorizerClassName }),
	{
		name: "super.users", placeholder: "PRINCIPALS",
		usage: "semicolon-separated principals the authorizer allows everything, e.g. User:admin;User:ops",
		get:   func(c *serveConfig) string { return strings.Join(c.broker.SuperUsers, ";") },
		set: func(c *serveConfig, s string) error {
			c.broker.SuperUsers = nil
			for _, u := range strings.Split(s, ";") {
				if u = strings.TrimSpace(u); u != "" {
					c.broker.SuperUsers = append(c.broker.SuperUsers, u)
				}
			}
			return nil
		},
	},
	boolField("allow.everyone.if.no.acl.found", "whether the authorizer allows a request on a resource no ACL names",
		func(c *serveConfig) *bool { return &c.broker.AllowEveryoneIfNoACLFound }),
	intField("message.max.bytes", "BYTES",
		"largest record batch accepted, after compression; the default of topics' max.message.bytes",
		func(c *serveConfig) *int32 { return &c.broker.MessageMaxBytes }),
	intField("fetch.max.bytes", "BYTES",
		"most bytes one consumer Fetch response carries, whatever the request asks (a larger first batch still goes whole)",
		func(c *serveConfig) *int32 { return &c.broker.FetchMaxBytes }),
	intField("socket.request.max.bytes", "BYTES", "largest request frame accepted; a larger one closes the connection",
		func(c *serveConfig) *int32 { return &c.broker.SocketRequestMaxBytes }),
	intField("max.connections", "N",
		"most client connections open at once; at the limit the listeners stop accepting until one closes (the inter-broker listener is exempt)",
		func(c *serveConfig) *int32 { return &c.broker.MaxConnections }),
	intField("max.connection.creation.rate", "N",
		"connections per second the broker accepts over its listeners but the inter-broker one before it delays accepting",
		func(c *serveConfig) *int32 { return &c.broker.MaxConnectionCreationRate }),
	intField("max.connections.per.ip", "N",
		"most connections from one IP address; a connection beyond it is closed at once",
		func(c *serveConfig) *int32 { return &c.broker.MaxConnectionsPerIP }),
	{
		name: "max.connections.per.ip.overrides", placeholder: "HOST:N,...",
		usage: "comma-separated host:count or ip:count exceptions to max.connections.per.ip",
		get: func(c *serveConfig) string {
			var out []string
			for h, n := range c.broker.MaxConnectionsPerIPOverrides {
				out = append(out, h+":"+strconv.Itoa(int(n)))
			}
			slices.Sort(out)
			return strings.Join(out, ",")
		},
		set: func(c *serveConfig, s string) (err error) {
			c.broker.MaxConnectionsPerIPOverrides, err = broker.ParseConnectionOverrides(s)
			return err
		},
	},
	msField("connections.max.idle.ms", 64, "close a connection that has sent or taken no bytes for this long",
		func(c *serveConfig) *time.Duration { return &c.broker.ConnectionsMaxIdle }),
	intField("queued.max.requests", "N",
		"most requests read but not yet handled, broker-wide; at the limit connections stop reading",
		func(c *serveConfig) *int32 { return &c.broker.QueuedMaxRequests }),
	intField("offsets.topic.num.partitions", "N", "partitions of __consumer_offsets, fixed when it is created",
		func(c *serveConfig) *int32 { return &c.broker.OffsetsTopicNumPartitions }),
	intField("offsets.topic.replication.factor", "N",
		"replication factor of __consumer_offsets (capped at the live brokers)",
		func(c *serveConfig) *int16 { return &c.broker.OffsetsTopicReplicationFactor }),
	intField("offsets.topic.segment.bytes", "BYTES", "segment size of __consumer_offsets",
		func(c *serveConfig) *int64 { return &c.broker.OffsetsTopicSegmentBytes }),
	intField("transaction.state.log.num.partitions", "N", "partitions of __transaction_state, fixed when it is created",
		func(c *serveConfig) *int32 { return &c.broker.TransactionStateLogNumPartitions }),
	intField("transaction.state.log.replication.factor", "N",
		"replication factor of __transaction_state (capped at the live brokers)",
		func(c *serveConfig) *int16 { return &c.broker.TransactionStateLogReplicationFactor }),
	intField("transaction.state.log.min.isr", "N", "min.insync.replicas of __transaction_state",
		func(c *serveConfig) *int32 { return &c.broker.TransactionStateLogMinISR }),
	intField("transaction.state.log.segment.bytes", "BYTES", "segment size of __transaction_state",
		func(c *serveConfig) *int64 { return &c.broker.TransactionStateLogSegmentBytes }),
	msField("transaction.max.timeout.ms", 32, "longest transaction timeout a producer may ask for",
		func(c *serveConfig) *time.Duration { return &c.broker.Transactions.MaxTimeout }),
	msField("transactional.id.expiration.ms", 32,
		"how long a transactional id with no open transaction is kept after its last update",
		func(c *serveConfig) *time.Duration { return &c.broker.Transactions.TransactionalIDExpiration }),
	msField("transaction.abort.timed.out.transaction.cleanup.interval.ms", 32,
		"how often transactions past their timeout are looked for and aborted",
		func(c *serveConfig) *time.Duration { return &c.broker.Transactions.AbortTimedOutInterval }),
	msField("transaction.remove.expired.transaction.cleanup.interval.ms", 32,
		"how often expired transactional ids are looked for and removed",
		func(c *serveConfig) *time.Duration { return &c.broker.Transactions.RemoveExpiredInterval }),
	boolField("transaction.partition.verification.enable",
		"whether a partition leader verifies with the transaction coordinator that a partition is in a producer's transaction before its first transactional write (KIP-890)",
		func(c *serveConfig) *bool { return &c.broker.TransactionPartitionVerification }),
	msField("add.partitions.to.txn.retry.backoff.ms", 32,
		"how often a partition leader asks again to add a partition to a transaction while the previous transaction's markers are being written",
		func(c *serveConfig) *time.Duration { return &c.broker.AddPartitionsRetryBackoff }),
	msField("add.partitions.to.txn.retry.backoff.max.ms", 32,
		"how long a partition leader keeps asking to add a partition to a transaction before the producer gets the retriable error",
		func(c *serveConfig) *time.Duration { return &c.broker.AddPartitionsRetryMax }),
	msField("log.retention.check.interval.ms", 32, "how often each log's retention (retention.ms, retention.bytes) runs",
		func(c *serveConfig) *time.Duration { return &c.broker.LogRetentionCheckInterval }),
	boolField("log.cleaner.enable",
		"whether the log cleaner compacts topics with cleanup.policy=compact (__consumer_offsets too)",
		func(c *serveConfig) *bool { return &c.broker.LogCleanerEnable }),
	msField("log.cleaner.backoff.ms", 32, "how long the log cleaner sleeps when no log needs cleaning",
		func(c *serveConfig) *time.Duration { return &c.broker.LogCleanerBackoff }),
	intField("log.cleaner.dedupe.buffer.size", "BYTES", "memory bound of the log cleaner's key-to-offset map",
		func(c *serveConfig) *int64 { return &c.broker.LogCleanerDedupeBufferSize }),
	intField("log.writeback.bytes", "BYTES",
		"Gregor's own: where appends are not fsynced before the ack (log.flush.interval.messages above 1), "+
			"start writing a log's data to disk each time this many bytes were appended "+
			"(and at once for an append of 64 KiB or more to a log holding no pages in the page-cache window); 0 leaves it to the OS",
		func(c *serveConfig) *int64 { return &c.broker.LogWritebackBytes }),
	intField("log.pagecache.keep.bytes", "BYTES",
		"Gregor's own: hold the page cache of appended log data to the newest this many bytes appended to any log, "+
			"so the cache reuses its pages instead of growing (pays on VMs whose free memory goes back to the host; "+
			"readers further behind read from disk); 0 leaves the page cache to the OS; "+
			"-1: 256 MiB where the kernel reports free pages to a hypervisor, else 0",
		func(c *serveConfig) *int64 { return &c.broker.LogPageCacheKeepBytes }),
	intField("log.prefault.bytes", "BYTES",
		"Gregor's own: extend the segment file of a log taking fast appends this far ahead of its end and read "+
			"those pages into the page cache in the background, so appends need not allocate them; 0 lets files grow with each write; "+
			"-1: 16 MiB without a page-cache window (log.pagecache.keep.bytes), else 0",
		func(c *serveConfig) *int64 { return &c.broker.LogPrefaultBytes }),
	msField("group.min.session.timeout.ms", 32, "shortest session timeout a group member may ask for",
		func(c *serveConfig) *time.Duration { return &c.broker.Groups.MinSessionTimeout }),
	msField("group.max.session.timeout.ms", 32, "longest session timeout a group member may ask for",
		func(c *serveConfig) *time.Duration { return &c.broker.Groups.MaxSessionTimeout }),
	msField("group.initial.rebalance.delay.ms", 32, "how long a new group waits for more members before its first rebalance",
		func(c *serveConfig) *time.Duration { return &c.broker.Groups.InitialRebalanceDelay }),
	msField("group.consumer.session.timeout.ms", 32, "how long a consumer group member (KIP-848 protocol) stays without a heartbeat before it is removed",
		func(c *serveConfig) *time.Duration { return &c.broker.Groups.ConsumerSessionTimeout }),
	msField("group.consumer.heartbeat.interval.ms", 32, "heartbeat interval consumer group members (KIP-848 protocol) are told to keep",
		func(c *serveConfig) *time.Duration { return &c.broker.Groups.ConsumerHeartbeatInterval }),
	{
		name: "group.consumer.migration.policy", placeholder: "POLICY",
		usage: "online migrations between the classic and the consumer protocol a group with members may make: bidirectional, upgrade, downgrade or disabled",
		get:   func(c *serveConfig) string { return c.broker.Groups.MigrationPolicy },
		set: func(c *serveConfig, s string) error {
			c.broker.Groups.MigrationPolicy = strings.ToLower(strings.TrimSpace(s))
			return nil
		},
	},
	intField("group.max.size", "N", "most members a group may have",
		func(c *serveConfig) *int32 { return &c.broker.Groups.MaxSize }),
	msField("group.consumer.min.session.timeout.ms", 32, "shortest consumer.session.timeout.ms a consumer group's configs may set",
		func(c *serveConfig) *time.Duration { return &c.broker.Groups.ConsumerMinSessionTimeout }),
	msField("group.consumer.max.session.timeout.ms", 32, "longest consumer.session.timeout.ms a consumer group's configs may set",
		func(c *serveConfig) *time.Duration { return &c.broker.Groups.ConsumerMaxSessionTimeout }),
	msField("group.consumer.min.heartbeat.interval.ms", 32, "shortest consumer.heartbeat.interval.ms a consumer group's configs may set",
		func(c *serveConfig) *time.Duration { return &c.broker.Groups.ConsumerMinHeartbeatInterval }),
	msField("group.consumer.max.heartbeat.interval.ms", 32, "longest consumer.heartbeat.interval.ms a consumer group's configs may set",
		func(c *serveConfig) *time.Duration { return &c.broker.Groups.ConsumerMaxHeartbeatInterval }),
	msField("group.share.session.timeout.ms", 32, "how long a share group member stays without a heartbeat before it is removed",
		func(c *serveConfig) *time.Duration { return &c.broker.Groups.ShareSessionTimeout }),
	msField("group.share.heartbeat.interval.ms", 32, "heartbeat interval share group members are told to keep",
		func(c *serveConfig) *time.Duration { return &c.broker.Groups.ShareHeartbeatInterval }),
	intField("group.share.max.size", "N", "most members a share group may have",
		func(c *serveConfig) *int32 { return &c.broker.Groups.ShareMaxSize }),
	msField("group.share.record.lock.duration.ms", 32, "how long a share group member holds the records it acquired",
		func(c *serveConfig) *time.Duration { return &c.broker.ShareRecordLockDuration }),
	intField("group.share.delivery.count.limit", "N", "deliveries of a record to a share group before it is archived",
		func(c *serveConfig) *int16 { return &c.broker.ShareDeliveryCountLimit }),
	intField("group.share.partition.max.record.locks", "N", "most records in flight per share partition",
		func(c *serveConfig) *int32 { return &c.broker.SharePartitionMaxRecordLocks }),
	msField("group.share.min.session.timeout.ms", 32, "shortest share.session.timeout.ms a share group's configs may set",
		func(c *serveConfig) *time.Duration { return &c.broker.Groups.ShareMinSessionTimeout }),
	msField("group.share.max.session.timeout.ms", 32, "longest share.session.timeout.ms a share group's configs may set",
		func(c *serveConfig) *time.Duration { return &c.broker.Groups.ShareMaxSessionTimeout }),
	msField("group.share.min.heartbeat.interval.ms", 32, "shortest share.heartbeat.interval.ms a share group's configs may set",
		func(c *serveConfig) *time.Duration { return &c.broker.Groups.ShareMinHeartbeatInterval }),
	msField("group.share.max.heartbeat.interval.ms", 32, "longest share.heartbeat.interval.ms a share group's configs may set",
		func(c *serveConfig) *time.Duration { return &c.broker.Groups.ShareMaxHeartbeatInterval }),
	msField("group.share.min.record.lock.duration.ms", 32, "shortest share.record.lock.duration.ms a share group's configs may set",
		func(c *serveConfig) *time.Duration { return &c.broker.ShareMinRecordLockDuration }),
	msField("group.share.max.record.lock.duration.ms", 32, "longest share.record.lock.duration.ms a share group's configs may set",
		func(c *serveConfig) *time.Duration { return &c.broker.ShareMaxRecordLockDuration }),
	intField("group.share.min.delivery.count.limit", "N", "least share.delivery.count.limit a share group's configs may set",
		func(c *serveConfig) *int16 { return &c.broker.ShareMinDeliveryCountLimit }),
	intField("group.share.max.delivery.count.limit", "N", "most share.delivery.count.limit a share group's configs may set",
		func(c *serveConfig) *int16 { return &c.broker.ShareMaxDeliveryCountLimit }),
	intField("group.share.min.partition.max.record.locks", "N", "least share.partition.max.record.locks a share group's configs may set",
		func(c *serveConfig) *int32 { return &c.broker.ShareMinPartitionMaxRecordLocks }),
	intField("group.share.max.partition.max.record.locks", "N", "most share.partition.max.record.locks a share group's configs may set",
		func(c *serveConfig) *int32 { return &c.broker.ShareMaxPartitionMaxRecordLocks }),
	intField("share.coordinator.state.topic.num.partitions", "N", "partitions of __share_group_state, fixed when it is created",
		func(c *serveConfig) *int32 { return &c.broker.ShareStateTopicNumPartitions }),
	intField("share.coordinator.state.topic.replication.factor", "N", "replication factor of __share_group_state (capped at the live brokers)",
		func(c *serveConfig) *int16 { return &c.broker.ShareStateTopicReplicationFactor }),
	intField("share.coordinator.state.topic.min.isr", "N", "min.insync.replicas of __share_group_state",
		func(c *serveConfig) *int32 { return &c.broker.ShareStateTopicMinISR }),
	{
		name: "offsets.retention.minutes", placeholder: "MINUTES",
		usage: "how long the offsets of an empty group are kept",
		get: func(c *serveConfig) string {
			return strconv.FormatInt(int64(c.broker.Groups.OffsetsRetention/time.Minute), 10)
		},
		set: func(c *serveConfig, s string) error {
			n, err := parseInt(s, 32)
			if err != nil {
				return err
			}
			if n < 1 {
				return fmt.Errorf("invalid value %q: below 1", s)
			}
			c.broker.Groups.OffsetsRetention = time.Duration(n) * time.Minute
			return nil
		},
	},
	{
		name: "log.level", placeholder: "LEVEL",
		usage: "least severe log level written: debug, info, warn or error",
		get:   func(c *serveConfig) string { return strings.ToLower(c.logLevel.String()) },
		set: func(c *serveConfig, s string) error {
			switch strings.ToLower(strings.TrimSpace(s)) {
			case "debug":
				c.logLevel = slog.LevelDebug
			case "info":
				c.logLevel = slog.LevelInfo
			case "warn":
				c.logLevel = slog.LevelWarn
			case "error":
				c.logLevel = slog.LevelError
			default:
				return fmt.Errorf("invalid value %q: want debug, info, warn or error", s)
			}
			return nil
		},
	},
	{
		name: "log.format", placeholder: "FORMAT",
		usage: "log format on stderr: text or json",
		get:   func(c *serveConfig) string { return c.logFormat },
		set: func(c *serveConfig, s string) error {
			f := strings.ToLower(strings.TrimSpace(s))
			if f != "text" && f != "json" {
				return fmt.Errorf("invalid value %q: want text or json", s)
			}
			c.logFormat = f
			return nil
		},
	},
}

// topicDefaultKeys returns the broker configs that stand for topic configs
// (Kafka's ServerTopicConfigSynonyms) and are not serve's own keys, sorted.
// message.max.bytes is one, but it is also a broker.Config field.
func topicDefaultKeys() []string {
	var out []string
	for _, d := range configs.Topics() {
		for _, s := range d.Synonyms {
			if !isKey(s) && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	slices.Sort(out)
	return out
}

func isKey(name string) bool {
	return slices.ContainsFunc(keys, func(k key) bool { return k.name == name || slices.Contains(k.aliases, name) })
}

// listenerPrefix starts the per-listener settings, Kafka's
// listener.name.<listener>.<setting> (broker.Config.ListenerConfigs).
// They are read from the config file and from flags; not from the
// environment, whose variable names could not tell the listener name's
// underscores from the dots.
const listenerPrefix = "listener.name."

// oauthPrefix starts the broker's OAUTHBEARER settings
// (sasl.oauthbearer.jwks.endpoint.url, ...; broker.Config.OAuthBearerConfigs),
// read like the per-listener ones.
const oauthPrefix = "sasl.oauthbearer."

func isListenerKey(name string) bool {
	return strings.HasPrefix(strings.ToLower(name), listenerPrefix) && len(name) > len(listenerPrefix)
}

// isPrefixedKey reports whether name is a per-listener or an OAUTHBEARER
// setting, whose names are not all known before they are read.
func isPrefixedKey(name string) bool {
	return isListenerKey(name) || strings.HasPrefix(strings.ToLower(name), oauthPrefix) && len(name) > len(oauthPrefix)
}

// addListenerFlags defines a flag for each per-listener setting among
// args (--listener.name.<listener>.<setting>[=value]): their names are
// not known before the command line is read.
func (l *configLoader) addListenerFlags(args []string) {
	for _, a := range args {
		if a == "--" {
			return
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if strings.HasPrefix(a, "--") && isPrefixedKey(name) && l.own.Lookup(name) == nil {
			l.bind(l.own, name, "VALUE", "", "a per-listener or OAUTHBEARER setting")
		}
	}
}

// source is where a value came from, in increasing precedence.
type source int

const (
	srcNone source = iota
	srcFile
	srcEnv
	srcFlag
)

// configLoader holds serve's flags, bound to an isolated viper instance
// that also reads the config file and the environment.
type configLoader struct {
	v *viper.Viper
	// own holds --config and the flags of serve's keys and aliases;
	// topic the flags of the topic defaults. They are separate so the help
	// can list them apart.
	own, topic *pflag.FlagSet
	file       string
	topicKeys  []string
}

// newConfigLoader defines the flags. Every flag is a string, parsed in
// load, so that a value reads the same from a flag, the environment or the
// file, and errors name the source.
func newConfigLoader() *configLoader {
	l := &configLoader{
		v:         viper.New(),
		own:       pflag.NewFlagSet("serve", pflag.ContinueOnError),
		topic:     pflag.NewFlagSet("topic defaults", pflag.ContinueOnError),
		topicKeys: topicDefaultKeys(),
	}
	l.v.SetConfigType("yaml")
	l.v.SetEnvPrefix(envPrefix)
	l.v.SetEnvKeyReplacer(strings.NewReplacer(".", "_", "-", "_"))
	// GREGOR_ADMIN_LISTENER= disables the admin server, as
	// --admin.listener= does.
	l.v.AllowEmptyEnv(true)
	l.v.AutomaticEnv()

	l.own.StringVar(&l.file, "config", "", "read settings from this YAML `FILE` with Kafka-style keys (node.id: 1)")
	def := defaultServeConfig()
	for _, k := range keys {
		l.bind(l.own, k.name, k.placeholder, k.get(&def), k.usage)
		for _, a := range k.aliases {
			l.bind(l.own, a, k.placeholder, "", k.aliasUsage)
		}
	}
	for _, name := range l.topicKeys {
		d, _ := configs.Broker(name)
		var dflt, doc, typ string
		if d != nil {
			doc, typ = d.Doc, strings.ToUpper(d.Type.String())
			if !d.NullDefault {
				dflt = d.Default
			}
		}
		if name == flushMessages {
			dflt = flushMessagesDurable
			doc += " Gregor's default, 1, fsyncs before acknowledging (with group commit); Kafka's is 9223372036854775807 (page cache)."
		}
		l.bind(l.topic, name, typ, dflt, doc)
	}
	return l
}

// bind defines a string flag called name and binds it to the viper key of
// the same name. The default is only shown in the help: load applies
// defaults itself.
func (l *configLoader) bind(fs *pflag.FlagSet, name, placeholder, dflt, usage string) {
	fs.Var(&stringFlag{value: dflt, placeholder: placeholder}, name, usage)
	if err := l.v.BindPFlag(name, fs.Lookup(name)); err != nil {
		panic(err) // only for a nil flag, which was just defined
	}
}

// stringFlag is a string flag whose Type, shown in the help, is a
// placeholder such as ID or HOST:PORT. viper reads it with ValueString,
// as it does any flag type it does not convert itself.
type stringFlag struct {
	value, placeholder string
}

func (f *stringFlag) String() string     { return f.value }
func (f *stringFlag) Set(s string) error { f.value = s; return nil }
func (f *stringFlag) Type() string       { return f.placeholder }

// envName is the environment variable of a key.
func envName(name string) string {
	return envPrefix + "_" + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(name))
}

// source says where the value of name comes from. viper layers the values
// itself but does not say where one came from; this follows its order
// (flag, environment, file), for messages and for pick.
func (l *configLoader) source(name string) source {
	if f := l.flag(name); f != nil && f.Changed {
		return srcFlag
	}
	if _, ok := os.LookupEnv(envName(name)); ok {
		return srcEnv
	}
	if l.v.InConfig(name) {
		return srcFile
	}
	return srcNone
}

func (l *configLoader) flag(name string) *pflag.Flag {
	if f := l.own.Lookup(name); f != nil {
		return f
	}
	return l.topic.Lookup(name)
}

// isKeyFlag reports whether name is a key serve reads, rather than one of
// the flags that are not keys (--config, --help).
func (l *configLoader) isKeyFlag(name string) bool {
	return name != "config" && name != "help" && l.flag(name) != nil
}

// describe names where a value of name came from, for messages.
func (l *configLoader) describe(name string, src source) string {
	switch src {
	case srcFlag:
		return "flag --" + name
	case srcEnv:
		return "environment variable " + envName(name)
	case srcFile:
		return "config file " + l.file
	}
	return "default"
}

// value returns the value of name as a string and where it came from;
// srcNone when it is not set.
func (l *configLoader) value(name string) (string, source, error) {
	src := l.source(name)
	if src == srcNone || !l.v.IsSet(name) {
		return "", srcNone, nil
	}
	s, err := valueString(l.v.Get(name))
	if err != nil {
		return "", src, fmt.Errorf("%s (%s): %w", name, l.describe(name, src), err)
	}
	return s, src, nil
}

// valueString turns a value as YAML decodes it into the string Kafka's
// config parser would see: lists are comma-joined.
func valueString(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case float32:
		return strconv.FormatFloat(float64(v), 'f', -1, 32), nil
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			if _, ok := e.([]any); ok {
				return "", errors.New("a list of lists is not a value")
			}
			s, err := valueString(e)
			if err != nil {
				return "", err
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), nil
	case []string:
		return strings.Join(v, ","), nil
	case map[string]any:
		return "", errors.New("a map is not a value")
	}
	return fmt.Sprint(v), nil
}

// pick resolves a setting given under several names (name first, then its
// aliases or synonyms): values from a lower-precedence source than the
// highest one any of them is set at are dropped, so that a flag
// --log.retention.hours beats log.retention.ms from the config file. It
// returns the names left, in the order given, with their values.
func (l *configLoader) pick(names []string) (set []string, values map[string]string, src source, err error) {
	values = map[string]string{}
	srcs := map[string]source{}
	for _, n := range names {
		v, s, err := l.value(n)
		if err != nil {
			return nil, nil, srcNone, err
		}
		if s > src {
			src = s
		}
		values[n], srcs[n] = v, s
	}
	if src == srcNone {
		return nil, nil, srcNone, nil
	}
	for _, n := range names {
		if srcs[n] == src {
			set = append(set, n)
		} else {
			delete(values, n)
		}
	}
	return set, values, src, nil
}

// load builds the config: broker.DefaultConfig, then the config file, the
// environment and the flags, in increasing precedence.
func (l *configLoader) load() (serveConfig, error) {
	c := defaultServeConfig()
	if l.file != "" {
		l.v.SetConfigFile(l.file)
		if err := l.v.ReadInConfig(); err != nil {
			return c, fmt.Errorf("read config file %s: %w", l.file, err)
		}
	}

	for _, k := range keys {
		names := append([]string{k.name}, k.aliases...)
		set, values, src, err := l.pick(names)
		if err != nil {
			return c, err
		}
		if len(set) == 0 {
			continue
		}
		// Kafka: node.id and broker.id must agree; log.dirs beats log.dir.
		if k.name == "node.id" && len(set) == 2 && strings.TrimSpace(values[set[0]]) != strings.TrimSpace(values[set[1]]) {
			return c, fmt.Errorf("node.id %q (%s) and broker.id %q (%s) differ; set node.id only",
				values[set[0]], l.describe(set[0], src), values[set[1]], l.describe(set[1], src))
		}
		if err := k.set(&c, values[set[0]]); err != nil {
			return c, fmt.Errorf("%s (%s): %w", set[0], l.describe(set[0], src), err)
		}
	}

	c.broker.StaticTopicDefaults = map[string]string{}
	done := map[string]bool{}
	for _, name := range l.topicKeys {
		if done[name] {
			continue
		}
		family := sameSetting(name, l.topicKeys)
		set, values, src, err := l.pick(family)
		if err != nil {
			return c, err
		}
		for _, n := range family {
			done[n] = true
		}
		for _, n := range set {
			if d, ok := configs.Broker(n); ok {
				if err := d.Validate(values[n]); err != nil {
					return c, fmt.Errorf("%s (%s): %w", n, l.describe(n, src), err)
				}
			}
			c.broker.StaticTopicDefaults[n] = strings.TrimSpace(values[n])
		}
	}
	if _, ok := c.broker.StaticTopicDefaults[flushMessages]; !ok {
		c.broker.StaticTopicDefaults[flushMessages] = flushMessagesDurable
	}

	for _, k := range l.v.AllKeys() {
		if !isPrefixedKey(k) {
			continue
		}
		v, _, err := l.value(k)
		if err != nil {
			return c, err
		}
		m := &c.broker.ListenerConfigs
		if !isListenerKey(k) {
			m = &c.broker.OAuthBearerConfigs
		}
		if *m == nil {
			*m = map[string]string{}
		}
		(*m)[strings.ToLower(k)] = v
	}

	c.warnings = l.ignored()
	if err := c.broker.Validate(); err != nil {
		return c, err
	}
	return c, nil
}

// sameSetting returns name and the other names of the same broker setting
// among candidates, in Kafka's order of precedence: log.retention.ms,
// log.retention.minutes, log.retention.hours. Two names are one setting
// when each lists the other as a synonym; log.flush.scheduler.interval.ms
// is a fallback of log.flush.interval.ms, not another name of it.
func sameSetting(name string, candidates []string) []string {
	d, ok := configs.Broker(name)
	if !ok || len(d.Synonyms) == 0 {
		return []string{name}
	}
	var out []string
	for _, s := range d.Synonyms {
		o, ok := configs.Broker(s)
		if s == name || ok && slices.Contains(o.Synonyms, name) && slices.Contains(candidates, s) {
			out = append(out, s)
		}
	}
	if !slices.Contains(out, name) {
		out = append([]string{name}, out...)
	}
	return out
}

// ignored returns a warning for every key in the config file and every
// GREGOR_ environment variable that serve does not read. Unknown flags are
// errors, as usual.
func (l *configLoader) ignored() []string {
	used := func(name string) bool { return l.isKeyFlag(name) || isPrefixedKey(name) }
	var out []string
	warn := func(name, where string) {
		if d, ok := configs.Broker(name); ok && d.Unused {
			out = append(out, fmt.Sprintf("%s (%s) is a Kafka broker config Gregor does not act on; ignored", name, where))
		} else if ok && d.DynamicOnly {
			// As in Kafka, whose server.properties cannot set them either.
			out = append(out, fmt.Sprintf("%s (%s) can only be set dynamically (IncrementalAlterConfigs on the broker, as kafka-configs --alter --entity-type brokers does); ignored", name, where))
		} else if ok {
			out = append(out, fmt.Sprintf("%s (%s) is a Kafka broker config Gregor does not support yet; ignored", name, where))
		} else {
			out = append(out, fmt.Sprintf("%s (%s) is not a known config; ignored", name, where))
		}
	}
	if l.file != "" {
		ks := l.v.AllKeys()
		slices.Sort(ks)
		for _, k := range ks {
			if l.v.InConfig(k) && !used(k) {
				warn(k, "config file "+l.file)
			}
		}
	}

	byEnv := map[string]string{}
	for _, d := range configs.Brokers() {
		byEnv[envName(d.Name)] = d.Name
	}
	for _, fs := range []*pflag.FlagSet{l.own, l.topic} {
		fs.VisitAll(func(f *pflag.Flag) {
			if l.isKeyFlag(f.Name) {
				byEnv[envName(f.Name)] = f.Name
			}
		})
	}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, envPrefix+"_") {
			env = append(env, name)
		}
	}
	slices.Sort(env)
	for _, e := range env {
		if slices.Contains(cliEnvVars, e) {
			continue // read by the client commands, not by serve
		}
		k, ok := byEnv[e]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("environment variable %s does not name a known config; ignored", e))
		case !used(k):
			warn(k, "environment variable "+e)
		}
	}
	return out
}

func parseList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func parseInt(s string, bits int) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, bits)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("invalid value %q: out of range for a %d-bit integer", s, bits)
		}
		return 0, fmt.Errorf("invalid value %q: not an integer", s)
	}
	return n, nil
}

// parseBool accepts true and false in any case, as Kafka does.
func parseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("invalid value %q: want true or false", s)
}

// msField is a setting in milliseconds backed by a time.Duration; bits is
// the size of Kafka's type for it (32 for an int config, 64 for a long).
func msField(name string, bits int, usage string, field func(*serveConfig) *time.Duration) key {
	return key{
		name: name, placeholder: "MS", usage: usage,
		get: func(c *serveConfig) string { return strconv.FormatInt(field(c).Milliseconds(), 10) },
		set: func(c *serveConfig, s string) error {
			ms, err := parseInt(s, bits)
			if err != nil {
				return err
			}
			if ms < 0 {
				return fmt.Errorf("invalid value %q: below 0", s)
			}
			if ms > math.MaxInt64/int64(time.Millisecond) {
				return fmt.Errorf("invalid value %q: out of range", s)
			}
			*field(c) = time.Duration(ms) * time.Millisecond
			return nil
		},
	}
}

// secondsField is a setting in whole seconds (a Kafka long) backed by a
// time.Duration; it must be at least 1.
func secondsField(name, usage string, field func(*serveConfig) *time.Duration) key {
	return key{
		name: name, placeholder: "SECONDS", usage: usage,
		get: func(c *serveConfig) string { return strconv.FormatInt(int64(*field(c)/time.Second), 10) },
		set: func(c *serveConfig, s string) error {
			n, err := parseInt(s, 64)
			if err != nil {
				return err
			}
			if n < 1 || n > math.MaxInt64/int64(time.Second) {
				return fmt.Errorf("invalid value %q: out of range", s)
			}
			*field(c) = time.Duration(n) * time.Second
			return nil
		},
	}
}

// intField is an integer setting, parsed with the bounds of its type.
func intField[T int16 | int32 | int64](name, placeholder, usage string, field func(*serveConfig) *T) key {
	bits := 64
	switch any(T(0)).(type) {
	case int16:
		bits = 16
	case int32:
		bits = 32
	}
	return key{
		name: name, placeholder: placeholder, usage: usage,
		get: func(c *serveConfig) string { return strconv.FormatInt(int64(*field(c)), 10) },
		set: func(c *serveConfig, s string) error {
			n, err := parseInt(s, bits)
			if err != nil {
				return err
			}
			*field(c) = T(n)
			return nil
		},
	}
}

// boolField is a true or false setting.
func boolField(name, usage string, field func(*serveConfig) *bool) key {
	return key{
		name: name, placeholder: "BOOL", usage: usage,
		get: func(c *serveConfig) string { return strconv.FormatBool(*field(c)) },
		set: func(c *serveConfig, s string) error {
			b, err := parseBool(s)
			if err != nil {
				return err
			}
			*field(c) = b
			return nil
		},
	}
}

// stringField is a setting taken as written, less surrounding spaces.
func stringField(name, placeholder, usage string, field func(*serveConfig) *string) key {
	return key{
		name: name, placeholder: placeholder, usage: usage,
		get: func(c *serveConfig) string { return *field(c) },
		set: func(c *serveConfig, s string) error {
			*field(c) = strings.TrimSpace(s)
			return nil
		},
	}
}

// listField is a comma-separated setting; empty items are dropped.
func listField(name, placeholder, usage string, field func(*serveConfig) *[]string) key {
	return key{
		name: name, placeholder: placeholder, usage: usage,
		get: func(c *serveConfig) string { return strings.Join(*field(c), ",") },
		set: func(c *serveConfig, s string) error {
			*field(c) = parseList(s)
			return nil
		},
	}
}

// withAliases gives k older names, with the help of their flags.
func withAliases(k key, aliasUsage string, aliases ...string) key {
	k.aliases, k.aliasUsage = aliases, aliasUsage
	return k
}

// sslKey is one of the ssl.* settings, documented as the config catalogue
// documents it.
func sslKey(name string) key {
	d, _ := configs.Broker(name)
	placeholder := "VALUE"
	switch {
	case strings.HasSuffix(name, ".location"):
		placeholder = "FILE"
	case d.Type == configs.TypePassword:
		placeholder = "PEM"
	case d.Type == configs.TypeList:
		placeholder = "LIST"
	case d.Type == configs.TypeBoolean:
		placeholder = "BOOL"
	}
	if name == "ssl.key.password" {
		placeholder = "PASSWORD"
	}
	return key{
		name: name, placeholder: placeholder, usage: d.Doc,
		get: func(c *serveConfig) string {
			v, _ := c.broker.SSL.Setting(name)
			return v
		},
		set: func(c *serveConfig, s string) error {
			c.broker.SSL.Set(name, strings.TrimSpace(s))
			return nil
		},
	}
}
