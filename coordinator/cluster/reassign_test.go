package cluster

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// rs is a partition state for the reassignment tests: leader, ISR,
// replicas, adding and removing replicas, leader epoch 3 and partition
// epoch 7.
func rs(leader int32, isr, replicas, adding, removing []int32) PartitionState {
	return PartitionState{Leader: leader, LeaderEpoch: 3, PartitionEpoch: 7, ISR: isr, Replicas: replicas,
		AddingReplicas: adding, RemovingReplicas: removing}
}

// bumped is st with its leader epoch raised by le and its partition epoch
// by one.
func bumped(st PartitionState, le int32) PartitionState {
	st.LeaderEpoch += le
	st.PartitionEpoch++
	return st
}

func ids(v ...int32) []int32 { return v }

// reassignView is a view with live brokers (negative: shutting down),
// fenced brokers and topic "t" holding st, optionally with unclean leader
// election on for the topic.
func reassignView(live, fenced []int32, unclean bool, st PartitionState) *Metadata {
	md := mdWith(live, st)
	for _, id := range fenced {
		md.Fenced = append(md.Fenced, BrokerInfo{NodeID: id})
	}
	if unclean {
		md.Topics["t"].Configs = map[string]string{"unclean.leader.election.enable": "true"}
	}
	return md
}

func TestStartReassignment(t *testing.T) {
	for _, c := range []struct {
		what    string
		live    []int32
		unclean bool
		in      PartitionState
		target  []int32
		keepRF  bool   // AllowReplicationFactorChange false
		want    any    // PartitionState, or the error wanted (errors.Is)
		msg     string // the error's text, when want is an error
	}{
		{what: "move [1,2] to [2,3]", live: ids(1, 2, 3), in: rs(1, ids(1, 2), ids(1, 2), nil, nil), target: ids(2, 3),
			want: bumped(rs(1, ids(1, 2), ids(2, 3, 1), ids(3), ids(1)), 0)},
		{what: "move to brokers all new", live: ids(1, 2, 3, 4), in: rs(2, ids(2, 1), ids(1, 2), nil, nil), target: ids(4, 3),
			want: bumped(rs(2, ids(2, 1), ids(4, 3, 1, 2), ids(3, 4), ids(1, 2)), 0)},
		{what: "grow [1] to [1,2]", live: ids(1, 2), in: rs(1, ids(1), ids(1), nil, nil), target: ids(1, 2),
			want: bumped(rs(1, ids(1), ids(1, 2), ids(2), nil), 0)},
		{what: "the current replicas, nothing in flight: no change", live: ids(1, 2), in: rs(1, ids(1, 2), ids(1, 2), nil, nil),
			target: ids(1, 2), want: rs(1, ids(1, 2), ids(1, 2), nil, nil)},
		{what: "the target in flight again: no change", live: ids(1, 2, 3), in: rs(1, ids(1, 2), ids(2, 3, 1), ids(3), ids(1)),
			target: ids(2, 3), want: rs(1, ids(1, 2), ids(2, 3, 1), ids(3), ids(1))},
		{what: "a new order: done at once, the leader stays", live: ids(1, 2), in: rs(1, ids(1, 2), ids(1, 2), nil, nil),
			target: ids(2, 1), want: bumped(rs(1, ids(1, 2), ids(2, 1), nil, nil), 0)},
		{what: "shrink, the rest in sync: done at once, the removed leader replaced", live: ids(1, 2, 3),
			in: rs(3, ids(3, 1, 2), ids(1, 2, 3), nil, nil), target: ids(1, 2), want: bumped(rs(1, ids(1, 2), ids(1, 2), nil, nil), 1)},
		{what: "shrink, a kept replica out of sync: in flight", live: ids(1, 2, 3), in: rs(1, ids(1, 3), ids(1, 2, 3), nil, nil),
			target: ids(1, 2), want: bumped(rs(1, ids(1, 3), ids(1, 2, 3), nil, ids(3)), 0)},
		{what: "replace: starts from the original replicas, the dropped adding replica leaves the ISR", live: ids(1, 2, 3, 4),
			in: rs(1, ids(1, 2, 3), ids(2, 3, 1), ids(3), ids(1)), target: ids(2, 4),
			want: bumped(rs(1, ids(1, 2), ids(2, 4, 1), ids(4), ids(1)), 0)},
		{what: "replace: a dropped adding replica that led is replaced", live: ids(1, 2, 3, 4),
			in: rs(3, ids(3, 1, 2), ids(2, 3, 1), ids(3), ids(1)), target: ids(2, 4),
			want: bumped(rs(2, ids(1, 2), ids(2, 4, 1), ids(4), ids(1)), 1)},
		{what: "replace: keeps an adding replica of both targets", live: ids(1, 2, 3, 4),
			in: rs(1, ids(1, 3), ids(3, 4, 1), ids(3, 4), ids(1)), target: ids(3, 2),
			want: bumped(rs(1, ids(1, 3), ids(3, 2, 1), ids(2, 3), ids(1)), 0)},
		{what: "replace: only dropped replicas in sync", live: ids(1, 2, 3, 4),
			in: rs(3, ids(3), ids(2, 3, 1), ids(3), ids(1)), target: ids(2, 4), want: ErrInvalidAssignment,
			msg: "Unable to revert partition assignment for t:0 because it would require an unclean leader election."},
		{what: "replace: only dropped replicas in sync, unclean election on", live: ids(1, 2, 3, 4), unclean: true,
			in: rs(3, ids(3), ids(2, 3, 1), ids(3), ids(1)), target: ids(2, 4),
			want: bumped(rs(2, ids(2), ids(2, 4, 1), ids(4), ids(1)), 1)},
		{what: "a fenced broker may be a target", live: ids(1, 2), in: rs(1, ids(1, 2), ids(1, 2), nil, nil), target: ids(2, 5),
			want: bumped(rs(1, ids(1, 2), ids(2, 5, 1), ids(5), ids(1)), 0)},
		{what: "empty target", live: ids(1, 2), in: rs(1, ids(1), ids(1), nil, nil), target: ids(), want: ErrInvalidAssignment,
			msg: "The manual partition assignment includes an empty replica list."},
		{what: "a broker twice", live: ids(1, 2), in: rs(1, ids(1), ids(1), nil, nil), target: ids(2, 1, 2), want: ErrInvalidAssignment,
			msg: "The manual partition assignment includes the broker 2 more than once."},
		{what: "an unregistered broker", live: ids(1, 2), in: rs(1, ids(1), ids(1), nil, nil), target: ids(9, 1, 7),
			want: ErrInvalidAssignment, msg: "The manual partition assignment includes broker 7, but no such broker is registered."},
		{what: "a negative id", live: ids(1, 2), in: rs(1, ids(1), ids(1), nil, nil), target: ids(1, -1),
			want: ErrInvalidAssignment, msg: "The manual partition assignment includes broker -1, but no such broker is registered."},
		{what: "replication factor change refused", live: ids(1, 2, 3), in: rs(1, ids(1, 2), ids(1, 2), nil, nil),
			target: ids(1, 2, 3), keepRF: true, want: ErrInvalidReplicationFactor, msg: "The replication factor is changed from 2 to 3"},
		{what: "replication factor kept: allowed", live: ids(1, 2, 3), in: rs(1, ids(1, 2), ids(1, 2), nil, nil),
			target: ids(3, 1), keepRF: true, want: bumped(rs(1, ids(1, 2), ids(3, 1, 2), ids(3), ids(2)), 0)},
		{what: "in flight, the factor is the target's", live: ids(1, 2, 3), in: rs(1, ids(1), ids(2, 3, 1), ids(2, 3), ids(1)),
			target: ids(3), keepRF: true, want: ErrInvalidReplicationFactor, msg: "The replication factor is changed from 2 to 1"},
		{what: "an invalid assignment is reported before the factor", live: ids(1, 2), in: rs(1, ids(1), ids(1), nil, nil),
			target: ids(1, 1), keepRF: true, want: ErrInvalidAssignment},
	} {
		md := reassignView(c.live, ids(5), c.unclean, c.in)
		got, err := startReassignment(md, "t", 0, c.in, c.target, !c.keepRF, false)
		if wantErr, ok := c.want.(error); ok {
			if !errors.Is(err, wantErr) || (c.msg != "" && err.Error() != c.msg) {
				t.Errorf("%s: %v, want %v (%q)", c.what, err, wantErr, c.msg)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.what, err)
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s:\n got  %+v\n want %+v", c.what, got, c.want)
		}
	}
}

func TestCancelReassignment(t *testing.T) {
	for _, c := range []struct {
		what    string
		live    []int32
		unclean bool
		in      PartitionState
		want    any
	}{
		{"nothing in flight", ids(1, 2), false, rs(1, ids(1, 2), ids(1, 2), nil, nil), ErrNoReassignment},
		// The original replicas in the order they have in the
		// reassignment's replica list, as Kafka reverts them.
		{"adding replica not in sync yet", ids(1, 2, 3), false, rs(1, ids(1, 2), ids(2, 3, 1), ids(3), ids(1)),
			bumped(rs(1, ids(1, 2), ids(2, 1), nil, nil), 0)},
		{"adding replica in sync leaves the ISR", ids(1, 2, 3), false, rs(1, ids(1, 2, 3), ids(2, 3, 1), ids(3), ids(1)),
			bumped(rs(1, ids(1, 2), ids(2, 1), nil, nil), 0)},
		{"adding replica led: the first eligible remaining ISR member leads", ids(2, 3), false,
			rs(3, ids(3, 1, 2), ids(3, 4, 1, 2), ids(3, 4), ids(1, 2)), bumped(rs(2, ids(1, 2), ids(1, 2), nil, nil), 1)},
		{"adding replica led, no eligible one left: leaderless", ids(3), false,
			rs(3, ids(3, 1), ids(3, 1), ids(3), nil), bumped(rs(-1, ids(1), ids(1), nil, nil), 1)},
		{"only adding replicas in sync", ids(1, 2, 3), false, rs(3, ids(3), ids(2, 3, 1), ids(3), ids(1)), ErrInvalidAssignment},
		{"only adding replicas in sync, unclean election on", ids(1, 2, 3), true, rs(3, ids(3), ids(2, 3, 1), ids(3), ids(1)),
			bumped(rs(2, ids(2), ids(2, 1), nil, nil), 1)},
		{"a shrink in flight", ids(1, 2, 3), false, rs(1, ids(1, 2), ids(1, 2, 3), nil, ids(3)),
			bumped(rs(1, ids(1, 2), ids(1, 2, 3), nil, nil), 0)},
	} {
		md := reassignView(c.live, nil, c.unclean, c.in)
		got, err := cancelReassignment(md, "t", 0, c.in, false)
		if wantErr, ok := c.want.(error); ok {
			if !errors.Is(err, wantErr) {
				t.Errorf("%s: %v, want %v", c.what, err, wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.what, err)
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s:\n got  %+v\n want %+v", c.what, got, c.want)
		}
	}
	if err := (&reasonError{err: ErrNoReassignment, msg: "x"}); !errors.Is(err, ErrNoReassignment) {
		t.Fatal("reasonError does not unwrap")
	}
}

func TestCompleteReassignment(t *testing.T) {
	for _, c := range []struct {
		what string
		live []int32
		in   PartitionState
		want *PartitionState // nil: not yet
	}{
		{"nothing in flight", ids(1, 2), rs(1, ids(1, 2), ids(1, 2), nil, nil), nil},
		{"the adding replica not in sync", ids(1, 2, 3), rs(1, ids(1, 2), ids(2, 3, 1), ids(3), ids(1)), nil},
		{"all in sync, the leader is removed: the first eligible target replica leads", ids(1, 2, 3),
			rs(1, ids(1, 2, 3), ids(2, 3, 1), ids(3), ids(1)), ptr(bumped(rs(2, ids(2, 3), ids(2, 3), nil, nil), 1))},
		{"all in sync, the leader stays", ids(1, 2, 3),
			rs(2, ids(1, 2, 3), ids(2, 3, 1), ids(3), ids(1)), ptr(bumped(rs(2, ids(2, 3), ids(2, 3), nil, nil), 0))},
		{"the new leader in target order, eligible", ids(1, -2, 3),
			rs(1, ids(1, 3, 2), ids(2, 3, 1), ids(3), ids(1)), ptr(bumped(rs(3, ids(3, 2), ids(2, 3), nil, nil), 1))},
		{"a kept replica out of sync (Kafka waits for the whole target)", ids(1, 3),
			rs(1, ids(1, 3), ids(2, 3, 1), ids(3), ids(1)), nil},
		{"the leader in the target but shutting down: replaced", ids(1, -2, 3),
			rs(2, ids(2, 3), ids(2, 3, 1), ids(3), ids(1)), ptr(bumped(rs(3, ids(2, 3), ids(2, 3), nil, nil), 1))},
		{"no eligible target replica, the leader in the target: it stays", ids(1, -2),
			rs(2, ids(2, 3), ids(2, 3, 1), ids(3), ids(1)), ptr(bumped(rs(2, ids(2, 3), ids(2, 3), nil, nil), 0))},
		{"no eligible target replica, the leader removed: waits", ids(1),
			rs(1, ids(1, 2, 3), ids(2, 3, 1), ids(3), ids(1)), nil},
		{"only removing replicas in sync", ids(1, 2), rs(1, ids(1), ids(2, 1), ids(2), ids(1)), nil},
		{"a shrink whose kept replicas are in sync", ids(1, 2, 3),
			rs(3, ids(1, 2, 3), ids(1, 2, 3), nil, ids(3)), ptr(bumped(rs(1, ids(1, 2), ids(1, 2), nil, nil), 1))},
		{"growth complete", ids(1, 2), rs(1, ids(1, 2), ids(1, 2), ids(2), nil), ptr(bumped(rs(1, ids(1, 2), ids(1, 2), nil, nil), 0))},
	} {
		md := reassignView(c.live, nil, false, c.in)
		got, ok := completeReassignment(md, c.in)
		switch {
		case c.want == nil && ok:
			t.Errorf("%s: completed as %+v, want not yet", c.what, got)
		case c.want != nil && !ok:
			t.Errorf("%s: not completed, want %+v", c.what, *c.want)
		case c.want != nil && fmt.Sprint(got) != fmt.Sprint(*c.want):
			t.Errorf("%s:\n got  %+v\n want %+v", c.what, got, *c.want)
		}
		// The controller's decision is the same, at the partition's
		// revision, and is not made again on its own result.
		dec := decideReassignments(md)
		if (len(dec) == 1) != ok || (ok && (dec[0].rev != 10 || fmt.Sprint(dec[0].next) != fmt.Sprint(got))) {
			t.Errorf("%s: decideReassignments %+v", c.what, dec)
		}
		if ok {
			if again := decideReassignments(reassignView(c.live, nil, false, got)); len(again) != 0 {
				t.Errorf("%s: decided again: %+v", c.what, again)
			}
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestDecideLeadersMidReassignment: the leader and ISR rules hold while a
// reassignment is in flight, and a replica being added is elected only
// once it is in the ISR, never by an unclean election.
func TestDecideLeadersMidReassignment(t *testing.T) {
	for _, c := range []struct {
		what    string
		live    []int32
		unclean bool
		in      PartitionState
		want    string // leader and ISR after, "" for no change
	}{
		{"dead leader: an in-sync original replica leads", ids(2, 3), false, rs(1, ids(1, 2), ids(2, 3, 1), ids(3), ids(1)), "2 [2]"},
		{"dead leader, the adding replica in sync: it may lead", ids(3), false, rs(1, ids(1, 3), ids(2, 3, 1), ids(3), ids(1)), "3 [3]"},
		{"dead leader, the adding replica not in sync: leaderless", ids(3), false, rs(1, ids(1), ids(2, 3, 1), ids(3), ids(1)), "-1 [1]"},
		{"unclean: never the adding replica", ids(3), true, rs(1, ids(1), ids(2, 3, 1), ids(3), ids(1)), "-1 [1]"},
		{"unclean: an original replica", ids(2, 3), true, rs(-1, ids(1), ids(2, 3, 1), ids(3), ids(1)), "2 [2]"},
		{"a dead adding replica in the ISR leaves it", ids(1, 2), false, rs(1, ids(1, 2, 3), ids(2, 3, 1), ids(3), ids(1)), "1 [2 1]"},
		{"settled: no change", ids(1, 2, 3), false, rs(1, ids(1, 2), ids(2, 3, 1), ids(3), ids(1)), ""},
	} {
		got := decideLeaders(reassignView(c.live, nil, c.unclean, c.in), false)
		switch {
		case c.want == "" && len(got) != 0:
			t.Errorf("%s: %+v, want no change", c.what, got)
		case c.want != "" && len(got) != 1:
			t.Errorf("%s: %d changes, want 1", c.what, len(got))
		case c.want != "":
			if s := fmt.Sprint(got[0].next.Leader, " ", got[0].next.ISR); s != c.want {
				t.Errorf("%s: %s, want %s", c.what, s, c.want)
			}
			if !slices.Equal(got[0].next.AddingReplicas, c.in.AddingReplicas) || !slices.Equal(got[0].next.Replicas, c.in.Replicas) {
				t.Errorf("%s: the reassignment changed: %+v", c.what, got[0].next)
			}
		}
	}
}

// TestDecideControl: one change per partition per transaction, leaders
// first; a completion waits for the next view when decideLeaders changes
// the partition.
func TestDecideControl(t *testing.T) {
	// Partition 0 could complete, but its dead leader (a removing
	// replica) is replaced first; partition 1 completes.
	p0 := rs(1, ids(1, 2, 3), ids(2, 3, 1), ids(3), ids(1))
	p1 := rs(2, ids(2, 3), ids(2, 3, 1), ids(3), ids(1))
	md := mdWith(ids(2, 3), p0, p1)
	got := decideControl(md, false)
	if len(got) != 2 || got[0].partition != 0 || got[1].partition != 1 {
		t.Fatalf("decisions %+v", got)
	}
	if !got[0].next.Reassigning() || fmt.Sprint(got[0].next.Leader, got[0].next.ISR) != "2 [2 3]" {
		t.Errorf("partition 0: %+v, want the leader change only", got[0].next)
	}
	if got[1].next.Reassigning() || fmt.Sprint(got[1].next.Replicas) != "[2 3]" {
		t.Errorf("partition 1: %+v, want completed", got[1].next)
	}
	// On the next view, partition 0 completes.
	md = mdWith(ids(2, 3), got[0].next, got[1].next)
	again := decideControl(md, false)
	if len(again) != 1 || again[0].partition != 0 || again[0].next.Reassigning() || fmt.Sprint(again[0].next.Replicas) != "[2 3]" {
		t.Fatalf("next view: %+v", again)
	}
	// A completion that moves the leadership, and the preferred-leader
	// election that would too: one change.
	md = mdWith(ids(1, 2, 3), p0)
	if pref := decidePreferred(md); len(pref) != 1 {
		t.Fatalf("preferred: %+v", pref)
	}
	merged := mergeDecisions(decideControl(md, false), decidePreferred(md))
	if len(merged) != 1 || merged[0].next.Reassigning() {
		t.Fatalf("merged %+v", merged)
	}
}

// partitionOn returns partition p of topic as node c sees it.
func partitionOn(c *Cluster, topic string, p int32) PartitionState {
	t := c.Snapshot().Topics[topic]
	if t == nil || int(p) >= len(t.Partitions) {
		return PartitionState{Leader: -2}
	}
	return t.Partitions[p]
}

// reassignSummary shows what a reassignment test checks of a state.
func reassignSummary(st PartitionState) string {
	return fmt.Sprintf("replicas %v adding %v removing %v isr %v leader %d", st.Replicas, st.AddingReplicas,
		st.RemovingReplicas, st.ISR, st.Leader)
}

// TestAlterReassignments: on three registered nodes sharing one etcd,
// reassignments are started, replaced and cancelled by whichever node is
// asked, with Kafka's errors per partition, and are visible on every node;
// a reassignment in flight survives a change of controller, and the new
// controller completes it once the adding replica is in the ISR.
func TestAlterReassignments(t *testing.T) {
	nodes := threeNodes(t)
	ctrl := agreedController(t, nodes)
	// The controller leads partition 0 and is the replica it moves away:
	// [ctrl, a] to [a, b].
	var others []int32
	byID := map[int32]*Cluster{}
	for _, c := range nodes {
		byID[c.cfg.NodeID] = c
		if c.cfg.NodeID != ctrl.NodeID {
			others = append(others, c.cfg.NodeID)
		}
	}
	a, b := others[0], others[1]
	spec := TopicSpec{Name: "mv", Assignments: [][]int32{{ctrl.NodeID, a}, {ctrl.NodeID, a}, {b}}}
	if _, err := nodes[0].CreateTopic(testCtx(t), spec); err != nil {
		t.Fatal(err)
	}
	asked := byID[b] // not the controller: any node serves the request
	eventually(t, func() string {
		if partitionOn(asked, "mv", 2).Leader != b {
			return "node b does not see the topic"
		}
		return ""
	})
	results, err := asked.AlterReassignments(testCtx(t), []ReassignTarget{
		{Topic: "mv", Partition: 0, Replicas: []int32{a, b}},
		{Topic: "mv", Partition: 1, Replicas: []int32{a, b}},
		{Topic: "mv", Partition: 2, Replicas: nil},
		{Topic: "mv", Partition: 7, Replicas: []int32{a}},
		{Topic: "nope", Partition: 0, Replicas: []int32{a}},
		{Topic: "mv", Partition: 2, Replicas: []int32{9}},
		{Topic: "mv", Partition: 2, Replicas: []int32{}},
		{Topic: "mv", Partition: 2, Replicas: []int32{a, a}},
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []error{nil, nil, ErrNoReassignment, ErrUnknownTopic, ErrUnknownTopic,
		ErrInvalidAssignment, ErrInvalidAssignment, ErrInvalidAssignment} {
		if (want == nil) != (results[i] == nil) || !errors.Is(results[i], want) {
			t.Errorf("target %d: %v, want %v", i, results[i], want)
		}
	}
	// The asking node sees its write at once; the others soon.
	moving := fmt.Sprintf("replicas [%d %d %d] adding [%d] removing [%d] isr [%d %d] leader %d", a, b, ctrl.NodeID, b, ctrl.NodeID,
		ctrl.NodeID, a, ctrl.NodeID)
	if got := reassignSummary(partitionOn(asked, "mv", 0)); got != moving {
		t.Fatalf("node %d right after: %s, want %s", b, got, moving)
	}
	for _, c := range nodes {
		eventually(t, func() string {
			if got := reassignSummary(partitionOn(c, "mv", 0)); got != moving {
				return fmt.Sprintf("node %d: %s", c.cfg.NodeID, got)
			}
			return ""
		})
	}

	// Replace partition 1's: from the original replicas, to [b, ctrl].
	before := partitionOn(asked, "mv", 1)
	if _, err := asked.AlterReassignments(testCtx(t), []ReassignTarget{{Topic: "mv", Partition: 1, Replicas: []int32{b, ctrl.NodeID}}}, true); err != nil {
		t.Fatal(err)
	}
	after := partitionOn(asked, "mv", 1)
	want := fmt.Sprintf("replicas [%d %d %d] adding [%d] removing [%d] isr [%d %d] leader %d", b, ctrl.NodeID, a, b, a,
		ctrl.NodeID, a, ctrl.NodeID)
	if got := reassignSummary(after); got != want || after.PartitionEpoch != before.PartitionEpoch+1 || after.LeaderEpoch != before.LeaderEpoch {
		t.Fatalf("replaced: %s (epochs %d/%d), want %s", got, after.LeaderEpoch, after.PartitionEpoch, want)
	}
	// Cancel it: back to the original replicas.
	res, err := asked.AlterReassignments(testCtx(t), []ReassignTarget{{Topic: "mv", Partition: 1}}, true)
	if err != nil || res[0] != nil {
		t.Fatal(err, res)
	}
	if got := partitionOn(asked, "mv", 1); got.Reassigning() || !slices.Equal(slices.Sorted(slices.Values(got.Replicas)), slices.Sorted(slices.Values([]int32{ctrl.NodeID, a}))) ||
		got.Leader != ctrl.NodeID || got.PartitionEpoch != after.PartitionEpoch+1 {
		t.Fatalf("cancelled: %+v", got)
	}
	// KIP-860: the replication factor kept when asked.
	res, err = asked.AlterReassignments(testCtx(t), []ReassignTarget{{Topic: "mv", Partition: 2, Replicas: []int32{a, b}}}, false)
	if err != nil || !errors.Is(res[0], ErrInvalidReplicationFactor) {
		t.Fatalf("factor change refused: %v %v", err, res)
	}

	// The controller (partition 0's leader, the replica moved away)
	// leaves; the next controller elects a as leader, and completes the
	// move once a has b in its ISR.
	if err := byID[ctrl.NodeID].Close(); err != nil {
		t.Fatal(err)
	}
	rest := []*Cluster{byID[a], byID[b]}
	next := agreedController(t, rest)
	if next.Epoch <= ctrl.Epoch {
		t.Fatalf("controller %+v after %+v", next, ctrl)
	}
	var led PartitionState
	eventually(t, func() string {
		led = partitionOn(byID[a], "mv", 0)
		if led.Leader != a || !led.Reassigning() {
			return "partition 0: " + reassignSummary(led)
		}
		return ""
	})
	if _, err := byID[a].AlterISR(testCtx(t), "mv", 0, led, append(slices.Clone(led.ISR), b)); err != nil {
		t.Fatal(err)
	}
	done := fmt.Sprintf("replicas [%d %d] adding [] removing [] isr [%d %d] leader %d", a, b, a, b, a)
	for _, c := range rest {
		eventually(t, func() string {
			if got := reassignSummary(partitionOn(c, "mv", 0)); got != done {
				return fmt.Sprintf("node %d: %s, want %s", c.cfg.NodeID, got, done)
			}
			return ""
		})
	}
}

// TestAlterReassignmentsConcurrent: nodes changing one partition's
// reassignment at once each succeed, one after the other (their writes
// compare the partition's mod revision), and the partition epoch counts
// every write.
func TestAlterReassignmentsConcurrent(t *testing.T) {
	nodes := threeNodes(t)
	if _, err := nodes[0].CreateTopic(testCtx(t), TopicSpec{Name: "race", Assignments: [][]int32{{1}}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range nodes {
		eventually(t, func() string {
			if partitionOn(c, "race", 0).Leader != 1 {
				return fmt.Sprintf("node %d does not see the topic", c.cfg.NodeID)
			}
			return ""
		})
	}
	targets := [][]int32{{2}, {3}, {2, 3}}
	errs := make(chan error, len(nodes))
	for i, c := range nodes {
		go func() {
			res, err := c.AlterReassignments(testCtx(t), []ReassignTarget{{Topic: "race", Partition: 0, Replicas: targets[i]}}, true)
			if err == nil {
				err = res[0]
			}
			errs <- err
		}()
	}
	for range nodes {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, func() string {
		st := partitionOn(nodes[0], "race", 0)
		if st.PartitionEpoch != 3 || !st.Reassigning() || !slices.Equal(st.OriginalReplicas(), []int32{1}) {
			return reassignSummary(st) + fmt.Sprint(" partition epoch ", st.PartitionEpoch)
		}
		return ""
	})
}
