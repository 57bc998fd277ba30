package configs

import (
	"errors"
	"testing"
)

func TestValidateTopic(t *testing.T) {
	tests := []struct {
		name    string
		configs map[string]string
		want    string // Kafka's message; "" for valid
		is      error
	}{
		{"empty", nil, "", nil},
		{"all defaults", defaultsOf(), "", nil},
		{"unknown", map[string]string{"foo": "1"}, "Unknown topic config name: foo", ErrUnknownConfig},
		{"removed in 4.0", map[string]string{"message.format.version": "3.0"}, "Unknown topic config name: message.format.version", ErrUnknownConfig},
		{"unknown before bad value", map[string]string{"retention.ms": "x", "zzz": "1"}, "Unknown topic config name: zzz", ErrUnknownConfig},
		{"long not a number", map[string]string{"retention.ms": "abc"}, "Invalid value abc for configuration retention.ms: Not a number of type LONG", nil},
		{"raw value untrimmed in message", map[string]string{"retention.ms": " 1x "}, "Invalid value  1x  for configuration retention.ms: Not a number of type LONG", nil},
		{"empty long", map[string]string{"retention.ms": ""}, "Invalid value  for configuration retention.ms: Not a number of type LONG", nil},
		{"int overflow", map[string]string{"max.message.bytes": "2147483648"}, "Invalid value 2147483648 for configuration max.message.bytes: Not a number of type INT", nil},
		{"retention.ms below -1", map[string]string{"retention.ms": "-2"}, "Invalid value -2 for configuration retention.ms: Value must be at least -1", nil},
		{"retention.ms trimmed", map[string]string{"retention.ms": " 1000\t"}, "", nil},
		{"retention.bytes any long", map[string]string{"retention.bytes": "-5"}, "", nil},
		{"segment.bytes minimum", map[string]string{"segment.bytes": "1048575"}, "Invalid value 1048575 for configuration segment.bytes: Value must be at least 1048576", nil},
		{"segment.bytes at minimum", map[string]string{"segment.bytes": "1048576"}, "", nil},
		{"max.message.bytes negative", map[string]string{"max.message.bytes": "-1"}, "Invalid value -1 for configuration max.message.bytes: Value must be at least 0", nil},
		{"min.insync.replicas 0", map[string]string{"min.insync.replicas": "0"}, "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1", nil},
		{"ratio above 1", map[string]string{"min.cleanable.dirty.ratio": "1.5"}, "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1", nil},
		{"ratio below 0", map[string]string{"min.cleanable.dirty.ratio": "-0.1"}, "Invalid value -0.1 for configuration min.cleanable.dirty.ratio: Value must be at least 0", nil},
		{"ratio Java form", map[string]string{"min.cleanable.dirty.ratio": "2"}, "Invalid value 2.0 for configuration min.cleanable.dirty.ratio: Value must be no more than 1", nil},
		{"ratio not a number", map[string]string{"min.cleanable.dirty.ratio": "half"}, "Invalid value half for configuration min.cleanable.dirty.ratio: Not a number of type DOUBLE", nil},
		{"ratio ok", map[string]string{"min.cleanable.dirty.ratio": "0.01"}, "", nil},
		{"boolean", map[string]string{"preallocate": "yes"}, "Invalid value yes for configuration preallocate: Expected value to be either true or false", nil},
		{"boolean any case", map[string]string{"preallocate": " TRUE "}, "", nil},
		{"compression.type", map[string]string{"compression.type": "brotli"}, "Invalid value brotli for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer", nil},
		{"compression.type is case-sensitive", map[string]string{"compression.type": "ZSTD"}, "Invalid value ZSTD for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer", nil},
		{"timestamp type", map[string]string{"message.timestamp.type": "Now"}, "Invalid value Now for configuration message.timestamp.type: String must be one of: CreateTime, LogAppendTime", nil},
		{"cleanup.policy both", map[string]string{"cleanup.policy": "compact, delete"}, "", nil},
		{"cleanup.policy empty", map[string]string{"cleanup.policy": ""}, "", nil},
		{"cleanup.policy bad item", map[string]string{"cleanup.policy": "compact,foo"}, "Invalid value foo for configuration cleanup.policy: String must be one of: compact, delete", nil},
		{"gzip level 0", map[string]string{"compression.gzip.level": "0"}, "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1", nil},
		{"gzip level 10", map[string]string{"compression.gzip.level": "10"}, "Invalid value 10 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1", nil},
		{"gzip level -1", map[string]string{"compression.gzip.level": "-1"}, "", nil},
		{"lz4 level", map[string]string{"compression.lz4.level": "18"}, "Invalid value 18 for configuration compression.lz4.level: Value must be no more than 17", nil},
		{"zstd level", map[string]string{"compression.zstd.level": "-131073"}, "Invalid value -131073 for configuration compression.zstd.level: Value must be at least -131072", nil},
		{"throttled star", map[string]string{"leader.replication.throttled.replicas": "*"}, "", nil},
		{"throttled list", map[string]string{"follower.replication.throttled.replicas": "0:1, 1:2"}, "", nil},
		{"throttled bad", map[string]string{"leader.replication.throttled.replicas": "0:1,x"},
			"Invalid value [0:1, x] for configuration leader.replication.throttled.replicas: leader.replication.throttled.replicas must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...", nil},
		{"local retention", map[string]string{"local.retention.ms": "-3"}, "Invalid value -3 for configuration local.retention.ms: Value must be at least -2", nil},
		{"first bad value in Kafka's order", map[string]string{"segment.ms": "0", "segment.bytes": "1"}, "Invalid value 1 for configuration segment.bytes: Value must be at least 1048576", nil},
		{"compaction lag conflict", map[string]string{"min.compaction.lag.ms": "100", "max.compaction.lag.ms": "10"},
			"conflict topic config setting min.compaction.lag.ms (100) > max.compaction.lag.ms (10)", nil},
		{"compaction lag equal", map[string]string{"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "10"}, "", nil},
		{"tiered storage", map[string]string{"remote.storage.enable": "true"},
			"Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage.", nil},
		{"removed in 4.2", map[string]string{"message.downconversion.enable": "false"},
			"Unknown topic config name: message.downconversion.enable", ErrUnknownConfig},
		{"decompressed size bound", map[string]string{"max.decompressed.message.bytes": "2147483647"},
			"Invalid value 2147483647 for configuration max.decompressed.message.bytes: Value must be no more than 2147483639", nil},
		{"copy lag", map[string]string{"remote.copy.lag.ms": "-5"},
			"Invalid value -5 for configuration remote.copy.lag.ms: Value must be at least -1", nil},
		{"dead-letter queue flag", map[string]string{"errors.deadletterqueue.group.enable": "x"},
			"Invalid value x for configuration errors.deadletterqueue.group.enable: Expected value to be either true or false", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateTopic(tt.configs)
			checkErr(t, err, tt.want, tt.is)
		})
	}
}

func TestValidateTopicNullable(t *testing.T) {
	v := "1000"
	got, err := ValidateTopicNullable(map[string]*string{"retention.ms": &v})
	if err != nil || got["retention.ms"] != "1000" || len(got) != 1 {
		t.Fatalf("ValidateTopicNullable = %v, %v; want map[retention.ms:1000], nil", got, err)
	}
	_, err = ValidateTopicNullable(map[string]*string{"segment.ms": nil, "retention.ms": &v, "cleanup.policy": nil})
	checkErr(t, err, "Null value not supported for topic configs: cleanup.policy,segment.ms", ErrNullValue)
	bad := "x"
	_, err = ValidateTopicNullable(map[string]*string{"retention.ms": &bad})
	checkErr(t, err, "Invalid value x for configuration retention.ms: Not a number of type LONG", nil)
}

func TestValidateBroker(t *testing.T) {
	tests := []struct {
		name    string
		configs map[string]string
		scope   Scope
		want    string
		is      error
	}{
		{"static ok", map[string]string{"node.id": "1", "log.retention.hours": "24"}, ScopeStatic, "", nil},
		{"static unknown accepted", map[string]string{"some.plugin.setting": "x"}, ScopeStatic, "", nil},
		{"static bad type", map[string]string{"message.max.bytes": "big"}, ScopeStatic, "Invalid value big for configuration message.max.bytes: Not a number of type INT", nil},
		{"static segment minimum", map[string]string{"log.segment.bytes": "1024"}, ScopeStatic, "Invalid value 1024 for configuration log.segment.bytes: Value must be at least 1048576", nil},
		{"dynamic ok", map[string]string{"log.retention.ms": "1000", "message.max.bytes": "2000000"}, ScopeClusterDefault, "", nil},
		{"dynamic unknown accepted", map[string]string{"custom.thing": "1"}, ScopePerBroker, "", nil},
		{"dynamic read-only", map[string]string{"node.id": "2", "log.retention.hours": "1", "message.max.bytes": "x"}, ScopePerBroker,
			"Cannot update these configs dynamically: [log.retention.hours, node.id]", ErrReadOnly},
		// Kafka's HashSet order, as a 4.4 broker printed it.
		{"dynamic read-only, three", map[string]string{"node.id": "1", "log.roll.hours": "2", "log.retention.hours": "1"}, ScopePerBroker,
			"Cannot update these configs dynamically: [log.retention.hours, node.id, log.roll.hours]", ErrReadOnly},
		{"dynamic advertised.listeners", map[string]string{"advertised.listeners": "PLAINTEXT://h:9093"}, ScopePerBroker,
			"Cannot update these configs dynamically: [advertised.listeners]", ErrReadOnly},
		{"dynamic bad value", map[string]string{"min.insync.replicas": "0"}, ScopePerBroker, "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1", nil},
		{"per-broker config at broker", map[string]string{"listeners": "PLAINTEXT://:9093"}, ScopePerBroker, "", nil},
		{"connection creation rate", map[string]string{"max.connection.creation.rate": "0", "listener.name.client.max.connection.creation.rate": "5"}, ScopeClusterDefault, "", nil},
		{"listener connection creation rate 0", map[string]string{"listener.name.client.max.connection.creation.rate": "0"}, ScopePerBroker,
			"Invalid max.connection.creation.rate 0", nil},
		{"listener connection creation rate not a number", map[string]string{"listener.name.client.max.connection.creation.rate": "x"}, ScopePerBroker,
			"Invalid value x for configuration listener.name.client.max.connection.creation.rate: Not a number of type INT", nil},
		{"per-broker config as default", map[string]string{"listeners": "PLAINTEXT://:9093", "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT"}, ScopeClusterDefault,
			"Cannot update these configs at default cluster level, broker id must be specified: [listeners, listener.security.protocol.map]", ErrReadOnly},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, ValidateBroker(tt.configs, tt.scope), tt.want, tt.is)
		})
	}
}

// checkErr checks err against Kafka's message want ("" for no error); every
// error must be an *Error matching ErrInvalidConfig (or ErrInvalidRequest)
// and, when is is set, is.
func checkErr(t *testing.T, err error, want string, is error) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("error %q, want none", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error, want %q", want)
	}
	if err.Error() != want {
		t.Fatalf("error\n  %q\nwant\n  %q", err, want)
	}
	var ce *Error
	if !errors.As(err, &ce) {
		t.Errorf("error %T is not an *Error", err)
	}
	if !errors.Is(err, ErrInvalidConfig) && !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("error %q matches neither ErrInvalidConfig nor ErrInvalidRequest", err)
	}
	if is != nil && !errors.Is(err, is) {
		t.Errorf("error %q does not match %v", err, is)
	}
}

func defaultsOf() map[string]string {
	m := map[string]string{}
	for _, d := range Topics() {
		m[d.Name] = d.Default
	}
	return m
}
