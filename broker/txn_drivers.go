package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/txn"
	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/storage"
)

// txnTopic holds the transaction coordinators' state.
const txnTopic = "__transaction_state"

// txnDrivers runs the transaction coordinators of this broker: one per
// __transaction_state partition it leads, each owned by one goroutine (its
// driver) that follows the contract of coordinator/txn's package
// documentation: load by replaying the partition, feed requests, timer
// ticks and written markers to the state machine, append its records
// acks=all and report them durable, hand its markers to the marker sender,
// and fence and reload the coordinator when an append fails.
type txnDrivers struct {
	b       *Broker
	markers *markerSender
	mu      struct {
		sync.Mutex
		drivers map[int32]*txnDriver
		closed  bool // set by stopAll: no driver starts after it
	}
}

type txnDriver struct {
	partition int32
	log       *storage.Log
	epoch     int32 // the coordinator epoch: the leader epoch it was started for
	reqs      chan txnRequest
	written   chan txn.Marker // markers the sender wrote, for MarkerWritten
	stop      chan struct{}
	done      chan struct{}
	// open holds the ids with a transaction in progress (Ongoing,
	// PrepareCommit, PrepareAbort), from the durable records, for the
	// ongoing transactions gauge. Only the driver goroutine touches it.
	open map[string]bool
}

// txnRequest is one request for a coordinator, answered on its Token (a
// chan kmsg.Response).
type txnRequest struct {
	in txn.Input
}

func newTxnDrivers(b *Broker) *txnDrivers {
	t := &txnDrivers{b: b, markers: newMarkerSender(b)}
	t.mu.drivers = map[int32]*txnDriver{}
	return t
}

// txnConfig is the coordinator's configuration: the configured settings
// and the broker's producer ids and topics.
func (b *Broker) txnConfig() txn.Config {
	cfg := b.cfg.Transactions
	cfg.OffsetsTopicPartitions = b.cfg.OffsetsTopicNumPartitions
	cfg.ProducerIDs = txn.ProducerIDFunc(b.producerIDNow)
	cfg.Topics = txnTopics{b}
	return cfg
}

// sync starts a driver for every __transaction_state partition this broker
// now leads and stops the others; a driver whose partition has a new
// leader epoch since it started is replaced, since the coordinator epoch is
// the leader epoch. Called from syncPartitions.
func (t *txnDrivers) sync(pt *partitionTable) {
	t.mu.Lock()
	defer t.mu.Unlock()
	type held struct {
		p     *partition
		epoch int32
	}
	leading := map[int32]held{}
	for i, p := range pt.byName[txnTopic] {
		if p == nil {
			continue
		}
		if st := p.state.Load(); st != nil && st.Leader == t.b.cfg.NodeID {
			leading[int32(i)] = held{p, st.LeaderEpoch}
		}
	}
	for n, d := range t.mu.drivers {
		if h, ok := leading[n]; !ok || h.p.log() != d.log || h.epoch != d.epoch {
			close(d.stop)
			<-d.done
			delete(t.mu.drivers, n)
		}
	}
	for n, h := range leading {
		if _, ok := t.mu.drivers[n]; ok || t.mu.closed {
			continue
		}
		d := &txnDriver{partition: n, log: h.p.log(), epoch: h.epoch, reqs: make(chan txnRequest, 64),
			written: make(chan txn.Marker, 256), stop: make(chan struct{}), done: make(chan struct{}),
			open: map[string]bool{}}
		t.mu.drivers[n] = d
		t.b.goTracked(func() { t.run(d) })
	}
}

// stopAll stops every driver, answering what they hold with NOT_COORDINATOR,
// then closes the marker sender's connections.
func (t *txnDrivers) stopAll() {
	t.mu.Lock()
	t.mu.closed = true
	for n, d := range t.mu.drivers {
		close(d.stop)
		<-d.done
		delete(t.mu.drivers, n)
	}
	t.mu.Unlock()
	t.markers.close()
}

func (t *txnDrivers) driver(partition int32) *txnDriver {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mu.drivers[partition]
}

func (t *txnDrivers) all() []*txnDriver {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*txnDriver, 0, len(t.mu.drivers))
	for _, d := range t.mu.drivers {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].partition < out[j].partition })
	return out
}

// run is a driver: load the partition, then serve until stopped. A failed
// append fences the coordinator; the driver then loads a new one.
func (t *txnDrivers) run(d *txnDriver) {
	defer close(d.done)
	defer func() { t.b.metrics.txnOngoing.Sub(float64(len(d.open))) }()
	logger := t.b.loggerFor("txn").With("txn_coordinator", d.partition, "coordinator_epoch", d.epoch)
	for {
		if !t.leads(d) {
			// The leadership this driver was started for is gone (an
			// append failed because of it): sync stops the driver soon.
			t.awaitStop(d)
			return
		}
		c, out, err := t.load(d)
		if err != nil {
			logger.Error("loading transaction coordinator failed; retrying", "err", err)
			retry := time.NewTimer(time.Second)
			for waiting := true; waiting; {
				select {
				case <-d.stop:
					retry.Stop()
					t.drain(d)
					return
				case req := <-d.reqs:
					// Not loaded: the client retries, as Kafka's clients
					// do while a coordinator loads.
					deliverTxn(txn.Response{Token: req.in.Token,
						Body: txn.ErrorResponse(req.in.Request, int16(protocol.CoordinatorLoadInProgress))})
				case <-retry.C:
					waiting = false
				}
			}
			continue
		}
		if t.serve(d, c, out, logger) {
			return
		}
	}
}

// leads reports whether this broker still leads d's partition under the
// leader epoch d was started for.
func (t *txnDrivers) leads(d *txnDriver) bool {
	p, code := t.b.lookupPartition(txnTopic, [16]byte{}, false, d.partition)
	if code != protocol.None || p.log() != d.log {
		return false
	}
	st := p.state.Load()
	return st != nil && st.LeaderEpoch == d.epoch
}

// awaitStop answers requests with NOT_COORDINATOR until the driver is
// stopped.
func (t *txnDrivers) awaitStop(d *txnDriver) {
	for {
		select {
		case <-d.stop:
			t.drain(d)
			return
		case req := <-d.reqs:
			deliverTxn(txn.Response{Token: req.in.Token, Body: txn.ErrorResponse(req.in.Request, int16(protocol.NotCoordinator))})
		}
	}
}

// load replays the partition into a new coordinator. Requests that arrive
// meanwhile wait in the channel.
func (t *txnDrivers) load(d *txnDriver) (*txn.Coordinator, txn.Output, error) {
	c, err := txn.New(t.b.txnConfig(), d.epoch)
	if err != nil {
		return nil, txn.Output{}, err
	}
	t.b.metrics.txnOngoing.Sub(float64(len(d.open)))
	clear(d.open)
	start := time.Now()
	end, err := replayCoordinatorLog(d.log, func(key, value []byte) error {
		if err := c.Replay(key, value); err != nil {
			return err
		}
		d.track(key, value)
		return nil
	})
	if err != nil {
		clear(d.open)
		return nil, txn.Output{}, err
	}
	t.b.metrics.txnOngoing.Add(float64(len(d.open)))
	t.b.loggerFor("txn").Debug("loaded transaction coordinator", "partition", d.partition, "records_to", end, "took", time.Since(start))
	return c, c.Loaded(time.Now()), nil
}

// txnOutput is one Output to act on; tick marks those of Tick, whose
// PrepareAbort records are aborts of timed-out transactions.
type txnOutput struct {
	txn.Output
	tick bool
}

// serve runs a loaded coordinator. It returns true when the driver is
// stopped, false when the coordinator must be loaded again.
func (t *txnDrivers) serve(d *txnDriver, c *txn.Coordinator, first txn.Output, logger *slog.Logger) bool {
	// Markers are sent under this coordinator's context: they stop when it
	// is dropped (stopped, fenced).
	mctx, mcancel := context.WithCancel(t.b.ctx)
	defer mcancel()
	pending := []txnOutput{{Output: first}}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var next time.Time
	tickIfDue := func(now time.Time) {
		// Timers fire through Tick, never inside Step, so that the
		// aborts they cause are known to be timeouts.
		if !next.IsZero() && !now.Before(next) {
			out := c.Tick(now)
			next = out.NextTick
			pending = append(pending, txnOutput{Output: out, tick: true})
		}
	}
	for {
		if len(pending) > 0 {
			n, ok := t.act(mctx, d, c, pending, logger)
			if !ok {
				return false
			}
			if !n.IsZero() {
				next = n
			}
			pending = pending[:0]
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
			mcancel()
			for _, r := range c.Unload() {
				deliverTxn(r)
			}
			t.drain(d)
			return true
		case req := <-d.reqs:
			now := time.Now()
			tickIfDue(now)
			pending = append(pending, txnOutput{Output: c.Step(now, req.in)})
			// Take whatever else is queued, so its records share the fsync.
			for more := true; more && len(pending) < 64; {
				select {
				case req := <-d.reqs:
					pending = append(pending, txnOutput{Output: c.Step(now, req.in)})
				default:
					more = false
				}
			}
		case m := <-d.written:
			now := time.Now()
			tickIfDue(now)
			pending = append(pending, txnOutput{Output: c.MarkerWritten(now, m)})
			for more := true; more && len(pending) < 256; {
				select {
				case m := <-d.written:
					pending = append(pending, txnOutput{Output: c.MarkerWritten(now, m)})
				default:
					more = false
				}
			}
		case <-timer.C:
			tickIfDue(time.Now())
		}
	}
}

// act carries out outputs in order, and those they lead to: responses are
// sent at once, markers handed to the sender, and records appended in one
// write, after which Appended is called for each. It returns the latest
// NextTick seen, and false when an append failed and the coordinator is
// fenced.
func (t *txnDrivers) act(ctx context.Context, d *txnDriver, c *txn.Coordinator, outs []txnOutput, logger *slog.Logger) (time.Time, bool) {
	var next time.Time
	for len(outs) > 0 {
		var batches [][]coordinatorRecord
		var appended []txnOutput
		for _, o := range outs {
			if !o.NextTick.IsZero() {
				next = o.NextTick
			}
			for _, r := range o.Responses {
				deliverTxn(r)
			}
			if len(o.Markers) > 0 {
				t.markers.send(ctx, o.Markers, d.written)
			}
			if len(o.Records) > 0 {
				recs := make([]coordinatorRecord, len(o.Records))
				for i, r := range o.Records {
					recs[i] = coordinatorRecord{key: r.Key, value: r.Value}
				}
				batches = append(batches, recs)
				appended = append(appended, o)
			}
		}
		if len(batches) == 0 {
			break
		}
		if code, err := t.b.appendCoordinatorBatches(txnTopic, d.partition, d.log, batches); code != protocol.None {
			logger.Warn("appending transaction records failed; loading the coordinator again", "err", err, "code", code)
			for _, r := range c.AppendFailed(int16(code)) {
				deliverTxn(r)
			}
			return next, false
		}
		now := time.Now()
		outs = outs[:0:0]
		for _, o := range appended {
			t.count(d, o)
			outs = append(outs, txnOutput{Output: c.Appended(now, o.Append)})
		}
	}
	return next, true
}

// count updates the transaction metrics for an output whose records are
// durable.
func (t *txnDrivers) count(d *txnDriver, o txnOutput) {
	m := t.b.metrics
	for _, r := range o.Records {
		before := len(d.open)
		state, ok := d.track(r.Key, r.Value)
		m.txnOngoing.Add(float64(len(d.open) - before))
		switch {
		case !ok:
		case state == txn.StateCompleteCommit:
			m.txnCommits.Inc()
		case state == txn.StateCompleteAbort:
			m.txnAborts.Inc()
		case state == txn.StatePrepareAbort && o.tick:
			m.txnTimeoutAborts.Inc()
		}
	}
}

// track notes whether the record's id has a transaction in progress. It
// reads the state from the value's fixed prefix, the same in value
// versions 0 and 1: version (2), producer id (8), epoch (2), timeout (4),
// then the state byte.
func (d *txnDriver) track(key, value []byte) (txn.State, bool) {
	if len(key) < 2 || binary.BigEndian.Uint16(key) != 0 {
		return 0, false
	}
	id := string(key[2:])
	if value == nil {
		delete(d.open, id)
		return 0, false
	}
	if len(value) < 17 {
		return 0, false
	}
	s := txn.State(value[16])
	if s == txn.StateOngoing || s == txn.StatePrepareCommit || s == txn.StatePrepareAbort {
		d.open[id] = true
	} else {
		delete(d.open, id)
	}
	return s, true
}

// drain answers requests left in a stopped driver's channel.
func (t *txnDrivers) drain(d *txnDriver) {
	for {
		select {
		case req := <-d.reqs:
			deliverTxn(txn.Response{Token: req.in.Token, Body: txn.ErrorResponse(req.in.Request, int16(protocol.NotCoordinator))})
		default:
			return
		}
	}
}

func deliverTxn(r txn.Response) {
	if ch, ok := r.Token.(chan kmsg.Response); ok {
		ch <- r.Body
	}
}

// ask sends a request to the coordinator of partition and waits for its
// response; NOT_COORDINATOR when this broker does not lead the partition.
// c is nil for requests the broker makes itself.
func (t *txnDrivers) ask(ctx context.Context, partition int32, c *conn, version int16, req kmsg.Request) kmsg.Response {
	req.SetVersion(version)
	d := t.driver(partition)
	if d == nil {
		return txn.ErrorResponse(req, int16(t.missingDriverCode(partition)))
	}
	reply := make(chan kmsg.Response, 1)
	in := txn.Input{Token: reply, Version: version, Request: req}
	select {
	case d.reqs <- txnRequest{in: in}:
	case <-d.done:
		return txn.ErrorResponse(req, int16(protocol.NotCoordinator))
	case <-ctx.Done():
		return txn.ErrorResponse(req, int16(protocol.CoordinatorNotAvailable))
	}
	if c != nil {
		// An EndTxn waits for its record to be replicated: the request
		// parks and gives back its queued.max.requests slot.
		c.releaseSlot()
		defer func(parkedAt time.Time) { c.addParked(time.Since(parkedAt)) }(time.Now())
	}
	// The request belongs to the driver now; it is read here again only
	// once the driver has exited. The driver answers everything it took,
	// also when it stops, and Close stops every driver.
	select {
	case resp := <-reply:
		return resp
	case <-d.done:
		select {
		case resp := <-reply:
			return resp
		default:
			return txn.ErrorResponse(req, int16(protocol.NotCoordinator))
		}
	}
}

// missingDriverCode is the answer for an id whose partition has no driver
// here: COORDINATOR_LOAD_IN_PROGRESS when the metadata makes this broker
// its leader (the driver is about to start), NOT_COORDINATOR otherwise.
func (t *txnDrivers) missingDriverCode(partition int32) protocol.ErrorCode {
	tp := t.b.cluster.Snapshot().Topics[txnTopic]
	if tp != nil && partition >= 0 && int(partition) < len(tp.Partitions) && tp.Partitions[partition].Leader == t.b.cfg.NodeID {
		return protocol.CoordinatorLoadInProgress
	}
	return protocol.NotCoordinator
}

// txnPartition is the __transaction_state partition of a transactional id,
// or -1 when the topic does not exist yet.
func (b *Broker) txnPartition(id string) int32 {
	t := b.cluster.Snapshot().Topics[txnTopic]
	if t == nil || len(t.Partitions) == 0 {
		return -1
	}
	return txn.PartitionFor(id, int32(len(t.Partitions)))
}

// ensureTxnTopic creates __transaction_state when it does not exist, as
// Kafka does on the first FindCoordinator for a transactional id.
func (b *Broker) ensureTxnTopic(ctx context.Context) error {
	return b.ensureInternalTopic(ctx, internalTopicSpec{
		name:              txnTopic,
		partitions:        b.cfg.TransactionStateLogNumPartitions,
		replicationFactor: b.cfg.TransactionStateLogReplicationFactor,
		configs: map[string]string{
			"cleanup.policy":      "compact",
			"compression.type":    "uncompressed",
			"min.insync.replicas": fmt.Sprint(b.cfg.TransactionStateLogMinISR),
			"segment.bytes":       fmt.Sprint(b.cfg.TransactionStateLogSegmentBytes),
		},
	})
}

// producerIDNow is the coordinator's producer id source: an id from the
// block at hand, never waiting. When the block is used up it returns false
// and takes the next block in the background; the coordinator answers
// COORDINATOR_LOAD_IN_PROGRESS meanwhile, which the client retries.
func (b *Broker) producerIDNow() (int64, bool) {
	// nextProducerID holds the lock while it takes a block: rather than
	// wait, the coordinator answers COORDINATOR_LOAD_IN_PROGRESS.
	if !b.producerIDs.TryLock() {
		return 0, false
	}
	defer b.producerIDs.Unlock()
	if b.producerIDs.next < b.producerIDs.end {
		id := b.producerIDs.next
		b.producerIDs.next++
		return id, true
	}
	if !b.producerIDs.fetching {
		b.producerIDs.fetching = true
		b.goTracked(func() {
			ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
			defer cancel()
			if err := b.nextProducerIDBlock(ctx); err != nil {
				b.logger.Warn("allocating a producer id block failed", "err", err)
			}
		})
	}
	return 0, false
}

// txnTopics tells the coordinator which partitions exist, from the
// registry's cached view; it never blocks.
type txnTopics struct{ b *Broker }

func (r txnTopics) Partitions(topic string) (int32, bool) {
	t := r.b.cluster.Snapshot().Topics[topic]
	if t == nil {
		return 0, false
	}
	return int32(len(t.Partitions)), true
}

// nextProducerIDBlock takes a new producer id block from the registry for
// producerIDNow, without holding the lock across the request; a block
// taken while another arrived is dropped (producer ids are never reused,
// so skipping some is harmless).
func (b *Broker) nextProducerIDBlock(ctx context.Context) error {
	first, count, err := b.cluster.AllocateProducerIDs(ctx)
	b.producerIDs.Lock()
	defer b.producerIDs.Unlock()
	b.producerIDs.fetching = false
	if err != nil {
		return err
	}
	if b.producerIDs.next >= b.producerIDs.end {
		b.producerIDs.next, b.producerIDs.end = first, first+count
	}
	return nil
}

// askAll sends one request to each of several coordinators at once and
// returns their responses in order; build makes the request for
// partitions[i], a coordinator's __transaction_state partition.
func (t *txnDrivers) askAll(ctx context.Context, c *conn, version int16, partitions []int32, build func(i int) kmsg.Request) []kmsg.Response {
	out := make([]kmsg.Response, len(partitions))
	if len(partitions) == 1 {
		out[0] = t.ask(ctx, partitions[0], c, version, build(0))
		return out
	}
	if c != nil && len(partitions) > 1 {
		c.releaseSlot()
		defer func(parkedAt time.Time) { c.addParked(time.Since(parkedAt)) }(time.Now())
	}
	var wg sync.WaitGroup
	for i, p := range partitions {
		wg.Add(1)
		req := build(i)
		t.b.goTracked(func() {
			defer wg.Done()
			out[i] = t.ask(ctx, p, nil, version, req)
		})
	}
	wg.Wait()
	return out
}
