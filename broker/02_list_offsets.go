package broker

// ListOffsets (key 2), versions 1-11.
//
// Special timestamps: -1 latest (the high watermark for read_uncommitted,
// the last stable offset for read_committed, the log end for a replica),
// -2 earliest (log start), -3 the record with the largest timestamp (v7+,
// KIP-734), -4 earliest local (v8+: the log start, all data being local),
// -5 latest tiered (v9+: -1, nothing is tiered). Any other negative value is
// an invalid request. A timestamp at or above 0 finds the first record whose
// timestamp is at least that (time index, then a scan); a record at or past
// the fetchable end counts as none found (offset -1). v4+ checks the current
// leader epoch and returns the epoch of the offset found. A topic needs
// DESCRIBE, or each of its partitions gets TOPIC_AUTHORIZATION_FAILED, as in
// Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/storage"
)

var listOffsetsAPI = handler{key: 2, min: 1, max: 11, handle: (*Broker).handleListOffsets}

// Special ListOffsets timestamps.
const (
	listLatest        = -1
	listEarliest      = -2
	listMaxTimestamp  = -3
	listEarliestLocal = -4
	listLatestTiered  = -5
)

func (b *Broker) handleListOffsets(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	allowed := c.topicsAllowed(acl.OpDescribe)
	for i := range req.Topics {
		rt := &req.Topics[i]
		t := kmsg.NewListOffsetsResponseTopic()
		t.Topic = rt.Topic
		ok := allowed(rt.Topic)
		seen := map[int32]bool{}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			p := kmsg.NewListOffsetsResponseTopicPartition()
			p.Partition = rp.Partition
			p.Timestamp, p.Offset, p.LeaderEpoch = -1, -1, -1
			switch {
			case !ok:
				p.ErrorCode = int16(protocol.TopicAuthorizationFailed)
			case seen[rp.Partition]:
				p.ErrorCode = int16(protocol.InvalidRequest)
			default:
				p.ErrorCode = int16(b.listOffset(req, rp, rt.Topic, &p))
			}
			seen[rp.Partition] = true
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp, nil
}

func (b *Broker) listOffset(req *kmsg.ListOffsetsRequest, rp *kmsg.ListOffsetsRequestTopicPartition, topic string,
	out *kmsg.ListOffsetsResponseTopicPartition) protocol.ErrorCode {
	part, code := b.lookupLeader(b.ctx, topic, [16]byte{}, false, rp.Partition)
	if code != protocol.None {
		return code
	}
	epoch := part.leaderEpoch.Load()
	if req.Version >= 4 {
		if code := checkLeaderEpoch(rp.CurrentLeaderEpoch, epoch); code != protocol.None {
			return code
		}
	}
	l := part.log()
	code, err := b.listOffsetIn(req, rp, l, epoch, out)
	if nl := part.movedLog(l, err); nl != nil {
		out.Timestamp, out.Offset, out.LeaderEpoch = -1, -1, -1
		code, err = b.listOffsetIn(req, rp, nl, epoch, out)
	}
	if err != nil {
		return errorCode(err)
	}
	return code
}

// listOffsetIn answers one partition of a ListOffsets from log l: a code,
// or the error of reading l.
func (b *Broker) listOffsetIn(req *kmsg.ListOffsetsRequest, rp *kmsg.ListOffsetsRequestTopicPartition, l *storage.Log, epoch int32,
	out *kmsg.ListOffsetsResponseTopicPartition) (protocol.ErrorCode, error) {
	fetchable := l.HighWatermark()
	switch {
	case req.ReplicaID >= 0:
		fetchable = l.LogEndOffset()
	case req.IsolationLevel == 1:
		fetchable = min(l.LastStableOffset(), fetchable)
	}
	switch ts := rp.Timestamp; {
	case ts == listLatest:
		out.Offset, out.LeaderEpoch = fetchable, l.EpochForOffset(fetchable-1)
		if fetchable == 0 || out.LeaderEpoch < 0 {
			out.LeaderEpoch = epoch
		}
	case ts == listEarliest || (ts == listEarliestLocal && req.Version >= 8):
		out.Offset = l.LogStartOffset()
		out.LeaderEpoch = l.EpochForOffset(out.Offset)
	case ts == listLatestTiered && req.Version >= 9:
		// Nothing is in tiered storage: no such offset.
	case ts == listMaxTimestamp && req.Version >= 7:
		found, ok, err := l.MaxTimestamp()
		if err != nil {
			return protocol.None, err
		}
		if ok && found.Offset < fetchable {
			out.Offset, out.Timestamp, out.LeaderEpoch = found.Offset, found.Timestamp, found.LeaderEpoch
		}
	case ts >= 0:
		found, ok, err := l.OffsetForTimestamp(ts)
		if err != nil {
			return protocol.None, err
		}
		if ok && found.Offset < fetchable {
			out.Offset, out.Timestamp, out.LeaderEpoch = found.Offset, found.Timestamp, found.LeaderEpoch
		}
	default:
		return protocol.InvalidRequest, nil
	}
	if req.Version < 4 {
		out.LeaderEpoch = -1
	}
	return protocol.None, nil
}
