package broker

// Consumer groups seen from franz-go, against an in-process broker: static
// membership (a static member restarting within its session timeout gets its
// old assignment back and nobody else rebalances), the time a group of ten
// takes to be Stable again after a member leaves, and the group admin APIs
// (FindCoordinator with batched keys, OffsetFetch of an unknown group,
// ListGroups, DescribeGroups, DeleteGroups, OffsetDelete). Also, Close
// must stop the group coordinators for good. The consumption tests with each
// balancer and the broker restarts are in group_restart_test.go.
//
// The group coordinator's waits are shortened (fastGroups) and the clients
// heartbeat every 200 ms, so a rebalance takes a fraction of a second and
// the tests wait for states, not for time.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/group"
	"github.com/gregor-io/gregor/protocol"
)

// grpHeartbeat is the heartbeat interval of the tests' group members: a
// member learns that its group rebalances at its next heartbeat.
const grpHeartbeat = 200 * time.Millisecond

// fastGroups shortens the group coordinator's wait for tests: the first
// rebalance of a group waits 100 ms for more members instead of 3 s. (The
// session timeouts here, 6 s and up, need no lower minimum: members leave
// with LeaveGroup, and only the static member that stays away waits out
// its session.)
func fastGroups(cfg *Config) {
	cfg.Groups.InitialRebalanceDelay = 100 * time.Millisecond
}

// grpOpts are the options of a group consumer of topic in group; later
// options override earlier ones, so more may change any of them.
func grpOpts(b *Broker, groupID, topic string, more ...kgo.Opt) []kgo.Opt {
	return append([]kgo.Opt{
		kgo.SeedBrokers(b.Addrs()...),
		kgo.ConsumerGroup(groupID),
		kgo.ConsumeTopics(topic),
		kgo.SessionTimeout(6 * time.Second),
		kgo.HeartbeatInterval(grpHeartbeat),
		kgo.RebalanceTimeout(30 * time.Second),
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
	}, more...)
}

// grpClient is a kgo client closed once, by the test or at its end.
type grpClient struct {
	*kgo.Client
	once sync.Once
}

func newGrpClient(t testing.TB, opts ...kgo.Opt) *grpClient {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	c := &grpClient{Client: cl}
	t.Cleanup(c.close)
	return c
}

// close closes the client; a group member leaves its group unless it is a
// static member.
func (c *grpClient) close() { c.once.Do(c.Close) }

// grpCreateTopic creates a topic and returns its id.
func grpCreateTopic(ctx context.Context, t testing.TB, adm *kadm.Client, topic string, partitions int32) kadm.TopicID {
	t.Helper()
	r, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = r.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	return r.ID
}

// grpDescribe describes one group.
func grpDescribe(ctx context.Context, adm *kadm.Client, groupID string) (kadm.DescribedGroup, error) {
	ds, err := adm.DescribeGroups(ctx, groupID)
	if err != nil {
		return kadm.DescribedGroup{}, err
	}
	d, ok := ds[groupID]
	if !ok {
		return kadm.DescribedGroup{}, fmt.Errorf("group %s missing from the DescribeGroups response", groupID)
	}
	return d, nil
}

// grpAssigned returns the partitions of topic a described member is
// assigned, sorted.
func grpAssigned(m kadm.DescribedGroupMember, topic string) []int32 {
	a, ok := m.Assigned.AsConsumer()
	if !ok {
		return nil
	}
	var out []int32
	for _, t := range a.Topics {
		if t.Topic == topic {
			out = append(out, t.Partitions...)
		}
	}
	slices.Sort(out)
	return out
}

// grpSettled describes the group and returns no error if it is Stable with
// n members that each hold partitions of topic and together hold each of
// its partitions once; otherwise the error says what is missing.
func grpSettled(ctx context.Context, adm *kadm.Client, groupID, topic string, n int, partitions int32) (kadm.DescribedGroup, error) {
	d, err := grpDescribe(ctx, adm, groupID)
	if err != nil {
		return d, err
	}
	if d.Err != nil {
		return d, fmt.Errorf("describe %s: %w", groupID, d.Err)
	}
	if d.State != "Stable" || len(d.Members) != n {
		return d, fmt.Errorf("group %s is %s with %d members, want Stable with %d", groupID, d.State, len(d.Members), n)
	}
	held := map[int32]string{}
	for _, m := range d.Members {
		ps := grpAssigned(m, topic)
		if len(ps) == 0 {
			return d, fmt.Errorf("member %s has no partitions", m.MemberID)
		}
		for _, p := range ps {
			if other, ok := held[p]; ok {
				return d, fmt.Errorf("partition %d assigned to %s and %s", p, other, m.MemberID)
			}
			held[p] = m.MemberID
		}
	}
	if len(held) != int(partitions) {
		return d, fmt.Errorf("%d of %d partitions assigned", len(held), partitions)
	}
	return d, nil
}

// grpWatch records what one group client is told: the partitions its
// callbacks assign and take away and how often they run, its joins and
// whether it led the last one (from the client's log), and its completed
// heartbeats.
type grpWatch struct {
	topic string
	mu    struct {
		sync.Mutex
		assigned  map[int32]bool
		callbacks int
	}
	joins      atomic.Int64
	leader     atomic.Bool
	heartbeats atomic.Int64
}

func newGrpWatch(topic string) *grpWatch {
	w := &grpWatch{topic: topic}
	w.mu.assigned = map[int32]bool{}
	return w
}

// opts installs the watch on a client.
func (w *grpWatch) opts() []kgo.Opt {
	return []kgo.Opt{
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { w.callback(m, true) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { w.callback(m, false) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { w.callback(m, false) }),
		kgo.WithLogger(grpJoinLog{w}),
		kgo.WithHooks(w),
	}
}

func (w *grpWatch) callback(m map[string][]int32, add bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mu.callbacks++
	for _, p := range m[w.topic] {
		if add {
			w.mu.assigned[p] = true
		} else {
			delete(w.mu.assigned, p)
		}
	}
}

// assigned returns the partitions the callbacks gave the client, sorted,
// and how many callbacks ran.
func (w *grpWatch) assigned() ([]int32, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]int32, 0, len(w.mu.assigned))
	for p := range w.mu.assigned {
		out = append(out, p)
	}
	slices.Sort(out)
	return out, w.mu.callbacks
}

// OnBrokerE2E counts completed heartbeats (kgo.HookBrokerE2E).
func (w *grpWatch) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if key == int16(kmsg.Heartbeat) && e2e.Err() == nil {
		w.heartbeats.Add(1)
	}
}

// grpJoinLog reads kgo's log for the outcome of each JoinGroup: kgo has no
// other way to tell whether it leads its group.
type grpJoinLog struct{ w *grpWatch }

func (grpJoinLog) Level() kgo.LogLevel { return kgo.LogLevelInfo }

func (l grpJoinLog) Log(_ kgo.LogLevel, msg string, _ ...any) {
	switch msg {
	case "joined, balancing group":
		l.w.joins.Add(1)
		l.w.leader.Store(true)
	case "joined":
		l.w.joins.Add(1)
		l.w.leader.Store(false)
	}
}

// TestGroupStaticMembership: three static members (group.instance.id,
// KIP-345) share a 12-partition topic. A member that closes (kgo sends no
// LeaveGroup for a static member) and comes back with the same instance id
// within its session timeout gets exactly its old partitions, under a new
// member id, and the group does not rebalance: the other members' callbacks
// do not run, they do not rejoin, every client stays at the same
// generation, and the group stays Stable through two heartbeats of each
// other member. First a follower restarts, then the leader, which the
// coordinator tells it leads (and to skip the assignment, JoinGroup v9).
// Last, a member closes for good: once its session timed out the group
// rebalances and the other two take its partitions.
func TestGroupStaticMembership(t *testing.T) {
	t.Parallel()
	for _, bc := range []struct {
		name     string
		balancer kgo.GroupBalancer
	}{
		{"range", kgo.RangeBalancer()},
		{"cooperative-sticky", kgo.CooperativeStickyBalancer()},
	} {
		t.Run(bc.name, func(t *testing.T) {
			t.Parallel()
			testStaticMembership(t, bc.balancer)
		})
	}
}

// staticSession is the static members' session timeout: the time a
// restarting member has to come back, and the time before one that does
// not is removed.
const staticSession = 10 * time.Second

func testStaticMembership(t *testing.T, balancer kgo.GroupBalancer) {
	const (
		topic      = "static"
		groupID    = "static-group"
		partitions = 12
	)
	b := startBroker(t, fastGroups)
	ctx := testContext(t, 2*time.Minute)
	adm := kadm.NewClient(newClient(t, b))
	grpCreateTopic(ctx, t, adm, topic, partitions)

	type static struct {
		id string
		cl *grpClient
		w  *grpWatch
	}
	start := func(id string) *static {
		w := newGrpWatch(topic)
		opts := grpOpts(b, groupID, topic, kgo.InstanceID(id), kgo.ClientID(id),
			kgo.SessionTimeout(staticSession), kgo.Balancers(balancer))
		return &static{id: id, cl: newGrpClient(t, append(opts, w.opts()...)...), w: w}
	}
	members := []*static{start("member-0"), start("member-1"), start("member-2")}

	// settled waits until the group and every client agree: Stable, all
	// partitions assigned, each client's callbacks hold what the group
	// says it is assigned, one generation everywhere.
	settled := func(what string) (kadm.DescribedGroup, int32) {
		t.Helper()
		var d kadm.DescribedGroup
		var gen int32
		waitFor(t, 30*time.Second, what, func() error {
			var err error
			if d, err = grpSettled(ctx, adm, groupID, topic, len(members), partitions); err != nil {
				return err
			}
			for i, s := range members {
				m, ok := memberByInstance(d, s.id)
				if !ok {
					return fmt.Errorf("instance %s not in the group", s.id)
				}
				if got, _ := s.w.assigned(); !slices.Equal(got, grpAssigned(m, topic)) {
					return fmt.Errorf("%s: callbacks assigned %v, group says %v", s.id, got, grpAssigned(m, topic))
				}
				id, g := s.cl.GroupMetadata()
				if id != m.MemberID {
					return fmt.Errorf("%s: client has member id %s, group %s", s.id, id, m.MemberID)
				}
				if i == 0 {
					gen = g
				} else if g != gen {
					return fmt.Errorf("%s at generation %d, %s at %d", s.id, g, members[0].id, gen)
				}
			}
			return nil
		})
		return d, gen
	}
	settled("three static members settle")

	// restart closes member i and starts it again with its instance id.
	restart := func(i int) {
		t.Helper()
		d, gen := settled("group settled before the restart")
		old := members[i]
		oldMember, _ := memberByInstance(d, old.id)
		oldParts := grpAssigned(oldMember, topic)
		wasLeader := old.w.leader.Load()
		type seen struct {
			callbacks int
			joins     int64
		}
		before := map[string]seen{}
		for _, s := range members {
			_, n := s.w.assigned()
			before[s.id] = seen{n, s.w.joins.Load()}
		}

		old.cl.close()
		// No LeaveGroup: the group still has the old member id, and stays Stable.
		d, err := grpDescribe(ctx, adm, groupID)
		if err != nil {
			t.Fatal(err)
		}
		if m, ok := memberByInstance(d, old.id); d.State != "Stable" || len(d.Members) != 3 || !ok || m.MemberID != oldMember.MemberID {
			t.Fatalf("after closing static %s: group %s with %d members (%s has member id %q, was %q); want Stable, unchanged (kgo sends no LeaveGroup for a static member)",
				old.id, d.State, len(d.Members), old.id, m.MemberID, oldMember.MemberID)
		}

		back := start(old.id)
		members[i] = back
		waitFor(t, 20*time.Second, old.id+" gets its partitions back", func() error {
			if got, _ := back.w.assigned(); !slices.Equal(got, oldParts) {
				return fmt.Errorf("assigned %v, had %v", got, oldParts)
			}
			return nil
		})
		// A rebalance, had one started, shows in the next heartbeat
		// response of each other member and in the group's state.
		hb := map[string]int64{}
		for _, s := range members {
			hb[s.id] = s.w.heartbeats.Load()
		}
		waitFor(t, 10*time.Second, "two heartbeats of every other member", func() error {
			for j, s := range members {
				if j != i && s.w.heartbeats.Load() < hb[s.id]+2 {
					return fmt.Errorf("%s: %d heartbeats since", s.id, s.w.heartbeats.Load()-hb[s.id])
				}
			}
			return nil
		})

		d, err = grpDescribe(ctx, adm, groupID)
		if err != nil {
			t.Fatal(err)
		}
		if d.State != "Stable" || len(d.Members) != 3 {
			t.Errorf("after %s came back: group %s with %d members, want Stable with 3", old.id, d.State, len(d.Members))
		}
		newMember, _ := memberByInstance(d, old.id)
		if newMember.MemberID == oldMember.MemberID || newMember.MemberID == "" {
			t.Errorf("%s came back as member id %q, want a new id (was %q)", old.id, newMember.MemberID, oldMember.MemberID)
		}
		if got := grpAssigned(newMember, topic); !slices.Equal(got, oldParts) {
			t.Errorf("%s: the group assigns %v after the restart, want the old %v", old.id, got, oldParts)
		}
		for j, s := range members {
			id, g := s.cl.GroupMetadata()
			if g != gen {
				t.Errorf("%s: generation %d after %s came back, was %d: the group rebalanced", s.id, g, old.id, gen)
			}
			if j == i {
				if _, n := s.w.assigned(); n != 1 || s.w.joins.Load() != 1 {
					t.Errorf("%s after its restart: %d callbacks and %d joins, want 1 assignment in 1 join", s.id, n, s.w.joins.Load())
				}
				continue
			}
			if m, _ := memberByInstance(d, s.id); m.MemberID != id {
				t.Errorf("%s: member id %s in the group, %s in the client", s.id, m.MemberID, id)
			}
			if _, n := s.w.assigned(); n != before[s.id].callbacks || s.w.joins.Load() != before[s.id].joins {
				t.Errorf("%s: %d partition callbacks and %d joins since %s came back, want none: the group rebalanced",
					s.id, n-before[s.id].callbacks, s.w.joins.Load()-before[s.id].joins, old.id)
			}
		}
		if wasLeader && !back.w.leader.Load() {
			t.Errorf("%s led the group before its restart, but the coordinator did not name its new member id the leader", old.id)
		}
		t.Logf("restarted %s (leader %v): partitions %v kept at generation %d, member id %s -> %s",
			old.id, wasLeader, oldParts, gen, oldMember.MemberID, newMember.MemberID)
	}

	leader := slices.IndexFunc(members, func(s *static) bool { return s.w.leader.Load() })
	if leader < 0 {
		t.Fatal("no member logged that it leads the group")
	}
	restart((leader + 1) % len(members))
	restart(leader)

	// One that does not come back is removed when its session times out,
	// and the others take its partitions over.
	goneAt := (leader + 2) % len(members)
	gone := members[goneAt]
	_, gen := settled("group settled before a member goes for good")
	gone.cl.close()
	closed := time.Now()
	members = slices.Delete(members, goneAt, goneAt+1)
	_, after := settled("the other two hold every partition once " + gone.id + "'s session expired")
	if after <= gen {
		t.Errorf("generation %d after %s's session expired, was %d: no rebalance", after, gone.id, gen)
	}
	t.Logf("%s closed for good: the group rebalanced to 2 members %s later (session timeout %s)",
		gone.id, time.Since(closed).Round(time.Millisecond), staticSession)
}

// memberByInstance finds the member with a group.instance.id.
func memberByInstance(d kadm.DescribedGroup, instanceID string) (kadm.DescribedGroupMember, bool) {
	for _, m := range d.Members {
		if m.InstanceID != nil && *m.InstanceID == instanceID {
			return m, true
		}
	}
	return kadm.DescribedGroupMember{}, false
}

// rebalanceHeartbeat is the members' heartbeat interval in
// TestGroupRebalanceTime. A member hears of a rebalance at its next
// heartbeat, so the time to Stable is about the longest wait for the next
// heartbeat among the remaining members, plus a join and a sync round.
const rebalanceHeartbeat = time.Second

// joinClock records when its client last sent a JoinGroup
// (kgo.HookBrokerWrite).
type joinClock struct{ last atomic.Int64 } // Unix ns

func (j *joinClock) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == int16(kmsg.JoinGroup) && err == nil {
		j.last.Store(time.Now().UnixNano())
	}
}

// TestGroupRebalanceTime measures (and logs; it asserts no timing) the time
// from a member leaving a group of 10 (kgo's Close, which sends LeaveGroup)
// to the group being Stable again with the 9 others all assigned
// partitions of a 20-partition topic, as DescribeGroups shows it (polled
// every 5 ms). Five runs, each leaving at a random point of the members'
// heartbeat cycle; a new member joins between runs to make it 10 again.
// kgo's default balancer (cooperative-sticky). The figure splits into the
// wait until the last member rejoined (its next heartbeat told it of the
// rebalance: the client's heartbeat interval decides this part) and the
// join and sync rounds from that JoinGroup to Stable (the broker's part,
// with the leader's assignment).
func TestGroupRebalanceTime(t *testing.T) {
	if testing.Short() {
		t.Skip("five rebalances of a 10-member group: not with -short")
	}
	t.Parallel()
	const (
		topic      = "rebalance"
		groupID    = "rebalance-group"
		size       = 10
		partitions = 20
		runs       = 5
	)
	b := startBroker(t, fastGroups)
	ctx := testContext(t, 3*time.Minute)
	adm := kadm.NewClient(newClient(t, b))
	grpCreateTopic(ctx, t, adm, topic, partitions)

	type timed struct {
		cl    *grpClient
		joins *joinClock
	}
	next := 0
	join := func() timed {
		next++
		jc := &joinClock{}
		return timed{newGrpClient(t, grpOpts(b, groupID, topic, kgo.ClientID(fmt.Sprintf("m%d", next)),
			kgo.SessionTimeout(10*time.Second), kgo.HeartbeatInterval(rebalanceHeartbeat), kgo.WithHooks(jc))...), jc}
	}
	var members []timed
	for range size {
		members = append(members, join())
	}
	waitSettled := func(n int) {
		t.Helper()
		waitFor(t, time.Minute, fmt.Sprintf("%d members settle", n), func() error {
			_, err := grpSettled(ctx, adm, groupID, topic, n, partitions)
			return err
		})
	}
	waitSettled(size)

	// The members heartbeat in step: each restarts its heartbeat timer when
	// a rebalance ends. Leaving at a random point of that cycle measures
	// what a leave at any moment costs, not one fixed phase of it.
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, seed))
	t.Logf("seed %d", seed)
	var took, rejoined, rounds []time.Duration
	for run := range runs {
		time.Sleep(time.Duration(rng.Int64N(int64(rebalanceHeartbeat)))) // a random phase, not a wait for a condition
		victim := members[0]
		members = members[1:]
		start := time.Now()
		victim.cl.close()
		closed := time.Since(start)
		deadline := start.Add(time.Minute)
		for {
			_, err := grpSettled(ctx, adm, groupID, topic, size-1, partitions)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %d: group not Stable with %d members a minute after one left: %v", run, size-1, err)
			}
			time.Sleep(5 * time.Millisecond) // the measurement's resolution
		}
		stable := time.Now()
		var lastJoin time.Time
		for _, m := range members {
			if at := time.Unix(0, m.joins.last.Load()); at.After(lastJoin) {
				lastJoin = at
			}
		}
		if lastJoin.Before(start) {
			t.Fatalf("run %d: the group is Stable again but no member rejoined", run)
		}
		took = append(took, stable.Sub(start))
		rejoined = append(rejoined, lastJoin.Sub(start))
		rounds = append(rounds, stable.Sub(lastJoin))
		t.Logf("run %d: Stable with %d members %s after the leave: the last member rejoined after %s, Stable %s later (Close took %s)",
			run, size-1, stable.Sub(start).Round(time.Millisecond), lastJoin.Sub(start).Round(time.Millisecond),
			stable.Sub(lastJoin).Round(time.Millisecond), closed.Round(time.Millisecond))
		members = append(members, join())
		waitSettled(size)
	}
	median := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2].Round(time.Millisecond)
	}
	t.Logf("member leaving -> group Stable again, %d members, %d partitions, heartbeat %s: median %s over %d runs (min %s, max %s); medians of the parts: %s until the last member rejoined, %s from its JoinGroup to Stable",
		size, partitions, rebalanceHeartbeat, median(took), runs, slices.Min(took).Round(time.Millisecond),
		slices.Max(took).Round(time.Millisecond), median(rejoined), median(rounds))
}

// TestGroupAdmin covers the group admin APIs, against a live consumer
// group and a "simple" group (offsets committed without membership), with
// raw requests where the answer's exact fields matter: FindCoordinator with
// batched keys, OffsetFetch of an unknown group at every version,
// ListGroups (with state filters), DescribeGroups (several groups in one
// request), OffsetDelete of a subscribed and of an unsubscribed topic,
// DeleteGroups of a non-empty and of an empty group. Last the broker
// restarts: the deletions must hold, as records in __consumer_offsets.
func TestGroupAdmin(t *testing.T) {
	t.Parallel()
	const (
		subscribed = "adm-subscribed"
		other      = "adm-other"
		groupID    = "adm-group"
		simpleID   = "adm-simple"
	)
	rb := startGrpRestartable(t, false)
	b := rb.b
	ctx := testContext(t, 2*time.Minute)
	adm := kadm.NewClient(newClient(t, b))
	grpCreateTopic(ctx, t, adm, subscribed, 3)
	otherID := grpCreateTopic(ctx, t, adm, other, 2)
	w := dialWire(t, b)

	t.Run("FindCoordinatorBatched", func(t *testing.T) {
		// Three groups of three different __consumer_offsets partitions.
		var keys []string
		seen := map[int32]bool{}
		for i := 0; len(keys) < 3; i++ {
			k := fmt.Sprintf("batch-%d", i)
			if p := group.PartitionFor(k, b.cfg.OffsetsTopicNumPartitions); !seen[p] {
				seen[p] = true
				keys = append(keys, k)
			}
		}
		for _, v := range []int16{4, 5, 6} {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.SetVersion(v)
			req.CoordinatorType = coordinatorGroup
			req.CoordinatorKeys = keys
			resp := w.mustRoundTrip(req).(*kmsg.FindCoordinatorResponse)
			if len(resp.Coordinators) != len(keys) {
				t.Fatalf("v%d: %d coordinators for %d keys", v, len(resp.Coordinators), len(keys))
			}
			for i, c := range resp.Coordinators {
				addr := net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port)))
				if c.Key != keys[i] || c.ErrorCode != 0 || c.NodeID != b.cfg.NodeID || addr != b.Addrs()[0] {
					t.Errorf("v%d: coordinator %d: key %q, error %d (%s), node %d at %s; want key %q, no error, node %d at %s",
						v, i, c.Key, c.ErrorCode, protocol.ErrorCode(c.ErrorCode), c.NodeID, addr, keys[i], b.cfg.NodeID, b.Addrs()[0])
				}
			}
		}
		// kadm batches the same way.
		for _, r := range adm.FindGroupCoordinators(ctx, keys...) {
			if r.Err != nil || r.NodeID != b.cfg.NodeID {
				t.Errorf("kadm FindGroupCoordinators %s: node %d, err %v", r.Name, r.NodeID, r.Err)
			}
		}
	})

	t.Run("OffsetFetchUnknownGroup", func(t *testing.T) {
		const unknown = "nobody-committed-here"
		for v := int16(1); v <= 10; v++ {
			req := kmsg.NewPtrOffsetFetchRequest()
			req.SetVersion(v)
			if v < 8 {
				rt := kmsg.NewOffsetFetchRequestTopic()
				rt.Topic, rt.Partitions = other, []int32{0, 1}
				req.Group, req.Topics = unknown, []kmsg.OffsetFetchRequestTopic{rt}
			} else {
				rt := kmsg.NewOffsetFetchRequestGroupTopic()
				rt.Topic, rt.TopicID, rt.Partitions = other, otherID, []int32{0, 1}
				rg := kmsg.NewOffsetFetchRequestGroup()
				rg.Group, rg.Topics = unknown, []kmsg.OffsetFetchRequestGroupTopic{rt}
				req.Groups = []kmsg.OffsetFetchRequestGroup{rg}
			}
			var resp *kmsg.OffsetFetchResponse
			// The coordinator may still be loading right after
			// __consumer_offsets is created; clients retry then.
			waitFor(t, 30*time.Second, fmt.Sprintf("OffsetFetch v%d answered", v), func() error {
				resp = w.mustRoundTrip(req).(*kmsg.OffsetFetchResponse)
				code := resp.ErrorCode
				if v >= 8 && len(resp.Groups) == 1 {
					code = resp.Groups[0].ErrorCode
				}
				if c := protocol.ErrorCode(code); c == protocol.NotCoordinator || c == protocol.CoordinatorLoadInProgress {
					return fmt.Errorf("error %s", c)
				}
				return nil
			})
			code, topics := resp.ErrorCode, resp.Topics
			if v >= 8 {
				if len(resp.Groups) != 1 || resp.Groups[0].Group != unknown {
					t.Fatalf("v%d: %d groups in the response, want %s", v, len(resp.Groups), unknown)
				}
				code = resp.Groups[0].ErrorCode
				topics = nil
				for _, gt := range resp.Groups[0].Topics {
					rt := kmsg.NewOffsetFetchResponseTopic()
					rt.Topic = gt.Topic
					for _, p := range gt.Partitions {
						rt.Partitions = append(rt.Partitions, kmsg.OffsetFetchResponseTopicPartition{
							Partition: p.Partition, Offset: p.Offset, ErrorCode: p.ErrorCode})
					}
					topics = append(topics, rt)
				}
			}
			checkCode(t, fmt.Sprintf("v%d: group error", v), code, protocol.None)
			if len(topics) != 1 || len(topics[0].Partitions) != 2 {
				t.Fatalf("v%d: %+v, want one topic with 2 partitions", v, topics)
			}
			for _, p := range topics[0].Partitions {
				checkCode(t, fmt.Sprintf("v%d: partition %d", v, p.Partition), p.ErrorCode, protocol.None)
				if p.Offset != -1 {
					t.Errorf("v%d: partition %d: offset %d, want -1", v, p.Partition, p.Offset)
				}
			}
		}
		got, err := adm.FetchOffsets(ctx, unknown)
		if err != nil || len(got) != 0 {
			t.Errorf("kadm FetchOffsets of an unknown group: %v, err %v; want nothing, no error", got, err)
		}
	})

	// A live group of two range consumers of subscribed, with commits for
	// both topics.
	var consumers []*grpClient
	clientIDs := []string{"adm-0", "adm-1"}
	for _, id := range clientIDs {
		consumers = append(consumers, newGrpClient(t, grpOpts(b, groupID, subscribed,
			kgo.ClientID(id), kgo.Balancers(kgo.RangeBalancer()), kgo.DisableAutoCommit())...))
	}
	waitFor(t, 30*time.Second, "the group settles", func() error {
		_, err := grpSettled(ctx, adm, groupID, subscribed, 2, 3)
		return err
	})
	commits := map[string]map[int32]kgo.EpochOffset{
		subscribed: {0: {Epoch: -1, Offset: 10}, 1: {Epoch: -1, Offset: 11}, 2: {Epoch: -1, Offset: 12}},
		other:      {0: {Epoch: -1, Offset: 5}, 1: {Epoch: -1, Offset: 6}},
	}
	waitFor(t, 30*time.Second, "a member commits", func() error {
		var cerr error
		consumers[0].CommitOffsetsSync(ctx, commits, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				cerr = err
				return
			}
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					if rp.ErrorCode != 0 {
						cerr = fmt.Errorf("%s/%d: %w", rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
					}
				}
			}
		})
		return cerr
	})
	simple := kadm.Offsets{}
	simple.Add(kadm.Offset{Topic: subscribed, Partition: 0, At: 3, LeaderEpoch: -1})
	simple.Add(kadm.Offset{Topic: other, Partition: 0, At: 4, LeaderEpoch: -1})
	simple.Add(kadm.Offset{Topic: other, Partition: 1, At: 5, LeaderEpoch: -1})
	if r, err := adm.CommitOffsets(ctx, simpleID, simple); err != nil || r.Error() != nil {
		t.Fatalf("commit offsets of %s without membership: %v %v", simpleID, err, r.Error())
	}
	fetchCommitted := func(groupID string) map[string]map[int32]int64 {
		t.Helper()
		os, err := adm.FetchOffsets(ctx, groupID)
		if err != nil {
			t.Fatalf("fetch offsets: %v", err)
		}
		out := map[string]map[int32]int64{}
		os.Each(func(o kadm.OffsetResponse) {
			if o.Err != nil {
				t.Errorf("fetch offsets %s/%d: %v", o.Topic, o.Partition, o.Err)
			}
			if out[o.Topic] == nil {
				out[o.Topic] = map[int32]int64{}
			}
			out[o.Topic][o.Partition] = o.At
		})
		return out
	}

	t.Run("ListAndDescribe", func(t *testing.T) {
		lg, err := adm.ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if g, ok := lg[groupID]; !ok || g.State != "Stable" || g.ProtocolType != "consumer" || g.Coordinator != b.cfg.NodeID {
			t.Errorf("ListGroups: %+v (listed %v); want %s Stable, protocol type consumer, coordinator %d", g, ok, groupID, b.cfg.NodeID)
		}
		if g, ok := lg[simpleID]; !ok || g.State != "Empty" || g.ProtocolType != "" {
			t.Errorf("ListGroups: %+v (listed %v); want %s Empty, no protocol type", g, ok, simpleID)
		}
		for _, f := range []struct {
			states []string
			want   []string
		}{
			{[]string{"Stable"}, []string{groupID}},
			{[]string{"Empty"}, []string{simpleID}},
			{[]string{"PreparingRebalance", "CompletingRebalance", "Dead"}, nil},
		} {
			lg, err := adm.ListGroups(ctx, f.states...)
			if err != nil {
				t.Fatal(err)
			}
			if got := lg.Groups(); !slices.Equal(got, f.want) {
				t.Errorf("ListGroups in states %v: %v, want %v", f.states, got, f.want)
			}
		}
		d, err := grpDescribe(ctx, adm, groupID)
		if err != nil || d.Err != nil {
			t.Fatalf("describe: %v %v", err, d.Err)
		}
		if d.State != "Stable" || d.ProtocolType != "consumer" || d.Protocol != "range" || len(d.Members) != 2 {
			t.Fatalf("DescribeGroups: %s, protocol type %q, protocol %q, %d members; want Stable, consumer, range, 2",
				d.State, d.ProtocolType, d.Protocol, len(d.Members))
		}
		for ci, c := range consumers {
			id, _ := c.GroupMetadata()
			i := slices.IndexFunc(d.Members, func(m kadm.DescribedGroupMember) bool { return m.MemberID == id })
			if i < 0 {
				t.Errorf("member %s of the client is not described", id)
				continue
			}
			m := d.Members[i]
			if m.ClientID != clientIDs[ci] || m.ClientHost != "/127.0.0.1" {
				t.Errorf("member %s: client id %q host %q, want %q /127.0.0.1", id, m.ClientID, m.ClientHost, clientIDs[ci])
			}
			if join, ok := m.Join.AsConsumer(); !ok || !slices.Equal(join.Topics, []string{subscribed}) {
				t.Errorf("member %s: subscription %+v, want [%s]", id, join, subscribed)
			}
		}

		// Several groups in one request, of different coordinator
		// partitions, one unknown.
		const unknown = "adm-unknown"
		ds, err := adm.DescribeGroups(ctx, groupID, simpleID, unknown)
		if err != nil {
			t.Fatal(err)
		}
		if d := ds[groupID]; d.State != "Stable" || len(d.Members) != 2 {
			t.Errorf("DescribeGroups of three: %s is %s with %d members, want Stable with 2", groupID, d.State, len(d.Members))
		}
		if d := ds[simpleID]; d.Err != nil || d.State != "Empty" || d.ProtocolType != "" || len(d.Members) != 0 {
			t.Errorf("DescribeGroups of three: %s is %s, protocol type %q, %d members, err %v; want Empty, none, 0, no error",
				simpleID, d.State, d.ProtocolType, len(d.Members), d.Err)
		}
		if d := ds[unknown]; d.State != "Dead" && !errors.Is(d.Err, kerr.GroupIDNotFound) {
			t.Errorf("DescribeGroups of three: %s is %s, err %v; want Dead / GROUP_ID_NOT_FOUND", unknown, d.State, d.Err)
		}
		// OffsetFetch v8+ of several groups in one request.
		for g, want := range map[string]int{groupID: 5, simpleID: 3, unknown: 0} {
			r := adm.FetchManyOffsets(ctx, groupID, simpleID, unknown)[g]
			n := 0
			r.Fetched.Each(func(kadm.OffsetResponse) { n++ })
			if r.Err != nil || n != want {
				t.Errorf("FetchManyOffsets: %s has %d offsets, err %v; want %d", g, n, r.Err, want)
			}
		}
	})

	t.Run("OffsetDeleteSubscribed", func(t *testing.T) {
		r, err := adm.DeleteOffsets(ctx, groupID, kadm.TopicsSet{subscribed: {0: {}}})
		if err != nil {
			t.Fatal(err)
		}
		if perr, ok := r.Lookup(subscribed, 0); !ok || !errors.Is(perr, kerr.GroupSubscribedToTopic) {
			t.Errorf("OffsetDelete of a subscribed topic: %v (answered %v), want GROUP_SUBSCRIBED_TO_TOPIC", perr, ok)
		}
		// A topic no member subscribes to can go.
		r, err = adm.DeleteOffsets(ctx, groupID, kadm.TopicsSet{other: {0: {}, 1: {}}})
		if err != nil {
			t.Fatal(err)
		}
		for p := range int32(2) {
			if perr, ok := r.Lookup(other, p); !ok || perr != nil {
				t.Errorf("OffsetDelete of %s/%d, not subscribed: %v (answered %v), want success", other, p, perr, ok)
			}
		}
		got := fetchCommitted(groupID)
		if got[subscribed][0] != 10 || len(got[subscribed]) != 3 || got[other] != nil {
			t.Errorf("committed after the deletes: %v; want %s untouched (0:10 1:11 2:12), nothing for %s", got, subscribed, other)
		}
		// A group without members subscribes to nothing.
		r, err = adm.DeleteOffsets(ctx, simpleID, kadm.TopicsSet{other: {0: {}}})
		if err != nil {
			t.Fatal(err)
		}
		if perr, ok := r.Lookup(other, 0); !ok || perr != nil {
			t.Errorf("OffsetDelete of %s/0 in %s: %v (answered %v), want success", other, simpleID, perr, ok)
		}
		if got := fetchCommitted(simpleID); len(got[other]) != 1 || got[other][1] != 5 || got[subscribed][0] != 3 {
			t.Errorf("%s after the delete: %v; want %s 0:3 and %s 1:5", simpleID, got, subscribed, other)
		}
	})

	t.Run("DeleteGroups", func(t *testing.T) {
		r, err := adm.DeleteGroups(ctx, groupID)
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(r[groupID].Err, kerr.NonEmptyGroup) {
			t.Fatalf("DeleteGroups of a group with members: %v, want NON_EMPTY_GROUP", r[groupID].Err)
		}
		for _, c := range consumers {
			c.close() // leaves
		}
		waitFor(t, 30*time.Second, "the group is empty", func() error {
			d, err := grpDescribe(ctx, adm, groupID)
			if err == nil && (d.State != "Empty" || len(d.Members) != 0) {
				err = fmt.Errorf("%s with %d members", d.State, len(d.Members))
			}
			return err
		})
		if got := fetchCommitted(groupID); len(got[subscribed]) != 3 {
			t.Fatalf("an empty group keeps its offsets: %v", got)
		}
		lg, err := adm.ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if g := lg[groupID]; g.State != "Empty" {
			t.Errorf("ListGroups: %s is %q, want Empty", groupID, g.State)
		}

		r, err = adm.DeleteGroups(ctx, groupID)
		if err != nil || r[groupID].Err != nil {
			t.Fatalf("DeleteGroups of an empty group: %v %v, want success", err, r[groupID].Err)
		}
		if got := fetchCommitted(groupID); len(got) != 0 {
			t.Errorf("offsets after DeleteGroups: %v, want none", got)
		}
		d, err := grpDescribe(ctx, adm, groupID)
		if err != nil {
			t.Fatal(err)
		}
		if d.State != "Dead" && !errors.Is(d.Err, kerr.GroupIDNotFound) {
			t.Errorf("DescribeGroups after DeleteGroups: %s, err %v; want Dead / GROUP_ID_NOT_FOUND", d.State, d.Err)
		}
		if lg, err := adm.ListGroups(ctx); err != nil || lg[groupID].Group != "" {
			t.Errorf("ListGroups after DeleteGroups: %+v, err %v; want the group gone", lg[groupID], err)
		}
		r, err = adm.DeleteGroups(ctx, groupID)
		if err != nil || !errors.Is(r[groupID].Err, kerr.GroupIDNotFound) {
			t.Errorf("DeleteGroups again: %v %v, want GROUP_ID_NOT_FOUND", err, r[groupID].Err)
		}
	})

	t.Run("AfterRestart", func(t *testing.T) {
		took := rb.restart(t)
		t.Logf("broker restarted in %s", took.Round(time.Millisecond))
		adm = kadm.NewClient(newClient(t, rb.b))
		var lg kadm.ListedGroups
		waitFor(t, 30*time.Second, "the groups are loaded", func() error {
			var err error
			lg, err = adm.ListGroups(ctx)
			if err == nil && lg[simpleID].Group == "" {
				err = fmt.Errorf("%s not listed: %v", simpleID, lg.Groups())
			}
			return err
		})
		if g, ok := lg[groupID]; ok {
			t.Errorf("the deleted group is back after the restart: %+v", g)
		}
		if got := fetchCommitted(groupID); len(got) != 0 {
			t.Errorf("the deleted group's offsets are back after the restart: %v", got)
		}
		if got := fetchCommitted(simpleID); len(got[other]) != 1 || got[other][1] != 5 || got[subscribed][0] != 3 {
			t.Errorf("%s after the restart: %v; want %s 0:3 and %s 1:5 (%s 0 deleted)", simpleID, got, subscribed, other, other)
		}
	})
}

// TestGroupDriversStopAtClose: a metadata change applied while the broker
// closes must not start group coordinators again. Close stops the group
// drivers (groupDrivers.stopAll) and then waits for every tracked
// goroutine; a syncPartitions still running then, from a request handler
// or the metadata watcher, calls groupDrivers.sync, which finds no drivers
// and starts one per __consumer_offsets partition again. Those wait for a
// stop that never comes, and Close hangs in b.wg.Wait. The test makes the
// interleaving certain by holding syncMu: a CreateTopics request has
// written its topic to the registry and waits to apply it while Close
// stops the drivers; then the apply goes ahead.
func TestGroupDriversStopAtClose(t *testing.T) {
	t.Parallel()
	// Not t.TempDir: if Close hangs, the broker keeps its files open.
	dir, err := os.MkdirTemp("", "gregor-group-close-")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Listeners = []string{"PLAINTEXT://127.0.0.1:0"}
	cfg.LogDirs = []string{dir}
	cfg.AdminListener = ""
	cfg.EtcdClientAddr, cfg.EtcdPeerAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.OffsetsTopicNumPartitions = 5
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t, time.Minute)
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	closing, hung := false, false
	t.Cleanup(func() {
		if hung {
			t.Logf("the hung broker's files stay in %s", dir)
			return
		}
		if !closing {
			closed <- b.Close()
		}
		if err := <-closed; err != nil {
			t.Errorf("close broker: %v", err)
		}
		os.RemoveAll(dir)
	})

	// __consumer_offsets and its coordinators.
	adm := kadm.NewClient(newClient(t, b))
	if r := adm.FindGroupCoordinators(ctx, "g"); r["g"].Err != nil {
		t.Fatalf("find coordinator: %v", r["g"].Err)
	}
	waitFor(t, 30*time.Second, "group drivers started", func() error {
		if n := len(b.groups.all()); n != int(cfg.OffsetsTopicNumPartitions) {
			return fmt.Errorf("%d drivers", n)
		}
		return nil
	})

	// A CreateTopics request writes its topic to the registry and then
	// waits for syncMu to apply it.
	b.syncMu.Lock()
	locked := true
	defer func() {
		if locked {
			b.syncMu.Unlock()
		}
	}()
	w := dialWire(t, b)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "created-while-closing", 1, 1
	req.Topics = append(req.Topics, rt)
	go w.roundTrip(req) // its connection is closed under it; the answer does not matter
	waitFor(t, 30*time.Second, "the topic is in the registry", func() error {
		if b.cluster.Snapshot().Topics[rt.Topic] == nil {
			return errors.New("not yet")
		}
		return nil
	})

	closing = true
	go func() { closed <- b.Close() }()
	waitFor(t, 30*time.Second, "Close stops the group drivers", func() error {
		if n := len(b.groups.all()); n != 0 {
			return fmt.Errorf("%d drivers", n)
		}
		return nil
	})
	b.syncMu.Unlock()
	locked = false

	select {
	case err := <-closed:
		closed <- err // for the cleanup
	case <-time.After(20 * time.Second):
		hung = true
		t.Errorf("Close has not returned 20 s after a metadata change was applied during it: %d group drivers were started after groupDrivers.stopAll and keep b.wg.Wait waiting",
			len(b.groups.all()))
	}
}

// TestGroupRequestAbandonedAtClose: once groupDrivers.ask has handed a
// request to its coordinator's driver, the driver owns it (Step sets its
// version and keeps parts of it). When the broker's context ends first
// (Close), ask answers with group.ErrorResponse(req, ...), which reads the
// request the driver is about to step or is stepping: a data race. The
// test makes the interleaving certain: the driver is held (an inspect
// request that blocks) while a JoinGroup that will park waits in its
// queue; Close is held after cancelling the context (the test holds the
// connections' lock); then the driver steps the JoinGroup that the handler
// already answered. The race detector reports it; without -race the test
// has nothing to see and passes. Not parallel: the race detector fails
// every test running when it reports, and this one runs alone.
func TestGroupRequestAbandonedAtClose(t *testing.T) {
	const groupID = "abandoned"
	b, err := New(func() Config {
		cfg := DefaultConfig()
		cfg.Listeners = []string{"PLAINTEXT://127.0.0.1:0"}
		cfg.LogDirs = []string{t.TempDir()}
		cfg.AdminListener = ""
		cfg.EtcdClientAddr, cfg.EtcdPeerAddr = "127.0.0.1:0", "127.0.0.1:0"
		cfg.OffsetsTopicNumPartitions = 5
		// The JoinGroup parks for the initial rebalance delay: no answer
		// comes from the driver while the test runs.
		cfg.Groups.InitialRebalanceDelay = 50 * time.Second
		return cfg
	}())
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t, time.Minute)
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	closing := false
	t.Cleanup(func() {
		if !closing {
			closed <- b.Close()
		}
		select {
		case err := <-closed:
			if err != nil {
				t.Errorf("close broker: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("Close has not returned after 30 s")
		}
	})

	w := dialWire(t, b)
	join := func(memberID string) *kmsg.JoinGroupRequest {
		req := kmsg.NewPtrJoinGroupRequest()
		req.SetVersion(5)
		req.Group, req.MemberID, req.ProtocolType = groupID, memberID, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 60000
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name = "range"
		p.Metadata = (&kmsg.ConsumerMemberMetadata{Topics: []string{"t"}}).AppendTo(nil)
		req.Protocols = []kmsg.JoinGroupRequestProtocol{p}
		return req
	}
	var memberID string
	waitFor(t, 30*time.Second, "a member id from the coordinator", func() error {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.SetVersion(4)
		fc.CoordinatorKeys = []string{groupID}
		w.mustRoundTrip(fc)
		resp := w.mustRoundTrip(join("")).(*kmsg.JoinGroupResponse)
		if protocol.ErrorCode(resp.ErrorCode) != protocol.MemberIDRequired {
			return fmt.Errorf("JoinGroup: error %s", protocol.ErrorCode(resp.ErrorCode))
		}
		memberID = resp.MemberID
		return nil
	})
	d := b.groups.driver(b.groupPartition(groupID))
	if d == nil {
		t.Fatal("no driver for the group's partition")
	}

	// Hold the driver.
	entered, release := make(chan struct{}), make(chan struct{})
	d.reqs <- groupRequest{inspect: func(*group.Coordinator) {
		close(entered)
		<-release
	}}
	<-entered
	// The JoinGroup with the member id waits in the driver's queue.
	w2 := dialWire(t, b)
	go w2.roundTrip(join(memberID)) // answered by the handler at Close; the answer does not matter
	waitFor(t, 30*time.Second, "the JoinGroup queued for the driver", func() error {
		if n := len(d.reqs); n != 1 {
			return fmt.Errorf("%d requests queued", n)
		}
		return nil
	})

	// Close cancels the broker's context and then waits for the
	// connections' lock, which the test holds: the handler answers the
	// JoinGroup itself, and the driver is still running.
	b.conns.Lock()
	closing = true
	go func() { closed <- b.Close() }()
	waitFor(t, 30*time.Second, "Close cancels the broker's context", func() error {
		return cmpErr(b.ctx.Err() != nil, "not yet")
	})
	close(release)
	// The driver steps the JoinGroup; a second inspect runs after it.
	stepped := make(chan struct{})
	d.reqs <- groupRequest{inspect: func(*group.Coordinator) { close(stepped) }}
	<-stepped
	b.conns.Unlock()
}

// cmpErr is nil when ok, else an error saying what.
func cmpErr(ok bool, what string) error {
	if ok {
		return nil
	}
	return errors.New(what)
}

// TestGroupMissingDriverCode checks the answer for a group whose
// coordinator partition has no driver: COORDINATOR_LOAD_IN_PROGRESS while
// this broker leads the partition (its driver is starting), NOT_COORDINATOR
// for a partition it does not lead.
func TestGroupMissingDriverCode(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	ctx := testContext(t, time.Minute)
	if got := b.groups.missingDriverCode(0); got != protocol.NotCoordinator {
		t.Errorf("before the offsets topic exists: %v, want NOT_COORDINATOR", got)
	}
	if err := b.ensureOffsetsTopic(ctx); err != nil {
		t.Fatal(err)
	}
	if got := b.groups.missingDriverCode(0); got != protocol.CoordinatorLoadInProgress {
		t.Errorf("partition 0, led here: %v, want COORDINATOR_LOAD_IN_PROGRESS", got)
	}
	if got := b.groups.missingDriverCode(1 << 20); got != protocol.NotCoordinator {
		t.Errorf("a partition that does not exist: %v, want NOT_COORDINATOR", got)
	}
}
