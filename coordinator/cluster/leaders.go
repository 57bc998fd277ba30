package cluster

import (
	"context"
	"errors"
	"slices"
	"sort"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// leaderChange is one decision of the controller: partition's state goes
// from what it was at mod revision rev to next.
type leaderChange struct {
	topic     string
	partition int32
	rev       int64
	prev      PartitionState
	next      PartitionState
}

// decideLeaders returns the leadership changes the controller makes for the
// cluster md shows, in topic and partition order. It is a pure function of
// md (no clock, no etcd), so each rule is tested on its own:
//
//   - a partition whose leader is not a live broker gets the first live
//     member of its ISR, in replica order, as leader, and the ISR loses its
//     members that are not live; with no live ISR member it has no leader
//     (-1) and keeps its ISR, so that the last leader, which holds every
//     acknowledged record, is the one to lead again;
//   - a partition with no leader gets the first live ISR member, likewise;
//   - every change bumps the leader epoch and the partition epoch.
//
// Leaders come from the ISR only (no unclean election), so a broker that
// may lack acknowledged records never leads.
func decideLeaders(md *Metadata) []leaderChange {
	live := func(id int32) bool { _, ok := md.Broker(id); return ok }
	names := make([]string, 0, len(md.Topics))
	for name := range md.Topics {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []leaderChange
	for _, name := range names {
		t := md.Topics[name]
		for p, st := range t.Partitions {
			if st.Leader >= 0 && live(st.Leader) {
				continue
			}
			var inSync []int32 // live ISR members, in replica order
			for _, r := range st.Replicas {
				if slices.Contains(st.ISR, r) && live(r) {
					inSync = append(inSync, r)
				}
			}
			next := st
			next.ISR = slices.Clone(st.ISR)
			switch {
			case len(inSync) > 0:
				next.Leader = inSync[0]
				next.ISR = inSync
			case st.Leader < 0:
				continue // still no live ISR member: nothing to decide
			default:
				next.Leader = -1
			}
			next.LeaderEpoch++
			next.PartitionEpoch++
			var rev int64
			if p < len(t.revs) {
				rev = t.revs[p]
			}
			out = append(out, leaderChange{topic: name, partition: int32(p), rev: rev, prev: st, next: next})
		}
	}
	return out
}

// changesPerTxn bounds the partition states one controller transaction
// writes (each with its compare), below etcd's default --max-txn-ops.
const changesPerTxn = 60

// controlLoop is the controller's work loop, run by every node for the
// Cluster's life: while this node is the controller, it decides on each
// new metadata view (and on election) and writes the decisions, fenced by
// its epoch and compared on each partition state's mod revision. A write
// that loses a race is decided again on the next view.
func (c *Cluster) controlLoop() {
	for {
		changed := c.Changed()
		if _, ok := c.ControllerEpoch(); ok {
			if err := c.applyDecisions(c.ctx, decideLeaders(c.Snapshot())); err != nil &&
				!errors.Is(err, ErrStaleState) && !errors.Is(err, ErrNotController) && c.ctx.Err() == nil {
				c.log.Warn("controller decisions not written; retrying", "err", err)
				select {
				case <-c.ctx.Done():
					return
				case <-time.After(time.Second):
				}
				continue
			}
		}
		select {
		case <-c.ctx.Done():
			return
		case <-changed:
		case <-c.electedKick:
		}
	}
}

// applyDecisions writes changes in transactions of at most changesPerTxn.
func (c *Cluster) applyDecisions(ctx context.Context, changes []leaderChange) error {
	for len(changes) > 0 {
		n := min(len(changes), changesPerTxn)
		batch := changes[:n]
		changes = changes[n:]
		cmps := make([]clientv3.Cmp, 0, n)
		ops := make([]clientv3.Op, 0, n)
		for _, ch := range batch {
			key := c.keys.partition(ch.topic, ch.partition)
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", ch.rev))
			ops = append(ops, clientv3.OpPut(key, encode(partitionRecord(ch.next))))
		}
		if err := c.controllerWrite(ctx, cmps, ops...); err != nil {
			return err
		}
		for _, ch := range batch {
			c.log.Info("partition leader changed", "topic", ch.topic, "partition", ch.partition,
				"from", ch.prev.Leader, "to", ch.next.Leader, "leader_epoch", ch.next.LeaderEpoch, "isr", ch.next.ISR)
		}
	}
	return nil
}
