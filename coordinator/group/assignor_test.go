package group

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func tid(n byte) [16]byte { return [16]byte{0xa5, n} }

// checkAssignment fails unless every partition of a subscribed topic is
// assigned exactly once, to a member subscribed to it.
func checkAssignment(t *testing.T, what string, members []assignorMember, topics map[[16]byte]assignorTopic, got map[string]map[[16]byte][]int32) {
	t.Helper()
	byID := map[string]assignorMember{}
	for _, m := range members {
		byID[m.id] = m
		if _, ok := got[m.id]; !ok {
			t.Fatalf("%s: member %s missing from the result", what, m.id)
		}
	}
	seen := map[assignedPartition]string{}
	for id, a := range got {
		for topic, ps := range a {
			if !byID[id].topics[topic] {
				t.Fatalf("%s: %s got topic %x it does not subscribe to", what, id, topic[:2])
			}
			for _, p := range ps {
				tp := assignedPartition{topic, p}
				if other, dup := seen[tp]; dup {
					t.Fatalf("%s: partition %x-%d to %s and %s", what, topic[:2], p, other, id)
				}
				if p < 0 || p >= topics[topic].partitions {
					t.Fatalf("%s: partition %d of a topic with %d", what, p, topics[topic].partitions)
				}
				seen[tp] = id
			}
		}
	}
	for topic, tm := range topics {
		subscribed := false
		for _, m := range members {
			subscribed = subscribed || m.topics[topic]
		}
		for p := int32(0); subscribed && p < tm.partitions; p++ {
			if _, ok := seen[assignedPartition{topic, p}]; !ok {
				t.Fatalf("%s: partition %x-%d unassigned", what, topic[:2], p)
			}
		}
	}
}

func countOf(a map[[16]byte][]int32) int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

// TestUniformAssignor: balanced for homogeneous subscriptions, valid for
// heterogeneous ones, sticky when a member leaves or joins, and
// deterministic; over random groups.
func TestUniformAssignor(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := range 300 {
		nt := 1 + r.IntN(4)
		topics := map[[16]byte]assignorTopic{}
		for i := range nt {
			topics[tid(byte(i))] = assignorTopic{name: fmt.Sprint("t", i), partitions: int32(1 + r.IntN(24))}
		}
		homogeneous := iter%2 == 0
		nm := 1 + r.IntN(8)
		var members []assignorMember
		for i := range nm {
			m := assignorMember{id: fmt.Sprintf("m%02d", i), topics: map[[16]byte]bool{}, current: map[[16]byte][]int32{}}
			for j := range nt {
				if homogeneous || r.IntN(2) == 0 || j == 0 {
					m.topics[tid(byte(j))] = true
				}
			}
			members = append(members, m)
		}
		what := fmt.Sprintf("iteration %d (%d topics, %d members, homogeneous %v)", iter, nt, nm, homogeneous)
		got := uniformAssignor{}.assign(members, topics)
		checkAssignment(t, what, members, topics, got)
		if again := (uniformAssignor{}).assign(members, topics); fmt.Sprint(again) != fmt.Sprint(got) {
			t.Fatalf("%s: not deterministic", what)
		}
		if homogeneous {
			lo, hi := 1<<30, 0
			for _, a := range got {
				lo, hi = min(lo, countOf(a)), max(hi, countOf(a))
			}
			if hi-lo > 1 {
				t.Fatalf("%s: counts from %d to %d", what, lo, hi)
			}
		}
		// Sticky: the members' current assignments are this result; one
		// leaves: the others keep all they had unless they must give
		// some up for balance (they only gain, or lose at most what
		// balance needs).
		if nm < 2 {
			continue
		}
		for i := range members {
			members[i].current = got[members[i].id]
		}
		rest := members[1:]
		after := uniformAssignor{}.assign(rest, topics)
		checkAssignment(t, what+" after a leave", rest, topics, after)
		if homogeneous {
			for _, m := range rest {
				kept := 0
				for topic, ps := range got[m.id] {
					for _, p := range ps {
						for _, q := range after[m.id][topic] {
							if p == q {
								kept++
							}
						}
					}
				}
				if kept != countOf(got[m.id]) && countOf(after[m.id]) >= countOf(got[m.id]) {
					t.Fatalf("%s: %s lost %d of its %d partitions after another left", what, m.id, countOf(got[m.id])-kept, countOf(got[m.id]))
				}
			}
		}
	}
}

// TestUniformAssignorJoin: a member joining a balanced group takes only
// what balance needs: the others keep the rest.
func TestUniformAssignorJoin(t *testing.T) {
	topics := map[[16]byte]assignorTopic{tid(1): {name: "t", partitions: 6}}
	a := assignorMember{id: "a", topics: map[[16]byte]bool{tid(1): true}, current: map[[16]byte][]int32{tid(1): {0, 1, 2, 3, 4, 5}}}
	b := assignorMember{id: "b", topics: map[[16]byte]bool{tid(1): true}, current: map[[16]byte][]int32{}}
	got := uniformAssignor{}.assign([]assignorMember{a, b}, topics)
	checkAssignment(t, "join", []assignorMember{a, b}, topics, got)
	if countOf(got["a"]) != 3 || countOf(got["b"]) != 3 {
		t.Fatalf("join: %v", got)
	}
}

// TestRangeAssignor: contiguous ranges, the first members one more, and
// co-partitioned topics aligned.
func TestRangeAssignor(t *testing.T) {
	topics := map[[16]byte]assignorTopic{tid(1): {name: "t", partitions: 7}, tid(2): {name: "u", partitions: 7}}
	var ms []assignorMember
	for _, id := range []string{"c", "a", "b"} {
		ms = append(ms, assignorMember{id: id, topics: map[[16]byte]bool{tid(1): true, tid(2): true}})
	}
	got := rangeAssignor{}.assign(ms, topics)
	checkAssignment(t, "range", ms, topics, got)
	want := map[string]string{"a": "[0 1 2]", "b": "[3 4]", "c": "[5 6]"}
	for id, w := range want {
		if fmt.Sprint(got[id][tid(1)]) != w || fmt.Sprint(got[id][tid(2)]) != w {
			t.Fatalf("range: %s got %v and %v, want %s of each", id, got[id][tid(1)], got[id][tid(2)], w)
		}
	}
}

func BenchmarkUniformAssign(b *testing.B) {
	topics := map[[16]byte]assignorTopic{}
	for i := range 10 {
		topics[tid(byte(i))] = assignorTopic{partitions: 100}
	}
	var ms []assignorMember
	for i := range 100 {
		m := assignorMember{id: fmt.Sprintf("m%03d", i), topics: map[[16]byte]bool{}}
		for t := range topics {
			m.topics[t] = true
		}
		ms = append(ms, m)
	}
	first := uniformAssignor{}.assign(ms, topics)
	for i := range ms {
		ms[i].current = first[ms[i].id]
	}
	ms = ms[1:] // one member left: the rest rebalance from their assignments
	b.ResetTimer()
	for range b.N {
		uniformAssignor{}.assign(ms, topics)
	}
}
