package broker

// DescribeTopicPartitions (key 75), version 0.
//
// KIP-966's paged topic description. The topics asked for (every topic when
// the list is empty) are taken once each, in name order, from the cursor's
// topic on; the cursor's topic starts at its partition, the others at 0.
// Partitions are added until response_partition_limit, capped at Kafka's
// max.request.partition.size.limit default of 2000 and at least 1, is
// reached: a topic cut short is returned with what fits and next_cursor
// points at its first missing partition; a limit reached exactly at the end
// of a topic points next_cursor at the next topic's partition 0, as Kafka's
// does. A topic that does not exist gets UNKNOWN_TOPIC_OR_PARTITION (or
// INVALID_TOPIC_EXCEPTION for an illegal name) and uses none of the limit.
//
// Each partition carries its leader (-1 when the leader is not a live
// broker), leader epoch, replicas, ISR and offline replicas (those not
// registered); eligible_leader_replicas and last_known_elr are empty, Gregor
// having no ELR. Topics carry their id, whether they are internal and the
// principal's authorized operations on them, which Kafka reports whether
// asked or not. As in Kafka, a cursor whose topic is not in a non-empty
// topic list, or whose partition is negative, fails the request: every
// topic asked for gets INVALID_REQUEST and nothing else.
//
// A topic needs DESCRIBE, as in Kafka. Listing every topic leaves out the
// others; a topic named without it uses none of the limit and gets
// TOPIC_AUTHORIZATION_FAILED with no id or partitions, after the topics
// described, if the walk in name order came to it before the limit ended
// the response (the cursor then points at the next allowed topic).

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/protocol"
)

var describeTopicPartitionsAPI = handler{key: 75, min: 0, max: 0, handle: (*Broker).handleDescribeTopicPartitions}

// maxRequestPartitionSizeLimit is Kafka's max.request.partition.size.limit
// default: the most partitions one response describes.
const maxRequestPartitionSizeLimit = 2000

func (b *Broker) handleDescribeTopicPartitions(_ context.Context, c *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DescribeTopicPartitionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	md := b.cluster.Snapshot()

	all := len(req.Topics) == 0
	cursorTopic := ""
	if req.Cursor != nil {
		cursorTopic = req.Cursor.Topic
	}
	set := map[string]bool{}
	if all {
		for name := range md.Topics {
			if name >= cursorTopic {
				set[name] = true
			}
		}
	} else {
		for _, t := range req.Topics {
			if t.Topic >= cursorTopic {
				set[t.Topic] = true
			}
		}
	}
	if req.Cursor != nil && ((!all && !set[cursorTopic]) || req.Cursor.Partition < 0) {
		// Kafka throws here; its error response names every topic asked
		// for, with no message.
		for _, t := range req.Topics {
			out := kmsg.NewDescribeTopicPartitionsResponseTopic()
			name := t.Topic
			out.Topic = &name
			out.ErrorCode = int16(protocol.InvalidRequest)
			resp.Topics = append(resp.Topics, out)
		}
		return resp, nil
	}
	names := make([]string, 0, len(set))
	for name := range set {
		names = append(names, name)
	}
	sort.Strings(names)

	remaining := max(min(maxRequestPartitionSizeLimit, req.ResponsePartitionLimit), 1)
	describable := c.topicsAllowed(acl.OpDescribe)
	var denied []kmsg.DescribeTopicPartitionsResponseTopic
	for _, name := range names {
		if !describable(name) {
			if !all {
				out := kmsg.NewDescribeTopicPartitionsResponseTopic()
				n := name
				out.Topic = &n
				out.ErrorCode = int16(protocol.TopicAuthorizationFailed)
				denied = append(denied, out)
			}
			continue
		}
		if remaining == 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: 0}
			break
		}
		t := md.Topics[name]
		if t == nil {
			resp.Topics = append(resp.Topics, missingTopicPartitions(name, c.authorizedOps(acl.ResourceTopic, name)))
			continue
		}
		start := int32(0)
		if req.Cursor != nil && name == cursorTopic {
			start = req.Cursor.Partition
		}
		n := int32(len(t.Partitions))
		end := int32(min(int64(n), int64(start)+int64(remaining))) // no overflow from a cursor near MaxInt32
		resp.Topics = append(resp.Topics, b.describeTopicPartitions(md, t, start, end, c.authorizedOps(acl.ResourceTopic, name), c.listener))
		if end < n {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: end}
			break
		}
		remaining -= max(end-start, 0)
	}
	resp.Topics = append(resp.Topics, denied...)
	return resp, nil
}

// describeTopicPartitions describes partitions [start, end) of t, whose
// authorized operations are ops, for a client on listener: as in Metadata,
// a leader without the listener is no leader (-1, with no error here, as
// in Kafka) and replicas without it are offline.
func (b *Broker) describeTopicPartitions(md *cluster.Metadata, t *cluster.Topic, start, end, ops int32, listener string) kmsg.DescribeTopicPartitionsResponseTopic {
	out := kmsg.NewDescribeTopicPartitionsResponseTopic()
	name := t.Name
	out.Topic = &name
	out.TopicID = t.ID
	out.IsInternal = internalTopics[t.Name]
	out.AuthorizedOperations = ops
	for i := start; i < end; i++ {
		st := &t.Partitions[i]
		p := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
		p.Partition = i
		p.LeaderID, p.LeaderEpoch = st.Leader, st.LeaderEpoch
		if !hasListener(md, st.Leader, listener) || (st.Leader == b.cfg.NodeID && b.localOffline(t.Name, i)) {
			p.LeaderID = -1
		}
		p.Replicas, p.ISR = st.Replicas, st.ISR
		p.EligibleLeaderReplicas, p.LastKnownELR = []int32{}, []int32{}
		p.OfflineReplicas = append([]int32{}, b.offlineReplicas(md, t, i, listener)...)
		out.Partitions = append(out.Partitions, p)
	}
	return out
}

// missingTopicPartitions is the entry for a topic that does not exist,
// whose authorized operations are ops.
func missingTopicPartitions(name string, ops int32) kmsg.DescribeTopicPartitionsResponseTopic {
	out := kmsg.NewDescribeTopicPartitionsResponseTopic()
	n := name
	out.Topic = &n
	out.ErrorCode = int16(protocol.UnknownTopicOrPartition)
	if validTopicName(name) != nil {
		out.ErrorCode = int16(protocol.InvalidTopicException)
	}
	out.IsInternal = internalTopics[name]
	out.AuthorizedOperations = ops
	return out
}
