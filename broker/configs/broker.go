package configs

// The broker configs of Kafka 4.4 that Gregor describes: every broker
// synonym of a topic config, plus the settings a broker reports that mean
// something in Gregor. Update modes are Kafka's: the primary broker synonym
// of each topic config is cluster-wide dynamic, its secondary synonyms in
// other units (log.retention.hours, log.roll.hours, ...) are read-only, and
// listener settings can only be changed per broker.
//
// Kafka 4.4 reports about 350 broker configs; these are the ones a client or
// an operator tool (kafka-configs --describe --all) reads that have a meaning
// here, some reported with Kafka's default although Gregor has no such knob
// (num.io.threads, num.network.threads, background.threads: Gregor runs a
// goroutine per connection and request, so the values are accepted and
// unused). Every other config Kafka reports (kafka_broker.go, generated from
// the reference broker by testdata/cfggen) is described as unused: Kafka's
// type and default, read-only, refused as a dynamic change ("Cannot update
// these configs dynamically") and ignored with a warning at start. Among
// them: KRaft and the controller quorum (Gregor keeps cluster metadata in
// etcd), replica fetcher tuning and the client quotas, the TLS settings for
// key store formats Gregor does not read, SASL and delegation tokens,
// transactions, share groups and the newer group protocols, tiered storage,
// the log cleaner's threads and I/O tuning, limits Gregor does not enforce,
// socket tuning, purgatories, metrics reporters, policies and plugins.
//
// The replication throttle rates are not among the configs Kafka reports:
// they exist only as dynamic configs (Def.DynamicOnly), and are described
// where set.
//
// Names Kafka does not know are custom configs: accepted and stored as they
// are in broker configs, as Kafka does, but not validated.

// brokerFamilies are Kafka's DynamicBrokerConfig.brokerConfigSynonyms: the
// names one broker setting goes by, in order of precedence.
// log.flush.scheduler.interval.ms stands alone: it is a fallback of
// log.flush.interval.ms, not the other way round.
var brokerFamilies = map[string][]string{
	"log.roll.ms":           {"log.roll.ms", "log.roll.hours"},
	"log.roll.hours":        {"log.roll.ms", "log.roll.hours"},
	"log.roll.jitter.ms":    {"log.roll.jitter.ms", "log.roll.jitter.hours"},
	"log.roll.jitter.hours": {"log.roll.jitter.ms", "log.roll.jitter.hours"},
	"log.flush.interval.ms": {"log.flush.interval.ms", "log.flush.scheduler.interval.ms"},
	"log.retention.ms":      {"log.retention.ms", "log.retention.minutes", "log.retention.hours"},
	"log.retention.minutes": {"log.retention.ms", "log.retention.minutes", "log.retention.hours"},
	"log.retention.hours":   {"log.retention.ms", "log.retention.minutes", "log.retention.hours"},
}

const defaultSecurityProtocolMap = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"

var brokerDefs = []*Def{
	// Identity and listeners.
	{
		Name: "node.id", Type: TypeInt, NullDefault: true,
		Doc: "Id of this node in the cluster. Required: it has no default.",
	},
	{
		Name: "broker.id", Type: TypeInt, Default: "-1",
		Doc: "Older name of the broker's id; when set it must equal node.id. It is reported equal to node.id.",
	},
	{
		Name: "broker.rack", Type: TypeString, NullDefault: true,
		Doc: "Rack (or availability zone) of the broker, given to clients in metadata. Unset means no rack.",
	},
	{
		Name: "broker.session.timeout.ms", Type: TypeInt, Default: "9000",
		Doc: "How long a broker that stops heartbeating stays registered in the cluster before it is fenced.",
	},
	{
		Name: "controlled.shutdown.enable", Type: TypeBoolean, Default: "true",
		Doc: "Whether a broker that is stopped first has the controller move its partition leaderships to other in-sync replicas.",
	},
	{
		Name: "auto.leader.rebalance.enable", Type: TypeBoolean, Default: "true",
		Doc: "Whether the controller gives partitions back to their preferred leader, the first replica, when it is in sync again.",
	},
	{
		Name: "leader.imbalance.check.interval.seconds", Type: TypeLong, Default: "300",
		Doc: "How often the controller looks for partitions to give back to their preferred leader.",
	},
	{
		Name: "listeners", Type: TypeList, Default: "PLAINTEXT://:9092", Update: UpdatePerBroker,
		Doc: "Comma-separated listener URIs the broker binds to, as NAME://host:port. An empty host binds the default interface, 0.0.0.0 all of them.",
	},
	{
		Name: "advertised.listeners", Type: TypeList, NullDefault: true,
		Doc: "Listener URIs given to clients in metadata when they differ from listeners, for example behind NAT or a load balancer. Unset means listeners is advertised.",
	},
	{
		Name: "listener.security.protocol.map", Type: TypeString, Default: defaultSecurityProtocolMap, Update: UpdatePerBroker,
		Doc: "Security protocol of each listener name, as NAME:PROTOCOL pairs separated by commas.",
	},
	{
		Name: "inter.broker.listener.name", Type: TypeString, NullDefault: true,
		Doc: "Name of the listener brokers use to reach each other. Unset means the listener named PLAINTEXT, or the first listener when none is.",
	},
	{
		Name: "log.dirs", Type: TypeList, NullDefault: true,
		Doc: "Comma-separated directories holding partition data. Unset means log.dir is used.",
	},
	{
		Name: "log.dir", Type: TypeList, Default: "/tmp/kafka-logs",
		Doc: "Directory holding partition data when log.dirs is not set.",
	},

	// SSL listeners (broker/tls.go). Read at start only: a changed key or
	// trust store file is picked up by itself, and nothing else can be
	// changed dynamically. listener.name.<listener>.ssl.* overrides each
	// for one listener.
	{
		Name: "ssl.keystore.type", Type: TypeString, Default: "JKS",
		Doc: "Format of the key store. Gregor reads PEM only and refuses to start an SSL listener with another.",
	},
	{
		Name: "ssl.keystore.location", Type: TypeString, NullDefault: true,
		Doc: "PEM file holding the private key and the certificate chain of SSL listeners; read again when it changes.",
	},
	{
		Name: "ssl.keystore.certificate.chain", Type: TypePassword, NullDefault: true,
		Doc: "Certificate chain of SSL listeners as PEM text, leaf first, in place of ssl.keystore.location.",
	},
	{
		Name: "ssl.keystore.key", Type: TypePassword, NullDefault: true,
		Doc: "Private key of SSL listeners as PEM text (PKCS#8), in place of ssl.keystore.location.",
	},
	{
		Name: "ssl.key.password", Type: TypePassword, NullDefault: true,
		Doc: "Password of an encrypted PKCS#8 private key (PBES2: PBKDF2 with HMAC-SHA1 or SHA-2, AES-CBC).",
	},
	{
		Name: "ssl.truststore.type", Type: TypeString, Default: "JKS",
		Doc: "Format of the trust store. Gregor reads PEM only.",
	},
	{
		Name: "ssl.truststore.location", Type: TypeString, NullDefault: true,
		Doc: "PEM file of the CA certificates client and broker certificates are verified with; read again when it changes. Unset means the system's.",
	},
	{
		Name: "ssl.truststore.certificates", Type: TypePassword, NullDefault: true,
		Doc: "CA certificates as PEM text, in place of ssl.truststore.location.",
	},
	{
		Name: "ssl.client.auth", Type: TypeString, Default: "none", check: oneOf("required", "requested", "none"),
		Doc: "Whether SSL listeners ask clients for a certificate: required, requested (verified when given) or none.",
	},
	{
		Name: "ssl.enabled.protocols", Type: TypeList, Default: "TLSv1.2,TLSv1.3",
		Doc: "TLS versions SSL listeners accept; Gregor enables the range from the lowest to the highest listed.",
	},
	{
		Name: "ssl.principal.mapping.rules", Type: TypeString, Default: "DEFAULT",
		Doc: "Rules mapping a client certificate's subject DN to a principal name: RULE:pattern/replacement/[LU] or DEFAULT (the DN), comma-separated, the first that applies wins.",
	},
	{
		Name: "ssl.cipher.suites", Type: TypeList, Default: "",
		Doc: "Cipher suites SSL listeners allow, by IANA name, for TLS 1.2 and below (TLS 1.3's are not configurable in Go). Empty allows Go's defaults.",
	},
	{
		Name: "ssl.allow.dn.changes", Type: TypeBoolean, Default: "false",
		Doc: "Whether a reloaded key store may hold a certificate with another subject DN; a reload that changes it is refused otherwise.",
	},
	{
		Name: "ssl.allow.san.changes", Type: TypeBoolean, Default: "false",
		Doc: "Whether a reloaded key store may hold a certificate with other subject alternative names; a reload that changes them is refused otherwise.",
	},
	{
		Name: "ssl.endpoint.identification.algorithm", Type: TypeString, Default: "https",
		Doc: "https checks that another broker's certificate names the host dialled on the inter-broker listener; empty does not.",
	},

	// Topic creation defaults.
	{
		Name: "num.partitions", Type: TypeInt, Default: "1", check: atLeast(1),
		Doc: "Partition count of topics created automatically or without a partition count.",
	},
	{
		Name: "default.replication.factor", Type: TypeInt, Default: "1",
		Doc: "Replication factor of topics created automatically or without a replication factor.",
	},
	{
		Name: "auto.create.topics.enable", Type: TypeBoolean, Default: "true",
		Doc: "Whether a Metadata request for a topic that does not exist creates it with the default settings.",
	},
	{
		Name: "sasl.enabled.mechanisms", Type: TypeList, Default: "GSSAPI",
		Doc: "SASL mechanisms SASL listeners offer. Gregor has PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512; the default, GSSAPI, is refused at start on a broker with a SASL listener.",
	},
	{
		Name: "sasl.mechanism.inter.broker.protocol", Type: TypeString, Default: "GSSAPI",
		Doc: "SASL mechanism of the broker's own connections when the inter-broker listener is a SASL one.",
	},
	{
		Name: "sasl.server.max.receive.size", Type: TypeInt, Default: "524288",
		Doc: "Largest frame a connection may send before it has authenticated; a larger one closes it.",
	},
	{
		Name: "connections.max.reauth.ms", Type: TypeLong, Default: "0",
		Doc: "Longest a SASL authentication holds, 0 for ever. Past it a client must authenticate again on its connection, or is disconnected at its next request.",
	},
	{
		Name: "connection.failed.authentication.delay.ms", Type: TypeInt, Default: "100",
		Doc: "How long the answer to a failed authentication, and the close that follows, are held back.",
	},
	{
		Name: "delete.topic.enable", Type: TypeBoolean, Default: "true",
		Doc: "Whether DeleteTopics deletes topics. Gregor always does.",
	},
	{
		Name: "authorizer.class.name", Type: TypeString, Default: "",
		Doc: "Authorizer that checks ACLs. Empty: none, every request is allowed, as in Gregor.",
	},

	// Requests and connections.
	{
		Name: "message.max.bytes", Type: TypeInt, Default: "1048588", check: atLeast(0), Update: UpdateClusterWide,
		Doc: "Largest record batch the broker accepts, after compression; topics override it with max.message.bytes.",
	},
	{
		Name: "max.decompressed.message.bytes", Type: TypeInt, Default: "2147483639", check: between(1, 2147483639), Update: UpdateClusterWide,
		Doc: "Default for max.decompressed.message.bytes: largest size one record may have once decompressed.",
	},
	{
		Name: "fetch.max.bytes", Type: TypeInt, Default: "57671680", check: atLeast(1024),
		Doc: "Most bytes one consumer Fetch response carries, whatever its max_bytes asks; a larger first batch still goes whole.",
	},
	{
		Name: "socket.request.max.bytes", Type: TypeInt, Default: "104857600", check: atLeast(1),
		Doc: "Largest request the broker reads from a connection; a larger size prefix closes the connection.",
	},
	{
		Name: "queued.max.requests", Type: TypeInt, Default: "500", check: atLeast(1),
		Doc: "Number of received requests that may wait for a handler before the broker stops reading from connections.",
	},
	{
		Name: "connections.max.idle.ms", Type: TypeLong, Default: "600000",
		Doc: "Time after which an idle client connection is closed.",
	},
	{
		Name: "max.connections", Type: TypeInt, Default: maxInt32, check: atLeast(0), Update: UpdateClusterWide,
		Doc: "Most connections the broker accepts at once; further connections wait or are refused.",
	},
	{
		Name: "max.connections.per.ip", Type: TypeInt, Default: maxInt32, check: atLeast(0), Update: UpdateClusterWide,
		Doc: "Most connections the broker accepts from one IP address; new connections beyond it are closed.",
	},
	{
		Name: "max.connection.creation.rate", Type: TypeInt, Default: maxInt32, check: atLeast(0), Update: UpdateClusterWide,
		Doc: "Most connections per second the broker accepts over its listeners but the inter-broker one; beyond it accepting is delayed. listener.name.<listener>.max.connection.creation.rate bounds one listener, which otherwise has this bound of its own too.",
	},
	{
		Name: "num.network.threads", Type: TypeInt, Default: "3", check: atLeast(1), Update: UpdateClusterWide,
		Doc: "Threads a Kafka broker uses to read requests and write responses. Gregor serves each connection on its own goroutine: the value is accepted and not used.",
	},
	{
		Name: "num.io.threads", Type: TypeInt, Default: "8", check: atLeast(1), Update: UpdateClusterWide,
		Doc: "Threads a Kafka broker uses to handle requests. Gregor handles each request on a goroutine: the value is accepted and not used.",
	},
	{
		Name: "background.threads", Type: TypeInt, Default: "10", check: atLeast(1), Update: UpdateClusterWide,
		Doc: "Threads a Kafka broker uses for background work. Gregor runs such work on goroutines: the value is accepted and not used.",
	},
	{
		Name: "max.incremental.fetch.session.cache.slots", Type: TypeInt, Default: "1000", check: atLeast(0),
		Doc: "Most incremental fetch sessions the broker keeps; when full, an idle session may be evicted for a new one.",
	},

	// Replication.
	{
		Name: "replica.lag.time.max.ms", Type: TypeLong, Default: "30000",
		Doc: "Time a follower may go without fetching, or without catching up to the leader's log end, before it is removed from the in-sync set.",
	},
	{
		Name: "replica.selector.class", Type: TypeClass, NullDefault: true,
		Doc: "Which replica consumers fetch from: unset or LeaderSelector, the leader; RackAwareReplicaSelector, an in-sync replica in the consumer's rack (KIP-392).",
	},
	{
		Name: "replica.fetch.wait.max.ms", Type: TypeInt, Default: "500",
		Doc: "How long a follower's fetch waits at the leader for new records.",
	},
	{
		Name: "replica.high.watermark.checkpoint.interval.ms", Type: TypeLong, Default: "5000",
		Doc: "How often each partition's high watermark is written to disk.",
	},
	// Replication throttles (Kafka's QuotaConfig.brokerQuotaConfigs): set
	// only dynamically, per broker or as the cluster default, in bytes per
	// second; Long.MAX_VALUE, the default, throttles nothing. They apply to
	// the replicas topics list in leader.replication.throttled.replicas
	// and follower.replication.throttled.replicas.
	{
		Name: "leader.replication.throttled.rate", Type: TypeLong, Default: maxInt64, check: atLeast(0),
		Update: UpdateClusterWide, DynamicOnly: true,
		Doc: "Upper bound, in bytes per second, of what this broker sends as leader to followers that are out of sync and listed in their topic's leader.replication.throttled.replicas. Set only dynamically.",
	},
	{
		Name: "follower.replication.throttled.rate", Type: TypeLong, Default: maxInt64, check: atLeast(0),
		Update: UpdateClusterWide, DynamicOnly: true,
		Doc: "Upper bound, in bytes per second, of what this broker fetches as an out-of-sync follower for replicas listed in their topic's follower.replication.throttled.replicas. Set only dynamically.",
	},
	{
		Name: "replica.alter.log.dirs.io.max.bytes.per.second", Type: TypeLong, Default: maxInt64, check: atLeast(0),
		Update: UpdateClusterWide, DynamicOnly: true,
		Doc: "Upper bound, in bytes per second, of what moves of replicas between this broker's log directories (AlterReplicaLogDirs) copy. Set only dynamically.",
	},
	{
		Name: "replication.quota.window.num", Type: TypeInt, Default: "11", check: atLeast(1),
		Doc: "Number of samples the replication throttles measure their rate over.",
	},
	{
		Name: "replication.quota.window.size.seconds", Type: TypeInt, Default: "1", check: atLeast(1),
		Doc: "Length of each sample the replication throttles measure their rate over, in seconds.",
	},
	{
		Name: "unclean.leader.election.enable", Type: TypeBoolean, Default: "false", Update: UpdateClusterWide,
		Doc: "Default for topics: whether a replica outside the in-sync set may become leader as a last resort, at the risk of losing data.",
	},
	{
		Name: "min.insync.replicas", Type: TypeInt, Default: "1", check: atLeast(1), Update: UpdateClusterWide,
		Doc: "Default for topics: number of in-sync replicas that must hold a write for a produce with acks=all to succeed.",
	},

	// Log layout and retention.
	{
		Name: "log.segment.bytes", Type: TypeInt, Default: "1073741824", check: atLeast(1 << 20), Update: UpdateClusterWide,
		Doc: "Default for segment.bytes: size at which a log segment is rolled.",
	},
	{
		Name: "log.roll.ms", Type: TypeLong, NullDefault: true, Update: UpdateClusterWide,
		Doc: "Default for segment.ms: time after which a segment is rolled. Unset means log.roll.hours is used.",
	},
	{
		Name: "log.roll.hours", Type: TypeInt, Default: "168", check: atLeast(1),
		Doc: "Segment roll time in hours, used when log.roll.ms is not set.",
	},
	{
		Name: "log.roll.jitter.ms", Type: TypeLong, NullDefault: true, Update: UpdateClusterWide,
		Doc: "Default for segment.jitter.ms: largest random amount taken off a segment's roll time. Unset means log.roll.jitter.hours is used.",
	},
	{
		Name: "log.roll.jitter.hours", Type: TypeInt, Default: "0", check: atLeast(0),
		Doc: "Segment roll jitter in hours, used when log.roll.jitter.ms is not set.",
	},
	{
		Name: "log.retention.ms", Type: TypeLong, NullDefault: true, Update: UpdateClusterWide,
		Doc: "Default for retention.ms: how long a segment is kept before deletion. Unset means log.retention.minutes is used; -1 means forever.",
	},
	{
		Name: "log.retention.minutes", Type: TypeInt, NullDefault: true,
		Doc: "Retention time in minutes, used when log.retention.ms is not set. Unset means log.retention.hours is used.",
	},
	{
		Name: "log.retention.hours", Type: TypeInt, Default: "168",
		Doc: "Retention time in hours, used when neither log.retention.ms nor log.retention.minutes is set.",
	},
	{
		Name: "log.retention.bytes", Type: TypeLong, Default: "-1", Update: UpdateClusterWide,
		Doc: "Default for retention.bytes: size a partition may reach before old segments are deleted; -1 means no limit.",
	},
	{
		Name: "log.retention.check.interval.ms", Type: TypeLong, Default: "300000", check: atLeast(1),
		Doc: "How often the broker looks for segments that retention allows it to delete.",
	},
	{
		Name: "log.segment.delete.delay.ms", Type: TypeLong, Default: "60000", check: atLeast(0), Update: UpdateClusterWide,
		Doc: "Default for file.delete.delay.ms: how long deleted segments' files stay on disk before removal.",
	},
	{
		Name: "log.cleanup.policy", Type: TypeList, Default: "delete", check: listOf("compact", "delete"), Update: UpdateClusterWide,
		Doc: "Default for cleanup.policy: \"delete\", \"compact\", or both, comma-separated.",
	},
	{
		Name: "log.index.size.max.bytes", Type: TypeInt, Default: "10485760", check: atLeast(4), Update: UpdateClusterWide,
		Doc: "Default for segment.index.bytes: size preallocated for a segment's offset index.",
	},
	{
		Name: "log.index.interval.bytes", Type: TypeInt, Default: "4096", check: atLeast(0), Update: UpdateClusterWide,
		Doc: "Default for index.interval.bytes: log bytes between offset index entries.",
	},
	{
		Name: "log.preallocate", Type: TypeBoolean, Default: "false", Update: UpdateClusterWide,
		Doc: "Default for preallocate: whether new segment files are preallocated on disk.",
	},
	{
		Name: "log.message.timestamp.type", Type: TypeString, Default: "CreateTime", check: oneOf("CreateTime", "LogAppendTime"), Update: UpdateClusterWide,
		Doc: "Default for message.timestamp.type: CreateTime or LogAppendTime.",
	},
	{
		Name: "log.message.timestamp.before.max.ms", Type: TypeLong, Default: maxInt64, check: atLeast(0), Update: UpdateClusterWide,
		Doc: "Default for message.timestamp.before.max.ms: how far in the past a record's timestamp may be.",
	},
	{
		Name: "log.message.timestamp.after.max.ms", Type: TypeLong, Default: "3600000", check: atLeast(0), Update: UpdateClusterWide,
		Doc: "Default for message.timestamp.after.max.ms: how far in the future a record's timestamp may be.",
	},
	{
		Name: "log.local.retention.ms", Type: TypeLong, Default: "-2", check: atLeast(-2), Update: UpdateClusterWide,
		Doc: "Default for local.retention.ms: with tiered storage, how long segments stay on local disk; -2 uses log.retention.ms.",
	},
	{
		Name: "log.local.retention.bytes", Type: TypeLong, Default: "-2", check: atLeast(-2), Update: UpdateClusterWide,
		Doc: "Default for local.retention.bytes: with tiered storage, how many bytes of a partition stay on local disk; -2 uses log.retention.bytes.",
	},
	{
		Name: "log.remote.copy.lag.ms", Type: TypeLong, Default: "0", check: atLeast(-1), Update: UpdateClusterWide,
		Doc: "Default for remote.copy.lag.ms: with tiered storage, how old a closed segment must be before it is copied to remote storage.",
	},
	{
		Name: "log.remote.copy.lag.bytes", Type: TypeLong, Default: "-1", check: atLeast(-1), Update: UpdateClusterWide,
		Doc: "Default for remote.copy.lag.bytes: with tiered storage, how much newer data must follow a closed segment before it is copied to remote storage.",
	},
	{
		Name: "remote.log.storage.system.enable", Type: TypeBoolean, Default: "false",
		Doc: "Whether the broker has tiered storage. Gregor has none, so topics cannot turn on remote.storage.enable.",
	},

	// Flushing and recovery.
	{
		Name: "log.flush.interval.messages", Type: TypeLong, Default: maxInt64, check: atLeast(1), Update: UpdateClusterWide,
		Doc: "Default for flush.messages: messages written to a partition between forced fsyncs.",
	},
	{
		Name: "log.flush.interval.ms", Type: TypeLong, NullDefault: true, Update: UpdateClusterWide,
		Doc: "Default for flush.ms: longest time written messages wait before an fsync. Unset means log.flush.scheduler.interval.ms is used.",
	},
	{
		Name: "log.flush.scheduler.interval.ms", Type: TypeLong, Default: maxInt64,
		Doc: "How often the broker checks whether a partition is due for an fsync; also the flush time when log.flush.interval.ms is not set.",
	},
	{
		Name: "log.flush.offset.checkpoint.interval.ms", Type: TypeInt, Default: "60000", check: atLeast(0),
		Doc: "How often the recovery point (the offset up to which logs are known flushed) is written to disk.",
	},
	{
		Name: "num.recovery.threads.per.data.dir", Type: TypeInt, Default: "2", check: atLeast(1), Update: UpdateClusterWide,
		Doc: "Threads per log directory used to recover logs at startup and flush them at shutdown.",
	},

	// Compression.
	{
		Name: "compression.type", Type: TypeString, Default: "producer", check: oneOf(compressionTypes...), Update: UpdateClusterWide,
		Doc: "Default for topics' compression.type: gzip, snappy, lz4, zstd, uncompressed, or producer to keep the producer's.",
	},
	{
		Name: "compression.gzip.level", Type: TypeInt, Default: "-1", check: gzipLevel(), Update: UpdateClusterWide,
		Doc: "Default gzip level for topics; -1 is the library's default.",
	},
	{
		Name: "compression.lz4.level", Type: TypeInt, Default: "9", check: between(1, 17), Update: UpdateClusterWide,
		Doc: "Default lz4 level for topics.",
	},
	{
		Name: "compression.zstd.level", Type: TypeInt, Default: "3", check: between(-131072, 22), Update: UpdateClusterWide,
		Doc: "Default zstd level for topics.",
	},

	// Log cleaner.
	{
		Name: "log.cleaner.enable", Type: TypeBoolean, Default: "true",
		Doc: "Whether the log cleaner runs. Without it compacted topics, __consumer_offsets included, are never compacted and keep growing.",
	},
	{
		Name: "log.cleaner.backoff.ms", Type: TypeLong, Default: "15000", check: atLeast(0),
		Doc: "How long the log cleaner sleeps when no log needs cleaning.",
	},
	{
		Name: "log.cleaner.dedupe.buffer.size", Type: TypeLong, Default: "134217728",
		Doc: "Memory bound of the log cleaner's map from keys to their latest offsets; a log with more distinct keys in its dirty part is cleaned in several passes.",
	},
	{
		Name: "log.cleaner.delete.retention.ms", Type: TypeLong, Default: "86400000", check: atLeast(0), Update: UpdateClusterWide,
		Doc: "Default for delete.retention.ms: how long tombstones survive in compacted topics.",
	},
	{
		Name: "log.cleaner.min.compaction.lag.ms", Type: TypeLong, Default: "0", check: atLeast(0), Update: UpdateClusterWide,
		Doc: "Default for min.compaction.lag.ms: shortest time a record stays uncompacted.",
	},
	{
		Name: "log.cleaner.max.compaction.lag.ms", Type: TypeLong, Default: maxInt64, check: atLeast(1), Update: UpdateClusterWide,
		Doc: "Default for max.compaction.lag.ms: longest time a record stays ineligible for compaction.",
	},
	{
		Name: "log.cleaner.min.cleanable.ratio", Type: TypeDouble, Default: "0.5", check: between(0, 1), Update: UpdateClusterWide,
		Doc: "Default for min.cleanable.dirty.ratio: share of a log that must be uncompacted before it is cleaned.",
	},

	// Group and transaction coordinators.
	{
		Name: "offsets.topic.num.partitions", Type: TypeInt, Default: "50", check: atLeast(1),
		Doc: "Partition count of __consumer_offsets. It must not change once the topic exists.",
	},
	{
		Name: "offsets.topic.replication.factor", Type: TypeShort, Default: "3", check: atLeast(1),
		Doc: "Replication factor of __consumer_offsets. The topic is not created until that many brokers are up.",
	},
	{
		Name: "offsets.topic.segment.bytes", Type: TypeInt, Default: "104857600", check: atLeast(1),
		Doc: "Segment size of __consumer_offsets, kept small so that it compacts and loads quickly.",
	},
	{
		Name: "offsets.retention.check.interval.ms", Type: TypeLong, Default: "600000", check: atLeast(1),
		Doc: "How often the group coordinator looks for committed offsets that have expired.",
	},
	{
		Name: "offset.metadata.max.bytes", Type: TypeInt, Default: "4096",
		Doc: "Longest metadata string an offset commit may carry; a longer one fails that partition with OFFSET_METADATA_TOO_LARGE.",
	},
	{
		Name: "group.coordinator.rebalance.protocols", Type: TypeList, Default: "classic,consumer,streams",
		Doc: "Group protocols the coordinator serves. Gregor serves the classic, the consumer (KIP-848) and the share (KIP-932) protocols and reports \"classic,consumer,share\".",
	},
	{
		Name: "group.consumer.session.timeout.ms", Type: TypeInt, Default: "45000", check: atLeast(1),
		Doc: "How long a member of a consumer group (the KIP-848 protocol) stays without a heartbeat before it is removed.",
	},
	{
		Name: "group.consumer.migration.policy", Type: TypeString, Default: "bidirectional",
		check: oneOf("bidirectional", "upgrade", "downgrade", "disabled"),
		Doc:   "Which online migrations between the classic and the consumer (KIP-848) protocol a group with members may make: upgrade (a consumer-protocol member joins a classic group), downgrade (the last one leaves a group of classic members), both (bidirectional) or neither (disabled).",
	},
	{
		Name: "group.consumer.heartbeat.interval.ms", Type: TypeInt, Default: "5000", check: atLeast(1),
		Doc: "The heartbeat interval members of consumer groups (the KIP-848 protocol) are told to keep.",
	},
	{
		Name: "group.consumer.min.session.timeout.ms", Type: TypeInt, Default: "45000", check: atLeast(1),
		Doc: "Shortest consumer.session.timeout.ms a consumer group's configs may set; group.consumer.session.timeout.ms must not be below it.",
	},
	{
		Name: "group.consumer.max.session.timeout.ms", Type: TypeInt, Default: "60000", check: atLeast(1),
		Doc: "Longest consumer.session.timeout.ms a consumer group's configs may set; group.consumer.session.timeout.ms must not be above it.",
	},
	{
		Name: "group.consumer.min.heartbeat.interval.ms", Type: TypeInt, Default: "5000", check: atLeast(1),
		Doc: "Shortest consumer.heartbeat.interval.ms a consumer group's configs may set; group.consumer.heartbeat.interval.ms must not be below it.",
	},
	{
		Name: "group.consumer.max.heartbeat.interval.ms", Type: TypeInt, Default: "15000", check: atLeast(1),
		Doc: "Longest consumer.heartbeat.interval.ms a consumer group's configs may set; group.consumer.heartbeat.interval.ms must not be above it.",
	},
	{
		Name: "group.share.session.timeout.ms", Type: TypeInt, Default: "45000", check: atLeast(1),
		Doc: "How long a member of a share group stays without a heartbeat before it is removed.",
	},
	{
		Name: "group.share.heartbeat.interval.ms", Type: TypeInt, Default: "5000", check: atLeast(1),
		Doc: "The heartbeat interval members of share groups are told to keep.",
	},
	{
		Name: "group.share.max.size", Type: TypeInt, Default: "200", check: atLeast(1),
		Doc: "Most members a share group may have.",
	},
	{
		Name: "group.share.record.lock.duration.ms", Type: TypeInt, Default: "30000", check: atLeast(1000),
		Doc: "How long a share group member holds the records it acquired before they are offered again (a group's share.record.lock.duration.ms overrides it).",
	},
	{
		Name: "group.share.delivery.count.limit", Type: TypeInt, Default: "5", check: atLeast(2),
		Doc: "How often a record is delivered to a share group before it is archived instead of offered again (a group's share.delivery.count.limit overrides it).",
	},
	{
		Name: "group.share.partition.max.record.locks", Type: TypeInt, Default: "2000", check: atLeast(100),
		Doc: "Most records in flight per share partition, between its start and end offsets (a group's share.partition.max.record.locks overrides it).",
	},
	{
		Name: "group.share.min.session.timeout.ms", Type: TypeInt, Default: "45000", check: atLeast(1),
		Doc: "Shortest share.session.timeout.ms a share group's configs may set; group.share.session.timeout.ms must not be below it.",
	},
	{
		Name: "group.share.max.session.timeout.ms", Type: TypeInt, Default: "60000", check: atLeast(1),
		Doc: "Longest share.session.timeout.ms a share group's configs may set; group.share.session.timeout.ms must not be above it.",
	},
	{
		Name: "group.share.min.heartbeat.interval.ms", Type: TypeInt, Default: "5000", check: atLeast(1),
		Doc: "Shortest share.heartbeat.interval.ms a share group's configs may set; group.share.heartbeat.interval.ms must not be below it.",
	},
	{
		Name: "group.share.max.heartbeat.interval.ms", Type: TypeInt, Default: "15000", check: atLeast(1),
		Doc: "Longest share.heartbeat.interval.ms a share group's configs may set; group.share.heartbeat.interval.ms must not be above it.",
	},
	{
		Name: "group.share.min.record.lock.duration.ms", Type: TypeInt, Default: "15000", check: atLeast(1000),
		Doc: "Shortest share.record.lock.duration.ms a share group's configs may set; group.share.record.lock.duration.ms must not be below it.",
	},
	{
		Name: "group.share.max.record.lock.duration.ms", Type: TypeInt, Default: "60000", check: atLeast(1000),
		Doc: "Longest share.record.lock.duration.ms a share group's configs may set; group.share.record.lock.duration.ms must not be above it.",
	},
	{
		Name: "group.share.min.delivery.count.limit", Type: TypeInt, Default: "2", check: atLeast(2),
		Doc: "Least share.delivery.count.limit a share group's configs may set; group.share.delivery.count.limit must not be below it.",
	},
	{
		Name: "group.share.max.delivery.count.limit", Type: TypeInt, Default: "10", check: atLeast(2),
		Doc: "Most share.delivery.count.limit a share group's configs may set; group.share.delivery.count.limit must not be above it.",
	},
	{
		Name: "group.share.min.partition.max.record.locks", Type: TypeInt, Default: "100", check: atLeast(100),
		Doc: "Least share.partition.max.record.locks a share group's configs may set; group.share.partition.max.record.locks must not be below it.",
	},
	{
		Name: "group.share.max.partition.max.record.locks", Type: TypeInt, Default: "4000", check: atLeast(100),
		Doc: "Most share.partition.max.record.locks a share group's configs may set; group.share.partition.max.record.locks must not be above it.",
	},
	{
		Name: "share.coordinator.state.topic.num.partitions", Type: TypeInt, Default: "50", check: atLeast(1),
		Doc: "Partition count of __share_group_state. It must not change once the topic exists.",
	},
	{
		Name: "share.coordinator.state.topic.replication.factor", Type: TypeShort, Default: "3", check: atLeast(1),
		Doc: "Replication factor of __share_group_state, capped at the live brokers when it is created.",
	},
	{
		Name: "share.coordinator.state.topic.min.isr", Type: TypeShort, Default: "2", check: atLeast(1),
		Doc: "min.insync.replicas of __share_group_state.",
	},
	{
		Name: "share.coordinator.state.topic.segment.bytes", Type: TypeInt, Default: "104857600", check: atLeast(1 << 20),
		Doc: "Segment size of __share_group_state.",
	},
	{
		Name: "offsets.retention.minutes", Type: TypeInt, Default: "10080", check: atLeast(1),
		Doc: "How long committed offsets are kept after a group becomes empty, or, for standalone consumers, after the last commit.",
	},
	{
		Name: "group.initial.rebalance.delay.ms", Type: TypeInt, Default: "3000",
		Doc: "How long a new classic group waits for more members to join before its first rebalance.",
	},
	{
		Name: "group.min.session.timeout.ms", Type: TypeInt, Default: "6000",
		Doc: "Shortest session timeout a classic group member may ask for.",
	},
	{
		Name: "group.max.session.timeout.ms", Type: TypeInt, Default: "1800000",
		Doc: "Longest session timeout a classic group member may ask for.",
	},
	{
		Name: "group.max.size", Type: TypeInt, Default: maxInt32, check: atLeast(1),
		Doc: "Most members a classic group may have.",
	},
	{
		Name: "transaction.state.log.num.partitions", Type: TypeInt, Default: "50", check: atLeast(1),
		Doc: "Partition count of __transaction_state. It must not change once the topic exists.",
	},
	{
		Name: "transaction.state.log.replication.factor", Type: TypeShort, Default: "3", check: atLeast(1),
		Doc: "Replication factor of __transaction_state, capped at the brokers live when it is created.",
	},
	{
		Name: "transaction.state.log.min.isr", Type: TypeInt, Default: "2", check: atLeast(1),
		Doc: "min.insync.replicas of __transaction_state: a coordinator's write fails below it.",
	},
	{
		Name: "transaction.state.log.segment.bytes", Type: TypeInt, Default: "104857600", check: atLeast(1),
		Doc: "Segment size of __transaction_state, kept small so that it compacts and loads quickly.",
	},
	{
		Name: "transaction.max.timeout.ms", Type: TypeInt, Default: "900000", check: atLeast(1),
		Doc: "Longest transaction timeout a producer may ask for; InitProducerId above it fails with INVALID_TRANSACTION_TIMEOUT.",
	},
	{
		Name: "transaction.abort.timed.out.transaction.cleanup.interval.ms", Type: TypeInt, Default: "10000", check: atLeast(1),
		Doc: "How often the transaction coordinators abort transactions that ran past their timeout.",
	},
	{
		Name: "transaction.remove.expired.transaction.cleanup.interval.ms", Type: TypeInt, Default: "3600000", check: atLeast(1),
		Doc: "How often the transaction coordinators remove expired transactional ids.",
	},
	{
		Name: "transactional.id.expiration.ms", Type: TypeInt, Default: "604800000", check: atLeast(1),
		Doc: "How long a transactional id is kept after its last transaction status update before it expires.",
	},
	{
		Name: "producer.id.expiration.ms", Type: TypeInt, Default: "86400000", check: atLeast(1), Update: UpdateClusterWide,
		Doc: "How long a partition leader keeps an idle producer id's state; ids with an open transaction do not expire.",
	},
}
