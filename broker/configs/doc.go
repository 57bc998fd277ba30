// Package configs is the catalogue of Apache Kafka's topic configs and of the
// broker configs behind them: names, types, defaults, validation rules and
// documentation, as CreateTopics, DescribeConfigs, AlterConfigs and
// IncrementalAlterConfigs need them. It holds no state; callers pass in the
// config maps they keep (a topic's overrides, the per-broker and cluster-wide
// dynamic broker configs, the static broker config).
//
// # Baseline
//
// The catalogue follows Apache Kafka 4.4 (KRaft), the broker the
// compatibility lab runs against; broker/configs/testdata/cfgdiff compares
// what both report in DescribeConfigs. Values and messages that changed
// inside the 4.x line:
//
//   - 4.0 removed message.format.version and
//     message.timestamp.difference.max.ms; both are unknown names here.
//   - 4.0 raised the minimum of segment.bytes / log.segment.bytes to 1 MiB
//     (KIP-1030), changed the default of message.timestamp.after.max.ms to
//     3600000 and of num.recovery.threads.per.data.dir to 2.
//   - By 4.4 message.downconversion.enable and
//     log.message.downconversion.enable are gone: CreateTopics and both
//     AlterConfigs reject the topic config as "Unknown topic config name:
//     message.downconversion.enable", and the broker config is an unknown
//     (custom) name.
//   - 4.4 has four topic configs more: max.decompressed.message.bytes
//     (broker synonym of the same name, [1,...,2147483639]),
//     remote.copy.lag.ms and remote.copy.lag.bytes (log.remote.copy.lag.ms
//     and .bytes, [-1,...]) and errors.deadletterqueue.group.enable (share
//     groups' dead-letter queues, no broker synonym).
//   - listeners, advertised.listeners, log.dirs and log.dir are of type
//     LIST; advertised.listeners cannot be changed dynamically any more;
//     node.id has no default.
//   - The broker's messages for dynamic changes it refuses print the names
//     as a Java set, "Cannot update these configs dynamically: [node.id]",
//     where 4.1 printed a Scala one, "Set(node.id)".
//   - 4.4 rejects empty entries in LIST values ("Configuration
//     'cleanup.policy' values must not be empty." for "delete,") and
//     accepts duplicates; this package still accepts empty entries where
//     the element validator does.
//
// Names Kafka 4.4 reports that the catalogue leaves out, and why, are listed
// in broker.go.
//
// # Values
//
// Values are strings, parsed the way Kafka's ConfigDef parses them: surrounding
// control characters and spaces are trimmed, booleans are case-insensitive,
// lists are split on commas with optional whitespace around them. Error
// messages are Kafka's, word for word, because clients show them to users:
//
//	Invalid value abc for configuration retention.ms: Not a number of type LONG
//	Unknown topic config name: foo
//
// # Precedence and synonyms
//
// A topic config's effective value is, in order: the topic's own override
// (source TOPIC_CONFIG), a per-broker dynamic config (DYNAMIC_BROKER_CONFIG),
// a cluster-wide dynamic default (DYNAMIC_DEFAULT_BROKER_CONFIG), the static
// broker config (STATIC_BROKER_CONFIG), and finally Kafka's default
// (DEFAULT_CONFIG). A Kafka broker reports STATIC_BROKER_CONFIG only for
// what its server.properties sets; a caller whose static config holds every
// setting it runs with passes it through ReportedStatic first, which drops
// the values equal to Kafka's default. At each broker level the topic config's broker synonyms
// are tried in Kafka's order, so log.retention.ms beats log.retention.minutes,
// which beats log.retention.hours; values in minutes or hours are converted to
// milliseconds. A more specific level always wins over a less specific one,
// whatever synonym it uses: a dynamic log.retention.hours beats a static
// log.retention.ms.
package configs
