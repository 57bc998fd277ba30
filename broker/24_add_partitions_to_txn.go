package broker

// AddPartitionsToTxn (key 24), versions 0-5.
//
// v0-v3 come from transactional producers: the partitions they are about
// to write join their transaction at its coordinator (txn_drivers.go);
// NOT_COORDINATOR on a broker that does not lead the transactional id's
// __transaction_state partition. v4+ is Kafka's broker-to-broker form
// (KIP-890): a batch of transactions, each possibly verify-only (is the
// partition already in the ongoing transaction?). The batch is split by
// coordinator partition, each part answered by its coordinator, and the
// answers merged in the request's order. Gregor has no authorizer, so the
// CLUSTER_ACTION check Kafka makes for v4+ has nothing to refuse.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
)

var addPartitionsToTxnAPI = handler{key: 24, min: 0, max: 5, handle: (*Broker).handleAddPartitionsToTxn}

func (b *Broker) handleAddPartitionsToTxn(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.AddPartitionsToTxnRequest)
	v := hdr.APIVersion
	if v < 4 {
		return b.txns.ask(ctx, b.txnPartition(req.TransactionalID), c, v, req), nil
	}
	// Group the transactions by coordinator, keeping the first
	// appearance's order.
	var partitions []int32
	var parts [][]kmsg.AddPartitionsToTxnRequestTransaction
	index := map[int32]int{}
	for _, tr := range req.Transactions {
		p := b.txnPartition(tr.TransactionalID)
		i, ok := index[p]
		if !ok {
			i = len(partitions)
			index[p] = i
			partitions = append(partitions, p)
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], tr)
	}
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if len(partitions) == 0 {
		return resp, nil
	}
	answers := b.txns.askAll(ctx, c, v, partitions, func(i int) kmsg.Request {
		sub := kmsg.NewPtrAddPartitionsToTxnRequest()
		sub.Transactions = parts[i]
		return sub
	})
	byID := map[string]kmsg.AddPartitionsToTxnResponseTransaction{}
	for _, a := range answers {
		ar := a.(*kmsg.AddPartitionsToTxnResponse)
		if ar.ErrorCode != 0 && resp.ErrorCode == 0 {
			resp.ErrorCode = ar.ErrorCode
		}
		for _, tr := range ar.Transactions {
			byID[tr.TransactionalID] = tr
		}
	}
	for _, tr := range req.Transactions {
		if a, ok := byID[tr.TransactionalID]; ok {
			resp.Transactions = append(resp.Transactions, a)
			delete(byID, tr.TransactionalID) // an id given twice is answered once
		}
	}
	return resp, nil
}
