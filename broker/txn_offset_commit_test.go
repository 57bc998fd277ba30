package broker

// TxnOffsetCommit against an in-process broker, with raw requests: the
// offsets stay invisible to OffsetFetch (UNSTABLE_OFFSET_COMMIT with
// require_stable) until WriteTxnMarkers writes a COMMIT marker for the
// producer to the partition (its handler tells the coordinator through
// groupTxnCompleted); an ABORT drops
// them; a stale producer epoch fails the request alone; and across broker
// restarts the pending offsets are restored by replaying the partition,
// then completed by a marker written later.

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/group"
	"github.com/gregor-io/gregor/protocol"
)

// txnCommitWire sends a TxnOffsetCommit v3 of offsets to partitions 0.. of
// topic, retrying while the coordinator loads, and returns the partitions'
// error codes.
func txnCommitWire(t *testing.T, w *wireConn, groupID, topic string, pid int64, epoch int16, offsets ...int64) []int16 {
	t.Helper()
	var codes []int16
	waitFor(t, 30*time.Second, "TxnOffsetCommit past coordinator loading", func() error {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.SetVersion(3)
		req.TransactionalID = "txo-tx"
		req.Group = groupID
		req.ProducerID, req.ProducerEpoch = pid, epoch
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = topic
		for p, o := range offsets {
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = int32(p), o
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = []kmsg.TxnOffsetCommitRequestTopic{rt}
		resp := w.mustRoundTrip(req).(*kmsg.TxnOffsetCommitResponse)
		codes = codes[:0]
		for _, p := range resp.Topics[0].Partitions {
			codes = append(codes, p.ErrorCode)
		}
		if c := protocol.ErrorCode(codes[0]); c == protocol.CoordinatorLoadInProgress || c == protocol.NotCoordinator {
			return fmt.Errorf("error %s", c)
		}
		return nil
	})
	return codes
}

// fetchWire fetches partitions 0..n-1 of topic for groupID with OffsetFetch
// v8, retrying while the coordinator loads. Each entry is the committed
// offset or, when the partition failed, -(error code).
func fetchWire(t *testing.T, w *wireConn, groupID, topic string, n int32, requireStable bool) []int64 {
	t.Helper()
	var out []int64
	waitFor(t, 30*time.Second, "OffsetFetch past coordinator loading", func() error {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.SetVersion(8)
		req.RequireStable = requireStable
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic = topic
		for p := int32(0); p < n; p++ {
			rt.Partitions = append(rt.Partitions, p)
		}
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group, rg.Topics = groupID, []kmsg.OffsetFetchRequestGroupTopic{rt}
		req.Groups = []kmsg.OffsetFetchRequestGroup{rg}
		g := w.mustRoundTrip(req).(*kmsg.OffsetFetchResponse).Groups[0]
		if g.ErrorCode != 0 {
			return fmt.Errorf("error %s", protocol.ErrorCode(g.ErrorCode))
		}
		out = out[:0]
		for _, p := range g.Topics[0].Partitions {
			if p.ErrorCode != 0 {
				out = append(out, -int64(p.ErrorCode))
			} else {
				out = append(out, p.Offset)
			}
		}
		return nil
	})
	return out
}

// writeMarker has the broker write a transaction marker to the group's
// __consumer_offsets partition with WriteTxnMarkers, as a transaction
// coordinator does; the handler hands it to the group coordinator
// (groupTxnCompleted) before it answers.
func writeMarker(t *testing.T, w *wireConn, b *Broker, groupID string, pid int64, epoch int16, commit bool) {
	t.Helper()
	partition := group.PartitionFor(groupID, b.cfg.OffsetsTopicNumPartitions)
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.SetVersion(1)
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed = pid, epoch, commit
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = offsetsTopic, []int32{partition}
	m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{mt}
	req.Markers = []kmsg.WriteTxnMarkersRequestMarker{m}
	resp := w.mustRoundTrip(req).(*kmsg.WriteTxnMarkersResponse)
	if c := resp.Markers[0].Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatalf("WriteTxnMarkers: error %s", protocol.ErrorCode(c))
	}
}

// findGroupCoordinator asks for the group's coordinator until this broker
// answers, which creates __consumer_offsets.
func findGroupCoordinator(t *testing.T, w *wireConn, groupID string) {
	t.Helper()
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.SetVersion(3)
	find.CoordinatorKey = groupID
	waitFor(t, 30*time.Second, "FindCoordinator", func() error {
		if c := w.mustRoundTrip(find).(*kmsg.FindCoordinatorResponse).ErrorCode; c != 0 {
			return errors.New(protocol.ErrorCode(c).String())
		}
		return nil
	})
}

func wantOffsets(t *testing.T, what string, got []int64, want ...int64) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: offsets %v, want %v", what, got, want)
	}
}

func TestTxnOffsetCommit(t *testing.T) {
	t.Parallel()
	const topic, groupID = "txo-topic", "txo-group"
	unstable := -int64(protocol.UnstableOffsetCommit)
	rb := startGrpRestartable(t, false, noTxnVerification)
	ctx := testContext(t, 2*time.Minute)
	grpCreateTopic(ctx, t, kadm.NewClient(newClient(t, rb.b)), topic, 2)
	w := dialWire(t, rb.b)
	findGroupCoordinator(t, w, groupID)
	pid, epoch := w.initProducerID()

	// Commit: pending until the marker.
	wantOffsets(t, "codes", intsOf(txnCommitWire(t, w, groupID, topic, pid, epoch, 5, 7)), 0, 0)
	wantOffsets(t, "pending", fetchWire(t, w, groupID, topic, 2, false), -1, -1)
	wantOffsets(t, "pending, require_stable", fetchWire(t, w, groupID, topic, 2, true), unstable, unstable)
	// A second commit in the same transaction: the next batch of the
	// producer in the partition.
	wantOffsets(t, "codes", intsOf(txnCommitWire(t, w, groupID, topic, pid, epoch, 6)), 0)
	writeMarker(t, w, rb.b, groupID, pid, epoch, true)
	wantOffsets(t, "committed", fetchWire(t, w, groupID, topic, 2, true), 6, 7)

	// Abort: the next transaction of the producer, same epoch.
	wantOffsets(t, "codes", intsOf(txnCommitWire(t, w, groupID, topic, pid, epoch, 9, 9)), 0, 0)
	wantOffsets(t, "pending", fetchWire(t, w, groupID, topic, 2, false), 6, 7)
	writeMarker(t, w, rb.b, groupID, pid, epoch, false)
	wantOffsets(t, "aborted", fetchWire(t, w, groupID, topic, 2, true), 6, 7)

	// A marker with a newer epoch fences the old one: a commit with it
	// fails alone and leaves nothing pending; the new epoch commits.
	writeMarker(t, w, rb.b, groupID, pid, epoch+1, false)
	wantOffsets(t, "stale epoch", intsOf(txnCommitWire(t, w, groupID, topic, pid, epoch, 1, 1)),
		int64(protocol.InvalidProducerEpoch), int64(protocol.InvalidProducerEpoch))
	wantOffsets(t, "after the refusal", fetchWire(t, w, groupID, topic, 2, true), 6, 7)
	epoch++
	wantOffsets(t, "codes", intsOf(txnCommitWire(t, w, groupID, topic, pid, epoch, 11)), 0)

	// Restart with the transaction open: replay restores it as pending,
	// and the producer's next batch follows its last one in the log.
	rb.restart(t)
	w = dialWire(t, rb.b)
	wantOffsets(t, "pending after restart", fetchWire(t, w, groupID, topic, 2, true), unstable, 7)
	wantOffsets(t, "pending after restart, not stable", fetchWire(t, w, groupID, topic, 2, false), 6, 7)
	wantOffsets(t, "codes", intsOf(txnCommitWire(t, w, groupID, topic, pid, epoch, 12, 13)), 0, 0)
	writeMarker(t, w, rb.b, groupID, pid, epoch, true)
	wantOffsets(t, "committed after restart", fetchWire(t, w, groupID, topic, 2, true), 12, 13)

	// The marker is replayed after another restart; a transaction left
	// open then is pending again.
	wantOffsets(t, "codes", intsOf(txnCommitWire(t, w, groupID, topic, pid, epoch, 20)), 0)
	rb.restart(t)
	w = dialWire(t, rb.b)
	wantOffsets(t, "after the second restart", fetchWire(t, w, groupID, topic, 2, true), unstable, 13)
	writeMarker(t, w, rb.b, groupID, pid, epoch, false)
	wantOffsets(t, "aborted after the second restart", fetchWire(t, w, groupID, topic, 2, true), 12, 13)
}

func TestTxnOffsetCommitOldClientCodes(t *testing.T) {
	for v, want := range map[int16]protocol.ErrorCode{0: protocol.CoordinatorNotAvailable, 1: protocol.CoordinatorNotAvailable,
		2: protocol.CoordinatorLoadInProgress, 5: protocol.CoordinatorLoadInProgress} {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.SetVersion(v)
		req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0}, {Partition: 1}}}}
		resp := group.ErrorResponse(req, int16(protocol.CoordinatorLoadInProgress)).(*kmsg.TxnOffsetCommitResponse)
		resp.Topics[0].Partitions[1].ErrorCode = int16(protocol.NotCoordinator)
		oldClientCodes(v, resp)
		if got := protocol.ErrorCode(resp.Topics[0].Partitions[0].ErrorCode); got != want {
			t.Errorf("v%d: %s, want %s", v, got, want)
		}
		if got := protocol.ErrorCode(resp.Topics[0].Partitions[1].ErrorCode); got != protocol.NotCoordinator {
			t.Errorf("v%d: other code changed to %s", v, got)
		}
	}
}

func intsOf(codes []int16) []int64 {
	out := make([]int64, len(codes))
	for i, c := range codes {
		out[i] = int64(c)
	}
	return out
}

// TestTxnOffsetCommitNotCoordinator: a group whose coordinator is not this
// broker, because __consumer_offsets does not exist yet, is answered
// NOT_COORDINATOR at every version, and a marker for a partition without
// a coordinator here is nothing to do.
func TestTxnOffsetCommitNotCoordinator(t *testing.T) {
	t.Parallel()
	b := startBroker(t, fastGroups)
	w := dialWire(t, b)
	for v := int16(0); v <= 5; v++ {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.SetVersion(v)
		req.Group, req.ProducerID = "g", 1
		req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0}}}}
		resp := w.mustRoundTrip(req).(*kmsg.TxnOffsetCommitResponse)
		if c := resp.Topics[0].Partitions[0].ErrorCode; c != int16(protocol.NotCoordinator) {
			t.Fatalf("v%d: error %s", v, protocol.ErrorCode(c))
		}
	}
	b.groupTxnCompleted(0, 1, true)
}

// TestTxnOffsetCommitConcurrent interleaves plain commits of one partition
// with transactions committing another, through separate connections to
// the same coordinator, so transactional commits arrive while plain ones
// wait to be persisted; every commit must land, in order, and survive a
// restart.
func TestTxnOffsetCommitConcurrent(t *testing.T) {
	t.Parallel()
	const topic, groupID, rounds = "txo-conc", "txo-conc-group", 40
	rb := startGrpRestartable(t, false, noTxnVerification)
	ctx := testContext(t, 2*time.Minute)
	grpCreateTopic(ctx, t, kadm.NewClient(newClient(t, rb.b)), topic, 2)
	txw, plainw := dialWire(t, rb.b), dialWire(t, rb.b)
	findGroupCoordinator(t, txw, groupID)
	pid, epoch := txw.initProducerID()
	wantOffsets(t, "first", intsOf(txnCommitWire(t, txw, groupID, topic, pid, epoch, 0)), 0)
	writeMarker(t, txw, rb.b, groupID, pid, epoch, true)

	done := make(chan error, 1)
	go func() {
		for i := int64(1); i <= rounds; i++ {
			req := kmsg.NewPtrOffsetCommitRequest()
			req.SetVersion(8)
			req.Group, req.Generation = groupID, -1
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = 1, i
			rt.Partitions = []kmsg.OffsetCommitRequestTopicPartition{rp}
			req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
			resp, err := plainw.roundTrip(req)
			if err != nil {
				done <- err
				return
			}
			if c := resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; c != 0 {
				done <- fmt.Errorf("plain commit %d: error %s", i, protocol.ErrorCode(c))
				return
			}
		}
		done <- nil
	}()
	for i := int64(1); i <= rounds; i++ {
		if codes := txnCommitWire(t, txw, groupID, topic, pid, epoch, 100+i); codes[0] != 0 {
			t.Fatalf("transaction %d: error %s", i, protocol.ErrorCode(codes[0]))
		}
		writeMarker(t, txw, rb.b, groupID, pid, epoch, i%3 != 0)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Every third transaction aborted; the last one (40) committed.
	wantOffsets(t, "final", fetchWire(t, txw, groupID, topic, 2, true), 140, rounds)
	rb.restart(t)
	wantOffsets(t, "after restart", fetchWire(t, dialWire(t, rb.b), groupID, topic, 2, true), 140, rounds)
}
