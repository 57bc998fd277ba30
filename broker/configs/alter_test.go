package configs

import (
	"reflect"
	"testing"
)

func str(s string) *string { return &s }

func TestIncrementalAlter(t *testing.T) {
	tests := []struct {
		name    string
		current map[string]string
		ops     []Op
		want    map[string]string
		err     string
		is      error
	}{
		{
			name: "set", current: m{"retention.ms": "1"},
			ops:  []Op{{"retention.ms", OpSet, str("2")}, {"segment.ms", OpSet, str("60000")}},
			want: m{"retention.ms": "2", "segment.ms": "60000"},
		},
		{
			name: "delete, value ignored and may be null", current: m{"retention.ms": "1", "segment.ms": "60000"},
			ops:  []Op{{"retention.ms", OpDelete, nil}, {"segment.ms", OpDelete, str("whatever")}},
			want: m{},
		},
		{
			name: "delete of an unset config", current: nil,
			ops:  []Op{{"retention.ms", OpDelete, nil}},
			want: m{},
		},
		{
			name: "append to unset list starts from the default", current: nil,
			ops:  []Op{{"cleanup.policy", OpAppend, str("compact")}},
			want: m{"cleanup.policy": "delete,compact"},
		},
		{
			name: "append skips items already there", current: m{"cleanup.policy": "compact"},
			ops:  []Op{{"cleanup.policy", OpAppend, str("compact,delete,delete")}},
			want: m{"cleanup.policy": "compact,delete"},
		},
		{
			name: "append to an empty list", current: m{"cleanup.policy": ""},
			ops:  []Op{{"cleanup.policy", OpAppend, str("compact")}},
			want: m{"cleanup.policy": "compact"},
		},
		{
			name: "append to unset throttled replicas (default empty)", current: nil,
			ops:  []Op{{"leader.replication.throttled.replicas", OpAppend, str("0:1,1:2")}},
			want: m{"leader.replication.throttled.replicas": "0:1,1:2"},
		},
		{
			name: "subtract", current: m{"cleanup.policy": "compact,delete"},
			ops:  []Op{{"cleanup.policy", OpSubtract, str("delete")}},
			want: m{"cleanup.policy": "compact"},
		},
		{
			name: "subtract everything leaves an empty list", current: m{"cleanup.policy": "compact,delete"},
			ops:  []Op{{"cleanup.policy", OpSubtract, str("delete,compact")}},
			want: m{"cleanup.policy": ""},
		},
		{
			name: "subtract from unset list works on the default", current: nil,
			ops:  []Op{{"cleanup.policy", OpSubtract, str("delete")}},
			want: m{"cleanup.policy": ""},
		},
		{
			name: "subtract an absent item", current: m{"cleanup.policy": "compact"},
			ops:  []Op{{"cleanup.policy", OpSubtract, str("delete")}},
			want: m{"cleanup.policy": "compact"},
		},
		{
			name: "append to a non-list", ops: []Op{{"retention.ms", OpAppend, str("1")}},
			err: "Can't APPEND to key retention.ms because its type is not LIST.",
		},
		{
			name: "subtract from a non-list", ops: []Op{{"compression.type", OpSubtract, str("gzip")}},
			err: "Can't SUBTRACT to key compression.type because its type is not LIST.",
		},
		{
			name: "append to an unknown name", ops: []Op{{"foo", OpAppend, str("1")}},
			err: "Can't APPEND to key foo because its type is not LIST.",
		},
		{
			name: "append an invalid item", ops: []Op{{"cleanup.policy", OpAppend, str("forever")}},
			err: "Invalid value forever for configuration cleanup.policy: String must be one of: compact, delete",
		},
		{
			name: "set an invalid value", ops: []Op{{"retention.ms", OpSet, str("abc")}},
			err: "Invalid value abc for configuration retention.ms: Not a number of type LONG",
		},
		{
			name: "set an unknown name", ops: []Op{{"foo", OpSet, str("1")}},
			err: "Unknown topic config name: foo", is: ErrUnknownConfig,
		},
		{
			name: "result checked as a whole", current: m{"max.compaction.lag.ms": "10"},
			ops: []Op{{"min.compaction.lag.ms", OpSet, str("20")}},
			err: "conflict topic config setting min.compaction.lag.ms (20) > max.compaction.lag.ms (10)",
		},
		{
			name: "duplicate names", ops: []Op{{"retention.ms", OpSet, str("1")}, {"retention.ms", OpDelete, nil}},
			err: "Error due to duplicate config keys", is: ErrInvalidRequest,
		},
		{
			name: "null values", ops: []Op{{"retention.ms", OpSet, nil}, {"segment.ms", OpDelete, nil}, {"cleanup.policy", OpAppend, nil}},
			err: "Null value not supported for : retention.ms, cleanup.policy", is: ErrInvalidRequest,
		},
		{
			name: "unknown operation", ops: []Op{{"retention.ms", OpType(7), str("1")}},
			err: "Unknown operations type 7", is: ErrInvalidRequest,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before map[string]string
			if tt.current != nil {
				before = make(m, len(tt.current))
				for k, v := range tt.current {
					before[k] = v
				}
			}
			got, err := IncrementalAlter(tt.current, tt.ops)
			checkErr(t, err, tt.err, tt.is)
			if tt.err == "" && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("IncrementalAlter = %v, want %v", got, tt.want)
			}
			if tt.current != nil && !reflect.DeepEqual(tt.current, before) {
				t.Errorf("current modified: %v, was %v", tt.current, before)
			}
		})
	}
}

func TestIncrementalAlterBroker(t *testing.T) {
	tests := []struct {
		name    string
		current map[string]string
		ops     []Op
		scope   Scope
		want    map[string]string
		err     string
		is      error
	}{
		{
			name: "set cluster-wide config as default", scope: ScopeClusterDefault,
			ops:  []Op{{"log.retention.ms", OpSet, str("1000")}},
			want: m{"log.retention.ms": "1000"},
		},
		{
			name: "append to unset broker list starts from its default", scope: ScopePerBroker,
			ops:  []Op{{"log.cleanup.policy", OpAppend, str("compact")}},
			want: m{"log.cleanup.policy": "delete,compact"},
		},
		{
			name: "delete", scope: ScopePerBroker, current: m{"message.max.bytes": "5"},
			ops:  []Op{{"message.max.bytes", OpDelete, nil}},
			want: m{},
		},
		{
			name: "append to a non-list", scope: ScopePerBroker,
			ops: []Op{{"message.max.bytes", OpAppend, str("1")}},
			err: "Config value append is not allowed for config key: message.max.bytes",
		},
		{
			name: "subtract from a non-list", scope: ScopePerBroker,
			ops: []Op{{"log.retention.ms", OpSubtract, str("1")}},
			err: "Config value subtract is not allowed for config key: log.retention.ms",
		},
		{
			name: "append to an unknown name", scope: ScopePerBroker,
			ops: []Op{{"custom.list", OpAppend, str("a")}},
			err: "Unknown config name: custom.list", is: ErrUnknownConfig,
		},
		{
			name: "read-only", scope: ScopePerBroker,
			ops: []Op{{"log.retention.hours", OpSet, str("1")}},
			err: "Cannot update these configs dynamically: [log.retention.hours]", is: ErrReadOnly,
		},
		{
			name: "per-broker config as cluster default", scope: ScopeClusterDefault,
			ops: []Op{{"listeners", OpSet, str("PLAINTEXT://h:9092")}},
			err: "Cannot update these configs at default cluster level, broker id must be specified: [listeners]", is: ErrReadOnly,
		},
		{
			name: "bad value", scope: ScopePerBroker,
			ops: []Op{{"log.cleaner.min.cleanable.ratio", OpSet, str("7")}},
			err: "Invalid value 7.0 for configuration log.cleaner.min.cleanable.ratio: Value must be no more than 1",
		},
		{
			name: "null value", scope: ScopePerBroker,
			ops: []Op{{"message.max.bytes", OpSet, nil}},
			err: "Null value not supported for : message.max.bytes", is: ErrInvalidRequest,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := IncrementalAlterBroker(tt.current, tt.ops, tt.scope)
			checkErr(t, err, tt.err, tt.is)
			if tt.err == "" && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("IncrementalAlterBroker = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOpTypeString(t *testing.T) {
	for op, want := range map[OpType]string{OpSet: "SET", OpDelete: "DELETE", OpAppend: "APPEND", OpSubtract: "SUBTRACT", 9: "OpType(9)"} {
		if op.String() != want {
			t.Errorf("OpType(%d) = %s, want %s", int8(op), op, want)
		}
	}
}
