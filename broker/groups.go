package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/coordinator/group"
	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/protocol/record"
	"github.com/gregor-io/gregor/storage"
)

// offsetsTopic holds the consumer groups' metadata and committed offsets.
const offsetsTopic = "__consumer_offsets"

// groupDrivers runs the group coordinators of this broker: one per
// __consumer_offsets partition it leads, each owned by one goroutine (its
// driver) that feeds the state machine requests and timer ticks, appends
// the records it asks for, and sends its responses only once those records
// are durable.
type groupDrivers struct {
	b  *Broker
	mu struct {
		sync.Mutex
		drivers map[int32]*groupDriver
		closed  bool // set by stopAll: no driver starts after it
	}
}

type groupDriver struct {
	partition int32
	log       *storage.Log
	reqs      chan groupRequest
	stop      chan struct{}
	done      chan struct{}

	// producers are the epoch and next sequence number of each producer
	// with transactional offset commits in the partition, for the
	// driver's transactional batches (see txnBatch). Rebuilt by load;
	// touched only by the driver goroutine.
	producers map[int64]producerSeq
}

// producerSeq is where a producer's batches in the offsets partition are:
// the epoch of its last batch or marker and the sequence number its next
// batch of that epoch starts at.
type producerSeq struct {
	epoch int16
	next  int32
}

// groupRequest is one request for a coordinator, answered on reply; or,
// when inspect is set, a function run on the coordinator by its driver
// (which owns it), for reads such as the lag metrics; or, when txnDone is
// set, a transaction marker appended to the partition (groupTxnCompleted).
type groupRequest struct {
	in      group.Input
	reply   chan kmsg.Response
	inspect func(*group.Coordinator)
	txnDone *txnDone
	guard   txnGuard // of a TxnOffsetCommit
}

// txnGuard is how a TxnOffsetCommit's transactional batch is appended:
// when verify is set, only under the producer's verification guard guard
// (storage.AppendOptions.VerifyTxn), taken before the transaction
// coordinator verified, or added, the offsets partition.
type txnGuard struct {
	verify bool
	guard  uint64
}

// txnDone is a COMMIT (commit) or ABORT marker of a producer.
type txnDone struct {
	producerID int64
	commit     bool
}

func newGroupDrivers(b *Broker) *groupDrivers {
	g := &groupDrivers{b: b}
	g.mu.drivers = map[int32]*groupDriver{}
	return g
}

// sync starts a driver for every __consumer_offsets partition this broker
// now leads and stops the others: a coordinator loads when its broker
// becomes the partition's leader and unloads when it stops being it.
// Called from syncPartitions.
func (g *groupDrivers) sync(t *partitionTable) {
	g.mu.Lock()
	defer g.mu.Unlock()
	held := map[int32]*partition{}
	for i, p := range t.byName[offsetsTopic] {
		if p == nil {
			continue
		}
		if st := p.state.Load(); st != nil && st.Leader == g.b.cfg.NodeID {
			held[int32(i)] = p
		}
	}
	for n, d := range g.mu.drivers {
		if p, ok := held[n]; !ok || p.log() != d.log {
			close(d.stop)
			<-d.done
			delete(g.mu.drivers, n)
		}
	}
	for n, p := range held {
		if _, ok := g.mu.drivers[n]; ok || g.mu.closed {
			continue
		}
		d := &groupDriver{partition: n, log: p.log(), reqs: make(chan groupRequest, 64),
			stop: make(chan struct{}), done: make(chan struct{})}
		g.mu.drivers[n] = d
		g.b.goTracked(func() { g.run(d) })
	}
}

// stopAll stops every driver, answering what they hold with NOT_COORDINATOR.
func (g *groupDrivers) stopAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.mu.closed = true
	for n, d := range g.mu.drivers {
		close(d.stop)
		<-d.done
		delete(g.mu.drivers, n)
	}
}

func (g *groupDrivers) driver(partition int32) *groupDriver {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.mu.drivers[partition]
}

func (g *groupDrivers) all() []*groupDriver {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]*groupDriver, 0, len(g.mu.drivers))
	for _, d := range g.mu.drivers {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].partition < out[j].partition })
	return out
}

// run is a driver: load the partition, then serve until stopped. A failed
// append fences the coordinator (it answers NOT_COORDINATOR from then on);
// the driver then reloads it from the log.
func (g *groupDrivers) run(d *groupDriver) {
	defer close(d.done)
	logger := g.b.loggerFor("group").With("group_coordinator", d.partition)
	for {
		c, out, err := g.load(d)
		if err != nil {
			logger.Error("loading group coordinator failed", "err", err)
			select {
			case <-d.stop:
				return
			case <-time.After(time.Second):
				continue
			}
		}
		if g.serve(d, c, out, logger) {
			return
		}
	}
}

// load replays the partition into a new coordinator. Requests that arrive
// meanwhile wait in the channel.
func (g *groupDrivers) load(d *groupDriver) (*group.Coordinator, group.Output, error) {
	cfg := g.b.cfg.Groups
	cfg.Overrides = g.b.groupOverrides
	cfg.Topics = topicResolver{g.b}
	c, err := group.New(cfg)
	if err != nil {
		return nil, group.Output{}, err
	}
	start := time.Now()
	end := d.log.LogEndOffset()
	d.producers = map[int64]producerSeq{}
	var scratch []byte
	for off := d.log.LogStartOffset(); off < end; {
		rr, err := d.log.Read(storage.ReadOptions{Offset: off, MaxBytes: 4 << 20, MaxOffset: end, MinOneBatch: true})
		if err != nil {
			return nil, group.Output{}, err
		}
		buf, err := rr.AppendTo(nil)
		rr.Release()
		if err != nil {
			return nil, group.Output{}, err
		}
		if len(buf) == 0 {
			break
		}
		it := record.NewIter(buf)
		for b, ok := it.Next(); ok; b, ok = it.Next() {
			off = b.NextOffset()
			err := d.replayBatch(c, b, &scratch)
			if err != nil {
				return nil, group.Output{}, fmt.Errorf("replay %s-%d at %d: %w", offsetsTopic, d.partition, b.BaseOffset(), err)
			}
		}
	}
	g.b.loggerFor("group").Debug("loaded group coordinator", "partition", d.partition, "records_to", end, "took", time.Since(start))
	return c, c.Loaded(time.Now()), nil
}

// replayBatch gives the coordinator one batch of the partition: the
// records of a transactional batch stay pending under its producer id,
// and a COMMIT or ABORT marker ends that producer's transaction. Control
// batches that hold no readable marker are skipped, as storage's producer
// state skips them. It also follows each producer's epoch and sequence
// number for the driver's own transactional batches.
func (d *groupDriver) replayBatch(c *group.Coordinator, b record.Batch, scratch *[]byte) error {
	pid := b.ProducerID()
	if b.Control() {
		if pid < 0 {
			return nil
		}
		_, m, ok, err := record.ParseControl(b)
		if err != nil || !ok {
			return nil
		}
		if s, known := d.producers[pid]; !known || b.ProducerEpoch() > s.epoch {
			// A marker with a newer epoch resets the producer's
			// sequence numbers.
			d.producers[pid] = producerSeq{epoch: b.ProducerEpoch()}
		}
		return c.ReplayTxnMarker(pid, m.Commit)
	}
	if pid >= 0 && b.BaseSequence() >= 0 {
		d.producers[pid] = producerSeq{epoch: b.ProducerEpoch(), next: nextSequence(b.BaseSequence(), b.LastOffsetDelta()+1)}
	}
	return record.ForEachRecord(b, scratch, func(_, _ int64, r *record.Record) error {
		if b.Transactional() {
			return c.ReplayTransactional(pid, r.Key, r.Value)
		}
		return c.Replay(r.Key, r.Value)
	})
}

// nextSequence is the sequence number after n records from base; sequence
// numbers wrap from MaxInt32 to 0.
func nextSequence(base, n int32) int32 {
	return int32((int64(base) + int64(n)) % (math.MaxInt32 + 1))
}

// txnBatch builds the transactional batch of a TxnOffsetCommit's records:
// the request's producer id and epoch, and the sequence number storage
// expects of that producer (0 for a producer new to the partition or with
// a new epoch, else after its last batch). It returns the sequence number
// the producer's next batch takes once this one is appended.
func (d *groupDriver) txnBatch(t *group.TxnRecords, now int64) ([]byte, int32, error) {
	base := int32(0)
	if s, ok := d.producers[t.ProducerID]; ok && s.epoch == t.ProducerEpoch {
		base = s.next
	}
	recs := make([]record.Record, len(t.Records))
	for i, r := range t.Records {
		recs[i] = record.Record{OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
	}
	set, err := record.Build(nil, record.BatchHeader{BaseTimestamp: now, ProducerID: t.ProducerID,
		ProducerEpoch: t.ProducerEpoch, BaseSequence: base, Transactional: true}, recs)
	return set, nextSequence(base, int32(len(recs))), err
}

// serve runs a loaded coordinator. It returns true when the driver is
// stopped, false when the coordinator must be reloaded.
//
// A TxnOffsetCommit is stepped alone: what earlier requests produced is
// persisted first, and its own Output is persisted before anything else
// is stepped, so that a producer the partition refuses can be reverted
// (group.Coordinator.TxnAppendFailed) with nothing built on it.
func (g *groupDrivers) serve(d *groupDriver, c *group.Coordinator, first group.Output, logger *slog.Logger) bool {
	pending := []group.Output{first}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	next := first.NextTick
	var held *groupRequest // a TxnOffsetCommit waiting for pending to be persisted
	var guard txnGuard     // of the TxnOffsetCommit whose Output is pending
	// take steps a request, or holds it when it is a TxnOffsetCommit; it
	// reports whether it held it.
	take := func(req groupRequest) bool {
		switch {
		case req.inspect != nil:
			req.inspect(c)
		case req.txnDone != nil:
			pending = append(pending, c.TxnCompleted(time.Now(), req.txnDone.producerID, req.txnDone.commit))
		default:
			if _, ok := req.in.Request.(*kmsg.TxnOffsetCommitRequest); ok {
				held = &req
				return true
			}
			pending = append(pending, c.Step(time.Now(), req.in))
		}
		return false
	}
	for {
		// Persist and answer what the last steps produced, all their
		// records in one append and one fsync (group commit across
		// requests).
		if len(pending) > 0 {
			ok := g.persist(d, c, pending, guard, logger)
			guard = txnGuard{}
			if !ok {
				if held != nil {
					held.reply <- group.ErrorResponse(held.in.Request, int16(protocol.NotCoordinator))
				}
				return false
			}
			next = pending[len(pending)-1].NextTick // the earliest timer now
			pending = pending[:0]
		}
		if held != nil {
			pending = append(pending, c.Step(time.Now(), held.in))
			guard = held.guard
			held = nil
			continue
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		if !next.IsZero() {
			timer.Reset(max(time.Until(next), 0))
		}
		select {
		case <-d.stop:
			for _, r := range c.Unload() {
				deliver(r)
			}
			g.drain(d)
			return true
		case req := <-d.reqs:
			if take(req) {
				continue
			}
			// Take whatever else is queued, so its records share the fsync.
			for more := true; more && len(pending) < 64; {
				select {
				case req := <-d.reqs:
					more = !take(req)
				default:
					more = false
				}
			}
		case <-timer.C:
			if !next.IsZero() {
				pending = append(pending, c.Tick(time.Now()))
			}
		}
	}
}

// persist appends the outputs' records and, once durable, sends their
// responses in order. On failure it fences the coordinator and answers
// with the error Kafka gives for a failed write. An Output with
// transactional records (a TxnOffsetCommit, always the last one, see
// serve) has them appended after the others as a transactional batch of
// its producer, under guard; if the partition refuses the producer (a
// stale epoch, or a transaction that ended since it was verified), only
// that request fails, with the partition's error.
func (g *groupDrivers) persist(d *groupDriver, c *group.Coordinator, outs []group.Output, guard txnGuard, logger *slog.Logger) bool {
	var set []byte
	now := time.Now().UnixMilli()
	txn := -1
	for i, o := range outs {
		if o.Txn != nil {
			if i != len(outs)-1 {
				// serve steps a TxnOffsetCommit alone; anything else
				// would lose the records of the one before.
				return g.fail(c, outs, protocol.UnknownServerError, errors.New("transactional offsets not persisted alone"), logger)
			}
			txn = i
		}
		if len(o.Records) == 0 {
			continue
		}
		recs := make([]record.Record, len(o.Records))
		for i, r := range o.Records {
			recs[i] = record.Record{OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
		}
		var err error
		set, err = record.Build(set, record.BatchHeader{BaseTimestamp: now, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
		if err != nil {
			return g.fail(c, outs, protocol.UnknownServerError, err, logger)
		}
	}
	if len(set) > 0 || txn >= 0 {
		p, code := g.b.lookupPartition(offsetsTopic, [16]byte{}, false, d.partition)
		if code != protocol.None {
			return g.fail(c, outs, code, errors.New("partition not held"), logger)
		}
		// Each append is made as the partition's leader, under the epoch
		// of the first: leadership moving between them fails the lot.
		epoch := int32(-1)
		appendToLog := func(batch []byte, opts storage.AppendOptions) (storage.AppendResult, bool, error) {
			res, e, committed, err := p.appendAsLeader(func(l *storage.Log, e int32) (storage.AppendResult, error) {
				switch {
				case l != d.log:
					return storage.AppendResult{}, errLogReopened
				case epoch >= 0 && e != epoch:
					return storage.AppendResult{}, errNotLeader
				}
				opts.LeaderEpoch = e
				return l.Append(batch, opts)
			})
			if err == nil {
				epoch = e
			}
			return res, committed, err
		}
		last, needsFlush, committed := int64(-1), false, false
		if len(set) > 0 {
			res, ok, err := appendToLog(set, storage.AppendOptions{AssignOffsets: true})
			if err != nil {
				return g.fail(c, outs, errorCode(err), err, logger)
			}
			last, needsFlush, committed = res.LastOffset, res.NeedsFlush, ok
		}
		if txn >= 0 {
			t := outs[txn].Txn
			batch, next, err := d.txnBatch(t, now)
			if err != nil {
				return g.fail(c, outs, protocol.UnknownServerError, err, logger)
			}
			res, ok, err := appendToLog(batch, storage.AppendOptions{AssignOffsets: true,
				VerifyTxn: guard.verify, Guard: guard.guard})
			switch code := errorCode(err); {
			case err == nil && res.Duplicate:
				// The driver numbers its batches after the log's; a
				// duplicate means the two disagree: reload.
				return g.fail(c, outs, protocol.UnknownServerError, errors.New("transactional offsets taken for a duplicate batch"), logger)
			case err == nil:
				d.producers[t.ProducerID] = producerSeq{epoch: t.ProducerEpoch, next: next}
				last, needsFlush, committed = res.LastOffset, needsFlush || res.NeedsFlush, ok
			case code == protocol.InvalidProducerEpoch || code == protocol.ProducerFenced || code == protocol.InvalidTxnState:
				// The partition refused the producer: that request
				// fails alone and its offsets are reverted.
				outs[txn].Responses = c.TxnAppendFailed(outs[txn], int16(code))
			case code == protocol.OutOfOrderSequenceNumber:
				// The driver's sequence numbers disagree with the
				// log's: reload them, and let the client retry.
				return g.fail(c, outs, protocol.CoordinatorNotAvailable, err, logger)
			default:
				return g.fail(c, outs, code, err, logger)
			}
		}
		ctx, cancel := context.WithTimeout(g.b.ctx, 30*time.Second)
		defer cancel()
		if last >= 0 && needsFlush {
			if err := d.log.Flush(ctx, last+1); err != nil {
				return g.fail(c, outs, errorCode(err), err, logger)
			}
		}
		// As Kafka's coordinator writes with acks=all: the responses go
		// once every ISR member holds the records.
		if last >= 0 && !committed {
			switch g.b.awaitCommitted(ctx, p, epoch, last+1) {
			case protocol.NotLeaderOrFollower:
				return g.fail(c, outs, protocol.NotCoordinator, errors.New("leadership of the offsets partition moved"), logger)
			case protocol.RequestTimedOut:
				return g.fail(c, outs, protocol.CoordinatorNotAvailable, errors.New("group records not replicated in time"), logger)
			}
		}
	}
	for _, o := range outs {
		for _, r := range o.Responses {
			deliver(r)
		}
	}
	return true
}

func (g *groupDrivers) fail(c *group.Coordinator, outs []group.Output, code protocol.ErrorCode, err error, logger *slog.Logger) bool {
	logger.Warn("appending group records failed; reloading the coordinator", "err", err)
	for _, o := range outs {
		for _, r := range c.AppendFailed(o.Responses, int16(code)) {
			deliver(r)
		}
	}
	return false
}

// groupTxnCompleted tells the group coordinator of __consumer_offsets
// partition that a transaction of producerID ended there: the
// WriteTxnMarkers handler calls it for each COMMIT (commit) or ABORT
// marker it appended to a partition of __consumer_offsets this broker
// leads, once that partition's answer is NONE (the marker durable and,
// with followers, replicated: Kafka's coordinator too shows a marker's
// effect only once it is committed), and before the handler's response
// goes out, so the transaction coordinator starts no next transaction of
// the producer first. It must not be called for a marker whose append
// failed. The producer's pending transactional offsets then become
// committed (visible to OffsetFetch) or are dropped.
//
// The completion is queued to the partition's driver and applied in order
// with the driver's other work; the call returns once it is queued, and
// may wait for room in the queue. When no driver runs for the partition
// (this broker is not its coordinator yet, or it is stopping) there is
// nothing to do: a driver that starts later replays the marker from the
// log. A driver that was loading may see the marker twice (in the log and
// here); the second time finds nothing pending and changes nothing.
func (b *Broker) groupTxnCompleted(partition int32, producerID int64, commit bool) {
	d := b.groups.driver(partition)
	if d == nil {
		return
	}
	select {
	case d.reqs <- groupRequest{txnDone: &txnDone{producerID: producerID, commit: commit}}:
	case <-d.done:
	}
}

// drain answers requests left in a stopped driver's channel.
func (g *groupDrivers) drain(d *groupDriver) {
	for {
		select {
		case req := <-d.reqs:
			if req.inspect == nil && req.txnDone == nil {
				req.reply <- group.ErrorResponse(req.in.Request, int16(protocol.NotCoordinator))
			}
		default:
			return
		}
	}
}

func deliver(r group.Response) {
	if ch, ok := r.Token.(chan kmsg.Response); ok {
		ch <- r.Body
	}
}

// ask sends a request to the coordinator of partition and waits for its
// response; NOT_COORDINATOR when this broker does not hold the partition.
func (g *groupDrivers) ask(ctx context.Context, partition int32, c *conn, hdr protocol.RequestHeader, req kmsg.Request) kmsg.Response {
	return g.askGuarded(ctx, g.driver(partition), partition, c, hdr, req, txnGuard{})
}

// askGuarded is ask to driver d (nil when partition has none here), for a
// TxnOffsetCommit whose batch is appended under guard.
func (g *groupDrivers) askGuarded(ctx context.Context, d *groupDriver, partition int32, c *conn, hdr protocol.RequestHeader,
	req kmsg.Request, guard txnGuard) kmsg.Response {
	if d == nil {
		return group.ErrorResponse(req, int16(g.missingDriverCode(partition)))
	}
	reply := make(chan kmsg.Response, 1)
	in := group.Input{Token: reply, Version: hdr.APIVersion, Request: req, ClientHost: c.clientHost()}
	if hdr.ClientID != nil {
		in.ClientID = *hdr.ClientID
	}
	if _, ok := req.(*kmsg.ConsumerGroupHeartbeatRequest); ok && g.b.cfg.AuthorizerClassName != "" {
		// Called on the coordinator's goroutine, at this heartbeat and
		// later ones of the group: it reads the ACLs then, as this
		// member's principal, and counts no denial (Kafka filters the
		// matches without logging them).
		b, principal, host := g.b, c.principal, c.host
		in.TopicDescribable = func(topic string) bool {
			return b.authorizer(b.cluster.Snapshot()).Authorize(acl.Request{Principal: principal, Host: host,
				Operation: acl.OpDescribe, ResourceType: acl.ResourceTopic, Name: topic})
		}
	}
	select {
	case d.reqs <- groupRequest{in: in, reply: reply, guard: guard}:
	case <-d.done:
		return group.ErrorResponse(req, int16(protocol.NotCoordinator))
	case <-ctx.Done():
		return group.ErrorResponse(req, int16(protocol.CoordinatorNotAvailable))
	}
	// Waiting for the driver may take a whole rebalance: the request parks
	// and gives back its queued.max.requests slot (requestSlots).
	c.releaseSlot()
	defer func(parkedAt time.Time) { c.addParked(time.Since(parkedAt)) }(time.Now())
	// The request now belongs to the driver (Step may change it), so it is
	// read here again only once the driver has exited. The driver answers
	// everything it took, also when it stops (Unload, drain), and Close
	// stops every driver, so one of the two cases comes.
	select {
	case resp := <-reply:
		return resp
	case <-d.done:
		select {
		case resp := <-reply:
			return resp
		default:
			return group.ErrorResponse(req, int16(protocol.NotCoordinator))
		}
	}
}

// missingDriverCode is the answer for a group whose coordinator partition
// has no driver here: COORDINATOR_LOAD_IN_PROGRESS when the metadata makes
// this broker its leader (the driver is about to start, e.g. just after
// FindCoordinator created the offsets topic), so the client retries here
// as it would against a Kafka coordinator still loading; NOT_COORDINATOR
// otherwise, which sends the client back to FindCoordinator.
func (g *groupDrivers) missingDriverCode(partition int32) protocol.ErrorCode {
	t := g.b.cluster.Snapshot().Topics[offsetsTopic]
	if t != nil && int(partition) < len(t.Partitions) && t.Partitions[partition].Leader == g.b.cfg.NodeID {
		return protocol.CoordinatorLoadInProgress
	}
	return protocol.NotCoordinator
}

// clientHost is the client's address as Kafka reports it: "/ip".
func (c *conn) clientHost() string {
	if a, ok := c.nc.RemoteAddr().(*net.TCPAddr); ok {
		return "/" + a.IP.String()
	}
	return "/" + c.nc.RemoteAddr().String()
}

// groupPartition is the __consumer_offsets partition of a group, or -1
// when the topic does not exist yet.
func (b *Broker) groupPartition(groupID string) int32 {
	t := b.cluster.Snapshot().Topics[offsetsTopic]
	if t == nil {
		return -1
	}
	return group.PartitionFor(groupID, int32(len(t.Partitions)))
}

// ensureOffsetsTopic creates __consumer_offsets when it does not exist, as
// Kafka does on the first FindCoordinator for a group: compacted,
// offsets.topic.num.partitions partitions, and the configured replication
// factor capped at the brokers there are, so a single node needs no setup.
func (b *Broker) ensureOffsetsTopic(ctx context.Context) error {
	md := b.cluster.Snapshot()
	if md.Topics[offsetsTopic] != nil {
		return nil
	}
	rf := min(int(b.cfg.OffsetsTopicReplicationFactor), len(md.Brokers))
	if rf < 1 {
		return errors.New("no live brokers")
	}
	assignments, err := assignReplicas(md.Brokers, b.cfg.OffsetsTopicNumPartitions, int16(rf))
	if err != nil {
		return err
	}
	spec := cluster.TopicSpec{
		Name:        offsetsTopic,
		Assignments: assignments,
		Configs: map[string]string{
			"cleanup.policy":   "compact",
			"compression.type": "producer",
			"segment.bytes":    fmt.Sprint(b.cfg.OffsetsTopicSegmentBytes),
		},
	}
	_, err = b.createTopic(ctx, spec, topicSyncWait)
	var te *topicError
	if errors.As(err, &te) && te.code == protocol.TopicAlreadyExists {
		return nil
	}
	return err
}

// topicResolver answers the group coordinator's topic questions from the
// registry's cached view; it never blocks.
type topicResolver struct{ b *Broker }

func (r topicResolver) TopicByName(name string) ([16]byte, int32, bool) {
	t := r.b.cluster.Snapshot().Topics[name]
	if t == nil {
		return [16]byte{}, 0, false
	}
	return t.ID, int32(len(t.Partitions)), true
}

// TopicNames lists the topics a regular expression subscription may
// match: every topic but the internal ones, which Kafka leaves out too.
func (r topicResolver) TopicNames() []string {
	ts := r.b.cluster.Snapshot().Topics
	names := make([]string, 0, len(ts))
	for name := range ts {
		if !internalTopics[name] {
			names = append(names, name)
		}
	}
	return names
}

func (r topicResolver) TopicByID(id [16]byte) (string, int32, bool) {
	t := r.b.cluster.Snapshot().TopicsByID[cluster.TopicID(id)]
	if t == nil {
		return "", 0, false
	}
	return t.Name, int32(len(t.Partitions)), true
}

// groupOverrides are a group's own session and heartbeat settings, from its
// GROUP configs in the registry's cached view (never blocking).
func (b *Broker) groupOverrides(groupID string) group.Overrides {
	set := b.cluster.Snapshot().GroupConfigs[groupID]
	if len(set) == 0 {
		return group.Overrides{}
	}
	get := func(name string) time.Duration {
		// Kafka keeps a value as written and trims it when it parses it;
		// the check at write time trimmed it too.
		n, err := strconv.ParseInt(strings.TrimSpace(set[name]), 10, 64)
		if err != nil {
			return 0
		}
		return time.Duration(n) * time.Millisecond
	}
	return group.Overrides{
		ConsumerSessionTimeout:    get("consumer.session.timeout.ms"),
		ConsumerHeartbeatInterval: get("consumer.heartbeat.interval.ms"),
		ShareSessionTimeout:       get("share.session.timeout.ms"),
		ShareHeartbeatInterval:    get("share.heartbeat.interval.ms"),
	}
}
