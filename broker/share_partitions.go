package broker

// Share partitions (KIP-932) on their partition's leader: for each share
// group that fetches a partition led here, the records it has in flight
// (coordinator/share's Partition), loaded from and written back to the
// share coordinator (share_state.go), and the share sessions of the members
// that fetch them.
//
// Locks: shareManager.mu guards the maps; each sharePart's mu guards its
// state machine and is never held across I/O; its fetchMu serializes the
// acquisitions of one share partition (a log read, then Acquire), so that
// the records a read found are still the ones to acquire; its writeMu
// orders the writes of its state, each of which carries the whole state as
// of the write.

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-io/gregor/coordinator/share"
	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/protocol/record"
	"github.com/gregor-io/gregor/storage"
)

// shareFetchDefaultMaxRecords is what a ShareFetch with no MaxRecords
// acquires at most: the Java share consumer's default max.poll.records.
const shareFetchDefaultMaxRecords = 500

// shareReadMaxBytes bounds one share partition's log read in a ShareFetch;
// the first batch is read whole whatever its size.
const shareReadMaxBytes = 1 << 20

// maxShareParts bounds the share partitions a broker keeps in memory; past
// it, those idle for shareIdleEvict with no record acquired are dropped
// (their state is at the share coordinator; the next use loads it again).
const (
	maxShareParts  = 10000
	shareIdleEvict = time.Minute
)

// maxShareSessions bounds the share sessions a broker keeps (Kafka's
// group.share.max.share.sessions); a new one beyond it first evicts the
// least recently used idle one, else fails with SHARE_SESSION_LIMIT_REACHED.
const maxShareSessions = 2000

// shareManager holds this broker's share partitions and share sessions.
type shareManager struct {
	b  *Broker
	mu struct {
		sync.Mutex
		parts    map[share.Key]*sharePart
		sessions map[shareSessionKey]*shareSession
	}
	state *shareStateClient
	// maxParts and idleEvict are maxShareParts and shareIdleEvict; tests
	// lower them.
	maxParts  int
	idleEvict time.Duration
}

func newShareManager(b *Broker) *shareManager {
	m := &shareManager{b: b, state: newShareStateClient(b), maxParts: maxShareParts, idleEvict: shareIdleEvict}
	m.mu.parts = map[share.Key]*sharePart{}
	m.mu.sessions = map[shareSessionKey]*shareSession{}
	counts := func() (int, int) {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.mu.parts), len(m.mu.sessions)
	}
	b.metrics.shareCounts.Store(&counts)
	return m
}

// sharePart is one share group's state on one partition led here, for the
// leader epoch and log it was loaded for.
type sharePart struct {
	key         share.Key
	topic       string
	log         *storage.Log
	leaderEpoch int32
	ready       chan struct{} // closed once loaded; loadCode says how
	loadCode    protocol.ErrorCode

	lastUsed atomic.Int64 // Unix nanoseconds

	fetchMu sync.Mutex
	writeMu sync.Mutex
	mu      struct {
		sync.Mutex
		p          *share.Partition
		stateEpoch int32
		timer      *time.Timer
		// wake is closed, and replaced, when records become available
		// again (released, lock expired), for long-polling fetches.
		wake  chan struct{}
		stale bool // a write failed: memory is ahead of the durable state
	}
}

// shareSettings are the settings of a share group that its partitions'
// leaders apply.
type shareSettings struct {
	lockDuration  time.Duration
	deliveryLimit int16
	maxInFlight   int
	// autoOffsetReset is where a share partition with no state starts:
	// "latest" (the high watermark) or "earliest" (the log start).
	autoOffsetReset string
	readCommitted   bool
}

// part returns the share partition of group on p, loading it from the
// share coordinator on first use (or after the partition's leadership or
// log changed, or a write failed). It waits for a load another request
// started.
func (m *shareManager) part(ctx context.Context, group, topic string, p *partition) (*sharePart, protocol.ErrorCode) {
	key := share.Key{Group: group, TopicID: p.topicID, Partition: p.tp.Partition}
	epoch := p.leaderEpoch.Load()
	l := p.log()
	m.mu.Lock()
	sp := m.mu.parts[key]
	if sp != nil && (sp.log != l || sp.leaderEpoch != epoch || sp.isStale()) {
		sp.stopTimer()
		delete(m.mu.parts, key)
		sp = nil
	}
	if sp == nil {
		if len(m.mu.parts) >= m.maxParts {
			m.evictIdlePartsLocked()
		}
		sp = &sharePart{key: key, topic: topic, log: l, leaderEpoch: epoch, ready: make(chan struct{})}
		sp.mu.wake = make(chan struct{})
		m.mu.parts[key] = sp
		m.b.goTracked(func() { m.load(sp) })
	}
	sp.lastUsed.Store(time.Now().UnixNano())
	m.mu.Unlock()
	select {
	case <-sp.ready:
	case <-ctx.Done():
		return nil, protocol.RequestTimedOut
	}
	if sp.loadCode != protocol.None {
		return nil, sp.loadCode
	}
	return sp, protocol.None
}

// evictIdlePartsLocked drops the share partitions idle for shareIdleEvict that
// hold no acquired record and have no state write under way.
func (m *shareManager) evictIdlePartsLocked() {
	cutoff := time.Now().Add(-m.idleEvict).UnixNano()
	for k, sp := range m.mu.parts {
		if sp.lastUsed.Load() > cutoff {
			continue
		}
		select {
		case <-sp.ready:
		default:
			continue // still loading
		}
		if !sp.writeMu.TryLock() {
			continue
		}
		sp.mu.Lock()
		idle := sp.mu.p == nil || func() bool { n, _ := sp.mu.p.InFlight(); return n == 0 }()
		if idle && sp.mu.timer != nil {
			sp.mu.timer.Stop()
		}
		sp.mu.Unlock()
		sp.writeMu.Unlock()
		if idle {
			delete(m.mu.parts, k)
		}
	}
}

// load reads a share partition's state from its share coordinator,
// initializing it first when the group never consumed the partition.
func (m *shareManager) load(sp *sharePart) {
	defer close(sp.ready)
	ctx, cancel := context.WithTimeout(m.b.ctx, 30*time.Second)
	defer cancel()
	fail := func(code protocol.ErrorCode) {
		sp.loadCode = code
		m.mu.Lock()
		if m.mu.parts[sp.key] == sp {
			delete(m.mu.parts, sp.key)
		}
		m.mu.Unlock()
	}
	st, code := m.state.read(ctx, sp.key, sp.leaderEpoch)
	if code != protocol.None {
		fail(code)
		return
	}
	set := m.b.shareSettings(sp.key.Group)
	if st.StartOffset < 0 {
		start, err := startOffsetFor(sp.log, set.autoOffsetReset, time.Now())
		if err != nil {
			fail(errorCode(err))
			return
		}
		if code := m.state.initialize(ctx, sp.key, st.StateEpoch, start); code != protocol.None {
			fail(code)
			return
		}
		st = share.State{StateEpoch: st.StateEpoch, LeaderEpoch: sp.leaderEpoch, StartOffset: start}
	}
	st.LeaderEpoch = sp.leaderEpoch
	cfg := share.DefaultPartitionConfig()
	cfg.LockDuration, cfg.DeliveryCountLimit, cfg.MaxInFlight = set.lockDuration, set.deliveryLimit, set.maxInFlight
	if err := cfg.Validate(); err != nil {
		m.b.logger.Warn("share group settings invalid; using the defaults", "group", sp.key.Group, "err", err)
		cfg = share.DefaultPartitionConfig()
	}
	events := &m.b.metrics.shareEvents
	cfg.Observe = func(e share.Event, n int) { events[e].Add(float64(n)) }
	sp.mu.Lock()
	sp.mu.p = share.NewPartition(cfg, st)
	sp.mu.stateEpoch = st.StateEpoch
	sp.mu.p.AdvanceStart(sp.log.LogStartOffset())
	sp.mu.Unlock()
}

func (sp *sharePart) isStale() bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.mu.stale
}

func (sp *sharePart) stopTimer() {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.mu.timer != nil {
		sp.mu.timer.Stop()
	}
}

// wakeLocked wakes the fetches waiting for records of this partition.
func (sp *sharePart) wakeLocked() {
	close(sp.mu.wake)
	sp.mu.wake = make(chan struct{})
}

// armLocked sets the lock expiry timer to the partition's next deadline.
func (m *shareManager) armLocked(sp *sharePart) {
	next := sp.mu.p.NextDeadline()
	if next.IsZero() {
		if sp.mu.timer != nil {
			sp.mu.timer.Stop()
		}
		return
	}
	d := max(time.Until(next), 0)
	if sp.mu.timer == nil {
		sp.mu.timer = time.AfterFunc(d, func() { m.expire(sp) })
		return
	}
	sp.mu.timer.Reset(d)
}

// expire runs the partition's lock expiry and writes the state when it
// changed.
func (m *shareManager) expire(sp *sharePart) {
	sp.mu.Lock()
	if sp.mu.p == nil || sp.mu.stale {
		sp.mu.Unlock()
		return
	}
	changed := sp.mu.p.Tick(time.Now())
	m.armLocked(sp)
	if changed {
		sp.wakeLocked()
	}
	sp.mu.Unlock()
	if changed {
		m.b.goTracked(func() {
			ctx, cancel := context.WithTimeout(m.b.ctx, 30*time.Second)
			defer cancel()
			m.persist(ctx, sp)
		})
	}
}

// persist writes the share partition's whole state to its share
// coordinator. A failed write leaves memory ahead of the durable state:
// the partition is marked stale and loaded again by its next user, so
// what the coordinator holds is what counts (acknowledged records whose
// write failed are delivered again: at least once).
func (m *shareManager) persist(ctx context.Context, sp *sharePart) protocol.ErrorCode {
	sp.writeMu.Lock()
	defer sp.writeMu.Unlock()
	sp.mu.Lock()
	if sp.mu.stale {
		sp.mu.Unlock()
		return protocol.CoordinatorNotAvailable
	}
	st := sp.mu.p.State()
	st.StateEpoch, st.LeaderEpoch = sp.mu.stateEpoch, sp.leaderEpoch
	sp.mu.Unlock()
	began := time.Now()
	code := m.state.write(ctx, sp.key, st)
	m.b.metrics.shareWrites.Observe(time.Since(began).Seconds())
	if code != protocol.None {
		m.b.metrics.shareWriteErrors.Inc()
		m.b.loggerFor("share").Warn("writing share partition state failed; it is loaded again on next use",
			"group", sp.key.Group, "topic", sp.topic, "partition", sp.key.Partition, "code", code)
		sp.mu.Lock()
		sp.mu.stale = true
		if sp.mu.timer != nil {
			sp.mu.timer.Stop()
		}
		sp.mu.Unlock()
	}
	return code
}

// acquire reads the log from where the share partition's next acquirable
// record may be and acquires up to maxRecords for member. It returns the
// record batches that hold acquired records (whole batches: the client
// keeps the acquired offsets only) and the acquired runs.
func (m *shareManager) acquire(sp *sharePart, member string, maxRecords int, maxBytes int64, readCommitted bool) ([]byte, []share.AcquiredRun, error) {
	sp.fetchMu.Lock()
	defer sp.fetchMu.Unlock()
	sp.mu.Lock()
	if sp.mu.stale {
		sp.mu.Unlock()
		return nil, nil, nil
	}
	sp.mu.p.AdvanceStart(sp.log.LogStartOffset())
	from, ok := sp.mu.p.FetchOffset()
	sp.mu.Unlock()
	if !ok {
		return nil, nil, nil
	}
	limit := sp.log.HighWatermark()
	if readCommitted {
		limit = min(limit, sp.log.LastStableOffset())
	}
	if from >= limit {
		return nil, nil, nil
	}
	// One fetch acquires at most maxRecords records: reading more than a
	// partition fetch's worth (Kafka's max.partition.fetch.bytes, 1 MiB)
	// would copy bytes that mostly go unsent.
	rr, err := sp.log.Read(storage.ReadOptions{Offset: from, MaxBytes: min(maxBytes, shareReadMaxBytes), MaxOffset: limit, MinOneBatch: true})
	if err != nil {
		return nil, nil, err
	}
	buf, err := rr.AppendTo(nil)
	rr.Release()
	if err != nil {
		return nil, nil, err
	}
	var ranges []share.Range
	type span struct {
		first, last int64
		bytes       []byte
	}
	var batches []span
	// read_committed: the records of aborted transactions are gaps too,
	// never delivered, as a read_committed consumer never sees them.
	var aborted []storage.AbortedTxn
	if readCommitted {
		if aborted, err = sp.log.AbortedTransactions(from, limit); err != nil {
			return nil, nil, err
		}
	}
	it := record.NewIter(buf)
	for bt, ok := it.Next(); ok; bt, ok = it.Next() {
		if bt.NextOffset() <= from {
			continue
		}
		if bt.Control() || (bt.Transactional() && abortedBatch(aborted, bt.ProducerID(), bt.BaseOffset())) {
			continue // a gap: Acquire archives it
		}
		first := max(bt.BaseOffset(), from)
		ranges = append(ranges, share.Range{First: first, Last: bt.LastOffset()})
		batches = append(batches, span{first: bt.BaseOffset(), last: bt.LastOffset(), bytes: bt})
	}
	if len(ranges) == 0 {
		return nil, nil, nil
	}
	sp.mu.Lock()
	if now, ok := sp.mu.p.FetchOffset(); sp.mu.stale || !ok || now != from {
		// Records before the read became available meanwhile (released,
		// expired): the ranges no longer start where acquisition does.
		// The next fetch reads again.
		sp.mu.Unlock()
		return nil, nil, nil
	}
	acquired := sp.mu.p.Acquire(time.Now(), member, ranges, maxRecords)
	m.armLocked(sp)
	sp.mu.Unlock()
	if len(acquired) == 0 {
		return nil, nil, nil
	}
	var out []byte
	i := 0
	for _, b := range batches {
		for i < len(acquired) && acquired[i].Last < b.first {
			i++
		}
		if i < len(acquired) && acquired[i].First <= b.last {
			out = append(out, b.bytes...)
		}
	}
	return out, acquired, nil
}

// abortedBatch reports whether a transactional batch of producer at offset
// belongs to one of the aborted transactions: one of that producer that
// began at or before the batch and whose abort marker comes after it.
func abortedBatch(aborted []storage.AbortedTxn, producer, offset int64) bool {
	for _, a := range aborted {
		if a.ProducerID == producer && a.FirstOffset <= offset && offset < a.LastOffset {
			return true
		}
	}
	return false
}

// acknowledge applies a member's acknowledgements to a share partition and
// writes its state when it changed; the answer waits for that write. The
// code is INVALID_RECORD_STATE when some batch could not be applied.
func (m *shareManager) acknowledge(ctx context.Context, sp *sharePart, member string, acks []share.Ack) protocol.ErrorCode {
	sp.mu.Lock()
	if sp.mu.stale {
		sp.mu.Unlock()
		return protocol.CoordinatorNotAvailable
	}
	codes, changed := sp.mu.p.Acknowledge(time.Now(), member, acks)
	m.armLocked(sp)
	if changed {
		sp.wakeLocked()
	}
	sp.mu.Unlock()
	code := protocol.None
	for _, c := range codes {
		if c != 0 && code == protocol.None {
			code = protocol.ErrorCode(c)
		}
	}
	if changed {
		if wc := m.persist(ctx, sp); wc != protocol.None {
			return wc
		}
	}
	return code
}

// releaseMember releases what member holds on the share partition (its
// share session closed) and writes the state when it changed.
func (m *shareManager) releaseMember(ctx context.Context, sp *sharePart, member string) {
	sp.mu.Lock()
	if sp.mu.stale {
		sp.mu.Unlock()
		return
	}
	changed := sp.mu.p.ReleaseMember(time.Now(), member)
	m.armLocked(sp)
	if changed {
		sp.wakeLocked()
	}
	sp.mu.Unlock()
	if changed {
		m.persist(ctx, sp)
	}
}

// wakeChan returns the channel closed when records of the partition next
// become available again.
func (sp *sharePart) wakeChan() chan struct{} {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.mu.wake
}

// dropTopic forgets the share partitions of a topic (deleted).
func (m *shareManager) dropAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, sp := range m.mu.parts {
		sp.stopTimer()
		delete(m.mu.parts, k)
	}
}

// startOffsetFor is where a share group starts on a partition it never
// consumed: share.auto.offset.reset latest (the high watermark), earliest
// (the log start) or by_duration:D (the first record at most D old, else
// the high watermark).
func startOffsetFor(l *storage.Log, reset string, now time.Time) (int64, error) {
	switch {
	case reset == "earliest":
		return l.LogStartOffset(), nil
	case strings.HasPrefix(reset, "by_duration:"):
		d, ok := parseISODuration(strings.TrimPrefix(reset, "by_duration:"))
		if !ok {
			return l.HighWatermark(), nil
		}
		to, found, err := l.OffsetForTimestamp(now.Add(-d).UnixMilli())
		if err != nil {
			return 0, err
		}
		if found && to.Offset < l.HighWatermark() {
			return to.Offset, nil
		}
	}
	return l.HighWatermark(), nil
}

// errShareClosed is returned by the state client once the broker closes.
var errShareClosed = errors.New("share state client closed")

// shareSettings are a share group's settings: the broker's, with the
// group's own configs (GROUP config resource) over them. A share partition
// takes its lock duration, delivery count limit and in-flight limit when it
// is loaded, so a change reaches the partitions loaded after it.
func (b *Broker) shareSettings(groupID string) shareSettings {
	md := b.cluster.Snapshot()
	return shareSettings{
		lockDuration:    b.groupDuration(md, groupID, "share.record.lock.duration.ms"),
		deliveryLimit:   int16(b.groupInt(md, groupID, "share.delivery.count.limit")),
		maxInFlight:     int(b.groupInt(md, groupID, "share.partition.max.record.locks")),
		autoOffsetReset: b.groupSetting(md, groupID, "share.auto.offset.reset"),
		readCommitted:   b.groupSetting(md, groupID, "share.isolation.level") == "read_committed",
	}
}
