package broker

// ListPartitionReassignments (key 46), version 0.
//
// Lists the partitions with a reassignment in flight (KIP-455), as this
// broker's metadata shows them: every one (null topics), or those of the
// topics and partitions asked for, skipping unknown topics and partitions
// and the ones not being reassigned, as Kafka's controller does. Each
// comes with its replicas (the target's, then the original replicas
// leaving), and the replicas being added and removed. Any broker answers:
// a broker that altered a reassignment shows it at once, the others as
// soon as their metadata view has it.
//
// It needs DESCRIBE on the cluster. Without it the top-level error is
// CLUSTER_AUTHORIZATION_FAILED and, as in Kafka's answer, the topics and
// partitions asked for come back with no replicas.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/protocol"
)

var listPartitionReassignmentsAPI = handler{key: 46, min: 0, max: 0, handle: (*Broker).handleListPartitionReassignments}

func (b *Broker) handleListPartitionReassignments(_ context.Context, c *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !c.authorizedCluster(acl.OpDescribe) {
		resp.ErrorCode, resp.ErrorMessage = notAuthorized(acl.OpDescribe)
		for _, rt := range req.Topics {
			out := kmsg.NewListPartitionReassignmentsResponseTopic()
			out.Topic = rt.Topic
			for _, p := range rt.Partitions {
				po := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
				po.Partition = p
				out.Partitions = append(out.Partitions, po)
			}
			resp.Topics = append(resp.Topics, out)
		}
		return resp, nil
	}
	md := b.cluster.Snapshot()
	list := func(t *cluster.Topic, partitions []int32) {
		out := kmsg.NewListPartitionReassignmentsResponseTopic()
		out.Topic = t.Name
		for _, p := range partitions {
			if p < 0 || int(p) >= len(t.Partitions) || !t.Partitions[p].Reassigning() {
				continue
			}
			st := &t.Partitions[p]
			po := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			po.Partition = p
			po.Replicas = slices.Clone(st.Replicas)
			po.AddingReplicas = append([]int32{}, st.AddingReplicas...)
			po.RemovingReplicas = append([]int32{}, st.RemovingReplicas...)
			out.Partitions = append(out.Partitions, po)
		}
		if len(out.Partitions) > 0 {
			resp.Topics = append(resp.Topics, out)
		}
	}
	if req.Topics == nil {
		names := make([]string, 0, len(md.Topics))
		for name := range md.Topics {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			t := md.Topics[name]
			all := make([]int32, len(t.Partitions))
			for i := range all {
				all[i] = int32(i)
			}
			list(t, all)
		}
		return resp, nil
	}
	for _, rt := range req.Topics {
		if t := md.Topics[rt.Topic]; t != nil {
			list(t, rt.Partitions)
		}
	}
	return resp, nil
}
