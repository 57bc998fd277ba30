package broker

// ListTransactions (key 66), versions 0-2.
//
// The transactional ids of every coordinator on this broker
// (txn_drivers.go) that match the filters: states, producer ids, a
// duration (v1+: transactions running longer than it) and an id pattern
// (v2+, Go's RE2 syntax). The coordinators' lists are concatenated; an
// error of any of them (COORDINATOR_LOAD_IN_PROGRESS while one loads) is
// the answer's, except NOT_COORDINATOR from one whose partition has just
// moved away, which has nothing left here to list. Unknown state names are echoed back, as Kafka does; an
// invalid pattern gets INVALID_REGULAR_EXPRESSION. As in Kafka, only the
// transactional ids the principal may DESCRIBE are listed; the others are
// left out without an error.

import (
	"context"
	"regexp"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/txn"
	"github.com/gregor-io/gregor/protocol"
)

var listTransactionsAPI = handler{key: 66, min: 0, max: 2, handle: (*Broker).handleListTransactions}

// txnStateNames are the states a ListTransactions filter may name.
var txnStateNames = []string{
	txn.StateEmpty.String(), txn.StateOngoing.String(), txn.StatePrepareCommit.String(), txn.StatePrepareAbort.String(),
	txn.StateCompleteCommit.String(), txn.StateCompleteAbort.String(), txn.StateDead.String(), txn.StatePrepareEpochFence.String(),
}

func (b *Broker) handleListTransactions(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	for _, s := range req.StateFilters {
		if !slices.Contains(txnStateNames, s) {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, s)
		}
	}
	if p := req.TransactionalIDPattern; hdr.APIVersion >= 2 && p != nil && *p != "" {
		if _, err := regexp.Compile(*p); err != nil {
			resp.ErrorCode = int16(protocol.InvalidRegularExpression)
			return resp, nil
		}
	}
	drivers := b.txns.all()
	if len(drivers) == 0 {
		return resp, nil
	}
	partitions := make([]int32, len(drivers))
	for i, d := range drivers {
		partitions[i] = d.partition
	}
	answers := b.txns.askAll(ctx, c, hdr.APIVersion, partitions, func(int) kmsg.Request {
		sub := kmsg.NewPtrListTransactionsRequest()
		sub.StateFilters = slices.Clone(req.StateFilters)
		sub.ProducerIDFilters = slices.Clone(req.ProducerIDFilters)
		sub.DurationFilterMillis = req.DurationFilterMillis
		sub.TransactionalIDPattern = req.TransactionalIDPattern
		return sub
	})
	for _, a := range answers {
		ar := a.(*kmsg.ListTransactionsResponse)
		if ar.ErrorCode == int16(protocol.NotCoordinator) {
			continue // the partition moved away meanwhile: not this broker's to list
		}
		if ar.ErrorCode != 0 && resp.ErrorCode == 0 {
			resp.ErrorCode = ar.ErrorCode
		}
		for _, s := range ar.TransactionStates {
			if c.authorized(acl.OpDescribe, acl.ResourceTransactionalID, s.TransactionalID) {
				resp.TransactionStates = append(resp.TransactionStates, s)
			}
		}
	}
	if resp.ErrorCode != 0 {
		resp.TransactionStates = nil
	}
	return resp, nil
}
