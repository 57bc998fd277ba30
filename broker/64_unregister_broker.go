package broker

// UnregisterBroker (key 64), version 0.
//
// Forgets a broker's registration, as Kafka's controller does for a broker
// taken out of the cluster: a fenced (stopped) broker is no longer listed by
// DescribeCluster with fenced brokers. An id the registry does not hold gets
// BROKER_ID_NOT_REGISTERED. A live broker stays live: its registration is
// its etcd lease, and only the record that outlives the lease goes. The
// request needs ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED, with
// no message, as Kafka's controller answers).

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/protocol"
)

var unregisterBrokerAPI = handler{key: 64, min: 0, max: 0, handle: (*Broker).handleUnregisterBroker}

func (b *Broker) handleUnregisterBroker(ctx context.Context, c *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.UnregisterBrokerRequest)
	resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	if !c.authorizedCluster(acl.OpAlter) {
		resp.ErrorCode = int16(protocol.ClusterAuthorizationFailed)
		return resp, nil
	}
	err := b.cluster.UnregisterBroker(ctx, req.BrokerID)
	if err == nil {
		return resp, nil
	}
	code, msg := protocol.UnknownServerError, err.Error()
	switch {
	case errors.Is(err, cluster.ErrBrokerNotRegistered):
		code = protocol.BrokerIDNotRegistered
		msg = fmt.Sprintf("Broker ID %d is not currently registered", req.BrokerID)
	case errors.Is(err, cluster.ErrNotVisible), errors.Is(err, context.DeadlineExceeded):
		code = protocol.RequestTimedOut
	default:
		b.logger.Warn("unregistering a broker failed", "node_id", req.BrokerID, "err", err)
	}
	resp.ErrorCode = int16(code)
	resp.ErrorMessage = &msg
	return resp, nil
}
