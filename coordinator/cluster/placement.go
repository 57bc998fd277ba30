package cluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// ErrReplicationFactor is a replication factor below one or above the
// number of live brokers; Kafka answers INVALID_REPLICATION_FACTOR.
var ErrReplicationFactor = errors.New("cluster: invalid replication factor")

// Placer places new partitions' replicas over the live brokers, striped
// across racks as Kafka's controller places them:
//
//   - racks, sorted by name (brokers without a rack form one rack), are
//     visited round robin from a random first rack, and each partition
//     starts one rack further than the one before, so leaders stripe over
//     racks and brokers;
//   - within a rack, brokers (sorted by id) are taken round robin, leaders
//     and other replicas each from their own random first broker, so
//     consecutive partitions land on different brokers of the same rack;
//   - one partition's replicas go to distinct brokers, on as many racks as
//     it has replicas (up to the number of racks): a rack whose brokers are
//     all taken by this partition is passed over.
//
// With racks A, B, C of three brokers each and every offset zero, four
// partitions of replication factor 3 get A0 B0 C0, B0 C1 A0, C0 A1 B1,
// A1 B2 C2: leaders A0 B0 C0 A1 ..., the other replicas each rack's
// brokers in turn.
//
// A Placer keeps its cursors between calls, so partitions placed in
// several calls (CreateTopics, then CreatePartitions) go on striping. It is
// a pure state machine: no clock, no etcd; randomness only from the source
// it is given.
type Placer struct {
	racks []*placementRack
	next  int // rack of the next partition's first replica
}

type placementRack struct {
	name    string
	brokers []int32
	// The brokers the rack gives next as a leader and as another replica.
	nextLeader, nextFollower int
}

// NewPlacer makes a Placer over brokers (the live ones), with its starting
// offsets drawn from rng.
func NewPlacer(brokers []BrokerInfo, rng *rand.Rand) *Placer {
	byRack := map[string]*placementRack{}
	p := &Placer{}
	for _, b := range brokers {
		name := ""
		if b.Rack != nil {
			name = *b.Rack
		}
		r := byRack[name]
		if r == nil {
			r = &placementRack{name: name}
			byRack[name] = r
			p.racks = append(p.racks, r)
		}
		r.brokers = append(r.brokers, b.NodeID)
	}
	slices.SortFunc(p.racks, func(a, b *placementRack) int { return strings.Compare(a.name, b.name) })
	for _, r := range p.racks {
		slices.Sort(r.brokers)
		r.brokers = slices.Compact(r.brokers)
		r.nextLeader = rng.IntN(len(r.brokers))
		r.nextFollower = rng.IntN(len(r.brokers))
	}
	if len(p.racks) > 0 {
		p.next = rng.IntN(len(p.racks))
	}
	return p
}

// brokers counts the brokers the Placer places on.
func (p *Placer) brokers() int {
	n := 0
	for _, r := range p.racks {
		n += len(r.brokers)
	}
	return n
}

// Place returns replica lists, preferred leader first, for count new
// partitions of replication factor rf.
func (p *Placer) Place(count int, rf int) ([][]int32, error) {
	if n := p.brokers(); rf < 1 || rf > n {
		return nil, fmt.Errorf("%w: replication factor %d, %d live brokers", ErrReplicationFactor, rf, n)
	}
	if count < 0 {
		return nil, fmt.Errorf("%w: %d partitions", ErrInvalidPartitions, count)
	}
	out := make([][]int32, count)
	for i := range out {
		out[i] = p.placeOne(rf)
	}
	return out, nil
}

// placeOne places one partition: replica k comes from the k-th rack after
// the partition's first, skipping racks with no broker left for it. A rack
// keeps two cursors, one for the leaders it gives and one for the other
// replicas, each moving one broker per broker given: with a single cursor
// for both, the number of replicas a partition takes from a rack and the
// rotation of racks can fall into step, and every leader lands on the
// same few brokers.
func (p *Placer) placeOne(rf int) []int32 {
	replicas := make([]int32, 0, rf)
	rack := p.next
	p.next = (p.next + 1) % len(p.racks)
	for len(replicas) < rf {
		r := p.racks[rack]
		rack = (rack + 1) % len(p.racks)
		cursor := &r.nextFollower
		if len(replicas) == 0 {
			cursor = &r.nextLeader
		}
		for range r.brokers {
			b := r.brokers[*cursor]
			*cursor = (*cursor + 1) % len(r.brokers)
			if !slices.Contains(replicas, b) {
				replicas = append(replicas, b)
				break
			}
		}
	}
	return replicas
}
