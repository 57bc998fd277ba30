package broker

// DeleteRecords (key 21), versions 0-2.
//
// Moves each partition's log start offset up to the requested offset and
// deletes the segments wholly below it; records below the new start are
// gone for every reader (a fetch there is OFFSET_OUT_OF_RANGE). Offset -1
// means the high watermark. An offset above the high watermark, or below
// -1, is OFFSET_OUT_OF_RANGE; an offset at or below the current start
// changes nothing. A topic whose cleanup.policy lacks "delete" (compacted
// only) refuses with POLICY_VIOLATION, as Kafka does. The result carries
// the partition's log start offset after the call (the low watermark).
// The new start is checkpointed before the response, so the records stay
// deleted across a crash (Kafka leaves that to its 60 s checkpoint, after
// which a crash can bring them back); a failed checkpoint answers
// KAFKA_STORAGE_ERROR. A topic needs DELETE, or each of its partitions gets
// TOPIC_AUTHORIZATION_FAILED, as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/protocol"
)

var deleteRecordsAPI = handler{key: 21, min: 0, max: 2, handle: (*Broker).handleDeleteRecords}

// deleteToHighWatermark is the DeleteRecords offset meaning "up to the high
// watermark".
const deleteToHighWatermark = -1

func (b *Broker) handleDeleteRecords(_ context.Context, c *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	var moved []*kmsg.DeleteRecordsResponseTopicPartition
	allowed := c.topicsAllowed(acl.OpDelete)
	for _, rt := range req.Topics {
		t := kmsg.NewDeleteRecordsResponseTopic()
		t.Topic = rt.Topic
		ok := allowed(rt.Topic)
		seen := map[int32]bool{}
		for _, rp := range rt.Partitions {
			p := kmsg.NewDeleteRecordsResponseTopicPartition()
			p.Partition = rp.Partition
			p.LowWatermark = -1
			switch {
			case !ok:
				p.ErrorCode = int16(protocol.TopicAuthorizationFailed)
			case seen[rp.Partition]:
				p.ErrorCode = int16(protocol.InvalidRequest)
			default:
				p.LowWatermark, p.ErrorCode = b.deleteRecords(rt.Topic, rp.Partition, rp.Offset)
			}
			seen[rp.Partition] = true
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			if p := &resp.Topics[i].Partitions[j]; p.ErrorCode == 0 && p.LowWatermark > 0 {
				moved = append(moved, p)
			}
		}
	}
	if len(moved) > 0 {
		if err := b.logs.Checkpoint(); err != nil {
			b.logger.Error("checkpointing the log start offsets after DeleteRecords failed", "err", err)
			for _, p := range moved {
				p.ErrorCode, p.LowWatermark = int16(protocol.KafkaStorageError), -1
			}
		}
	}
	return resp, nil
}

// deleteRecords moves one partition's log start offset to offset and
// returns the start after the call.
func (b *Broker) deleteRecords(topic string, num int32, offset int64) (int64, int16) {
	part, code := b.lookupPartition(topic, [16]byte{}, false, num)
	if code != protocol.None {
		return -1, int16(code)
	}
	if s := part.settings.Load(); s != nil && !s.deletable {
		return -1, int16(protocol.PolicyViolation)
	}
	l := part.log()
	hw := l.HighWatermark()
	switch {
	case offset == deleteToHighWatermark:
		offset = hw
	case offset < 0 || offset > hw:
		return -1, int16(protocol.OffsetOutOfRange)
	}
	if err := l.DeleteBelow(offset); err != nil {
		return -1, int16(errorCode(err))
	}
	return l.LogStartOffset(), int16(protocol.None)
}
