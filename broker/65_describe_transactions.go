package broker

// DescribeTransactions (key 65), version 0.
//
// The state of each named transactional id, from its coordinator
// (txn_drivers.go): the ids are split by __transaction_state partition,
// each part answered by its coordinator, and the answers merged in the
// request's order. An id whose coordinator is not on this broker gets
// NOT_COORDINATOR (the admin client asks each id's coordinator).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
)

var describeTransactionsAPI = handler{key: 65, min: 0, max: 0, handle: (*Broker).handleDescribeTransactions}

func (b *Broker) handleDescribeTransactions(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	var partitions []int32
	var ids [][]string
	index := map[int32]int{}
	of := make([]int, len(req.TransactionalIDs)) // each id's part
	for n, id := range req.TransactionalIDs {
		p := b.txnPartition(id)
		i, ok := index[p]
		if !ok {
			i = len(partitions)
			index[p] = i
			partitions = append(partitions, p)
			ids = append(ids, nil)
		}
		ids[i] = append(ids[i], id)
		of[n] = i
	}
	if len(partitions) == 0 {
		return resp, nil
	}
	answers := b.txns.askAll(ctx, c, hdr.APIVersion, partitions, func(i int) kmsg.Request {
		sub := kmsg.NewPtrDescribeTransactionsRequest()
		sub.TransactionalIDs = ids[i]
		return sub
	})
	// Each part answers its ids in order; take them back in the
	// request's order.
	next := make([]int, len(partitions))
	for n, id := range req.TransactionalIDs {
		i := of[n]
		states := answers[i].(*kmsg.DescribeTransactionsResponse).TransactionStates
		if next[i] < len(states) {
			resp.TransactionStates = append(resp.TransactionStates, states[next[i]])
			next[i]++
			continue
		}
		s := kmsg.NewDescribeTransactionsResponseTransactionState()
		s.TransactionalID, s.ErrorCode = id, int16(protocol.UnknownServerError)
		resp.TransactionStates = append(resp.TransactionStates, s)
	}
	return resp, nil
}
