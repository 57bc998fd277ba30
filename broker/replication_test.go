package broker

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-io/gregor/protocol"
)

// startCluster starts n brokers on one registry (the first one's embedded
// etcd) and waits until each sees all of them.
func startCluster(t *testing.T, n int, mutate ...func(*Config)) []*Broker {
	t.Helper()
	first := startBroker(t, mutate...)
	brokers := []*Broker{first}
	for id := 2; id <= n; id++ {
		brokers = append(brokers, startBroker(t, append(slices.Clone(mutate), func(c *Config) {
			c.NodeID = int32(id)
			c.EtcdEndpoints = first.cluster.ClientURLs()
		})...))
	}
	for _, b := range brokers {
		waitFor(t, 20*time.Second, fmt.Sprintf("broker %d sees %d brokers", b.cfg.NodeID, n), func() error {
			if got := len(b.cluster.Snapshot().Brokers); got != n {
				return fmt.Errorf("%d live", got)
			}
			return nil
		})
	}
	return brokers
}

// TestReplicationFailover: on three brokers, a topic with replication
// factor 3 and min.insync.replicas 2 gets every follower into its ISRs;
// acks=all records written before and after the leader of a partition
// stops are all read back once, in order, from the brokers that remain.
// The leader stops with a controlled shutdown (its leaderships moved
// first), or without one (the controller moves them when its registration
// goes).
func TestReplicationFailover(t *testing.T) {
	t.Parallel()
	for _, controlled := range []bool{true, false} {
		t.Run(fmt.Sprint("controlled=", controlled), func(t *testing.T) {
			t.Parallel()
			testReplicationFailover(t, controlled)
		})
	}
}

func testReplicationFailover(t *testing.T, controlled bool) {
	bs := startCluster(t, 3, func(c *Config) {
		c.ReplicaLagTimeMax = 10 * time.Second
		c.ControlledShutdownEnable = controlled
	})
	ctx := testContext(t, 2*time.Minute)
	var seeds []string
	for _, b := range bs {
		seeds = append(seeds, b.Addrs()...)
	}
	cl := newClient(t, bs[0], kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	minISR := "2"
	if _, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": &minISR}, "rep"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "every follower in the ISRs", func() error {
		for _, b := range bs {
			for p, st := range b.cluster.Snapshot().Topics["rep"].Partitions {
				if len(st.ISR) != 3 {
					return fmt.Errorf("broker %d sees partition %d with ISR %v", b.cfg.NodeID, p, st.ISR)
				}
			}
		}
		return nil
	})

	const perRound = 200
	produce := func(round int) {
		t.Helper()
		var recs []*kgo.Record
		for p := int32(0); p < 3; p++ {
			for i := 0; i < perRound; i++ {
				recs = append(recs, &kgo.Record{Topic: "rep", Partition: p, Value: []byte(fmt.Sprintf("%d-%d-%d", p, round, i))})
			}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	produce(0)

	// Each follower's log reaches the leader's high watermark.
	md := bs[0].cluster.Snapshot()
	for p, st := range md.Topics["rep"].Partitions {
		leader := bs[st.Leader-1].parts.Load().byName["rep"][p]
		waitFor(t, 20*time.Second, fmt.Sprintf("partition %d replicated", p), func() error {
			for _, b := range bs {
				l := b.parts.Load().byName["rep"][p].log
				if l.LogEndOffset() < leader.log.HighWatermark() || leader.log.HighWatermark() < perRound {
					return fmt.Errorf("broker %d at %d, leader's high watermark %d", b.cfg.NodeID, l.LogEndOffset(), leader.log.HighWatermark())
				}
			}
			return nil
		})
	}

	// Stop the broker leading a partition (not broker 1, which holds the
	// registry).
	var victim *Broker
	for _, st := range md.Topics["rep"].Partitions {
		if st.Leader != 1 {
			victim = bs[st.Leader-1]
			break
		}
	}
	t.Logf("stopping broker %d", victim.cfg.NodeID)
	if err := victim.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "leaderships moved off the stopped broker", func() error {
		for p, st := range bs[0].cluster.Snapshot().Topics["rep"].Partitions {
			if st.Leader == victim.cfg.NodeID || st.Leader < 0 || len(st.ISR) != 2 || slices.Contains(st.ISR, victim.cfg.NodeID) {
				return fmt.Errorf("partition %d: leader %d, ISR %v", p, st.Leader, st.ISR)
			}
		}
		return nil
	})
	produce(1)

	// Read everything back from the survivors.
	var survivors []string
	for _, b := range bs {
		if b != victim {
			survivors = append(survivors, b.Addrs()...)
		}
	}
	consumer := newClient(t, bs[0], kgo.SeedBrokers(survivors...), kgo.ConsumeTopics("rep"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[int32][]string{}
	n := 0
	for n < 2*3*perRound {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records: %v", n, 2*3*perRound, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], string(r.Value))
			n++
		})
	}
	for p := int32(0); p < 3; p++ {
		var want []string
		for round := 0; round < 2; round++ {
			for i := 0; i < perRound; i++ {
				want = append(want, strconv.Itoa(int(p))+"-"+strconv.Itoa(round)+"-"+strconv.Itoa(i))
			}
		}
		if !slices.Equal(got[p], want) {
			t.Errorf("partition %d: read %d records, want %d in order, once each", p, len(got[p]), len(want))
		}
	}
}

// TestReplicationMetrics: the leader's replication gauges and ISR counters
// follow a follower joining, then dying.
func TestReplicationMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	b1 := startBroker(t, func(c *Config) {
		c.Registerer, c.Gatherer = reg, reg
		c.AdminListener = "127.0.0.1:0"
	})
	b2 := startBroker(t, func(c *Config) {
		c.NodeID = 2
		c.EtcdEndpoints = b1.cluster.ClientURLs()
	})
	waitFor(t, 20*time.Second, "broker 1 sees broker 2", func() error {
		if _, ok := b1.cluster.Snapshot().Broker(2); !ok {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	w := dialWire(t, b1)
	rt := w.createTopicResultAssigned("metered", [][]int32{{1, 2}}, nil)
	if rt.ErrorCode != 0 {
		t.Fatalf("create: %d", rt.ErrorCode)
	}
	want := func(what string, m map[string]float64) {
		t.Helper()
		waitFor(t, 20*time.Second, what, func() error {
			s := scrapeMetrics(t, b1.AdminAddr())
			for name, v := range m {
				if got, found := s.sum(name, nil); !found || got != v {
					return fmt.Errorf("%s = %g (exported: %v), want %g", name, got, found, v)
				}
			}
			return nil
		})
	}
	want("follower 2 in sync", map[string]float64{
		"gregor_partitions_led": 1, "gregor_partitions_under_replicated": 0, "gregor_partitions_under_min_isr": 0,
		"gregor_isr_expands_total": 1, "gregor_isr_shrinks_total": 0, "gregor_cluster_partitions_offline": 0,
	})
	rp := w.producePartition(-1, "metered", 0, buildBatch(t, plainHeader(), "v", 5))
	checkCode(t, "acks=all produce", rp.ErrorCode, protocol.None)
	want("follower 2 caught up", map[string]float64{"gregor_replica_lag_records": 0})
	if err := b2.Close(); err != nil {
		t.Fatal(err)
	}
	want("follower 2 gone", map[string]float64{
		"gregor_partitions_under_replicated": 1, "gregor_isr_shrinks_total": 1, "gregor_partitions_under_min_isr": 0,
	})
}
