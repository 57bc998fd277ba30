package main

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// The planner of `cluster rebalance` and `cluster decommission`: a pure
// function from the cluster's brokers and partitions to the partition moves
// that empty the leaving brokers and even out the rest. It does no I/O, so
// that its tests can state any cluster.
//
// It works in four passes over one mutable copy of the assignment, each
// greedy and deterministic (every choice has a total order of tie-breaks):
//
//  1. Leaving brokers: each of their replicas is replaced, in place, by the
//     staying broker that keeps the partition on the most racks, then holds
//     the fewest replicas, then has the lowest id.
//  2. Racks: a partition on fewer racks than it could be (min(RF, racks))
//     has a replica from a doubled rack moved to an unused one.
//  3. Replica counts: while the fullest and emptiest brokers differ by more
//     than one, a replica moves from a fuller to an emptier broker; the
//     replica chosen is, among those that can move without losing a rack,
//     the one whose move adds the fewest bytes to copy (a replica the plan
//     already adds costs nothing more), then of the smallest partition,
//     then of one already being moved (fewer moves).
//  4. Preferred leaders: while leader counts differ by more than one, a
//     partition's replicas are reordered so that another of its replicas
//     comes first (or a chain of such reorders, through brokers that keep
//     their counts, when the two brokers share no partition). That moves no data (the reassignment completes at once
//     and the preferred-leader election does the rest); partitions already
//     being moved are reordered first, so that few partitions are touched.
//
// A replica replaced or moved keeps its position in the list, so that the
// preferred leader changes only when it is the one that moves (or in pass 4).
//
// Racks count only when every staying broker has one, as Kafka's
// rack-aware assignment refuses a mix of brokers with and without racks.

// errUnknownBroker is the error of a plan with a replica on a broker that
// is not among the brokers given.
var errUnknownBroker = errors.New("that broker is not in the cluster")

// planBroker is a broker the planner may place replicas on, or must empty.
type planBroker struct {
	ID   int32
	Rack string
	// Leaving brokers end with no replicas.
	Leaving bool
}

// planPartition is a partition as it is now.
type planPartition struct {
	Topic     string
	Partition int32
	// Replicas in order; the first is the preferred leader.
	Replicas []int32
	// Leader is the current leader, -1 when there is none. Among equal
	// choices of a new preferred leader, the current leader is taken, so
	// that the election after the moves changes fewer leaders.
	Leader int32
	// Size is the bytes of the leader's replica: what a new replica copies.
	Size int64
}

// partitionMove is one partition's replica list now and after the move.
type partitionMove struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	From      []int32 `json:"from"`
	To        []int32 `json:"to"`
	// Bytes is what the move copies: the partition's size once for every
	// broker in To that is not in From. A reorder copies nothing.
	Bytes int64 `json:"bytes"`
}

// added returns the brokers of To that are not in From.
func (m partitionMove) added() []int32 {
	var out []int32
	for _, b := range m.To {
		if !slices.Contains(m.From, b) {
			out = append(out, b)
		}
	}
	return out
}

// planner is the state of one planMoves call.
type planner struct {
	staying []int32          // staying broker ids, sorted
	rack    map[int32]string // rack of each staying broker, when rackAware
	leaving map[int32]bool
	// rackAware is set when every staying broker has a rack.
	rackAware bool
	nRacks    int
	parts     []*planState
	replicas  map[int32]int // replicas per staying broker
	leaders   map[int32]int // preferred leaderships per staying broker
}

// planState is a partition under planning.
type planState struct {
	p   planPartition
	now []int32 // the replica list being planned
}

func (s *planState) moved() bool { return !slices.Equal(s.p.Replicas, s.now) }

// planMoves returns the moves that take every replica off the leaving
// brokers and even out replica and preferred-leader counts over the
// others, sorted by topic and partition. The replication factor of every
// partition is kept. It fails when a partition has more replicas than
// there are staying brokers, or when a replica sits on a broker that is not
// in brokers (a broker that is gone: say that it is leaving).
func planMoves(brokers []planBroker, parts []planPartition) ([]partitionMove, error) {
	pl := &planner{
		rack:     map[int32]string{},
		leaving:  map[int32]bool{},
		replicas: map[int32]int{},
		leaders:  map[int32]int{},
	}
	known := map[int32]bool{}
	racks := map[string]bool{}
	pl.rackAware = true
	for _, b := range brokers {
		if known[b.ID] {
			return nil, fmt.Errorf("broker %d is listed twice", b.ID)
		}
		known[b.ID] = true
		if b.Leaving {
			pl.leaving[b.ID] = true
			continue
		}
		pl.staying = append(pl.staying, b.ID)
		pl.replicas[b.ID], pl.leaders[b.ID] = 0, 0
		pl.rack[b.ID] = b.Rack
		racks[b.Rack] = true
		if b.Rack == "" {
			pl.rackAware = false
		}
	}
	if len(pl.staying) == 0 {
		return nil, fmt.Errorf("no broker would remain")
	}
	slices.Sort(pl.staying)
	if pl.rackAware {
		pl.nRacks = len(racks)
	}

	for _, p := range parts {
		if len(p.Replicas) > len(pl.staying) {
			return nil, fmt.Errorf("%s-%d has %d replicas but only %d brokers would remain",
				p.Topic, p.Partition, len(p.Replicas), len(pl.staying))
		}
		for i, b := range p.Replicas {
			if !known[b] {
				return nil, fmt.Errorf("%s-%d has a replica on broker %d: %w", p.Topic, p.Partition, b, errUnknownBroker)
			}
			if slices.Contains(p.Replicas[:i], b) {
				return nil, fmt.Errorf("%s-%d lists broker %d twice", p.Topic, p.Partition, b)
			}
			if !pl.leaving[b] {
				pl.replicas[b]++
			}
		}
		if len(p.Replicas) > 0 && !pl.leaving[p.Replicas[0]] {
			pl.leaders[p.Replicas[0]]++
		}
		pl.parts = append(pl.parts, &planState{p: p, now: slices.Clone(p.Replicas)})
	}
	slices.SortFunc(pl.parts, func(a, b *planState) int {
		return cmp.Or(cmp.Compare(a.p.Topic, b.p.Topic), cmp.Compare(a.p.Partition, b.p.Partition))
	})
	for i := 1; i < len(pl.parts); i++ {
		if a, b := pl.parts[i-1].p, pl.parts[i].p; a.Topic == b.Topic && a.Partition == b.Partition {
			return nil, fmt.Errorf("%s-%d is listed twice", a.Topic, a.Partition)
		}
	}

	pl.evacuate()
	if pl.rackAware {
		pl.spreadRacks()
	}
	pl.balanceReplicas()
	pl.balanceLeaders()

	var moves []partitionMove
	for _, s := range pl.parts {
		if !s.moved() {
			continue
		}
		m := partitionMove{Topic: s.p.Topic, Partition: s.p.Partition, From: s.p.Replicas, To: s.now}
		m.Bytes = s.p.Size * int64(len(m.added()))
		moves = append(moves, m)
	}
	return moves, nil
}

// racksOf returns how many racks the replicas reps are on; without racks,
// how many replicas there are.
func (pl *planner) racksOf(reps []int32) int {
	if !pl.rackAware {
		return len(reps)
	}
	seen := make(map[string]bool, len(reps))
	for _, b := range reps {
		seen[pl.rack[b]] = true
	}
	return len(seen)
}

// replace puts to in place of the replica at index i of s.
func (pl *planner) replace(s *planState, i int, to int32) {
	from := s.now[i]
	if !pl.leaving[from] {
		pl.replicas[from]--
		if i == 0 {
			pl.leaders[from]--
		}
	}
	s.now[i] = to
	pl.replicas[to]++
	if i == 0 {
		pl.leaders[to]++
	}
}

// racksWith is how many racks s would be on with to at index i.
func (pl *planner) racksWith(s *planState, i int, to int32) int {
	reps := slices.Clone(s.now)
	reps[i] = to
	return pl.racksOf(reps)
}

// evacuate replaces every replica on a leaving broker (pass 1).
func (pl *planner) evacuate() {
	for _, s := range pl.parts {
		for i, b := range s.now {
			if !pl.leaving[b] {
				continue
			}
			best, bestRacks := int32(-1), -1
			for _, c := range pl.staying {
				if slices.Contains(s.now, c) {
					continue
				}
				r := pl.racksWith(s, i, c)
				if best < 0 || r > bestRacks || r == bestRacks && pl.replicas[c] < pl.replicas[best] {
					best, bestRacks = c, r
				}
			}
			// planMoves checked that there are enough staying brokers.
			pl.replace(s, i, best)
		}
	}
}

// spreadRacks moves replicas of partitions that could be on more racks
// (pass 2).
func (pl *planner) spreadRacks() {
	for _, s := range pl.parts {
		for pl.racksOf(s.now) < min(len(s.now), pl.nRacks) {
			// Move the replica on the fullest broker among those sharing
			// a rack, to the emptiest broker of a rack s is not on.
			bi, best := -1, int32(-1)
			for i, b := range s.now {
				shared := false
				for j, o := range s.now {
					shared = shared || j != i && pl.rack[o] == pl.rack[b]
				}
				if !shared {
					continue
				}
				if bi < 0 || pl.replicas[b] > pl.replicas[s.now[bi]] || pl.replicas[b] == pl.replicas[s.now[bi]] && i > bi {
					bi = i // among equals, keep the preferred leader in place
				}
			}
			for _, c := range pl.staying {
				if slices.Contains(s.now, c) || pl.racksWith(s, bi, c) <= pl.racksOf(s.now) {
					continue
				}
				if best < 0 || pl.replicas[c] < pl.replicas[best] {
					best = c
				}
			}
			if bi < 0 || best < 0 {
				break // cannot happen: a rack is unused and one doubled
			}
			pl.replace(s, bi, best)
		}
	}
}

// byLoad returns the staying brokers ordered by count, fullest first, ties
// by id.
func (pl *planner) byLoad(count map[int32]int) []int32 {
	bs := slices.Clone(pl.staying)
	slices.SortStableFunc(bs, func(a, b int32) int { return cmp.Compare(count[b], count[a]) })
	return bs
}

// spread is the difference between the fullest and the emptiest broker.
func spread(bs []int32, count map[int32]int) int {
	return count[bs[0]] - count[bs[len(bs)-1]]
}

// balanceReplicas evens out replica counts (pass 3).
func (pl *planner) balanceReplicas() {
	for {
		bs := pl.byLoad(pl.replicas)
		if spread(bs, pl.replicas) <= 1 || !pl.moveOneReplica(bs) {
			return
		}
	}
}

// moveOneReplica moves one replica from a broker to one holding at least
// two fewer, trying the fullest source and emptiest destination first; it
// reports whether it found a replica that could move.
func (pl *planner) moveOneReplica(bs []int32) bool {
	for _, from := range bs {
		for k := len(bs) - 1; k >= 0; k-- {
			to := bs[k]
			if pl.replicas[to] > pl.replicas[from]-2 {
				break
			}
			var (
				best     *planState
				bestI    int
				bestCost int64
			)
			for _, s := range pl.parts {
				i := slices.Index(s.now, from)
				if i < 0 || slices.Contains(s.now, to) || pl.racksWith(s, i, to) < pl.racksOf(s.now) {
					continue
				}
				c := s.copyCost(i, to)
				if best == nil || c < bestCost || c == bestCost && betterToMove(s, best) {
					best, bestI, bestCost = s, i, c
				}
			}
			if best != nil {
				pl.replace(best, bestI, to)
				return true
			}
		}
	}
	return false
}

// copyCost is how many more bytes the plan copies when the replica at
// index i of s moves to broker to: the partition's size when that replica
// is on its original broker (a new copy), nothing when the plan added it
// (its copy goes elsewhere), minus the size when to is an original
// replica (a copy undone).
func (s *planState) copyCost(i int, to int32) int64 {
	var c int64
	if slices.Contains(s.p.Replicas, s.now[i]) {
		c += s.p.Size
	}
	if slices.Contains(s.p.Replicas, to) {
		c -= s.p.Size
	}
	return c
}

// betterToMove orders candidates of equal copy cost for a replica move:
// the smallest partition, then one already moving, then the order of
// pl.parts (the caller keeps the first of equals).
func betterToMove(a, b *planState) bool {
	if a.p.Size != b.p.Size {
		return a.p.Size < b.p.Size
	}
	return a.moved() && !b.moved()
}

// balanceLeaders evens out preferred-leader counts by reordering replicas
// (pass 4).
func (pl *planner) balanceLeaders() {
	for {
		bs := pl.byLoad(pl.leaders)
		if spread(bs, pl.leaders) <= 1 || !pl.moveOneLeader(bs) {
			return
		}
	}
}

// leaderHop is one step of a chain of reorders: the partition whose first
// replica (on broker from) trades places with its replica at index i.
type leaderHop struct {
	from int32
	s    *planState
	i    int
}

// moveOneLeader takes one preferred leadership off a broker and gives it
// to one with at least two fewer. Two brokers that share no partition
// cannot trade directly, so it searches, breadth first, for the shortest
// chain of reorders from the fullest broker it can: each hop makes the
// next broker first in a partition the previous one leads, so that the
// brokers in between keep their counts. Among partitions for a hop it
// prefers those already moving, then those whose current leader becomes
// first (no leader change at all).
func (pl *planner) moveOneLeader(bs []int32) bool {
	for _, from := range bs {
		prev := map[int32]leaderHop{}
		seen := map[int32]bool{from: true}
		queue := []int32{from}
		for len(queue) > 0 {
			u := queue[0]
			queue = queue[1:]
			for _, h := range pl.hopsFrom(u) {
				v := h.s.now[h.i]
				if seen[v] {
					continue
				}
				seen[v], prev[v] = true, h
				if pl.leaders[v] <= pl.leaders[from]-2 {
					for w := v; w != from; {
						h := prev[w]
						h.s.now[0], h.s.now[h.i] = h.s.now[h.i], h.s.now[0]
						w = h.from
					}
					pl.leaders[from]--
					pl.leaders[v]++
					return true
				}
				queue = append(queue, v)
			}
		}
	}
	return false
}

// hopsFrom returns the reorders that hand a preferred leadership of
// broker u to another broker, best first (see moveOneLeader).
func (pl *planner) hopsFrom(u int32) []leaderHop {
	var hops []leaderHop
	score := func(h leaderHop) int {
		sc := 0
		if h.s.moved() {
			sc += 2
		}
		if h.s.p.Leader == h.s.now[h.i] {
			sc++
		}
		return sc
	}
	for _, s := range pl.parts {
		if len(s.now) == 0 || s.now[0] != u {
			continue
		}
		for i := 1; i < len(s.now); i++ {
			hops = append(hops, leaderHop{from: u, s: s, i: i})
		}
	}
	slices.SortStableFunc(hops, func(a, b leaderHop) int { return cmp.Compare(score(b), score(a)) })
	return hops
}
