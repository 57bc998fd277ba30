package group

// Server-side assignors of consumer groups (KIP-848, group.consumer.
// assignors): "uniform", the default, and "range". An assignor is a pure
// function from the members (their subscriptions and current target
// assignment) and the subscribed topics to each member's new target
// assignment. Both are deterministic: members and topics are taken in
// sorted order.

import (
	"bytes"
	"cmp"
	"maps"
	"slices"
)

// assignorMember is one member as an assignor sees it.
type assignorMember struct {
	id                 string
	instanceID, rackID *string
	// topics are the ids of the topics it subscribes to that exist.
	topics map[[16]byte]bool
	// current is its target assignment before this one.
	current map[[16]byte][]int32
}

// assignorTopic is a subscribed topic.
type assignorTopic struct {
	name       string
	partitions int32
}

// assignor computes a target assignment: member id -> topic id ->
// partitions, every member present.
type assignor interface {
	assign(members []assignorMember, topics map[[16]byte]assignorTopic) map[string]map[[16]byte][]int32
}

var assignors = map[string]assignor{
	"uniform": uniformAssignor{},
	"range":   rangeAssignor{},
}

type assignedPartition struct {
	topic [16]byte
	p     int32
}

// uniformAssignor spreads the partitions as evenly as the subscriptions
// allow and moves as few as it can: a member keeps the partitions it had
// (those still subscribed and existing, each kept by one member only);
// the others go to the subscribed member with the fewest partitions; then,
// while a member has two or more partitions more than another that could
// take one of them, one moves.
type uniformAssignor struct{}

func (uniformAssignor) assign(members []assignorMember, topics map[[16]byte]assignorTopic) map[string]map[[16]byte][]int32 {
	ms := slices.Clone(members)
	slices.SortFunc(ms, func(a, b assignorMember) int { return cmp.Compare(a.id, b.id) })
	owner := map[assignedPartition]int{} // partition -> index in ms
	count := make([]int, len(ms))
	// 1. Keep what is still valid.
	for i, m := range ms {
		for _, t := range sortedKeys(m.current) {
			if !m.topics[t] {
				continue
			}
			for _, p := range m.current[t] {
				tp := assignedPartition{t, p}
				if _, taken := owner[tp]; taken || p < 0 || p >= topics[t].partitions {
					continue
				}
				owner[tp] = i
				count[i]++
			}
		}
	}
	// 2. Give out the rest, topics with the fewest subscribers first.
	subscribers := map[[16]byte][]int{}
	for i, m := range ms {
		for t := range m.topics {
			if _, ok := topics[t]; ok {
				subscribers[t] = append(subscribers[t], i)
			}
		}
	}
	order := make([][16]byte, 0, len(subscribers))
	for t := range subscribers {
		order = append(order, t)
	}
	slices.SortFunc(order, func(a, b [16]byte) int {
		if c := cmp.Compare(len(subscribers[a]), len(subscribers[b])); c != 0 {
			return c
		}
		return compareIDs(a, b)
	})
	fewest := func(cands []int) int {
		best := cands[0]
		for _, i := range cands[1:] {
			if count[i] < count[best] {
				best = i
			}
		}
		return best
	}
	for _, t := range order {
		for p := int32(0); p < topics[t].partitions; p++ {
			tp := assignedPartition{t, p}
			if _, taken := owner[tp]; taken {
				continue
			}
			i := fewest(subscribers[t])
			owner[tp] = i
			count[i]++
		}
	}
	// 3. Balance: move one partition at a time from the fullest member to
	// the emptiest one that can take it, while they differ by two or more.
	held := func(i int) []assignedPartition {
		var out []assignedPartition
		for tp, o := range owner {
			if o == i {
				out = append(out, tp)
			}
		}
		slices.SortFunc(out, func(a, b assignedPartition) int {
			if c := compareIDs(a.topic, b.topic); c != 0 {
				return c
			}
			return cmp.Compare(a.p, b.p)
		})
		return out
	}
	for moves := 0; moves < len(owner)*len(ms)+1; moves++ {
		moved := false
		byCount := make([]int, len(ms))
		for i := range byCount {
			byCount[i] = i
		}
		slices.SortStableFunc(byCount, func(a, b int) int { return cmp.Compare(count[b], count[a]) })
	search:
		for _, from := range byCount {
			parts := held(from)
			for k := len(parts) - 1; k >= 0; k-- {
				tp := parts[k]
				to := fewest(subscribers[tp.topic])
				if count[from]-count[to] >= 2 {
					owner[tp] = to
					count[from]--
					count[to]++
					moved = true
					break search
				}
			}
		}
		if !moved {
			break
		}
	}
	return collect(ms, owner)
}

// rangeAssignor gives each member contiguous ranges of each topic it
// subscribes to: per topic, its subscribers in member id order share the
// partitions, the first (partitions mod subscribers) one more, so
// co-partitioned topics go to the same members partition by partition.
type rangeAssignor struct{}

func (rangeAssignor) assign(members []assignorMember, topics map[[16]byte]assignorTopic) map[string]map[[16]byte][]int32 {
	ms := slices.Clone(members)
	slices.SortFunc(ms, func(a, b assignorMember) int { return cmp.Compare(a.id, b.id) })
	owner := map[assignedPartition]int{}
	ids := make([][16]byte, 0, len(topics))
	for t := range topics {
		ids = append(ids, t)
	}
	slices.SortFunc(ids, compareIDs)
	for _, t := range ids {
		var subs []int
		for i, m := range ms {
			if m.topics[t] {
				subs = append(subs, i)
			}
		}
		if len(subs) == 0 {
			continue
		}
		n := topics[t].partitions
		per, extra := n/int32(len(subs)), n%int32(len(subs))
		next := int32(0)
		for k, i := range subs {
			size := per
			if int32(k) < extra {
				size++
			}
			for p := next; p < next+size; p++ {
				owner[assignedPartition{t, p}] = i
			}
			next += size
		}
	}
	return collect(ms, owner)
}

// collect turns partition owners into each member's assignment.
func collect(ms []assignorMember, owner map[assignedPartition]int) map[string]map[[16]byte][]int32 {
	out := make(map[string]map[[16]byte][]int32, len(ms))
	for _, m := range ms {
		out[m.id] = map[[16]byte][]int32{}
	}
	for tp, i := range owner {
		a := out[ms[i].id]
		a[tp.topic] = append(a[tp.topic], tp.p)
	}
	for _, a := range out {
		for t := range a {
			slices.Sort(a[t])
		}
	}
	return out
}

// sortedKeys returns the topic ids of m in order.
func sortedKeys[V any](m map[[16]byte]V) [][16]byte {
	return slices.SortedFunc(maps.Keys(m), compareIDs)
}

func compareIDs(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) }
