package cluster

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
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
	unclean   bool // a leader from outside the ISR
}

// decideLeaders returns the leadership and ISR changes the controller makes
// for the cluster md shows, in topic and partition order. It is a pure
// function of md (no clock, no etcd), so each rule is tested on its own. A
// broker is eligible when it is live and not in controlled shutdown:
//
//   - a partition whose leader is not eligible gets the first eligible
//     member of its ISR, in replica order, as leader;
//   - the ISR loses its members that are not eligible (dead brokers,
//     brokers shutting down), in replica order from then on;
//   - with no eligible ISR member at all, the partition keeps its ISR, and
//     its leader while that is live (a broker shutting down leads what it
//     alone has until it stops); a dead leader is replaced by none (-1),
//     so that the last leader, which holds every acknowledged record, is
//     the one to lead again;
//   - a new leader bumps the leader epoch; every change bumps the
//     partition epoch.
//
// Leaders come from the ISR only, so a broker that may lack acknowledged
// records never leads; except, for a topic with
// unclean.leader.election.enable (the topic's config, else the
// cluster-wide dynamic default, else uncleanDefault), a partition with no
// eligible ISR member and no live leader gets its first eligible replica
// as leader, alone in the ISR: available again, at the cost of what the
// ISR held and it lacks. A replica that a reassignment in flight is adding
// is elected only once it is in the ISR, never uncleanly.
func decideLeaders(md *Metadata, uncleanDefault bool) []leaderChange {
	live := func(id int32) bool { _, ok := md.Broker(id); return ok }
	var out []leaderChange
	eachPartition(md, func(name string, p int32, st PartitionState, rev int64) {
		inSync := inSyncEligible(md, st)
		next := st
		if len(inSync) == 0 && (st.Leader < 0 || !live(st.Leader)) && uncleanEnabled(md, name, uncleanDefault) {
			if r, ok := uncleanCandidate(md, st); ok {
				next.Leader, next.ISR = r, []int32{r}
				next.LeaderEpoch++
				next.PartitionEpoch++
				out = append(out, leaderChange{topic: name, partition: p, rev: rev, prev: st, next: next, unclean: true})
				return
			}
		}
		switch {
		case len(inSync) == 0 && (st.Leader < 0 || live(st.Leader)):
			return // nothing better to do
		case len(inSync) == 0:
			next.ISR = slices.Clone(st.ISR)
			next.Leader = -1
		case settled(md, st):
			return
		default:
			if !slices.Contains(inSync, st.Leader) {
				next.Leader = inSync[0]
			}
			next.ISR = inSync
		}
		if next.Leader != st.Leader {
			next.LeaderEpoch++
		}
		next.PartitionEpoch++
		out = append(out, leaderChange{topic: name, partition: p, rev: rev, prev: st, next: next})
	})
	return out
}

// uncleanCandidate returns the replica an unclean election makes leader:
// the first eligible one, in replica order, that a reassignment in flight
// is not adding (such a replica has never been in sync: it may hold
// nothing at all).
func uncleanCandidate(md *Metadata, st PartitionState) (int32, bool) {
	for _, r := range st.Replicas {
		if md.eligible(r) && !slices.Contains(st.AddingReplicas, r) {
			return r, true
		}
	}
	return -1, false
}

// uncleanEnabled resolves unclean.leader.election.enable for a topic.
func uncleanEnabled(md *Metadata, topic string, def bool) bool {
	const key = "unclean.leader.election.enable"
	v, ok := md.Topics[topic].Configs[key]
	if !ok {
		v, ok = md.BrokerConfigs[-1][key]
	}
	if !ok {
		return def
	}
	return strings.EqualFold(strings.TrimSpace(v), "true")
}

// decidePreferred returns the elections that give partitions back to their
// preferred leader, the first of their replicas, where it is eligible and
// in the ISR while another broker leads (Kafka's auto leader rebalance).
// Partitions decideLeaders would change are left to it.
func decidePreferred(md *Metadata) []leaderChange {
	var out []leaderChange
	eachPartition(md, func(name string, p int32, st PartitionState, rev int64) {
		if len(st.Replicas) == 0 {
			return
		}
		preferred := st.Replicas[0]
		if st.Leader == preferred || !settled(md, st) || !md.eligible(preferred) ||
			!slices.Contains(st.ISR, preferred) {
			return
		}
		next := st
		next.ISR = slices.Clone(st.ISR)
		next.Leader = preferred
		next.LeaderEpoch++
		next.PartitionEpoch++
		out = append(out, leaderChange{topic: name, partition: p, rev: rev, prev: st, next: next})
	})
	return out
}

// inSyncEligible returns the ISR members of a partition that are eligible
// replicas, in replica order.
func inSyncEligible(md *Metadata, st PartitionState) []int32 {
	var out []int32
	for _, r := range st.Replicas {
		if slices.Contains(st.ISR, r) && md.eligible(r) {
			out = append(out, r)
		}
	}
	return out
}

// settled reports whether decideLeaders leaves a partition as it is
// because nothing is wrong with it: its ISR is made of eligible replicas,
// the leader among them. A state decideLeaders writes is settled until
// brokers change.
func settled(md *Metadata, st PartitionState) bool {
	inSync := inSyncEligible(md, st)
	return len(inSync) == len(st.ISR) && slices.Contains(inSync, st.Leader)
}

// eachPartition calls f for every partition of md, in topic name and
// partition order, with the mod revision its state was read at.
func eachPartition(md *Metadata, f func(topic string, p int32, st PartitionState, rev int64)) {
	names := make([]string, 0, len(md.Topics))
	for name := range md.Topics {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t := md.Topics[name]
		for p, st := range t.Partitions {
			var rev int64
			if p < len(t.revs) {
				rev = t.revs[p]
			}
			f(name, int32(p), st, rev)
		}
	}
}

// changesPerTxn bounds the partition states one controller transaction
// writes (each with its compare), below etcd's default --max-txn-ops.
const changesPerTxn = 60

// controlLoop is the controller's work loop, run by every node for the
// Cluster's life: while this node is the controller, it decides on each
// new metadata view (and on election) and writes the decisions
// (decideControl: leaders and ISRs, completed reassignments), fenced by
// its epoch and compared on each partition state's mod revision. A write
// that loses a race is decided again on the next view. Every
// LeaderRebalanceInterval it also gives partitions back to their
// preferred leaders.
func (c *Cluster) controlLoop() {
	var rebalance <-chan time.Time
	if c.cfg.LeaderRebalanceInterval > 0 {
		t := time.NewTicker(c.cfg.LeaderRebalanceInterval)
		defer t.Stop()
		rebalance = t.C
	}
	decide := decideControl
	for {
		changed := c.Changed()
		if _, ok := c.ControllerEpoch(); ok {
			if err := c.applyDecisions(c.ctx, decide(c.Snapshot(), c.cfg.UncleanLeaderElection)); err != nil &&
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
		decide = decideControl
		select {
		case <-c.ctx.Done():
			return
		case <-changed:
		case <-c.electedKick:
		case <-rebalance:
			decide = func(md *Metadata, unclean bool) []leaderChange {
				return mergeDecisions(decideControl(md, unclean), decidePreferred(md))
			}
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
			if ch.unclean {
				c.log.Warn("unclean leader election: a replica outside the ISR leads; records only the ISR held are lost",
					"topic", ch.topic, "partition", ch.partition, "leader", ch.next.Leader, "previous_isr", ch.prev.ISR,
					"leader_epoch", ch.next.LeaderEpoch)
				continue
			}
			what := "partition leader changed"
			switch {
			case ch.prev.Reassigning() && !ch.next.Reassigning():
				what = "partition reassignment completed"
			case ch.next.Leader == ch.prev.Leader:
				what = "partition ISR changed"
			}
			c.log.Info(what, "topic", ch.topic, "partition", ch.partition,
				"from", ch.prev.Leader, "to", ch.next.Leader, "leader_epoch", ch.next.LeaderEpoch, "isr", ch.next.ISR,
				"replicas", ch.next.Replicas)
		}
	}
	return nil
}
