package main

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// brokersOf returns brokers 1..n without racks, those in leaving leaving.
func brokersOf(n int, leaving ...int32) []planBroker {
	var bs []planBroker
	for id := int32(1); id <= int32(n); id++ {
		bs = append(bs, planBroker{ID: id, Leaving: slices.Contains(leaving, id)})
	}
	return bs
}

// roundRobin returns n partitions of topic with replication factor rf on
// brokers 1..nb, placed as Kafka places them without racks: partition p
// on brokers p, p+1, ... (mod nb); each of size bytes.
func roundRobin(topic string, n, rf, nb int, size int64) []planPartition {
	var ps []planPartition
	for p := range n {
		var reps []int32
		for r := range rf {
			reps = append(reps, int32((p+r)%nb+1))
		}
		ps = append(ps, planPartition{Topic: topic, Partition: int32(p), Replicas: reps, Leader: reps[0], Size: size})
	}
	return ps
}

// applied returns the replica lists of parts after moves, by "topic-p".
func applied(t *testing.T, parts []planPartition, moves []partitionMove) map[string][]int32 {
	t.Helper()
	out := map[string][]int32{}
	for _, p := range parts {
		out[fmt.Sprintf("%s-%d", p.Topic, p.Partition)] = p.Replicas
	}
	for _, m := range moves {
		k := fmt.Sprintf("%s-%d", m.Topic, m.Partition)
		if !slices.Equal(out[k], m.From) {
			t.Fatalf("move of %s from %v, but its replicas are %v", k, m.From, out[k])
		}
		out[k] = m.To
	}
	return out
}

// counts returns replicas and preferred leaderships per broker.
func counts(assign map[string][]int32) (replicas, leaders map[int32]int) {
	replicas, leaders = map[int32]int{}, map[int32]int{}
	for _, reps := range assign {
		for _, b := range reps {
			replicas[b]++
		}
		if len(reps) > 0 {
			leaders[reps[0]]++
		}
	}
	return replicas, leaders
}

// checkPlan checks what every plan must hold: replication factors kept,
// distinct brokers, nothing on leaving brokers, and replica and leader
// counts within one over the staying brokers. It returns the assignment
// after the moves.
func checkPlan(t *testing.T, brokers []planBroker, parts []planPartition, moves []partitionMove) map[string][]int32 {
	t.Helper()
	before := applied(t, parts, nil)
	after := applied(t, parts, moves)
	for k, reps := range after {
		if len(reps) != len(before[k]) {
			t.Errorf("%s: replicas %v, was %v: replication factor changed", k, reps, before[k])
		}
		seen := map[int32]bool{}
		for _, b := range reps {
			if seen[b] {
				t.Errorf("%s: replicas %v list broker %d twice", k, reps, b)
			}
			seen[b] = true
		}
	}
	replicas, leaders := counts(after)
	lo, hi, llo, lhi := 1<<30, -1, 1<<30, -1
	for _, b := range brokers {
		if b.Leaving {
			if replicas[b.ID] != 0 {
				t.Errorf("leaving broker %d still holds %d replicas", b.ID, replicas[b.ID])
			}
			continue
		}
		lo, hi = min(lo, replicas[b.ID]), max(hi, replicas[b.ID])
		llo, lhi = min(llo, leaders[b.ID]), max(lhi, leaders[b.ID])
	}
	if hi-lo > 1 {
		t.Errorf("replicas per broker %v: from %d to %d, want within 1", replicas, lo, hi)
	}
	if lhi-llo > 1 {
		t.Errorf("preferred leaders per broker %v: from %d to %d, want within 1", leaders, llo, lhi)
	}
	for _, m := range moves {
		if slices.Equal(m.From, m.To) {
			t.Errorf("move of %s-%d changes nothing: %v", m.Topic, m.Partition, m.From)
		}
	}
	return after
}

// replicasMoved is how many replicas the moves copy.
func replicasMoved(moves []partitionMove) int {
	n := 0
	for _, m := range moves {
		n += len(m.added())
	}
	return n
}

func TestPlanAddBroker(t *testing.T) {
	t.Parallel()
	parts := roundRobin("orders", 48, 3, 3, 1000)
	brokers := brokersOf(4)
	moves, err := planMoves(brokers, parts)
	if err != nil {
		t.Fatal(err)
	}
	after := checkPlan(t, brokers, parts, moves)
	replicas, leaders := counts(after)
	for id := int32(1); id <= 4; id++ {
		if replicas[id] != 36 || leaders[id] != 12 {
			t.Errorf("broker %d: %d replicas, %d preferred leaderships; want 36 and 12", id, replicas[id], leaders[id])
		}
	}
	// Broker 4 needs 36 replicas: that many are copied, no more.
	if n := replicasMoved(moves); n != 36 {
		t.Errorf("%d replicas copied, want 36", n)
	}
	var bytes int64
	for _, m := range moves {
		bytes += m.Bytes
	}
	if bytes != 36*1000 {
		t.Errorf("bytes to move = %d, want %d", bytes, 36*1000)
	}
	// Leaders are evened out by reordering partitions already moving:
	// no partition is touched only for its order.
	if len(moves) != 36 {
		t.Errorf("%d partitions moved, want 36 (one replica each, leaders reordered among them)", len(moves))
	}
}

func TestPlanDecommission(t *testing.T) {
	t.Parallel()
	parts := append(roundRobin("a", 12, 3, 4, 10), roundRobin("b", 5, 2, 4, 20)...)
	brokers := brokersOf(4, 2)
	moves, err := planMoves(brokers, parts)
	if err != nil {
		t.Fatal(err)
	}
	checkPlan(t, brokers, parts, moves)
	// Every partition that was on broker 2 moves, and only its replica
	// there is copied: the others were balanced already.
	on2 := 0
	for _, p := range parts {
		if slices.Contains(p.Replicas, 2) {
			on2++
		}
	}
	if got := replicasMoved(moves); got != on2 {
		t.Errorf("%d replicas copied, want %d (those of broker 2)", got, on2)
	}
	for _, m := range moves {
		if !slices.Contains(m.From, 2) && len(m.added()) > 0 {
			t.Errorf("%s-%d copied (%v -> %v) though it has no replica on broker 2", m.Topic, m.Partition, m.From, m.To)
		}
	}
}

// A broker that is gone (not in the cluster's metadata) can be emptied
// when it is named as leaving.
func TestPlanDecommissionAll(t *testing.T) {
	t.Parallel()
	parts := roundRobin("t", 6, 1, 1, 5)
	brokers := []planBroker{{ID: 1, Leaving: true}, {ID: 7}, {ID: 8}}
	moves, err := planMoves(brokers, parts)
	if err != nil {
		t.Fatal(err)
	}
	after := checkPlan(t, brokers, parts, moves)
	if r, _ := counts(after); r[7] != 3 || r[8] != 3 {
		t.Errorf("replicas per broker %v, want 3 on 7 and 8", r)
	}
}

func racked(racks ...string) []planBroker {
	var bs []planBroker
	for i, r := range racks {
		bs = append(bs, planBroker{ID: int32(i + 1), Rack: r})
	}
	return bs
}

// racksOn returns the racks of reps.
func racksOn(brokers []planBroker, reps []int32) map[string]bool {
	out := map[string]bool{}
	for _, b := range reps {
		for _, x := range brokers {
			if x.ID == b {
				out[x.Rack] = true
			}
		}
	}
	return out
}

func TestPlanRacks(t *testing.T) {
	t.Parallel()
	// Six brokers in three racks; every partition starts on brokers 1, 2
	// (rack a) and 3 (rack b) only.
	brokers := racked("a", "a", "b", "b", "c", "c")
	var parts []planPartition
	for p := range 12 {
		reps := []int32{1, 2, 3}
		reps[0], reps[p%3] = reps[p%3], reps[0]
		parts = append(parts, planPartition{Topic: "r", Partition: int32(p), Replicas: reps, Leader: reps[0], Size: 1})
	}
	moves, err := planMoves(brokers, parts)
	if err != nil {
		t.Fatal(err)
	}
	after := checkPlan(t, brokers, parts, moves)
	for k, reps := range after {
		if n := len(racksOn(brokers, reps)); n != 3 {
			t.Errorf("%s on %v: %d racks, want 3", k, reps, n)
		}
	}

	// Decommissioning broker 6 (rack c) keeps every partition on three
	// racks: its replicas go to broker 5, the other broker of rack c.
	brokers[5].Leaving = true
	final := make([]planPartition, 0, len(parts))
	for _, p := range parts {
		k := fmt.Sprintf("%s-%d", p.Topic, p.Partition)
		p.Replicas = after[k]
		final = append(final, p)
	}
	moves, err = planMoves(brokers, final)
	if err != nil {
		t.Fatal(err)
	}
	for k, reps := range applied(t, final, moves) {
		if n := len(racksOn(brokers, reps)); n != 3 || slices.Contains(reps, 6) {
			t.Errorf("after decommissioning 6: %s on %v, want three racks without 6", k, reps)
		}
	}
}

// Balanced counts do not hide a partition kept on one rack: each is moved
// to a second rack, and the counts stay balanced.
func TestPlanRacksBalancedCounts(t *testing.T) {
	t.Parallel()
	brokers := racked("a", "a", "b", "b", "c", "c")
	var parts []planPartition
	for i, reps := range [][]int32{{1, 2}, {2, 1}, {3, 4}, {4, 3}, {5, 6}, {6, 5}} {
		parts = append(parts, planPartition{Topic: "one-rack", Partition: int32(i), Replicas: reps, Leader: reps[0], Size: 1})
	}
	moves, err := planMoves(brokers, parts)
	if err != nil {
		t.Fatal(err)
	}
	for k, reps := range checkPlan(t, brokers, parts, moves) {
		if n := len(racksOn(brokers, reps)); n != 2 {
			t.Errorf("%s on %v: %d racks, want 2", k, reps, n)
		}
	}
	if n := replicasMoved(moves); n != 6 {
		t.Errorf("%d replicas copied, want 6 (one of each partition)", n)
	}
}

// With fewer racks than replicas, each rack holds a replica and the
// partition is still balanced.
func TestPlanRacksFewerThanRF(t *testing.T) {
	t.Parallel()
	brokers := racked("a", "a", "b", "b")
	var parts []planPartition
	for p := range 8 {
		parts = append(parts, planPartition{Topic: "x", Partition: int32(p), Replicas: []int32{1, 2, 3}, Leader: 1, Size: 1})
	}
	moves, err := planMoves(brokers, parts)
	if err != nil {
		t.Fatal(err)
	}
	for k, reps := range checkPlan(t, brokers, parts, moves) {
		if n := len(racksOn(brokers, reps)); n != 2 {
			t.Errorf("%s on %v: %d racks, want 2", k, reps, n)
		}
	}
}

func TestPlanBalancedNoMoves(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		brokers []planBroker
		parts   []planPartition
	}{
		{"3 brokers RF 3", brokersOf(3), roundRobin("t", 48, 3, 3, 7)},
		{"4 brokers RF 2", brokersOf(4), roundRobin("t", 12, 2, 4, 7)},
		{"1 broker", brokersOf(1), roundRobin("t", 3, 1, 1, 7)},
		{"racks", racked("a", "b", "c"), roundRobin("t", 9, 2, 3, 7)},
		{"no partitions", brokersOf(3), nil},
	} {
		moves, err := planMoves(tt.brokers, tt.parts)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if len(moves) != 0 {
			t.Errorf("%s: %d moves on a balanced cluster, want none: %+v", tt.name, len(moves), moves)
		}
	}
}

// Small partitions move first: with a new broker and partitions of
// different sizes, the replicas copied are those of the smallest.
func TestPlanSmallFirst(t *testing.T) {
	t.Parallel()
	parts := roundRobin("s", 8, 2, 2, 0)
	for i := range parts {
		parts[i].Size = int64(8-i) * 100 // partition 7 is the smallest
	}
	moves, err := planMoves(brokersOf(3), parts)
	if err != nil {
		t.Fatal(err)
	}
	checkPlan(t, brokersOf(3), parts, moves)
	var copied []int32
	for _, m := range moves {
		if len(m.added()) > 0 {
			copied = append(copied, m.Partition)
		}
	}
	// 16 replicas over 3 brokers: 5 or 6 each, so broker 3 gets 5, from
	// the five smallest partitions.
	if want := []int32{3, 4, 5, 6, 7}; !slices.Equal(copied, want) {
		t.Errorf("partitions copied %v, want the five smallest %v", copied, want)
	}
}

func TestPlanDeterministic(t *testing.T) {
	t.Parallel()
	parts := append(roundRobin("a", 30, 3, 3, 1), roundRobin("b", 7, 2, 3, 9)...)
	brokers := racked("x", "y", "z", "x", "y", "z")
	want, err := planMoves(brokers, parts)
	if err != nil {
		t.Fatal(err)
	}
	checkPlan(t, brokers, parts, want)
	r := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		shuffled := slices.Clone(parts)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		got, err := planMoves(brokers, shuffled)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("plan of shuffled input differs:\n got %+v\nwant %+v", got, want)
		}
	}
}

func TestPlanRefuses(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		brokers []planBroker
		parts   []planPartition
		want    string
	}{
		{"too few brokers", brokersOf(3, 3), roundRobin("t", 1, 3, 3, 1), "t-0 has 3 replicas but only 2 brokers would remain"},
		{"unknown broker", brokersOf(2), roundRobin("t", 3, 1, 3, 1), "t-2 has a replica on broker 3: that broker is not in the cluster"},
		{"all leaving", brokersOf(1, 1), nil, "no broker would remain"},
		{"broker twice", append(brokersOf(2), planBroker{ID: 1}), nil, "broker 1 is listed twice"},
		{"replica twice", brokersOf(2), []planPartition{{Topic: "t", Replicas: []int32{1, 1}}}, "lists broker 1 twice"},
	} {
		_, err := planMoves(tt.brokers, tt.parts)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one saying %q", tt.name, err, tt.want)
		}
	}
}

// Leaders can need a chain of reorders: here (racks a, b, a, b and every
// partition on both racks) brokers 2 and 4 share no partition, so broker
// 4's extra leadership reaches broker 2 through broker 1 or 3. The
// assignment is the one a decommission of broker 4 left on Kafka, with
// broker 4 back and empty.
func TestPlanLeaderChain(t *testing.T) {
	t.Parallel()
	brokers := racked("a", "b", "a", "b")
	sizes := []int64{3156650, 2104294, 2104293, 2104301, 1051940, 2881784, 2104308, 2104292,
		1051977, 3156645, 1051916, 1051960, 2104298, 1051931, 3156641, 2104290}
	var parts []planPartition
	for i, reps := range [][]int32{
		{1, 2}, {3, 2}, {2, 1}, {3, 2}, {1, 2}, {3, 2}, {1, 2}, {2, 3},
		{1, 2}, {2, 3}, {1, 2}, {2, 3}, {3, 2}, {2, 1}, {3, 2}, {2, 1},
	} {
		parts = append(parts, planPartition{Topic: "events", Partition: int32(i), Replicas: reps, Leader: reps[0], Size: sizes[i]})
	}
	moves, err := planMoves(brokers, parts)
	if err != nil {
		t.Fatal(err)
	}
	for k, reps := range checkPlan(t, brokers, parts, moves) {
		if n := len(racksOn(brokers, reps)); n != 2 {
			t.Errorf("%s on %v: %d racks, want 2", k, reps, n)
		}
	}
}

// BenchmarkPlan plans a cluster of 20 brokers growing to 25, with 5,000
// partitions of replication factor 3.
func BenchmarkPlan(b *testing.B) {
	parts := roundRobin("big", 5000, 3, 20, 0)
	for i := range parts {
		parts[i].Size = int64(i%97) << 20
	}
	brokers := brokersOf(25)
	for b.Loop() {
		if _, err := planMoves(brokers, parts); err != nil {
			b.Fatal(err)
		}
	}
}
