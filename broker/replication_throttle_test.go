package broker

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/broker/configs"
	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/protocol/record"
)

// counterValue reads a counter.
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// throttleTestRate is the throttle the tests set: 1 MiB/s, no less than a
// follower's fetch of one partition (replica.fetch.max.bytes), where
// Kafka's rate measurement holds a follower to the rate within one fetch
// (TestReplicationQuotaHoldsCatchUp; Kafka advises rates above 1 MB/s).
const throttleTestRate = 1 << 20

// TestReplicationThrottle: a partition on brokers 1 (leader), 2 and 3 is
// throttled as kafka-reassign-partitions --execute --throttle sets it up:
// both rates on every broker (IncrementalAlterConfigs; legacy AlterConfigs
// for broker 3), the throttled replicas on the topic, follower-side
// (0:2,0:3) or leader-side (0:1). DescribeConfigs shows the rates. While
// broker 2 is down, 8 MB is written with acks=all: broker 3, in sync, is
// never held back though its traffic alone is far above the rate. Broker 2
// then comes back and catches up: at every look, what it has fetched
// since its restart stays within the rate times the time since, plus a
// few fetches of slack for the rate measurement (Kafka's), where an
// unthrottled follower fetches the 8 MB at once; partitions were held
// back. Removing the throttles as --verify does (IncrementalAlterConfigs
// DELETE) unthrottles every broker.
func TestReplicationThrottle(t *testing.T) {
	t.Parallel()
	for _, side := range []string{throttleFollower, throttleLeader} {
		t.Run(side, func(t *testing.T) {
			t.Parallel()
			testReplicationThrottle(t, side)
		})
	}
}

func testReplicationThrottle(t *testing.T, side string) {
	bs := startCluster(t, 3)
	ctx := testContext(t, 3*time.Minute)
	adm := kadm.NewClient(newClient(t, bs[0]))
	w := dialWire(t, bs[0])
	rt := w.createTopicResultAssigned("moving", [][]int32{{1, 2, 3}}, map[string]string{"min.insync.replicas": "2"})
	checkCode(t, "create", rt.ErrorCode, protocol.None)
	waitISR(t, bs[0], "moving", 0, "[1 2 3]")

	rate := strconv.Itoa(throttleTestRate)
	rates := []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "leader.replication.throttled.rate", Value: &rate},
		{Op: kadm.SetConfig, Name: "follower.replication.throttled.rate", Value: &rate},
	}
	rs, err := adm.AlterBrokerConfigs(ctx, rates, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	rs3, err := adm.AlterBrokerConfigsState(ctx, rates, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append(rs, rs3...) {
		if r.Err != nil {
			t.Fatalf("set the rates on broker %s: %v %s", r.Name, r.Err, r.ErrMessage)
		}
	}
	listName, list, throttledOn := "follower.replication.throttled.replicas", "0:2,0:3", []*Broker{bs[1], bs[2]}
	if side == throttleLeader {
		listName, list, throttledOn = "leader.replication.throttled.replicas", "0:1", []*Broker{bs[0]}
	}
	trs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: listName, Value: &list}}, "moving")
	if err != nil || trs[0].Err != nil {
		t.Fatalf("set %s: %v %v", listName, err, trs)
	}
	quota := func(b *Broker) *replicationQuota {
		if side == throttleLeader {
			return b.replQuotas.leader
		}
		return b.replQuotas.follower
	}
	throttled := func(b *Broker) bool {
		s := b.parts.Load().byName["moving"][0].settings.Load()
		if side == throttleLeader {
			return s.leaderThrottled.Has(0)
		}
		return s.followerThrottled.Has(0)
	}
	for _, b := range throttledOn {
		waitFor(t, 20*time.Second, fmt.Sprintf("broker %d throttles", b.cfg.NodeID), func() error {
			if got := quota(b).bound.Load(); got != throttleTestRate || !throttled(b) {
				return fmt.Errorf("rate %d, partition 0 throttled: %v", got, throttled(b))
			}
			return nil
		})
	}

	// DescribeConfigs lists the rates set, and not the one left unset.
	for _, id := range []int32{1, 3} {
		described, err := adm.DescribeBrokerConfigs(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]kadm.Config{}
		for _, c := range described[0].Configs {
			got[c.Key] = c
		}
		for _, name := range []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate"} {
			if c, ok := got[name]; !ok || c.MaybeValue() != rate || c.Source != kmsg.ConfigSourceDynamicBrokerConfig {
				t.Errorf("broker %d describes %s as %+v (listed: %v), want %s from DYNAMIC_BROKER_CONFIG", id, name, c, ok, rate)
			}
		}
		if _, ok := got["replica.alter.log.dirs.io.max.bytes.per.second"]; ok {
			t.Errorf("broker %d describes replica.alter.log.dirs.io.max.bytes.per.second, which is not set", id)
		}
	}

	// Broker 2 stops; 8 MB goes to brokers 1 and 3 with acks=all.
	base := bs[1].parts.Load().byName["moving"][0].log().Size()
	if err := bs[1].Close(); err != nil {
		t.Fatal(err)
	}
	waitISR(t, bs[0], "moving", 0, "[1 3]")
	const batches = 128 // of 64 KiB
	value := make([]byte, 64<<10-200)
	for i := range batches {
		rp := w.producePartition(-1, "moving", 0, buildRecords(t, plainHeader(), []record.Record{{Value: value}}))
		checkCode(t, fmt.Sprint("produce ", i), rp.ErrorCode, protocol.None)
	}
	leaderLog := bs[0].parts.Load().byName["moving"][0].log()
	backlog := leaderLog.Size()
	// Broker 3 was in sync throughout: its traffic counts against the
	// throttle (on broker 3, or on the leader) and is never held back.
	counted := quota(bs[2])
	if side == throttleLeader {
		counted = quota(bs[0])
	}
	if got := counterValue(t, counted.bytes); got < 8e6 {
		t.Errorf("%g bytes of in-sync broker 3's replication counted against the %s throttle, want at least 8 MB", got, side)
	}
	if got := counterValue(t, counted.heldBack); got != 0 {
		t.Errorf("the %s throttle held back in-sync broker 3 %g times", side, got)
	}

	// Broker 2 comes back and catches up under the throttle.
	start := time.Now()
	b2 := restartBroker(t, bs[1])
	l2 := b2.parts.Load().byName["moving"][0].log()
	if backlog-base < 8e6 {
		t.Fatalf("broker 2 restarted %d bytes behind, want 8 MB", backlog-base)
	}
	maxFetch := float64(replicaFetchPartitionMaxBytes)
	looks := 0
	waitFor(t, 2*time.Minute, "broker 2 caught up", func() error {
		fetched := float64(l2.Size() - base)
		elapsed := time.Since(start).Seconds()
		looks++
		// Slack: the fetch that takes the measured rate over the
		// bound, one racing it on the other follower's connection,
		// and one for a window sample that expires.
		if limit := throttleTestRate*elapsed + 3*maxFetch; fetched > limit {
			t.Fatalf("broker 2 fetched %g bytes in %.2f s, above the %d B/s throttle's %g", fetched, elapsed, throttleTestRate, limit)
		}
		if l2.LogEndOffset() != leaderLog.LogEndOffset() {
			return fmt.Errorf("at %d of %d (%g bytes fetched)", l2.LogEndOffset(), leaderLog.LogEndOffset(), fetched)
		}
		return nil
	})
	t.Logf("broker 2 caught up %d bytes in %s (%d looks)", backlog-base, time.Since(start), looks)
	held := quota(b2)
	if side == throttleLeader {
		held = quota(bs[0])
	}
	if got := counterValue(t, held.heldBack); got == 0 {
		t.Errorf("the %s throttle never held broker 2 back", side)
	}
	if got := counterValue(t, held.heldSeconds); got <= 0 {
		t.Errorf("the %s throttle held broker 2 back for %g s", side, got)
	}
	waitISR(t, bs[0], "moving", 0, "[1 2 3]")

	// --verify: the throttles are removed with IncrementalAlterConfigs
	// DELETE, the replica lists too, on every broker involved (from a new
	// client: broker 2 listens on a new port).
	adm = kadm.NewClient(newClient(t, bs[0]))
	remove := []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: "leader.replication.throttled.rate"},
		{Op: kadm.DeleteConfig, Name: "follower.replication.throttled.rate"},
		{Op: kadm.DeleteConfig, Name: "replica.alter.log.dirs.io.max.bytes.per.second"},
	}
	rs, err = adm.AlterBrokerConfigs(ctx, remove, 1, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Err != nil {
			t.Fatalf("remove the rates on broker %s: %v %s", r.Name, r.Err, r.ErrMessage)
		}
	}
	trs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: "leader.replication.throttled.replicas"},
		{Op: kadm.DeleteConfig, Name: "follower.replication.throttled.replicas"},
	}, "moving")
	if err != nil || trs[0].Err != nil {
		t.Fatalf("remove the throttled replicas: %v %v", err, trs)
	}
	for _, b := range []*Broker{bs[0], b2, bs[2]} {
		waitFor(t, 20*time.Second, fmt.Sprintf("broker %d unthrottled", b.cfg.NodeID), func() error {
			l, f := b.replQuotas.leader.bound.Load(), b.replQuotas.follower.bound.Load()
			s := b.parts.Load().byName["moving"][0].settings.Load()
			if l != configs.Unthrottled || f != configs.Unthrottled || !s.leaderThrottled.Empty() || !s.followerThrottled.Empty() {
				return fmt.Errorf("rates %d and %d, throttled replicas %+v and %+v", l, f, s.leaderThrottled, s.followerThrottled)
			}
			return nil
		})
	}
	described, err := adm.DescribeBrokerConfigs(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range described[0].Configs {
		if d, ok := configs.Broker(c.Key); ok && d.DynamicOnly {
			t.Errorf("broker 3 still describes %s = %s", c.Key, c.MaybeValue())
		}
	}
}

// TestReplicationThrottleConfigErrors: a bad rate is refused with Kafka's
// error and message, per broker and as the cluster default, and a bad
// throttled-replicas list on a topic too; nothing is stored.
func TestReplicationThrottleConfigErrors(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	ctx := configsTestCtx(t)
	cl := newClient(t, b)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	neg := "-1"
	for _, target := range []struct {
		what string
		name string
	}{{"broker 1", "1"}, {"the cluster default", ""}} {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, target.name
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = "follower.replication.throttled.rate", kmsg.IncrementalAlterConfigOpSet, &neg
		rr.Configs = append(rr.Configs, c)
		req.Resources = append(req.Resources, rr)
		resp := cfgNodeRequest[*kmsg.IncrementalAlterConfigsResponse](ctx, t, b, cl, req)
		cfgCheckErr(t, "rate -1 on "+target.what, resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage, kerr.InvalidRequest,
			"Invalid value -1 for configuration follower.replication.throttled.rate: Value must be at least 0")
	}
	if got := b.cluster.Snapshot().BrokerConfigs; len(got[1]) != 0 || len(got[-1]) != 0 {
		t.Errorf("refused rates stored: %v", got)
	}
	bad := "0:1,x"
	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "leader.replication.throttled.replicas", Value: &bad}}, "t")
	cfgCheckAlter(t, "bad throttled replicas", rs, err, kerr.InvalidConfig,
		"Invalid value [0:1, x] for configuration leader.replication.throttled.replicas: leader.replication.throttled.replicas must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")
}
