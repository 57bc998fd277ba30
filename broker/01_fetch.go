package broker

// Fetch (key 1), versions 4-18.
//
// Serves the stored batches as they are, without decoding them: each
// partition's bytes are one range of one segment file, from the batch
// holding the fetch offset, bounded by the partition's max bytes, the
// response's max bytes and the high watermark (read_uncommitted) or last
// stable offset (read_committed, which also gets the aborted transactions
// overlapping what it reads, from the segments' .txnindex files, so the
// consumer drops their records). Every partition's answer carries the last
// stable offset, whatever the isolation level, as Kafka's does. The first partition that returns data returns at
// least one whole batch (KIP-74). A range may end inside a batch, as
// Kafka's do; clients drop a partial last batch.
//
// Long polls wait for min_bytes up to max_wait_ms, woken by appends and
// high watermark moves on the partitions asked for. Fetch sessions (v7+,
// KIP-227) are kept per broker; see fetch_session.go. v9+ checks the
// current leader epoch (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH); v12+
// reports a diverging epoch when last_fetched_epoch shows the fetcher's log
// went past the end of that epoch here; v13+ names topics by id. Follower
// fetches (a replica id >= 0, from a replica of the partition; any other
// broker is told NOT_LEADER_OR_FOLLOWER) read up to the log end, and their
// fetch offset is the follower's log end for the high watermark and the
// ISR (replicas.go); while the leader replication throttle is exceeded, a
// follower out of the ISR gets no records for the partitions this broker
// leader-throttles (replication_quota.go). A consumer's fetch from v11 may
// be served by a follower, up to its own high watermark; with the rack-aware
// replica.selector.class the leader answers a consumer in a follower's rack
// with that follower as its preferred read replica and no records
// (KIP-392).
//
// Authorization, as Kafka's: a follower's fetch needs CLUSTER_ACTION on the
// cluster, or every partition it asks for gets TOPIC_AUTHORIZATION_FAILED;
// a consumer's needs READ on each topic, or that topic's partitions get
// TOPIC_AUTHORIZATION_FAILED, whether the topic exists or not (a topic id
// no topic has stays UNKNOWN_TOPIC_ID). Each request checks every
// partition of its session again. A denied partition is answered without
// reading and does not end a long poll early, as in Kafka; a fetch with
// nothing allowed is answered at once.
//
// A consumer's fetch counts against its consumer_byte_rate quota
// (client_quotas.go): max_bytes is capped to what the quota allows in one
// measurement, and a fetch that goes over is answered with no partitions
// and the throttle time.

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/broker/quota"
	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/storage"
)

var fetchAPI = handler{key: 1, min: 4, max: 18, handle: (*Broker).handleFetch}

// fetchResult is one partition's part of a fetch round.
type fetchResult struct {
	code                  protocol.ErrorCode
	hw, lso, logStart     int64
	read                  storage.ReadResult   // records read; Released by whoever holds it
	aborted               []storage.AbortedTxn // read_committed: the aborted transactions in read
	held                  bool                 // read is this result's to release
	divergingEpoch        int32
	divergingEnd          int64
	hasDiverging          bool
	leaderID, leaderEpoch int32
	metrics               *topicMetrics // nil when the partition is not here
	// preferred is the replica the consumer should fetch from instead
	// (KIP-392), when hasPreferred.
	preferred    int32
	hasPreferred bool
	// throttled: a follower's fetch of a partition this broker
	// leader-throttles (replication_quota.go); its bytes count against
	// the leader quota. heldBack: it was left without records, the
	// follower out of the ISR and the quota exceeded.
	throttled, heldBack bool
}

// maxFetchWait bounds a fetch's MaxWaitMillis. A connection reads its next
// request only after answering the current one, so a parked fetch hides
// the client's close until the wait ends; a client never needs more than
// its request timeout (30 s by default), and an earlier empty answer is
// only fetched again.
const maxFetchWait = 30 * time.Second

func (b *Broker) handleFetch(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.FetchRequest)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	byID := hdr.APIVersion >= 13
	replicaID := req.ReplicaID
	if hdr.APIVersion >= 15 {
		replicaID = req.ReplicaState.ID
	}
	now := time.Now()

	var items []*sessionPartition
	full := true
	var sess *fetchSession
	switch {
	case req.SessionEpoch == sessionEpochFinal || hdr.APIVersion < 7:
		// No session, or the client closes its session and asks for a
		// full fetch without one.
		if req.SessionID != 0 {
			b.sessions.remove(req.SessionID)
		}
		items = requestedPartitions(req, byID, false)
	case req.SessionEpoch == sessionEpochInitial:
		if req.SessionID != 0 {
			b.sessions.remove(req.SessionID)
		}
		items = requestedPartitions(req, byID, true)
		sess = b.sessions.create(items, now)
		resp.SessionID = sess.id
		sess.mu.Lock()
		defer sess.mu.Unlock()
	default:
		sess = b.sessions.get(req.SessionID)
		if sess == nil {
			resp.ErrorCode = int16(protocol.FetchSessionIDNotFound)
			return resp, nil
		}
		sess.mu.Lock()
		defer sess.mu.Unlock()
		if req.SessionEpoch != sess.mu.epoch {
			resp.ErrorCode = int16(protocol.InvalidFetchSessionEpoch)
			return resp, nil
		}
		sess.updateLocked(requestedPartitions(req, byID, true), forgottenPartitions(req, byID))
		sess.mu.epoch = nextSessionEpoch(sess.mu.epoch)
		sess.mu.lastUsed = now
		resp.SessionID = sess.id
		items = sess.mu.parts
		full = false
	}

	denied, anyAllowed := b.fetchDenied(c, items, byID, replicaID)
	fetchQuota := replicaID < 0 && b.clientQuotas.mgr.Enabled(quota.Fetch)
	// wholeBatches: under a consumer_byte_rate, reads end on a batch
	// boundary, as a partial last batch would count against the quota
	// and be dropped by the client.
	wholeBatches := false
	if fetchQuota {
		// Never ask for more than the consumer_byte_rate bucket lets
		// through (quota.Manager.MaxFetch).
		if most, ok := b.clientQuotas.mgr.MaxFetch(quota.UserOf(c.principal), c.clientID, time.Now()); ok {
			wholeBatches = true
			if most < float64(req.MaxBytes) {
				req.MaxBytes = int32(max(most, 1))
				req.MinBytes = min(req.MinBytes, req.MaxBytes)
			}
		}
	}

	// Subscribe before the first read, so an append between the read and
	// the wait still wakes the wait.
	wait := min(time.Duration(max(req.MaxWaitMillis, 0))*time.Millisecond, maxFetchWait)
	var wake chan struct{}
	if wait > 0 && req.MinBytes > 0 && anyAllowed {
		wake = make(chan struct{}, 1)
		seen := map[*storage.Log]bool{}
		for i, it := range items {
			if denied != nil && denied[i] {
				continue
			}
			if p, code := b.lookupReplica(it.key.topic, it.key.topicID, byID, it.key.partition, fromFollowerOK(req, replicaID)); code == protocol.None && !seen[p.log()] {
				seen[p.log()] = true
				defer p.log().Subscribe(wake)()
			}
		}
	}
	var timer *time.Timer
	var parkedAt time.Time
	var results []fetchResult
	for {
		var total int64
		var failed bool
		releaseReads(results)
		results, total, failed = b.fetchRound(items, denied, req, byID, replicaID, wholeBatches)
		if total >= int64(req.MinBytes) || failed || wake == nil {
			break
		}
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
			parkedAt = time.Now()
			// A long poll parks: it no longer counts against
			// queued.max.requests (requestSlots).
			c.releaseSlot()
		}
		select {
		case <-wake:
			continue
		case <-timer.C:
		case <-ctx.Done():
		}
		releaseReads(results)
		results, _, _ = b.fetchRound(items, denied, req, byID, replicaID, wholeBatches)
		break
	}
	var waited time.Duration
	if timer != nil {
		waited = time.Since(parkedAt)
		c.addParked(waited)
	}
	b.metrics.fetchWait.Observe(waited.Seconds())
	if replicaID >= 0 {
		b.recordLeaderThrottle(results, now)
	}
	if fetchQuota {
		if throttled := b.throttleFetch(c, results); throttled > 0 {
			// As Kafka answers a throttled consumer: no partitions, the
			// throttle time, and the session (a new one is not kept).
			releaseReads(results)
			if req.SessionEpoch == sessionEpochInitial && sess != nil {
				b.sessions.remove(sess.id)
				resp.SessionID = 0
			}
			resp.ThrottleMillis = int32(throttled.Milliseconds())
			c.fetchThrottle = throttled
			return resp, nil
		}
	}

	// The records stay in the segment files: the response carries a marker
	// for each, replaced by the file bytes when the frame is written.
	zc := newFetchResponse(resp)
	served := map[sessionKey]bool{}
	var md *cluster.Metadata // for leader hints, read on the first one
	for i, it := range items {
		res := &results[i]
		if !full && res.code == protocol.None && !res.held && !res.hasDiverging && !res.hasPreferred &&
			res.hw == it.sentHW && res.lso == it.sentLSO && res.logStart == it.sentLogStart {
			continue // nothing new for this partition in an incremental response
		}
		it.sentHW, it.sentLSO, it.sentLogStart = res.hw, res.lso, res.logStart
		if res.held {
			served[it.key] = true
			res.metrics.bytesOut.Add(float64(res.read.Len))
		}
		n := len(resp.Topics)
		if n == 0 || resp.Topics[n-1].Topic != it.key.topic || resp.Topics[n-1].TopicID != it.key.topicID {
			t := kmsg.NewFetchResponseTopic()
			t.Topic, t.TopicID = it.key.topic, it.key.topicID
			resp.Topics = append(resp.Topics, t)
			n++
		}
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition = it.key.partition
		rp.ErrorCode = int16(res.code)
		rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = res.hw, res.lso, res.logStart
		// Kafka always sends a (possibly empty) records field; a null one
		// breaks librdkafka's parsing of the whole response.
		rp.RecordBatches = []byte{}
		if res.held {
			rp.RecordBatches = zc.add(res.read)
			res.held = false // zc's now
		}
		if req.IsolationLevel == 1 && replicaID < 0 {
			// read_committed: a list, empty when nothing was aborted
			// (read_uncommitted gets null).
			rp.AbortedTransactions = make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, 0, len(res.aborted))
			for _, a := range res.aborted {
				at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
				at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
				rp.AbortedTransactions = append(rp.AbortedTransactions, at)
			}
		}
		rp.PreferredReadReplica = -1
		if res.hasPreferred {
			rp.PreferredReadReplica = res.preferred
		}
		if res.hasDiverging {
			rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = res.divergingEpoch, res.divergingEnd
		}
		if res.code == protocol.NotLeaderOrFollower && res.leaderID < 0 {
			if md == nil {
				md = b.cluster.Snapshot()
			}
			if leader, epoch, at, ok := b.leaderHint(md, it.key.topic, it.key.topicID, byID, it.key.partition); ok {
				res.leaderID, res.leaderEpoch = leader, epoch
				resp.Brokers = addFetchEndpoint(resp.Brokers, at, c.listener)
			}
		}
		if res.code == protocol.NotLeaderOrFollower || res.code == protocol.FencedLeaderEpoch {
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = res.leaderID, res.leaderEpoch
		}
		resp.Topics[n-1].Partitions = append(resp.Topics[n-1].Partitions, rp)
	}
	releaseReads(results) // reads not in the response
	if sess != nil {
		sess.rotateLocked(served)
	}
	return zc, nil
}

// throttleFetch records the record bytes of a consumer fetch's results
// against the connection's consumer_byte_rate and returns the throttle
// time; a throttled fetch's bytes are taken back (its response carries
// none).
func (b *Broker) throttleFetch(c *conn, results []fetchResult) time.Duration {
	var n int64
	for i := range results {
		if results[i].held {
			n += results[i].read.Len
		}
	}
	user, now := quota.UserOf(c.principal), time.Now()
	d := b.clientQuotas.mgr.Record(quota.Fetch, user, c.clientID, float64(n), now)
	if d > 0 {
		b.clientQuotas.mgr.Unrecord(quota.Fetch, user, c.clientID, float64(n), now)
	}
	return d
}

// recordLeaderThrottle counts, against the leader quota, the record bytes
// a follower fetch's response carries for leader-throttled partitions (in
// sync or not, as Kafka counts them), and the partitions it held back.
// start is when the fetch began.
func (b *Broker) recordLeaderThrottle(results []fetchResult, start time.Time) {
	var n int64
	held := 0
	for i := range results {
		res := &results[i]
		if res.throttled && res.held {
			n += res.read.Len
		}
		if res.heldBack {
			held++
		}
	}
	if n > 0 || held > 0 {
		now := time.Now()
		b.replQuotas.leader.record(n, now)
		b.replQuotas.leader.held(held, now.Sub(start))
	}
}

// addFetchEndpoint adds a leader's endpoint on listener to a fetch
// response's node endpoints (KIP-951, v16+), once; a leader without the
// listener is left out, its id and epoch still given, as Kafka does.
func addFetchEndpoint(list []kmsg.FetchResponseBroker, at cluster.BrokerInfo, listener string) []kmsg.FetchResponseBroker {
	host, port, ok := at.Endpoint(listener)
	if !ok {
		return list
	}
	for _, e := range list {
		if e.NodeID == at.NodeID {
			return list
		}
	}
	e := kmsg.NewFetchResponseBroker()
	e.NodeID, e.Host, e.Port, e.Rack = at.NodeID, host, port, at.Rack
	return append(list, e)
}

// releaseReads gives back the reads a fetch round holds.
func releaseReads(results []fetchResult) {
	for i := range results {
		if results[i].held {
			results[i].read.Release()
			results[i].held = false
		}
	}
}

// fetchDenied returns, by item, whether the fetch may not read it (nil
// when it may read them all), and whether it may read any (or asks for
// none).
func (b *Broker) fetchDenied(c *conn, items []*sessionPartition, byID bool, replicaID int32) ([]bool, bool) {
	if b.cfg.AuthorizerClassName == "" || len(items) == 0 {
		return nil, true
	}
	denied := make([]bool, len(items))
	if replicaID >= 0 {
		if c.authorizedCluster(acl.OpClusterAction) {
			return nil, true
		}
		for i := range denied {
			denied[i] = true
		}
		return denied, false
	}
	var md *cluster.Metadata
	allowed := c.topicsAllowed(acl.OpRead)
	anyAllowed := false
	for i, it := range items {
		name := it.key.topic
		if byID {
			if md == nil {
				md = b.cluster.Snapshot()
			}
			if t := md.TopicsByID[cluster.TopicID(it.key.topicID)]; t != nil {
				name = t.Name
			} else {
				anyAllowed = true // answered UNKNOWN_TOPIC_ID by the read
				continue
			}
		}
		denied[i] = !allowed(name)
		anyAllowed = anyAllowed || !denied[i]
	}
	return denied, anyAllowed
}

// fetchRound reads every item once, but for those denied (by index; nil
// for none), which get TOPIC_AUTHORIZATION_FAILED; with wholeBatches each
// read ends on a batch boundary. total is the bytes read;
// failed is set when a partition has an error, a diverging epoch or a
// preferred read replica, any of which answers the fetch at once.
func (b *Broker) fetchRound(items []*sessionPartition, denied []bool, req *kmsg.FetchRequest, byID bool, replicaID int32, wholeBatches bool) ([]fetchResult, int64, bool) {
	results := make([]fetchResult, len(items))
	var total int64
	failed := false
	// fetch.max.bytes caps what a request may ask for, as in Kafka, so a
	// max_bytes of 2 GiB does not build a 2 GiB response.
	budget := min(int64(req.MaxBytes), int64(b.cfg.FetchMaxBytes))
	if budget <= 0 {
		budget = 0
	}
	minOne := true
	for i, it := range items {
		res := &results[i]
		res.hw, res.lso, res.logStart = -1, -1, -1
		if denied != nil && denied[i] {
			res.code = protocol.TopicAuthorizationFailed
			continue
		}
		p, code := b.lookupReplica(it.key.topic, it.key.topicID, byID, it.key.partition, fromFollowerOK(req, replicaID))
		if code != protocol.None {
			res.code = code
			res.leaderID, res.leaderEpoch = -1, -1 // the response looks the leader up
			failed = true
			continue
		}
		l := p.log()
		res.metrics = p.metrics
		res.hw = l.HighWatermark()
		res.lso = min(l.LastStableOffset(), res.hw)
		res.logStart = l.LogStartOffset()
		epoch := p.leaderEpoch.Load()
		if code := checkLeaderEpoch(it.currentLeaderEpoch, epoch); code != protocol.None {
			res.code, res.leaderID, res.leaderEpoch = code, b.cfg.NodeID, epoch
			failed = true
			continue
		}
		if it.lastFetchedEpoch >= 0 {
			e, end := l.EndOffsetForEpoch(it.lastFetchedEpoch)
			if e < 0 {
				// No epoch here at or below the fetcher's: none of its
				// records is known here. (-1, -1) would read as no
				// divergence, so the answer is the log start.
				end = l.LogStartOffset()
			}
			if e < it.lastFetchedEpoch || end < it.fetchOffset {
				res.hasDiverging, res.divergingEpoch, res.divergingEnd = true, e, end
				failed = true // answered at once, as Kafka does
				continue
			}
		}
		if replicaID < 0 && req.Version >= 11 && p.lead.Load() != nil {
			if r := b.preferredReadReplica(p, req.Rack, it.fetchOffset, time.Now()); r >= 0 {
				// The consumer reads from r from now on; nothing is read
				// here, as Kafka answers.
				res.preferred, res.hasPreferred = r, true
				failed = true // answered at once, as Kafka does
				continue
			}
		}
		maxOffset := res.hw
		if replicaID >= 0 {
			// A follower reads up to the log end; its fetch offset is its
			// own log end, which the high watermark follows.
			if !b.replicaFetched(p, replicaID, it.fetchOffset, time.Now()) {
				res.code, res.leaderID, res.leaderEpoch = protocol.NotLeaderOrFollower, b.cfg.NodeID, epoch
				failed = true
				continue
			}
			res.hw = l.HighWatermark()
			res.lso = min(l.LastStableOffset(), res.hw)
			maxOffset = l.LogEndOffset()
			if set := p.settings.Load(); !set.leaderThrottled.Empty() && set.leaderThrottled.Has(p.tp.Partition) {
				res.throttled = true
				// As Kafka's shouldLeaderThrottle: only a follower out of
				// the ISR is held back, and only while the quota is
				// exceeded; it gets no records this time, and they do
				// not count toward min_bytes.
				if !slices.Contains(p.isr(), replicaID) && b.replQuotas.leader.exceeded(time.Now()) {
					res.heldBack = true
					continue
				}
			}
		}
		limit := min(int64(max(it.maxBytes, 0)), budget)
		committed := req.IsolationLevel == 1 && replicaID < 0
		opts := storage.ReadOptions{Offset: it.fetchOffset, MaxBytes: limit, MaxOffset: maxOffset, MinOneBatch: minOne,
			ReadCommitted: committed, WholeBatches: wholeBatches}
		rr, err := l.Read(opts)
		if nl := p.movedLog(l, err); nl != nil {
			l = nl
			rr, err = l.Read(opts)
		}
		if err != nil {
			res.code = errorCode(err)
			failed = true
			if res.code == protocol.OffsetOutOfRange && replicaID < 0 {
				// A consumer resets on it, and one that was reading
				// says the broker lost data: worth a line (one a second
				// at most for the whole broker).
				if now := time.Now().Unix(); b.rangeLogSecond.Swap(now) != now {
					b.logger.Info("consumer fetch out of range (one line a second at most)", "topic", it.key.topic,
						"topic_id", it.key.topicID, "partition", it.key.partition, "fetch_offset", it.fetchOffset,
						"log_start", l.LogStartOffset(), "log_end", l.LogEndOffset(), "high_watermark", l.HighWatermark(), "err", err)
				}
			}
			continue
		}
		if committed && rr.Len > 0 {
			// Up to the last stable offset the read was bounded by: every
			// transaction overlapping it is decided, and a superset of
			// those in the bytes read only costs the consumer a lookup.
			res.aborted, err = l.AbortedTransactions(it.fetchOffset, rr.LastStableOffset)
			if err != nil {
				rr.Release()
				res.code = errorCode(err)
				failed = true
				continue
			}
		}
		if rr.Len > 0 {
			res.read, res.held = rr, true // released by the response's frame
			total += rr.Len
			budget -= min(rr.Len, budget)
			minOne = false
			continue
		}
		rr.Release()
	}
	return results, total, failed
}

// fromFollowerOK reports whether a fetch may be served by a follower: a
// consumer's (no replica id) from v11, which carries the client's rack and
// lets the consumer follow a preferred read replica (KIP-392).
func fromFollowerOK(req *kmsg.FetchRequest, replicaID int32) bool {
	return replicaID < 0 && req.Version >= 11
}

// checkLeaderEpoch compares a request's current leader epoch (-1: none)
// with the partition's (KIP-320).
func checkLeaderEpoch(requested, current int32) protocol.ErrorCode {
	switch {
	case requested < 0 || requested == current:
		return protocol.None
	case requested < current:
		return protocol.FencedLeaderEpoch
	default:
		return protocol.UnknownLeaderEpoch
	}
}

// requestedPartitions are the partitions req names. kept: a session keeps
// them, so their topic names are copied out of the request frame, which the
// connection reuses for its next request.
func requestedPartitions(req *kmsg.FetchRequest, byID, kept bool) []*sessionPartition {
	var out []*sessionPartition
	for i := range req.Topics {
		t := &req.Topics[i]
		name := t.Topic
		if kept && !byID {
			name = strings.Clone(name)
		}
		for j := range t.Partitions {
			p := &t.Partitions[j]
			k := sessionKey{partition: p.Partition}
			if byID {
				k.topicID = t.TopicID
			} else {
				k.topic = name
			}
			sp := newSessionPartition(k)
			sp.fetchOffset, sp.maxBytes = p.FetchOffset, p.PartitionMaxBytes
			sp.currentLeaderEpoch, sp.lastFetchedEpoch = p.CurrentLeaderEpoch, p.LastFetchedEpoch
			if req.Version < 12 {
				sp.lastFetchedEpoch = -1
			}
			if req.Version < 9 {
				sp.currentLeaderEpoch = -1
			}
			out = append(out, sp)
		}
	}
	return out
}

func forgottenPartitions(req *kmsg.FetchRequest, byID bool) []sessionKey {
	var out []sessionKey
	for _, t := range req.ForgottenTopics {
		for _, p := range t.Partitions {
			k := sessionKey{partition: p}
			if byID {
				k.topicID = t.TopicID
			} else {
				k.topic = t.Topic
			}
			out = append(out, k)
		}
	}
	return out
}
