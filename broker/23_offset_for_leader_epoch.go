package broker

// OffsetForLeaderEpoch (key 23), versions 2-4.
//
// For each partition: the largest leader epoch at most the one asked for,
// and the offset where the next epoch starts (the log end for the latest
// epoch), from the partition's leader-epoch checkpoint (KIP-101/279).
// Unknown epochs answer -1/-1 as Kafka's UNDEFINED. The current leader
// epoch is checked (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH). Consumers
// (replica id -1) use it to detect log truncation after a leader change.
// As in Kafka, CLUSTER_ACTION on the cluster allows every topic (what
// followers have); without it a topic needs DESCRIBE, or each of its
// partitions gets TOPIC_AUTHORIZATION_FAILED. The replica id does not
// matter.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/protocol"
)

var offsetForLeaderEpochAPI = handler{key: 23, min: 2, max: 4, handle: (*Broker).handleOffsetForLeaderEpoch}

func (b *Broker) handleOffsetForLeaderEpoch(_ context.Context, c *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	allowed := c.topicsAllowed(acl.OpDescribe)
	if c.authorizedCluster(acl.OpClusterAction) {
		allowed = func(string) bool { return true }
	}
	for _, rt := range req.Topics {
		t := kmsg.NewOffsetForLeaderEpochResponseTopic()
		t.Topic = rt.Topic
		ok := allowed(rt.Topic)
		for _, rp := range rt.Partitions {
			p := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			p.Partition = rp.Partition
			p.LeaderEpoch, p.EndOffset = -1, -1
			if !ok {
				p.ErrorCode = int16(protocol.TopicAuthorizationFailed)
				t.Partitions = append(t.Partitions, p)
				continue
			}
			part, code := b.lookupPartition(rt.Topic, [16]byte{}, false, rp.Partition)
			if code == protocol.None {
				code = checkLeaderEpoch(rp.CurrentLeaderEpoch, part.leaderEpoch.Load())
			}
			if code == protocol.None {
				p.LeaderEpoch, p.EndOffset = part.log().EndOffsetForEpoch(rp.LeaderEpoch)
			}
			p.ErrorCode = int16(code)
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp, nil
}
