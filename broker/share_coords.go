package broker

// The share coordinators of this broker: one per __share_group_state
// partition it leads, each owned by one goroutine (its driver) that follows
// coordinator/share's contract as the group drivers follow
// coordinator/group's: load by replaying the partition, feed requests to the
// state machine, append its records acks=all, answer once they are durable,
// and fence and reload the coordinator when an append fails.
//
// The share coordinator APIs (InitializeShareGroupState,
// ReadShareGroupState, WriteShareGroupState, DeleteShareGroupState,
// ReadShareGroupStateSummary: keys 83-87) are inter-broker: share partition
// leaders send them (share_state.go). They are served on every listener but
// not advertised to clients, as Kafka keeps them off client listeners.

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/share"
	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/storage"
)

type shareCoordDrivers struct {
	b  *Broker
	mu struct {
		sync.Mutex
		drivers map[int32]*shareCoordDriver
		closed  bool
	}
}

type shareCoordDriver struct {
	partition int32
	log       *storage.Log
	epoch     int32
	reqs      chan share.Input
	stop      chan struct{}
	done      chan struct{}
}

func newShareCoordDrivers(b *Broker) *shareCoordDrivers {
	s := &shareCoordDrivers{b: b}
	s.mu.drivers = map[int32]*shareCoordDriver{}
	return s
}

// sync starts a driver for every __share_group_state partition this broker
// now leads and stops the others (and those whose leader epoch moved).
// Called from syncPartitions.
func (s *shareCoordDrivers) sync(pt *partitionTable) {
	s.mu.Lock()
	defer s.mu.Unlock()
	type held struct {
		p     *partition
		epoch int32
	}
	leading := map[int32]held{}
	for i, p := range pt.byName[shareStateTopic] {
		if p == nil {
			continue
		}
		if st := p.state.Load(); st != nil && st.Leader == s.b.cfg.NodeID {
			leading[int32(i)] = held{p, st.LeaderEpoch}
		}
	}
	for n, d := range s.mu.drivers {
		if h, ok := leading[n]; !ok || h.p.log() != d.log || h.epoch != d.epoch {
			close(d.stop)
			<-d.done
			delete(s.mu.drivers, n)
		}
	}
	for n, h := range leading {
		if _, ok := s.mu.drivers[n]; ok || s.mu.closed {
			continue
		}
		d := &shareCoordDriver{partition: n, log: h.p.log(), epoch: h.epoch, reqs: make(chan share.Input, 64),
			stop: make(chan struct{}), done: make(chan struct{})}
		s.mu.drivers[n] = d
		s.b.goTracked(func() { s.run(d) })
	}
}

func (s *shareCoordDrivers) stopAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.closed = true
	for n, d := range s.mu.drivers {
		close(d.stop)
		<-d.done
		delete(s.mu.drivers, n)
	}
}

func (s *shareCoordDrivers) driver(partition int32) *shareCoordDriver {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.drivers[partition]
}

// run loads the partition and serves until stopped; a failed append fences
// the coordinator and the driver loads a new one.
func (s *shareCoordDrivers) run(d *shareCoordDriver) {
	defer close(d.done)
	logger := s.b.loggerFor("share").With("share_coordinator", d.partition)
	for {
		c, err := s.load(d)
		if err != nil {
			logger.Error("loading share coordinator failed; retrying", "err", err)
			retry := time.NewTimer(time.Second)
			for waiting := true; waiting; {
				select {
				case <-d.stop:
					retry.Stop()
					s.drain(d)
					return
				case in := <-d.reqs:
					deliverShare(share.Response{Token: in.Token, Body: share.ErrorResponse(in.Request, int16(protocol.CoordinatorLoadInProgress))})
				case <-retry.C:
					waiting = false
				}
			}
			continue
		}
		if s.serve(d, c, logger) {
			return
		}
	}
}

func (s *shareCoordDrivers) load(d *shareCoordDriver) (*share.Coordinator, error) {
	cfg := share.DefaultConfig()
	cfg.Partitions = s.b.cfg.ShareStateTopicNumPartitions
	if t := s.b.cluster.Snapshot().Topics[shareStateTopic]; t != nil {
		cfg.Partitions = int32(len(t.Partitions))
	}
	c, err := share.New(cfg, d.partition)
	if err != nil {
		return nil, err
	}
	if _, err := replayCoordinatorLog(d.log, c.Replay); err != nil {
		return nil, err
	}
	c.Loaded(time.Now())
	return c, nil
}

// serve runs a loaded coordinator: true when stopped, false when it must
// be loaded again.
func (s *shareCoordDrivers) serve(d *shareCoordDriver, c *share.Coordinator, logger *slog.Logger) bool {
	for {
		select {
		case <-d.stop:
			for _, r := range c.Unload() {
				deliverShare(r)
			}
			s.drain(d)
			return true
		case in := <-d.reqs:
			now := time.Now()
			outs := []share.Output{c.Step(now, in)}
			// Take whatever else is queued, so its records share the fsync.
			for more := true; more && len(outs) < 64; {
				select {
				case in := <-d.reqs:
					outs = append(outs, c.Step(now, in))
				default:
					more = false
				}
			}
			var batches [][]coordinatorRecord
			for _, o := range outs {
				if len(o.Records) == 0 {
					continue
				}
				recs := make([]coordinatorRecord, len(o.Records))
				for i, r := range o.Records {
					recs[i] = coordinatorRecord{key: r.Key, value: r.Value}
				}
				batches = append(batches, recs)
			}
			if code, err := s.b.appendCoordinatorBatches(shareStateTopic, d.partition, d.log, batches); code != protocol.None {
				logger.Warn("appending share state failed; loading the coordinator again", "err", err, "code", code)
				var failed []share.Response
				for _, o := range outs {
					failed = append(failed, o.Responses...)
				}
				for _, r := range c.AppendFailed(failed, int16(code)) {
					deliverShare(r)
				}
				return false
			}
			for _, o := range outs {
				for _, r := range o.Responses {
					deliverShare(r)
				}
			}
		}
	}
}

func (s *shareCoordDrivers) drain(d *shareCoordDriver) {
	for {
		select {
		case in := <-d.reqs:
			deliverShare(share.Response{Token: in.Token, Body: share.ErrorResponse(in.Request, int16(protocol.NotCoordinator))})
		default:
			return
		}
	}
}

func deliverShare(r share.Response) {
	if ch, ok := r.Token.(chan kmsg.Response); ok {
		ch <- r.Body
	}
}

// ask sends a share state request to the coordinator of partition here and
// waits for its answer: NOT_COORDINATOR when this broker does not lead it
// (COORDINATOR_LOAD_IN_PROGRESS while its driver starts).
func (s *shareCoordDrivers) ask(ctx context.Context, partition int32, req kmsg.Request) kmsg.Response {
	d := s.driver(partition)
	if d == nil {
		code := protocol.NotCoordinator
		if t := s.b.cluster.Snapshot().Topics[shareStateTopic]; t != nil && partition >= 0 && int(partition) < len(t.Partitions) &&
			t.Partitions[partition].Leader == s.b.cfg.NodeID {
			code = protocol.CoordinatorLoadInProgress
		}
		return share.ErrorResponse(req, int16(code))
	}
	reply := make(chan kmsg.Response, 1)
	select {
	case d.reqs <- share.Input{Token: reply, Request: req}:
	case <-d.done:
		return share.ErrorResponse(req, int16(protocol.NotCoordinator))
	case <-ctx.Done():
		return share.ErrorResponse(req, int16(protocol.CoordinatorNotAvailable))
	}
	select {
	case resp := <-reply:
		return resp
	case <-d.done:
		select {
		case resp := <-reply:
			return resp
		default:
			return share.ErrorResponse(req, int16(protocol.NotCoordinator))
		}
	}
}

// handleShareStateRequest serves the share coordinator APIs (83-87) for
// another broker's share partition leaders: routed by the request's key
// to this broker's coordinator of its __share_group_state partition. As
// in Kafka, only a principal with CLUSTER_ACTION on the cluster (a broker)
// may send them: any other gets CLUSTER_AUTHORIZATION_FAILED on every
// partition.
func (b *Broker) handleShareStateRequest(ctx context.Context, c *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	if !c.authorizedCluster(acl.OpClusterAction) {
		return share.ErrorResponse(r, int16(protocol.ClusterAuthorizationFailed)), nil
	}
	var key share.Key
	switch req := r.(type) {
	case *kmsg.InitializeShareGroupStateRequest:
		key.Group = req.GroupID
		if len(req.Topics) > 0 && len(req.Topics[0].Partitions) > 0 {
			key.TopicID, key.Partition = req.Topics[0].TopicID, req.Topics[0].Partitions[0].Partition
		}
	case *kmsg.ReadShareGroupStateRequest:
		key.Group = req.GroupID
		if len(req.Topics) > 0 && len(req.Topics[0].Partitions) > 0 {
			key.TopicID, key.Partition = req.Topics[0].TopicID, req.Topics[0].Partitions[0].Partition
		}
	case *kmsg.WriteShareGroupStateRequest:
		key.Group = req.GroupID
		if len(req.Topics) > 0 && len(req.Topics[0].Partitions) > 0 {
			key.TopicID, key.Partition = req.Topics[0].TopicID, req.Topics[0].Partitions[0].Partition
		}
	case *kmsg.DeleteShareGroupStateRequest:
		key.Group = req.GroupID
		if len(req.Topics) > 0 && len(req.Topics[0].Partitions) > 0 {
			key.TopicID, key.Partition = req.Topics[0].TopicID, req.Topics[0].Partitions[0].Partition
		}
	case *kmsg.ReadShareGroupStateSummaryRequest:
		key.Group = req.GroupID
		if len(req.Topics) > 0 && len(req.Topics[0].Partitions) > 0 {
			key.TopicID, key.Partition = req.Topics[0].TopicID, req.Topics[0].Partitions[0].Partition
		}
	}
	t := b.cluster.Snapshot().Topics[shareStateTopic]
	if t == nil || len(t.Partitions) == 0 {
		return share.ErrorResponse(r, int16(protocol.NotCoordinator)), nil
	}
	c.releaseSlot()
	// The coordinator answers NOT_COORDINATOR for any partition of the
	// request that is not its own.
	return b.shareCoords.ask(ctx, share.CoordinatorPartition(key.String(), int32(len(t.Partitions))), r), nil
}

// internalHandlers are the inter-broker APIs served but not advertised in
// ApiVersions: the share coordinator's.
var internalHandlers = []handler{
	initializeShareGroupStateAPI,
	readShareGroupStateAPI,
	writeShareGroupStateAPI,
	deleteShareGroupStateAPI,
	readShareGroupStateSummaryAPI,
}

var (
	initializeShareGroupStateAPI  = handler{key: 83, min: 0, max: 0, handle: (*Broker).handleShareStateRequest}
	readShareGroupStateAPI        = handler{key: 84, min: 0, max: 0, handle: (*Broker).handleShareStateRequest}
	writeShareGroupStateAPI       = handler{key: 85, min: 0, max: 0, handle: (*Broker).handleShareStateRequest}
	deleteShareGroupStateAPI      = handler{key: 86, min: 0, max: 0, handle: (*Broker).handleShareStateRequest}
	readShareGroupStateSummaryAPI = handler{key: 87, min: 0, max: 1, handle: (*Broker).handleShareStateRequest}
)
