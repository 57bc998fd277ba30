package configs

import (
	"errors"
	"reflect"
	"testing"
)

type m = map[string]string

func TestResolve(t *testing.T) {
	tests := []struct {
		name                         string
		config                       string
		topic, dyn, clusterDef, stat m
		value                        string
		src                          Source
		syns                         []Synonym
	}{
		{
			name: "default", config: "retention.ms",
			value: "604800000", src: SourceDefault,
			syns: []Synonym{{"log.retention.hours", "168", SourceDefault}},
		},
		{
			name: "static hours converted", config: "retention.ms",
			stat:  m{"log.retention.hours": "1"},
			value: "3600000", src: SourceStaticBroker,
			syns: []Synonym{
				{"log.retention.hours", "1", SourceStaticBroker},
				{"log.retention.hours", "168", SourceDefault},
			},
		},
		{
			name: "static minutes beat hours", config: "retention.ms",
			stat:  m{"log.retention.hours": "1", "log.retention.minutes": "5"},
			value: "300000", src: SourceStaticBroker,
			syns: []Synonym{
				{"log.retention.minutes", "5", SourceStaticBroker},
				{"log.retention.hours", "1", SourceStaticBroker},
				{"log.retention.hours", "168", SourceDefault},
			},
		},
		{
			name: "dynamic level beats static whatever the synonym", config: "retention.ms",
			dyn:   m{"log.retention.hours": "2"},
			stat:  m{"log.retention.ms": "1000"},
			value: "7200000", src: SourceDynamicBroker,
			syns: []Synonym{
				{"log.retention.hours", "2", SourceDynamicBroker},
				{"log.retention.ms", "1000", SourceStaticBroker},
				{"log.retention.hours", "168", SourceDefault},
			},
		},
		{
			name: "full precedence", config: "retention.ms",
			topic:      m{"retention.ms": "10"},
			dyn:        m{"log.retention.ms": "20"},
			clusterDef: m{"log.retention.ms": "30"},
			stat:       m{"log.retention.ms": "40"},
			value:      "10", src: SourceTopic,
			syns: []Synonym{
				{"retention.ms", "10", SourceTopic},
				{"log.retention.ms", "20", SourceDynamicBroker},
				{"log.retention.ms", "30", SourceDynamicDefaultBroker},
				{"log.retention.ms", "40", SourceStaticBroker},
				{"log.retention.hours", "168", SourceDefault},
			},
		},
		{
			name: "per-broker beats cluster default", config: "segment.bytes",
			dyn:        m{"log.segment.bytes": "2097152"},
			clusterDef: m{"log.segment.bytes": "4194304"},
			value:      "2097152", src: SourceDynamicBroker,
			syns: []Synonym{
				{"log.segment.bytes", "2097152", SourceDynamicBroker},
				{"log.segment.bytes", "4194304", SourceDynamicDefaultBroker},
				{"log.segment.bytes", "1073741824", SourceDefault},
			},
		},
		{
			name: "cluster default beats static", config: "max.message.bytes",
			clusterDef: m{"message.max.bytes": "2000000"},
			stat:       m{"message.max.bytes": "3000000"},
			value:      "2000000", src: SourceDynamicDefaultBroker,
			syns: []Synonym{
				{"message.max.bytes", "2000000", SourceDynamicDefaultBroker},
				{"message.max.bytes", "3000000", SourceStaticBroker},
				{"message.max.bytes", "1048588", SourceDefault},
			},
		},
		{
			name: "roll hours", config: "segment.ms",
			stat:  m{"log.roll.hours": "24"},
			value: "86400000", src: SourceStaticBroker,
			syns: []Synonym{
				{"log.roll.hours", "24", SourceStaticBroker},
				{"log.roll.hours", "168", SourceDefault},
			},
		},
		{
			name: "flush.ms falls back to scheduler interval", config: "flush.ms",
			stat:  m{"log.flush.scheduler.interval.ms": "500"},
			value: "500", src: SourceStaticBroker,
			syns: []Synonym{
				{"log.flush.scheduler.interval.ms", "500", SourceStaticBroker},
				{"log.flush.scheduler.interval.ms", "9223372036854775807", SourceDefault},
			},
		},
		{
			name: "topic value printed as Kafka prints it", config: "cleanup.policy",
			topic: m{"cleanup.policy": " compact , delete"},
			value: "compact,delete", src: SourceTopic,
			syns: []Synonym{
				{"cleanup.policy", "compact,delete", SourceTopic},
				{"log.cleanup.policy", "delete", SourceDefault},
			},
		},
		{
			name: "broker value normalized, synonym raw", config: "min.cleanable.dirty.ratio",
			stat:  m{"log.cleaner.min.cleanable.ratio": "0.50"},
			value: "0.5", src: SourceStaticBroker,
			syns: []Synonym{
				{"log.cleaner.min.cleanable.ratio", "0.50", SourceStaticBroker},
				{"log.cleaner.min.cleanable.ratio", "0.5", SourceDefault},
			},
		},
		{
			name: "no broker synonym", config: "remote.log.copy.disable",
			stat:  m{"remote.log.copy.disable": "true"}, // not a broker config: ignored
			value: "false", src: SourceDefault,
		},
		{
			name: "no broker synonym, topic set", config: "leader.replication.throttled.replicas",
			topic: m{"leader.replication.throttled.replicas": "*"},
			value: "*", src: SourceTopic,
			syns: []Synonym{{"leader.replication.throttled.replicas", "*", SourceTopic}},
		},
		{name: "unknown", config: "nope", value: "", src: SourceUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			value, src, syns := Resolve(tt.config, tt.topic, tt.dyn, tt.clusterDef, tt.stat)
			if value != tt.value || src != tt.src {
				t.Errorf("Resolve(%s) = %q from %s, want %q from %s", tt.config, value, src, tt.value, tt.src)
			}
			if !reflect.DeepEqual(syns, tt.syns) {
				t.Errorf("synonyms\n  %v\nwant\n  %v", syns, tt.syns)
			}
		})
	}
}

func TestTopicValues(t *testing.T) {
	v := TopicValues(m{"cleanup.policy": "compact"}, nil, m{"log.retention.bytes": "1000"}, m{"log.retention.hours": "1"})
	if len(v) != len(Topics()) {
		t.Fatalf("TopicValues has %d values, want %d", len(v), len(Topics()))
	}
	ms, err := v.Int64("retention.ms")
	if err != nil || ms != 3_600_000 {
		t.Errorf("retention.ms = %d, %v; want 3600000", ms, err)
	}
	bytes, err := v.Int64("retention.bytes")
	if err != nil || bytes != 1000 {
		t.Errorf("retention.bytes = %d, %v; want 1000", bytes, err)
	}
	seg, err := v.Int32("segment.bytes")
	if err != nil || seg != 1<<30 {
		t.Errorf("segment.bytes = %d, %v; want %d", seg, err, 1<<30)
	}
	ratio, err := v.Float64("min.cleanable.dirty.ratio")
	if err != nil || ratio != 0.5 {
		t.Errorf("min.cleanable.dirty.ratio = %v, %v; want 0.5", ratio, err)
	}
	pre, err := v.Bool("preallocate")
	if err != nil || pre {
		t.Errorf("preallocate = %v, %v; want false", pre, err)
	}
	pol, err := v.List("cleanup.policy")
	if err != nil || !reflect.DeepEqual(pol, []string{"compact"}) {
		t.Errorf("cleanup.policy = %v, %v; want [compact]", pol, err)
	}
	ct, err := v.String("compression.type")
	if err != nil || ct != "producer" {
		t.Errorf("compression.type = %q, %v; want producer", ct, err)
	}
	thr, err := v.List("leader.replication.throttled.replicas")
	if err != nil || len(thr) != 0 {
		t.Errorf("leader.replication.throttled.replicas = %v, %v; want empty", thr, err)
	}
}

func TestValuesGetters(t *testing.T) {
	v := Values{"retention.ms": "abc", "custom": "7"}
	if _, err := v.Int64("retention.ms"); err == nil || err.Error() != "Invalid value abc for configuration retention.ms: Not a number of type LONG" {
		t.Errorf("Int64 of a bad value: %v", err)
	}
	if n, err := v.Int64("segment.ms"); err != nil || n != 604800000 {
		t.Errorf("missing name reads the default: %d, %v", n, err)
	}
	if n, err := v.Int64("custom"); err != nil || n != 7 {
		t.Errorf("unknown name in the map: %d, %v", n, err)
	}
	if _, err := v.Int64("nope"); !errors.Is(err, ErrUnknownConfig) {
		t.Errorf("unknown name: %v, want ErrUnknownConfig", err)
	}
	if _, err := v.Int64("log.retention.ms"); !errors.Is(err, ErrNullValue) {
		t.Errorf("null default: %v, want ErrNullValue", err)
	}
	if n, err := v.Int64("log.retention.hours"); err != nil || n != 168 {
		t.Errorf("broker default: %d, %v", n, err)
	}
}

func TestResolveBroker(t *testing.T) {
	tests := []struct {
		name                  string
		config                string
		perBroker             bool
		dyn, clusterDef, stat m
		value                 string
		null                  bool
		src                   Source
		syns                  []Synonym
	}{
		{
			name: "default", config: "message.max.bytes", perBroker: true,
			value: "1048588", src: SourceDefault,
			syns: []Synonym{{"message.max.bytes", "1048588", SourceDefault}},
		},
		{
			name: "null default", config: "log.retention.ms", perBroker: true,
			null: true, src: SourceDefault,
		},
		{
			name: "only hours set: ms stays null, Kafka drops the leading synonyms", config: "log.retention.ms", perBroker: true,
			stat: m{"log.retention.hours": "1"},
			null: true, src: SourceDefault,
		},
		{
			name: "hours described", config: "log.retention.hours", perBroker: true,
			dyn:   m{"log.retention.ms": "5"},
			stat:  m{"log.retention.hours": "1"},
			value: "1", src: SourceStaticBroker,
			syns: []Synonym{
				{"log.retention.hours", "1", SourceStaticBroker},
				{"log.retention.hours", "168", SourceDefault},
			},
		},
		{
			name: "ms described with family", config: "log.retention.ms", perBroker: true,
			dyn:   m{"log.retention.ms": "5"},
			stat:  m{"log.retention.hours": "1"},
			value: "5", src: SourceDynamicBroker,
			syns: []Synonym{
				{"log.retention.ms", "5", SourceDynamicBroker},
				{"log.retention.hours", "1", SourceStaticBroker},
				{"log.retention.hours", "168", SourceDefault},
			},
		},
		{
			name: "precedence and normalization", config: "log.cleanup.policy", perBroker: true,
			clusterDef: m{"log.cleanup.policy": "compact , delete"},
			stat:       m{"log.cleanup.policy": "compact"},
			value:      "compact,delete", src: SourceDynamicDefaultBroker,
			syns: []Synonym{
				{"log.cleanup.policy", "compact , delete", SourceDynamicDefaultBroker},
				{"log.cleanup.policy", "compact", SourceStaticBroker},
				{"log.cleanup.policy", "delete", SourceDefault},
			},
		},
		{
			name: "cluster default resource", config: "message.max.bytes", perBroker: false,
			dyn:        m{"message.max.bytes": "1"},
			clusterDef: m{"message.max.bytes": "2"},
			stat:       m{"message.max.bytes": "3"},
			value:      "2", src: SourceDynamicDefaultBroker,
			syns: []Synonym{{"message.max.bytes", "2", SourceDynamicDefaultBroker}},
		},
		{
			name: "custom config", config: "custom.plugin.x", perBroker: true,
			stat:  m{"custom.plugin.x": " raw "},
			value: " raw ", src: SourceStaticBroker,
			syns: []Synonym{{"custom.plugin.x", " raw ", SourceStaticBroker}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			value, null, src, syns := ResolveBroker(tt.config, tt.perBroker, tt.dyn, tt.clusterDef, tt.stat)
			if value != tt.value || null != tt.null || src != tt.src {
				t.Errorf("ResolveBroker(%s) = %q null=%v from %s, want %q null=%v from %s",
					tt.config, value, null, src, tt.value, tt.null, tt.src)
			}
			if !reflect.DeepEqual(syns, tt.syns) {
				t.Errorf("synonyms\n  %v\nwant\n  %v", syns, tt.syns)
			}
		})
	}
}

func TestReportedStatic(t *testing.T) {
	static := map[string]string{
		"message.max.bytes":           "1048588",              // Kafka's default: dropped
		"auto.create.topics.enable":   "TRUE",                 // the default once parsed
		"log.retention.hours":         "168",                  // a secondary synonym at its default
		"log.flush.interval.messages": "1",                    // Gregor's own default: kept
		"num.partitions":              "3",                    // set by the operator: kept
		"node.id":                     "1",                    // no default: kept
		"log.retention.ms":            "604800000",            // null default: kept
		"my.plugin.setting":           "x",                    // unknown: kept
		"log.dirs":                    "/var/lib/gregor/data", // null default: kept
	}
	got := ReportedStatic(static)
	want := map[string]string{
		"log.flush.interval.messages": "1", "num.partitions": "3", "node.id": "1",
		"log.retention.ms": "604800000", "my.plugin.setting": "x", "log.dirs": "/var/lib/gregor/data",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ReportedStatic = %v, want %v", got, want)
	}
	if len(static) != 9 {
		t.Error("ReportedStatic modified its argument")
	}
	// The rule changes sources, never values.
	for _, d := range Topics() {
		v1, _, _ := Resolve(d.Name, nil, nil, nil, static)
		v2, src, _ := Resolve(d.Name, nil, nil, nil, got)
		if v1 != v2 {
			t.Errorf("%s = %s with the full static config, %s with the reported one", d.Name, v1, v2)
		}
		if d.Name == "max.message.bytes" && src != SourceDefault {
			t.Errorf("max.message.bytes at Kafka's default reported from %v, want DEFAULT_CONFIG", src)
		}
		if d.Name == "flush.messages" && (v2 != "1" || src != SourceStaticBroker) {
			t.Errorf("flush.messages = %s from %v, want 1 from STATIC_BROKER_CONFIG", v2, src)
		}
	}
	for _, d := range Brokers() {
		v1, null1, _, _ := ResolveBroker(d.Name, true, nil, nil, static)
		v2, null2, _, _ := ResolveBroker(d.Name, true, nil, nil, got)
		if v1 != v2 || null1 != null2 {
			t.Errorf("broker %s = %q/%v with the full static config, %q/%v with the reported one", d.Name, v1, null1, v2, null2)
		}
	}
}
