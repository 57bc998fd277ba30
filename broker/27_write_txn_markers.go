package broker

// WriteTxnMarkers (key 27), versions 1-2.
//
// A transaction coordinator (this broker's or another's; the admin client's
// abortTransaction too) asks the leader of each partition of an ended
// transaction to write its COMMIT or ABORT marker: a control batch with the
// producer id and epoch and the coordinator epoch in its value. The leader
// checks the marker as Kafka does (a producer epoch below the producer's:
// INVALID_PRODUCER_EPOCH; a coordinator epoch below that of the producer's
// last marker: TRANSACTION_COORDINATOR_FENCED), appends it under its
// leader epoch and answers once the marker is durable and, with followers
// in the ISR, replicated: Kafka appends markers with acks=all, so a
// partition below min.insync.replicas answers NOT_ENOUGH_REPLICAS. Like
// Produce, the answer waits without holding the connection
// (pendingResponse), so a coordinator may pipeline its requests. Version 2
// (KIP-1228) adds each marker's transaction version; the marker written is
// the same for every version (with version 2 its producer epoch is the
// one the coordinator bumped at the end, above the transaction's records,
// which the producer's state accepts like any higher epoch), so it is read
// and not needed. Gregor's coordinators send version 1.
//
// A marker on a partition of __consumer_offsets ends the producer's
// transactional offset commits there too: once the marker is answered
// NONE, and before the answer goes out, the group coordinator makes the
// producer's pending offsets committed or drops them (groupTxnCompleted).
//
// Only brokers and administrators write markers: the request needs
// CLUSTER_ACTION on the cluster, or ALTER on it (Kafka allows ALTER so
// that an administrator may abort a hanging transaction, KIP-664).
// Without either, every partition of the request is answered
// CLUSTER_AUTHORIZATION_FAILED and nothing is written.

import (
	"context"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/storage"
)

var writeTxnMarkersAPI = handler{key: 27, min: 1, max: 2, handle: (*Broker).handleWriteTxnMarkers}

// markerWriteTimeout bounds how long a marker waits to be durable and
// replicated: the request has no timeout of its own, and Kafka waits its
// request.timeout.ms (30 s).
const markerWriteTimeout = 30 * time.Second

func (b *Broker) handleWriteTxnMarkers(ctx context.Context, c *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	// As Kafka: ALTER is asked for without recording its denial, then
	// CLUSTER_ACTION.
	allowed := c.authorizedClusterQuietly(acl.OpAlter) || c.authorizedCluster(acl.OpClusterAction)
	type markerWait struct {
		rp                *kmsg.WriteTxnMarkersResponseMarkerTopicPartition
		p                 *partition
		upTo              int64
		flush, replicated bool
		epoch             int32
		pid               int64
		commit            bool
	}
	var waits []markerWait
	resp.Markers = make([]kmsg.WriteTxnMarkersResponseMarker, len(req.Markers))
	for i := range req.Markers {
		m := &req.Markers[i]
		out := &resp.Markers[i]
		*out = kmsg.NewWriteTxnMarkersResponseMarker()
		out.ProducerID = m.ProducerID
		out.Topics = make([]kmsg.WriteTxnMarkersResponseMarkerTopic, len(m.Topics))
		for j := range m.Topics {
			mt := &m.Topics[j]
			ot := &out.Topics[j]
			*ot = kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			ot.Topic = strings.Clone(mt.Topic)
			ot.Partitions = make([]kmsg.WriteTxnMarkersResponseMarkerTopicPartition, len(mt.Partitions))
			for k, part := range mt.Partitions {
				rp := &ot.Partitions[k]
				*rp = kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = part
				if !allowed {
					rp.ErrorCode = int16(protocol.ClusterAuthorizationFailed)
					continue
				}
				p, res, epoch, committed, code := b.appendMarker(m, mt.Topic, part)
				if code != protocol.None {
					rp.ErrorCode = int16(code)
					continue
				}
				replicated := !committed
				if res.NeedsFlush || replicated {
					waits = append(waits, markerWait{rp: rp, p: p, upTo: res.LastOffset + 1,
						flush: res.NeedsFlush, replicated: replicated, epoch: epoch, pid: m.ProducerID, commit: m.Committed})
					continue
				}
				b.markerDone(p, m.ProducerID, m.Committed)
			}
		}
	}
	if len(waits) == 0 {
		return resp, nil
	}
	wctx, cancel := context.WithTimeout(b.ctx, markerWriteTimeout)
	targets := make([]storage.FlushTarget, 0, len(waits))
	for _, w := range waits {
		if w.flush {
			targets = append(targets, storage.FlushTarget{Log: w.p.log(), UpTo: w.upTo})
		}
	}
	flushing := storage.StartFlush(targets)
	settle := func(abandon bool) {
		defer cancel()
		if abandon {
			cancel()
		}
		flushing.Wait(wctx)
		codes := make([]protocol.ErrorCode, len(waits))
		for i, w := range waits {
			if w.replicated {
				codes[i] = b.awaitCommitted(wctx, w.p, w.epoch, w.upTo)
			}
		}
		for i, w := range waits {
			code := protocol.None
			switch {
			case w.p.log().Err() != nil:
				code = protocol.KafkaStorageError
			case w.flush && w.p.log().DurableOffset() < w.upTo:
				code = protocol.RequestTimedOut
			case !w.replicated:
			case codes[i] != protocol.None:
				code = codes[i]
			case int32(len(w.p.isr())) < w.p.effectiveMinISR():
				code = protocol.NotEnoughReplicasAfterAppend
			}
			w.rp.ErrorCode = int16(code)
			if code == protocol.None {
				b.markerDone(w.p, w.pid, w.commit)
			}
		}
	}
	return &pendingResponse{Response: resp, settle: settle}, nil
}

// markerDone is called for each marker answered NONE: on a partition of
// __consumer_offsets, the group coordinator applies it.
func (b *Broker) markerDone(p *partition, pid int64, commit bool) {
	if p.tp.Topic == offsetsTopic {
		b.groupTxnCompleted(p.tp.Partition, pid, commit)
	}
}

// appendMarker appends marker m's control batch to one partition this
// broker leads. It returns the partition, the append, the leader epoch it
// was appended under and whether it was committed at once (see
// appendAsLeader).
func (b *Broker) appendMarker(m *kmsg.WriteTxnMarkersRequestMarker, topic string, partition int32) (*partition, storage.AppendResult, int32, bool, protocol.ErrorCode) {
	var res storage.AppendResult
	p, code := b.lookupLeader(b.ctx, topic, [16]byte{}, false, partition)
	if code != protocol.None {
		return nil, res, 0, false, code
	}
	if int32(len(p.isr())) < p.effectiveMinISR() {
		return nil, res, 0, false, protocol.NotEnoughReplicas
	}
	res, epoch, committed, err := p.appendAsLeader(func(l *storage.Log, epoch int32) (storage.AppendResult, error) {
		return l.AppendTxnMarker(storage.TxnMarker{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch,
			CoordinatorEpoch: m.CoordinatorEpoch, Commit: m.Committed}, epoch)
	})
	if err != nil {
		return nil, res, 0, false, errorCode(err)
	}
	return p, res, epoch, committed, protocol.None
}
