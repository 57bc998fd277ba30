package broker

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startBroker starts an in-process broker on free ports with its data and
// embedded registry in a temp dir, and closes it when the test ends.
func startBroker(t testing.TB, mutate ...func(*Config)) *Broker {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Listeners = []string{"PLAINTEXT://127.0.0.1:0"}
	cfg.LogDirs = []string{t.TempDir()}
	cfg.AdminListener = ""
	cfg.EtcdClientAddr, cfg.EtcdPeerAddr = "127.0.0.1:0", "127.0.0.1:0"
	for _, m := range mutate {
		m(&cfg)
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close broker: %v", err)
		}
	})
	return b
}

func newClient(t testing.TB, b *Broker, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addrs()...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func TestProduceConsumeRoundTrip(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(newClient(t, b))
	if _, err := adm.CreateTopic(ctx, 4, 1, nil, "orders"); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	prod := newClient(t, b, kgo.DefaultProduceTopic("orders"))
	const n = 2000
	for i := 0; i < n; i++ {
		prod.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i % 17)), Value: []byte(fmt.Sprintf("value-%d", i))}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cons := newClient(t, b, kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < n {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll after %d records: %v", got, err)
		}
		got += fs.NumRecords()
	}
	if got != n {
		t.Fatalf("consumed %d records, want %d", got, n)
	}
}

// TestCreateTopicsAnswersWithinTimeout: a create whose logs take longer
// than the request's timeout to open here (held back by holding the
// partition sync) is answered, successfully, rather than left waiting for
// them, and the timeout is one for all the request's topics, not one each;
// the logs follow. The waits are the broker's own account of them (its
// log), so a slow registry on a busy machine does not count against it.
func TestCreateTopicsAnswersWithinTimeout(t *testing.T) {
	t.Parallel()
	logs := &logRecorder{}
	b := startBroker(t, func(c *Config) { c.Logger = slog.New(logs) })
	w := dialWire(t, b)
	const topics = 20
	const timeout = time.Second
	b.syncMu.Lock()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = int32(timeout.Milliseconds())
	for i := range topics {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = fmt.Sprintf("slow-logs-%d", i), 3, 1
		req.Topics = append(req.Topics, rt)
	}
	resp, err := w.roundTripWithin(req, time.Minute)
	b.syncMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	got := resp.(*kmsg.CreateTopicsResponse).Topics
	if len(got) != topics {
		t.Fatalf("create topics answered %d topics, want %d", len(got), topics)
	}
	for _, g := range got {
		if g.ErrorCode != 0 || g.NumPartitions != 3 {
			t.Fatalf("create topics answer %+v, want the topic created with 3 partitions", g)
		}
	}
	// Every topic was answered with its logs still being opened; their
	// waits together fit the request's one timeout (a second each would
	// be 20 s).
	waits := logs.find("topic created; its logs are still being opened")
	if len(waits) != topics {
		t.Fatalf("%d topics answered before their logs were open, want %d", len(waits), topics)
	}
	var total time.Duration
	for _, r := range waits {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "waited" {
				total += a.Value.Duration()
			}
			return true
		})
	}
	if total > timeout {
		t.Fatalf("the topics waited %v for their logs in all, want at most the request's %v", total, timeout)
	}
	waitFor(t, 30*time.Second, "produce to the new topics", func() error {
		for i := range topics {
			p := w.producePartition(-1, fmt.Sprintf("slow-logs-%d", i), 2, buildBatch(t, plainHeader(), "v", 1))
			if p.ErrorCode != 0 {
				return fmt.Errorf("slow-logs-%d: error code %d", i, p.ErrorCode)
			}
		}
		return nil
	})
}

// logRecorder is a slog handler keeping every record, for tests that check
// what the broker logged.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r.Clone())
	return nil
}

// WithAttrs and WithGroup drop what they are given: the records the tests
// look for carry their attributes themselves.
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

// find returns the records logged with message msg.
func (l *logRecorder) find(msg string) []slog.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []slog.Record
	for _, r := range l.records {
		if r.Message == msg {
			out = append(out, r)
		}
	}
	return out
}
