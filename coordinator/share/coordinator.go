package share

// Coordinator is the share coordinator of one __share_group_state
// partition: the durable State of every share partition whose key hashes
// to it (CoordinatorPartition), kept as records in that partition and
// served to share partition leaders through InitializeShareGroupState,
// ReadShareGroupState, WriteShareGroupState, DeleteShareGroupState and
// ReadShareGroupStateSummary.
//
// It is a state machine like the group coordinator: Replay the partition's
// records, call Loaded, then Step each request; every Output's Records must
// be appended to the partition as one batch and be durable before its
// Responses are sent. If the append fails, AppendFailed fences the
// coordinator and gives the answers to send instead; the driver loads a new
// one from the log.
//
// Semantics, as Kafka's share coordinator:
//   - Initialize sets a share partition's state epoch and start offset with
//     nothing in flight; an older state epoch than the stored one is
//     FENCED_STATE_EPOCH.
//   - Read returns the state. It fences leaders: a leader epoch below the
//     stored one is FENCED_LEADER_EPOCH, a higher one is stored. A share
//     partition never initialized reads as start offset -1, state epoch 0.
//   - Write merges the given batches over the stored ones (the newer wins
//     for the offsets it covers), drops what lies below the new start
//     offset (-1 keeps it), and fences older state and leader epochs. A
//     share partition that was never initialized (or was deleted) is
//     UNKNOWN_TOPIC_OR_PARTITION: its leader loads it again.
//   - Delete forgets the state; ReadSummary returns the epochs and start
//     offset.

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka error codes the coordinator answers with.
const (
	errUnknownTopicOrPartition   int16 = 3
	errCoordinatorLoadInProgress int16 = 14
	errCoordinatorNotAvailable   int16 = 15
	errNotCoordinator            int16 = 16
	errFencedLeaderEpoch         int16 = 74
	errFencedStateEpoch          int16 = 124
)

// maxBatches bounds the state batches of one write and of one stored state.
const maxBatches = 10000

// Config configures a share coordinator.
type Config struct {
	// Partitions is the partition count of __share_group_state
	// (share.coordinator.state.topic.num.partitions, 50).
	Partitions int32
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config { return Config{Partitions: 50} }

// Validate reports a setting out of range.
func (c Config) Validate() error {
	if c.Partitions < 1 {
		return fmt.Errorf("%w: share.coordinator.state.topic.num.partitions %d", ErrInvalidConfig, c.Partitions)
	}
	return nil
}

// ErrLoaded is returned by Replay after Loaded.
var ErrLoaded = errors.New("share: coordinator already loaded")

// Input is one request: an InitializeShareGroupStateRequest,
// ReadShareGroupStateRequest, WriteShareGroupStateRequest,
// DeleteShareGroupStateRequest or ReadShareGroupStateSummaryRequest.
type Input struct {
	Token   any
	Request kmsg.Request
}

// Record is a record for the partition; a nil Value is a tombstone.
type Record struct{ Key, Value []byte }

// Response answers the Input with the same Token.
type Response struct {
	Token any
	Body  kmsg.Response
}

// Output is what one Step produced.
type Output struct {
	Records   []Record
	Responses []Response
}

type phase uint8

const (
	phaseLoading phase = iota
	phaseActive
	phaseFenced
)

// Coordinator is one __share_group_state partition's share coordinator.
type Coordinator struct {
	cfg       Config
	partition int32
	phase     phase
	states    map[Key]*State
	snapshots map[Key]uint16 // snapshot epoch per key
	out       Output
}

// New returns a loading coordinator of partition.
func New(cfg Config, partition int32) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if partition < 0 || partition >= cfg.Partitions {
		return nil, fmt.Errorf("%w: partition %d of %d", ErrInvalidConfig, partition, cfg.Partitions)
	}
	return &Coordinator{cfg: cfg, partition: partition, states: map[Key]*State{}, snapshots: map[Key]uint16{}}, nil
}

// Replay applies one record of the partition, in log order.
func (c *Coordinator) Replay(key, value []byte) error {
	if c.phase != phaseLoading {
		return ErrLoaded
	}
	r, err := parseRecord(key, value)
	if err != nil {
		return err
	}
	switch {
	case r.tombstone:
		delete(c.states, r.key)
		delete(c.snapshots, r.key)
	case r.update:
		st := c.states[r.key]
		if st == nil {
			return nil // an update without its snapshot: nothing to merge into
		}
		st.LeaderEpoch = r.state.LeaderEpoch
		if r.state.StartOffset >= 0 {
			st.StartOffset = r.state.StartOffset
		}
		st.Batches = mergeBatches(st.Batches, r.state.Batches, st.StartOffset)
	default:
		st := r.state
		c.states[r.key] = &st
		c.snapshots[r.key] = r.snapshotEpoch
	}
	return nil
}

// Loaded ends loading; requests are served from now on.
func (c *Coordinator) Loaded(time.Time) {
	if c.phase == phaseLoading {
		c.phase = phaseActive
	}
}

// Unload fences the coordinator: later requests get NOT_COORDINATOR. Nothing
// is ever parked, so there is nothing to answer.
func (c *Coordinator) Unload() []Response {
	c.phase = phaseFenced
	c.states = map[Key]*State{}
	return nil
}

// AppendFailed fences the coordinator after its records could not be made
// durable, and returns failed answered with the error clients get instead.
func (c *Coordinator) AppendFailed(failed []Response, code int16) []Response {
	c.Unload()
	mapped := errCoordinatorNotAvailable
	if code == 6 { // NOT_LEADER_OR_FOLLOWER: the partition moved
		mapped = errNotCoordinator
	}
	out := make([]Response, 0, len(failed))
	for _, r := range failed {
		out = append(out, Response{Token: r.Token, Body: failAll(r.Body, mapped)})
	}
	return out
}

// States returns how many share partitions the coordinator holds.
func (c *Coordinator) States() int { return len(c.states) }

// Step serves one request.
func (c *Coordinator) Step(now time.Time, in Input) Output {
	c.out = Output{}
	var body kmsg.Response
	switch c.phase {
	case phaseLoading:
		body = ErrorResponse(in.Request, errCoordinatorLoadInProgress)
	case phaseFenced:
		body = ErrorResponse(in.Request, errNotCoordinator)
	default:
		body = c.serve(now, in.Request)
	}
	c.out.Responses = append(c.out.Responses, Response{Token: in.Token, Body: body})
	out := c.out
	c.out = Output{}
	return out
}

// mine reports whether key belongs to this coordinator.
func (c *Coordinator) mine(k Key) bool {
	return CoordinatorPartition(k.String(), c.cfg.Partitions) == c.partition
}

func (c *Coordinator) serve(now time.Time, req kmsg.Request) kmsg.Response {
	nowMs := now.UnixMilli()
	switch r := req.(type) {
	case *kmsg.InitializeShareGroupStateRequest:
		resp := r.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewInitializeShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = c.initialize(Key{r.GroupID, t.TopicID, p.Partition}, p.StateEpoch, p.StartOffset, nowMs)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.ReadShareGroupStateRequest:
		resp := r.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewReadShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
				rp.Partition = p.Partition
				st, code := c.read(Key{r.GroupID, t.TopicID, p.Partition}, p.LeaderEpoch, nowMs)
				rp.ErrorCode, rp.StateEpoch, rp.StartOffset = code, st.StateEpoch, st.StartOffset
				rp.StateBatches = []kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch{}
				for _, b := range st.Batches {
					sb := kmsg.NewReadShareGroupStateResponseTopicPartitionStateBatch()
					sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount
					rp.StateBatches = append(rp.StateBatches, sb)
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.WriteShareGroupStateRequest:
		resp := r.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewWriteShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
				rp.Partition = p.Partition
				batches := make([]StateBatch, 0, len(p.StateBatches))
				for _, b := range p.StateBatches {
					batches = append(batches, StateBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset,
						DeliveryState: b.DeliveryState, DeliveryCount: b.DeliveryCount})
				}
				rp.ErrorCode = c.write(Key{r.GroupID, t.TopicID, p.Partition},
					State{StateEpoch: p.StateEpoch, LeaderEpoch: p.LeaderEpoch, StartOffset: p.StartOffset, Batches: batches}, nowMs)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.DeleteShareGroupStateRequest:
		resp := r.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewDeleteShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
				rp.Partition = p.Partition
				k := Key{r.GroupID, t.TopicID, p.Partition}
				switch {
				case !c.mine(k):
					rp.ErrorCode = errNotCoordinator
				case c.states[k] != nil:
					delete(c.states, k)
					delete(c.snapshots, k)
					c.out.Records = append(c.out.Records, Record{Key: snapshotKey(k)})
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.ReadShareGroupStateSummaryRequest:
		resp := r.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
				rp.Partition, rp.StartOffset, rp.LeaderEpoch = p.Partition, -1, -1
				k := Key{r.GroupID, t.TopicID, p.Partition}
				if !c.mine(k) {
					rp.ErrorCode = errNotCoordinator
				} else if st := c.states[k]; st != nil {
					rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset = st.StateEpoch, st.LeaderEpoch, st.StartOffset
					rp.DeliveryCompleteCount = deliveryComplete(st)
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	return ErrorResponse(req, 42)
}

func (c *Coordinator) initialize(k Key, stateEpoch int32, start int64, nowMs int64) int16 {
	if !c.mine(k) {
		return errNotCoordinator
	}
	if start < 0 {
		return 42
	}
	old := c.states[k]
	leaderEpoch := int32(-1)
	if old != nil {
		if stateEpoch < old.StateEpoch {
			return errFencedStateEpoch
		}
		leaderEpoch = old.LeaderEpoch
	}
	st := &State{StateEpoch: stateEpoch, LeaderEpoch: leaderEpoch, StartOffset: start}
	c.states[k] = st
	c.snapshot(k, st, nowMs)
	return 0
}

func (c *Coordinator) read(k Key, leaderEpoch int32, nowMs int64) (State, int16) {
	if !c.mine(k) {
		return State{StartOffset: -1}, errNotCoordinator
	}
	st := c.states[k]
	if st == nil {
		return State{StartOffset: -1}, 0
	}
	if leaderEpoch < st.LeaderEpoch {
		return State{StartOffset: -1}, errFencedLeaderEpoch
	}
	if leaderEpoch > st.LeaderEpoch {
		st.LeaderEpoch = leaderEpoch
		c.snapshot(k, st, nowMs)
	}
	return *st, 0
}

func (c *Coordinator) write(k Key, w State, nowMs int64) int16 {
	if !c.mine(k) {
		return errNotCoordinator
	}
	st := c.states[k]
	switch {
	case st == nil:
		return errUnknownTopicOrPartition
	case len(w.Batches) > maxBatches:
		return 42
	case w.StateEpoch < st.StateEpoch:
		return errFencedStateEpoch
	case w.LeaderEpoch < st.LeaderEpoch:
		return errFencedLeaderEpoch
	}
	for _, b := range w.Batches {
		if b.LastOffset < b.FirstOffset || (b.DeliveryState != Available && b.DeliveryState != Acknowledged && b.DeliveryState != Archived) {
			return 42
		}
	}
	start := st.StartOffset
	if w.StartOffset >= 0 {
		start = w.StartOffset
	}
	merged := mergeBatches(st.Batches, w.Batches, start)
	if len(merged) > maxBatches {
		return 42
	}
	st.StartOffset, st.LeaderEpoch, st.Batches = start, w.LeaderEpoch, merged
	c.snapshot(k, st, nowMs)
	return 0
}

// snapshot writes the whole state of k as a ShareSnapshot record.
func (c *Coordinator) snapshot(k Key, st *State, nowMs int64) {
	c.snapshots[k]++
	c.out.Records = append(c.out.Records, Record{Key: snapshotKey(k), Value: snapshotValue(c.snapshots[k], st, nowMs)})
}

// mergeBatches lays newer over older (the newer wins for the offsets it
// covers), drops what is below start, and merges adjacent runs with one
// state and count. Both must be sorted and non-overlapping; newer is
// sorted here in case it is not.
func mergeBatches(older, newer []StateBatch, start int64) []StateBatch {
	newer = slices.Clone(newer)
	slices.SortFunc(newer, func(a, b StateBatch) int {
		switch {
		case a.FirstOffset < b.FirstOffset:
			return -1
		case a.FirstOffset > b.FirstOffset:
			return 1
		}
		return 0
	})
	var all []StateBatch
	j := 0
	for _, o := range older {
		// Cut o around every newer batch it overlaps.
		for o.FirstOffset <= o.LastOffset {
			for j < len(newer) && newer[j].LastOffset < o.FirstOffset {
				all = append(all, newer[j])
				j++
			}
			if j == len(newer) || newer[j].FirstOffset > o.LastOffset {
				all = append(all, o)
				break
			}
			n := newer[j]
			if n.FirstOffset > o.FirstOffset {
				part := o
				part.LastOffset = n.FirstOffset - 1
				all = append(all, part)
			}
			o.FirstOffset = n.LastOffset + 1
		}
	}
	all = append(all, newer[j:]...)
	var out []StateBatch
	for _, b := range all {
		if b.LastOffset < start {
			continue
		}
		b.FirstOffset = max(b.FirstOffset, start)
		if k := len(out) - 1; k >= 0 && out[k].LastOffset+1 == b.FirstOffset &&
			out[k].DeliveryState == b.DeliveryState && out[k].DeliveryCount == b.DeliveryCount {
			out[k].LastOffset = b.LastOffset
			continue
		}
		if k := len(out) - 1; k >= 0 && b.FirstOffset <= out[k].LastOffset {
			// Overlapping newer batches: the later one wins.
			out[k].LastOffset = b.FirstOffset - 1
			if out[k].LastOffset < out[k].FirstOffset {
				out = out[:k]
			}
		}
		out = append(out, b)
	}
	return out
}

// deliveryComplete counts the offsets past the start offset that are done
// (acknowledged or archived), for the lag (ReadShareGroupStateSummary v1).
func deliveryComplete(st *State) int32 {
	var n int64
	for _, b := range st.Batches {
		if b.DeliveryState == Acknowledged || b.DeliveryState == Archived {
			n += b.LastOffset - b.FirstOffset + 1
		}
	}
	return int32(min(n, 1<<31-1))
}

// ErrorResponse answers a share coordinator request with code on every
// partition.
func ErrorResponse(req kmsg.Request, code int16) kmsg.Response {
	resp := req.ResponseKind()
	switch r := req.(type) {
	case *kmsg.InitializeShareGroupStateRequest:
		out := resp.(*kmsg.InitializeShareGroupStateResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewInitializeShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	case *kmsg.ReadShareGroupStateRequest:
		out := resp.(*kmsg.ReadShareGroupStateResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewReadShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.StartOffset = p.Partition, code, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	case *kmsg.WriteShareGroupStateRequest:
		out := resp.(*kmsg.WriteShareGroupStateResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewWriteShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	case *kmsg.DeleteShareGroupStateRequest:
		out := resp.(*kmsg.DeleteShareGroupStateResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewDeleteShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	case *kmsg.ReadShareGroupStateSummaryRequest:
		out := resp.(*kmsg.ReadShareGroupStateSummaryResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.StartOffset, rp.LeaderEpoch = p.Partition, code, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	}
	return resp
}

// failAll sets code on every partition of a response the coordinator
// built.
func failAll(body kmsg.Response, code int16) kmsg.Response {
	switch r := body.(type) {
	case *kmsg.InitializeShareGroupStateResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				r.Topics[i].Partitions[j].ErrorCode = code
			}
		}
	case *kmsg.ReadShareGroupStateResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				p := &r.Topics[i].Partitions[j]
				p.ErrorCode, p.StartOffset, p.StateBatches = code, -1, nil
			}
		}
	case *kmsg.WriteShareGroupStateResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				r.Topics[i].Partitions[j].ErrorCode = code
			}
		}
	case *kmsg.DeleteShareGroupStateResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				r.Topics[i].Partitions[j].ErrorCode = code
			}
		}
	case *kmsg.ReadShareGroupStateSummaryResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				r.Topics[i].Partitions[j].ErrorCode = code
			}
		}
	}
	return body
}
