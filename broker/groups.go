package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

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
}

// groupRequest is one request for a coordinator, answered on reply; or,
// when inspect is set, a function run on the coordinator by its driver
// (which owns it), for reads such as the lag metrics.
type groupRequest struct {
	in      group.Input
	reply   chan kmsg.Response
	inspect func(*group.Coordinator)
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
		if p, ok := held[n]; !ok || p.log != d.log {
			close(d.stop)
			<-d.done
			delete(g.mu.drivers, n)
		}
	}
	for n, p := range held {
		if _, ok := g.mu.drivers[n]; ok || g.mu.closed {
			continue
		}
		d := &groupDriver{partition: n, log: p.log, reqs: make(chan groupRequest, 64),
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
	cfg.Topics = topicResolver{g.b}
	c, err := group.New(cfg)
	if err != nil {
		return nil, group.Output{}, err
	}
	start := time.Now()
	end := d.log.LogEndOffset()
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
			if b.Control() || b.Transactional() {
				continue // transactional offsets come with transactions
			}
			err := record.ForEachRecord(b, &scratch, func(_, _ int64, r *record.Record) error {
				return c.Replay(r.Key, r.Value)
			})
			if err != nil {
				return nil, group.Output{}, fmt.Errorf("replay %s-%d at %d: %w", offsetsTopic, d.partition, b.BaseOffset(), err)
			}
		}
	}
	g.b.loggerFor("group").Debug("loaded group coordinator", "partition", d.partition, "records_to", end, "took", time.Since(start))
	return c, c.Loaded(time.Now()), nil
}

// serve runs a loaded coordinator. It returns true when the driver is
// stopped, false when the coordinator must be reloaded.
func (g *groupDrivers) serve(d *groupDriver, c *group.Coordinator, first group.Output, logger *slog.Logger) bool {
	pending := []group.Output{first}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	next := first.NextTick
	for {
		// Persist and answer what the last steps produced, all their
		// records in one append and one fsync (group commit across
		// requests).
		if len(pending) > 0 {
			if !g.persist(d, c, pending, logger) {
				return false
			}
			next = pending[len(pending)-1].NextTick // the earliest timer now
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
			for _, r := range c.Unload() {
				deliver(r)
			}
			g.drain(d)
			return true
		case req := <-d.reqs:
			if req.inspect != nil {
				req.inspect(c)
				continue
			}
			pending = append(pending, c.Step(time.Now(), req.in))
			// Take whatever else is queued, so its records share the fsync.
			for more := true; more && len(pending) < 64; {
				select {
				case req := <-d.reqs:
					if req.inspect != nil {
						req.inspect(c)
						continue
					}
					pending = append(pending, c.Step(time.Now(), req.in))
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
// with the error Kafka gives for a failed write.
func (g *groupDrivers) persist(d *groupDriver, c *group.Coordinator, outs []group.Output, logger *slog.Logger) bool {
	var set []byte
	now := time.Now().UnixMilli()
	for _, o := range outs {
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
	if len(set) > 0 {
		p, code := g.b.lookupPartition(offsetsTopic, [16]byte{}, false, d.partition)
		if code != protocol.None {
			return g.fail(c, outs, code, errors.New("partition not held"), logger)
		}
		epoch := p.leaderEpoch.Load()
		res, err := d.log.Append(set, storage.AppendOptions{AssignOffsets: true, LeaderEpoch: epoch})
		ctx, cancel := context.WithTimeout(g.b.ctx, 30*time.Second)
		defer cancel()
		if err == nil && res.NeedsFlush {
			err = d.log.Flush(ctx, res.LastOffset+1)
		}
		if err != nil {
			return g.fail(c, outs, errorCode(err), err, logger)
		}
		// As Kafka's coordinator writes with acks=all: the responses go
		// once every ISR member holds the records.
		if len(p.isr()) > 1 {
			g.b.awaitReplicated(ctx, p, res.LastOffset+1)
			switch {
			case p.leaderEpoch.Load() != epoch || p.lead.Load() == nil:
				return g.fail(c, outs, protocol.NotCoordinator, errors.New("leadership of the offsets partition moved"), logger)
			case d.log.HighWatermark() <= res.LastOffset:
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

// drain answers requests left in a stopped driver's channel.
func (g *groupDrivers) drain(d *groupDriver) {
	for {
		select {
		case req := <-d.reqs:
			if req.inspect == nil {
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
	d := g.driver(partition)
	if d == nil {
		return group.ErrorResponse(req, int16(g.missingDriverCode(partition)))
	}
	reply := make(chan kmsg.Response, 1)
	in := group.Input{Token: reply, Version: hdr.APIVersion, Request: req, ClientHost: c.clientHost()}
	if hdr.ClientID != nil {
		in.ClientID = *hdr.ClientID
	}
	select {
	case d.reqs <- groupRequest{in: in, reply: reply}:
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

func (r topicResolver) TopicByID(id [16]byte) (string, int32, bool) {
	t := r.b.cluster.Snapshot().TopicsByID[cluster.TopicID(id)]
	if t == nil {
		return "", 0, false
	}
	return t.Name, int32(len(t.Partitions)), true
}
