package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/protocol"
)

// TestRoutingToTheLeader runs two brokers on one registry with a topic whose
// partition 0 lives on broker 2 alone and partition 1 on both, led by
// broker 1. Only a partition's leader takes produce; any other broker, a
// replica or not, answers NOT_LEADER_OR_FOLLOWER with the leader and its
// endpoint (KIP-951) where the version carries them. Fetch likewise, except
// that a follower serves a consumer's fetch from v11 (KIP-392).
func TestRoutingToTheLeader(t *testing.T) {
	t.Parallel()
	b1 := startBroker(t)
	b2 := startBroker(t, func(c *Config) {
		c.NodeID = 2
		c.EtcdEndpoints = b1.cluster.ClientURLs()
	})
	w1, w2 := dialWire(t, b1), dialWire(t, b2)
	// Broker 2's registration reaches broker 1's view through a watch: the
	// assignment below names broker 2, so wait until broker 1 knows it.
	waitFor(t, 20*time.Second, "broker 1 sees broker 2", func() error {
		if _, ok := b1.cluster.Snapshot().Broker(2); !ok {
			return fmt.Errorf("not yet")
		}
		return nil
	})

	create := kmsg.NewPtrCreateTopicsRequest()
	create.SetVersion(7)
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "routed", -1, -1
	for p, replicas := range [][]int32{{2}, {1, 2}} {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	create.Topics = append(create.Topics, rt)
	cresp := w1.mustRoundTrip(create).(*kmsg.CreateTopicsResponse)
	checkCode(t, "create routed", cresp.Topics[0].ErrorCode, protocol.None)
	waitFor(t, 20*time.Second, "broker 2 holds the topic's partitions", func() error {
		if ps := b2.parts.Load().byName["routed"]; len(ps) != 2 || ps[0] == nil || ps[1] == nil {
			return fmt.Errorf("partitions %v", ps)
		}
		return nil
	})
	endpoint := func(b *Broker) (int32, string) {
		md := b.cluster.Snapshot()
		at, _ := md.Broker(b.cfg.NodeID)
		return at.Port, at.Host
	}

	for _, c := range []struct {
		what      string
		w         *wireConn
		partition int32
		leader    *Broker
	}{
		{"broker 1, not a replica of partition 0", w1, 0, b2},
		{"broker 2, a follower of partition 1", w2, 1, b1},
	} {
		batch := buildBatch(t, plainHeader(), "v", 1)
		resp := c.w.mustRoundTrip(produceReq(11, -1, "routed", c.partition, batch)).(*kmsg.ProduceResponse)
		rp := resp.Topics[0].Partitions[0]
		checkCode(t, "produce v11 to "+c.what, rp.ErrorCode, protocol.NotLeaderOrFollower)
		if rp.CurrentLeader.LeaderID != c.leader.cfg.NodeID || rp.CurrentLeader.LeaderEpoch != 0 {
			t.Errorf("produce v11 to %s: current leader %+v, want node %d epoch 0", c.what, rp.CurrentLeader, c.leader.cfg.NodeID)
		}
		wantPort, wantHost := endpoint(c.leader)
		if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != c.leader.cfg.NodeID ||
			resp.Brokers[0].Port != wantPort || resp.Brokers[0].Host != wantHost {
			t.Errorf("produce v11 to %s: node endpoints %+v, want node %d at %s:%d", c.what, resp.Brokers, c.leader.cfg.NodeID, wantHost, wantPort)
		}

		fetch := kmsg.NewPtrFetchRequest()
		fetch.SetVersion(16)
		fetch.MaxWaitMillis, fetch.MaxBytes = 0, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.TopicID = b1.cluster.Snapshot().Topics["routed"].ID
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = c.partition, 1<<20, -1
		ft.Partitions = append(ft.Partitions, fp)
		fetch.Topics = append(fetch.Topics, ft)
		fresp := c.w.mustRoundTrip(fetch).(*kmsg.FetchResponse)
		fpart := fresp.Topics[0].Partitions[0]
		if c.w == w2 {
			checkCode(t, "fetch v16 from "+c.what, fpart.ErrorCode, protocol.None)
			fetch.SetVersion(10) // no client metadata: the leader only
			fetch.Topics[0].Topic = "routed"
			fresp = c.w.mustRoundTrip(fetch).(*kmsg.FetchResponse)
			checkCode(t, "fetch v10 from "+c.what, fresp.Topics[0].Partitions[0].ErrorCode, protocol.NotLeaderOrFollower)
		} else {
			checkCode(t, "fetch v16 from "+c.what, fpart.ErrorCode, protocol.NotLeaderOrFollower)
			if fpart.CurrentLeader.LeaderID != c.leader.cfg.NodeID || fpart.CurrentLeader.LeaderEpoch != 0 {
				t.Errorf("fetch v16 from %s: current leader %+v, want node %d epoch 0", c.what, fpart.CurrentLeader, c.leader.cfg.NodeID)
			}
			if len(fresp.Brokers) != 1 || fresp.Brokers[0].NodeID != c.leader.cfg.NodeID || fresp.Brokers[0].Port != wantPort {
				t.Errorf("fetch v16 from %s: node endpoints %+v, want node %d", c.what, fresp.Brokers, c.leader.cfg.NodeID)
			}
		}

		// The leader takes the same produce.
		lw := w1
		if c.leader == b2 {
			lw = w2
		}
		lp := lw.produceV(11, -1, "routed", c.partition, batch)
		checkCode(t, fmt.Sprintf("produce v11 to partition %d's leader", c.partition), lp.ErrorCode, protocol.None)
	}
	// Versions without the hints still get the code.
	rp := w1.produceV(9, -1, "routed", 0, buildBatch(t, plainHeader(), "v", 1))
	checkCode(t, "produce v9 to broker 1, partition 0", rp.ErrorCode, protocol.NotLeaderOrFollower)
}

// TestPartitionNotMadeYet: a partition the broker's metadata has but its
// partition table does not yet (the window between a topic's creation and
// its log being made) is NOT_LEADER_OR_FOLLOWER, which clients retry, not
// an unknown topic, which they give up on; a partition the metadata does
// not have stays unknown.
func TestPartitionNotMadeYet(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	id := w.createTopic("made", 2, nil)
	if _, code := b.lookupPartition("made", [16]byte{}, false, 1); code != protocol.None {
		t.Fatalf("a made partition: %s", code)
	}
	// The table as it was before the topic was made.
	b.syncMu.Lock()
	defer b.syncMu.Unlock() // holds off the metadata sync that would put it back
	b.parts.Store(&partitionTable{byName: map[string][]*partition{}, names: map[cluster.TopicID]string{}})
	for _, c := range []struct {
		what  string
		topic string
		id    [16]byte
		byID  bool
		num   int32
		want  protocol.ErrorCode
	}{
		{"by name", "made", [16]byte{}, false, 1, protocol.NotLeaderOrFollower},
		{"by id", "", id, true, 0, protocol.NotLeaderOrFollower},
		{"a partition past the topic's", "made", [16]byte{}, false, 2, protocol.UnknownTopicOrPartition},
		{"an unknown topic", "other", [16]byte{}, false, 0, protocol.UnknownTopicOrPartition},
		{"an unknown id", "", [16]byte{9}, true, 0, protocol.UnknownTopicID},
	} {
		if _, code := b.lookupPartition(c.topic, c.id, c.byID, c.num); code != c.want {
			t.Errorf("%s: %s, want %s", c.what, code, c.want)
		}
	}
}

// TestLeaderWaitsForItsMetadata: a produce or list-offsets lookup of a
// partition the registry has just made this broker lead waits for the
// broker to apply that metadata, instead of sending the client away with
// NOT_LEADER_OR_FOLLOWER (which some clients retry only three times); a
// lookup whose wait is cancelled still gets NOT_LEADER_OR_FOLLOWER.
func TestLeaderWaitsForItsMetadata(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	b.syncMu.Lock() // holds off applying what the registry gets next
	locked := true
	defer func() {
		if locked {
			b.syncMu.Unlock()
		}
	}()
	spec := cluster.TopicSpec{Name: "late", Assignments: [][]int32{{1}}}
	if _, err := b.cluster.CreateTopic(testContext(t, time.Minute), spec); err != nil {
		t.Fatal(err)
	}
	if _, code := b.lookupPartition("late", [16]byte{}, false, 0); code != protocol.NotLeaderOrFollower {
		t.Fatalf("before the metadata is applied: %s, want NOT_LEADER_OR_FOLLOWER", code)
	}
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	if _, code := b.lookupLeader(cancelled, "late", [16]byte{}, false, 0); code != protocol.NotLeaderOrFollower {
		t.Fatalf("a cancelled wait: %s, want NOT_LEADER_OR_FOLLOWER", code)
	}
	done := make(chan protocol.ErrorCode, 1)
	go func() {
		_, code := b.lookupLeader(t.Context(), "late", [16]byte{}, false, 0)
		done <- code
	}()
	select {
	case code := <-done:
		t.Fatalf("the lookup answered %s before the metadata was applied", code)
	case <-time.After(300 * time.Millisecond):
	}
	b.syncMu.Unlock()
	locked = false
	select {
	case code := <-done:
		if code != protocol.None {
			t.Fatalf("after the metadata was applied: %s, want NONE", code)
		}
	case <-time.After(time.Minute):
		t.Fatal("the lookup did not end once the metadata was applied")
	}
}
