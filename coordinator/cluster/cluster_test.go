package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestOpenCloseReopen(t *testing.T) {
	dir := t.TempDir()
	cfg := embeddedConfig(dir, 1)

	c, err := Open(testCtx(t), cfg, testLogger(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	id := c.ClusterID()
	if _, err := ParseTopicID(id); err != nil {
		t.Errorf("cluster id %q is not a Kafka Uuid string: %v", id, err)
	}
	if got := c.Snapshot().ClusterID; got != id {
		t.Errorf("Snapshot().ClusterID = %q, want %q", got, id)
	}
	if eps := c.ClientURLs(); len(eps) != 1 || strings.HasSuffix(eps[0], ":0") {
		t.Errorf("ClientURLs() = %v, want the one picked port", eps)
	}
	topic, err := c.CreateTopic(testCtx(t), TopicSpec{
		Name:        "kept",
		Assignments: [][]int32{{1}, {1}},
		Configs:     map[string]string{"retention.ms": "1000"},
	})
	if err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close = %v, want the first's nil", err)
	}
	if _, err := c.CreateTopic(testCtx(t), TopicSpec{Name: "late", Assignments: [][]int32{{1}}}); !errors.Is(err, ErrClosed) {
		t.Errorf("CreateTopic after Close = %v, want ErrClosed", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "etcd.log")); err != nil {
		t.Errorf("etcd's own log file: %v", err)
	}

	c2 := open(t, cfg)
	if c2.ClusterID() != id {
		t.Errorf("cluster id after reopen = %q, want %q", c2.ClusterID(), id)
	}
	got := c2.Snapshot().Topics["kept"]
	if got == nil || got.ID != topic.ID || len(got.Partitions) != 2 || got.Configs["retention.ms"] != "1000" {
		t.Fatalf("topic after reopen = %+v, want id %s, 2 partitions, retention.ms=1000", got, topic.ID)
	}
}

// TestTwoNodes shares one embedded member between a node that owns it (a)
// and a node connected to it as an external etcd (b): what one writes, the
// other's cache shows through its watch.
func TestTwoNodes(t *testing.T) {
	a := open(t, embeddedConfig(t.TempDir(), 1))
	b := open(t, externalConfig(a, 2))
	if a.ClusterID() != b.ClusterID() {
		t.Fatalf("cluster ids differ: %q and %q", a.ClusterID(), b.ClusterID())
	}

	t.Run("CreateVisibleEverywhere", func(t *testing.T) {
		changed := a.Changed()
		created, err := a.CreateTopic(testCtx(t), TopicSpec{
			Name:        "orders",
			Assignments: [][]int32{{1, 2}, {2, 1}, {1}},
			Configs:     map[string]string{"cleanup.policy": "compact"},
		})
		if err != nil {
			t.Fatalf("CreateTopic: %v", err)
		}
		select {
		case <-changed:
		default:
			t.Errorf("Changed() channel not closed after a write")
		}
		// The writer's own cache has it on return, with no wait.
		own := a.Snapshot().Topics["orders"]
		if own == nil || own.ID != created.ID {
			t.Fatalf("writer's snapshot lacks the topic right after CreateTopic: %+v", own)
		}
		if created.ID.IsZero() {
			t.Errorf("generated topic id is zero")
		}
		seeRevision(t, b, a.Snapshot().Revision)
		other := b.Snapshot().Topics["orders"]
		if other == nil || other.ID != created.ID || b.Snapshot().TopicsByID[created.ID] != other {
			t.Fatalf("other node's snapshot: %+v", other)
		}
		want := []PartitionState{
			{Leader: 1, ISR: []int32{1}, Replicas: []int32{1, 2}},
			{Leader: 2, ISR: []int32{2}, Replicas: []int32{2, 1}},
			{Leader: 1, ISR: []int32{1}, Replicas: []int32{1}},
		}
		for p, w := range want {
			g := other.Partitions[p]
			if g.Leader != w.Leader || g.LeaderEpoch != 0 || g.PartitionEpoch != 0 ||
				!slices.Equal(g.ISR, w.ISR) || !slices.Equal(g.Replicas, w.Replicas) {
				t.Errorf("partition %d = %+v, want %+v", p, g, w)
			}
		}
		if other.Configs["cleanup.policy"] != "compact" {
			t.Errorf("configs = %v", other.Configs)
		}
	})

	t.Run("CreateErrors", func(t *testing.T) {
		ctx := testCtx(t)
		if _, err := b.CreateTopic(ctx, TopicSpec{Name: "orders", Assignments: [][]int32{{1}}}); !errors.Is(err, ErrTopicExists) {
			t.Errorf("duplicate name = %v, want ErrTopicExists", err)
		}
		id := TopicID{0: 9, 15: 9}
		made, err := a.CreateTopic(ctx, TopicSpec{Name: "given-id", ID: id, Assignments: [][]int32{{1}}})
		if err != nil || made.ID != id {
			t.Fatalf("CreateTopic with id = %v, %v; want id %s", made.ID, err, id)
		}
		if _, err := b.CreateTopic(ctx, TopicSpec{Name: "same-id", ID: id, Assignments: [][]int32{{1}}}); !errors.Is(err, ErrTopicIDExists) {
			t.Errorf("duplicate id = %v, want ErrTopicIDExists", err)
		}
		for _, tc := range []struct {
			spec TopicSpec
			want error
		}{
			{TopicSpec{Name: "bad/name", Assignments: [][]int32{{1}}}, ErrInvalidTopic},
			{TopicSpec{Name: "no-partitions"}, ErrInvalidAssignment},
			{TopicSpec{Name: "empty-replicas", Assignments: [][]int32{{1}, {}}}, ErrInvalidAssignment},
			{TopicSpec{Name: "repeat", Assignments: [][]int32{{1, 1}}}, ErrInvalidAssignment},
			{TopicSpec{Name: "negative", Assignments: [][]int32{{-1}}}, ErrInvalidAssignment},
			{TopicSpec{Name: "reserved-id", ID: TopicID{15: 1}, Assignments: [][]int32{{1}}}, ErrInvalidTopic},
		} {
			if _, err := a.CreateTopic(ctx, tc.spec); !errors.Is(err, tc.want) {
				t.Errorf("CreateTopic(%+v) = %v, want %v", tc.spec, err, tc.want)
			}
		}
		if _, ok := a.Snapshot().Topics["same-id"]; ok {
			t.Errorf("a failed create left a topic behind")
		}
	})

	t.Run("ConcurrentCreateOneWins", func(t *testing.T) {
		for i := range 5 {
			name := fmt.Sprintf("race-%d", i)
			errs := make([]error, 4)
			var wg sync.WaitGroup
			for j, c := range []*Cluster{a, b, a, b} {
				wg.Go(func() {
					_, errs[j] = c.CreateTopic(testCtx(t), TopicSpec{Name: name, Assignments: [][]int32{{1}, {2}}})
				})
			}
			wg.Wait()
			wins := 0
			for _, err := range errs {
				switch {
				case err == nil:
					wins++
				case !errors.Is(err, ErrTopicExists):
					t.Errorf("%s: loser got %v, want ErrTopicExists", name, err)
				}
			}
			if wins != 1 {
				t.Errorf("%s: %d creators won, want exactly 1 (errors %v)", name, wins, errs)
			}
		}
	})

	t.Run("CreatePartitions", func(t *testing.T) {
		ctx := testCtx(t)
		if _, err := a.CreateTopic(ctx, TopicSpec{Name: "grow", Assignments: [][]int32{{1}, {2}}}); err != nil {
			t.Fatal(err)
		}
		if err := b.CreatePartitions(ctx, "grow", 4, [][]int32{{2, 1}, {1, 2}}); err != nil {
			t.Fatalf("CreatePartitions: %v", err)
		}
		if n := len(b.Snapshot().Topics["grow"].Partitions); n != 4 {
			t.Errorf("writer sees %d partitions, want 4", n)
		}
		seeRevision(t, a, b.Snapshot().Revision)
		got := a.Snapshot().Topics["grow"]
		if len(got.Partitions) != 4 || got.Partitions[3].Leader != 1 || !slices.Equal(got.Partitions[2].Replicas, []int32{2, 1}) {
			t.Errorf("other node sees %+v", got.Partitions)
		}
		// A second request computed against 2 partitions must not append again.
		if err := a.CreatePartitions(ctx, "grow", 4, [][]int32{{1}, {1}}); !errors.Is(err, ErrInvalidPartitions) {
			t.Errorf("stale CreatePartitions = %v, want ErrInvalidPartitions", err)
		}
		if err := a.CreatePartitions(ctx, "nope", 2, [][]int32{{1}}); !errors.Is(err, ErrUnknownTopic) {
			t.Errorf("CreatePartitions of unknown topic = %v, want ErrUnknownTopic", err)
		}
		if err := a.CreatePartitions(ctx, "grow", 5, [][]int32{{1, 1}}); !errors.Is(err, ErrInvalidAssignment) {
			t.Errorf("CreatePartitions with a repeated replica = %v, want ErrInvalidAssignment", err)
		}
		// Concurrent growth by one partition each from 4: exactly one wins.
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, c := range []*Cluster{a, b} {
			wg.Go(func() { errs[i] = c.CreatePartitions(testCtx(t), "grow", 5, [][]int32{{1}}) })
		}
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) {
			t.Errorf("concurrent CreatePartitions: %v and %v, want one nil and one ErrInvalidPartitions", errs[0], errs[1])
		}
		if n := len(a.Snapshot().Topics["grow"].Partitions); errs[0] == nil && n != 5 {
			t.Errorf("%d partitions after growth to 5", n)
		}
	})

	t.Run("Configs", func(t *testing.T) {
		ctx := testCtx(t)
		if err := a.SetTopicConfigs(ctx, "orders", map[string]string{"retention.ms": "5", "segment.bytes": "1024"}); err != nil {
			t.Fatalf("SetTopicConfigs: %v", err)
		}
		if got := a.Snapshot().Topics["orders"].Configs; !maps.Equal(got, map[string]string{"retention.ms": "5", "segment.bytes": "1024"}) {
			t.Errorf("topic configs = %v (replaced, not merged)", got)
		}
		if err := a.SetTopicConfigs(ctx, "nope", map[string]string{"a": "b"}); !errors.Is(err, ErrUnknownTopic) {
			t.Errorf("SetTopicConfigs of unknown topic = %v, want ErrUnknownTopic", err)
		}
		if err := b.SetBrokerConfigs(ctx, -1, map[string]string{"log.retention.hours": "1"}); err != nil {
			t.Fatal(err)
		}
		if err := b.SetBrokerConfigs(ctx, 2, map[string]string{"log.cleaner.threads": "2"}); err != nil {
			t.Fatal(err)
		}
		seeRevision(t, a, b.Snapshot().Revision)
		bc := a.Snapshot().BrokerConfigs
		if bc[-1]["log.retention.hours"] != "1" || bc[2]["log.cleaner.threads"] != "2" {
			t.Errorf("broker configs on the other node = %v", bc)
		}

		// Incremental updates from both nodes at once lose nothing.
		var wg sync.WaitGroup
		for i := range 8 {
			c := []*Cluster{a, b}[i%2]
			wg.Go(func() {
				err := c.UpdateTopicConfigs(testCtx(t), "orders", func(m map[string]string) (map[string]string, error) {
					if m == nil {
						m = map[string]string{}
					}
					m[fmt.Sprintf("k%d", i)] = "v"
					return m, nil
				})
				if err != nil {
					t.Errorf("UpdateTopicConfigs %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		seeRevision(t, a, b.Snapshot().Revision)
		if got := a.Snapshot().Topics["orders"].Configs; len(got) != 10 {
			t.Errorf("after 8 concurrent additions: %d configs %v, want 10", len(got), got)
		}

		if err := a.SetTopicConfigs(ctx, "orders", nil); err != nil {
			t.Fatal(err)
		}
		if err := a.SetBrokerConfigs(ctx, 2, nil); err != nil {
			t.Fatal(err)
		}
		m := a.Snapshot()
		if m.Topics["orders"].Configs != nil || m.BrokerConfigs[2] != nil || m.BrokerConfigs[-1] == nil {
			t.Errorf("after clearing: topic %v, brokers %v", m.Topics["orders"].Configs, m.BrokerConfigs)
		}
		if err := a.SetBrokerConfigs(ctx, -2, nil); err == nil {
			t.Errorf("SetBrokerConfigs(-2) succeeded")
		}
	})

	t.Run("Delete", func(t *testing.T) {
		ctx := testCtx(t)
		old, err := a.CreateTopic(ctx, TopicSpec{Name: "doomed", Assignments: [][]int32{{1}, {1}},
			Configs: map[string]string{"x": "y"}})
		if err != nil {
			t.Fatal(err)
		}
		seeRevision(t, b, a.Snapshot().Revision)
		if err := b.DeleteTopic(ctx, "doomed"); err != nil {
			t.Fatalf("DeleteTopic: %v", err)
		}
		if _, ok := b.Snapshot().Topics["doomed"]; ok {
			t.Errorf("writer still sees the deleted topic")
		}
		seeRevision(t, a, b.Snapshot().Revision)
		if _, ok := a.Snapshot().TopicsByID[old.ID]; ok {
			t.Errorf("other node still sees the deleted topic by id")
		}
		if err := a.DeleteTopic(ctx, "doomed"); !errors.Is(err, ErrUnknownTopic) {
			t.Errorf("second DeleteTopic = %v, want ErrUnknownTopic", err)
		}
		// Nothing of it is left in etcd, and a new topic of that name
		// starts clean.
		resp, err := a.client.Get(ctx, a.keys.root, clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range resp.Kvs {
			if strings.Contains(string(kv.Key), "doomed") || strings.Contains(string(kv.Key), old.ID.String()) {
				t.Errorf("key %s left after delete", kv.Key)
			}
		}
		renewed, err := a.CreateTopic(ctx, TopicSpec{Name: "doomed", Assignments: [][]int32{{1}}})
		if err != nil {
			t.Fatal(err)
		}
		if renewed.ID == old.ID || a.Snapshot().Topics["doomed"].Configs != nil {
			t.Errorf("recreated topic kept the old id or configs: %+v", a.Snapshot().Topics["doomed"])
		}

		if err := a.DeleteTopicByID(ctx, renewed.ID); err != nil {
			t.Fatalf("DeleteTopicByID: %v", err)
		}
		if _, ok := a.Snapshot().Topics["doomed"]; ok {
			t.Errorf("topic still there after DeleteTopicByID")
		}
		if err := a.DeleteTopicByID(ctx, renewed.ID); !errors.Is(err, ErrUnknownTopic) {
			t.Errorf("second DeleteTopicByID = %v, want ErrUnknownTopic", err)
		}
	})

	t.Run("LargeTopic", func(t *testing.T) {
		// More operations in one transaction than etcd's default limit of 128.
		as := make([][]int32, 300)
		for p := range as {
			as[p] = []int32{1, 2, 3}
		}
		if _, err := a.CreateTopic(testCtx(t), TopicSpec{Name: "wide", Assignments: as}); err != nil {
			t.Fatalf("CreateTopic with 300 partitions: %v", err)
		}
		if n := len(a.Snapshot().Topics["wide"].Partitions); n != 300 {
			t.Errorf("%d partitions, want 300", n)
		}
	})

	t.Run("ProducerIDsUnique", func(t *testing.T) {
		const perWorker, workersPerNode = 6, 4
		var (
			mu     sync.Mutex
			firsts []int64
			wg     sync.WaitGroup
		)
		for _, c := range []*Cluster{a, b} {
			for range workersPerNode {
				wg.Go(func() {
					for range perWorker {
						first, count, err := c.AllocateProducerIDs(testCtx(t))
						if err != nil {
							t.Errorf("AllocateProducerIDs: %v", err)
							return
						}
						if count != ProducerIDBlockSize {
							t.Errorf("block size %d, want %d", count, ProducerIDBlockSize)
						}
						mu.Lock()
						firsts = append(firsts, first)
						mu.Unlock()
					}
				})
			}
		}
		wg.Wait()
		slices.Sort(firsts)
		// Every block handed out once, in one contiguous run from 0.
		if len(firsts) != 2*workersPerNode*perWorker {
			t.Fatalf("%d blocks, want %d", len(firsts), 2*workersPerNode*perWorker)
		}
		for i, f := range firsts {
			if f != int64(i)*ProducerIDBlockSize {
				t.Fatalf("blocks %v: block %d starts at %d, want %d (duplicate or gap)", firsts, i, f, int64(i)*ProducerIDBlockSize)
			}
		}
	})

	t.Run("WaitForUnrelatedRevision", func(t *testing.T) {
		// A write outside the prefix: no event reaches the cache, but watch
		// progress notifications advance its revision.
		resp, err := a.client.Put(testCtx(t), "/elsewhere/key", "v")
		if err != nil {
			t.Fatal(err)
		}
		seeRevision(t, b, resp.Header.Revision)
	})
}

func TestRegistration(t *testing.T) {
	m := open(t, embeddedConfig(t.TempDir(), 0)) // holds the member, never registers

	slow := externalConfig(m, 1)
	slow.SessionTTL = 60 * time.Second // only a revoke removes it within the test
	a, err := Open(testCtx(t), slow, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	rack := "rack-a"
	eps := []Endpoint{{Listener: "PLAINTEXT", Host: "host-a", Port: 9092, SecurityProtocol: "PLAINTEXT"},
		{Listener: "EXTERNAL", Host: "ext-a", Port: 19092, SecurityProtocol: "PLAINTEXT"}}
	if err := a.Register(testCtx(t), BrokerInfo{NodeID: 1, Host: "host-a", Port: 9092, Rack: &rack, Endpoints: eps}); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if b, ok := a.Snapshot().Broker(1); !ok || b.Host != "host-a" || b.Rack == nil || *b.Rack != "rack-a" || !slices.Equal(b.Endpoints, eps) {
		t.Errorf("registered broker in own snapshot = %+v, %v; want host-a, rack-a, endpoints %+v", b, ok, eps)
	}
	if !a.Registered() {
		t.Errorf("Registered() = false after Register")
	}
	if err := a.Register(testCtx(t), BrokerInfo{NodeID: 1, Host: "host-a", Port: 9092}); !errors.Is(err, ErrAlreadyRegistered) {
		t.Errorf("second Register = %v, want ErrAlreadyRegistered", err)
	}

	// Another process with the same node id is refused while a is live.
	fast := externalConfig(m, 1)
	fast.SessionTTL = 2 * time.Second
	b := open(t, fast)
	err = b.Register(testCtx(t), BrokerInfo{NodeID: 1, Host: "host-b", Port: 9092})
	if !errors.Is(err, ErrNodeIDInUse) {
		t.Fatalf("Register of a live node id = %v, want ErrNodeIDInUse", err)
	}
	if err := b.Register(testCtx(t), BrokerInfo{NodeID: 7, Host: "host-b", Port: 9092}); err == nil {
		t.Errorf("Register with a node id other than the configured one succeeded")
	}
	c := open(t, externalConfig(m, 2))
	if err := c.Register(testCtx(t), BrokerInfo{NodeID: 2, Host: "host-c", Port: 9094}); err != nil {
		t.Fatal(err)
	}
	seeRevision(t, m, c.Snapshot().Revision)
	if got := brokerIDs(m.Snapshot()); !slices.Equal(got, []int32{1, 2}) {
		t.Errorf("brokers %v, want [1 2]", got)
	}
	// Clients are told the elected controller, once there is one.
	eventually(t, func() string {
		if s := m.Snapshot(); s.Controller.NodeID == -1 || s.ControllerID != s.Controller.NodeID {
			return fmt.Sprintf("controller id %d, elected %+v", s.ControllerID, s.Controller)
		}
		return ""
	})

	// Close revokes the lease: the registration goes at once, not after 60s.
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	eventually(t, func() string {
		if got := brokerIDs(m.Snapshot()); !slices.Equal(got, []int32{2}) {
			return fmt.Sprintf("brokers %v, want [2] after broker 1 closed", got)
		}
		return ""
	})
	eventually(t, func() string {
		if s := m.Snapshot(); s.ControllerID != 2 {
			return fmt.Sprintf("controller id %d after broker 1 left, want 2 (elected %+v)", s.ControllerID, s.Controller)
		}
		return ""
	})
	if err := b.Register(testCtx(t), BrokerInfo{NodeID: 1, Host: "host-b", Port: 9092}); err != nil {
		t.Fatalf("Register after the holder closed: %v", err)
	}

	// Losing the session (here: the lease revoked behind b's back) is
	// reported, and b registers again by itself.
	lost := b.SessionLost()
	b.mu.Lock()
	lease := b.mu.reg.session.Lease()
	b.mu.Unlock()
	if _, err := m.client.Revoke(testCtx(t), lease); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lost:
	case <-time.After(testTimeout):
		t.Fatalf("SessionLost not closed %s after the lease was revoked", testTimeout)
	}
	eventually(t, func() string {
		if !b.Registered() {
			return "b not registered again"
		}
		bi, ok := m.Snapshot().Broker(1)
		if !ok || bi.Host != "host-b" {
			return fmt.Sprintf("broker 1 in the member's snapshot = %+v, %v; want host-b", bi, ok)
		}
		return ""
	})
	b.mu.Lock()
	relet := b.mu.reg.session.Lease()
	b.mu.Unlock()
	if relet == lease {
		t.Errorf("re-registered under the revoked lease %x", int64(lease))
	}
}

// TestRegistrationTakeOver: a registration left by a killed run (its lease
// still alive, nobody revoked it) is taken over at once by a broker with the
// same Owner, and still refused to any other.
func TestRegistrationTakeOver(t *testing.T) {
	m := open(t, embeddedConfig(t.TempDir(), 0))
	k := m.keys
	// What a run killed with -9 leaves: its key under a lease that lives on.
	grant, err := m.client.Grant(testCtx(t), 60)
	if err != nil {
		t.Fatal(err)
	}
	left := encode(brokerRecord{Host: "host-old", Port: 9092, Owner: "host-a:/data/gregor"})
	if _, err := m.client.Put(testCtx(t), k.broker(1), left, clientv3.WithLease(grant.ID)); err != nil {
		t.Fatal(err)
	}

	for _, owner := range []string{"", "host-b:/data/gregor", "host-a:/data/gregor2"} {
		other := open(t, externalConfig(m, 1))
		err := other.Register(testCtx(t), BrokerInfo{NodeID: 1, Host: "host-x", Port: 9092, Owner: owner})
		if !errors.Is(err, ErrNodeIDInUse) {
			t.Errorf("Register with owner %q over owner host-a:/data/gregor = %v, want ErrNodeIDInUse", owner, err)
		}
	}

	a := open(t, externalConfig(m, 1))
	start := time.Now()
	if err := a.Register(testCtx(t), BrokerInfo{NodeID: 1, Host: "host-new", Port: 9093, Owner: "host-a:/data/gregor"}); err != nil {
		t.Fatalf("Register by the same owner: %v", err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("takeover took %s: it waited for the old lease", took)
	}
	if bi, ok := a.Snapshot().Broker(1); !ok || bi.Host != "host-new" || bi.Port != 9093 {
		t.Errorf("broker 1 after takeover = %+v, %v; want host-new:9093", bi, ok)
	}
	ttl, err := m.client.TimeToLive(testCtx(t), grant.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ttl.TTL != -1 {
		t.Errorf("the killed run's lease has TTL %d after the takeover, want -1 (revoked)", ttl.TTL)
	}
	resp, err := m.client.Get(testCtx(t), k.broker(1))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("get registration: %v %v", resp, err)
	}
	a.mu.Lock()
	lease := a.mu.reg.session.Lease()
	a.mu.Unlock()
	if got := clientv3.LeaseID(resp.Kvs[0].Lease); got != lease {
		t.Errorf("registration bound to lease %x, want the new run's %x", int64(got), int64(lease))
	}
}

// TestWatchReloadsAfterCompaction starts a watch from a revision that etcd
// has compacted away: the watch must fail, and the loop must reload the
// cache whole and go on watching.
func TestWatchReloadsAfterCompaction(t *testing.T) {
	m := open(t, embeddedConfig(t.TempDir(), 1))
	ctx := testCtx(t)
	if _, err := m.CreateTopic(ctx, TopicSpec{Name: "first", Assignments: [][]int32{{1}}}); err != nil {
		t.Fatal(err)
	}
	stale, err := m.load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreateTopic(ctx, TopicSpec{Name: "second", Assignments: [][]int32{{1}}}); err != nil {
		t.Fatal(err)
	}
	if err := m.DeleteTopic(ctx, "first"); err != nil {
		t.Fatal(err)
	}
	rev := m.Snapshot().Revision
	if _, err := m.client.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}

	// A second cache on the same client, started from the stale state.
	w := &Cluster{cfg: m.cfg, log: m.log, keys: m.keys, client: m.client}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	defer func() {
		w.cancel()
		w.wg.Wait()
	}()
	if err := w.watch(stale); err == nil || !strings.Contains(err.Error(), "compacted") {
		t.Fatalf("watch from a compacted revision = %v, want a compaction error", err)
	}
	w.publish(stale.last)
	w.mu.Lock()
	w.goAttachLocked(func() { w.watchLoop(stale) })
	w.mu.Unlock()
	eventually(t, func() string {
		s := w.Snapshot()
		if s.Revision < rev || s.Topics["first"] != nil || s.Topics["second"] == nil {
			return fmt.Sprintf("cache at revision %d (want >= %d) with topics %v", s.Revision, rev, slices.Sorted(maps.Keys(s.Topics)))
		}
		return ""
	})
	// And it watches again: a new change arrives.
	if _, err := m.CreateTopic(ctx, TopicSpec{Name: "third", Assignments: [][]int32{{1}}}); err != nil {
		t.Fatal(err)
	}
	seeRevision(t, w, m.Snapshot().Revision)
	if w.Snapshot().Topics["third"] == nil {
		t.Errorf("reloaded cache missed a later change")
	}
}

func TestOpenUnreachable(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Endpoints = []string{"http://127.0.0.1:1"} // nothing listens there
	cfg.DialTimeout = 500 * time.Millisecond
	cfg.RequestTimeout = 500 * time.Millisecond
	start := time.Now()
	c, err := Open(testCtx(t), cfg, testLogger(t))
	if err == nil {
		c.Close()
		t.Fatalf("Open of an unreachable etcd succeeded")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Open failed only after %s: %v", took, err)
	}
}
