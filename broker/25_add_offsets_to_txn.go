package broker

// AddOffsetsToTxn (key 25), versions 0-4.
//
// A transactional producer about to commit a consumer group's offsets in
// its transaction: the group's __consumer_offsets partition joins the
// transaction at its coordinator (txn_drivers.go), which later writes that
// partition's marker too. NOT_COORDINATOR on a broker that does not lead
// the transactional id's __transaction_state partition.
//
// Before that, as in Kafka: WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then READ on the group
// (GROUP_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/txn"
	"github.com/gregor-io/gregor/protocol"
)

var addOffsetsToTxnAPI = handler{key: 25, min: 0, max: 4, handle: (*Broker).handleAddOffsetsToTxn}

func (b *Broker) handleAddOffsetsToTxn(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.AddOffsetsToTxnRequest)
	switch {
	case !c.authorized(acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID):
		return txn.ErrorResponse(req, int16(protocol.TransactionalIDAuthorizationFailed)), nil
	case !c.authorized(acl.OpRead, acl.ResourceGroup, req.Group):
		return txn.ErrorResponse(req, int16(protocol.GroupAuthorizationFailed)), nil
	}
	return b.txns.ask(ctx, b.txnPartition(req.TransactionalID), c, hdr.APIVersion, req), nil
}
