package broker

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-io/gregor/coordinator/cluster"
)

// TestRetention fills topics with 1 MiB segments and checks what a
// retention pass leaves: by retention.bytes, the earliest offset moves to
// the first kept segment, the log stays within retention.bytes plus a
// segment, and a consumer from the start reads exactly the kept records; a
// compacted topic keeps everything; by retention.ms (records stamped two
// days ago), the broker's own retention loop, every
// log.retention.check.interval.ms, leaves only the active segment.
func TestRetention(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(c *Config) { c.LogRetentionCheckInterval = 50 * time.Millisecond })
	ctx := configsTestCtx(t)
	cl := newClient(t, b)
	adm := kadm.NewClient(cl)
	const segmentBytes, retentionBytes = 1 << 20, 2 << 20
	small := func(extra map[string]*string) map[string]*string {
		c := map[string]*string{
			"segment.bytes":        kadm.StringPtr(fmt.Sprint(segmentBytes)),
			"file.delete.delay.ms": kadm.StringPtr("0"),
		}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	// retention.ms -1 keeps the loop's time rule off the size topic, so
	// only retention.bytes decides there.
	topics := map[string]map[string]*string{
		"ret-size":    small(map[string]*string{"retention.bytes": kadm.StringPtr(fmt.Sprint(retentionBytes)), "retention.ms": kadm.StringPtr("-1")}),
		"ret-compact": small(map[string]*string{"retention.bytes": kadm.StringPtr(fmt.Sprint(retentionBytes)), "cleanup.policy": kadm.StringPtr("compact")}),
		"ret-time":    small(map[string]*string{"retention.ms": kadm.StringPtr("60000")}),
	}
	for name, cfg := range topics {
		if _, err := adm.CreateTopic(ctx, 1, 1, cfg, name); err != nil {
			t.Fatal(err)
		}
	}

	// 250 records of 20000 random bytes: about 5 MiB, five segments.
	rng := rand.New(rand.NewPCG(3, 4))
	values := make([][]byte, 250)
	for i := range values {
		values[i] = make([]byte, 20000)
		for j := range values[i] {
			values[i][j] = byte(rng.Uint32())
		}
	}
	old := time.Now().Add(-48 * time.Hour)
	var recs []*kgo.Record
	for name := range topics {
		for i, v := range values {
			r := &kgo.Record{Topic: name, Key: []byte(fmt.Sprint(i)), Value: v}
			if name == "ret-time" {
				r.Timestamp = old
			}
			recs = append(recs, r)
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// The loop deletes the old records' segments by itself.
	waitFor(t, 30*time.Second, "retention.ms deletes every segment but the active one", func() error {
		l := retentionLog(t, b, "ret-time")
		if n := l.SegmentCount(); n != 1 {
			return fmt.Errorf("%d segments", n)
		}
		return nil
	})
	// One more pass now, so every topic has seen one after the produce.
	if _, err := b.logs.RunRetention(); err != nil {
		t.Fatal(err)
	}

	starts, err := adm.ListStartOffsets(ctx, "ret-size", "ret-compact", "ret-time")
	if err != nil {
		t.Fatal(err)
	}
	for name := range topics {
		l := retentionLog(t, b, name)
		o, _ := starts.Lookup(name, 0)
		t.Logf("%s: earliest offset %d, %d segments, %d bytes", name, o.Offset, l.SegmentCount(), l.Size())
		if o.Err != nil || o.Offset != l.LogStartOffset() {
			t.Fatalf("%s: earliest offset %d (err %v), log start %d", name, o.Offset, o.Err, l.LogStartOffset())
		}
		switch name {
		case "ret-compact":
			if o.Offset != 0 {
				t.Errorf("ret-compact: earliest offset %d, want 0: retention applies only to cleanup.policy delete", o.Offset)
			}
		case "ret-size":
			if o.Offset == 0 {
				t.Errorf("ret-size: earliest offset still 0")
			}
			if size := l.Size(); size < retentionBytes || size > retentionBytes+segmentBytes {
				t.Errorf("ret-size: log size %d, want within [%d, %d]", size, retentionBytes, retentionBytes+segmentBytes)
			}
		case "ret-time":
			if o.Offset == 0 || o.Offset >= int64(len(values)) {
				t.Errorf("ret-time: earliest offset %d, want the active segment's base inside (0, %d)", o.Offset, len(values))
			}
		}
		consumeFromStart(ctx, t, b, name, o.Offset, values)
	}
}

// consumeFromStart consumes topic from its earliest offset and checks that
// it reads exactly the records from first on, with the values produced.
func consumeFromStart(ctx context.Context, t *testing.T, b *Broker, topic string, first int64, values [][]byte) {
	t.Helper()
	cl := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	next := first
	for next < int64(len(values)) {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%s: consumed up to offset %d before %v", topic, next, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("%s: fetch: %v", topic, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next {
				t.Fatalf("%s: consumer read offset %d, want %d", topic, r.Offset, next)
			}
			if !bytes.Equal(r.Value, values[r.Offset]) {
				t.Fatalf("%s: offset %d holds another value than produced", topic, r.Offset)
			}
			next++
		})
	}
}

func retentionLog(t *testing.T, b *Broker, topic string) interface {
	SegmentCount() int
	LogStartOffset() int64
	Size() int64
} {
	t.Helper()
	p, code := b.lookupPartition(topic, [16]byte{}, false, 0)
	if p == nil {
		t.Fatalf("partition %s-0: %v", topic, code)
	}
	return p.log()
}

// TestRetentionSettings checks how topic and broker configs resolve into
// the log's retention settings.
func TestRetentionSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		topic, static map[string]string
		ms, bytes     int64
		delay         int64
		deletes       bool
	}{
		{name: "Kafka's defaults", ms: 604_800_000, bytes: -1, delay: 60_000, deletes: true},
		{
			name:   "broker hours and bytes",
			static: map[string]string{"log.retention.hours": "2", "log.retention.bytes": "1000", "log.segment.delete.delay.ms": "5"},
			ms:     7_200_000, bytes: 1000, delay: 5, deletes: true,
		},
		{
			name:   "negative hours mean no limit",
			static: map[string]string{"log.retention.hours": "-1"},
			ms:     -1, bytes: -1, delay: 60_000, deletes: true,
		},
		{
			name:   "topic beats broker",
			topic:  map[string]string{"retention.ms": "100", "retention.bytes": "200", "file.delete.delay.ms": "0", "cleanup.policy": "compact,delete"},
			static: map[string]string{"log.retention.minutes": "3", "log.retention.bytes": "1000"},
			ms:     100, bytes: 200, delay: 0, deletes: true,
		},
		{
			name:  "compacted only",
			topic: map[string]string{"cleanup.policy": "compact"},
			ms:    604_800_000, bytes: -1, delay: 60_000, deletes: false,
		},
	}
	for _, tt := range tests {
		cfg := DefaultConfig()
		cfg.StaticTopicDefaults = tt.static
		b, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		s, err := b.resolveSettings(&cluster.Topic{Name: "t", Configs: tt.topic}, &cluster.Metadata{})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		got := s.log
		if got.RetentionMs != tt.ms || got.RetentionBytes != tt.bytes || got.FileDeleteDelayMs != tt.delay || got.CleanupDelete != tt.deletes {
			t.Errorf("%s: retention.ms %d, retention.bytes %d, file.delete.delay.ms %d, delete %v; want %d, %d, %d, %v",
				tt.name, got.RetentionMs, got.RetentionBytes, got.FileDeleteDelayMs, got.CleanupDelete,
				tt.ms, tt.bytes, tt.delay, tt.deletes)
		}
	}
}
