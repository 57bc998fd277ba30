package broker

// Verification of transactional writes (KIP-890 part 1), and the partitions
// a leader adds to a transaction for its producer (part 2).
//
// A producer's first transactional batch to a partition (no transaction of
// its own open there) is appended only if the producer's transaction
// coordinator says the partition was added to its transaction: the leader
// sends the coordinator an AddPartitionsToTxn v5 request with verify_only
// set, one transaction for all such partitions of the produce request,
// over a connection of its own to the coordinator's broker (itself too).
// A producer of transaction version 2 (Produce v12+, TxnOffsetCommit v5+)
// sends no AddPartitionsToTxn of its own: the leader's request then has
// verify_only unset and the coordinator adds the partitions, which is why
// it is made for those versions even with verification turned off
// (transaction.partition.verification.enable=false). The same applies to
// the partition of __consumer_offsets a TxnOffsetCommit writes to
// (28_txn_offset_commit.go).
// Between the question and the append the log holds a verification guard
// for the producer (storage.Log.VerificationGuard); a marker written
// meanwhile voids it and the append fails, so a write that raced the end
// of its transaction cannot open a transaction no coordinator knows of
// (a hanging transaction, which would hold the last stable offset for
// good). Errors are answered as Kafka answers them to the producer: a
// partition not in the transaction is TRANSACTION_ABORTABLE to clients
// that know it (Produce v11+, TxnOffsetCommit v4+), INVALID_TXN_STATE to
// older ones, a fenced
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

// Verification modes: which request versions have the leader add the
// partitions, and which may be answered TRANSACTION_ABORTABLE.
const (
	produceAddsPartitions   = 12 // Produce v12+: transaction version 2
	produceAbortable        = 11 // Produce v11+ knows TRANSACTION_ABORTABLE
	txnCommitAddsPartitions = 5  // TxnOffsetCommit v5+
	txnCommitAbortable      = 4
)

// verifiesTxn reports whether a transactional write of a request at
// version is verified (or added) with its coordinator: always for the
// versions whose producers leave the adding to the leader, else as
// transaction.partition.verification.enable says.
func (b *Broker) verifiesTxn(version, addsFrom int16) bool {
	return b.cfg.TransactionPartitionVerification || version >= addsFrom
}

// retryAdd is the server-side retry of adding partitions to a transaction
// (Kafka's add.partitions.to.txn.retry.backoff.ms and .max.ms, Config's
// AddPartitionsRetryBackoff and AddPartitionsRetryMax): a transaction
// version 2 producer's next transaction often starts while the markers of
// its last one are still being written. Kafka's coordinator answers
// CONCURRENT_TRANSACTIONS then, and its leader tries again every 20 ms for
// up to 100 ms before it answers the client; so does Gregor, for that
// answer and for a marker not yet written here. Answered at once, the
// retriable error costs a client such as franz-go a metadata refresh
// (5 s by default) per transaction. It runs attempt until that reports
// nothing to retry or the time is up.
func retryAdd[T any](ctx context.Context, b *Broker, attempt func() (T, bool)) T {
	backoff := max(b.cfg.AddPartitionsRetryBackoff, time.Millisecond)
	deadline := time.Now().Add(b.cfg.AddPartitionsRetryMax)
	for {
		out, again := attempt()
		if !again || time.Now().Add(backoff).After(deadline) {
			return out
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return out
		case <-t.C:
		}
	}
}

// verifyProduce verifies the partitions of a produce request whose batch
// would begin its producer's transaction on this leader, or adds them to
// the transaction for a producer of transaction version 2. Partitions it
// cannot look at (not led here, not a batch) are left to the append,
// which answers them. Adding is retried for a short while (retryAdd).
func (b *Broker) verifyProduce(ctx context.Context, req *kmsg.ProduceRequest, byID bool) produceVerification {
	return retryAdd(ctx, b, func() (produceVerification, bool) { return b.verifyProduceOnce(ctx, req, byID) })
}

// verifyProduceOnce is one attempt of verifyProduce; it reports whether
// adding may succeed if tried again soon (a marker pending here, or the
// coordinator's CONCURRENT_TRANSACTIONS).
func (b *Broker) verifyProduceOnce(ctx context.Context, req *kmsg.ProduceRequest, byID bool) (produceVerification, bool) {
	var out produceVerification
	again := false
	add := req.Version >= produceAddsPartitions
	if req.TransactionID == nil || !b.verifiesTxn(req.Version, produceAddsPartitions) {
		// Only a request naming a transaction carries writes to verify
		// (so plain produce does not parse its batches twice); one that
		// carries transactional records without naming one is refused
		// by the append, which finds no guard: INVALID_TXN_STATE.
		return out, false
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
			guard, inTxn, waiting := p.log().VerificationGuard(batch.ProducerID(), batch.ProducerEpoch(), batch.BaseSequence())
			if inTxn {
				continue
			}
			if waiting {
				// The producer's previous transaction has not got its
				// marker here yet: retriable, as the coordinator's
				// CONCURRENT_TRANSACTIONS would be.
				if out.errs == nil {
					out.errs = map[[2]int]protocol.ErrorCode{}
				}
				out.errs[[2]int{i, j}] = protocol.NotEnoughReplicas
				again = again || add
				continue
			}
			todo = append(todo, pending{at: [2]int{i, j}, topic: p.tp.Topic, part: rp.Partition, guard: guard})
			pid, epoch = batch.ProducerID(), batch.ProducerEpoch()
		}
	}
	if len(todo) == 0 {
		return out, again
	}
	out.guards = map[[2]int]uint64{}
	if out.errs == nil {
		out.errs = map[[2]int]protocol.ErrorCode{}
	}
	fail := func(code protocol.ErrorCode) produceVerification {
		for _, t := range todo {
			out.errs[t.at] = code
		}
		return out
	}
	codes, err := b.askVerification(ctx, *req.TransactionID, pid, epoch, add, func(yield func(string, int32) bool) {
		for _, t := range todo {
			if !yield(t.topic, t.part) {
				return
			}
		}
	})
	if err != nil {
		b.logger.Debug("transaction verification failed", "transactional_id", *req.TransactionID, "err", err)
		return fail(protocol.NotEnoughReplicas), false
	}
	for _, t := range todo {
		code, ok := codes[fmt.Sprintf("%s/%d", t.topic, t.part)]
		switch {
		case !ok:
			out.errs[t.at] = protocol.NotEnoughReplicas
		case code == protocol.None:
			out.guards[t.at] = t.guard
		default:
			out.errs[t.at] = verificationCode(code, req.Version >= produceAbortable)
			again = again || (add && code == protocol.ConcurrentTransactions)
		}
	}
	return out, again
}

// askVerification sends AddPartitionsToTxn v5 for the partitions to the
// coordinator of transactional id id, verify-only unless add, and returns
// each partition's error code by "topic/partition".
func (b *Broker) askVerification(ctx context.Context, id string, pid int64, epoch int16, add bool,
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
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = id, pid, epoch, !add
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
	req.SetVersion(5)
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

// verificationCode is the answer to a write whose partition the
// coordinator did not verify or add; abortable says the request's version
// knows TRANSACTION_ABORTABLE.
func verificationCode(code protocol.ErrorCode, abortable bool) protocol.ErrorCode {
	switch code {
	case protocol.ProducerFenced:
		return protocol.InvalidProducerEpoch
	case protocol.TransactionAbortable:
		if abortable {
			return code
		}
		return protocol.InvalidTxnState
	case protocol.ConcurrentTransactions, protocol.NetworkException, protocol.CoordinatorLoadInProgress,
		protocol.CoordinatorNotAvailable, protocol.NotCoordinator:
		return protocol.NotEnoughReplicas
	}
	return code
}
