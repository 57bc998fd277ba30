package broker

// TxnOffsetCommit (key 28), versions 0-5.
//
// Offsets a transactional producer commits for a group as part of its
// transaction (KIP-98; v3+ carries the member id, generation and
// group.instance.id, checked as OffsetCommit checks them, KIP-447). The
// group logic is coordinator/group's state machine: the broker routes the
// request to the coordinator of the group's __consumer_offsets partition
// (NOT_COORDINATOR when that is not this broker), which writes the offsets
// as a transactional batch of the producer and keeps them pending until
// the transaction's marker reaches the partition (groupTxnCompleted). A
// producer epoch the partition has seen superseded fails the request with
// INVALID_PRODUCER_EPOCH. v0 and v1 get COORDINATOR_NOT_AVAILABLE where
// later versions get COORDINATOR_LOAD_IN_PROGRESS, as Kafka answers
// clients older than the fix of KAFKA-7296.
//
// Transaction verification (KIP-890, txn_verify.go): when the producer has
// no transaction open on the group's offsets partition yet, the
// coordinator of its transactional id is asked first whether that
// partition is in the transaction (transaction.partition.verification.
// enable), or, at v5, the transaction version 2 clients use instead of
// AddOffsetsToTxn, asked to add it. The offsets are then written under the
// partition's verification guard, so a transaction that ended meanwhile
// does not get offsets no marker will settle. A partition not in the
// transaction is TRANSACTION_ABORTABLE (v4+) or INVALID_TXN_STATE, a
// fenced producer INVALID_PRODUCER_EPOCH, and the coordinator errors a
// client should retry COORDINATOR_NOT_AVAILABLE, as Kafka's group
// coordinator answers them.
//
// Authorization comes before all of it, as in Kafka: WRITE on the
// transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and READ on the
// group (GROUP_AUTHORIZATION_FAILED) fail every partition; READ on each
// topic fails that topic's partitions with TOPIC_AUTHORIZATION_FAILED, and
// only the allowed topics go to the coordinator (none when no topic is
// allowed).

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/group"
	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/protocol/record"
)

var txnOffsetCommitAPI = handler{key: 28, min: 0, max: 5, handle: (*Broker).handleTxnOffsetCommit}

func (b *Broker) handleTxnOffsetCommit(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.TxnOffsetCommitRequest)
	var resp kmsg.Response
	switch {
	case !c.authorized(acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID):
		resp = group.ErrorResponse(r, int16(protocol.TransactionalIDAuthorizationFailed))
	case !c.authorized(acl.OpRead, acl.ResourceGroup, req.Group):
		resp = group.ErrorResponse(r, int16(protocol.GroupAuthorizationFailed))
	default:
		allowed, denied := c.txnOffsetTopicsAllowed(req)
		if denied == 0 {
			var err error
			if resp, err = b.commitTxnOffsets(ctx, c, hdr, req); err != nil {
				return nil, err
			}
			break
		}
		var part *kmsg.TxnOffsetCommitResponse
		if len(req.Topics) > denied {
			sub := *req
			sub.Topics = nil
			for i, t := range req.Topics {
				if allowed[i] {
					sub.Topics = append(sub.Topics, t)
				}
			}
			got, err := b.commitTxnOffsets(ctx, c, hdr, &sub)
			if err != nil {
				return nil, err
			}
			part, _ = got.(*kmsg.TxnOffsetCommitResponse)
		}
		resp = mergeDeniedTxnOffsets(req, allowed, part)
	}
	if tr, ok := resp.(*kmsg.TxnOffsetCommitResponse); ok {
		oldClientCodes(hdr.APIVersion, tr)
	}
	return resp, nil
}

// commitTxnOffsets takes an authorized TxnOffsetCommit to the group's
// coordinator, verifying the transaction first where it must.
func (b *Broker) commitTxnOffsets(ctx context.Context, c *conn, hdr protocol.RequestHeader, req *kmsg.TxnOffsetCommitRequest) (kmsg.Response, error) {
	p := b.groupPartition(req.Group)
	if p < 0 || !b.verifiesTxn(hdr.APIVersion, txnCommitAddsPartitions) {
		return b.handleGroupRequest(ctx, c, hdr, req)
	}
	d := b.groups.driver(p)
	guard, code := b.verifyTxnOffsets(ctx, d, p, req, hdr.APIVersion)
	if code != protocol.None {
		return group.ErrorResponse(req, int16(code)), nil
	}
	return b.groups.askGuarded(ctx, d, p, c, hdr, req, guard), nil
}

// txnOffsetTopicsAllowed checks READ on each topic of a TxnOffsetCommit
// (once per name) and returns, by the request's topic index, whether it is
// allowed, and how many topics are not.
func (c *conn) txnOffsetTopicsAllowed(req *kmsg.TxnOffsetCommitRequest) ([]bool, int) {
	byName := make(map[string]bool, len(req.Topics))
	allowed := make([]bool, len(req.Topics))
	denied := 0
	for i, t := range req.Topics {
		ok, seen := byName[t.Topic]
		if !seen {
			ok = c.authorized(acl.OpRead, acl.ResourceTopic, t.Topic)
			byName[t.Topic] = ok
		}
		allowed[i] = ok
		if !ok {
			denied++
		}
	}
	return allowed, denied
}

// mergeDeniedTxnOffsets answers a TxnOffsetCommit some of whose topics were
// denied: in the request's order, TOPIC_AUTHORIZATION_FAILED for each
// partition of a denied topic and the coordinator's answer (part, for the
// allowed topics in order; nil when there were none) for the others.
func mergeDeniedTxnOffsets(req *kmsg.TxnOffsetCommitRequest, allowed []bool, part *kmsg.TxnOffsetCommitResponse) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	if part != nil {
		resp.ThrottleMillis = part.ThrottleMillis
	}
	next := 0
	for i, t := range req.Topics {
		if allowed[i] && part != nil && next < len(part.Topics) {
			resp.Topics = append(resp.Topics, part.Topics[next])
			next++
			continue
		}
		code := protocol.TopicAuthorizationFailed
		if allowed[i] {
			code = protocol.UnknownServerError // the coordinator left it out
		}
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, int16(code)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// verifyTxnOffsets asks the transaction coordinator to verify (or, from
// v5, add) offsets partition p in the producer's transaction when the
// producer has none open there, and returns the guard to append under.
// Without a driver for p here there is nothing to verify: the driver's
// absence is answered by askGuarded. Adding is retried for a short while,
// as for produce (retryAdd).
func (b *Broker) verifyTxnOffsets(ctx context.Context, d *groupDriver, p int32, req *kmsg.TxnOffsetCommitRequest,
	version int16) (txnGuard, protocol.ErrorCode) {
	type result struct {
		guard txnGuard
		code  protocol.ErrorCode
	}
	r := retryAdd(ctx, b, func() (result, bool) {
		g, code, again := b.verifyTxnOffsetsOnce(ctx, d, p, req, version)
		return result{g, code}, again
	})
	return r.guard, r.code
}

func (b *Broker) verifyTxnOffsetsOnce(ctx context.Context, d *groupDriver, p int32, req *kmsg.TxnOffsetCommitRequest,
	version int16) (txnGuard, protocol.ErrorCode, bool) {
	if d == nil || req.ProducerID < 0 {
		return txnGuard{}, protocol.None, false
	}
	add := version >= txnCommitAddsPartitions
	guard, inTxn, pending := d.log.VerificationGuard(req.ProducerID, req.ProducerEpoch, record.NoSequence)
	switch {
	case inTxn:
		return txnGuard{}, protocol.None, false
	case pending:
		// The producer's previous transaction has not got its marker
		// here yet: retriable.
		return txnGuard{}, protocol.CoordinatorNotAvailable, add
	}
	codes, err := b.askVerification(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, add,
		func(yield func(string, int32) bool) { yield(offsetsTopic, p) })
	if err != nil {
		b.logger.Debug("transaction verification of offsets failed", "transactional_id", req.TransactionalID, "err", err)
		return txnGuard{}, protocol.CoordinatorNotAvailable, false
	}
	code, ok := codes[fmt.Sprintf("%s/%d", offsetsTopic, p)]
	switch {
	case !ok:
		return txnGuard{}, protocol.CoordinatorNotAvailable, false
	case code == protocol.None:
		return txnGuard{verify: true, guard: guard}, protocol.None, false
	}
	again := add && code == protocol.ConcurrentTransactions
	code = verificationCode(code, version >= txnCommitAbortable)
	if code == protocol.NotEnoughReplicas {
		code = protocol.CoordinatorNotAvailable
	}
	return txnGuard{}, code, again
}

// oldClientCodes replaces COORDINATOR_LOAD_IN_PROGRESS, which clients of
// v0 and v1 do not retry, with COORDINATOR_NOT_AVAILABLE.
func oldClientCodes(version int16, resp *kmsg.TxnOffsetCommitResponse) {
	if version >= 2 {
		return
	}
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			if p := &resp.Topics[i].Partitions[j]; p.ErrorCode == int16(protocol.CoordinatorLoadInProgress) {
				p.ErrorCode = int16(protocol.CoordinatorNotAvailable)
			}
		}
	}
}
