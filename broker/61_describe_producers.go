package broker

// DescribeProducers (key 61), version 0: the producers a partition leader
// knows (idempotent and transactional), with their epoch, last sequence
// and timestamp, the coordinator epoch of their last marker and the start
// of their open transaction; what `kafka-transactions describe-producers`
// and find-hanging show. Any replica answers from its own log, as in Kafka
// (find-hanging --broker-id asks a broker about every partition it holds,
// followed ones included); a broker holding no replica answers
// NOT_LEADER_OR_FOLLOWER. As in Kafka, an illegal topic name is
// INVALID_TOPIC_EXCEPTION, then a topic needs READ, or each of its
// partitions gets TOPIC_AUTHORIZATION_FAILED, whether it exists or not.

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/protocol"
)

var describeProducersAPI = handler{key: 61, min: 0, max: 0, handle: (*Broker).handleDescribeProducers}

func (b *Broker) handleDescribeProducers(ctx context.Context, c *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	resp.Topics = make([]kmsg.DescribeProducersResponseTopic, len(req.Topics))
	allowed := c.topicsAllowed(acl.OpRead)
	for i := range req.Topics {
		rt := &req.Topics[i]
		out := &resp.Topics[i]
		*out = kmsg.NewDescribeProducersResponseTopic()
		out.Topic = strings.Clone(rt.Topic)
		// The topic's error, if any, and its message, as Kafka's.
		var topicCode protocol.ErrorCode
		var topicMsg *string
		if err := validTopicName(rt.Topic); err != nil {
			msg := err.Error()
			topicCode, topicMsg = protocol.InvalidTopicException, &msg
		} else if !allowed(rt.Topic) {
			msg := "Topic authorization failed."
			topicCode, topicMsg = protocol.TopicAuthorizationFailed, &msg
		}
		out.Partitions = make([]kmsg.DescribeProducersResponseTopicPartition, len(rt.Partitions))
		for j, part := range rt.Partitions {
			rp := &out.Partitions[j]
			*rp = kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = part
			if topicCode != protocol.None {
				rp.ErrorCode, rp.ErrorMessage = int16(topicCode), topicMsg
				continue
			}
			p, code := b.lookupReplica(rt.Topic, [16]byte{}, false, part, true)
			if code != protocol.None {
				rp.ErrorCode = int16(code)
				continue
			}
			for _, pi := range p.log().Producers() {
				ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ap.ProducerID, ap.ProducerEpoch = pi.ProducerID, int32(pi.ProducerEpoch)
				ap.LastSequence, ap.LastTimestamp = pi.LastSequence, pi.LastTimestamp
				ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = pi.CoordinatorEpoch, pi.TxnStartOffset
				rp.ActiveProducers = append(rp.ActiveProducers, ap)
			}
		}
	}
	return resp, nil
}
