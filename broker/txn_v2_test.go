package broker

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
)

// endTxnV5 sends EndTxn v5 and returns its answer.
func (w *wireConn) endTxnV5(id string, pid int64, epoch int16, commit bool) *kmsg.EndTxnResponse {
	w.t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.SetVersion(5)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	return w.mustRoundTrip(req).(*kmsg.EndTxnResponse)
}

// produceTxnRetry sends one transactional batch at Produce version v,
// again while the answer is the retriable NOT_ENOUGH_REPLICAS, and returns
// the partition's answer.
func (w *wireConn) produceTxnRetry(v int16, id, topic string, partition int32, pid int64, epoch int16, seq int32, prefix string) kmsg.ProduceResponseTopicPartition {
	w.t.Helper()
	var out kmsg.ProduceResponseTopicPartition
	waitFor(w.t, 10*time.Second, "a transactional write past NOT_ENOUGH_REPLICAS", func() error {
		req := produceReq(v, -1, topic, partition, buildBatch(w.t, txnHeader(pid, epoch, seq), prefix, 2))
		req.TransactionID = &id
		out = w.mustRoundTrip(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if code := protocol.ErrorCode(out.ErrorCode); code == protocol.NotEnoughReplicas {
			return errors.New(code.String())
		}
		return nil
	})
	return out
}

// TestTxnVersion2 (KIP-890 part 2): with transaction.version 2 finalized,
// a producer sends no AddPartitionsToTxn or AddOffsetsToTxn: the leader of
// each partition it writes to with Produce v12+ adds that partition to its
// transaction, and the group coordinator adds the offsets partition for
// TxnOffsetCommit v5. Every EndTxn v5 bumps the epoch; the next
// transaction's first write waits for the previous one's marker instead
// of joining the transaction it ends; an abort with nothing open bumps the
// epoch too; and the old epoch is fenced.
func TestTxnVersion2(t *testing.T) {
	t.Parallel()
	b := startBroker(t, smallTxnTopic, fastGroups)
	w := dialWire(t, b)
	const topic, id, groupID = "tv2", "tv2-txn", "tv2-group"
	w.createTopic(topic, 2, nil)
	w.findTxnCoordinator(id)
	findGroupCoordinator(t, w, groupID)
	pid, epoch := w.initTxn(id, 5)
	l := b.parts.Load().byName[topic][0].log()

	// Produce v12 adds the partition; v11 (transaction version 1
	// clients, which add partitions themselves) does not.
	if rp := w.produceTxnRetry(12, id, topic, 0, pid, epoch, 0, "first"); rp.ErrorCode != 0 {
		t.Fatalf("Produce v12 to a partition not added: %s", protocol.ErrorCode(rp.ErrorCode))
	}
	if code := w.produceTxnV(11, id, topic, 1, pid, epoch, 0, "v11"); code != protocol.TransactionAbortable {
		t.Fatalf("Produce v11 to a partition not added: %s, want TRANSACTION_ABORTABLE", code)
	}
	if st := w.describeTxn(id); st.State != "Ongoing" || len(st.Topics) != 1 || fmt.Sprint(st.Topics[0].Partitions) != "[0]" {
		t.Fatalf("after the v12 write: %+v, want Ongoing with %s-0", st, topic)
	}
	// TxnOffsetCommit v5 adds the group's offsets partition.
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.SetVersion(5)
	commit.TransactionalID, commit.Group, commit.ProducerID, commit.ProducerEpoch = id, groupID, pid, epoch
	commit.Generation, commit.MemberID = -1, ""
	commit.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 2, LeaderEpoch: -1}}}}
	if c := w.mustRoundTrip(commit).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatalf("TxnOffsetCommit v5: %s", protocol.ErrorCode(c))
	}
	if st := w.describeTxn(id); len(st.Topics) != 2 {
		t.Fatalf("after TxnOffsetCommit v5: %+v, want the offsets partition added", st)
	}

	// Commit: the next epoch comes back.
	r := w.endTxnV5(id, pid, epoch, true)
	if r.ErrorCode != 0 || r.ProducerID != pid || r.ProducerEpoch != epoch+1 {
		t.Fatalf("EndTxn v5 commit: %+v, want producer %d epoch %d", r, pid, epoch+1)
	}
	// The next transaction's first write, sent at once: it waits for the
	// commit's marker (for add.partitions.to.txn.retry.backoff.max.ms,
	// then NOT_ENOUGH_REPLICAS and the client sends it again), then it
	// begins a transaction of its own.
	rp := w.produceTxnRetry(12, id, topic, 0, pid, epoch+1, 0, "second")
	if rp.ErrorCode != 0 {
		t.Fatalf("first write of the next transaction: %s", protocol.ErrorCode(rp.ErrorCode))
	}
	waitFor(t, 10*time.Second, "the first transaction complete", func() error {
		if st := w.describeTxn(id).State; st != "Ongoing" {
			return errors.New(st)
		}
		return nil
	})
	if first, open := l.OngoingTxn(pid); !open || first != rp.BaseOffset {
		t.Fatalf("the second transaction's write at %d: open transaction from %d (%v), want one of its own", rp.BaseOffset, first, open)
	}
	// Abort it: read_committed is told the second transaction aborted.
	r = w.endTxnV5(id, pid, epoch+1, false)
	if r.ErrorCode != 0 || r.ProducerEpoch != epoch+2 {
		t.Fatalf("EndTxn v5 abort: %+v", r)
	}
	waitFor(t, 10*time.Second, "the abort complete", func() error {
		if st := w.describeTxn(id).State; st != "CompleteAbort" {
			return errors.New(st)
		}
		return nil
	})
	rc := w.fetchIsolated(topic, 0, 1)
	if len(rc.AbortedTransactions) != 1 || rc.AbortedTransactions[0].FirstOffset != rp.BaseOffset ||
		rc.LastStableOffset != rc.HighWatermark {
		t.Fatalf("read_committed: aborted %+v, last stable offset %d, high watermark %d; want the second transaction from %d aborted and nothing open",
			rc.AbortedTransactions, rc.LastStableOffset, rc.HighWatermark, rp.BaseOffset)
	}
	// An abort with nothing open bumps the epoch; a commit is refused.
	if r := w.endTxnV5(id, pid, epoch+2, false); r.ErrorCode != 0 || r.ProducerEpoch != epoch+3 {
		t.Fatalf("empty abort: %+v", r)
	}
	if r := w.endTxnV5(id, pid, epoch+3, true); r.ErrorCode != int16(protocol.InvalidTxnState) {
		t.Fatalf("empty commit: %s", protocol.ErrorCode(r.ErrorCode))
	}
	// An older epoch is fenced.
	if code := w.produceTxnV(12, id, topic, 1, pid, epoch+2, 0, "zombie"); code != protocol.InvalidProducerEpoch {
		t.Fatalf("write at a fenced epoch: %s, want INVALID_PRODUCER_EPOCH", code)
	}
}

// TestTxnVersion2NextTransactionWaits: a transaction version 2 producer
// begins its next transaction at once after EndTxn, often before the
// markers of the last one are written. The leader adding the partition
// tries again meanwhile (add.partitions.to.txn.retry.backoff.max.ms, here
// 10 s) instead of answering NOT_ENOUGH_REPLICAS, which costs franz-go a
// 5 s metadata refresh per transaction: every first write of 20
// transactions in a row is accepted at once.
func TestTxnVersion2NextTransactionWaits(t *testing.T) {
	t.Parallel()
	b := startBroker(t, smallTxnTopic, fastGroups, func(c *Config) { c.AddPartitionsRetryMax = 10 * time.Second })
	w := dialWire(t, b)
	const topic, id = "tv2-next", "tv2-next-txn"
	w.createTopic(topic, 1, nil)
	w.findTxnCoordinator(id)
	pid, epoch := w.initTxn(id, 5)
	if rp := w.produceTxnRetry(12, id, topic, 0, pid, epoch, 0, "first"); rp.ErrorCode != 0 {
		t.Fatalf("first write: %s", protocol.ErrorCode(rp.ErrorCode))
	}
	for i := range 20 {
		r := w.endTxnV5(id, pid, epoch, true)
		if r.ErrorCode != 0 || r.ProducerEpoch != epoch+1 {
			t.Fatalf("EndTxn %d: %+v", i, r)
		}
		epoch++
		if code := w.produceTxnV(12, id, topic, 0, pid, epoch, 0, fmt.Sprint("txn-", i)); code != protocol.None {
			t.Fatalf("transaction %d's first write, sent right after EndTxn: %s, want it accepted", i+2, code)
		}
	}
}
