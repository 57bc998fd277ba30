package broker

// DescribeTransactions (key 65), version 0.
//
// The state of each named transactional id, from its coordinator
// (txn_drivers.go): the ids are split by __transaction_state partition,
// each part answered by its coordinator, and the answers merged in the
// request's order. An id whose coordinator is not on this broker gets
// NOT_COORDINATOR (the admin client asks each id's coordinator).
//
// As in Kafka, an id the principal may not DESCRIBE gets
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED without its coordinator being
// asked, and each transaction lists only the topics the principal may
// DESCRIBE.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/protocol"
)

var describeTransactionsAPI = handler{key: 65, min: 0, max: 0, handle: (*Broker).handleDescribeTransactions}

func (b *Broker) handleDescribeTransactions(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	var partitions []int32
	var ids [][]string
	index := map[int32]int{}
	of := make([]int, len(req.TransactionalIDs)) // each id's part; -1: denied
	for n, id := range req.TransactionalIDs {
		if !c.authorized(acl.OpDescribe, acl.ResourceTransactionalID, id) {
			of[n] = -1
			continue
		}
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
	var answers []kmsg.Response
	if len(partitions) > 0 {
		answers = b.txns.askAll(ctx, c, hdr.APIVersion, partitions, func(i int) kmsg.Request {
			sub := kmsg.NewPtrDescribeTransactionsRequest()
			sub.TransactionalIDs = ids[i]
			return sub
		})
	}
	// Each part answers its ids in order; take them back in the
	// request's order.
	next := make([]int, len(partitions))
	for n, id := range req.TransactionalIDs {
		i := of[n]
		if i < 0 {
			s := kmsg.NewDescribeTransactionsResponseTransactionState()
			s.TransactionalID, s.ErrorCode = id, int16(protocol.TransactionalIDAuthorizationFailed)
			resp.TransactionStates = append(resp.TransactionStates, s)
			continue
		}
		states := answers[i].(*kmsg.DescribeTransactionsResponse).TransactionStates
		if next[i] < len(states) {
			s := states[next[i]]
			next[i]++
			s.Topics = slices.DeleteFunc(s.Topics, func(t kmsg.DescribeTransactionsResponseTransactionStateTopic) bool {
				return !c.authorized(acl.OpDescribe, acl.ResourceTopic, t.Topic)
			})
			resp.TransactionStates = append(resp.TransactionStates, s)
			continue
		}
		s := kmsg.NewDescribeTransactionsResponseTransactionState()
		s.TransactionalID, s.ErrorCode = id, int16(protocol.UnknownServerError)
		resp.TransactionStates = append(resp.TransactionStates, s)
	}
	return resp, nil
}
