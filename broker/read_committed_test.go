package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/protocol/record"
)

// noTxnVerification turns off the leader's verification of transactional
// writes with their coordinator, for tests that write markers by hand.
func noTxnVerification(c *Config) { c.TransactionPartitionVerification = false }

// txnHeader is the header of a transactional producer's batch.
func txnHeader(pid int64, epoch int16, seq int32) record.BatchHeader {
	h := idempotentHeader(pid, epoch, seq)
	h.Transactional = true
	return h
}

// writeMarker sends WriteTxnMarkers v1 for one partition and returns its
// error code.
func (w *wireConn) writeMarker(topic string, partition int32, pid int64, epoch int16, coordinatorEpoch int32, commit bool) protocol.ErrorCode {
	w.t.Helper()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.SetVersion(1)
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Committed = pid, epoch, coordinatorEpoch, commit
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = topic, []int32{partition}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	resp := w.mustRoundTrip(req).(*kmsg.WriteTxnMarkersResponse)
	if len(resp.Markers) != 1 || resp.Markers[0].ProducerID != pid || len(resp.Markers[0].Topics) != 1 ||
		len(resp.Markers[0].Topics[0].Partitions) != 1 || resp.Markers[0].Topics[0].Partitions[0].Partition != partition {
		w.t.Fatalf("write markers response does not mirror the request: %+v", resp)
	}
	return protocol.ErrorCode(resp.Markers[0].Topics[0].Partitions[0].ErrorCode)
}

// fetchIsolated fetches one partition from offset with the isolation level.
func (w *wireConn) fetchIsolated(topic string, offset int64, isolation int8) kmsg.FetchResponseTopicPartition {
	w.t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.ReplicaID = -1
	req.MaxBytes = 1 << 20
	req.SessionEpoch = -1
	req.IsolationLevel = isolation
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes = offset, 1<<20
	rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = -1, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := w.mustRoundTrip(req).(*kmsg.FetchResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		w.t.Fatalf("fetch response has %d topics, want 1 with 1 partition (error %d)", len(resp.Topics), resp.ErrorCode)
	}
	return resp.Topics[0].Partitions[0]
}

// latestOffset asks ListOffsets v7 for partition 0's latest offset.
func (w *wireConn) latestOffset(topic string, isolation int8) int64 {
	w.t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(7)
	req.ReplicaID = -1
	req.IsolationLevel = isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp, rp.CurrentLeaderEpoch = -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := w.mustRoundTrip(req).(*kmsg.ListOffsetsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		w.t.Fatalf("list offsets: %+v", resp)
	}
	return resp.Topics[0].Partitions[0].Offset
}

// describeProducers asks DescribeProducers for one partition.
func (w *wireConn) describeProducers(topic string, partition int32) kmsg.DescribeProducersResponseTopicPartition {
	w.t.Helper()
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	req.Topics = append(req.Topics, rt)
	resp := w.mustRoundTrip(req).(*kmsg.DescribeProducersResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].Partition != partition {
		w.t.Fatalf("describe producers response does not mirror the request: %+v", resp)
	}
	return resp.Topics[0].Partitions[0]
}

// TestTransactionalProduceAndReadCommitted drives one partition's half of
// transactions by hand (the coordinator's part is WriteTxnMarkers): an open
// transaction holds the last stable offset, a COMMIT marker releases its
// records to read_committed readers, an ABORT marker lists them as aborted,
// and a franz-go read_committed consumer reads exactly the committed
// records. No coordinator knows of these transactions, so the leader's
// verification with one is off.
func TestTransactionalProduceAndReadCommitted(t *testing.T) {
	t.Parallel()
	b := startBroker(t, noTxnVerification)
	w := dialWire(t, b)
	const topic = "txn-data"
	w.createTopic(topic, 1, nil)
	pid, epoch := w.initProducerID()

	if rp := w.producePartition(-1, topic, 0, buildBatch(t, txnHeader(-1, -1, -1), "nopid", 1)); protocol.ErrorCode(rp.ErrorCode) != protocol.InvalidRecord {
		t.Fatalf("transactional batch without a producer id: error %d, want INVALID_RECORD", rp.ErrorCode)
	}
	if rp := w.producePartition(-1, topic, 0, buildBatch(t, txnHeader(pid, epoch, 0), "a", 3)); rp.ErrorCode != 0 || rp.BaseOffset != 0 {
		t.Fatalf("first transactional batch: error %d at %d", rp.ErrorCode, rp.BaseOffset)
	}
	if rp := w.producePartition(-1, topic, 0, buildBatch(t, idempotentHeader(pid, epoch, 3), "x", 1)); protocol.ErrorCode(rp.ErrorCode) != protocol.InvalidTxnState {
		t.Fatalf("non-transactional batch inside a transaction: error %d, want INVALID_TXN_STATE", rp.ErrorCode)
	}
	dp := w.describeProducers(topic, 0)
	if dp.ErrorCode != 0 || len(dp.ActiveProducers) != 1 || dp.ActiveProducers[0].ProducerID != pid ||
		dp.ActiveProducers[0].CurrentTxnStartOffset != 0 || dp.ActiveProducers[0].LastSequence != 2 || dp.ActiveProducers[0].CoordinatorEpoch != -1 {
		t.Fatalf("describe producers in the transaction: %+v", dp)
	}
	if dp := w.describeProducers("no-such-topic", 0); protocol.ErrorCode(dp.ErrorCode) != protocol.UnknownTopicOrPartition {
		t.Fatalf("describe producers of an unknown topic: error %d", dp.ErrorCode)
	}
	// The open transaction holds read_committed readers at its start.
	rp := w.fetchIsolated(topic, 0, 1)
	if rp.ErrorCode != 0 || rp.HighWatermark != 3 || rp.LastStableOffset != 0 || len(rp.RecordBatches) != 0 || rp.AbortedTransactions == nil {
		t.Fatalf("read_committed fetch with an open transaction: error %d hw %d lso %d, %d bytes, aborted %v",
			rp.ErrorCode, rp.HighWatermark, rp.LastStableOffset, len(rp.RecordBatches), rp.AbortedTransactions)
	}
	if rp := w.fetchIsolated(topic, 0, 0); len(rp.RecordBatches) == 0 || rp.LastStableOffset != 0 || rp.AbortedTransactions != nil {
		t.Fatalf("read_uncommitted fetch: %d bytes, lso %d, aborted %v", len(rp.RecordBatches), rp.LastStableOffset, rp.AbortedTransactions)
	}
	if got, want := w.latestOffset(topic, 1), int64(0); got != want {
		t.Fatalf("read_committed latest offset %d, want %d", got, want)
	}
	if got, want := w.latestOffset(topic, 0), int64(3); got != want {
		t.Fatalf("read_uncommitted latest offset %d, want %d", got, want)
	}

	if code := w.writeMarker(topic, 0, pid, epoch, 5, true); code != protocol.None {
		t.Fatalf("COMMIT marker: error %d", code)
	}
	rp = w.fetchIsolated(topic, 0, 1)
	if rp.ErrorCode != 0 || rp.HighWatermark != 4 || rp.LastStableOffset != 4 || len(rp.RecordBatches) == 0 || len(rp.AbortedTransactions) != 0 {
		t.Fatalf("read_committed fetch after the commit: error %d hw %d lso %d, %d bytes, aborted %v",
			rp.ErrorCode, rp.HighWatermark, rp.LastStableOffset, len(rp.RecordBatches), rp.AbortedTransactions)
	}

	dp = w.describeProducers(topic, 0)
	if len(dp.ActiveProducers) != 1 || dp.ActiveProducers[0].CurrentTxnStartOffset != -1 || dp.ActiveProducers[0].CoordinatorEpoch != 5 {
		t.Fatalf("describe producers after the commit: %+v", dp)
	}
	// A second transaction, aborted.
	if rp := w.producePartition(-1, topic, 0, buildBatch(t, txnHeader(pid, epoch, 3), "b", 2)); rp.ErrorCode != 0 || rp.BaseOffset != 4 {
		t.Fatalf("second transaction: error %d at %d", rp.ErrorCode, rp.BaseOffset)
	}
	if code := w.writeMarker(topic, 0, pid, epoch, 4, false); code != protocol.TransactionCoordinatorFenced {
		t.Fatalf("marker from an older coordinator epoch: error %d, want TRANSACTION_COORDINATOR_FENCED", code)
	}
	if code := w.writeMarker(topic, 0, pid, epoch, 5, false); code != protocol.None {
		t.Fatalf("ABORT marker: error %d", code)
	}
	rp = w.fetchIsolated(topic, 0, 1)
	if rp.LastStableOffset != 7 || len(rp.AbortedTransactions) != 1 || rp.AbortedTransactions[0].ProducerID != pid || rp.AbortedTransactions[0].FirstOffset != 4 {
		t.Fatalf("read_committed fetch after the abort: lso %d, aborted %+v, want [{%d 4}] at lso 7", rp.LastStableOffset, rp.AbortedTransactions, pid)
	}
	if rp := w.fetchIsolated(topic, 7, 1); len(rp.AbortedTransactions) != 0 {
		t.Fatalf("read_committed fetch past the aborted transaction lists %+v", rp.AbortedTransactions)
	}

	// A marker with a higher producer epoch (the coordinator fencing the
	// producer) ends the old epoch: its writes are refused from then on.
	if code := w.writeMarker(topic, 0, pid, epoch+1, 5, false); code != protocol.None {
		t.Fatalf("fencing ABORT marker: error %d", code)
	}
	if rp := w.producePartition(-1, topic, 0, buildBatch(t, txnHeader(pid, epoch, 5), "z", 1)); protocol.ErrorCode(rp.ErrorCode) != protocol.InvalidProducerEpoch {
		t.Fatalf("write of a fenced epoch: error %d, want INVALID_PRODUCER_EPOCH", rp.ErrorCode)
	}
	if code := w.writeMarker(topic, 0, pid, epoch, 5, true); code != protocol.InvalidProducerEpoch {
		t.Fatalf("marker of a fenced epoch: error %d, want INVALID_PRODUCER_EPOCH", code)
	}
	if code := w.writeMarker("no-such-topic", 0, pid, epoch+1, 5, true); code != protocol.UnknownTopicOrPartition {
		t.Fatalf("marker for an unknown topic: error %d, want UNKNOWN_TOPIC_OR_PARTITION", code)
	}
	// Plain records after it all.
	if rp := w.producePartition(-1, topic, 0, buildBatch(t, plainHeader(), "c", 2)); rp.ErrorCode != 0 {
		t.Fatalf("plain batch: error %d", rp.ErrorCode)
	}

	// A real read_committed consumer drops the aborted records and the
	// markers; a read_uncommitted one reads every data record.
	read := func(isolation kgo.IsolationLevel, want int) []string {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cl := newClient(t, b, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(isolation),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		var got []string
		for len(got) < want {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("consumed %v, want %d records: %v", got, want, err)
			}
			fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		return got
	}
	if got, want := read(kgo.ReadCommitted(), 5), []string{"a-0", "a-1", "a-2", "c-0", "c-1"}; !slices.Equal(got, want) {
		t.Fatalf("read_committed consumer read %v, want %v", got, want)
	}
	if got, want := read(kgo.ReadUncommitted(), 7), []string{"a-0", "a-1", "a-2", "b-0", "b-1", "c-0", "c-1"}; !slices.Equal(got, want) {
		t.Fatalf("read_uncommitted consumer read %v, want %v", got, want)
	}
}

// TestTransactionsReplicate: on three brokers, the followers of a
// partition get its transactional batches and markers, and with them the
// same last stable offset and aborted transactions as the leader; after
// the leader stops, the new leader serves read_committed as the old one
// did, and a transaction left open before the change still holds the last
// stable offset until its marker comes.
func TestTransactionsReplicate(t *testing.T) {
	t.Parallel()
	bs := startCluster(t, 3, noTxnVerification)
	w := dialWire(t, bs[0])
	const topic = "txn-repl"
	rt := w.createTopicResultAssigned(topic, [][]int32{{1, 2, 3}}, map[string]string{"min.insync.replicas": "2"})
	checkCode(t, "create", rt.ErrorCode, protocol.None)
	waitISR(t, bs[0], topic, 0, "[1 2 3]")
	pid, epoch := w.initProducerID()
	pid2, epoch2 := w.initProducerID()

	rp := w.producePartition(-1, topic, 0, buildBatch(t, txnHeader(pid, epoch, 0), "aborted", 2))
	checkCode(t, "produce", rp.ErrorCode, protocol.None)
	checkCode(t, "abort", int16(w.writeMarker(topic, 0, pid, epoch, 1, false)), protocol.None)
	rp = w.producePartition(-1, topic, 0, buildBatch(t, txnHeader(pid, epoch, 2), "committed", 2))
	checkCode(t, "produce", rp.ErrorCode, protocol.None)
	checkCode(t, "commit", int16(w.writeMarker(topic, 0, pid, epoch, 1, true)), protocol.None)
	rp = w.producePartition(-1, topic, 0, buildBatch(t, txnHeader(pid2, epoch2, 0), "open", 1))
	checkCode(t, "produce", rp.ErrorCode, protocol.None)
	// Offsets: aborted 0-1, ABORT 2, committed 3-4, COMMIT 5, open 6.

	leader := bs[0].parts.Load().byName[topic][0].log()
	for _, b := range bs[1:] {
		l := b.parts.Load().byName[topic][0].log()
		waitFor(t, 20*time.Second, fmt.Sprintf("broker %d at the leader's high watermark", b.cfg.NodeID), func() error {
			if got, want := l.HighWatermark(), leader.HighWatermark(); got != want || got != 7 {
				return fmt.Errorf("at %d, leader at %d", got, want)
			}
			return nil
		})
		if got := l.LastStableOffset(); got != 6 {
			t.Fatalf("broker %d: last stable offset %d, want 6 (the open transaction's start)", b.cfg.NodeID, got)
		}
		ab, err := l.AbortedTransactions(0, 6)
		if err != nil || len(ab) != 1 || ab[0].ProducerID != pid || ab[0].FirstOffset != 0 || ab[0].LastOffset != 2 {
			t.Fatalf("broker %d: aborted transactions %+v (%v), want producer %d over [0, 2]", b.cfg.NodeID, ab, err, pid)
		}
	}

	if err := bs[0].Close(); err != nil {
		t.Fatal(err)
	}
	var nl *Broker
	waitFor(t, 30*time.Second, "a new leader", func() error {
		st := bs[1].cluster.Snapshot().Topics[topic].Partitions[0]
		for _, b := range bs[1:] {
			if st.Leader == b.cfg.NodeID && b.parts.Load().byName[topic][0].lead.Load() != nil {
				nl = b
				return nil
			}
		}
		return fmt.Errorf("leader %d", st.Leader)
	})
	w2 := dialWire(t, nl)
	got := w2.fetchIsolated(topic, 0, 1)
	if got.ErrorCode != 0 || got.LastStableOffset != 6 || len(got.AbortedTransactions) != 1 || got.AbortedTransactions[0].FirstOffset != 0 {
		t.Fatalf("read_committed on the new leader: error %d lso %d aborted %+v", got.ErrorCode, got.LastStableOffset, got.AbortedTransactions)
	}
	checkCode(t, "commit the open transaction on the new leader", int16(w2.writeMarker(topic, 0, pid2, epoch2, 1, true)), protocol.None)
	if got := w2.fetchIsolated(topic, 0, 1); got.LastStableOffset != 8 {
		t.Fatalf("last stable offset after the open transaction's commit: %d, want 8", got.LastStableOffset)
	}
}

// A follower answers DescribeProducers from its own log, as Kafka's
// replicas do: find-hanging --broker-id asks a broker about every
// partition it holds, followed ones included.
func TestDescribeProducersOnFollowers(t *testing.T) {
	t.Parallel()
	bs := startCluster(t, 3)
	ctx := testContext(t, time.Minute)
	var seeds []string
	for _, b := range bs {
		seeds = append(seeds, b.Addrs()...)
	}
	cl := newClient(t, bs[0], kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("dp"))
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 3, nil, "dp"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "a full ISR", func() error {
		if st := bs[0].cluster.Snapshot().Topics["dp"]; st == nil || len(st.Partitions[0].ISR) != 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err := cl.ProduceSync(ctx, kgo.StringRecord("a"), kgo.StringRecord("b")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		waitFor(t, 30*time.Second, fmt.Sprintf("broker %d to describe the producer", b.cfg.NodeID), func() error {
			rp := dialWire(t, b).describeProducers("dp", 0)
			if rp.ErrorCode != 0 {
				return fmt.Errorf("error code %d", rp.ErrorCode)
			}
			if len(rp.ActiveProducers) != 1 || rp.ActiveProducers[0].LastSequence != 1 {
				return fmt.Errorf("active producers %+v, want one at last sequence 1", rp.ActiveProducers)
			}
			return nil
		})
	}
}
