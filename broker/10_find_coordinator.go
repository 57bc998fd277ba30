package broker

// FindCoordinator (key 10), versions 0-6.
//
// Groups (key type 0): the coordinator of a group is the leader of its
// __consumer_offsets partition (Kafka's hash of the group id modulo the
// partition count). The topic is created on the first request, as Kafka
// does. Transactions (key type 1): the leader of the transactional id's
// __transaction_state partition, created on first need the same way.
// v4+ takes a batch of keys. A partition without a live leader gets
// COORDINATOR_NOT_AVAILABLE, which clients retry; a coordinator that has
// moved answers NOT_COORDINATOR to the requests themselves.
// librdkafka also reads this API's presence as a feature flag (it
// compresses with LZ4 only for brokers that advertise it from v0).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
)

var findCoordinatorAPI = handler{key: 10, min: 0, max: 6, handle: (*Broker).handleFindCoordinator}

const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
)

func (b *Broker) handleFindCoordinator(ctx context.Context, _ *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if hdr.APIVersion < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		c := b.findCoordinator(ctx, req.CoordinatorType, key)
		if hdr.APIVersion < 4 {
			resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
			resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
			return resp, nil
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return resp, nil
}

func (b *Broker) findCoordinator(ctx context.Context, keyType int8, key string) kmsg.FindCoordinatorResponseCoordinator {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Port = key, -1, -1
	fail := func(code protocol.ErrorCode, msg string) kmsg.FindCoordinatorResponseCoordinator {
		c.ErrorCode = int16(code)
		c.ErrorMessage = &msg
		return c
	}
	ensure, topic, partitionFor := b.ensureOffsetsTopic, offsetsTopic, b.groupPartition
	switch keyType {
	case coordinatorGroup:
	case coordinatorTransaction:
		ensure, topic, partitionFor = b.ensureTxnTopic, txnTopic, b.txnPartition
	default:
		return fail(protocol.InvalidRequest, "Unknown coordinator type.")
	}
	if err := ensure(ctx); err != nil {
		b.logger.Warn("creating a coordinator topic failed", "topic", topic, "err", err)
		return fail(protocol.CoordinatorNotAvailable, "The coordinator is not available.")
	}
	md := b.cluster.Snapshot()
	t := md.Topics[topic]
	n := partitionFor(key)
	if t == nil || n < 0 || int(n) >= len(t.Partitions) {
		return fail(protocol.CoordinatorNotAvailable, "The coordinator is not available.")
	}
	st := t.Partitions[n]
	br, live := md.Broker(st.Leader)
	if !live {
		return fail(protocol.CoordinatorNotAvailable, "The coordinator is not available.")
	}
	c.NodeID, c.Host, c.Port = br.NodeID, br.Host, br.Port
	return c
}
