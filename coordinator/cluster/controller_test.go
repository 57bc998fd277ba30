package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// threeNodes opens three Clusters on the embedded member of a fourth, which
// is not registered (so any of the three can leave without taking etcd
// with it), and registers the three.
func threeNodes(t *testing.T) []*Cluster {
	t.Helper()
	etcd := open(t, embeddedConfig(t.TempDir(), 0))
	nodes := []*Cluster{open(t, externalConfig(etcd, 1)), open(t, externalConfig(etcd, 2)), open(t, externalConfig(etcd, 3))}
	for i, c := range nodes {
		if err := c.Register(testCtx(t), BrokerInfo{NodeID: int32(i + 1), Host: "h", Port: 9092}); err != nil {
			t.Fatal(err)
		}
	}
	// Every view has all three brokers before the test goes on, so that
	// what it creates starts with all of them eligible.
	eventually(t, func() string {
		for _, c := range nodes {
			if n := len(c.Snapshot().Brokers); n != 3 {
				return fmt.Sprintf("node %d sees %d brokers", c.cfg.NodeID, n)
			}
		}
		return ""
	})
	return nodes
}

// agreedController waits until every node's view names the same elected
// controller, and that node alone holds the role, and returns it.
func agreedController(t *testing.T, nodes []*Cluster) ControllerInfo {
	t.Helper()
	var got ControllerInfo
	eventually(t, func() string {
		got = nodes[0].Snapshot().Controller
		holders := 0
		for _, c := range nodes {
			id := c.cfg.NodeID
			if v := c.Snapshot().Controller; v != got {
				return fmt.Sprintf("node %d sees %+v, node %d %+v", id, v, nodes[0].cfg.NodeID, got)
			}
			if epoch, ok := c.ControllerEpoch(); ok {
				holders++
				if id != got.NodeID || epoch != got.Epoch {
					return fmt.Sprintf("node %d holds epoch %d, the views say %+v", id, epoch, got)
				}
			}
		}
		if got.NodeID == -1 || holders != 1 {
			return fmt.Sprintf("controller %+v held by %d nodes", got, holders)
		}
		return ""
	})
	return got
}

// TestControllerElection: three registered brokers elect one controller,
// all see it; when it leaves, another is elected with a higher epoch
// within a few seconds, and the one left alone ends up controller.
func TestControllerElection(t *testing.T) {
	nodes := threeNodes(t)
	first := agreedController(t, nodes)
	alive := append([]*Cluster(nil), nodes...)
	prev := first
	for range 2 {
		i := slices.IndexFunc(alive, func(c *Cluster) bool { return c.cfg.NodeID == prev.NodeID })
		start := time.Now()
		if err := alive[i].Close(); err != nil {
			t.Fatal(err)
		}
		alive = slices.Delete(alive, i, i+1)
		next := agreedController(t, alive)
		t.Logf("controller %d left; %d elected with epoch %d after %s", prev.NodeID, next.NodeID, next.Epoch, time.Since(start))
		if next.NodeID == prev.NodeID || next.Epoch <= prev.Epoch {
			t.Fatalf("after controller %+v left: %+v", prev, next)
		}
		prev = next
	}
}

// TestControllerTakeOverAfterCrash: a controller that stops without
// revoking its lease (killed) is replaced once the lease expires, and its
// epoch is fenced off from then on.
func TestControllerTakeOverAfterCrash(t *testing.T) {
	cfg := embeddedConfig(t.TempDir(), 1)
	first := open(t, cfg)
	// A stand-in for a broker killed while controller: a candidate on a
	// lease of 2 s whose keep-alives stop with its client.
	cli, err := clientv3.New(clientv3.Config{Endpoints: first.ClientURLs(), DialTimeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(2))
	if err != nil {
		t.Fatal(err)
	}
	e := concurrency.NewElection(sess, first.keys.controllerPrefix())
	if err := e.Campaign(testCtx(t), encode(controllerRecord{Node: 9})); err != nil {
		t.Fatal(err)
	}
	if err := first.Register(testCtx(t), BrokerInfo{NodeID: 1, Host: "h", Port: 9092}); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() string {
		if c := first.Snapshot().Controller; c.NodeID != 9 || c.Epoch != e.Rev() {
			return fmt.Sprintf("controller %+v, want node 9 epoch %d", c, e.Rev())
		}
		return ""
	})
	if _, ok := first.ControllerEpoch(); ok {
		t.Fatal("node 1 holds the role while node 9's key lives")
	}
	if err := first.controllerWrite(testCtx(t), nil, clientv3.OpPut(first.keys.root+"probe", "1")); !errors.Is(err, ErrNotController) {
		t.Fatalf("a write by a broker that is not controller: %v, want ErrNotController", err)
	}

	killed := time.Now()
	cli.Close() // no revoke: the lease runs out
	got := agreedController(t, []*Cluster{first})
	t.Logf("controller 9 killed; node 1 elected with epoch %d after %s (lease TTL 2s)", got.Epoch, time.Since(killed))
	if got.NodeID != 1 || got.Epoch <= e.Rev() {
		t.Fatalf("after the kill: %+v", got)
	}

	// The new controller writes; a write carrying the dead one's epoch is
	// refused, whoever sends it.
	if err := first.controllerWrite(testCtx(t), nil, clientv3.OpPut(first.keys.root+"probe", "2")); err != nil {
		t.Fatalf("the controller's write: %v", err)
	}
	first.mu.Lock()
	mine := first.mu.controller
	first.mu.controller = &controllerRole{key: e.Key(), epoch: e.Rev()}
	first.mu.Unlock()
	err = first.controllerWrite(testCtx(t), nil, clientv3.OpPut(first.keys.root+"probe", "3"))
	first.mu.Lock()
	first.mu.controller = mine
	first.mu.Unlock()
	if !errors.Is(err, ErrNotController) {
		t.Fatalf("a write with the deposed epoch: %v, want ErrNotController", err)
	}

	// A compare beside the fence that fails: ErrStaleState, nothing
	// written.
	stale := clientv3.Compare(clientv3.Value(first.keys.root+"probe"), "=", "1")
	if err := first.controllerWrite(testCtx(t), []clientv3.Cmp{stale}, clientv3.OpPut(first.keys.root+"probe", "4")); !errors.Is(err, ErrStaleState) {
		t.Fatalf("a write on a changed state: %v, want ErrStaleState", err)
	}
	resp, err := first.client.Get(testCtx(t), first.keys.root+"probe")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "2" {
		t.Fatalf("probe key after the refused writes: %v %v, want 2", resp, err)
	}
}

// TestCandidateCloseWithoutEtcd: a broker waiting to be elected closes in
// bounded time when etcd has gone away (its campaign's requests all carry
// the Cluster's context).
func TestCandidateCloseWithoutEtcd(t *testing.T) {
	etcdCfg := embeddedConfig(t.TempDir(), 0)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	etcd, err := Open(ctx, etcdCfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	var nodes []*Cluster
	for id := range int32(2) {
		c, err := Open(ctx, externalConfig(etcd, id+1), testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		// Without etcd, Close cannot revoke the lease: it fails, bounded.
		t.Cleanup(func() { _ = c.Close() })
		nodes = append(nodes, c)
	}
	for _, c := range nodes {
		if err := c.Register(testCtx(t), BrokerInfo{NodeID: c.cfg.NodeID, Host: "h", Port: 9092}); err != nil {
			t.Fatal(err)
		}
	}
	elected := agreedController(t, nodes)
	waiting := nodes[0]
	if waiting.cfg.NodeID == elected.NodeID {
		waiting = nodes[1]
	}
	if err := etcd.Close(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- waiting.Close() }()
	select {
	case <-done: // an error is expected: the lease cannot be revoked
		t.Logf("candidate closed in %s without etcd", time.Since(start))
	case <-time.After(2 * testTimeout):
		t.Fatalf("a waiting candidate's Close still running after %s without etcd", 2*testTimeout)
	}
}

// freeAddrs returns n loopback addresses with ports free a moment ago.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	for _, l := range ls {
		l.Close()
	}
	return out
}

// TestEmbeddedThreeMembers: three brokers each embed a member of one etcd
// cluster (InitialCluster), elect a controller, and go on with two when
// the third, the controller, is gone: writes, and a new controller.
func TestEmbeddedThreeMembers(t *testing.T) {
	peers, clients := freeAddrs(t, 3), freeAddrs(t, 3)
	var initial []string
	for i, p := range peers {
		initial = append(initial, fmt.Sprintf("gregor-%d=http://%s", i+1, p))
	}
	nodes := make([]*Cluster, 3)
	errs := make(chan error, 3)
	for i := range 3 {
		cfg := embeddedConfig(t.TempDir(), int32(i+1))
		cfg.PeerListenAddr, cfg.ClientListenAddr = peers[i], clients[i]
		cfg.InitialCluster = strings.Join(initial, ",")
		go func() {
			// Each waits for a majority of members: they start together.
			c, err := Open(t.Context(), cfg, testLogger(t))
			if err == nil {
				nodes[i] = c
				err = c.Register(testCtx(t), BrokerInfo{NodeID: cfg.NodeID, Host: "h", Port: 9092})
			}
			errs <- err
		}()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range nodes {
		t.Cleanup(func() { _ = c.Close() })
	}
	for i, c := range nodes {
		// Its own member alone: see startMember.
		if eps := c.ClientURLs(); len(eps) != 1 || eps[0] != "http://"+clients[i] {
			t.Fatalf("node %d dials %v, want its own member at %s only", c.cfg.NodeID, eps, clients[i])
		}
	}
	first := agreedController(t, nodes)
	i := slices.IndexFunc(nodes, func(c *Cluster) bool { return c.cfg.NodeID == first.NodeID })
	if err := nodes[i].Close(); err != nil {
		t.Fatal(err)
	}
	rest := slices.Delete(slices.Clone(nodes), i, i+1)
	next := agreedController(t, rest)
	if next.NodeID == first.NodeID || next.Epoch <= first.Epoch {
		t.Fatalf("after the controller's member left: %+v, then %+v", first, next)
	}
	spec := TopicSpec{Name: "two-of-three", Assignments: [][]int32{{rest[0].cfg.NodeID}, {rest[1].cfg.NodeID}}}
	if _, err := rest[0].CreateTopic(testCtx(t), spec); err != nil {
		t.Fatalf("create a topic with two of three members: %v", err)
	}
	eventually(t, func() string {
		if rest[1].Snapshot().Topics["two-of-three"] == nil {
			return "the other member's node does not see the topic"
		}
		return ""
	})
}

// TestEmbeddedMemberAdvertisedName: a member listening on every interface
// is advertised to its peers and clients at the name its initial cluster
// entry gives (as a pod's DNS name in Kubernetes), and serves there.
func TestEmbeddedMemberAdvertisedName(t *testing.T) {
	addrs := freeAddrs(t, 2)
	_, peerPort, _ := net.SplitHostPort(addrs[0])
	_, clientPort, _ := net.SplitHostPort(addrs[1])
	cfg := embeddedConfig(t.TempDir(), 1)
	cfg.PeerListenAddr, cfg.ClientListenAddr = "0.0.0.0:"+peerPort, "0.0.0.0:"+clientPort
	cfg.InitialCluster = "gregor-1=http://localhost:" + peerPort
	c, err := Open(t.Context(), cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	members := c.member.Server.Cluster().Members()
	if len(members) != 1 {
		t.Fatalf("members: %v, want 1", members)
	}
	wantPeer, wantClient := "http://localhost:"+peerPort, "http://localhost:"+clientPort
	if m := members[0]; fmt.Sprint(m.PeerURLs) != "["+wantPeer+"]" || fmt.Sprint(m.ClientURLs) != "["+wantClient+"]" {
		t.Fatalf("member advertises peer URLs %v and client URLs %v, want [%s] and [%s]", m.PeerURLs, m.ClientURLs, wantPeer, wantClient)
	}
	if err := c.Register(testCtx(t), BrokerInfo{NodeID: 1, Host: "h", Port: 9092}); err != nil {
		t.Fatalf("register through the member: %v", err)
	}
}
