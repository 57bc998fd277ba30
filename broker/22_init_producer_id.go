package broker

// InitProducerId (key 22), versions 0-5 (v6, two-phase commit of KIP-939,
// is beyond the protocol library and the transaction coordinator).
//
// Idempotent producers (no transactional id) get a new producer id with
// epoch 0 from the block this broker took from the registry; ids are never
// handed out twice in the cluster. As in Kafka, an idempotent producer that
// sends its current id and epoch (v3+, KIP-360) gets a fresh id, not a
// bumped epoch. Transactional ids wait for the transaction coordinator:
// until it exists they are refused with COORDINATOR_NOT_AVAILABLE, the
// error a client retries elsewhere, never with a made-up success.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
)

var initProducerIDAPI = handler{key: 22, min: 0, max: 5, handle: (*Broker).handleInitProducerID}

func (b *Broker) handleInitProducerID(ctx context.Context, _ *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		resp.ErrorCode = int16(protocol.CoordinatorNotAvailable)
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
