package broker

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/storage"
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
			tp := b.cluster.Snapshot().Topics["rep"]
			if tp == nil {
				return fmt.Errorf("broker %d does not see the topic", b.cfg.NodeID)
			}
			for p, st := range tp.Partitions {
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
				l := b.parts.Load().byName["rep"][p].log()
				if l.LogEndOffset() < leader.log().HighWatermark() || leader.log().HighWatermark() < perRound {
					return fmt.Errorf("broker %d at %d, leader's high watermark %d", b.cfg.NodeID, l.LogEndOffset(), leader.log().HighWatermark())
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
// follow a follower in the ISR from the partition's creation, then dying,
// then back.
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
		"gregor_isr_expands_total": 0, "gregor_isr_shrinks_total": 0, "gregor_cluster_partitions_offline": 0,
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
	restartBroker(t, b2)
	want("follower 2 back", map[string]float64{
		"gregor_partitions_under_replicated": 0, "gregor_isr_expands_total": 1, "gregor_isr_shrinks_total": 1,
	})
}

// logBytes returns a partition log's stored batches, from its start to its
// end, as they lie in the segment files (one segment is enough here).
func logBytes(t *testing.T, b *Broker, topic string, partition int32) []byte {
	t.Helper()
	p := b.parts.Load().byName[topic][partition]
	rr, err := p.log().Read(storage.ReadOptions{Offset: p.log().LogStartOffset(), MaxBytes: 64 << 20, MaxOffset: p.log().LogEndOffset()})
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	out, err := rr.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// restartBroker starts a broker again on b's log dirs and registry, after
// b was closed, and closes it when the test ends.
func restartBroker(t *testing.T, b *Broker) *Broker {
	t.Helper()
	cfg := b.cfg
	cfg.Listeners = []string{"PLAINTEXT://127.0.0.1:0"}
	nb, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := nb.Start(testContext(t, time.Minute)); err != nil {
		t.Fatalf("restart broker %d: %v", cfg.NodeID, err)
	}
	t.Cleanup(func() {
		if err := nb.Close(); err != nil {
			t.Errorf("close broker: %v", err)
		}
	})
	return nb
}

// waitISR waits until b's view shows the partition's ISR as want, in
// node id order.
func waitISR(t *testing.T, b *Broker, topic string, partition int32, want string) {
	t.Helper()
	waitFor(t, 30*time.Second, fmt.Sprintf("%s-%d ISR %s", topic, partition, want), func() error {
		st := b.cluster.Snapshot().Topics[topic].Partitions[partition]
		isr := slices.Clone(st.ISR)
		slices.Sort(isr)
		if got := fmt.Sprint(isr); got != want {
			return fmt.Errorf("ISR %s, leader %d epoch %d", got, st.Leader, st.LeaderEpoch)
		}
		return nil
	})
}

// TestFollowerCatchesUp: a follower stopped while its leader takes
// acks=all writes comes back, fetches what it missed, rejoins the ISR, and
// then holds the leader's log byte for byte.
func TestFollowerCatchesUp(t *testing.T) {
	t.Parallel()
	bs := startCluster(t, 3)
	w := dialWire(t, bs[0])
	rt := w.createTopicResultAssigned("catch", [][]int32{{1, 2, 3}}, map[string]string{"min.insync.replicas": "2"})
	checkCode(t, "create", rt.ErrorCode, protocol.None)
	waitISR(t, bs[0], "catch", 0, "[1 2 3]")
	for i := 0; i < 20; i++ {
		rp := w.producePartition(-1, "catch", 0, buildBatch(t, plainHeader(), fmt.Sprint("before-", i), 10))
		checkCode(t, "produce before", rp.ErrorCode, protocol.None)
	}
	if err := bs[2].Close(); err != nil {
		t.Fatal(err)
	}
	waitISR(t, bs[0], "catch", 0, "[1 2]")
	for i := 0; i < 100; i++ {
		rp := w.producePartition(-1, "catch", 0, buildBatch(t, plainHeader(), fmt.Sprint("while-", i), 10))
		checkCode(t, "produce while broker 3 is down", rp.ErrorCode, protocol.None)
	}
	b3 := restartBroker(t, bs[2])
	waitISR(t, bs[0], "catch", 0, "[1 2 3]")
	leader := bs[0].parts.Load().byName["catch"][0].log()
	waitFor(t, 20*time.Second, "broker 3 at the leader's end", func() error {
		if got, want := b3.parts.Load().byName["catch"][0].log().LogEndOffset(), leader.LogEndOffset(); got != want {
			return fmt.Errorf("at %d, leader at %d", got, want)
		}
		return nil
	})
	if got, want := logBytes(t, b3, "catch", 0), logBytes(t, bs[0], "catch", 0); !bytes.Equal(got, want) {
		t.Fatalf("broker 3 holds %d bytes that differ from the leader's %d", len(got), len(want))
	}
	if leader.LogEndOffset() != 1200 {
		t.Fatalf("leader's log end %d, want 1200", leader.LogEndOffset())
	}
}

// TestDivergingFormerLeader: a leader takes records its follower never
// fetched (acks=1), then stops; the follower, now leader, takes other
// records at the same offsets. When the former leader returns it cuts its
// log at the new leader's epoch boundary (KIP-101, KIP-279) and copies the
// new leader's records: both logs end byte for byte equal.
func TestDivergingFormerLeader(t *testing.T) {
	t.Parallel()
	bs := startCluster(t, 2)
	w1, w2 := dialWire(t, bs[0]), dialWire(t, bs[1])
	rt := w1.createTopicResultAssigned("div", [][]int32{{2, 1}}, nil)
	checkCode(t, "create", rt.ErrorCode, protocol.None)
	waitISR(t, bs[0], "div", 0, "[1 2]")
	rp := w2.producePartition(-1, "div", 0, buildBatch(t, plainHeader(), "acked", 10))
	checkCode(t, "acks=all to broker 2", rp.ErrorCode, protocol.None)

	// Broker 1 stops fetching; broker 2 takes 5 records only it has.
	bs[0].pauseFetchers.Store(true)
	waitFor(t, 20*time.Second, "broker 1's fetches done", func() error {
		if n := bs[0].fetchesInFlight.Load(); n != 0 {
			return fmt.Errorf("%d in flight", n)
		}
		return nil
	})
	rp = w2.producePartition(1, "div", 0, buildBatch(t, plainHeader(), "lost", 5))
	checkCode(t, "acks=1 to broker 2", rp.ErrorCode, protocol.None)
	if end := bs[1].parts.Load().byName["div"][0].log().LogEndOffset(); end != 15 {
		t.Fatalf("broker 2's log end %d, want 15", end)
	}
	if end := bs[0].parts.Load().byName["div"][0].log().LogEndOffset(); end != 10 {
		t.Fatalf("broker 1's log end %d, want 10 (its fetcher is paused)", end)
	}
	if err := bs[1].Close(); err != nil {
		t.Fatal(err)
	}
	bs[0].pauseFetchers.Store(false)
	waitFor(t, 20*time.Second, "broker 1 leads", func() error {
		if st := bs[0].cluster.Snapshot().Topics["div"].Partitions[0]; st.Leader != 1 || st.LeaderEpoch != 1 {
			return fmt.Errorf("leader %d epoch %d", st.Leader, st.LeaderEpoch)
		}
		return nil
	})
	rp = w1.producePartition(-1, "div", 0, buildBatch(t, plainHeader(), "new", 3))
	checkCode(t, "acks=all to broker 1", rp.ErrorCode, protocol.None)
	if rp.BaseOffset != 10 {
		t.Fatalf("broker 1 appended at %d, want 10", rp.BaseOffset)
	}

	b2 := restartBroker(t, bs[1])
	waitISR(t, bs[0], "div", 0, "[1 2]")
	l2 := b2.parts.Load().byName["div"][0].log()
	if l2.LogEndOffset() != 13 {
		t.Fatalf("former leader's log end %d, want 13", l2.LogEndOffset())
	}
	if got, want := logBytes(t, b2, "div", 0), logBytes(t, bs[0], "div", 0); !bytes.Equal(got, want) {
		t.Fatalf("former leader holds %d bytes that differ from the leader's %d", len(got), len(want))
	}
	if e, end := l2.EndOffsetForEpoch(0); e != 0 || end != 10 {
		t.Fatalf("former leader's epoch 0 ends at (%d, %d), want (0, 10)", e, end)
	}
}

// TestUncleanLeaderElection: a partition whose only in-sync replica is
// gone stays leaderless, unless its topic allows unclean leader election:
// then the surviving out-of-sync replica leads, alone in the ISR. When the
// former leader returns, it leads the clean topic again; for the unclean
// one it cuts its log, below its high watermark (records the unclean
// election gave up), to the new leader's.
func TestUncleanLeaderElection(t *testing.T) {
	t.Parallel()
	bs := startCluster(t, 2)
	w1, w2 := dialWire(t, bs[0]), dialWire(t, bs[1])
	topics := []string{"clean", "unclean"}
	for i, topic := range topics {
		rt := w1.createTopicResultAssigned(topic, [][]int32{{2, 1}}, map[string]string{"unclean.leader.election.enable": fmt.Sprint(i == 1)})
		checkCode(t, "create "+topic, rt.ErrorCode, protocol.None)
		waitISR(t, bs[0], topic, 0, "[1 2]")
		rp := w2.producePartition(-1, topic, 0, buildBatch(t, plainHeader(), "both", 5))
		checkCode(t, "produce to "+topic, rp.ErrorCode, protocol.None)
	}
	// Broker 1 falls out of both ISRs; broker 2 alone takes 5 more, then
	// stops.
	bs[0].pauseFetchers.Store(true)
	waitFor(t, 20*time.Second, "broker 1's fetches done", func() error {
		if n := bs[0].fetchesInFlight.Load(); n != 0 {
			return fmt.Errorf("%d in flight", n)
		}
		return nil
	})
	for _, topic := range topics {
		from := bs[1].cluster.Snapshot().Topics[topic].Partitions[0]
		if _, err := bs[1].cluster.AlterISR(testContext(t, 20*time.Second), topic, 0, from, []int32{2}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, "broker 2 alone in the ISR of "+topic, func() error {
			if isr := bs[1].parts.Load().byName[topic][0].isr(); len(isr) != 1 {
				return fmt.Errorf("ISR %v", isr)
			}
			return nil
		})
		rp := w2.producePartition(-1, topic, 0, buildBatch(t, plainHeader(), "only-2", 5))
		checkCode(t, "produce to broker 2 alone, "+topic, rp.ErrorCode, protocol.None)
	}
	if err := bs[1].Close(); err != nil {
		t.Fatal(err)
	}
	bs[0].pauseFetchers.Store(false)
	waitFor(t, 20*time.Second, "leaders decided", func() error {
		md := bs[0].cluster.Snapshot()
		c, u := md.Topics["clean"].Partitions[0], md.Topics["unclean"].Partitions[0]
		if c.Leader != -1 || fmt.Sprint(c.ISR) != "[2]" || u.Leader != 1 || fmt.Sprint(u.ISR) != "[1]" {
			return fmt.Errorf("clean: leader %d ISR %v; unclean: leader %d ISR %v", c.Leader, c.ISR, u.Leader, u.ISR)
		}
		return nil
	})
	rp := w1.producePartition(-1, "unclean", 0, buildBatch(t, plainHeader(), "only-1", 3))
	checkCode(t, "produce to the unclean leader", rp.ErrorCode, protocol.None)
	if rp.BaseOffset != 5 {
		t.Fatalf("the unclean leader appended at %d, want 5", rp.BaseOffset)
	}

	b2 := restartBroker(t, bs[1])
	waitISR(t, bs[0], "unclean", 0, "[1 2]")
	if got, want := logBytes(t, b2, "unclean", 0), logBytes(t, bs[0], "unclean", 0); !bytes.Equal(got, want) {
		t.Fatalf("former leader holds %d bytes of the unclean topic, the leader %d: they differ", len(got), len(want))
	}
	waitFor(t, 20*time.Second, "broker 2 leads the clean topic again", func() error {
		if st := bs[0].cluster.Snapshot().Topics["clean"].Partitions[0]; st.Leader != 2 {
			return fmt.Errorf("leader %d", st.Leader)
		}
		return nil
	})
	if end := b2.parts.Load().byName["clean"][0].log().LogEndOffset(); end != 10 {
		t.Fatalf("the clean topic's log end on broker 2 is %d, want 10 (nothing cut)", end)
	}
}

// TestFollowerFetching: with the rack-aware replica selector, a consumer in
// a follower's rack is sent to that follower (KIP-392), which serves it up
// to its own high watermark; a consumer in the leader's rack, or without a
// rack, reads from the leader; an old fetch version cannot read from a
// follower. A franz-go consumer with client.rack follows the redirection.
func TestFollowerFetching(t *testing.T) {
	t.Parallel()
	racked := func(rack string) func(*Config) {
		return func(c *Config) { c.Rack, c.ReplicaSelector = rack, RackAwareReplicaSelector }
	}
	b1 := startBroker(t, racked("east"))
	b2 := startBroker(t, racked("west"), func(c *Config) {
		c.NodeID = 2
		c.EtcdEndpoints = b1.cluster.ClientURLs()
	})
	waitFor(t, 20*time.Second, "broker 1 sees broker 2", func() error {
		if _, ok := b1.cluster.Snapshot().Broker(2); !ok {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	w1, w2 := dialWire(t, b1), dialWire(t, b2)
	rt := w1.createTopicResultAssigned("near", [][]int32{{1, 2}}, nil)
	checkCode(t, "create", rt.ErrorCode, protocol.None)
	waitISR(t, b1, "near", 0, "[1 2]")
	rp := w1.producePartition(-1, "near", 0, buildBatch(t, plainHeader(), "v", 10))
	checkCode(t, "produce", rp.ErrorCode, protocol.None)
	waitFor(t, 20*time.Second, "broker 2's high watermark at 10", func() error {
		if hw := b2.parts.Load().byName["near"][0].log().HighWatermark(); hw != 10 {
			return fmt.Errorf("at %d", hw)
		}
		return nil
	})

	fetch := func(w *wireConn, v int16, rack string) kmsg.FetchResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(v)
		req.ReplicaID, req.ReplicaState.ID = -1, -1
		req.MaxBytes, req.SessionEpoch, req.Rack = 1<<20, -1, rack
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.TopicID = "near", rt.TopicID
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LastFetchedEpoch, fp.LogStartOffset = 0, 1<<20, -1, -1, -1
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		return w.mustRoundTrip(req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	}
	for _, c := range []struct {
		what      string
		w         *wireConn
		v         int16
		rack      string
		code      protocol.ErrorCode
		preferred int32
		records   bool
	}{
		{"leader, consumer in the follower's rack", w1, 12, "west", protocol.None, 2, false},
		{"leader, consumer in the leader's rack", w1, 12, "east", protocol.None, -1, true},
		{"leader, consumer without a rack", w1, 12, "", protocol.None, -1, true},
		{"follower, consumer v11", w2, 11, "west", protocol.None, -1, true},
		{"follower, consumer v10", w2, 10, "", protocol.NotLeaderOrFollower, -1, false},
	} {
		got := fetch(c.w, c.v, c.rack)
		checkCode(t, c.what, got.ErrorCode, c.code)
		if got.PreferredReadReplica != c.preferred || (len(got.RecordBatches) > 0) != c.records {
			t.Errorf("%s: preferred read replica %d with %d record bytes, want %d and records %v",
				c.what, got.PreferredReadReplica, len(got.RecordBatches), c.preferred, c.records)
		}
		if c.records && got.HighWatermark != 10 {
			t.Errorf("%s: high watermark %d, want 10", c.what, got.HighWatermark)
		}
	}

	start := time.Now()
	cl := newClient(t, b1, kgo.Rack("west"), kgo.ConsumeTopics("near"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer func() { t.Logf("franz-go read the records in %s", time.Since(start)) }()
	ctx := testContext(t, time.Minute)
	n := 0
	for n < 10 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of 10 records", n)
		}
		n += fs.NumRecords()
	}
}
