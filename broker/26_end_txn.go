package broker

// EndTxn (key 26), versions 0-5.
//
// A transactional producer commits or aborts its transaction at its
// coordinator (txn_drivers.go). The answer comes once the PrepareCommit or
// PrepareAbort record is durable and replicated; the markers are written
// after it, in the background (txn_markers.go), and the transaction
// completes when every partition has its marker. v5 (KIP-890 part 2) bumps
// the producer epoch on every end and answers with the producer id and
// epoch to use next. NOT_COORDINATOR on a broker that does not lead the
// transactional id's __transaction_state partition. WRITE on the
// transactional id is needed first (TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
// as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/txn"
	"github.com/gregor-io/gregor/protocol"
)

var endTxnAPI = handler{key: 26, min: 0, max: 5, handle: (*Broker).handleEndTxn}

func (b *Broker) handleEndTxn(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.EndTxnRequest)
	if !c.authorized(acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID) {
		return txn.ErrorResponse(req, int16(protocol.TransactionalIDAuthorizationFailed)), nil
	}
	return b.txns.ask(ctx, b.txnPartition(req.TransactionalID), c, hdr.APIVersion, req), nil
}
