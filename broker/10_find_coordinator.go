package broker

// FindCoordinator (key 10), versions 0-6.
//
// Groups (key type 0): the coordinator of a group is the leader of its
// __consumer_offsets partition (Kafka's hash of the group id modulo the
// partition count). The topic is created on the first request, as Kafka
// does. Transactions (key type 1): the leader of the transactional id's
// __transaction_state partition, created on first need the same way.
// v4+ takes a batch of keys. The coordinator is given at its endpoint on
// the listener the request came in on. A partition without a live leader,
// or whose leader lacks that listener, gets COORDINATOR_NOT_AVAILABLE (as
// in Kafka), which clients retry; a coordinator that has
// moved answers NOT_COORDINATOR to the requests themselves.
// librdkafka also reads this API's presence as a feature flag (it
// compresses with LZ4 only for brokers that advertise it from v0).
//
// Authorization, as Kafka's, key by key: DESCRIBE on the group for a group
// key (GROUP_AUTHORIZATION_FAILED), DESCRIBE on the transactional id for a
// transaction key (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); a refused key is
// answered before anything is looked up or created. Share coordinator keys
// (type 2, v6) are for brokers: without CLUSTER_ACTION on the cluster the
// whole request is CLUSTER_AUTHORIZATION_FAILED, as in Kafka; with it they
// are INVALID_REQUEST, as Gregor's share partition leaders find their share
// coordinator themselves.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/protocol"
)

var findCoordinatorAPI = handler{key: 10, min: 0, max: 6, handle: (*Broker).handleFindCoordinator}

const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
	coordinatorShare       = 2
)

func (b *Broker) handleFindCoordinator(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if hdr.APIVersion < 4 {
		keys = []string{req.CoordinatorKey}
	}
	refuseAll := req.CoordinatorType == coordinatorShare && hdr.APIVersion >= 6 && len(keys) > 0 &&
		!c.authorizedCluster(acl.OpClusterAction)
	for _, key := range keys {
		var co kmsg.FindCoordinatorResponseCoordinator
		switch {
		case refuseAll:
			co = coordinatorError(key, protocol.ClusterAuthorizationFailed, "Cluster authorization failed.")
		case req.CoordinatorType == coordinatorGroup && !c.authorized(acl.OpDescribe, acl.ResourceGroup, key):
			co = coordinatorError(key, protocol.GroupAuthorizationFailed, "Group authorization failed.")
		case req.CoordinatorType == coordinatorTransaction && !c.authorized(acl.OpDescribe, acl.ResourceTransactionalID, key):
			co = coordinatorError(key, protocol.TransactionalIDAuthorizationFailed, "Transactional Id authorization failed.")
		default:
			co = b.findCoordinator(ctx, req.CoordinatorType, key, c.listener)
		}
		if hdr.APIVersion < 4 {
			resp.ErrorCode, resp.ErrorMessage = co.ErrorCode, co.ErrorMessage
			resp.NodeID, resp.Host, resp.Port = co.NodeID, co.Host, co.Port
			return resp, nil
		}
		resp.Coordinators = append(resp.Coordinators, co)
	}
	return resp, nil
}

// coordinatorError is the answer for key when its coordinator is not
// given: code, msg, and no node.
func coordinatorError(key string, code protocol.ErrorCode, msg string) kmsg.FindCoordinatorResponseCoordinator {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Port = key, -1, -1
	c.ErrorCode, c.ErrorMessage = int16(code), &msg
	return c
}

func (b *Broker) findCoordinator(ctx context.Context, keyType int8, key, listener string) kmsg.FindCoordinatorResponseCoordinator {
	ensure, topic, partitionFor := b.ensureOffsetsTopic, offsetsTopic, b.groupPartition
	switch keyType {
	case coordinatorGroup:
	case coordinatorTransaction:
		ensure, topic, partitionFor = b.ensureTxnTopic, txnTopic, b.txnPartition
	default:
		return coordinatorError(key, protocol.InvalidRequest, "Unknown coordinator type.")
	}
	if err := ensure(ctx); err != nil {
		b.logger.Warn("creating a coordinator topic failed", "topic", topic, "err", err)
		return coordinatorError(key, protocol.CoordinatorNotAvailable, "The coordinator is not available.")
	}
	md := b.cluster.Snapshot()
	t := md.Topics[topic]
	n := partitionFor(key)
	if t == nil || n < 0 || int(n) >= len(t.Partitions) {
		return coordinatorError(key, protocol.CoordinatorNotAvailable, "The coordinator is not available.")
	}
	st := t.Partitions[n]
	br, live := md.Broker(st.Leader)
	host, port, ok := br.Endpoint(listener)
	if !live || !ok {
		return coordinatorError(key, protocol.CoordinatorNotAvailable, "The coordinator is not available.")
	}
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Host, c.Port = key, br.NodeID, host, port
	return c
}
