package cluster

// On-demand leader elections (Kafka's ElectLeaders): preferred, giving a
// partition back to the first of its replicas, and unclean, giving a
// partition that has no live leader one from outside its ISR when no ISR
// member can lead. Any broker serves them, as any Kafka 4 broker forwards
// them to the controller: the new states are written with compare-and-swap
// on each partition key's mod revision, as AlterReassignments writes, so
// an election decided on a stale view writes nothing and is decided again;
// the controller's own decisions compare the same revisions, so neither
// can undo the other unseen.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ElectionTarget names one partition of an ElectLeaders request.
type ElectionTarget struct {
	Topic     string
	Partition int32
}

// ElectionResult is the outcome of one partition's election: Err nil when
// it was made.
type ElectionResult struct {
	Topic     string
	Partition int32
	Err       error
}

// electPreferred returns st with its preferred replica as leader, or why
// that cannot be: ErrElectionNotNeeded when it already leads,
// ErrPreferredNotAvailable when it is not eligible or not in the ISR.
func electPreferred(md *Metadata, topic string, p int32, st PartitionState) (PartitionState, error) {
	if len(st.Replicas) == 0 {
		return st, reason(ErrPreferredNotAvailable, "Partition %s-%d has no replicas.", topic, p)
	}
	preferred := st.Replicas[0]
	if st.Leader == preferred {
		return st, reason(ErrElectionNotNeeded, "Leader election not needed for topic partition.")
	}
	if !md.eligible(preferred) || !slices.Contains(st.ISR, preferred) {
		return st, reason(ErrPreferredNotAvailable, "Failed to elect leader for partition %s-%d under strategy PREFERRED.", topic, p)
	}
	next := st
	next.ISR = slices.Clone(st.ISR)
	next.Leader = preferred
	next.LeaderEpoch++
	next.PartitionEpoch++
	return next, nil
}

// electUnclean returns st with a leader when it has no live one: an
// eligible ISR member if there is one, else the first eligible replica
// (not one a reassignment is adding), alone in the ISR.
func electUnclean(md *Metadata, topic string, p int32, st PartitionState) (PartitionState, bool, error) {
	if st.Leader >= 0 && md.eligible(st.Leader) {
		return st, false, reason(ErrElectionNotNeeded, "Leader election not needed for topic partition.")
	}
	next := st
	if inSync := inSyncEligible(md, st); len(inSync) > 0 {
		next.Leader, next.ISR = inSync[0], inSync
		next.LeaderEpoch++
		next.PartitionEpoch++
		return next, false, nil
	}
	if r, ok := uncleanCandidate(md, st); ok {
		next.Leader, next.ISR = r, []int32{r}
		next.LeaderEpoch++
		next.PartitionEpoch++
		return next, true, nil
	}
	return st, false, reason(ErrEligibleNotAvailable, "Failed to elect leader for partition %s-%d under strategy UNCLEAN.", topic, p)
}

// ElectLeaders elects leaders for the partitions targets names, or every
// partition when targets is nil (then leaving out of the results those
// that needed no election, as Kafka does). unclean chooses the unclean
// election, else the preferred one. It returns a result per partition, in
// the order asked (topic and partition order for all), and returns once
// this node's view shows what it wrote; the error is a failure of the
// whole request (ctx ending, etcd failing, ErrNotVisible).
func (c *Cluster) ElectLeaders(ctx context.Context, targets []ElectionTarget, unclean bool) ([]ElectionResult, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	all := targets == nil
	if all {
		eachPartition(c.Snapshot(), func(topic string, p int32, _ PartitionState, _ int64) {
			targets = append(targets, ElectionTarget{Topic: topic, Partition: p})
		})
	}
	results := make([]ElectionResult, len(targets))
	pending := make([]int, 0, len(targets))
	seen := map[ElectionTarget]bool{}
	for i, t := range targets {
		results[i] = ElectionResult{Topic: t.Topic, Partition: t.Partition}
		if seen[t] {
			continue // a duplicate takes the first one's result below
		}
		seen[t] = true
		pending = append(pending, i)
	}
	wrote, lastRev := false, int64(0)
	type change struct {
		i          int
		rev        int64
		prev, next PartitionState
		unclean    bool
	}
	for attempt := 0; len(pending) > 0; attempt++ {
		if attempt == maxAttempts {
			for _, i := range pending {
				results[i].Err = ErrConflict
			}
			break
		}
		md := c.Snapshot()
		var changes []change
		for _, i := range pending {
			t := targets[i]
			st, rev, err := partitionAtRev(md, t.Topic, t.Partition)
			if err != nil {
				results[i].Err = err
				continue
			}
			var next PartitionState
			var outside bool
			if unclean {
				next, outside, err = electUnclean(md, t.Topic, t.Partition, st)
			} else {
				next, err = electPreferred(md, t.Topic, t.Partition, st)
			}
			results[i].Err = err
			if err == nil {
				changes = append(changes, change{i: i, rev: rev, prev: st, next: next, unclean: outside})
			}
		}
		pending = nil
		for len(changes) > 0 {
			batch := changes[:min(len(changes), changesPerTxn)]
			changes = changes[len(batch):]
			cmps := make([]clientv3.Cmp, 0, len(batch))
			ops := make([]clientv3.Op, 0, len(batch))
			for _, ch := range batch {
				k := c.keys.partition(targets[ch.i].Topic, targets[ch.i].Partition)
				cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", ch.rev))
				ops = append(ops, clientv3.OpPut(k, encode(partitionRecord(ch.next))))
			}
			octx, cancel := c.opCtx(ctx)
			resp, err := c.client.Txn(octx).If(cmps...).Then(ops...).Commit()
			cancel()
			if err == nil && !resp.Succeeded {
				// Another writer changed one of them: decide again on a
				// view that shows its change.
				if err = c.awaitVisible(ctx, resp.Header.Revision); err == nil {
					for _, ch := range append(batch, changes...) {
						pending = append(pending, ch.i)
					}
					break
				}
			}
			if err != nil {
				if !wrote {
					return nil, fmt.Errorf("elect leaders: %w", err)
				}
				for _, ch := range append(batch, changes...) {
					results[ch.i].Err = err
				}
				pending = nil
				break
			}
			wrote, lastRev = true, resp.Header.Revision
			for _, ch := range batch {
				t := targets[ch.i]
				if ch.unclean {
					c.log.Warn("unclean leader election (ElectLeaders): a replica outside the ISR leads; records only the ISR held are lost",
						"topic", t.Topic, "partition", t.Partition, "leader", ch.next.Leader, "previous_isr", ch.prev.ISR,
						"leader_epoch", ch.next.LeaderEpoch)
					continue
				}
				c.log.Info("partition leader elected (ElectLeaders)", "topic", t.Topic, "partition", t.Partition,
					"from", ch.prev.Leader, "to", ch.next.Leader, "leader_epoch", ch.next.LeaderEpoch)
			}
		}
	}
	if wrote {
		if err := c.awaitVisible(ctx, lastRev); err != nil {
			return nil, fmt.Errorf("elect leaders: %w", err)
		}
	}
	first := map[ElectionTarget]int{}
	out := results[:0:0]
	for i, t := range targets {
		if j, ok := first[t]; ok {
			results[i].Err = results[j].Err
		} else {
			first[t] = i
		}
		if all && errors.Is(results[i].Err, ErrElectionNotNeeded) {
			continue
		}
		out = append(out, results[i])
	}
	return out, nil
}
