package broker

// The leader's side of replication: each partition this broker leads keeps a
// replication.Leader, fed by its followers' fetches; the high watermark and
// the ISR follow from it. The follower's side is in replica_fetcher.go.

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/replication"
	"github.com/gregor-io/gregor/storage"
)

// leaderRepl is the replication state of a partition this broker leads,
// for one leader epoch and replica set.
type leaderRepl struct {
	epoch    int32
	replicas []int32

	mu struct {
		sync.Mutex
		st *replication.Leader
		// from is the registry's state of the partition the leader works
		// from: an ISR proposal compares it.
		from cluster.PartitionState
		// proposing is set while an ISR proposal is being written;
		// retryAt delays the next one after a failure.
		proposing bool
		retryAt   time.Time
		// pendingFrom is the partition epoch a pending proposal (see
		// replication.Leader.SetPending) was made from; unsure is set
		// when its write failed without saying whether it landed.
		pendingFrom int32
		unsure      bool
		// seenISR is the ISR applyRole last applied, for the ISR change
		// metrics.
		seenISR []int32
	}
}

// applyRole brings p's replication role in line with st, the registry's
// state of the partition: as leader, a new leader epoch is recorded in the
// log's epoch history at its end and a leaderRepl started (or its ISR
// updated); the high watermark follows the log by itself while the leader
// is alone in the ISR. As follower (or with no leader), the high watermark
// is the fetcher's to set. The role lock keeps the fetcher from writing to
// the log while the role changes.
func (b *Broker) applyRole(p *partition, st *cluster.PartitionState) error {
	p.role.Lock()
	defer p.role.Unlock()
	p.leaderEpoch.Store(st.LeaderEpoch)
	if st.Leader != b.cfg.NodeID {
		p.lead.Store(nil)
		p.log().SetAutoHighWatermark(false)
		return nil
	}
	if p.log().LatestEpoch() < st.LeaderEpoch {
		if err := p.log().AssignEpoch(st.LeaderEpoch); err != nil {
			return err
		}
	}
	lr := p.lead.Load()
	if lr == nil || lr.epoch != st.LeaderEpoch || !slices.Equal(lr.replicas, st.Replicas) {
		// A new leadership, or a new replica set under this one (a
		// reassignment starting, replaced, cancelled or completed): the
		// replication state starts afresh for the replicas st names, so
		// that a replica added is a follower whose fetches count and a
		// replica removed is not. The ISR's followers count from their
		// next fetch; the high watermark holds until then.
		next := &leaderRepl{epoch: st.LeaderEpoch, replicas: slices.Clone(st.Replicas)}
		next.mu.st = replication.NewLeader(b.cfg.NodeID, st.Replicas, st.ISR, p.log().LogEndOffset(), p.log().HighWatermark(), time.Now())
		next.mu.from = *st
		next.mu.seenISR = slices.Clone(st.ISR)
		if lr != nil && lr.epoch == st.LeaderEpoch {
			// Same leadership: the ISR change that came with the new
			// replica set counts in the ISR metrics.
			lr.mu.Lock()
			b.countISRChange(lr.mu.seenISR, st.ISR)
			lr.mu.Unlock()
		}
		lr = next
		p.lead.Store(lr)
	} else {
		lr.mu.Lock()
		lr.mu.from = *st
		lr.mu.st.SetISR(st.ISR)
		if !lr.mu.proposing && st.PartitionEpoch != lr.mu.pendingFrom {
			// The registry moved on from the state a proposal whose
			// outcome was unknown was made from: whatever it holds now is
			// in st.
			lr.mu.st.SetPending(nil)
			lr.mu.unsure = false
		}
		pending := lr.mu.st.Pending() != nil
		// Every change of a led partition's ISR counts, whoever wrote
		// it (this leader, or the controller dropping a dead broker).
		b.countISRChange(lr.mu.seenISR, st.ISR)
		lr.mu.seenISR = slices.Clone(st.ISR)
		lr.mu.Unlock()
		if pending {
			// A follower may be joining: the high watermark waits for it.
			setLeaderAutoHW(p, false)
			b.advanceHW(p)
			return nil
		}
	}
	alone := len(st.ISR) <= 1
	setLeaderAutoHW(p, alone)
	if !alone {
		b.advanceHW(p)
	}
	return nil
}

// setLeaderAutoHW sets whether a led partition's high watermark follows
// its log by itself (on while the leader is alone in the ISR). A broker
// built with chaos_unsafe_hw keeps it on always: every append is
// acknowledged at once, whatever the followers hold, so that the fault
// harness has acknowledged records to find lost (make chaos-broken).
func setLeaderAutoHW(p *partition, on bool) {
	p.log().SetAutoHighWatermark(on || replication.UnsafeHighWatermark)
}

// countISRChange counts the members that joined and left a led
// partition's ISR, from seen to isr, in the ISR metrics.
func (b *Broker) countISRChange(seen, isr []int32) {
	for _, r := range isr {
		if !slices.Contains(seen, r) {
			b.metrics.isrExpands.Inc()
		}
	}
	for _, r := range seen {
		if !slices.Contains(isr, r) {
			b.metrics.isrShrinks.Inc()
		}
	}
}

// errNotLeader is an append that found this broker not leading the
// partition (any more).
var errNotLeader = errors.New("this broker does not lead the partition")

// appendAsLeader appends with fn, under the leader epoch it is given, while
// this broker leads p. The role lock is held (shared with other appends)
// from the leadership check to the end of the append, so that the
// leadership cannot move between them: no record lands under an epoch this
// broker has given up, and the epoch returned is the one the records went
// in under. committed reports that the high watermark passed them at once
// (the leader alone in its ISR, in page-cache mode): an acks=all write
// that is not committed waits with awaitCommitted. A log that a move to
// another log dir shut meanwhile is appended to again once the move has put
// its new log in place. Not for callers holding the role lock.
func (p *partition) appendAsLeader(fn func(l *storage.Log, epoch int32) (storage.AppendResult, error)) (res storage.AppendResult, epoch int32, committed bool, err error) {
	for {
		p.role.RLock()
		lr := p.lead.Load()
		if lr == nil {
			p.role.RUnlock()
			return res, 0, false, errNotLeader
		}
		l := p.log()
		res, err = fn(l, lr.epoch)
		committed = err == nil && l.HighWatermark() > res.LastOffset
		p.role.RUnlock()
		if !errors.Is(err, storage.ErrClosed) || p.logAfterMove() == l {
			return res, lr.epoch, committed, err
		}
	}
}

// awaitCommitted waits until the ISR holds records this broker appended to
// p as leader under epoch, up to upTo, and answers for them: None once
// the high watermark passed them under that leadership,
// NotLeaderOrFollower when the leadership moved first (the new leader may
// lack them), RequestTimedOut when ctx ended first. The high watermark is
// read before the leadership is checked: once this broker follows, its
// fetcher moves the high watermark to the new leader's, which says nothing
// of records the new leader may never have had.
func (b *Broker) awaitCommitted(ctx context.Context, p *partition, epoch int32, upTo int64) protocol.ErrorCode {
	b.awaitReplicated(ctx, p, upTo)
	hw := p.log().HighWatermark()
	switch {
	case p.leaderEpoch.Load() != epoch || p.lead.Load() == nil:
		return protocol.NotLeaderOrFollower
	case hw < upTo:
		return protocol.RequestTimedOut
	}
	return protocol.None
}

// advanceHW moves a led partition's high watermark to what its ISR holds.
func (b *Broker) advanceHW(p *partition) {
	lr := p.lead.Load()
	if lr == nil {
		return
	}
	lr.mu.Lock()
	hw := lr.mu.st.HighWatermark(p.log().AckedEnd())
	lr.mu.Unlock()
	if hw > p.log().HighWatermark() {
		p.log().SetHighWatermark(hw)
	}
}

// replicaFetched records a follower's fetch of a partition this broker
// leads, at fetchOffset: it moves the high watermark and may propose an
// ISR change. It reports false when replica is not a follower of p here.
func (b *Broker) replicaFetched(p *partition, replica int32, fetchOffset int64, now time.Time) bool {
	lr := p.lead.Load()
	if lr == nil {
		return false
	}
	lr.mu.Lock()
	ok := lr.mu.st.Fetched(replica, fetchOffset, p.log().LogEndOffset(), now)
	lr.mu.Unlock()
	if !ok {
		return false
	}
	b.advanceHW(p)
	b.maybeProposeISR(p, lr, now)
	return true
}

// maybeProposeISR writes the ISR the leader state proposes, one proposal at
// a time per partition: followers that fell behind leave, those that caught
// up join, if they are live and not shutting down.
func (b *Broker) maybeProposeISR(p *partition, lr *leaderRepl, now time.Time) {
	lr.mu.Lock()
	if lr.mu.proposing || now.Before(lr.mu.retryAt) {
		lr.mu.Unlock()
		return
	}
	isr, changed := lr.mu.st.ProposeISR(now, b.cfg.ReplicaLagTimeMax)
	from := lr.mu.from
	if changed {
		md := b.cluster.Snapshot()
		isr = slices.DeleteFunc(isr, func(r int32) bool {
			if slices.Contains(from.ISR, r) {
				return false
			}
			br, live := md.Broker(r)
			return !live || br.ShuttingDown
		})
		changed = !sameMembers(isr, from.ISR)
	}
	if !changed && !lr.mu.unsure {
		lr.mu.Unlock()
		return
	}
	// Until the registry's answer is known, the high watermark counts the
	// proposal's members too (a joining follower), and the current ones
	// (a shrink): either may be what the registry holds. An earlier
	// proposal whose outcome is unknown stays counted; writing the current
	// ISR again settles it (it fails if the earlier one landed).
	lr.mu.proposing = true
	lr.mu.pendingFrom = from.PartitionEpoch
	lr.mu.st.SetPending(slices.Concat(lr.mu.st.Pending(), isr))
	lr.mu.Unlock()
	if len(isr) > 1 {
		// Under the role lock, and only while lr still leads: a leadership
		// applied meanwhile has set the mode its own ISR needs.
		p.role.Lock()
		if p.lead.Load() == lr {
			setLeaderAutoHW(p, false)
		}
		p.role.Unlock()
	}
	b.goTracked(func() {
		ctx, cancel := context.WithTimeout(b.ctx, b.cfg.ReplicaLagTimeMax)
		next, err := b.cluster.AlterISR(ctx, p.tp.Topic, p.tp.Partition, from, isr)
		cancel()
		lr.mu.Lock()
		lr.mu.proposing = false
		switch {
		case err == nil:
			lr.mu.from = next
			lr.mu.st.SetISR(next.ISR)
			lr.mu.st.SetPending(nil)
			lr.mu.unsure = false
		case errors.Is(err, cluster.ErrStaleLeader):
			// Nothing was written: the registry holds what the metadata
			// view will bring.
			lr.mu.st.SetPending(nil)
			lr.mu.unsure = false
			lr.mu.retryAt = time.Now().Add(time.Second)
		default:
			lr.mu.unsure = true
			lr.mu.retryAt = time.Now().Add(time.Second)
		}
		alone := len(lr.mu.st.ISR()) <= 1 && lr.mu.st.Pending() == nil
		lr.mu.Unlock()
		if alone {
			p.role.Lock()
			if p.lead.Load() == lr {
				setLeaderAutoHW(p, true)
			}
			p.role.Unlock()
		}
		b.advanceHW(p)
		switch {
		case err == nil:
			// The metadata watch applies the new state (applyRole).
		case errors.Is(err, cluster.ErrStaleLeader), b.ctx.Err() != nil:
			b.logger.Debug("ISR proposal not written", "partition", p.tp.String(), "err", err)
		default:
			b.logger.Warn("ISR proposal failed; retrying", "partition", p.tp.String(), "isr", isr, "err", err)
		}
	})
}

// preferredReadReplica picks the replica a consumer in rack should fetch
// p from, at offset, or -1 for this leader: with the rack-aware selector, a
// live in-sync follower in the consumer's rack that holds offset and was
// caught up within replica.lag.time.max.ms, the one with the most records;
// none when this broker is in that rack itself (KIP-392).
func (b *Broker) preferredReadReplica(p *partition, rack string, offset int64, now time.Time) int32 {
	if b.cfg.ReplicaSelector != RackAwareReplicaSelector || rack == "" || rack == b.cfg.Rack {
		return -1
	}
	lr := p.lead.Load()
	if lr == nil {
		return -1
	}
	md := b.cluster.Snapshot()
	best, bestLEO := int32(-1), int64(-1)
	lr.mu.Lock()
	defer lr.mu.Unlock()
	for _, r := range lr.mu.from.ISR {
		if r == b.cfg.NodeID {
			continue
		}
		at, live := md.Broker(r)
		if !live || at.Rack == nil || *at.Rack != rack || at.ShuttingDown {
			continue
		}
		leo, caughtUp, ok := lr.mu.st.Follower(r)
		if !ok || leo < offset || now.Sub(caughtUp) > b.cfg.ReplicaLagTimeMax {
			continue
		}
		if leo > bestLEO {
			best, bestLEO = r, leo
		}
	}
	return best
}

// watchReplicaLag looks at every led partition every half
// replica.lag.time.max.ms, so that a follower that stopped fetching
// altogether leaves the ISR too.
func (b *Broker) watchReplicaLag() {
	t := time.NewTicker(b.cfg.ReplicaLagTimeMax / 2)
	defer t.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case now := <-t.C:
			for _, ps := range b.parts.Load().byName {
				for _, p := range ps {
					if p == nil {
						continue
					}
					if lr := p.lead.Load(); lr != nil {
						b.maybeProposeISR(p, lr, now)
					}
				}
			}
		}
	}
}

func sameMembers(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
