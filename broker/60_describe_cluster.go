package broker

// DescribeCluster (key 60), versions 0-2.
//
// Cluster id, controller and the live brokers from the registry, each at
// its endpoint on the listener the request came in on; a broker without
// that listener is left out, as Kafka does. Brokers are the only endpoint
// type served: a v1+ request for controller endpoints
// (endpoint_type 2) gets UNSUPPORTED_ENDPOINT_TYPE, as a Kafka broker
// answers. A broker whose registration lease lapsed is fenced: listed, with
// is_fenced, only when a v2 request includes fenced brokers, until it
// returns or is unregistered (UnregisterBroker). The cluster's authorized
// operations, when asked for, are the principal's (none without DESCRIBE
// on the cluster); a broker asks for nothing more, as Kafka's.

import (
	"cmp"
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
)

var describeClusterAPI = handler{key: 60, min: 0, max: 2, handle: (*Broker).handleDescribeCluster}

const endpointTypeBrokers = 1

func (b *Broker) handleDescribeCluster(_ context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = endpointTypeBrokers
	if hdr.APIVersion >= 1 && req.EndpointType != endpointTypeBrokers {
		resp.ErrorCode = int16(protocol.UnsupportedEndpointType)
		msg := "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
		resp.ErrorMessage = &msg
		return resp, nil
	}
	md := b.cluster.Snapshot()
	resp.ClusterID = md.ClusterID
	resp.ControllerID = md.ControllerID
	resp.ClusterAuthorizedOperations = operationsOmitted
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = c.clusterAuthorizedOps()
	}
	for _, br := range md.Brokers {
		if host, port, ok := br.Endpoint(c.listener); ok {
			out := kmsg.NewDescribeClusterResponseBroker()
			out.NodeID, out.Host, out.Port, out.Rack = br.NodeID, host, port, br.Rack
			resp.Brokers = append(resp.Brokers, out)
		}
	}
	if req.IncludeFencedBrokers {
		for _, br := range md.Fenced {
			if host, port, ok := br.Endpoint(c.listener); ok {
				out := kmsg.NewDescribeClusterResponseBroker()
				out.NodeID, out.Host, out.Port, out.Rack, out.IsFenced = br.NodeID, host, port, br.Rack, true
				resp.Brokers = append(resp.Brokers, out)
			}
		}
		slices.SortFunc(resp.Brokers, func(a, b kmsg.DescribeClusterResponseBroker) int { return cmp.Compare(a.NodeID, b.NodeID) })
	}
	return resp, nil
}
