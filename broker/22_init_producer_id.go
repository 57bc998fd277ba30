package broker

// InitProducerId (key 22), versions 0-5 (v6, two-phase commit of KIP-939,
// is beyond the protocol library and the transaction coordinator).
//
// Idempotent producers (no transactional id) get a new producer id with
// epoch 0 from the block this broker took from the registry; ids are never
// handed out twice in the cluster. As in Kafka, an idempotent producer that
// sends its current id and epoch (v3+, KIP-360) gets a fresh id, not a
// bumped epoch. A transactional id goes to its transaction coordinator
// (txn_drivers.go): NOT_COORDINATOR on a broker that does not lead the id's
// __transaction_state partition. As in Kafka, an empty transactional id
// (INVALID_REQUEST) and a transaction timeout outside 1 ms to
// transaction.max.timeout.ms (INVALID_TRANSACTION_TIMEOUT) are answered
// before the coordinator is looked for.
//
// Authorization comes first, as in Kafka: a transactional id needs WRITE
// on it (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), an idempotent producer
// IDEMPOTENT_WRITE on the cluster or WRITE on some topic
// (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/protocol"
)

var initProducerIDAPI = handler{key: 22, min: 0, max: 5, handle: (*Broker).handleInitProducerID}

func (b *Broker) handleInitProducerID(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if id := req.TransactionalID; id != nil {
		switch {
		case !c.authorized(acl.OpWrite, acl.ResourceTransactionalID, *id):
			resp.ErrorCode = int16(protocol.TransactionalIDAuthorizationFailed)
		case *id == "":
			resp.ErrorCode = int16(protocol.InvalidRequest)
		case req.TransactionTimeoutMillis <= 0 || int64(req.TransactionTimeoutMillis) > b.cfg.Transactions.MaxTimeout.Milliseconds():
			resp.ErrorCode = int16(protocol.InvalidTransactionTimeout)
		default:
			return b.txns.ask(ctx, b.txnPartition(*id), c, hdr.APIVersion, req), nil
		}
		return resp, nil
	}
	// Kafka asks for IDEMPOTENT_WRITE without recording its denial: the
	// topic check that follows may still allow.
	if !c.authorizedClusterQuietly(acl.OpIdempotentWrite) && !c.authorizedByType(acl.OpWrite, acl.ResourceTopic) {
		c.b.metrics.authzDenied.Inc()
		resp.ErrorCode = int16(protocol.ClusterAuthorizationFailed)
		return resp, nil
	}
	id, err := b.nextProducerID(ctx)
	if err != nil {
		b.logger.Warn("allocating a producer id failed", "err", err)
		resp.ErrorCode = int16(protocol.CoordinatorNotAvailable)
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}
