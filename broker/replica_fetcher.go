package broker

// The follower's side of replication: one fetcher per broker this one
// follows partitions of, fetching them over the Kafka protocol as Kafka's
// followers do (Fetch with this broker's id as the replica id and the
// leader epochs of KIP-320), appending what comes with the leader's offsets
// and epochs, fsyncing it before the next fetch (the fetch offset is what
// the leader counts in the high watermark, and Gregor acknowledges only
// what every ISR member has on disk), and truncating where the leader
// reports the logs diverge (KIP-279). While the follower replication
// throttle is exceeded, partitions this broker follower-throttles and is
// not in sync with are left out of the fetches (replication_quota.go).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/replication"
	"github.com/gregor-io/gregor/storage"
)

const (
	// replicaFetchVersion is the Fetch version followers send: topic
	// names, replica id in the body, last fetched epoch and diverging
	// epoch (v12).
	replicaFetchVersion = 12
	// replicaFetchMaxBytes and replicaFetchPartitionMaxBytes are Kafka's
	// replica.fetch.response.max.bytes and replica.fetch.max.bytes.
	replicaFetchMaxBytes          = 10 << 20
	replicaFetchPartitionMaxBytes = 1 << 20
	// replicaFetchBackoff is how long a partition whose fetch failed
	// (leadership moving, the leader not ready) is left out, and how long
	// a fetcher waits before reconnecting (replica.fetch.backoff.ms).
	replicaFetchBackoff = time.Second
	// replicaRequestTimeout bounds a fetch beyond its wait.
	replicaRequestTimeout = 30 * time.Second
)

// followed is a partition this broker follows, under one leader epoch.
type followed struct {
	p      *partition
	leader int32
	epoch  int32
}

// replicaFetchers holds one fetcher per leader.
type replicaFetchers struct {
	mu       sync.Mutex
	byLeader map[int32]*replicaFetcher
}

// replicaFetcher fetches every partition this broker follows from one
// leader.
type replicaFetcher struct {
	leader int32
	parts  atomic.Pointer[[]followed]
	wake   chan struct{}
	cancel context.CancelFunc
}

// syncFollowers gives each fetcher the partitions it now follows, starting
// fetchers for new leaders and stopping those that have none left. It runs
// after every syncPartitions.
func (b *Broker) syncFollowers(t *partitionTable) {
	want := map[int32][]followed{}
	for _, ps := range t.byName {
		for _, p := range ps {
			if p == nil {
				continue
			}
			st := p.state.Load()
			if st == nil || st.Leader < 0 || st.Leader == b.cfg.NodeID || p.log().Err() != nil {
				continue
			}
			want[st.Leader] = append(want[st.Leader], followed{p: p, leader: st.Leader, epoch: st.LeaderEpoch})
		}
	}
	f := &b.followers
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byLeader == nil {
		f.byLeader = map[int32]*replicaFetcher{}
	}
	for leader, rf := range f.byLeader {
		if _, ok := want[leader]; !ok || b.ctx.Err() != nil {
			rf.cancel()
			delete(f.byLeader, leader)
		}
	}
	if b.ctx.Err() != nil {
		return
	}
	for leader, parts := range want {
		rf, ok := f.byLeader[leader]
		if !ok {
			ctx, cancel := context.WithCancel(b.ctx)
			rf = &replicaFetcher{leader: leader, wake: make(chan struct{}, 1), cancel: cancel}
			rf.parts.Store(&parts)
			f.byLeader[leader] = rf
			b.goTracked(func() { b.runFetcher(ctx, rf) })
			continue
		}
		rf.parts.Store(&parts)
		select {
		case rf.wake <- struct{}{}:
		default:
		}
	}
}

// runFetcher is one fetcher's loop, until ctx ends.
func (b *Broker) runFetcher(ctx context.Context, rf *replicaFetcher) {
	log := b.loggerFor("replication").With("leader", rf.leader)
	log.Info("replica fetcher started")
	defer log.Info("replica fetcher stopped")
	var (
		nc      net.Conn
		corr    int32
		buf     []byte
		backoff = map[*partition]time.Time{}
		// inSync holds the partitions whose last fetch reached the
		// leader's high watermark, under the leader and epoch fetched
		// from: the follower throttle never holds them back.
		inSync = map[followed]bool{}
		// held is how many partitions the follower throttle left out of
		// the round that began at roundStart.
		held       int
		roundStart time.Time
		// open is the connection in use, closed when ctx ends so that a
		// fetch waiting at the leader ends with it.
		open struct {
			sync.Mutex
			nc net.Conn
		}
	)
	setConn := func(c net.Conn) {
		open.Lock()
		if open.nc != nil {
			open.nc.Close()
		}
		open.nc = c
		open.Unlock()
	}
	stop := context.AfterFunc(ctx, func() { setConn(nil) })
	defer stop()
	defer setConn(nil)
	pause := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		case <-rf.wake:
		}
		return true
	}
	for ctx.Err() == nil {
		now := time.Now()
		if held > 0 {
			b.replQuotas.follower.held(held, now.Sub(roundStart))
		}
		held, roundStart = 0, now
		if b.pauseFetchers.Load() {
			if !pause(replicaFetchBackoff / 10) {
				return
			}
			continue
		}
		all := *rf.parts.Load()
		if len(inSync) > len(all) {
			pruneInSync(inSync, all)
		}
		var parts []followed
		checked, exceeded := false, false
		for _, fp := range all {
			if until, ok := backoff[fp.p]; ok && now.Before(until) {
				continue
			}
			delete(backoff, fp.p)
			l := fp.p.log()
			if l.Err() != nil {
				continue // offline: nothing is fetched into a failed log
			}
			if l.AckedEnd() < l.LogEndOffset() {
				// A fetch offset is an acknowledgement of everything
				// below it: it is sent only once that is durable (the
				// last flush was cut short). Flush, and fetch next round.
				l.FlushAsync()
				backoff[fp.p] = now.Add(replicaFetchBackoff / 10)
				continue
			}
			if set := fp.p.settings.Load(); !set.followerThrottled.Empty() && set.followerThrottled.Has(fp.p.tp.Partition) &&
				!inSync[fp] && !slices.Contains(fp.p.isr(), b.cfg.NodeID) {
				// As Kafka's shouldFollowerThrottle: an out-of-sync
				// follower leaves its throttled partitions out of the
				// request while the follower quota is exceeded. A
				// member of the ISR counts as in sync too: after a
				// leader change its lag is not known yet, and acks=all
				// produce waits for it.
				if !checked {
					checked, exceeded = true, b.replQuotas.follower.exceeded(now)
				}
				if exceeded {
					held++
					continue
				}
			}
			parts = append(parts, fp)
		}
		if len(parts) == 0 {
			if !pause(replicaFetchBackoff / 4) {
				return
			}
			continue
		}
		if nc == nil {
			var err error
			if nc, err = b.dialLeader(ctx, rf.leader); err != nil {
				log.Debug("replica fetcher cannot reach the leader", "err", err)
				if !pause(replicaFetchBackoff) {
					return
				}
				continue
			}
			setConn(nc)
			if ctx.Err() != nil {
				return
			}
		}
		b.fetchesInFlight.Add(1)
		if b.pauseFetchers.Load() {
			b.fetchesInFlight.Add(-1)
			continue
		}
		req := b.replicaFetchRequest(parts)
		corr++
		resp, err := roundTrip(nc, &buf, corr, "gregor-replica-"+strconv.Itoa(int(b.cfg.NodeID)), req,
			b.cfg.ReplicaFetchWaitMax+replicaRequestTimeout)
		if err != nil {
			b.fetchesInFlight.Add(-1)
			if ctx.Err() == nil {
				log.Info("replica fetch failed; reconnecting", "err", err)
			}
			setConn(nil)
			nc = nil
			if !pause(replicaFetchBackoff / 4) {
				return
			}
			continue
		}
		fresp := resp.(*kmsg.FetchResponse)
		if fresp.ErrorCode != 0 {
			b.fetchesInFlight.Add(-1)
			log.Warn("replica fetch refused", "code", protocol.ErrorCode(fresp.ErrorCode).String())
			if !pause(replicaFetchBackoff) {
				return
			}
			continue
		}
		b.applyFetched(ctx, log, parts, fresp, backoff, inSync)
		b.fetchesInFlight.Add(-1)
	}
}

// pruneInSync drops from inSync the partitions no longer fetched under the
// same leader and epoch.
func pruneInSync(inSync map[followed]bool, current []followed) {
	keep := make(map[followed]bool, len(current))
	for _, fp := range current {
		keep[fp] = true
	}
	for fp := range inSync {
		if !keep[fp] {
			delete(inSync, fp)
		}
	}
}

// dialLeader connects to the leader's endpoint on the inter-broker
// listener (BrokerInfo.Host and Port). Every call between brokers dials
// through here: replica fetchers, transaction markers and their
// verification, share state calls.
func (b *Broker) dialLeader(ctx context.Context, leader int32) (net.Conn, error) {
	at, ok := b.cluster.Snapshot().Broker(leader)
	if !ok {
		return nil, fmt.Errorf("leader %d is not live", leader)
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", net.JoinHostPort(at.Host, strconv.Itoa(int(at.Port))))
	if err != nil {
		return nil, err
	}
	if lt := b.lis.tls[b.lis.interBroker]; lt != nil { // an SSL inter-broker listener
		if nc, err = lt.dial(ctx, nc, at.Host); err != nil {
			return nil, err
		}
	}
	if err := b.authenticateOutgoing(nc); err != nil {
		nc.Close()
		return nil, fmt.Errorf("authenticate to broker %d: %w", leader, err)
	}
	return nc, nil
}

// replicaFetchRequest asks for every partition of parts from its log end.
func (b *Broker) replicaFetchRequest(parts []followed) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(replicaFetchVersion)
	req.ReplicaID = b.cfg.NodeID
	req.MaxWaitMillis = int32(b.cfg.ReplicaFetchWaitMax.Milliseconds())
	req.MinBytes = 1
	req.MaxBytes = replicaFetchMaxBytes
	req.SessionEpoch = -1 // no fetch session
	byTopic := map[string]int{}
	for _, fp := range parts {
		i, ok := byTopic[fp.p.tp.Topic]
		if !ok {
			t := kmsg.NewFetchRequestTopic()
			t.Topic = fp.p.tp.Topic
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			byTopic[fp.p.tp.Topic] = i
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = fp.p.tp.Partition
		rp.CurrentLeaderEpoch = fp.epoch
		rp.FetchOffset = fp.p.log().LogEndOffset()
		rp.LastFetchedEpoch = fp.p.log().LatestEpoch()
		rp.LogStartOffset = fp.p.log().LogStartOffset()
		rp.PartitionMaxBytes = replicaFetchPartitionMaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	return req
}

// applyFetched writes a fetch answer to the followed logs, then fsyncs
// what was appended (in one group commit) before the next fetch reports
// the new log ends to the leader. It records in inSync which partitions
// reached the leader's high watermark, and counts the bytes of
// follower-throttled partitions against the follower quota.
func (b *Broker) applyFetched(ctx context.Context, log *slog.Logger, parts []followed, resp *kmsg.FetchResponse,
	backoff map[*partition]time.Time, inSync map[followed]bool) {
	byKey := map[storage.TopicPartition]followed{}
	for _, fp := range parts {
		byKey[fp.p.tp] = fp
	}
	var throttled int64
	var flush []storage.FlushTarget
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			fp, ok := byKey[storage.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}]
			if !ok {
				continue
			}
			appended, err := b.applyPartition(fp, rp)
			if err != nil {
				backoff[fp.p] = time.Now().Add(replicaFetchBackoff)
				log.Debug("replica fetch of a partition not applied", "partition", fp.p.tp.String(), "err", err)
				continue
			}
			// Kafka's fetcher counts a partition in sync once a fetch
			// brings it to the leader's high watermark.
			inSync[fp] = rp.HighWatermark-fp.p.log().LogEndOffset() <= 0
			if set := fp.p.settings.Load(); !set.followerThrottled.Empty() && set.followerThrottled.Has(fp.p.tp.Partition) {
				// In sync or not: the throttle bounds all of the
				// partition's replication traffic, as in Kafka.
				throttled += int64(len(rp.RecordBatches))
			}
			if appended {
				flush = append(flush, storage.FlushTarget{Log: fp.p.log(), UpTo: fp.p.log().LogEndOffset()})
			}
		}
	}
	if throttled > 0 {
		b.replQuotas.follower.record(throttled, time.Now())
	}
	if len(flush) > 0 {
		storage.StartFlush(flush).Wait(ctx)
	}
}

// errFetchMoved is a fetch answer for a partition whose leader or leader
// epoch changed since the fetch was sent: it is dropped.
var errFetchMoved = errors.New("the partition's leadership changed during the fetch")

// applyPartition applies one partition's fetch answer, under the
// partition's role lock and only if it still follows the same leader at
// the same epoch. needsFlush reports records were appended that must be
// fsynced before the next fetch reports them.
func (b *Broker) applyPartition(fp followed, rp *kmsg.FetchResponseTopicPartition) (needsFlush bool, err error) {
	p := fp.p
	p.role.Lock()
	defer p.role.Unlock()
	if st := p.state.Load(); st == nil || st.Leader != fp.leader || st.LeaderEpoch != fp.epoch || p.lead.Load() != nil {
		// (The partition's state is stored before its role applies: a
		// broker still leading under the role lock writes nothing it
		// fetched, nor a high watermark a produce waiting on it reads.)
		return false, errFetchMoved
	}
	l := p.log()
	switch code := protocol.ErrorCode(rp.ErrorCode); {
	case code == protocol.OffsetOutOfRange && rp.LogStartOffset > l.LogEndOffset():
		// The leader's log starts past this one's end (retention or
		// DeleteRecords there): nothing here is worth keeping.
		b.loggerFor("replication").Info("follower log behind the leader's log start; restarting it there",
			"partition", p.tp.String(), "log_end", l.LogEndOffset(), "leader_log_start", rp.LogStartOffset)
		return false, l.TruncateFullyAndStartAt(rp.LogStartOffset)
	case code != protocol.None:
		return false, fmt.Errorf("leader answered %s", code)
	}
	if rp.DivergingEpoch.EndOffset >= 0 {
		tr := replication.Diverged(rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset, l.EndOffsetForEpoch,
			l.LogEndOffset(), l.LogStartOffset())
		b.loggerFor("replication").Info("follower log diverges from the leader's; truncating",
			"partition", p.tp.String(), "leader_epoch", rp.DivergingEpoch.Epoch, "leader_end", rp.DivergingEpoch.EndOffset,
			"log_end", l.LogEndOffset(), "truncate_to", tr.Offset, "settled", tr.Done)
		if tr.Offset < l.HighWatermark() && !p.settings.Load().uncleanLeaderElection {
			// Below the high watermark lie records the ISR acknowledged:
			// a leader elected from the ISR has them all. Cutting them
			// would be a guess; the partition waits for an operator.
			// With unclean leader election on, the operator chose
			// availability over those records, and the cut goes ahead.
			b.loggerFor("replication").Error("refusing to truncate a follower below its high watermark",
				"partition", p.tp.String(), "truncate_to", tr.Offset, "high_watermark", l.HighWatermark())
			return false, fmt.Errorf("refusing to truncate %s to %d, below its high watermark %d", p.tp, tr.Offset, l.HighWatermark())
		}
		return false, l.TruncateTo(tr.Offset)
	}
	whole, err := replication.WholeBatches(rp.RecordBatches)
	if len(whole) > 0 {
		res, aerr := l.Append(whole, storage.AppendOptions{})
		if aerr != nil {
			return false, aerr
		}
		needsFlush = res.NeedsFlush
		b.countReassignmentBytes(p.state.Load(), len(whole))
	}
	if err != nil {
		return needsFlush, err
	}
	if rp.LogStartOffset > l.LogStartOffset() && rp.LogStartOffset <= l.LogEndOffset() {
		if derr := l.DeleteBelow(rp.LogStartOffset); derr != nil {
			return needsFlush, derr
		}
		// The epoch history is cut on disk at once; the log start waits
		// for the next checkpoint, and a crash before it would bring back
		// records below the start without their epochs. Checkpoint now,
		// as DeleteRecords does.
		if cerr := b.logs.Checkpoint(); cerr != nil {
			b.loggerFor("replication").Error("checkpointing log start offsets after a follower's DeleteBelow failed",
				"partition", p.tp.String(), "err", cerr)
		}
	}
	l.SetHighWatermark(min(rp.HighWatermark, l.AckedEnd()))
	return needsFlush, nil
}

// roundTrip sends req on nc and reads its response, within timeout.
func roundTrip(nc net.Conn, buf *[]byte, corr int32, clientID string, req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	if err := nc.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	out, err := protocol.AppendRequest((*buf)[:0], corr, clientID, req)
	if err != nil {
		return nil, err
	}
	if _, err := nc.Write(out); err != nil {
		return nil, err
	}
	frame, err := protocol.ReadFrame(nc, replicaFetchMaxBytes+(16<<20), out)
	if err != nil {
		return nil, err
	}
	*buf = frame[:0]
	got, body, err := protocol.ParseResponseHeader(frame, req.Key(), req.GetVersion())
	if err != nil {
		return nil, err
	}
	if got != corr {
		return nil, fmt.Errorf("response for correlation id %d, want %d", got, corr)
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("decode %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}
