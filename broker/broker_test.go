package broker

import (
	"context"
	"fmt"
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
// partition sync) is answered, successfully, within that time rather than
// after the client has given up, and the timeout is one for all the
// request's topics, not one each; the logs follow.
func TestCreateTopicsAnswersWithinTimeout(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	const topics = 20
	b.syncMu.Lock()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = 1000
	for i := range topics {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = fmt.Sprintf("slow-logs-%d", i), 3, 1
		req.Topics = append(req.Topics, rt)
	}
	// A second each would be 20 s; the request's one second is the bound.
	resp, err := w.roundTripWithin(req, 10*time.Second)
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
