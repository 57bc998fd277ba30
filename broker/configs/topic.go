package configs

// The topic configs of Kafka 4.4, in the order Kafka's LogConfig defines
// them. Validation walks them in this order, so that of several bad values
// the one Kafka reports first is reported first. The four configs added
// after 4.1 (max.decompressed.message.bytes, remote.copy.lag.ms and .bytes,
// errors.deadletterqueue.group.enable) sit next to their kin; their place in
// Kafka's order has not been checked.
//
// Each syns list is Kafka's ServerTopicConfigSynonyms entry: the broker
// configs that give the topic its value when it has no override, first
// match wins. remote.storage.enable, remote.log.copy.disable,
// remote.log.delete.on.disable, errors.deadletterqueue.group.enable and the
// two throttled-replica lists have no broker synonym.

const (
	maxInt64 = "9223372036854775807"
	maxInt32 = "2147483647"
)

func same(name string) synonym    { return synonym{name: name} }
func hours(name string) synonym   { return synonym{name: name, convert: hoursToMillis} }
func minutes(name string) synonym { return synonym{name: name, convert: minutesToMillis} }

var compressionTypes = []string{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}

var topicDefs = []*Def{
	{
		Name: "segment.bytes", Type: TypeInt, Default: "1073741824", check: atLeast(1 << 20),
		Doc:  "Size at which the partition's active log segment is closed and a new one started. Retention and compaction work on whole segments, so larger segments mean fewer files but coarser retention.",
		syns: []synonym{same("log.segment.bytes")},
	},
	{
		Name: "segment.ms", Type: TypeLong, Default: "604800000", check: atLeast(1),
		Doc:  "Time after which the active segment is rolled even if it is not full, so that retention or compaction can reach its data.",
		syns: []synonym{same("log.roll.ms"), hours("log.roll.hours")},
	},
	{
		Name: "segment.jitter.ms", Type: TypeLong, Default: "0", check: atLeast(0),
		Doc:  "Largest random amount taken off each segment's scheduled roll time, so that many partitions do not roll at the same moment.",
		syns: []synonym{same("log.roll.jitter.ms"), hours("log.roll.jitter.hours")},
	},
	{
		Name: "segment.index.bytes", Type: TypeInt, Default: "10485760", check: atLeast(4),
		Doc:  "Size preallocated for each segment's offset index; the index is trimmed to its used size when the segment rolls.",
		syns: []synonym{same("log.index.size.max.bytes")},
	},
	{
		Name: "flush.messages", Type: TypeLong, Default: maxInt64, check: atLeast(1),
		Doc:  "Number of messages written to a partition between forced fsyncs. 1 fsyncs every message; the default leaves flushing to the operating system and relies on replication for durability.",
		syns: []synonym{same("log.flush.interval.messages")},
	},
	{
		Name: "flush.ms", Type: TypeLong, Default: maxInt64, check: atLeast(0),
		Doc:  "Longest time written messages may wait before the partition is fsynced. The default leaves flushing to the operating system and relies on replication for durability.",
		syns: []synonym{same("log.flush.interval.ms"), same("log.flush.scheduler.interval.ms")},
	},
	{
		Name: "retention.bytes", Type: TypeLong, Default: "-1",
		Doc:  "Size a partition may reach before its oldest segments are deleted, under the delete cleanup policy. It applies per partition; -1 means no size limit.",
		syns: []synonym{same("log.retention.bytes")},
	},
	{
		Name: "retention.ms", Type: TypeLong, Default: "604800000", check: atLeast(-1),
		Doc:  "How long a segment is kept after its newest record before it is deleted, under the delete cleanup policy. -1 means no time limit.",
		syns: []synonym{same("log.retention.ms"), minutes("log.retention.minutes"), hours("log.retention.hours")},
	},
	{
		Name: "max.message.bytes", Type: TypeInt, Default: "1048588", check: atLeast(0),
		Doc:  "Largest record batch the topic accepts, measured after compression.",
		syns: []synonym{same("message.max.bytes")},
	},
	{
		Name: "max.decompressed.message.bytes", Type: TypeInt, Default: "2147483639", check: between(1, 2147483639),
		Doc:  "Largest size a single record may have once decompressed, where the broker decompresses records. Unlike max.message.bytes it bounds one record, not the compressed batch; the default sets no limit of its own.",
		syns: []synonym{same("max.decompressed.message.bytes")},
	},
	{
		Name: "index.interval.bytes", Type: TypeInt, Default: "4096", check: atLeast(0),
		Doc:  "Number of log bytes between entries in the offset index. Smaller values make the index larger and lookups land closer to the target offset.",
		syns: []synonym{same("log.index.interval.bytes")},
	},
	{
		Name: "delete.retention.ms", Type: TypeLong, Default: "86400000", check: atLeast(0),
		Doc:  "How long tombstones are kept in a compacted topic. It is also the time a consumer reading from the start has to reach the end before tombstones it has not seen may disappear.",
		syns: []synonym{same("log.cleaner.delete.retention.ms")},
	},
	{
		Name: "min.compaction.lag.ms", Type: TypeLong, Default: "0", check: atLeast(0),
		Doc:  "Shortest time a record stays uncompacted after it is written. Only used by compacted topics.",
		syns: []synonym{same("log.cleaner.min.compaction.lag.ms")},
	},
	{
		Name: "max.compaction.lag.ms", Type: TypeLong, Default: maxInt64, check: atLeast(1),
		Doc:  "Longest time a record may stay ineligible for compaction. Only used by compacted topics.",
		syns: []synonym{same("log.cleaner.max.compaction.lag.ms")},
	},
	{
		Name: "file.delete.delay.ms", Type: TypeLong, Default: "60000", check: atLeast(0),
		Doc:  "How long a segment's files are kept after they are scheduled for deletion before they are removed from disk.",
		syns: []synonym{same("log.segment.delete.delay.ms")},
	},
	{
		Name: "min.cleanable.dirty.ratio", Type: TypeDouble, Default: "0.5", check: between(0, 1),
		Doc:  "Share of a compacted log that must be uncompacted before the cleaner works on it. Higher values mean fewer, more efficient cleanings and more space held by duplicates; max.compaction.lag.ms can force an earlier cleaning.",
		syns: []synonym{same("log.cleaner.min.cleanable.ratio")},
	},
	{
		Name: "cleanup.policy", Type: TypeList, Default: "delete", check: listOf("compact", "delete"),
		Doc:  "How old segments are cleaned: \"delete\" removes them past the retention limits, \"compact\" keeps only the latest record for each key, and \"compact,delete\" does both. An empty list does neither.",
		syns: []synonym{same("log.cleanup.policy")},
	},
	{
		Name: "unclean.leader.election.enable", Type: TypeBoolean, Default: "false",
		Doc:  "Whether a replica outside the in-sync set may become leader when no in-sync replica is available, at the risk of losing acknowledged records.",
		syns: []synonym{same("unclean.leader.election.enable")},
	},
	{
		Name: "min.insync.replicas", Type: TypeInt, Default: "1", check: atLeast(1),
		Doc:  "Number of in-sync replicas that must hold a write before a produce with acks=all succeeds. With fewer in sync, such produces fail with NOT_ENOUGH_REPLICAS.",
		syns: []synonym{same("min.insync.replicas")},
	},
	{
		Name: "compression.type", Type: TypeString, Default: "producer", check: oneOf(compressionTypes...),
		Doc:  "Compression the topic stores batches with: gzip, snappy, lz4 or zstd, \"uncompressed\" for none, or \"producer\" to keep whatever the producer used.",
		syns: []synonym{same("compression.type")},
	},
	{
		Name: "compression.gzip.level", Type: TypeInt, Default: "-1", check: gzipLevel(),
		Doc:  "Compression level used when compression.type is gzip; -1 is the library's default.",
		syns: []synonym{same("compression.gzip.level")},
	},
	{
		Name: "compression.lz4.level", Type: TypeInt, Default: "9", check: between(1, 17),
		Doc:  "Compression level used when compression.type is lz4.",
		syns: []synonym{same("compression.lz4.level")},
	},
	{
		Name: "compression.zstd.level", Type: TypeInt, Default: "3", check: between(-131072, 22),
		Doc:  "Compression level used when compression.type is zstd.",
		syns: []synonym{same("compression.zstd.level")},
	},
	{
		Name: "preallocate", Type: TypeBoolean, Default: "false",
		Doc:  "Whether a new segment's file is preallocated on disk to its full size.",
		syns: []synonym{same("log.preallocate")},
	},
	{
		Name: "message.timestamp.type", Type: TypeString, Default: "CreateTime", check: oneOf("CreateTime", "LogAppendTime"),
		Doc:  "Which timestamp records carry: the one the producer set (CreateTime) or the time the broker appended them (LogAppendTime).",
		syns: []synonym{same("log.message.timestamp.type")},
	},
	{
		Name: "message.timestamp.before.max.ms", Type: TypeLong, Default: maxInt64, check: atLeast(0),
		Doc:  "How far a record's timestamp may lie before the broker's clock. Records further in the past are rejected when message.timestamp.type is CreateTime.",
		syns: []synonym{same("log.message.timestamp.before.max.ms")},
	},
	{
		Name: "message.timestamp.after.max.ms", Type: TypeLong, Default: "3600000", check: atLeast(0),
		Doc:  "How far a record's timestamp may lie after the broker's clock. Records further in the future are rejected when message.timestamp.type is CreateTime.",
		syns: []synonym{same("log.message.timestamp.after.max.ms")},
	},
	{
		Name: "leader.replication.throttled.replicas", Type: TypeList, Default: "", check: throttledReplicas(),
		Doc: "Replicas whose replication is throttled on the leader side, as partitionId:brokerId pairs, or * for every replica of the topic.",
	},
	{
		Name: "follower.replication.throttled.replicas", Type: TypeList, Default: "", check: throttledReplicas(),
		Doc: "Replicas whose replication is throttled on the follower side, as partitionId:brokerId pairs, or * for every replica of the topic.",
	},
	{
		Name: "remote.storage.enable", Type: TypeBoolean, Default: "false",
		Doc: "Whether the topic uses tiered storage. It cannot be turned on unless the broker has tiered storage enabled.",
	},
	{
		Name: "local.retention.ms", Type: TypeLong, Default: "-2", check: atLeast(-2),
		Doc:  "With tiered storage, how long segments are kept on local disk. -2 uses retention.ms; the value must not exceed it.",
		syns: []synonym{same("log.local.retention.ms")},
	},
	{
		Name: "local.retention.bytes", Type: TypeLong, Default: "-2", check: atLeast(-2),
		Doc:  "With tiered storage, how many bytes of a partition are kept on local disk. -2 uses retention.bytes; the value must not exceed it.",
		syns: []synonym{same("log.local.retention.bytes")},
	},
	{
		Name: "remote.copy.lag.ms", Type: TypeLong, Default: "0", check: atLeast(-1),
		Doc:  "With tiered storage, how old a closed segment's newest record must be before the segment may be copied to remote storage. 0 copies at once; -1 takes local.retention.ms.",
		syns: []synonym{same("log.remote.copy.lag.ms")},
	},
	{
		Name: "remote.copy.lag.bytes", Type: TypeLong, Default: "-1", check: atLeast(-1),
		Doc:  "With tiered storage, how many bytes of newer data must follow a closed segment before it may be copied to remote storage. 0 copies at once; -1 takes local.retention.bytes.",
		syns: []synonym{same("log.remote.copy.lag.bytes")},
	},
	{
		Name: "remote.log.copy.disable", Type: TypeBoolean, Default: "false",
		Doc: "With tiered storage, stops copying segments to remote storage and makes the remote data read-only; retention then follows retention.ms and retention.bytes only.",
	},
	{
		Name: "remote.log.delete.on.disable", Type: TypeBoolean, Default: "false",
		Doc: "Whether the topic's remote data is deleted when tiered storage is turned off for it; required to turn it off.",
	},
	{
		Name: "errors.deadletterqueue.group.enable", Type: TypeBoolean, Default: "false",
		Doc: "Whether share groups may use the topic as a dead-letter queue for records they cannot deliver.",
	},
}
