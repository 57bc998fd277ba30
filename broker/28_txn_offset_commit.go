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
// Not done: the transaction verification of KIP-890 (asking the
// transaction coordinator whether the offsets partition is in the
// producer's transaction) and, at v5, adding it to the transaction as
// AddOffsetsToTxn would (KIP-890 part 2). Clients skip AddOffsetsToTxn only
// at transaction.version 2, which Gregor does not finalize (features.go),
// so they still send it.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
)

var txnOffsetCommitAPI = handler{key: 28, min: 0, max: 5, handle: (*Broker).handleTxnOffsetCommit}

func (b *Broker) handleTxnOffsetCommit(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	resp, err := b.handleGroupRequest(ctx, c, hdr, r)
	if tr, ok := resp.(*kmsg.TxnOffsetCommitResponse); ok {
		oldClientCodes(hdr.APIVersion, tr)
	}
	return resp, err
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
