package broker

// The replicas' side of partition reassignment (the registry's side is in
// coordinator/cluster/reassign.go; the APIs in 45_ and 46_). Nothing here
// drives a move: syncPartitions opens the log of a partition this broker
// is added to and its fetcher follows the leader like any follower; the
// leader takes the new follower's fetches (applyRole starts its
// replication state afresh for the new replica set) and proposes it for
// the ISR once caught up; the controller completes the move; a broker
// removed retires its replica and deletes the log.

import (
	"slices"

	"github.com/gregor-io/gregor/coordinator/cluster"
)

// retireDropped ends the roles of the partitions of old that next no
// longer holds (moved away by a reassignment, deleted with their topic,
// or replaced by a new topic of the same name), before their logs are
// deleted: a produce waiting for its followers answers
// NOT_LEADER_OR_FOLLOWER as soon as the deletion wakes it, rather than at
// its timeout, and the fetcher drops what it fetched for them. Their state
// is kept (requests in flight read it), with no leader.
func (b *Broker) retireDropped(old, next *partitionTable) {
	kept := map[*partition]bool{}
	for _, ps := range next.byName {
		for _, p := range ps {
			if p != nil {
				kept[p] = true
			}
		}
	}
	for _, ps := range old.byName {
		for _, p := range ps {
			if p == nil || kept[p] {
				continue
			}
			p.role.Lock()
			p.lead.Store(nil)
			if st := p.state.Load(); st != nil && st.Leader >= 0 {
				gone := *st
				gone.Leader = -1
				p.state.Store(&gone)
			}
			p.role.Unlock()
		}
	}
}

// countReassignmentBytes counts n bytes a replica fetcher appended to a
// partition in state st, if a reassignment is adding this broker to its
// replicas.
func (b *Broker) countReassignmentBytes(st *cluster.PartitionState, n int) {
	if n > 0 && st != nil && slices.Contains(st.AddingReplicas, b.cfg.NodeID) {
		b.metrics.reassignBytesIn.Add(float64(n))
	}
}
