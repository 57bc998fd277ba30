package storage

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/gregor-io/gregor/protocol/record"
)

// TxnMarker is a COMMIT or ABORT marker a leader writes for a producer when
// the producer's transaction coordinator ends its transaction
// (WriteTxnMarkers).
type TxnMarker struct {
	ProducerID    int64
	ProducerEpoch int16
	// CoordinatorEpoch is the epoch of the coordinator that sends it.
	CoordinatorEpoch int32
	Commit           bool
}

// AppendTxnMarker appends a control batch holding m as a leader with
// leaderEpoch, closing the producer's ongoing transaction here (a marker
// for a producer with none open is written too, and changes nothing but
// the producer's epochs). A producer epoch below the producer's current one
// is ErrInvalidProducerEpoch; a coordinator epoch below that of the
// producer's last marker is ErrTransactionCoordinatorFenced. A higher
// producer epoch becomes the producer's epoch, fencing its older ones.
// Flush as for Append (see AppendResult.NeedsFlush).
func (l *Log) AppendTxnMarker(m TxnMarker, leaderEpoch int32) (AppendResult, error) {
	if m.ProducerID < 0 {
		return AppendResult{}, fmt.Errorf("%w: marker for producer id %d", ErrInvalidTxnState, m.ProducerID)
	}
	b := record.BuildEndTxnMarker(nil, m.ProducerID, m.ProducerEpoch,
		record.EndTxnMarker{Commit: m.Commit, CoordinatorEpoch: m.CoordinatorEpoch}, l.now().UnixMilli())
	return l.Append(b, AppendOptions{AssignOffsets: true, LeaderEpoch: leaderEpoch})
}

// checkControlLocked applies the leader's checks to a control batch about
// to be appended: only COMMIT and ABORT markers, with the producer and
// coordinator epoch rules of producerState.checkMarker.
func (l *Log) checkControlLocked(b record.Batch) error {
	_, m, ok, err := record.ParseControl(b)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: control batch that is no transaction marker", record.ErrInvalidRecord)
	}
	return l.producers.checkMarker(b.ProducerID(), b.ProducerEpoch(), m.CoordinatorEpoch)
}

// publishTxnLocked recomputes the first unstable offset after a change of
// the producer state or of the high watermark.
func (l *Log) publishTxnLocked() {
	l.firstUnstable.Store(l.producers.firstUnstable(l.hw.Load().offset))
}

// LastStableOffset is the offset a read_committed reader reads up to: the
// high watermark, or the first offset of the earliest transaction that is
// open or whose marker is not below the high watermark yet, if lower.
// Below it every transaction is decided and its marker replicated. A
// transaction whose first offset retention or DeleteRecords removed counts
// from the log start, as nothing below it can be read.
func (l *Log) LastStableOffset() int64 {
	return lastStable(l.firstUnstable.Load(), l.logStart.Load(), l.hw.Load().offset)
}

func lastStable(firstUnstable, logStart, hw int64) int64 {
	return min(max(firstUnstable, logStart), hw)
}

// OngoingTxn returns the first offset of the producer's open transaction
// on this partition; ok is false when it has none.
func (l *Log) OngoingTxn(producerID int64) (firstOffset int64, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.producers == nil {
		return 0, false
	}
	return l.producers.ongoingTxn(producerID)
}

// AbortedTransactions returns the aborted transactions that overlap the
// offsets [from, upTo): those whose marker is at or above from and whose
// first offset is below upTo, oldest marker first. A read_committed fetch
// asks for them over what it returns (upTo at most the last stable offset)
// and the consumer drops their records. A marker lies at or above its
// transaction's records, so the search starts at the segment holding from
// and stops at the first entry recording a last stable offset at or above
// upTo: no later transaction overlaps. With upTo at most the last stable
// offset, a transaction overlapping the range is decided and its marker
// lies below the high watermark, so no segment from there on is read.
func (l *Log) AbortedTransactions(from, upTo int64) ([]AbortedTxn, error) {
	if err := l.Err(); err != nil {
		return nil, err
	}
	limit := int64(math.MaxInt64)
	if upTo <= l.LastStableOffset() {
		limit = l.hw.Load().offset
	}
	var out []AbortedTxn
	segs := *l.segs.Load()
	for i := segmentFor(segs, from); i < len(segs); i++ {
		s := segs[i]
		if s.base >= limit {
			break
		}
		buf, err := l.segmentTxnIndex(s)
		if err != nil {
			if s.deleted.Load() {
				continue // deleted under us: its offsets are below the log start
			}
			return nil, err
		}
		for j := 0; j < len(buf)/txnEntrySize; j++ {
			a := readTxnEntry(buf, j)
			if a.LastOffset >= from && a.FirstOffset < upTo {
				out = append(out, a)
			}
			if a.LastStableOffset >= upTo {
				return out, nil
			}
		}
	}
	return out, nil
}

// ProducerInfo is one producer's state on a partition, as
// DescribeProducers reports it.
type ProducerInfo struct {
	ProducerID    int64
	ProducerEpoch int16
	// LastSequence and LastTimestamp are those of the producer's last
	// data batch kept in the state; -1 when it has none (only markers).
	LastSequence  int32
	LastTimestamp int64
	// CoordinatorEpoch is that of the producer's last marker; -1 before
	// any.
	CoordinatorEpoch int32
	// TxnStartOffset is the first offset of the producer's open
	// transaction; -1 when none is open.
	TxnStartOffset int64
}

// Producers returns the state of every producer the partition knows,
// by producer id.
func (l *Log) Producers() []ProducerInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.producers == nil {
		return nil
	}
	out := make([]ProducerInfo, 0, len(l.producers.entries))
	for pid, e := range l.producers.entries {
		pi := ProducerInfo{ProducerID: pid, ProducerEpoch: e.epoch, LastSequence: -1, LastTimestamp: -1,
			CoordinatorEpoch: e.coordinatorEpoch, TxnStartOffset: e.txnFirst}
		if n := len(e.batches); n > 0 {
			pi.LastSequence, pi.LastTimestamp = e.batches[n-1].lastSeq, e.batches[n-1].timestamp
		}
		out = append(out, pi)
	}
	slices.SortFunc(out, func(a, b ProducerInfo) int { return cmp.Compare(a.ProducerID, b.ProducerID) })
	return out
}

// VerificationGuard starts (or goes on with) the verification of producer
// pid's next transactional write to this partition (KIP-890), a write at
// producer epoch epoch whose first sequence is seq (record.NoSequence for
// a write without one). When the producer has a transaction open here at
// that epoch, or at a later one (the append then refuses the stale write),
// there is nothing to verify: inTxn. When its open transaction is of an
// earlier epoch, the write is one of a transaction version 2 producer
// whose previous transaction ended (every end bumps the epoch) before that
// end's marker reached this partition: earlier, and the write would join
// the transaction the marker ends; it must wait for the marker (pending;
// the coordinator answers CONCURRENT_TRANSACTIONS meanwhile too).
// Otherwise it returns the producer's guard, a token a marker for the
// producer or the start of its transaction here clears. The caller asks
// the transaction coordinator whether the partition is in the producer's
// transaction, and appends with AppendOptions{VerifyTxn: true, Guard:
// guard}: a marker written meanwhile (the transaction ended) makes that
// append fail, and so does a write that would begin the transaction above
// the lowest sequence verified at its epoch (OUT_OF_ORDER_SEQUENCE_NUMBER,
// which the producer retries after its earlier batch).
func (l *Log) VerificationGuard(pid int64, epoch int16, seq int32) (guard uint64, inTxn, pending bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.producers == nil {
		return 0, false, false
	}
	if _, ok := l.producers.ongoing[pid]; ok {
		if e := l.producers.entries[pid]; e != nil && e.epoch < epoch {
			return 0, false, true
		}
		return 0, true, false
	}
	v, ok := l.producers.guards[pid]
	if !ok {
		l.producers.lastGuard++
		v = verification{guard: l.producers.lastGuard, epoch: epoch, lowestSeq: seq}
	}
	switch {
	case epoch > v.epoch:
		v.epoch, v.lowestSeq = epoch, seq
	case epoch == v.epoch && seq != record.NoSequence && (v.lowestSeq == record.NoSequence || seq < v.lowestSeq):
		v.lowestSeq = seq
	}
	l.producers.guards[pid] = v
	return v.guard, false, false
}
