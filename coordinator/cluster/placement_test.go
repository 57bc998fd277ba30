package cluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func rackBrokers(racks map[string][]int32) []BrokerInfo {
	var out []BrokerInfo
	for rack, ids := range racks {
		for _, id := range ids {
			b := BrokerInfo{NodeID: id}
			if rack != "" {
				r := rack
				b.Rack = &r
			}
			out = append(out, b)
		}
	}
	return out
}

// zeroOffsets sets every starting offset of p to zero.
func zeroOffsets(p *Placer) *Placer {
	p.next = 0
	for _, r := range p.racks {
		r.nextLeader, r.nextFollower = 0, 0
	}
	return p
}

func TestPlacerStripes(t *testing.T) {
	// Racks A, B, C of three brokers: A0..A2 = 10..12, B = 20..22, C = 30..32.
	p := zeroOffsets(NewPlacer(rackBrokers(map[string][]int32{"a": {12, 10, 11}, "b": {20, 21, 22}, "c": {30, 31, 32}}), rand.New(rand.NewPCG(1, 2))))
	got, err := p.Place(3, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int32{{10, 20, 30}, {20, 31, 10}, {30, 11, 21}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("placement %v, want %v", got, want)
	}
	// The next call goes on where this one stopped.
	if got, _ := p.Place(1, 3); fmt.Sprint(got) != fmt.Sprint([][]int32{{11, 22, 32}}) {
		t.Errorf("fourth partition %v, want [[11 22 32]]", got)
	}
}

// TestPlacerProperties places many topics over several cluster shapes and
// checks what must always hold: distinct replicas, every rack used before
// one is used twice, and, when racks are of equal size, leaders spread
// within one of even and replicas within two.
func TestPlacerProperties(t *testing.T) {
	shapes := []map[string][]int32{
		{"": {1, 2, 3}},
		{"": {1, 2, 3, 4, 5}},
		{"a": {1, 2}, "b": {3, 4}, "c": {5, 6}},
		{"a": {1, 2, 3}, "b": {4, 5, 6}},
		{"a": {1}, "b": {2, 3, 4, 5}}, // uneven: rack spread still comes first
	}
	for si, shape := range shapes {
		brokers := rackBrokers(shape)
		rackOf := map[int32]string{}
		for rack, ids := range shape {
			for _, id := range ids {
				rackOf[id] = rack
			}
		}
		for seed := range uint64(20) {
			for rf := 1; rf <= len(brokers); rf++ {
				p := NewPlacer(brokers, rand.New(rand.NewPCG(seed, uint64(si))))
				const count = 60
				parts, err := p.Place(count, rf)
				if err != nil {
					t.Fatalf("shape %d rf %d: %v", si, rf, err)
				}
				leaders, replicas := map[int32]int{}, map[int32]int{}
				for i, rs := range parts {
					if len(rs) != rf {
						t.Fatalf("shape %d rf %d partition %d: %v, want %d replicas", si, rf, i, rs, rf)
					}
					racks := map[string]int{}
					for j, b := range rs {
						if slices.Contains(rs[:j], b) {
							t.Fatalf("shape %d rf %d partition %d: %v repeats broker %d", si, rf, i, rs, b)
						}
						if _, ok := rackOf[b]; !ok {
							t.Fatalf("shape %d rf %d partition %d: %v names broker %d, not live", si, rf, i, rs, b)
						}
						racks[rackOf[b]]++
						replicas[b]++
					}
					leaders[rs[0]]++
					if want := min(rf, len(shape)); len(racks) < want {
						t.Errorf("shape %d rf %d partition %d: %v spans %d racks, want %d", si, rf, i, rs, len(racks), want)
					}
				}
				if equalRacks(shape) {
					spread(t, fmt.Sprintf("shape %d rf %d seed %d leaders", si, rf, seed), leaders, len(brokers), count, 0)
					spread(t, fmt.Sprintf("shape %d rf %d seed %d replicas", si, rf, seed), replicas, len(brokers), count*rf, 1)
				}
			}
		}
	}
}

func equalRacks(shape map[string][]int32) bool {
	n := -1
	for _, ids := range shape {
		if n >= 0 && len(ids) != n {
			return false
		}
		n = len(ids)
	}
	return true
}

// spread fails unless total is shared over n brokers within slack of even
// (rounded down and up).
func spread(t *testing.T, what string, counts map[int32]int, n, total, slack int) {
	t.Helper()
	lo, hi := total/n-slack, (total+n-1)/n+slack
	if len(counts) != n && lo > 0 {
		t.Errorf("%s: %d of %d brokers used: %v", what, len(counts), n, counts)
	}
	for b, c := range counts {
		if c < lo || c > hi {
			t.Errorf("%s: broker %d has %d of %d, want %d..%d (%v)", what, b, c, total, lo, hi, counts)
		}
	}
}

func TestPlacerTwelveOverThree(t *testing.T) {
	// The cluster issue's first check: 12 partitions, replication factor 1,
	// three brokers: 4 leaders each, whatever the random start.
	for seed := range uint64(50) {
		p := NewPlacer(rackBrokers(map[string][]int32{"": {1, 2, 3}}), rand.New(rand.NewPCG(seed, 0)))
		parts, err := p.Place(12, 1)
		if err != nil {
			t.Fatal(err)
		}
		n := map[int32]int{}
		for _, rs := range parts {
			n[rs[0]]++
		}
		if n[1] != 4 || n[2] != 4 || n[3] != 4 {
			t.Fatalf("seed %d: leaders %v, want 4 each", seed, n)
		}
	}
}

func TestPlacerRefuses(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	three := NewPlacer(rackBrokers(map[string][]int32{"": {1, 2, 3}}), rng)
	for _, rf := range []int{0, -1, 4} {
		if _, err := three.Place(1, rf); !errors.Is(err, ErrReplicationFactor) {
			t.Errorf("rf %d over 3 brokers: %v, want ErrReplicationFactor", rf, err)
		}
	}
	if _, err := NewPlacer(nil, rng).Place(1, 1); !errors.Is(err, ErrReplicationFactor) {
		t.Errorf("no live broker: %v, want ErrReplicationFactor", err)
	}
	if _, err := three.Place(-1, 1); !errors.Is(err, ErrInvalidPartitions) {
		t.Errorf("-1 partitions: %v, want ErrInvalidPartitions", err)
	}
	if got, err := three.Place(0, 3); err != nil || len(got) != 0 {
		t.Errorf("0 partitions: %v, %v", got, err)
	}
}
