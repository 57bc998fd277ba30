package cluster

// Partition reassignment (Kafka's KIP-455: AlterPartitionReassignments and
// ListPartitionReassignments). A reassignment lives in the partition state
// itself (PartitionState.AddingReplicas and RemovingReplicas), so it
// survives every restart; starting, replacing and cancelling one are
// compare-and-swap writes on the partition key by whichever broker serves
// the request, and its completion is a controller decision
// (decideReassignments), like its leader elections. The transitions are
// pure functions of a Metadata, tested rule by rule.

import (
	"context"
	"fmt"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// reasonError is a sentinel error with the message Kafka gives for the
// same failure: errors.Is sees the sentinel, Error is the message.
type reasonError struct {
	err error
	msg string
}

func (e *reasonError) Error() string { return e.msg }
func (e *reasonError) Unwrap() error { return e.err }

func reason(err error, format string, args ...any) error {
	return &reasonError{err: err, msg: fmt.Sprintf(format, args...)}
}

// Reassigning reports whether a reassignment of the partition is in flight.
func (st PartitionState) Reassigning() bool {
	return len(st.AddingReplicas) > 0 || len(st.RemovingReplicas) > 0
}

// OriginalReplicas returns the replicas the partition had before the
// reassignment in flight (Replicas without AddingReplicas), in replica
// order; Replicas when none is in flight.
func (st PartitionState) OriginalReplicas() []int32 { return without(st.Replicas, st.AddingReplicas) }

// TargetReplicas returns the replicas the reassignment in flight moves the
// partition to (Replicas without RemovingReplicas), in replica order;
// Replicas when none is in flight.
func (st PartitionState) TargetReplicas() []int32 { return without(st.Replicas, st.RemovingReplicas) }

// without returns the members of a not in b, in a's order, as a new slice.
func without(a, b []int32) []int32 {
	out := make([]int32, 0, len(a))
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// sortedWithout is without, sorted ascending (as Kafka lists adding and
// removing replicas); nil when empty, so that a state outside a
// reassignment stores neither field.
func sortedWithout(a, b []int32) []int32 {
	out := without(a, b)
	if len(out) == 0 {
		return nil
	}
	slices.Sort(out)
	return out
}

// sameState reports whether two partition states are equal field by field.
func sameState(a, b PartitionState) bool {
	return a.Leader == b.Leader && a.LeaderEpoch == b.LeaderEpoch && a.PartitionEpoch == b.PartitionEpoch &&
		slices.Equal(a.ISR, b.ISR) && slices.Equal(a.Replicas, b.Replicas) &&
		slices.Equal(a.AddingReplicas, b.AddingReplicas) && slices.Equal(a.RemovingReplicas, b.RemovingReplicas)
}

// registered reports whether broker id is registered, live or fenced.
func (m *Metadata) registered(id int32) bool {
	if _, ok := m.Broker(id); ok {
		return true
	}
	return slices.ContainsFunc(m.Fenced, func(b BrokerInfo) bool { return b.NodeID == id })
}

// validateReassignTarget applies Kafka's checks of a manual assignment
// (ReplicationControlManager.validateManualPartitionAssignment): not
// empty, and in ascending id order, each id a registered broker (live or
// fenced: a stopped broker may be assigned) named once.
func validateReassignTarget(md *Metadata, target []int32) error {
	if len(target) == 0 {
		return reason(ErrInvalidAssignment, "The manual partition assignment includes an empty replica list.")
	}
	sorted := slices.Sorted(slices.Values(target))
	for i, id := range sorted {
		if !md.registered(id) {
			return reason(ErrInvalidAssignment,
				"The manual partition assignment includes broker %d, but no such broker is registered.", id)
		}
		if i > 0 && sorted[i-1] == id {
			return reason(ErrInvalidAssignment,
				"The manual partition assignment includes the broker %d more than once.", id)
		}
	}
	return nil
}

// withLeader sets next's leader for its new ISR: the current leader while
// it is in the ISR, else the first eligible ISR member in replica order
// (-1 with none), with a leader epoch bump when it changes.
func withLeader(md *Metadata, cur PartitionState, next PartitionState) PartitionState {
	next.Leader = -1
	if cur.Leader >= 0 && slices.Contains(next.ISR, cur.Leader) {
		next.Leader = cur.Leader
	} else {
		for _, r := range next.Replicas {
			if slices.Contains(next.ISR, r) && md.eligible(r) {
				next.Leader = r
				break
			}
		}
	}
	if next.Leader != cur.Leader {
		next.LeaderEpoch = cur.LeaderEpoch + 1
	}
	return next
}

// revertISR is the ISR of st without the replicas its reassignment adds,
// given that original is what remains of the replicas. With no member
// left (every in-sync replica was being added), the first original
// replica is put back alone, an unclean election: refused with
// ErrInvalidAssignment unless unclean leader election is enabled for the
// topic, as Kafka refuses to revert such a reassignment.
func revertISR(md *Metadata, topic string, p int32, st PartitionState, drop, original []int32, uncleanDefault bool) ([]int32, error) {
	isr := without(st.ISR, drop)
	if len(isr) > 0 {
		return isr, nil
	}
	if len(original) == 0 || !uncleanEnabled(md, topic, uncleanDefault) {
		return nil, reason(ErrInvalidAssignment,
			"Unable to revert partition assignment for %s:%d because it would require an unclean leader election.", topic, p)
	}
	return []int32{original[0]}, nil
}

// startReassignment returns the state that starts moving partition p of
// topic, in state st, to target (Kafka's rules, KIP-455): the replicas
// become target followed by the original replicas not in it; adding are
// the target's replicas that are not original, removing the original ones
// not in the target; ISR and leader stay. A reassignment in flight is
// replaced, starting again from its original replicas: the replicas it
// was adding that the new target lacks leave the replicas and the ISR (and
// the leadership, if one led). The partition epoch is bumped; a
// reassignment that needs no catching up completes at once
// (completeReassignment), as Kafka's does in the same request. A target
// that changes nothing (the current replicas with nothing in flight, or
// the target in flight again) returns st as it is.
//
// Errors, as Kafka checks them: ErrInvalidAssignment for an empty target,
// an id that is not a registered broker, or one named twice;
// ErrInvalidReplicationFactor when allowRFChange is false and the target's
// size differs from the replica set the partition is headed for (KIP-860).
func startReassignment(md *Metadata, topic string, p int32, st PartitionState, target []int32, allowRFChange, uncleanDefault bool) (PartitionState, error) {
	if err := validateReassignTarget(md, target); err != nil {
		return st, err
	}
	if cur := len(st.TargetReplicas()); !allowRFChange && cur != len(target) {
		return st, reason(ErrInvalidReplicationFactor, "The replication factor is changed from %d to %d", cur, len(target))
	}
	original := st.OriginalReplicas()
	dropped := without(st.AddingReplicas, target)
	next := st
	next.Replicas = append(slices.Clone(target), without(original, target)...)
	next.AddingReplicas = sortedWithout(target, original)
	next.RemovingReplicas = sortedWithout(original, target)
	next.ISR = slices.Clone(st.ISR)
	if len(dropped) > 0 {
		isr, err := revertISR(md, topic, p, st, dropped, original, uncleanDefault)
		if err != nil {
			return st, err
		}
		next.ISR = isr
		next = withLeader(md, st, next)
	}
	if done, ok := completeReassignment(md, next); ok {
		next = done
	}
	// One transition: one bump of each epoch at most.
	next.LeaderEpoch, next.PartitionEpoch = st.LeaderEpoch, st.PartitionEpoch
	if sameState(next, st) {
		return st, nil
	}
	if next.Leader != st.Leader {
		next.LeaderEpoch++
	}
	next.PartitionEpoch++
	return next, nil
}

// cancelReassignment returns the state that cancels the reassignment in
// flight of partition p of topic (Kafka's PartitionReassignmentRevert):
// the replicas go back to the original ones, the replicas being added
// leave the ISR, and if one of them led, the first eligible remaining ISR
// member leads (leader epoch bump). ErrNoReassignment when none is in
// flight; ErrInvalidAssignment when only adding replicas are in sync and
// unclean leader election is off.
func cancelReassignment(md *Metadata, topic string, p int32, st PartitionState, uncleanDefault bool) (PartitionState, error) {
	if !st.Reassigning() {
		return st, reason(ErrNoReassignment, "No partition reassignment is in progress.")
	}
	original := st.OriginalReplicas()
	isr, err := revertISR(md, topic, p, st, st.AddingReplicas, original, uncleanDefault)
	if err != nil {
		return st, err
	}
	next := st
	next.Replicas, next.ISR = original, isr
	next.AddingReplicas, next.RemovingReplicas = nil, nil
	next = withLeader(md, st, next)
	next.PartitionEpoch = st.PartitionEpoch + 1
	return next, nil
}

// completeReassignment returns the state that ends st's reassignment, and
// whether it may end now (Kafka's maybeCompleteReassignment): every
// replica of the target, the adding ones included, is in the ISR once the
// removing replicas are taken out of it. Replicas become the target, the
// ISR loses the removing replicas, adding and removing are cleared and
// the partition epoch is bumped. The leader stays if it is in the target
// and eligible; else the first eligible ISR member in target order leads
// (leader epoch bump); with none eligible, a leader in the target stays
// (decideLeaders deals with it), and one outside waits for a replica to
// become eligible.
func completeReassignment(md *Metadata, st PartitionState) (PartitionState, bool) {
	if !st.Reassigning() {
		return st, false
	}
	target := st.TargetReplicas()
	isr := without(st.ISR, st.RemovingReplicas)
	if len(target) == 0 || len(isr) == 0 {
		return st, false
	}
	for _, r := range target {
		if !slices.Contains(isr, r) {
			return st, false
		}
	}
	next := st
	next.Replicas, next.ISR = target, isr
	next.AddingReplicas, next.RemovingReplicas = nil, nil
	inTarget := slices.Contains(target, st.Leader)
	if !inTarget || !md.eligible(st.Leader) {
		leader := int32(-1)
		for _, r := range target {
			if md.eligible(r) {
				leader = r
				break
			}
		}
		switch {
		case leader >= 0:
			next.Leader = leader
		case !inTarget:
			return st, false
		}
	}
	if next.Leader != st.Leader {
		next.LeaderEpoch = st.LeaderEpoch + 1
	}
	next.PartitionEpoch = st.PartitionEpoch + 1
	return next, true
}

// decideReassignments returns the completions the controller writes for
// the cluster md shows: each partition whose reassignment may end now
// (completeReassignment), in topic and partition order. A pure function
// of md, like decideLeaders.
func decideReassignments(md *Metadata) []leaderChange {
	var out []leaderChange
	eachPartition(md, func(name string, p int32, st PartitionState, rev int64) {
		if next, ok := completeReassignment(md, st); ok {
			out = append(out, leaderChange{topic: name, partition: p, rev: rev, prev: st, next: next})
		}
	})
	return out
}

// decideControl is what the controller writes on each new view: the
// changes of decideLeaders, then the completed reassignments of the
// partitions it leaves alone (a partition changes once per transaction;
// the other decision is made again on the next view).
func decideControl(md *Metadata, uncleanDefault bool) []leaderChange {
	return mergeDecisions(decideLeaders(md, uncleanDefault), decideReassignments(md))
}

// mergeDecisions appends to a the changes of b whose partitions a does not
// change.
func mergeDecisions(a, b []leaderChange) []leaderChange {
	type tp struct {
		topic string
		p     int32
	}
	seen := make(map[tp]bool, len(a))
	for _, ch := range a {
		seen[tp{ch.topic, ch.partition}] = true
	}
	for _, ch := range b {
		if !seen[tp{ch.topic, ch.partition}] {
			seen[tp{ch.topic, ch.partition}] = true
			a = append(a, ch)
		}
	}
	return a
}

// ReassignTarget is one partition of an AlterPartitionReassignments
// request: the replicas to move it to, or nil to cancel the reassignment
// in flight.
type ReassignTarget struct {
	Topic     string
	Partition int32
	Replicas  []int32
}

// AlterReassignments starts, replaces or cancels the reassignments of the
// partitions targets name (Kafka's AlterPartitionReassignments, any broker
// serving it). It returns one error per target, nil for a success:
// ErrUnknownTopic for an unknown topic or partition, ErrNoReassignment,
// ErrInvalidAssignment, ErrInvalidReplicationFactor (when allowRFChange is
// false), each with Kafka's message as its text. A partition named twice
// takes its targets in order.
//
// The new states are written with compare-and-swap on each partition
// key's mod revision, up to changesPerTxn partitions per transaction; a
// partition another writer changed meanwhile is decided again on a view
// that shows that change. The call returns once this node's view shows
// what it wrote. A non-nil error is a failure of the whole request before
// anything was written (ctx ending: REQUEST_TIMED_OUT; etcd failing), or
// after: ErrNotVisible when the writes were committed but the view did
// not show them in time. If the writes are cut off partway, the targets
// not written get the error in their own place.
func (c *Cluster) AlterReassignments(ctx context.Context, targets []ReassignTarget, allowRFChange bool) ([]error, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	type key struct {
		topic string
		p     int32
	}
	type group struct {
		key
		items []int
	}
	type change struct {
		g          *group
		rev        int64
		prev, next PartitionState
	}
	results := make([]error, len(targets))
	var pending []*group
	byKey := map[key]*group{}
	for i, t := range targets {
		k := key{t.Topic, t.Partition}
		g := byKey[k]
		if g == nil {
			g = &group{key: k}
			byKey[k] = g
			pending = append(pending, g)
		}
		g.items = append(g.items, i)
	}
	wrote, lastRev := false, int64(0)
	fail := func(gs []*group, err error) {
		for _, g := range gs {
			for _, i := range g.items {
				results[i] = err
			}
		}
	}
	for attempt := 0; len(pending) > 0; attempt++ {
		if attempt == maxAttempts {
			fail(pending, ErrConflict)
			break
		}
		md := c.Snapshot()
		var changes []change
		for _, g := range pending {
			st, rev, err := partitionAtRev(md, g.topic, g.p)
			if err != nil {
				fail([]*group{g}, err)
				continue
			}
			cur := st
			for _, i := range g.items {
				var next PartitionState
				if targets[i].Replicas == nil {
					next, err = cancelReassignment(md, g.topic, g.p, cur, c.cfg.UncleanLeaderElection)
				} else {
					next, err = startReassignment(md, g.topic, g.p, cur, targets[i].Replicas, allowRFChange, c.cfg.UncleanLeaderElection)
				}
				results[i] = err
				if err == nil {
					cur = next
				}
			}
			if !sameState(cur, st) {
				changes = append(changes, change{g: g, rev: rev, prev: st, next: cur})
			}
		}
		pending = nil
		for len(changes) > 0 {
			batch := changes[:min(len(changes), changesPerTxn)]
			changes = changes[len(batch):]
			cmps := make([]clientv3.Cmp, 0, len(batch))
			ops := make([]clientv3.Op, 0, len(batch))
			for _, ch := range batch {
				k := c.keys.partition(ch.g.topic, ch.g.p)
				cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", ch.rev))
				ops = append(ops, clientv3.OpPut(k, encode(partitionRecord(ch.next))))
			}
			octx, cancel := c.opCtx(ctx)
			resp, err := c.client.Txn(octx).If(cmps...).Then(ops...).Commit()
			cancel()
			if err == nil && !resp.Succeeded {
				// Another writer changed one of them: decide them (and
				// the rest) again on a view that shows its change.
				err = c.awaitVisible(ctx, resp.Header.Revision)
				if err == nil {
					for _, ch := range append(batch, changes...) {
						pending = append(pending, ch.g)
					}
					break
				}
			}
			if err != nil {
				if !wrote {
					return nil, fmt.Errorf("alter partition reassignments: %w", err)
				}
				for _, ch := range append(batch, changes...) {
					fail([]*group{ch.g}, err)
				}
				pending = nil
				break
			}
			wrote, lastRev = true, resp.Header.Revision
			for _, ch := range batch {
				c.logReassignment(ch.g.topic, ch.g.p, ch.prev, ch.next)
			}
		}
	}
	if wrote {
		if err := c.awaitVisible(ctx, lastRev); err != nil {
			return nil, fmt.Errorf("alter partition reassignments: %w", err)
		}
	}
	return results, nil
}

// partitionAtRev returns partition p of topic as md shows it, with its
// key's mod revision; ErrUnknownTopic, with Kafka's message, when md has
// no such topic or partition (or no state stored for it).
func partitionAtRev(md *Metadata, topic string, p int32) (PartitionState, int64, error) {
	t := md.Topics[topic]
	if t == nil {
		return PartitionState{}, 0, reason(ErrUnknownTopic, "Unable to find a topic named %s.", topic)
	}
	if p < 0 || int(p) >= len(t.Partitions) || int(p) >= len(t.revs) || t.revs[p] == 0 {
		return PartitionState{}, 0, reason(ErrUnknownTopic, "Unable to find partition %s:%d.", topic, p)
	}
	return t.Partitions[p], t.revs[p], nil
}

// logReassignment logs a reassignment change written by AlterReassignments.
func (c *Cluster) logReassignment(topic string, p int32, prev, next PartitionState) {
	what := "partition reassignment started"
	switch {
	case prev.Reassigning() && !next.Reassigning() && slices.Equal(next.Replicas, prev.OriginalReplicas()):
		what = "partition reassignment cancelled"
	case !next.Reassigning():
		what = "partition reassignment completed at once"
	case prev.Reassigning():
		what = "partition reassignment replaced"
	}
	c.log.Info(what, "topic", topic, "partition", p, "replicas", next.Replicas, "adding", next.AddingReplicas,
		"removing", next.RemovingReplicas, "isr", next.ISR, "leader", next.Leader, "leader_epoch", next.LeaderEpoch,
		"partition_epoch", next.PartitionEpoch)
}
