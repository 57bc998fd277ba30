package broker

// Verification of transactional produce (KIP-890 part 1).
//
// A producer's first transactional batch to a partition (no transaction of
// its own open there) is appended only if the producer's transaction
// coordinator says the partition was added to its transaction: the leader
// sends the coordinator an AddPartitionsToTxn v4 request with verify_only
// set, one transaction for all such partitions of the produce request,
// over a connection of its own to the coordinator's broker (itself too).
// Between the question and the append the log holds a verification guard
// for the producer (storage.Log.VerificationGuard); a marker written
// meanwhile voids it and the append fails, so a write that raced the end
// of its transaction cannot open a transaction no coordinator knows of
// (a hanging transaction, which would hold the last stable offset for
// good). Errors are answered as Kafka answers them to the producer: a
// partition not in the transaction is INVALID_TXN_STATE, a fenced
// producer INVALID_PRODUCER_EPOCH, and coordinator errors a client should
// retry (CONCURRENT_TRANSACTIONS, COORDINATOR_LOAD_IN_PROGRESS,
// COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, a failed connection) become
// NOT_ENOUGH_REPLICAS, which every producer retries without refreshing its
// metadata.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/protocol/record"
)

// verifyTimeout bounds the coordinator's answer to a verification.
const verifyTimeout = 5 * time.Second

// txnVerifier holds the leader's connections to transaction coordinators.
type txnVerifier struct {
	mu    sync.Mutex
	conns map[int32]*brokerConn
}

func (v *txnVerifier) conn(node int32) *brokerConn {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.conns == nil {
		v.conns = map[int32]*brokerConn{}
	}
	bc := v.conns[node]
	if bc == nil {
		bc = &brokerConn{node: node}
		v.conns[node] = bc
	}
	return bc
}

func (v *txnVerifier) close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, bc := range v.conns {
		bc.close()
	}
	v.conns = nil
}

// produceVerification is the outcome of verifying a produce request: the
// guard to append each verified partition with, the error of each that
// failed, by the partition's place in the request.
type produceVerification struct {
	guards map[[2]int]uint64
	errs   map[[2]int]protocol.ErrorCode
}

// verifyProduce verifies the partitions of a produce request whose batch
// would begin its producer's transaction on this leader. Partitions it
// cannot look at (not led here, not a batch) are left to the append,
// which answers them.
func (b *Broker) verifyProduce(ctx context.Context, req *kmsg.ProduceRequest, byID bool) produceVerification {
	var out produceVerification
	if !b.cfg.TransactionPartitionVerification || req.TransactionID == nil {
		// Only a request naming a transaction carries writes to verify
		// (so plain produce does not parse its batches twice); one that
		// carries transactional records without naming one is refused
		// by the append, which finds no guard: INVALID_TXN_STATE.
		return out
	}
	type pending struct {
		at    [2]int
		topic string
		part  int32
		guard uint64
	}
	var todo []pending
	var pid int64 = -1
	var epoch int16 = -1
	for i := range req.Topics {
		rt := &req.Topics[i]
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			batch, _, err := record.Parse(rp.Records)
			if err != nil || batch.Magic() != record.Magic || !batch.Transactional() || batch.ProducerID() < 0 {
				continue
			}
			p, code := b.lookupLeader(ctx, rt.Topic, rt.TopicID, byID, rp.Partition)
			if code != protocol.None {
				continue
			}
			guard, inTxn := p.log().VerificationGuard(batch.ProducerID())
			if inTxn {
				continue
			}
			todo = append(todo, pending{at: [2]int{i, j}, topic: p.tp.Topic, part: rp.Partition, guard: guard})
			pid, epoch = batch.ProducerID(), batch.ProducerEpoch()
		}
	}
	if len(todo) == 0 {
		return out
	}
	out.guards, out.errs = map[[2]int]uint64{}, map[[2]int]protocol.ErrorCode{}
	fail := func(code protocol.ErrorCode) produceVerification {
		for _, t := range todo {
			out.errs[t.at] = code
		}
		return out
	}
	codes, err := b.askVerification(ctx, *req.TransactionID, pid, epoch, func(yield func(string, int32) bool) {
		for _, t := range todo {
			if !yield(t.topic, t.part) {
				return
			}
		}
	})
	if err != nil {
		b.logger.Debug("transaction verification failed", "transactional_id", *req.TransactionID, "err", err)
		return fail(protocol.NotEnoughReplicas)
	}
	for _, t := range todo {
		code, ok := codes[fmt.Sprintf("%s/%d", t.topic, t.part)]
		switch {
		case !ok:
			out.errs[t.at] = protocol.NotEnoughReplicas
		case code == protocol.None:
			out.guards[t.at] = t.guard
		default:
			out.errs[t.at] = verificationProduceCode(code)
		}
	}
	return out
}

// askVerification sends AddPartitionsToTxn v4 (verify only) for the
// partitions to the coordinator of transactional id id and returns each
// partition's error code by "topic/partition".
func (b *Broker) askVerification(ctx context.Context, id string, pid int64, epoch int16,
	parts func(yield func(string, int32) bool)) (map[string]protocol.ErrorCode, error) {
	md := b.cluster.Snapshot()
	t, ok := md.Topics[txnTopic]
	if !ok || len(t.Partitions) == 0 {
		return nil, fmt.Errorf("%s does not exist", txnTopic)
	}
	coordinator := t.Partitions[b.txnPartition(id)].Leader
	if coordinator < 0 {
		return nil, fmt.Errorf("no leader for the coordinator's partition")
	}
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = id, pid, epoch, true
	byTopic := map[string]int{}
	for topic, part := range parts {
		i, ok := byTopic[topic]
		if !ok {
			i = len(tx.Topics)
			byTopic[topic] = i
			rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			rt.Topic = topic
			tx.Topics = append(tx.Topics, rt)
		}
		tx.Topics[i].Partitions = append(tx.Topics[i].Partitions, part)
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(4)
	req.Transactions = append(req.Transactions, tx)
	vctx, cancel := context.WithTimeout(ctx, verifyTimeout)
	defer cancel()
	r, err := b.verifier.conn(coordinator).roundTrip(vctx, b, req)
	if err != nil {
		return nil, err
	}
	resp := r.(*kmsg.AddPartitionsToTxnResponse)
	codes := map[string]protocol.ErrorCode{}
	top := protocol.ErrorCode(resp.ErrorCode)
	if top == protocol.ClusterAuthorizationFailed {
		top = protocol.InvalidTxnState
	}
	for topic, part := range parts {
		if top != protocol.None {
			codes[fmt.Sprintf("%s/%d", topic, part)] = top
		}
	}
	if top != protocol.None {
		return codes, nil
	}
	for _, rt := range resp.Transactions {
		if rt.TransactionalID != id {
			continue
		}
		for _, tt := range rt.Topics {
			for _, tp := range tt.Partitions {
				codes[fmt.Sprintf("%s/%d", tt.Topic, tp.Partition)] = protocol.ErrorCode(tp.ErrorCode)
			}
		}
	}
	return codes, nil
}

// verificationProduceCode is the produce answer for a coordinator's
// refusal to verify a partition.
func verificationProduceCode(code protocol.ErrorCode) protocol.ErrorCode {
	switch code {
	case protocol.ProducerFenced:
		return protocol.InvalidProducerEpoch
	case protocol.TransactionAbortable:
		return protocol.InvalidTxnState
	case protocol.ConcurrentTransactions, protocol.NetworkException, protocol.CoordinatorLoadInProgress,
		protocol.CoordinatorNotAvailable, protocol.NotCoordinator:
		return protocol.NotEnoughReplicas
	}
	return code
}
