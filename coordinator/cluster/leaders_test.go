package cluster

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// mdWith builds a view with live brokers and one topic "t" of the given
// partition states, each at mod revision 10+partition. A negative id in
// live is broker -id in controlled shutdown. live is in ascending order of
// broker id.
func mdWith(live []int32, parts ...PartitionState) *Metadata {
	md := &Metadata{Topics: map[string]*Topic{}}
	for _, id := range live {
		md.Brokers = append(md.Brokers, BrokerInfo{NodeID: max(id, -id), ShuttingDown: id < 0})
	}
	t := &Topic{Name: "t", Partitions: parts}
	for p := range parts {
		t.revs = append(t.revs, int64(10+p))
	}
	md.Topics["t"] = t
	return md
}

func TestDecideLeaders(t *testing.T) {
	ps := func(leader, epoch int32, isr, replicas []int32) PartitionState {
		return PartitionState{Leader: leader, LeaderEpoch: epoch, PartitionEpoch: epoch, ISR: isr, Replicas: replicas}
	}
	for _, c := range []struct {
		what string
		live []int32
		in   PartitionState
		want *PartitionState // nil: no change
	}{
		{"live leader", []int32{1, 2}, ps(1, 0, []int32{1}, []int32{1, 2}), nil},
		{"dead leader, no other in-sync replica", []int32{2}, ps(1, 0, []int32{1}, []int32{1, 2}),
			&PartitionState{Leader: -1, LeaderEpoch: 1, PartitionEpoch: 1, ISR: []int32{1}, Replicas: []int32{1, 2}}},
		{"dead leader, a live in-sync follower", []int32{2, 3}, ps(1, 4, []int32{1, 3, 2}, []int32{1, 2, 3}),
			&PartitionState{Leader: 2, LeaderEpoch: 5, PartitionEpoch: 5, ISR: []int32{2, 3}, Replicas: []int32{1, 2, 3}}},
		{"dead leader, live followers out of sync", []int32{2, 3}, ps(1, 0, []int32{1}, []int32{1, 2, 3}),
			&PartitionState{Leader: -1, LeaderEpoch: 1, PartitionEpoch: 1, ISR: []int32{1}, Replicas: []int32{1, 2, 3}}},
		{"no leader, its last leader back", []int32{1, 2}, ps(-1, 1, []int32{1}, []int32{1, 2}),
			&PartitionState{Leader: 1, LeaderEpoch: 2, PartitionEpoch: 2, ISR: []int32{1}, Replicas: []int32{1, 2}}},
		{"no leader, still none in sync", []int32{2}, ps(-1, 1, []int32{1}, []int32{1, 2}), nil},
		{"no broker live", nil, ps(-1, 1, []int32{1}, []int32{1}), nil},
		{"live leader, a dead follower in the ISR", []int32{1, 3}, ps(1, 2, []int32{1, 2, 3}, []int32{1, 2, 3}),
			&PartitionState{Leader: 1, LeaderEpoch: 2, PartitionEpoch: 3, ISR: []int32{1, 3}, Replicas: []int32{1, 2, 3}}},
		{"leader shutting down, an in-sync follower", []int32{1, -2, 3}, ps(2, 4, []int32{2, 3}, []int32{2, 3, 1}),
			&PartitionState{Leader: 3, LeaderEpoch: 5, PartitionEpoch: 5, ISR: []int32{3}, Replicas: []int32{2, 3, 1}}},
		{"leader shutting down, alone in sync: it leads until it stops", []int32{1, -2, 3}, ps(2, 4, []int32{2}, []int32{2, 3, 1}), nil},
		{"follower shutting down leaves the ISR", []int32{-1, 2}, ps(2, 4, []int32{1, 2}, []int32{1, 2}),
			&PartitionState{Leader: 2, LeaderEpoch: 4, PartitionEpoch: 5, ISR: []int32{2}, Replicas: []int32{1, 2}}},
		{"no leader, only a broker shutting down in sync", []int32{-1, 2}, ps(-1, 4, []int32{1}, []int32{1, 2}), nil},
		{"leader outside the replicas", []int32{1, 2}, ps(2, 1, []int32{1, 2}, []int32{1}),
			&PartitionState{Leader: 1, LeaderEpoch: 2, PartitionEpoch: 2, ISR: []int32{1}, Replicas: []int32{1}}},
		{"a repeated ISR member", []int32{1}, ps(1, 1, []int32{1, 1}, []int32{1}),
			&PartitionState{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 2, ISR: []int32{1}, Replicas: []int32{1}}},
	} {
		got := decideLeaders(mdWith(c.live, c.in), false)
		if c.want != nil && len(got) == 1 {
			// What the controller writes, it leaves alone on the next view.
			md := mdWith(c.live, got[0].next)
			if again := decideLeaders(md, false); len(again) != 0 {
				t.Errorf("%s: decided again on its own decision: %+v", c.what, again)
			}
		}
		switch {
		case c.want == nil && len(got) != 0:
			t.Errorf("%s: %+v, want no change", c.what, got)
		case c.want != nil && len(got) != 1:
			t.Errorf("%s: %d changes, want 1", c.what, len(got))
		case c.want != nil:
			g := got[0]
			if g.topic != "t" || g.partition != 0 || g.rev != 10 || fmt.Sprint(g.next) != fmt.Sprint(*c.want) {
				t.Errorf("%s: %+v, want %+v at rev 10", c.what, g, *c.want)
			}
			if fmt.Sprint(g.prev) != fmt.Sprint(c.in) {
				t.Errorf("%s: prev %+v, want %+v", c.what, g.prev, c.in)
			}
		}
	}
	// Several partitions, in order; the input view is not modified.
	in := []PartitionState{ps(1, 0, []int32{1}, []int32{1}), ps(2, 0, []int32{2}, []int32{2}), ps(3, 7, []int32{3}, []int32{3})}
	md := mdWith([]int32{2}, in...)
	got := decideLeaders(md, false)
	if len(got) != 2 || got[0].partition != 0 || got[1].partition != 2 || got[1].rev != 12 || got[1].next.LeaderEpoch != 8 {
		t.Fatalf("two dead leaders: %+v", got)
	}
	if md.Topics["t"].Partitions[0].Leader != 1 || !slices.Equal(md.Topics["t"].Partitions[2].ISR, []int32{3}) {
		t.Fatalf("the view changed: %+v", md.Topics["t"].Partitions)
	}
}

// TestLeadersFollowBrokers: with three brokers, partitions of a broker that
// leaves lose their leader when it was their only in-sync replica, and get
// it back when it returns, each time with a new leader epoch; a partition
// with another in-sync replica (created with both live) moves to it; a
// partition whose leader stays keeps it.
func TestLeadersFollowBrokers(t *testing.T) {
	nodes := threeNodes(t)
	spec := TopicSpec{Name: "led", Assignments: [][]int32{{1}, {2}, {3}, {3, 1}}}
	if _, err := nodes[0].CreateTopic(testCtx(t), spec); err != nil {
		t.Fatal(err)
	}
	agreedController(t, nodes)
	leaders := func(c *Cluster) string {
		tp := c.Snapshot().Topics["led"]
		if tp == nil {
			return "no topic"
		}
		var s []string
		for _, p := range tp.Partitions {
			s = append(s, fmt.Sprintf("%d@%d", p.Leader, p.LeaderEpoch))
		}
		return fmt.Sprint(s)
	}
	want := func(c *Cluster, w string) {
		t.Helper()
		eventually(t, func() string {
			if got := leaders(c); got != w {
				return fmt.Sprintf("node %d sees leaders %s, want %s", c.cfg.NodeID, got, w)
			}
			return ""
		})
	}
	want(nodes[0], "[1@0 2@0 3@0 3@0]")

	start := time.Now()
	if err := nodes[2].Close(); err != nil {
		t.Fatal(err)
	}
	want(nodes[0], "[1@0 2@0 -1@1 1@1]")
	t.Logf("broker 3 left; its partitions leaderless after %s", time.Since(start))

	// Broker 3 comes back (a new process, same node id).
	back := open(t, externalConfig(nodes[0], 3))
	start = time.Now()
	if err := back.Register(testCtx(t), BrokerInfo{NodeID: 3, Host: "h", Port: 9092}); err != nil {
		t.Fatal(err)
	}
	want(nodes[1], "[1@0 2@0 3@2 1@1]")
	want(back, "[1@0 2@0 3@2 1@1]")
	t.Logf("broker 3 back; its partitions led by it again after %s", time.Since(start))
}

func TestDecidePreferred(t *testing.T) {
	ps := func(leader int32, isr, replicas []int32) PartitionState {
		return PartitionState{Leader: leader, LeaderEpoch: 3, PartitionEpoch: 5, ISR: isr, Replicas: replicas}
	}
	for _, c := range []struct {
		what string
		live []int32
		in   PartitionState
		want int32 // the new leader; -2: no change
	}{
		{"preferred leads", []int32{1, 2}, ps(1, []int32{1, 2}, []int32{1, 2}), -2},
		{"preferred back and in sync", []int32{1, 2}, ps(2, []int32{2, 1}, []int32{1, 2}), 1},
		{"preferred back, not in sync yet", []int32{1, 2}, ps(2, []int32{2}, []int32{1, 2}), -2},
		{"preferred shutting down", []int32{-1, 2}, ps(2, []int32{2, 1}, []int32{1, 2}), -2},
		{"preferred dead", []int32{2}, ps(2, []int32{2, 1}, []int32{1, 2}), -2},
		{"leader dead: decideLeaders' turn", []int32{1}, ps(2, []int32{2, 1}, []int32{1, 2}), -2},
		{"no leader: decideLeaders' turn", []int32{1, 2}, ps(-1, []int32{1}, []int32{1, 2}), -2},
	} {
		got := decidePreferred(mdWith(c.live, c.in))
		switch {
		case c.want == -2 && len(got) != 0:
			t.Errorf("%s: %+v, want no change", c.what, got)
		case c.want != -2 && len(got) != 1:
			t.Errorf("%s: %d changes, want 1", c.what, len(got))
		case c.want != -2:
			n := got[0].next
			if n.Leader != c.want || n.LeaderEpoch != 4 || n.PartitionEpoch != 6 || !slices.Equal(n.ISR, c.in.ISR) || got[0].rev != 10 {
				t.Errorf("%s: %+v, want leader %d, epochs 4/6, ISR kept, at rev 10", c.what, n, c.want)
			}
		}
	}
}

func TestShutdownPending(t *testing.T) {
	ps := func(leader int32, isr ...int32) PartitionState {
		return PartitionState{Leader: leader, ISR: isr, Replicas: []int32{1, 2, 3}}
	}
	parts := []PartitionState{
		ps(1, 1),       // led by 1 alone: stays until it stops
		ps(1, 1, 2),    // led by 1, 2 in sync: to move
		ps(2, 2, 1),    // 1 a follower in sync with 2: to leave the ISR
		ps(3, 3),       // not 1's
		ps(1, 1, 3),    // to move while 3 is eligible
		ps(-1, 1, 2),   // no leader, 1 in sync with 2: to change
		ps(2, 2),       // not 1's
		ps(1, 1, 4, 5), // in sync with brokers that are gone: stays
	}
	if got := shutdownPending(mdWith([]int32{-1, 2, 3}, parts...), 1); got != 4 {
		t.Errorf("3 live: %d pending, want 4", got)
	}
	if got := shutdownPending(mdWith([]int32{-1, 2, -3}, parts...), 1); got != 3 {
		t.Errorf("3 shutting down: %d pending, want 3", got)
	}
	// Once the controller has decided, nothing is pending.
	md := mdWith([]int32{-1, 2, 3}, parts...)
	after := slices.Clone(parts)
	for _, ch := range decideLeaders(md, false) {
		after[ch.partition] = ch.next
	}
	if got := shutdownPending(mdWith([]int32{-1, 2, 3}, after...), 1); got != 0 {
		t.Errorf("after the controller's decisions: %d pending, want 0 (%+v)", got, after)
	}
}

func TestDecideLeadersUnclean(t *testing.T) {
	dead := PartitionState{Leader: 1, LeaderEpoch: 4, PartitionEpoch: 6, ISR: []int32{1}, Replicas: []int32{1, 2, 3}}
	for _, c := range []struct {
		what        string
		live        []int32
		topic       map[string]string
		cluster     map[string]string
		def         bool
		want        string // leader and ISR, or "" for no change
		wantUnclean bool
	}{
		{"off by default", []int32{2, 3}, nil, nil, false, "-1 [1]", false},
		{"the controller's default", []int32{2, 3}, nil, nil, true, "2 [2]", true},
		{"the topic's config", []int32{2, 3}, map[string]string{"unclean.leader.election.enable": "true"}, nil, false, "2 [2]", true},
		{"the topic's config beats the default", []int32{2, 3}, map[string]string{"unclean.leader.election.enable": "false"}, nil, true, "-1 [1]", false},
		{"the cluster-wide dynamic default", []int32{2, 3}, nil, map[string]string{"unclean.leader.election.enable": "TRUE"}, false, "2 [2]", true},
		{"first eligible replica", []int32{-2, 3}, nil, nil, true, "3 [3]", true},
		{"no eligible replica", []int32{-2}, nil, nil, true, "-1 [1]", false},
	} {
		md := mdWith(c.live, dead)
		md.Topics["t"].Configs = c.topic
		md.BrokerConfigs = map[int32]map[string]string{-1: c.cluster}
		got := decideLeaders(md, c.def)
		if len(got) != 1 {
			t.Errorf("%s: %d changes, want 1", c.what, len(got))
			continue
		}
		if s := fmt.Sprint(got[0].next.Leader, " ", got[0].next.ISR); s != c.want || got[0].unclean != c.wantUnclean {
			t.Errorf("%s: %s (unclean %v), want %s (unclean %v)", c.what, s, got[0].unclean, c.want, c.wantUnclean)
		}
		if got[0].next.LeaderEpoch != 5 || got[0].next.PartitionEpoch != 7 {
			t.Errorf("%s: epochs %d/%d, want 5/7", c.what, got[0].next.LeaderEpoch, got[0].next.PartitionEpoch)
		}
	}
}
