package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/txn"
	"github.com/gregor-io/gregor/protocol"
)

// markerSender writes the transaction coordinators' markers: it sends
// WriteTxnMarkers (API 27, v1) to each partition's leader over a
// connection of its own to that broker (to this broker too, through its
// own listener, as Kafka does). One request is in flight per broker; the
// markers that wait meanwhile, of every coordinator here, go together in
// the next one (exchange). A marker is reported written on the
// coordinator's channel once its leader wrote it, or once its topic is
// gone; retriable errors are retried against the partition's current
// leader until the coordinator's context ends; a marker refused for a
// fenced producer or coordinator epoch is dropped, as the coordinator's
// package documentation says (step 4).
type markerSender struct {
	b  *Broker
	mu struct {
		sync.Mutex
		dests  map[int32]*markerDest
		closed bool
	}
}

// markerRetryBackoff is the first wait before markers are sent again; it
// doubles up to markerRetryMaxBackoff.
const (
	markerRetryBackoff    = 50 * time.Millisecond
	markerRetryMaxBackoff = time.Second
)

func newMarkerSender(b *Broker) *markerSender {
	s := &markerSender{b: b}
	s.mu.dests = map[int32]*markerDest{}
	return s
}

// send writes markers in the background and reports each written one on
// written, until ctx ends.
func (s *markerSender) send(ctx context.Context, markers []txn.Marker, written chan<- txn.Marker) {
	ms := append([]txn.Marker(nil), markers...)
	s.b.goTracked(func() { s.deliver(ctx, ms, written) })
}

func (s *markerSender) deliver(ctx context.Context, pending []txn.Marker, written chan<- txn.Marker) {
	report := func(m txn.Marker) {
		select {
		case written <- m:
		case <-ctx.Done():
		}
	}
	backoff := markerRetryBackoff
	for len(pending) > 0 && ctx.Err() == nil {
		md := s.b.cluster.Snapshot()
		byLeader := map[int32][]txn.Marker{}
		var retry []txn.Marker
		for _, m := range pending {
			t := md.Topics[m.Topic]
			if t == nil || m.Partition < 0 || int(m.Partition) >= len(t.Partitions) {
				report(m) // the topic is gone: nothing left to mark
				continue
			}
			leader := t.Partitions[m.Partition].Leader
			if _, live := md.Broker(leader); !live {
				retry = append(retry, m)
				continue
			}
			byLeader[leader] = append(byLeader[leader], m)
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for leader, ms := range byLeader {
			wg.Add(1)
			s.b.goTracked(func() {
				defer wg.Done()
				again := s.write(ctx, leader, ms, report)
				mu.Lock()
				retry = append(retry, again...)
				mu.Unlock()
			})
		}
		wg.Wait()
		pending = retry
		if len(pending) == 0 {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, markerRetryMaxBackoff)
	}
}

// markerRequest builds one WriteTxnMarkers v1 request for markers: one
// entry per producer, epoch, outcome and coordinator epoch, its partitions
// grouped by topic.
func markerRequest(markers []txn.Marker) *kmsg.WriteTxnMarkersRequest {
	type entryKey struct {
		pid              int64
		epoch            int16
		commit           bool
		coordinatorEpoch int32
	}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.SetVersion(1)
	index := map[entryKey]int{}
	for _, m := range markers {
		k := entryKey{m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch}
		i, ok := index[k]
		if !ok {
			e := kmsg.NewWriteTxnMarkersRequestMarker()
			e.ProducerID, e.ProducerEpoch, e.Committed, e.CoordinatorEpoch = m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch
			req.Markers = append(req.Markers, e)
			i = len(req.Markers) - 1
			index[k] = i
		}
		e := &req.Markers[i]
		j := -1
		for n := range e.Topics {
			if e.Topics[n].Topic == m.Topic {
				j = n
				break
			}
		}
		if j < 0 {
			t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			t.Topic = m.Topic
			e.Topics = append(e.Topics, t)
			j = len(e.Topics) - 1
		}
		e.Topics[j].Partitions = append(e.Topics[j].Partitions, m.Partition)
	}
	return req
}

// markerOutcome is what the sender does with a marker after a leader's
// answer.
type markerOutcome uint8

const (
	markerRetry   markerOutcome = iota // retry against the current leader
	markerWritten                      // report it written
	markerDrop                         // stop writing it (fenced)
)

// outcomeFor maps a partition's error code in a WriteTxnMarkers response
// to what the coordinator's driver does, as Kafka's marker completion
// handler does. topicExists tells whether the marker's topic still exists.
func outcomeFor(code protocol.ErrorCode, topicExists bool) markerOutcome {
	switch code {
	case protocol.None:
		return markerWritten
	case protocol.UnsupportedForMessageFormat, protocol.UnsupportedVersion:
		// Kafka drops such a partition from the transaction.
		return markerWritten
	case protocol.UnknownTopicOrPartition:
		if !topicExists {
			return markerWritten
		}
		return markerRetry
	case protocol.InvalidProducerEpoch, protocol.TransactionCoordinatorFenced:
		return markerDrop
	}
	// NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS(_AFTER_APPEND),
	// REQUEST_TIMED_OUT, KAFKA_STORAGE_ERROR and anything unexpected:
	// the marker must still be written, so it is tried again.
	return markerRetry
}

// markerKey names a marker's partition for one producer: the unit a
// WriteTxnMarkers answer gives a code for.
type markerKey struct {
	pid       int64
	topic     string
	partition int32
}

// write sends markers to leader and reports the written ones; it returns
// those to retry.
func (s *markerSender) write(ctx context.Context, leader int32, markers []txn.Marker, report func(txn.Marker)) []txn.Marker {
	logger := s.b.loggerFor("txn")
	codes, err := s.exchange(ctx, leader, markers)
	if err != nil {
		if ctx.Err() == nil {
			s.b.metrics.txnMarkerError(-1)
			logger.Debug("sending transaction markers failed; retrying", "leader", leader, "err", err)
		}
		return markers
	}
	md := s.b.cluster.Snapshot()
	var retry []txn.Marker
	for _, m := range markers {
		code, ok := codes[markerKey{m.ProducerID, m.Topic, m.Partition}]
		if !ok {
			retry = append(retry, m)
			continue
		}
		if code != protocol.None {
			s.b.metrics.txnMarkerError(code)
		}
		switch outcomeFor(code, md.Topics[m.Topic] != nil) {
		case markerWritten:
			report(m)
		case markerDrop:
			logger.Warn("transaction marker refused; the transaction stays unfinished until its coordinator loads again",
				"transactional_id", m.TransactionalID, "topic", m.Topic, "partition", m.Partition,
				"producer_id", m.ProducerID, "producer_epoch", m.ProducerEpoch, "code", code)
		case markerRetry:
			retry = append(retry, m)
		}
	}
	return retry
}

// markerJob is one caller's markers waiting for a request to their leader.
type markerJob struct {
	markers []txn.Marker
	done    chan markerAnswer // buffered: the answer is never waited for
}

type markerAnswer struct {
	codes map[markerKey]protocol.ErrorCode
	err   error
}

// exchange sends markers to leader and returns the codes of its answer.
// Callers for the same leader combine: while one request is in flight the
// others queue, and the next to take the connection sends every queued
// caller's markers in one request, as Kafka batches markers per broker, so
// concurrent transactions share the leaders' appends and fsyncs.
func (s *markerSender) exchange(ctx context.Context, leader int32, markers []txn.Marker) (map[markerKey]protocol.ErrorCode, error) {
	d, err := s.dest(leader)
	if err != nil {
		return nil, err
	}
	job := &markerJob{markers: markers, done: make(chan markerAnswer, 1)}
	d.mu.Lock()
	d.mu.queue = append(d.mu.queue, job)
	d.mu.Unlock()

	d.sending.Lock()
	defer d.sending.Unlock()
	select {
	case a := <-job.done: // sent along with another caller's
		return a.codes, a.err
	default:
	}
	d.mu.Lock()
	jobs := d.mu.queue
	d.mu.queue = nil
	d.mu.Unlock()
	var all []txn.Marker
	for _, j := range jobs {
		all = append(all, j.markers...)
	}
	codes, err := s.roundTripMarkers(ctx, d, all)
	for _, j := range jobs {
		j.done <- markerAnswer{codes, err}
	}
	a := <-job.done
	return a.codes, a.err
}

// roundTripMarkers sends one WriteTxnMarkers request for markers and
// returns each partition's code.
func (s *markerSender) roundTripMarkers(ctx context.Context, d *markerDest, markers []txn.Marker) (map[markerKey]protocol.ErrorCode, error) {
	req := markerRequest(markers)
	r, err := d.conn.roundTrip(ctx, s.b, req)
	if err != nil {
		return nil, err
	}
	resp := r.(*kmsg.WriteTxnMarkersResponse)
	if len(resp.Markers) != len(req.Markers) {
		return nil, fmt.Errorf("answer has %d markers, the request %d", len(resp.Markers), len(req.Markers))
	}
	codes := map[markerKey]protocol.ErrorCode{}
	for i, rm := range resp.Markers {
		pid := req.Markers[i].ProducerID
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				codes[markerKey{pid, rt.Topic, rp.Partition}] = protocol.ErrorCode(rp.ErrorCode)
			}
		}
	}
	return codes, nil
}

// markerDest is the sender's state for one destination broker.
type markerDest struct {
	conn    brokerConn
	sending sync.Mutex // held while a request is in flight
	mu      struct {
		sync.Mutex
		queue []*markerJob
	}
}

// dest returns the state for a broker, made on first use.
func (s *markerSender) dest(node int32) (*markerDest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return nil, errors.New("marker sender closed")
	}
	d := s.mu.dests[node]
	if d == nil {
		d = &markerDest{conn: brokerConn{node: node}}
		s.mu.dests[node] = d
	}
	return d, nil
}

// close closes every connection; later sends fail.
func (s *markerSender) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.closed = true
	for _, d := range s.mu.dests {
		d.conn.close()
	}
}

// brokerConn is a connection from this broker to another (or to itself),
// dialed on first use and again after a failure. One request is in flight
// at a time.
type brokerConn struct {
	node int32
	mu   sync.Mutex
	nc   net.Conn
	buf  []byte
	corr int32
}

// brokerRequestTimeout bounds one inter-broker request: the leader's wait
// for a marker to be replicated (markerWriteTimeout) and some slack.
const brokerRequestTimeout = markerWriteTimeout + 10*time.Second

func (bc *brokerConn) roundTrip(ctx context.Context, b *Broker, req kmsg.Request) (kmsg.Response, error) {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	if bc.nc == nil {
		nc, err := b.dialLeader(ctx, bc.node)
		if err != nil {
			return nil, err
		}
		bc.nc = nc
	}
	nc := bc.nc
	defer context.AfterFunc(ctx, func() { nc.Close() })()
	bc.corr++
	resp, err := roundTrip(nc, &bc.buf, bc.corr, fmt.Sprintf("gregor-broker-%d-txn-markers", b.cfg.NodeID), req, brokerRequestTimeout)
	if err != nil {
		nc.Close()
		bc.nc = nil
		return nil, err
	}
	return resp, nil
}

func (bc *brokerConn) close() {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	if bc.nc != nil {
		bc.nc.Close()
		bc.nc = nil
	}
}
