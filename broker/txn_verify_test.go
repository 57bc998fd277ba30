package broker

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
)

// produceTxn sends one transactional batch of a producer as a produce
// request of transactional id id (acks=all, Produce v11) and returns its
// error code.
func (w *wireConn) produceTxn(id, topic string, partition int32, pid int64, epoch int16, seq int32, prefix string) protocol.ErrorCode {
	w.t.Helper()
	return w.produceTxnV(11, id, topic, partition, pid, epoch, seq, prefix)
}

// produceTxnV is produceTxn at Produce version v.
func (w *wireConn) produceTxnV(v int16, id, topic string, partition int32, pid int64, epoch int16, seq int32, prefix string) protocol.ErrorCode {
	w.t.Helper()
	req := produceReq(v, -1, topic, partition, buildBatch(w.t, txnHeader(pid, epoch, seq), prefix, 2))
	req.TransactionID = &id
	resp := w.mustRoundTrip(req).(*kmsg.ProduceResponse)
	return protocol.ErrorCode(resp.Topics[0].Partitions[0].ErrorCode)
}

// TestTxnProduceVerification (KIP-890 part 1): a leader appends a
// producer's first transactional write to a partition only once the
// coordinator says the partition is in the producer's transaction; a
// write that comes after its transaction was aborted (a late retry of a
// zombie) is refused instead of opening a transaction nobody will end,
// and the partition's last stable offset is not held by it.
func TestTxnProduceVerification(t *testing.T) {
	t.Parallel()
	b := startBroker(t, smallTxnTopic)
	w := dialWire(t, b)
	const topic, id = "verified", "verify-txn"
	w.createTopic(topic, 2, nil)
	w.findTxnCoordinator(id) // creates __transaction_state
	pid, epoch := w.initTxn(id, 4)

	// Produce v11 knows TRANSACTION_ABORTABLE; older versions get
	// INVALID_TXN_STATE.
	if code := w.produceTxn(id, topic, 0, pid, epoch, 0, "unadded"); code != protocol.TransactionAbortable {
		t.Fatalf("write to a partition not in the transaction: %s, want TRANSACTION_ABORTABLE", code)
	}
	if code := w.produceTxnV(10, id, topic, 0, pid, epoch, 0, "unadded"); code != protocol.InvalidTxnState {
		t.Fatalf("v10 write to a partition not in the transaction: %s, want INVALID_TXN_STATE", code)
	}
	if code := w.addPartition(3, id, pid, epoch, topic, 0); code != protocol.None {
		t.Fatalf("add partition: %s", code)
	}
	if code := w.produceTxn(id, topic, 0, pid, epoch, 0, "added"); code != protocol.None {
		t.Fatalf("write to an added partition: %s", code)
	}
	// Inside the transaction no more verification is needed; a write to
	// the other, unadded partition is still refused.
	if code := w.produceTxn(id, topic, 0, pid, epoch, 2, "more"); code != protocol.None {
		t.Fatalf("second write: %s", code)
	}
	if code := w.produceTxn(id, topic, 1, pid, epoch, 0, "other"); code != protocol.TransactionAbortable {
		t.Fatalf("write to the other partition: %s, want TRANSACTION_ABORTABLE", code)
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.SetVersion(3)
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, pid, epoch, false
	if resp := w.mustRoundTrip(end).(*kmsg.EndTxnResponse); resp.ErrorCode != 0 {
		t.Fatalf("abort: %s", protocol.ErrorCode(resp.ErrorCode))
	}
	l := b.parts.Load().byName[topic][0].log()
	waitFor(t, 10*time.Second, "the abort's marker", func() error {
		if _, open := l.OngoingTxn(pid); open {
			return errors.New("transaction still open")
		}
		return nil
	})
	// Until the coordinator has completed the abort it answers
	// CONCURRENT_TRANSACTIONS, which the producer gets as the retriable
	// NOT_ENOUGH_REPLICAS; then the late write is refused for good.
	waitFor(t, 10*time.Second, "the abort completed", func() error {
		if st := w.describeTxn(id).State; st != "CompleteAbort" {
			return errors.New(st)
		}
		return nil
	})
	// A late write of the aborted transaction (same producer epoch).
	if code := w.produceTxn(id, topic, 0, pid, epoch, 4, "late"); code != protocol.TransactionAbortable {
		t.Fatalf("late write after the abort: %s, want TRANSACTION_ABORTABLE", code)
	}
	if _, open := l.OngoingTxn(pid); open {
		t.Fatal("the late write opened a transaction")
	}
	if lso, hw := l.LastStableOffset(), l.HighWatermark(); lso != hw {
		t.Fatalf("last stable offset %d below the high watermark %d after the abort", lso, hw)
	}
	// A request naming no transaction cannot carry transactional records.
	req := produceReq(11, -1, topic, 1, buildBatch(t, txnHeader(pid, epoch, 0), "anonymous", 1))
	if code := protocol.ErrorCode(w.mustRoundTrip(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode); code != protocol.InvalidTxnState {
		t.Fatalf("transactional records without a transactional id: %s, want INVALID_TXN_STATE", code)
	}
}

// TestTxnVerificationCodes: coordinator refusals a producer should retry
// reach it as NOT_ENOUGH_REPLICAS, as Kafka answers them, and
// TRANSACTION_ABORTABLE only clients that know it.
func TestTxnVerificationCodes(t *testing.T) {
	for in, want := range map[protocol.ErrorCode]protocol.ErrorCode{
		protocol.ProducerFenced:            protocol.InvalidProducerEpoch,
		protocol.TransactionAbortable:      protocol.InvalidTxnState,
		protocol.ConcurrentTransactions:    protocol.NotEnoughReplicas,
		protocol.CoordinatorLoadInProgress: protocol.NotEnoughReplicas,
		protocol.CoordinatorNotAvailable:   protocol.NotEnoughReplicas,
		protocol.NotCoordinator:            protocol.NotEnoughReplicas,
		protocol.NetworkException:          protocol.NotEnoughReplicas,
		protocol.InvalidTxnState:           protocol.InvalidTxnState,
		protocol.InvalidProducerEpoch:      protocol.InvalidProducerEpoch,
	} {
		if got := verificationCode(in, false); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
		if in == protocol.TransactionAbortable {
			want = in
		}
		if got := verificationCode(in, true); got != want {
			t.Errorf("%s (client knows TRANSACTION_ABORTABLE): %s, want %s", in, got, want)
		}
	}
}
