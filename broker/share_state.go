package broker

// The share partition leaders' side of the share coordinator (KIP-932's
// persister): a share partition's durable state lives with the share
// coordinator of its __share_group_state partition, hash of
// "group:topic-id:partition" (share.CoordinatorPartition). The leader asks
// that coordinator with InitializeShareGroupState, ReadShareGroupState and
// WriteShareGroupState: in process when this broker leads the state
// partition, else over a connection to the broker that does, retrying
// while the coordinator moves or loads.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/share"
	"github.com/gregor-io/gregor/protocol"
)

// shareStateTopic holds the share coordinators' state.
const shareStateTopic = "__share_group_state"

// shareStateClient sends share state requests to share coordinators.
type shareStateClient struct {
	b  *Broker
	mu struct {
		sync.Mutex
		conns  map[int32]*brokerConn
		closed bool
	}
}

func newShareStateClient(b *Broker) *shareStateClient {
	s := &shareStateClient{b: b}
	s.mu.conns = map[int32]*brokerConn{}
	return s
}

func (s *shareStateClient) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.closed = true
	for _, c := range s.mu.conns {
		c.close()
	}
}

func (s *shareStateClient) conn(node int32) (*brokerConn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return nil, errShareClosed
	}
	c := s.mu.conns[node]
	if c == nil {
		c = &brokerConn{node: node}
		s.mu.conns[node] = c
	}
	return c, nil
}

// ensureShareStateTopic creates __share_group_state when it does not exist,
// as Kafka does when a share coordinator is first needed.
func (b *Broker) ensureShareStateTopic(ctx context.Context) error {
	return b.ensureInternalTopic(ctx, internalTopicSpec{
		name:              shareStateTopic,
		partitions:        b.cfg.ShareStateTopicNumPartitions,
		replicationFactor: b.cfg.ShareStateTopicReplicationFactor,
		configs: map[string]string{
			"cleanup.policy":      "compact",
			"compression.type":    "uncompressed",
			"min.insync.replicas": fmt.Sprint(b.cfg.ShareStateTopicMinISR),
			"segment.bytes":       fmt.Sprint(b.cfg.ShareStateTopicSegmentBytes),
		},
	})
}

// sharePartitionCode is the error of a share state answer for one
// partition, read by the caller's extractor.
type sharePartitionCode func(kmsg.Response) int16

// ask sends req, built for key's coordinator, until it is answered by the
// coordinator in charge or ctx ends. code extracts the partition's error
// from an answer: coordinator moves and loads are retried.
func (s *shareStateClient) ask(ctx context.Context, key share.Key, req kmsg.Request, code sharePartitionCode) (kmsg.Response, protocol.ErrorCode) {
	b := s.b
	last := protocol.CoordinatorNotAvailable
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, last
			case <-time.After(min(time.Duration(attempt)*50*time.Millisecond, time.Second)):
			}
		}
		if err := b.ensureShareStateTopic(ctx); err != nil {
			last = protocol.CoordinatorNotAvailable
			continue
		}
		t := b.cluster.Snapshot().Topics[shareStateTopic]
		if t == nil || len(t.Partitions) == 0 {
			continue
		}
		part := share.CoordinatorPartition(key.String(), int32(len(t.Partitions)))
		leader := t.Partitions[part].Leader
		if leader < 0 {
			continue
		}
		var resp kmsg.Response
		if leader == b.cfg.NodeID {
			resp = b.shareCoords.ask(ctx, part, req)
		} else {
			c, err := s.conn(leader)
			if err != nil {
				return nil, protocol.CoordinatorNotAvailable
			}
			rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			resp, err = c.roundTrip(rctx, b, req)
			cancel()
			if err != nil {
				continue
			}
		}
		switch c := protocol.ErrorCode(code(resp)); c {
		case protocol.None:
			return resp, protocol.None
		case protocol.NotCoordinator, protocol.CoordinatorLoadInProgress, protocol.CoordinatorNotAvailable,
			protocol.NotEnoughReplicas, protocol.RequestTimedOut:
			last = c
		default:
			return resp, c
		}
	}
}

// read returns a share partition's state, fencing older leaders with
// leaderEpoch. A StartOffset of -1 means the partition was never
// initialized for the group.
func (s *shareStateClient) read(ctx context.Context, key share.Key, leaderEpoch int32) (share.State, protocol.ErrorCode) {
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = key.Group
	t := kmsg.NewReadShareGroupStateRequestTopic()
	t.TopicID = key.TopicID
	p := kmsg.NewReadShareGroupStateRequestTopicPartition()
	p.Partition, p.LeaderEpoch = key.Partition, leaderEpoch
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	var part *kmsg.ReadShareGroupStateResponseTopicPartition
	resp, code := s.ask(ctx, key, req, func(r kmsg.Response) int16 {
		part = nil
		for i := range r.(*kmsg.ReadShareGroupStateResponse).Topics {
			rt := &r.(*kmsg.ReadShareGroupStateResponse).Topics[i]
			for j := range rt.Partitions {
				if rt.TopicID == key.TopicID && rt.Partitions[j].Partition == key.Partition {
					part = &rt.Partitions[j]
				}
			}
		}
		if part == nil {
			return int16(protocol.UnknownServerError)
		}
		return part.ErrorCode
	})
	if code != protocol.None || resp == nil {
		return share.State{}, code
	}
	st := share.State{StateEpoch: part.StateEpoch, LeaderEpoch: leaderEpoch, StartOffset: part.StartOffset}
	for _, b := range part.StateBatches {
		st.Batches = append(st.Batches, share.StateBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset,
			DeliveryState: b.DeliveryState, DeliveryCount: b.DeliveryCount})
	}
	return st, protocol.None
}

// initialize sets a share partition's start offset, with no records in
// flight, at stateEpoch.
func (s *shareStateClient) initialize(ctx context.Context, key share.Key, stateEpoch int32, start int64) protocol.ErrorCode {
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = key.Group
	t := kmsg.NewInitializeShareGroupStateRequestTopic()
	t.TopicID = key.TopicID
	p := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
	p.Partition, p.StateEpoch, p.StartOffset = key.Partition, stateEpoch, start
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	_, code := s.ask(ctx, key, req, func(r kmsg.Response) int16 {
		for _, rt := range r.(*kmsg.InitializeShareGroupStateResponse).Topics {
			for _, rp := range rt.Partitions {
				if rt.TopicID == key.TopicID && rp.Partition == key.Partition {
					return rp.ErrorCode
				}
			}
		}
		return int16(protocol.UnknownServerError)
	})
	return code
}

// write stores a share partition's whole state.
func (s *shareStateClient) write(ctx context.Context, key share.Key, st share.State) protocol.ErrorCode {
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.GroupID = key.Group
	t := kmsg.NewWriteShareGroupStateRequestTopic()
	t.TopicID = key.TopicID
	p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	p.Partition, p.StateEpoch, p.LeaderEpoch, p.StartOffset = key.Partition, st.StateEpoch, st.LeaderEpoch, st.StartOffset
	p.StateBatches = make([]kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch, 0, len(st.Batches))
	for _, b := range st.Batches {
		sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount
		p.StateBatches = append(p.StateBatches, sb)
	}
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	_, code := s.ask(ctx, key, req, func(r kmsg.Response) int16 {
		for _, rt := range r.(*kmsg.WriteShareGroupStateResponse).Topics {
			for _, rp := range rt.Partitions {
				if rt.TopicID == key.TopicID && rp.Partition == key.Partition {
					return rp.ErrorCode
				}
			}
		}
		return int16(protocol.UnknownServerError)
	})
	return code
}

// summary returns a share partition's state epoch, leader epoch and start
// offset (-1 when never initialized), for DescribeShareGroupOffsets.
func (s *shareStateClient) summary(ctx context.Context, key share.Key) (kmsg.ReadShareGroupStateSummaryResponseTopicPartition, protocol.ErrorCode) {
	req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	req.SetVersion(1) // with DeliveryCompleteCount, for the lag
	req.GroupID = key.Group
	t := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	t.TopicID = key.TopicID
	p := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
	p.Partition, p.LeaderEpoch = key.Partition, -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	var out kmsg.ReadShareGroupStateSummaryResponseTopicPartition
	_, code := s.ask(ctx, key, req, func(r kmsg.Response) int16 {
		for _, rt := range r.(*kmsg.ReadShareGroupStateSummaryResponse).Topics {
			for _, rp := range rt.Partitions {
				if rt.TopicID == key.TopicID && rp.Partition == key.Partition {
					out = rp
					return rp.ErrorCode
				}
			}
		}
		return int16(protocol.UnknownServerError)
	})
	return out, code
}

// remove deletes a share partition's state (DeleteShareGroupOffsets,
// DeleteGroups).
func (s *shareStateClient) remove(ctx context.Context, key share.Key) protocol.ErrorCode {
	req := kmsg.NewPtrDeleteShareGroupStateRequest()
	req.GroupID = key.Group
	t := kmsg.NewDeleteShareGroupStateRequestTopic()
	t.TopicID = key.TopicID
	p := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
	p.Partition = key.Partition
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	_, code := s.ask(ctx, key, req, func(r kmsg.Response) int16 {
		for _, rt := range r.(*kmsg.DeleteShareGroupStateResponse).Topics {
			for _, rp := range rt.Partitions {
				if rt.TopicID == key.TopicID && rp.Partition == key.Partition {
					return rp.ErrorCode
				}
			}
		}
		return int16(protocol.UnknownServerError)
	})
	return code
}
