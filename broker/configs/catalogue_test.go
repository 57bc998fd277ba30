package configs

import (
	"sort"
	"testing"
)

func TestTopicCatalogue(t *testing.T) {
	want := []string{
		"cleanup.policy", "compression.gzip.level", "compression.lz4.level", "compression.type",
		"compression.zstd.level", "delete.retention.ms", "errors.deadletterqueue.group.enable",
		"file.delete.delay.ms", "flush.messages",
		"flush.ms", "follower.replication.throttled.replicas", "index.interval.bytes",
		"leader.replication.throttled.replicas", "local.retention.bytes", "local.retention.ms",
		"max.compaction.lag.ms", "max.decompressed.message.bytes", "max.message.bytes",
		"message.timestamp.after.max.ms", "message.timestamp.before.max.ms", "message.timestamp.type",
		"min.cleanable.dirty.ratio", "min.compaction.lag.ms", "min.insync.replicas", "preallocate",
		"remote.copy.lag.bytes", "remote.copy.lag.ms", "remote.log.copy.disable",
		"remote.log.delete.on.disable", "remote.storage.enable",
		"retention.bytes", "retention.ms", "segment.bytes", "segment.index.bytes", "segment.jitter.ms",
		"segment.ms", "unclean.leader.election.enable",
	}
	got := Topics()
	if len(got) != len(want) {
		t.Fatalf("Topics() has %d configs, want %d", len(got), len(want))
	}
	for i, d := range got {
		if d.Name != want[i] {
			t.Errorf("Topics()[%d] = %s, want %s", i, d.Name, want[i])
		}
	}
	for _, removed := range []string{"message.format.version", "message.timestamp.difference.max.ms", "message.downconversion.enable"} {
		if _, ok := Topic(removed); ok {
			t.Errorf("Topic(%q) found; Kafka 4.x removed it", removed)
		}
	}
	if _, ok := Broker("log.message.downconversion.enable"); ok {
		t.Error("Broker(log.message.downconversion.enable) found; Kafka 4.x removed it")
	}
}

// checkDef checks what every Def must satisfy.
func checkDef(t *testing.T, d *Def) {
	t.Helper()
	if d.Doc == "" {
		t.Errorf("%s: empty Doc", d.Name)
	}
	if d.Type <= TypeUnknown || d.Type > TypePassword {
		t.Errorf("%s: bad Type %d", d.Name, d.Type)
	}
	if d.Sensitive != (d.Type == TypePassword) {
		t.Errorf("%s: Sensitive = %v for type %s", d.Name, d.Sensitive, d.Type)
	}
	if d.NullDefault {
		if d.Default != "" {
			t.Errorf("%s: null default but Default = %q", d.Name, d.Default)
		}
		return
	}
	if err := d.Validate(d.Default); err != nil {
		t.Errorf("%s: default %q fails its own validator: %v", d.Name, d.Default, err)
	}
	if n := d.normalize(d.Default); n != d.Default {
		t.Errorf("%s: default %q is not as Kafka prints it (%q)", d.Name, d.Default, n)
	}
}

func TestEveryTopicDef(t *testing.T) {
	for _, d := range Topics() {
		checkDef(t, d)
		if len(d.Synonyms) != len(d.syns) {
			t.Errorf("%s: Synonyms %v out of step with syns", d.Name, d.Synonyms)
		}
		for i, s := range d.Synonyms {
			b, ok := Broker(s)
			if !ok {
				t.Errorf("%s: broker synonym %s is not in the broker catalogue", d.Name, s)
				continue
			}
			if b.Type == d.Type && !b.NullDefault && b.Default != d.Default {
				t.Errorf("%s: default %q differs from broker %s default %q", d.Name, d.Default, s, b.Default)
			}
			// Only primary synonyms with a default share the topic
			// config's validator: log.retention.ms, log.flush.scheduler.interval.ms
			// and the like have none in Kafka.
			if i == 0 && b.Valid != d.Valid && b.Type == d.Type && !b.NullDefault {
				t.Errorf("%s: Valid %q differs from broker %s Valid %q", d.Name, d.Valid, s, b.Valid)
			}
		}
		// Kafka makes the first broker synonym of every topic config
		// cluster-wide dynamic.
		if len(d.Synonyms) > 0 {
			if b, _ := Broker(d.Synonyms[0]); b != nil && b.Update != UpdateClusterWide {
				t.Errorf("%s: primary broker synonym %s is %s, want cluster-wide", d.Name, b.Name, b.Update)
			}
		}
	}
}

func TestEveryBrokerDef(t *testing.T) {
	defs := Brokers()
	if !sort.SliceIsSorted(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name }) {
		t.Error("Brokers() not sorted")
	}
	for _, d := range defs {
		checkDef(t, d)
		if d.Synonyms != nil {
			found := false
			for _, s := range d.Synonyms {
				if s == d.Name {
					found = true
				}
				if _, ok := Broker(s); !ok {
					t.Errorf("%s: synonym %s not in catalogue", d.Name, s)
				}
			}
			if !found {
				t.Errorf("%s: Synonyms %v do not include the config itself", d.Name, d.Synonyms)
			}
		}
	}
	required := []string{
		"node.id", "broker.id", "listeners", "advertised.listeners", "log.dirs", "num.partitions",
		"default.replication.factor", "auto.create.topics.enable", "message.max.bytes",
		"socket.request.max.bytes", "log.retention.check.interval.ms", "offsets.topic.num.partitions",
		"offsets.topic.replication.factor", "offsets.retention.minutes", "group.initial.rebalance.delay.ms",
		"group.min.session.timeout.ms", "group.max.session.timeout.ms", "group.max.size",
		"transaction.state.log.num.partitions", "transactional.id.expiration.ms", "producer.id.expiration.ms",
		"log.message.timestamp.type", "log.message.timestamp.before.max.ms", "log.message.timestamp.after.max.ms",
		"num.recovery.threads.per.data.dir", "log.flush.offset.checkpoint.interval.ms",
		"replica.high.watermark.checkpoint.interval.ms", "log.index.interval.bytes", "log.index.size.max.bytes",
		"log.cleaner.enable", "log.cleaner.delete.retention.ms", "log.cleaner.min.compaction.lag.ms",
		"log.cleaner.max.compaction.lag.ms", "log.cleaner.min.cleanable.ratio", "unclean.leader.election.enable",
		"min.insync.replicas", "compression.type", "replica.lag.time.max.ms", "connections.max.idle.ms",
		"queued.max.requests", "max.connections", "max.connections.per.ip",
		"broker.rack", "broker.session.timeout.ms", "delete.topic.enable", "num.io.threads", "num.network.threads",
		"background.threads", "max.incremental.fetch.session.cache.slots", "offsets.topic.segment.bytes",
		"offsets.retention.check.interval.ms", "offset.metadata.max.bytes", "group.coordinator.rebalance.protocols",
		"remote.log.storage.system.enable", "max.decompressed.message.bytes", "log.remote.copy.lag.ms",
		"log.remote.copy.lag.bytes",
	}
	for _, name := range required {
		if _, ok := Broker(name); !ok {
			t.Errorf("Broker(%q) missing", name)
		}
	}
}

func TestKafkaFacts(t *testing.T) {
	tests := []struct {
		def     func(string) (*Def, bool)
		name    string
		typ     Type
		dflt    string
		null    bool
		valid   string
		update  UpdateMode
		synonym []string
	}{
		{Topic, "segment.bytes", TypeInt, "1073741824", false, "[1048576,...]", 0, []string{"log.segment.bytes"}},
		{Topic, "retention.ms", TypeLong, "604800000", false, "[-1,...]", 0, []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}},
		{Topic, "flush.ms", TypeLong, "9223372036854775807", false, "[0,...]", 0, []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}},
		{Topic, "segment.ms", TypeLong, "604800000", false, "[1,...]", 0, []string{"log.roll.ms", "log.roll.hours"}},
		{Topic, "max.message.bytes", TypeInt, "1048588", false, "[0,...]", 0, []string{"message.max.bytes"}},
		{Topic, "cleanup.policy", TypeList, "delete", false, "[compact, delete]", 0, []string{"log.cleanup.policy"}},
		{Topic, "compression.type", TypeString, "producer", false, "[uncompressed, zstd, lz4, snappy, gzip, producer]", 0, []string{"compression.type"}},
		{Topic, "compression.gzip.level", TypeInt, "-1", false, "[1,...,9] or -1", 0, []string{"compression.gzip.level"}},
		{Topic, "min.cleanable.dirty.ratio", TypeDouble, "0.5", false, "[0,...,1]", 0, []string{"log.cleaner.min.cleanable.ratio"}},
		{Topic, "message.timestamp.after.max.ms", TypeLong, "3600000", false, "[0,...]", 0, []string{"log.message.timestamp.after.max.ms"}},
		{Topic, "leader.replication.throttled.replicas", TypeList, "", false, "[partitionId]:[brokerId],[partitionId]:[brokerId],...", 0, nil},
		{Topic, "remote.storage.enable", TypeBoolean, "false", false, "", 0, nil},
		{Topic, "local.retention.ms", TypeLong, "-2", false, "[-2,...]", 0, []string{"log.local.retention.ms"}},
		{Broker, "log.retention.ms", TypeLong, "", true, "", UpdateClusterWide, []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}},
		{Broker, "log.retention.hours", TypeInt, "168", false, "", UpdateReadOnly, []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}},
		{Broker, "log.flush.scheduler.interval.ms", TypeLong, "9223372036854775807", false, "", UpdateReadOnly, nil},
		{Broker, "listeners", TypeList, "PLAINTEXT://:9092", false, "", UpdatePerBroker, nil},
		{Broker, "advertised.listeners", TypeList, "", true, "", UpdateReadOnly, nil},
		{Broker, "log.dirs", TypeList, "", true, "", UpdateReadOnly, nil},
		{Topic, "max.decompressed.message.bytes", TypeInt, "2147483639", false, "[1,...,2147483639]", 0, []string{"max.decompressed.message.bytes"}},
		{Topic, "remote.copy.lag.ms", TypeLong, "0", false, "[-1,...]", 0, []string{"log.remote.copy.lag.ms"}},
		{Topic, "remote.copy.lag.bytes", TypeLong, "-1", false, "[-1,...]", 0, []string{"log.remote.copy.lag.bytes"}},
		{Topic, "errors.deadletterqueue.group.enable", TypeBoolean, "false", false, "", 0, nil},
		{Broker, "num.io.threads", TypeInt, "8", false, "[1,...]", UpdateClusterWide, nil},
		{Broker, "offsets.topic.replication.factor", TypeShort, "3", false, "[1,...]", UpdateReadOnly, nil},
		{Broker, "num.recovery.threads.per.data.dir", TypeInt, "2", false, "[1,...]", UpdateClusterWide, nil},
		{Broker, "max.connections", TypeInt, "2147483647", false, "[0,...]", UpdateClusterWide, nil},
		{Broker, "node.id", TypeInt, "", true, "", UpdateReadOnly, nil},
		{Broker, "broker.id", TypeInt, "-1", false, "", UpdateReadOnly, nil},
	}
	for _, tt := range tests {
		d, ok := tt.def(tt.name)
		if !ok {
			t.Errorf("%s: not found", tt.name)
			continue
		}
		if d.Type != tt.typ || d.Default != tt.dflt || d.NullDefault != tt.null || d.Valid != tt.valid || d.Update != tt.update {
			t.Errorf("%s = {%s %q null=%v %q %s}, want {%s %q null=%v %q %s}", tt.name,
				d.Type, d.Default, d.NullDefault, d.Valid, d.Update, tt.typ, tt.dflt, tt.null, tt.valid, tt.update)
		}
		if !equalStrings(d.Synonyms, tt.synonym) {
			t.Errorf("%s: Synonyms = %v, want %v", tt.name, d.Synonyms, tt.synonym)
		}
	}
}

func TestTypeAndSourceNumbers(t *testing.T) {
	types := map[Type]string{0: "UNKNOWN", 1: "BOOLEAN", 2: "STRING", 3: "INT", 4: "SHORT", 5: "LONG", 6: "DOUBLE", 7: "LIST", 8: "CLASS", 9: "PASSWORD"}
	for typ, name := range types {
		if typ.String() != name {
			t.Errorf("Type(%d) = %s, want %s", typ, typ, name)
		}
	}
	sources := map[Source]string{
		0: "UNKNOWN", 1: "TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG", 3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
		4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG",
		7: "CLIENT_METRICS_CONFIG", 8: "GROUP_CONFIG",
	}
	for src, name := range sources {
		if src.String() != name {
			t.Errorf("Source(%d) = %s, want %s", src, src, name)
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
