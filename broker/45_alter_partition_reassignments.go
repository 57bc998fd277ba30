package broker

// AlterPartitionReassignments (key 45), versions 0-1.
//
// Starts, replaces or cancels (null replicas) partition reassignments, as
// Kafka's controller does (KIP-455); any broker serves it, writing the
// partitions' new states to the registry itself, as any Kafka 4 broker
// forwards it to the controller. The move itself is the replicas' work: a
// broker added to a partition's replicas opens its log and fetches from
// the leader, joins the ISR once caught up, and the controller then
// completes the reassignment (replicas = target; a removed leader hands
// over to the first in-sync target replica); a broker removed deletes its
// log. Per partition, Kafka's errors: UNKNOWN_TOPIC_OR_PARTITION,
// NO_REASSIGNMENT_IN_PROGRESS (cancelling none), INVALID_REPLICA_ASSIGNMENT
// (empty target, a broker twice or not registered, live or fenced; a
// cancel or replacement that would need an unclean election), and with v1's
// AllowReplicationFactorChange false, INVALID_REPLICATION_FACTOR for a
// target whose size differs from the replica set the partition is headed
// for (KIP-860). A failure of the whole request (its timeout_ms passing:
// REQUEST_TIMED_OUT) is the top-level error and every partition's, as
// Kafka answers. The response comes once this broker's metadata shows the
// changes, not once the moves are done: ListPartitionReassignments follows
// them. The request needs ALTER on the cluster, checked first: without
// it CLUSTER_AUTHORIZATION_FAILED is the top-level error and every
// partition's, as Kafka's controller answers.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/protocol"
)

var alterPartitionReassignmentsAPI = handler{key: 45, min: 0, max: 1, handle: (*Broker).handleAlterPartitionReassignments}

func (b *Broker) handleAlterPartitionReassignments(ctx context.Context, c *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	if !c.authorizedCluster(acl.OpAlter) {
		// Kafka's error response leaves allow_replication_factor_change
		// at its default (true) rather than echoing it.
		code, msg := notAuthorized(acl.OpAlter)
		resp.ErrorCode, resp.ErrorMessage = code, msg
		for _, rt := range req.Topics {
			out := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			out.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				po := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				po.Partition, po.ErrorCode, po.ErrorMessage = rp.Partition, code, msg
				out.Partitions = append(out.Partitions, po)
			}
			resp.Topics = append(resp.Topics, out)
		}
		return resp, nil
	}
	// v0 has no such field: its requests may change the factor (the
	// field's default), and the v1 response echoes the request's.
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	var targets []cluster.ReassignTarget
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			targets = append(targets, cluster.ReassignTarget{Topic: rt.Topic, Partition: rp.Partition, Replicas: rp.Replicas})
		}
	}
	if req.TimeoutMillis > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMillis)*time.Millisecond)
		defer cancel()
	}
	results, err := b.cluster.AlterReassignments(ctx, targets, req.AllowReplicationFactorChange)
	if err != nil {
		code := reassignErrorCode(err)
		if code == protocol.UnknownServerError {
			b.logger.Warn("altering partition reassignments failed", "err", err)
		}
		msg := err.Error()
		resp.ErrorCode, resp.ErrorMessage = int16(code), &msg
	}
	i := 0
	for _, rt := range req.Topics {
		out := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		out.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			po := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			po.Partition = rp.Partition
			perr := err
			if perr == nil {
				perr = results[i]
			}
			if perr != nil {
				msg := perr.Error()
				po.ErrorCode, po.ErrorMessage = int16(reassignErrorCode(perr)), &msg
			}
			out.Partitions = append(out.Partitions, po)
			i++
		}
		resp.Topics = append(resp.Topics, out)
	}
	return resp, nil
}

// reassignErrorCode is the Kafka code of an AlterReassignments error.
func reassignErrorCode(err error) protocol.ErrorCode {
	switch {
	case errors.Is(err, cluster.ErrUnknownTopic):
		return protocol.UnknownTopicOrPartition
	case errors.Is(err, cluster.ErrNoReassignment):
		return protocol.NoReassignmentInProgress
	case errors.Is(err, cluster.ErrInvalidAssignment):
		return protocol.InvalidReplicaAssignment
	case errors.Is(err, cluster.ErrInvalidReplicationFactor):
		return protocol.InvalidReplicationFactor
	case errors.Is(err, cluster.ErrNotVisible), errors.Is(err, context.DeadlineExceeded):
		return protocol.RequestTimedOut
	}
	return protocol.UnknownServerError
}
