package cluster

import (
	"fmt"
	"testing"
	"time"
)

// setPartition writes a partition's state directly, as replication will
// when followers join the ISR, and waits until c sees it.
func setPartition(t *testing.T, c *Cluster, topic string, p int32, st PartitionState) {
	t.Helper()
	resp, err := c.client.Put(testCtx(t), c.keys.partition(topic, p), encode(partitionRecord(st)))
	if err != nil {
		t.Fatal(err)
	}
	seeRevision(t, c, resp.Header.Revision)
}

func describeLeaders(c *Cluster, topic string) string {
	tp := c.Snapshot().Topics[topic]
	if tp == nil {
		return "no topic"
	}
	var s []string
	for _, p := range tp.Partitions {
		s = append(s, fmt.Sprintf("%d%v", p.Leader, p.ISR))
	}
	return fmt.Sprint(s)
}

// TestControlledShutdown: a broker in controlled shutdown hands each
// partition it shares an ISR with to another in-sync replica, and leaves
// the ISRs, before ControlledShutdown returns; what it leads alone stays
// with it until it stops. Whichever node is controller does the moving,
// the shutting-down one included.
func TestControlledShutdown(t *testing.T) {
	t.Parallel()
	nodes := threeNodes(t)
	ctrl := agreedController(t, nodes)
	spec := TopicSpec{Name: "cs", Assignments: [][]int32{{1, 2}, {2, 1}, {1}, {3, 1}}}
	if _, err := nodes[0].CreateTopic(testCtx(t), spec); err != nil {
		t.Fatal(err)
	}
	// Followers in sync, as replication will make them.
	setPartition(t, nodes[0], "cs", 0, PartitionState{Leader: 1, ISR: []int32{1, 2}, Replicas: []int32{1, 2}})
	setPartition(t, nodes[0], "cs", 1, PartitionState{Leader: 2, ISR: []int32{2, 1}, Replicas: []int32{2, 1}})
	setPartition(t, nodes[0], "cs", 3, PartitionState{Leader: 3, ISR: []int32{3, 1}, Replicas: []int32{3, 1}})

	// Node 1 may be the controller or not (the election decides): either
	// way the controller moves node 1's partitions.
	leaving := nodes[0]
	t.Logf("controller is node %d; node 1 shuts down", ctrl.NodeID)
	start := time.Now()
	if err := leaving.ControlledShutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	t.Logf("controlled shutdown of node 1 done after %s", time.Since(start))
	if got, want := describeLeaders(leaving, "cs"), "[2[2] 2[2] 1[1] 3[3]]"; got != want {
		t.Fatalf("when ControlledShutdown returned, node 1 sees %s, want %s", got, want)
	}
	if b, _ := nodes[1].Snapshot().Broker(1); !b.ShuttingDown {
		t.Errorf("node 2 sees broker 1 as %+v, want shutting down", b)
	}
	if err := leaving.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() string {
		if got, want := describeLeaders(nodes[1], "cs"), "[2[2] 2[2] -1[1] 3[3]]"; got != want {
			return fmt.Sprintf("after node 1 stopped, node 2 sees %s, want %s", got, want)
		}
		return ""
	})
}

// TestPreferredLeaderRebalance: with the rebalance on, a partition led by
// another in-sync replica goes back to its first replica.
func TestPreferredLeaderRebalance(t *testing.T) {
	t.Parallel()
	etcd := open(t, embeddedConfig(t.TempDir(), 0))
	var nodes []*Cluster
	for id := int32(1); id <= 2; id++ {
		cfg := externalConfig(etcd, id)
		cfg.LeaderRebalanceInterval = 100 * time.Millisecond
		c := open(t, cfg)
		if err := c.Register(testCtx(t), BrokerInfo{NodeID: id, Host: "h", Port: 9092}); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, c)
	}
	agreedController(t, nodes)
	if _, err := nodes[0].CreateTopic(testCtx(t), TopicSpec{Name: "pref", Assignments: [][]int32{{1, 2}, {2, 1}}}); err != nil {
		t.Fatal(err)
	}
	setPartition(t, nodes[0], "pref", 0, PartitionState{Leader: 2, LeaderEpoch: 3, ISR: []int32{2, 1}, Replicas: []int32{1, 2}})
	setPartition(t, nodes[0], "pref", 1, PartitionState{Leader: 2, LeaderEpoch: 3, ISR: []int32{2}, Replicas: []int32{2, 1}})
	eventually(t, func() string {
		md := nodes[1].Snapshot()
		p0, p1 := md.Topics["pref"].Partitions[0], md.Topics["pref"].Partitions[1]
		if p0.Leader != 1 || p0.LeaderEpoch != 4 || p1.Leader != 2 || p1.LeaderEpoch != 3 {
			return fmt.Sprintf("partitions %+v, want 0 back with its preferred leader 1 at epoch 4, 1 unchanged", md.Topics["pref"].Partitions)
		}
		return ""
	})
}
