package cluster

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestScaleTwentyThousandPartitions places and creates 20,000 partitions
// (20 topics of 1,000, replication factor 3) on a registry of three nodes
// and measures what the cluster issue asks for: the metadata's size in
// etcd, the time to place and create them, and the time until every node
// has them. The figures are logged (go test -v -run Scale); the checks
// bound them loosely, to catch a regression of an order of magnitude, not
// to time the machine.
func TestScaleTwentyThousandPartitions(t *testing.T) {
	nodes := threeNodes(t)
	const topics, perTopic = 20, 1000
	before, err := nodes[0].client.Status(testCtx(t), nodes[0].endpoints[0])
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	placer := NewPlacer(nodes[0].Snapshot().Brokers, rand.New(rand.NewPCG(1, 2)))
	specs := make([]TopicSpec, topics)
	for i := range specs {
		a, err := placer.Place(perTopic, 3)
		if err != nil {
			t.Fatal(err)
		}
		specs[i] = TopicSpec{Name: fmt.Sprintf("scale-%02d", i), Assignments: a}
	}
	placed := time.Since(start)

	start = time.Now()
	for _, s := range specs {
		if _, err := nodes[0].CreateTopic(testCtx(t), s); err != nil {
			t.Fatal(err)
		}
	}
	created := time.Since(start)
	seen := make([]time.Duration, len(nodes))
	for i, n := range nodes {
		eventually(t, func() string {
			got := 0
			for _, tp := range n.Snapshot().Topics {
				got += len(tp.Partitions)
			}
			if got != topics*perTopic {
				return fmt.Sprintf("node %d sees %d partitions", n.cfg.NodeID, got)
			}
			return ""
		})
		seen[i] = time.Since(start)
	}

	resp, err := nodes[0].client.Get(testCtx(t), nodes[0].keys.root, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var bytes int
	for _, kv := range resp.Kvs {
		bytes += len(kv.Key) + len(kv.Value)
	}
	after, err := nodes[0].client.Status(testCtx(t), nodes[0].endpoints[0])
	if err != nil {
		t.Fatal(err)
	}
	perPartition := float64(bytes) / (topics * perTopic)
	t.Logf("20,000 partitions (rf 3) on 3 nodes: placed in %s, created in %s (%d transactions), seen by all nodes after %v",
		placed.Round(time.Millisecond), created.Round(time.Millisecond), topics, seen)
	t.Logf("registry: %d keys, %d bytes of keys and values (%.0f per partition); etcd database %d -> %d bytes",
		len(resp.Kvs), bytes, perPartition, before.DbSize, after.DbSize)
	if perPartition > 200 {
		t.Errorf("%.0f bytes of registry per partition, want at most 200", perPartition)
	}
	if placed > 5*time.Second {
		t.Errorf("placing 20,000 partitions took %s", placed)
	}
}
