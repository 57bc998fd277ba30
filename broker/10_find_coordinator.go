package broker

// FindCoordinator (key 10), versions 0-6.
//
// Groups (key type 0): the coordinator of a group is the leader of its
// __consumer_offsets partition (Kafka's hash of the group id modulo the
// partition count). The topic is created on the first request, as Kafka
// does. v4+ takes a batch of keys. Transactions (key type 1) are not
// served yet: INVALID_REQUEST, which clients do not retry.
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
	switch keyType {
	case coordinatorGroup:
	case coordinatorTransaction:
		// Not retriable: a transactional producer or tool fails at once
		// with this message, instead of retrying until its timeout for a
		// coordinator that will not come.
		return fail(protocol.InvalidRequest, "Transactions are not supported by this broker yet: it has no transaction coordinator.")
	default:
		return fail(protocol.InvalidRequest, "Unknown coordinator type.")
	}
	if err := b.ensureOffsetsTopic(ctx); err != nil {
		b.logger.Warn("creating the offsets topic failed", "err", err)
		return fail(protocol.CoordinatorNotAvailable, "The coordinator is not available.")
	}
	md := b.cluster.Snapshot()
	t := md.Topics[offsetsTopic]
	if t == nil {
		return fail(protocol.CoordinatorNotAvailable, "The coordinator is not available.")
	}
	st := t.Partitions[b.groupPartition(key)]
	br, live := md.Broker(st.Leader)
	if !live {
		return fail(protocol.CoordinatorNotAvailable, "The coordinator is not available.")
	}
	c.NodeID, c.Host, c.Port = br.NodeID, br.Host, br.Port
	return c
}
