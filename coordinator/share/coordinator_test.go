package share

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// coordFor returns a loaded coordinator of 3 partitions owning key k, and
// the records it wrote, appended by step.
type coordHarness struct {
	t       *testing.T
	c       *Coordinator
	records []Record
}

func newCoordHarness(t *testing.T, k Key) *coordHarness {
	cfg := Config{Partitions: 3}
	c, err := New(cfg, CoordinatorPartition(k.String(), 3))
	if err != nil {
		t.Fatal(err)
	}
	c.Loaded(t0)
	return &coordHarness{t: t, c: c}
}

func (h *coordHarness) step(req kmsg.Request) kmsg.Response {
	h.t.Helper()
	out := h.c.Step(t0, Input{Token: 1, Request: req})
	h.records = append(h.records, out.Records...)
	if len(out.Responses) != 1 {
		h.t.Fatalf("%d responses", len(out.Responses))
	}
	return out.Responses[0].Body
}

func initReq(k Key, stateEpoch int32, start int64) *kmsg.InitializeShareGroupStateRequest {
	r := kmsg.NewPtrInitializeShareGroupStateRequest()
	r.GroupID = k.Group
	t := kmsg.NewInitializeShareGroupStateRequestTopic()
	t.TopicID = k.TopicID
	p := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
	p.Partition, p.StateEpoch, p.StartOffset = k.Partition, stateEpoch, start
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

func readReq(k Key, leaderEpoch int32) *kmsg.ReadShareGroupStateRequest {
	r := kmsg.NewPtrReadShareGroupStateRequest()
	r.GroupID = k.Group
	t := kmsg.NewReadShareGroupStateRequestTopic()
	t.TopicID = k.TopicID
	p := kmsg.NewReadShareGroupStateRequestTopicPartition()
	p.Partition, p.LeaderEpoch = k.Partition, leaderEpoch
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

func writeReq(k Key, st State) *kmsg.WriteShareGroupStateRequest {
	r := kmsg.NewPtrWriteShareGroupStateRequest()
	r.GroupID = k.Group
	t := kmsg.NewWriteShareGroupStateRequestTopic()
	t.TopicID = k.TopicID
	p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	p.Partition, p.StateEpoch, p.LeaderEpoch, p.StartOffset = k.Partition, st.StateEpoch, st.LeaderEpoch, st.StartOffset
	for _, b := range st.Batches {
		sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount
		p.StateBatches = append(p.StateBatches, sb)
	}
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

func (h *coordHarness) read(k Key, leaderEpoch int32) (State, int16) {
	h.t.Helper()
	p := h.step(readReq(k, leaderEpoch)).(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions[0]
	st := State{StateEpoch: p.StateEpoch, StartOffset: p.StartOffset}
	for _, b := range p.StateBatches {
		st.Batches = append(st.Batches, StateBatch{b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount})
	}
	return st, p.ErrorCode
}

func (h *coordHarness) write(k Key, st State) int16 {
	h.t.Helper()
	return h.step(writeReq(k, st)).(*kmsg.WriteShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode
}

func TestCoordinatorLifecycle(t *testing.T) {
	k := Key{Group: "g", TopicID: [16]byte{1, 2, 3}, Partition: 4}
	h := newCoordHarness(t, k)
	if st, code := h.read(k, 0); code != 0 || st.StartOffset != -1 {
		t.Fatalf("never initialized: %+v code %d, want start -1", st, code)
	}
	if code := h.write(k, State{StartOffset: 0}); code != errUnknownTopicOrPartition {
		t.Fatalf("write before initialize: code %d", code)
	}
	if code := h.step(initReq(k, 0, 10)).(*kmsg.InitializeShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("initialize: %d", code)
	}
	if code := h.write(k, State{LeaderEpoch: 2, StartOffset: 10, Batches: []StateBatch{{10, 19, Acknowledged, 1}, {20, 29, Available, 1}}}); code != 0 {
		t.Fatalf("write: %d", code)
	}
	// A newer write covering part of the old batches wins there only.
	if code := h.write(k, State{LeaderEpoch: 2, StartOffset: 15, Batches: []StateBatch{{22, 24, Archived, 2}}}); code != 0 {
		t.Fatalf("second write: %d", code)
	}
	want := []StateBatch{{15, 19, Acknowledged, 1}, {20, 21, Available, 1}, {22, 24, Archived, 2}, {25, 29, Available, 1}}
	sum := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	sum.SetVersion(1)
	sum.GroupID = k.Group
	st1 := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	st1.TopicID = k.TopicID
	sp1 := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
	sp1.Partition = k.Partition
	st1.Partitions = append(st1.Partitions, sp1)
	sum.Topics = append(sum.Topics, st1)
	if p := h.step(sum).(*kmsg.ReadShareGroupStateSummaryResponse).Topics[0].Partitions[0]; p.StartOffset != 15 || p.DeliveryCompleteCount != 8 || p.LeaderEpoch != 2 {
		t.Fatalf("summary %+v, want start 15, 8 offsets done (15-19, 22-24), leader epoch 2", p)
	}
	st, code := h.read(k, 2)
	if code != 0 || st.StartOffset != 15 || !slices.Equal(st.Batches, want) {
		t.Fatalf("read %+v code %d, want start 15 batches %+v", st, code, want)
	}
	// Fencing: an older leader, then an older state epoch.
	if _, code := h.read(k, 1); code != errFencedLeaderEpoch {
		t.Fatalf("read by an older leader: %d", code)
	}
	if _, code := h.read(k, 3); code != 0 {
		t.Fatalf("read by a newer leader: %d", code)
	}
	if code := h.write(k, State{LeaderEpoch: 2, StartOffset: 15}); code != errFencedLeaderEpoch {
		t.Fatalf("write by the old leader after the new one read: %d", code)
	}
	h.step(initReq(k, 1, 5)) // an offset reset
	if code := h.write(k, State{StateEpoch: 0, LeaderEpoch: 3, StartOffset: 15}); code != errFencedStateEpoch {
		t.Fatalf("write at the old state epoch: %d", code)
	}
	if st, _ := h.read(k, 3); st.StateEpoch != 1 || st.StartOffset != 5 || len(st.Batches) != 0 {
		t.Fatalf("after the reset: %+v", st)
	}
	// A key of another coordinator.
	other := k
	for CoordinatorPartition(other.String(), 3) == h.c.partition {
		other.Partition++
	}
	if _, code := h.read(other, 0); code != errNotCoordinator {
		t.Fatalf("foreign key: %d", code)
	}

	// Replaying what was written gives the same answers.
	c, _ := New(Config{Partitions: 3}, h.c.partition)
	for _, r := range h.records {
		if err := c.Replay(r.Key, r.Value); err != nil {
			t.Fatal(err)
		}
	}
	c.Loaded(t0)
	h2 := &coordHarness{t: t, c: c}
	if got, _ := h2.read(k, 3); got.StateEpoch != 1 || got.StartOffset != 5 || len(got.Batches) != 0 {
		t.Fatalf("replayed: %+v", got)
	}

	// Delete: a tombstone, then reads as never initialized.
	del := kmsg.NewPtrDeleteShareGroupStateRequest()
	del.GroupID = k.Group
	dt := kmsg.NewDeleteShareGroupStateRequestTopic()
	dt.TopicID = k.TopicID
	dp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
	dp.Partition = k.Partition
	dt.Partitions = append(dt.Partitions, dp)
	del.Topics = append(del.Topics, dt)
	h.step(del)
	if last := h.records[len(h.records)-1]; last.Value != nil {
		t.Fatal("delete wrote no tombstone")
	}
	if st, _ := h.read(k, 3); st.StartOffset != -1 {
		t.Fatalf("after delete: %+v", st)
	}
}

func TestCoordinatorPhases(t *testing.T) {
	k := Key{Group: "g", Partition: 1}
	c, _ := New(Config{Partitions: 1}, 0)
	out := c.Step(t0, Input{Request: readReq(k, 0)})
	if code := out.Responses[0].Body.(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode; code != errCoordinatorLoadInProgress {
		t.Fatalf("loading: %d", code)
	}
	c.Loaded(t0)
	c.Unload()
	out = c.Step(t0, Input{Request: readReq(k, 0)})
	if code := out.Responses[0].Body.(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode; code != errNotCoordinator {
		t.Fatalf("unloaded: %d", code)
	}
}

// The snapshot record's bytes, field by field as Kafka's ShareSnapshotKey
// and ShareSnapshotValue lay them out.
func TestSnapshotRecordBytes(t *testing.T) {
	k := Key{Group: "g", TopicID: [16]byte{15: 9}, Partition: 2}
	key := snapshotKey(k)
	wantKey := []byte{0, 0, 0, 1, 'g', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 2}
	if !slices.Equal(key, wantKey) {
		t.Fatalf("key % x, want % x", key, wantKey)
	}
	v := snapshotValue(1, &State{StateEpoch: 2, LeaderEpoch: 3, StartOffset: 4, Batches: []StateBatch{{4, 5, Acknowledged, 1}}}, 0)
	wantValue := []byte{0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 4,
		2, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 5, 2, 0, 1, 0, 0}
	if !slices.Equal(v, wantValue) {
		t.Fatalf("value % x, want % x", v, wantValue)
	}
	p, err := parseRecord(key, v)
	if err != nil || p.key != k || p.state.StartOffset != 4 || len(p.state.Batches) != 1 || p.snapshotEpoch != 1 {
		t.Fatalf("parsed %+v %v", p, err)
	}
}

func TestKeyString(t *testing.T) {
	k := Key{Group: "grp", TopicID: [16]byte{0xff}, Partition: 7}
	if got := k.String(); got != "grp:_wAAAAAAAAAAAAAAAAAAAA:7" {
		t.Fatalf("key %q", got)
	}
	if p := CoordinatorPartition("a", 50); p != 47 { // "a".hashCode() == 97
		t.Fatalf("partition of \"a\": %d", p)
	}
}
