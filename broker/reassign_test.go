package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/storage"
)

// metricValue gathers collectors into a fresh registry and returns the
// value of the unlabelled gauge or counter name.
func metricValue(t *testing.T, name string, collectors ...prometheus.Collector) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors...)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) == 0 {
				if c := m.GetCounter(); c != nil {
					return c.GetValue()
				}
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("metric %s not collected", name)
	return 0
}

// listAllReassignments sends ListPartitionReassignments with null topics
// (every reassignment in flight) to broker b.
func listAllReassignments(t *testing.T, b *Broker) []kmsg.ListPartitionReassignmentsResponseTopic {
	t.Helper()
	w := dialWire(t, b)
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	resp := w.mustRoundTrip(req).(*kmsg.ListPartitionReassignmentsResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("ListPartitionReassignments: %s", kerr.ErrorForCode(resp.ErrorCode))
	}
	return resp.Topics
}

// partitionState is partition p of topic as broker b's metadata shows it.
func partitionState(b *Broker, topic string, p int32) (cluster.PartitionState, error) {
	t := b.cluster.Snapshot().Topics[topic]
	if t == nil || int(p) >= len(t.Partitions) {
		return cluster.PartitionState{}, fmt.Errorf("broker %d does not see %s-%d", b.cfg.NodeID, topic, p)
	}
	return t.Partitions[p], nil
}

// waitMoved waits until every broker of bs sees partition p of topic with
// the replicas want (in that order), all of them in the ISR, and no
// reassignment in flight.
func waitMoved(t *testing.T, bs []*Broker, topic string, p int32, want []int32) {
	t.Helper()
	for _, b := range bs {
		waitFor(t, 60*time.Second, fmt.Sprintf("broker %d sees %s-%d on %v", b.cfg.NodeID, topic, p, want), func() error {
			st, err := partitionState(b, topic, p)
			if err != nil {
				return err
			}
			if st.Reassigning() || !slices.Equal(st.Replicas, want) || !sameMembers(st.ISR, want) ||
				!slices.Contains(want, st.Leader) {
				return fmt.Errorf("%+v", st)
			}
			return nil
		})
	}
}

// reassignProducer produces to partition 0 of a topic, acks=all and
// idempotent, until stopped, recording what was acknowledged.
type reassignProducer struct {
	cl    *kgo.Client
	stop  chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	acked []string
	errs  []error
}

func startReassignProducer(t *testing.T, seeds []string, topic string) *reassignProducer {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(2*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	pr := &reassignProducer{cl: cl, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(pr.done)
		ctx := context.Background()
		for i := 0; ; i++ {
			select {
			case <-pr.stop:
				if err := cl.Flush(ctx); err != nil {
					pr.mu.Lock()
					pr.errs = append(pr.errs, err)
					pr.mu.Unlock()
				}
				return
			default:
			}
			v := fmt.Sprintf("r-%06d", i)
			cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(v)}, func(_ *kgo.Record, err error) {
				pr.mu.Lock()
				defer pr.mu.Unlock()
				if err != nil {
					pr.errs = append(pr.errs, err)
					return
				}
				pr.acked = append(pr.acked, v)
			})
			if i%50 == 49 {
				time.Sleep(5 * time.Millisecond)
			}
		}
	}()
	return pr
}

// count returns how many records were acknowledged so far.
func (pr *reassignProducer) count() int {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return len(pr.acked)
}

// finish stops producing and returns what was acknowledged.
func (pr *reassignProducer) finish(t *testing.T) []string {
	t.Helper()
	close(pr.stop)
	<-pr.done
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if len(pr.errs) > 0 {
		t.Errorf("%d produce errors, the first: %v", len(pr.errs), pr.errs[0])
	}
	return slices.Clone(pr.acked)
}

// readAll consumes partition 0 of topic from the start through seeds
// until it has read every value of want, and fails on a value read twice
// or on one of want missing.
func readAll(t *testing.T, seeds []string, topic string, want []string) {
	t.Helper()
	ctx := testContext(t, 60*time.Second)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	wanted := map[string]bool{}
	for _, v := range want {
		wanted[v] = true
	}
	seen := map[string]bool{}
	missing := len(wanted)
	for missing > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read back: %d of %d acknowledged records missing", missing, len(wanted))
		}
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if seen[v] {
				t.Errorf("record %s read twice", v)
			}
			seen[v] = true
			if wanted[v] {
				missing--
			}
		})
	}
}

// TestReassignUnderProduce moves partition 0 of a topic from brokers
// [1, 2] to [2, 3] while an idempotent acks=all producer writes to it:
// broker 3 catches up and joins the ISR, the controller completes the move
// (broker 2 leads in place of broker 1), every acknowledged record is read
// back from the new replicas (whose logs hold the same bytes), broker 1
// deletes its log, and no reassignment is listed any more.
func TestReassignUnderProduce(t *testing.T) {
	t.Parallel()
	bs := startCluster(t, 3, func(c *Config) { c.ReplicaLagTimeMax = 10 * time.Second })
	w := dialWire(t, bs[0])
	if rt := w.createTopicResultAssigned("moving", [][]int32{{1, 2}}, map[string]string{"min.insync.replicas": "2"}); rt.ErrorCode != 0 {
		t.Fatalf("create: %s", kerr.ErrorForCode(rt.ErrorCode))
	}
	waitFor(t, 20*time.Second, "ISR [1 2]", func() error {
		for _, b := range bs {
			st, err := partitionState(b, "moving", 0)
			if err != nil {
				return err
			}
			if len(st.ISR) != 2 {
				return fmt.Errorf("broker %d: %+v", b.cfg.NodeID, st)
			}
		}
		return nil
	})
	var seeds []string
	for _, b := range bs {
		seeds = append(seeds, b.Addrs()...)
	}
	pr := startReassignProducer(t, seeds, "moving")
	waitFor(t, 30*time.Second, "records acknowledged before the move", func() error {
		if n := pr.count(); n < 2000 {
			return fmt.Errorf("%d", n)
		}
		return nil
	})

	// Broker 3 starts fetching only once the producer has written more
	// during the move: it catches up with a log that grows.
	bs[2].pauseFetchers.Store(true)
	ctx := testContext(t, 2*time.Minute)
	adm := kadm.NewClient(newClient(t, bs[2]))
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("moving", 0, []int32{2, 3})
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil || res.Error() != nil {
		t.Fatalf("AlterPartitionAssignments: %v %v", err, res.Error())
	}
	listed, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"moving": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := listed["moving"][0]; !slices.Equal(r.Replicas, []int32{2, 3, 1}) ||
		!slices.Equal(r.AddingReplicas, []int32{3}) || !slices.Equal(r.RemovingReplicas, []int32{1}) {
		t.Errorf("listed %+v, want replicas [2 3 1], adding [3], removing [1]", r)
	}
	started := pr.count()
	waitFor(t, 30*time.Second, "records acknowledged during the move", func() error {
		if n := pr.count(); n < started+2000 {
			return fmt.Errorf("%d", n-started)
		}
		return nil
	})
	if st, _ := partitionState(bs[0], "moving", 0); !st.Reassigning() {
		t.Fatalf("the move ended with broker 3 not fetching: %+v", st)
	}
	bs[2].pauseFetchers.Store(false)

	waitMoved(t, bs, "moving", 0, []int32{2, 3})
	st, _ := partitionState(bs[0], "moving", 0)
	if st.Leader != 2 {
		t.Errorf("leader %d after the move, want 2 (the first of the target)", st.Leader)
	}
	// Go on producing to the new replicas for a while.
	moved := pr.count()
	waitFor(t, 30*time.Second, "records acknowledged after the move", func() error {
		if n := pr.count(); n < moved+2000 {
			return fmt.Errorf("%d", n-moved)
		}
		return nil
	})
	acked := pr.finish(t)
	t.Logf("%d records acknowledged, %d of them before the move was seen done", len(acked), moved)

	readAll(t, []string{bs[1].Addrs()[0], bs[2].Addrs()[0]}, "moving", acked)
	// Broker 3's log holds what broker 2's (the leader's) holds.
	waitFor(t, 30*time.Second, "broker 3's log equals broker 2's", func() error {
		l2, l3 := bs[1].parts.Load().byName["moving"][0].log(), bs[2].parts.Load().byName["moving"][0].log()
		if l2.LogEndOffset() != l3.LogEndOffset() || l3.HighWatermark() != l2.HighWatermark() {
			return fmt.Errorf("log ends %d and %d, high watermarks %d and %d", l2.LogEndOffset(), l3.LogEndOffset(),
				l2.HighWatermark(), l3.HighWatermark())
		}
		return nil
	})
	if !bytes.Equal(logBytes(t, bs[1], "moving", 0), logBytes(t, bs[2], "moving", 0)) {
		t.Error("brokers 2 and 3 hold different bytes")
	}
	// Broker 1 no longer holds the partition.
	waitFor(t, 20*time.Second, "broker 1's log deleted", func() error {
		if _, ok := bs[0].logs.Get(storage.TopicPartition{Topic: "moving", Partition: 0}); ok {
			return errors.New("still there")
		}
		if p := bs[0].parts.Load().byName["moving"][0]; p != nil {
			return errors.New("still in the partition table")
		}
		return nil
	})
	for _, b := range bs {
		if got := listAllReassignments(t, b); len(got) != 0 {
			t.Errorf("broker %d lists %+v", b.cfg.NodeID, got)
		}
	}
	listed, err = adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"moving": {0: {}}})
	if err != nil || len(listed) != 0 {
		t.Errorf("kadm lists %+v %v", listed, err)
	}
	// Broker 3 counted what it fetched while being added.
	if got := metricValue(t, "gregor_reassignment_bytes_in_total", bs[2].metrics.reassignBytesIn); got <= 0 {
		t.Errorf("broker 3 counted %g reassignment bytes", got)
	}
	if got := metricValue(t, "gregor_reassignment_bytes_in_total", bs[1].metrics.reassignBytesIn); got != 0 {
		t.Errorf("broker 2, not added, counted %g reassignment bytes", got)
	}
}

// TestReassignCancel: a move held in flight (the broker being added does
// not fetch) is listed, counted by the leader's gauge, and cancelled: the
// partition is back on its replicas, the added broker drops its log, and
// cancelling again, or asking for what Kafka refuses, gets Kafka's errors.
func TestReassignCancel(t *testing.T) {
	t.Parallel()
	bs := startCluster(t, 3)
	w := dialWire(t, bs[0])
	if rt := w.createTopicResultAssigned("held", [][]int32{{1, 2}, {2, 1}}, nil); rt.ErrorCode != 0 {
		t.Fatalf("create: %s", kerr.ErrorForCode(rt.ErrorCode))
	}
	ctx := testContext(t, 2*time.Minute)
	cl := newClient(t, bs[0], kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "held", Partition: 0, Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	bs[2].pauseFetchers.Store(true)
	adm := kadm.NewClient(cl)
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("held", 0, []int32{2, 3})
	if res, err := adm.AlterPartitionAssignments(ctx, req); err != nil || res.Error() != nil {
		t.Fatalf("AlterPartitionAssignments: %v %v", err, res.Error())
	}
	for _, b := range bs {
		waitFor(t, 20*time.Second, fmt.Sprintf("broker %d lists the move", b.cfg.NodeID), func() error {
			got := listAllReassignments(t, b)
			if len(got) != 1 || got[0].Topic != "held" || len(got[0].Partitions) != 1 {
				return fmt.Errorf("%+v", got)
			}
			p := got[0].Partitions[0]
			if p.Partition != 0 || !slices.Equal(p.Replicas, []int32{2, 3, 1}) || !slices.Equal(p.AddingReplicas, []int32{3}) ||
				!slices.Equal(p.RemovingReplicas, []int32{1}) {
				return fmt.Errorf("%+v", p)
			}
			return nil
		})
	}
	// Broker 3 opened the log it is being added to; the leader counts
	// the partition as being reassigned.
	waitFor(t, 20*time.Second, "broker 3 holds the partition", func() error {
		if _, ok := bs[2].logs.Get(storage.TopicPartition{Topic: "held", Partition: 0}); !ok {
			return errors.New("no log")
		}
		return nil
	})
	waitFor(t, 20*time.Second, "the leader's gauge", func() error {
		if got := metricValue(t, "gregor_partitions_reassigning", newLogCollector(bs[0])); got != 1 {
			return fmt.Errorf("%g", got)
		}
		return nil
	})
	// Writes go on meanwhile: the ISR is [1 2].
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "held", Partition: 0, Value: []byte("during")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// Errors, each as Kafka gives it; the move in flight is untouched.
	var bad kadm.AlterPartitionAssignmentsReq
	bad.Assign("held", 7, []int32{1})
	bad.Assign("nope", 0, []int32{1})
	bad.CancelAssign("held", 1)
	res, err := adm.AlterPartitionAssignments(ctx, bad)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		topic string
		p     int32
		want  error
	}{{"held", 1, kerr.NoReassignmentInProgress}, {"held", 7, kerr.UnknownTopicOrPartition}, {"nope", 0, kerr.UnknownTopicOrPartition}} {
		if got := res[c.topic][c.p].Err; !errors.Is(got, c.want) {
			t.Errorf("%s-%d: %v, want %v", c.topic, c.p, got, c.want)
		}
	}
	var unregistered kadm.AlterPartitionAssignmentsReq
	unregistered.Assign("held", 1, []int32{2, 9})
	res, err = adm.AlterPartitionAssignments(ctx, unregistered)
	if err != nil || !errors.Is(res["held"][1].Err, kerr.InvalidReplicaAssignment) ||
		res["held"][1].ErrMessage != "The manual partition assignment includes broker 9, but no such broker is registered." {
		t.Errorf("unregistered broker: %v %+v", err, res)
	}
	var grow kadm.AlterPartitionAssignmentsReq
	grow.Assign("held", 1, []int32{2, 1, 3})
	res, err = adm.AlterPartitionAssignments(kadm.ForbidAlterRf(ctx), grow)
	if err != nil || !errors.Is(res["held"][1].Err, kerr.InvalidReplicationFactor) {
		t.Errorf("factor change with AllowReplicationFactorChange false: %v %+v", err, res)
	}

	var cancel kadm.AlterPartitionAssignmentsReq
	cancel.CancelAssign("held", 0)
	if res, err := adm.AlterPartitionAssignments(ctx, cancel); err != nil || res.Error() != nil {
		t.Fatalf("cancel: %v %v", err, res.Error())
	}
	for _, b := range bs {
		waitFor(t, 20*time.Second, fmt.Sprintf("broker %d sees the move cancelled", b.cfg.NodeID), func() error {
			st, err := partitionState(b, "held", 0)
			if err != nil {
				return err
			}
			if st.Reassigning() || !sameMembers(st.Replicas, []int32{1, 2}) || st.Leader != 1 || !sameMembers(st.ISR, []int32{1, 2}) {
				return fmt.Errorf("%+v", st)
			}
			if got := listAllReassignments(t, b); len(got) != 0 {
				return fmt.Errorf("lists %+v", got)
			}
			return nil
		})
	}
	bs[2].pauseFetchers.Store(false)
	waitFor(t, 20*time.Second, "broker 3 drops its log", func() error {
		if _, ok := bs[2].logs.Get(storage.TopicPartition{Topic: "held", Partition: 0}); ok {
			return errors.New("still there")
		}
		return nil
	})
	waitFor(t, 20*time.Second, "the leader's gauge back to 0", func() error {
		if got := metricValue(t, "gregor_partitions_reassigning", newLogCollector(bs[0])); got != 0 {
			return fmt.Errorf("%g", got)
		}
		return nil
	})
	res, err = adm.AlterPartitionAssignments(ctx, cancel)
	if err != nil || !errors.Is(res["held"][0].Err, kerr.NoReassignmentInProgress) {
		t.Errorf("cancel again: %v %+v", err, res)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "held", Partition: 0, Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	readAll(t, bs[0].Addrs(), "held", []string{"before", "during", "after"})
}

// TestReassignControllerStopped: the controller broker, which leads the
// partition and is the replica moved away, stops while the move is in
// flight (the broker being added held back); the next controller, reading
// the reassignment from the registry, sees it through once the added
// broker catches up. The registry is an etcd embedded in none of the
// brokers, so that any of them can stop.
func TestReassignControllerStopped(t *testing.T) {
	t.Parallel()
	ccfg := cluster.DefaultConfig()
	ccfg.DataDir = t.TempDir()
	ccfg.ClientListenAddr, ccfg.PeerListenAddr = "127.0.0.1:0", "127.0.0.1:0"
	octx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	registry, err := cluster.Open(octx, ccfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { registry.Close() })
	var bs []*Broker
	for id := int32(1); id <= 3; id++ {
		bs = append(bs, startBroker(t, func(c *Config) {
			c.NodeID = id
			c.EtcdEndpoints = registry.ClientURLs()
			c.ReplicaLagTimeMax = 10 * time.Second
		}))
	}
	var ctrl cluster.ControllerInfo
	waitFor(t, 30*time.Second, "a controller every broker agrees on", func() error {
		ctrl = bs[0].cluster.Snapshot().Controller
		for _, b := range bs {
			md := b.cluster.Snapshot()
			if len(md.Brokers) != 3 || md.Controller != ctrl || ctrl.NodeID < 0 {
				return fmt.Errorf("broker %d: %d brokers, controller %+v", b.cfg.NodeID, len(md.Brokers), md.Controller)
			}
		}
		return nil
	})
	byID := map[int32]*Broker{}
	var others []int32
	for _, b := range bs {
		byID[b.cfg.NodeID] = b
		if b.cfg.NodeID != ctrl.NodeID {
			others = append(others, b.cfg.NodeID)
		}
	}
	a, added := others[0], others[1]
	w := dialWire(t, byID[a])
	if rt := w.createTopicResultAssigned("handover", [][]int32{{ctrl.NodeID, a}}, nil); rt.ErrorCode != 0 {
		t.Fatalf("create: %s", kerr.ErrorForCode(rt.ErrorCode))
	}
	ctx := testContext(t, 2*time.Minute)
	seeds := append(slices.Clone(byID[a].Addrs()), byID[added].Addrs()...)
	cl := newClient(t, byID[a], kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var values []string
	produce := func(n int) {
		t.Helper()
		var recs []*kgo.Record
		for range n {
			v := fmt.Sprintf("h-%d", len(values))
			values = append(values, v)
			recs = append(recs, &kgo.Record{Topic: "handover", Partition: 0, Value: []byte(v)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(500)

	byID[added].pauseFetchers.Store(true)
	adm := kadm.NewClient(cl)
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("handover", 0, []int32{a, added})
	if res, err := adm.AlterPartitionAssignments(ctx, req); err != nil || res.Error() != nil {
		t.Fatalf("AlterPartitionAssignments: %v %v", err, res.Error())
	}
	waitFor(t, 20*time.Second, "the move in flight", func() error {
		st, err := partitionState(byID[a], "handover", 0)
		if err != nil {
			return err
		}
		if !st.Reassigning() {
			return fmt.Errorf("%+v", st)
		}
		return nil
	})
	t.Logf("stopping broker %d, the controller (epoch %d)", ctrl.NodeID, ctrl.Epoch)
	if err := byID[ctrl.NodeID].Close(); err != nil {
		t.Fatal(err)
	}
	rest := []*Broker{byID[a], byID[added]}
	waitFor(t, 30*time.Second, "a new controller", func() error {
		for _, b := range rest {
			if c := b.cluster.Snapshot().Controller; c.NodeID == ctrl.NodeID || c.NodeID < 0 || c.Epoch <= ctrl.Epoch {
				return fmt.Errorf("broker %d sees %+v", b.cfg.NodeID, c)
			}
		}
		return nil
	})
	// Still in flight: the added broker has fetched nothing.
	if st, _ := partitionState(byID[a], "handover", 0); !st.Reassigning() || st.Leader != a {
		t.Fatalf("after the controller stopped: %+v, want the move in flight, led by %d", st, a)
	}
	produce(500)
	byID[added].pauseFetchers.Store(false)
	waitMoved(t, rest, "handover", 0, []int32{a, added})
	produce(500)
	readAll(t, seeds, "handover", values)
	for _, b := range rest {
		if got := listAllReassignments(t, b); len(got) != 0 {
			t.Errorf("broker %d lists %+v", b.cfg.NodeID, got)
		}
	}
}
