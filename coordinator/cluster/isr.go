package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrStaleLeader is an ISR change proposed by a leader whose view of the
// partition is no longer the registry's: another leader epoch or partition
// epoch (Kafka's FENCED_LEADER_EPOCH or INVALID_UPDATE_VERSION for
// AlterPartition). Nothing was written; the leader learns the new state
// from its metadata view.
var ErrStaleLeader = errors.New("cluster: the partition state changed since the leader read it")

// AlterISR writes the ISR a partition's leader proposes (Kafka's
// AlterPartition): the write compares the partition's state with the one
// the leader works from, its leader, leader epoch and partition epoch in
// from, so a deposed or outdated leader's proposal fails with
// ErrStaleLeader. The write also requires this node's registration to be
// the one of its live session (Kafka's broker epoch check): a leader that
// was paused past its session timeout writes nothing, even before the
// controller has acted on its absence. The ISR must hold the leader and
// only replicas. It returns the state written, with the partition epoch
// bumped, once this node's view shows it.
func (c *Cluster) AlterISR(ctx context.Context, topic string, p int32, from PartitionState, isr []int32) (PartitionState, error) {
	if err := c.checkOpen(); err != nil {
		return PartitionState{}, err
	}
	if !slices.Contains(isr, from.Leader) {
		return PartitionState{}, fmt.Errorf("alter ISR of %s-%d: %v lacks the leader %d", topic, p, isr, from.Leader)
	}
	for i, r := range isr {
		if !slices.Contains(from.Replicas, r) || slices.Contains(isr[:i], r) {
			return PartitionState{}, fmt.Errorf("alter ISR of %s-%d: %v is not a set of the replicas %v", topic, p, isr, from.Replicas)
		}
	}
	c.mu.Lock()
	reg := c.mu.reg
	c.mu.Unlock()
	if reg == nil || reg.session == nil {
		return PartitionState{}, fmt.Errorf("%w: alter ISR of %s-%d: this broker's registration session is lost", ErrStaleLeader, topic, p)
	}
	lease := reg.session.Lease()
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	key := c.keys.partition(topic, p)
	got, err := c.client.Get(octx, key)
	if err != nil {
		return PartitionState{}, fmt.Errorf("alter ISR of %s-%d: %w", topic, p, err)
	}
	if len(got.Kvs) == 0 {
		return PartitionState{}, fmt.Errorf("alter ISR of %s-%d: %w", topic, p, ErrUnknownTopic)
	}
	var cur partitionRecord
	if err := unmarshal(got.Kvs[0].Value, &cur); err != nil {
		return PartitionState{}, fmt.Errorf("alter ISR of %s-%d: %w", topic, p, err)
	}
	if cur.Leader != from.Leader || cur.LeaderEpoch != from.LeaderEpoch || cur.PartitionEpoch != from.PartitionEpoch {
		return PartitionState{}, fmt.Errorf("%w: %s-%d is at leader %d epoch %d partition epoch %d, the proposal was made at %d/%d/%d",
			ErrStaleLeader, topic, p, cur.Leader, cur.LeaderEpoch, cur.PartitionEpoch, from.Leader, from.LeaderEpoch, from.PartitionEpoch)
	}
	next := PartitionState(cur)
	next.ISR = slices.Clone(isr)
	next.PartitionEpoch++
	resp, err := c.client.Txn(octx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", got.Kvs[0].ModRevision),
			clientv3.Compare(clientv3.LeaseValue(c.keys.broker(c.cfg.NodeID)), "=", lease)).
		Then(clientv3.OpPut(key, encode(partitionRecord(next)))).
		Commit()
	if err != nil {
		return PartitionState{}, fmt.Errorf("alter ISR of %s-%d: %w", topic, p, err)
	}
	if !resp.Succeeded {
		return PartitionState{}, fmt.Errorf("%w: %s-%d changed during the proposal, or this broker's registration session was lost",
			ErrStaleLeader, topic, p)
	}
	c.log.Info("ISR changed", "topic", topic, "partition", p, "from", cur.ISR, "to", next.ISR,
		"leader", next.Leader, "leader_epoch", next.LeaderEpoch, "partition_epoch", next.PartitionEpoch)
	return next, c.awaitVisible(ctx, resp.Header.Revision)
}
