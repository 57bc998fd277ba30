package broker

// Produce (key 0), versions 0-13.
//
// Versions 0-2 carry message formats v0/v1, which Kafka 4 no longer stores.
// Kafka 4 still advertises them, because librdkafka refuses a broker that
// does not (KAFKA-18659), but closes the connection on any request of
// those versions, even one with no topics (Kafka 4.4, measured by the
// compat lab's null-edges scenario); so do we. From v3 each partition carries exactly one RecordBatch v2. v13
// addresses topics by id.
//
// A batch is checked as Kafka checks it (base offset 0, size against
// max.message.bytes, CRC, magic, offset range, every record with keys for
// compacted topics and timestamps against message.timestamp.*.max.ms), then
// stored as sent: only the base offset, leader epoch and, for LogAppendTime
// topics, the timestamp type and max timestamp are patched. acks=-1 and 1
// answer once the batch is durable (flush.messages=1, the default) or
// written (page-cache mode); acks=0 gets no response, and a connection
// whose acks=0 produce failed is closed so the client refreshes metadata.
// Transactional batches (a producer id and the transactional bit) are
// stored like idempotent ones, the first of a transaction on a partition
// once the transaction coordinator has verified that the partition is in
// the producer's transaction (txn_verify.go; from v12, the transaction
// version 2 producers use, the leader adds the partition to the
// transaction itself); the log tracks each producer's open
// transaction from its first transactional batch to the COMMIT or ABORT
// marker its coordinator writes (WriteTxnMarkers), and a non-transactional
// batch from a producer inside a transaction gets INVALID_TXN_STATE. A
// transactional batch without a producer id is INVALID_RECORD, as in Kafka.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/protocol/record"
	"github.com/gregor-io/gregor/storage"
)

var produceAPI = handler{key: 0, min: 0, max: 13, handle: (*Broker).handleProduce}

// scratchPool holds buffers for decompressing batches under validation, so
// a compressed produce does not allocate its decompressed size each time.
var scratchPool = sync.Pool{New: func() any { return new([]byte) }}

func (b *Broker) handleProduce(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.ProduceRequest)
	if hdr.APIVersion < 3 {
		return nil, fmt.Errorf("%w: produce v%d carries message formats v0/v1", errCloseConn, hdr.APIVersion)
	}
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	byID := hdr.APIVersion >= 13
	now := time.Now().UnixMilli()

	type flushWait struct {
		rp   *kmsg.ProduceResponseTopicPartition
		p    *partition
		upTo int64
		// flush: the append needs an fsync before it is acknowledged;
		// replicated: acks=all records the high watermark did not pass at
		// once, so it must pass them under leader epoch epoch.
		flush, replicated bool
		epoch             int32
	}
	var waits []flushWait
	failed := false
	txnDenied := b.cfg.AuthorizerClassName != "" && produceTransactional(req) &&
		(req.TransactionID == nil || !c.authorized(acl.OpWrite, acl.ResourceTransactionalID, *req.TransactionID))
	var denied []bool // by topic: no WRITE on it
	var verified produceVerification
	if !txnDenied {
		denied = b.produceDenied(c, req, byID)
		verified = b.verifyProduce(ctx, produceAllowed(req, denied), byID)
	}
	var md *cluster.Metadata // for leader hints, read on the first one
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	for i := range req.Topics {
		rt := &req.Topics[i]
		out := &resp.Topics[i]
		*out = kmsg.NewProduceResponseTopic()
		out.Topic, out.TopicID = rt.Topic, rt.TopicID
		out.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		for j := range rt.Partitions {
			rp := &out.Partitions[j]
			*rp = kmsg.NewProduceResponseTopicPartition()
			rp.Partition = rt.Partitions[j].Partition
			rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
			var code protocol.ErrorCode
			switch {
			case txnDenied:
				code = protocol.TransactionalIDAuthorizationFailed
			case denied != nil && denied[i]:
				code = protocol.TopicAuthorizationFailed
			case req.Acks != -1 && req.Acks != 0 && req.Acks != 1:
				code = protocol.InvalidRequiredAcks
			case verified.errs[[2]int{i, j}] != protocol.None:
				code = verified.errs[[2]int{i, j}]
			default:
				var res storage.AppendResult
				var p *partition
				var epoch int32
				var committed bool
				p, res, epoch, committed, code = b.produceTo(rp, hdr.APIVersion, rt.Topic, rt.TopicID, byID, rt.Partitions[j].Records, req.Acks, now, c,
					verified.guards[[2]int{i, j}])
				if code != protocol.None {
					break
				}
				// Whether the records need followers is decided by the
				// high watermark at the append, not by the ISR read
				// after it: a leadership moving meanwhile may have
				// brought an ISR without this broker.
				replicated := req.Acks == -1 && !committed
				switch {
				case req.Acks == 0 && res.NeedsFlush:
					p.log().FlushAsync()
				case res.NeedsFlush || replicated:
					waits = append(waits, flushWait{rp: rp, p: p, upTo: res.LastOffset + 1,
						flush: res.NeedsFlush, replicated: replicated, epoch: epoch})
				}
			}
			if code != protocol.None {
				failed = true
				rp.ErrorCode = int16(code)
				rp.BaseOffset = -1
			}
			if code == protocol.NotLeaderOrFollower {
				if md == nil {
					md = b.cluster.Snapshot()
				}
				if leader, epoch, at, ok := b.leaderHint(md, rt.Topic, rt.TopicID, byID, rp.Partition); ok {
					rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = leader, epoch
					resp.Brokers = addProduceEndpoint(resp.Brokers, at, c.listener)
				}
			}
		}
	}
	if req.Acks == 0 {
		if failed {
			return nil, fmt.Errorf("%w: acks=0 produce failed", errCloseConn)
		}
		return nil, nil
	}
	if len(waits) == 0 {
		return resp, nil
	}
	// Every partition's flush is queued at once, so one group-commit round
	// serves them all. The response is settled once they are durable (or
	// the request's timeout passes), but the connection does not wait for
	// that: its next request is read and appended meanwhile, and the
	// writer sends the responses in request order (pendingResponse).
	fctx, cancel := context.WithTimeout(ctx, time.Duration(max(req.TimeoutMillis, 0))*time.Millisecond)
	targets := make([]storage.FlushTarget, 0, len(waits))
	for _, w := range waits {
		if w.flush {
			targets = append(targets, storage.FlushTarget{Log: w.p.log(), UpTo: w.upTo})
		}
	}
	flushing := storage.StartFlush(targets)
	waitStart := time.Now()
	settle := func(abandon bool) {
		defer cancel()
		if abandon {
			cancel()
		}
		flushing.Wait(fctx)
		codes := make([]protocol.ErrorCode, len(waits))
		for i, w := range waits {
			if w.replicated {
				codes[i] = b.awaitCommitted(fctx, w.p, w.epoch, w.upTo)
			}
		}
		b.metrics.produceWait.Observe(time.Since(waitStart).Seconds())
		for i, w := range waits {
			code := protocol.None
			switch {
			case w.p.log().Err() != nil:
				code = protocol.KafkaStorageError
			case w.flush && w.p.log().DurableOffset() < w.upTo:
				code = protocol.RequestTimedOut
			case !w.replicated:
			case codes[i] != protocol.None:
				// Leadership moved before the ISR had the records (the
				// new leader may not have them), or the time ran out.
				code = codes[i]
			case int32(len(w.p.isr())) < w.p.effectiveMinISR():
				// Replicated, but the ISR shrank below min.insync.replicas
				// meanwhile, as Kafka answers.
				code = protocol.NotEnoughReplicasAfterAppend
			}
			if code != protocol.None {
				w.rp.ErrorCode = int16(code)
				w.rp.BaseOffset = -1
			}
		}
	}
	// Topic names alias the request frame, which the connection reuses
	// for its next request before this response is encoded.
	for i := range resp.Topics {
		resp.Topics[i].Topic = strings.Clone(resp.Topics[i].Topic)
	}
	return &pendingResponse{Response: resp, settle: settle}, nil
}

// produceTransactional reports whether req carries transactional records:
// whether the first batch of some partition is transactional, which is
// what Kafka looks at.
func produceTransactional(req *kmsg.ProduceRequest) bool {
	for i := range req.Topics {
		for j := range req.Topics[i].Partitions {
			batch, _, err := record.Parse(req.Topics[i].Partitions[j].Records)
			if err == nil && batch.Magic() == record.Magic && batch.Transactional() {
				return true
			}
		}
	}
	return false
}

// produceDenied returns, by topic of req, whether c's principal lacks
// WRITE on it; nil when it may write to all of them. A topic named by an
// id no topic has is left to the append, which answers UNKNOWN_TOPIC_ID.
func (b *Broker) produceDenied(c *conn, req *kmsg.ProduceRequest, byID bool) []bool {
	if b.cfg.AuthorizerClassName == "" {
		return nil
	}
	var denied []bool
	var md *cluster.Metadata
	allowed := c.topicsAllowed(acl.OpWrite)
	for i := range req.Topics {
		name := req.Topics[i].Topic
		if byID {
			if md == nil {
				md = b.cluster.Snapshot()
			}
			t := md.TopicsByID[cluster.TopicID(req.Topics[i].TopicID)]
			if t == nil {
				continue
			}
			name = t.Name
		}
		if !allowed(name) {
			if denied == nil {
				denied = make([]bool, len(req.Topics))
			}
			denied[i] = true
		}
	}
	return denied
}

// produceAllowed is req without the partitions of the denied topics (their
// places kept, so partition (i, j) is the same in both), for the
// transaction verification, which must not act on them.
func produceAllowed(req *kmsg.ProduceRequest, denied []bool) *kmsg.ProduceRequest {
	if denied == nil {
		return req
	}
	out := *req
	out.Topics = slices.Clone(req.Topics)
	for i := range out.Topics {
		if denied[i] {
			out.Topics[i].Partitions = nil
		}
	}
	return &out
}

// addProduceEndpoint adds a leader's endpoint on listener to a produce
// response's node endpoints (KIP-951), once; a leader without the listener
// is left out, its id and epoch still given, as Kafka does.
func addProduceEndpoint(list []kmsg.ProduceResponseBroker, at cluster.BrokerInfo, listener string) []kmsg.ProduceResponseBroker {
	host, port, ok := at.Endpoint(listener)
	if !ok {
		return list
	}
	for _, e := range list {
		if e.NodeID == at.NodeID {
			return list
		}
	}
	e := kmsg.NewProduceResponseBroker()
	e.NodeID, e.Host, e.Port, e.Rack = at.NodeID, host, port, at.Rack
	return append(list, e)
}

// awaitReplicated waits until the high watermark of p, a partition this
// broker leads, passes upTo (every ISR member holds the records), or ctx
// ends, or this broker stops leading p.
func (b *Broker) awaitReplicated(ctx context.Context, p *partition, upTo int64) {
	b.advanceHW(p) // the leader's own flush may be what it waited for
	if p.log().HighWatermark() >= upTo {
		return
	}
	wake := make(chan struct{}, 1)
	for {
		l := p.log()
		unsubscribe := l.Subscribe(wake)
		for l.HighWatermark() < upTo && p.lead.Load() != nil && !l.Shut() {
			select {
			case <-wake:
			case <-ctx.Done():
				unsubscribe()
				return
			}
		}
		unsubscribe()
		if !l.Shut() {
			return
		}
		// The log moved to another log dir (or went).
		if p.logAfterMove() == l {
			return
		}
	}
}

// pendingResponse is a response whose content is settled after its
// handler returns: a produce waiting for its batches to be durable. The
// connection queues it in its turn and reads on; its writer calls settle
// when it comes to it (abandon: the connection has failed, so do not wait)
// and then encodes it.
type pendingResponse struct {
	kmsg.Response
	settle func(abandon bool)
}

// produceTo validates and appends one partition's records, filling rp. It
// returns the partition, the leader epoch the records were appended under
// and whether they were committed at once (see appendAsLeader).
func (b *Broker) produceTo(rp *kmsg.ProduceResponseTopicPartition, version int16, topic string, topicID [16]byte, byID bool,
	records []byte, acks int16, now int64, c *conn, guard uint64) (*partition, storage.AppendResult, int32, bool, protocol.ErrorCode) {
	var res storage.AppendResult
	p, code := b.lookupLeader(b.ctx, topic, topicID, byID, rp.Partition)
	if code != protocol.None {
		return nil, res, 0, false, code
	}
	set := p.settings.Load()
	if p.internal && c.clientID != "__admin_client" {
		return nil, res, 0, false, protocol.InvalidTopicException
	}
	if acks == -1 && int32(len(p.isr())) < p.effectiveMinISR() {
		return nil, res, 0, false, protocol.NotEnoughReplicas
	}
	batch, rest, err := record.Parse(records)
	if err != nil {
		if len(records) == 0 {
			return nil, res, 0, false, protocol.InvalidRecord
		}
		return nil, res, 0, false, protocol.CorruptMessage
	}
	if len(rest) != 0 {
		// Since v3 a partition's records are exactly one batch.
		return nil, res, 0, false, protocol.InvalidRecord
	}
	if int64(len(batch)) > int64(set.maxMessageBytes) {
		return nil, res, 0, false, protocol.MessageTooLarge
	}
	if batch.Magic() == record.Magic && batch.BaseOffset() != 0 {
		return nil, res, 0, false, protocol.InvalidRecord
	}
	if batch.Magic() == record.Magic && batch.Transactional() && batch.ProducerID() < 0 {
		return nil, res, 0, false, protocol.InvalidRecord
	}
	if version < 7 && batch.Magic() == record.Magic && batch.Codec() == record.CodecZstd {
		// zstd came with Produce v7 (KIP-110); older requests may not use it.
		return nil, res, 0, false, protocol.UnsupportedCompressionType
	}
	scratch := scratchPool.Get().(*[]byte)
	defer func() {
		if cap(*scratch) <= 8<<20 { // a rare huge batch's buffer is not kept
			scratchPool.Put(scratch)
		}
	}()
	info, err := record.Validate(batch, record.ValidateOptions{
		Records:            true,
		RequireKeys:        set.compacted,
		CheckTimestamps:    !set.logAppendTime,
		Now:                now,
		TimestampBeforeMax: set.timestampBeforeMaxMs,
		TimestampAfterMax:  set.timestampAfterMaxMs,
		MaxDecompressed:    max(int(b.cfg.SocketRequestMaxBytes), 64<<20),
		Scratch:            scratch,
	})
	if err != nil {
		code := protocol.ErrorCodeFor(err)
		var recErrs record.RecordErrors
		if errors.As(err, &recErrs) {
			for _, re := range recErrs {
				er := kmsg.NewProduceResponseTopicPartitionErrorRecord()
				er.RelativeOffset = re.Index
				msg := re.Err.Error()
				er.ErrorMessage = &msg
				rp.ErrorRecords = append(rp.ErrorRecords, er)
			}
		}
		msg := err.Error()
		rp.ErrorMessage = &msg
		return nil, res, 0, false, code
	}
	if set.logAppendTime {
		batch.SetLogAppendTime(now)
		rp.LogAppendTime = now
	} else if info.MaxTimestamp != batch.MaxTimestamp() {
		batch.SetMaxTimestamp(info.MaxTimestamp)
	}
	if race := b.produceRace.Load(); race != nil {
		(*race)(p, false)
	}
	res, epoch, committed, err := p.appendAsLeader(func(l *storage.Log, epoch int32) (storage.AppendResult, error) {
		return l.Append(batch, storage.AppendOptions{AssignOffsets: true, LeaderEpoch: epoch,
			VerifyTxn: b.verifiesTxn(version, produceAddsPartitions), Guard: guard})
	})
	if race := b.produceRace.Load(); race != nil {
		(*race)(p, true)
	}
	if err != nil {
		return nil, res, 0, false, errorCode(err)
	}
	rp.BaseOffset = res.FirstOffset
	rp.LogStartOffset = res.LogStart
	if res.Duplicate {
		// Kafka answers a retried batch with the original's timestamp.
		rp.LogAppendTime = res.DuplicateTimestamp
	} else {
		p.metrics.bytesIn.Add(float64(len(batch)))
		p.metrics.recordsIn.Add(float64(batch.RecordCount()))
	}
	return p, res, epoch, committed, protocol.None
}
