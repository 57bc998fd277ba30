// Package configs is the catalogue of Apache Kafka's topic configs and of the
// broker configs behind them: names, types, defaults, validation rules and
// documentation, as CreateTopics, DescribeConfigs, AlterConfigs and
// IncrementalAlterConfigs need them. It holds no state; callers pass in the
// config maps they keep (a topic's overrides, the per-broker and cluster-wide
// dynamic broker configs, the static broker config).
//
// # Baseline
//
// The catalogue follows Apache Kafka 4.1 (KRaft). Values and messages that
// changed inside the 4.x line:
//
//   - 4.0 removed message.format.version and
//     message.timestamp.difference.max.ms; both are unknown names here.
//   - 4.0 raised the minimum of segment.bytes / log.segment.bytes to 1 MiB
//     (KIP-1030), changed the default of message.timestamp.after.max.ms to
//     3600000 and of num.recovery.threads.per.data.dir to 2.
//   - message.downconversion.enable is kept as a deprecated no-op, as 4.x
//     does (it is due to go in 5.0).
//   - 4.2 (KIP-1161) rejects duplicate and empty entries in LIST values;
//     this package follows 4.1 and accepts them where the element
//     validator does.
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
// (DEFAULT_CONFIG). At each broker level the topic config's broker synonyms
// are tried in Kafka's order, so log.retention.ms beats log.retention.minutes,
// which beats log.retention.hours; values in minutes or hours are converted to
// milliseconds. A more specific level always wins over a less specific one,
// whatever synonym it uses: a dynamic log.retention.hours beats a static
// log.retention.ms.
package configs
