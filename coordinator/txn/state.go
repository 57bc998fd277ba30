package txn

import (
	"cmp"
	"math"
	"slices"
)

// State is a transactional id's state, with the ids Kafka writes to
// __transaction_state (TransactionState in kmsg).
type State int8

// The states of Kafka's TransactionMetadata.
const (
	// StateEmpty: a producer id and epoch are assigned, no transaction is
	// open.
	StateEmpty State = 0
	// StateOngoing: partitions were added; the transaction is open.
	StateOngoing State = 1
	// StatePrepareCommit and StatePrepareAbort: EndTxn (or an abort by
	// the coordinator) is durable; markers are being written.
	StatePrepareCommit State = 2
	StatePrepareAbort  State = 3
	// StateCompleteCommit and StateCompleteAbort: every marker is written.
	StateCompleteCommit State = 4
	StateCompleteAbort  State = 5
	// StateDead: the transactional id is being expired. It is only ever a
	// pending state: a tombstone is written, never this state.
	StateDead State = 6
	// StatePrepareEpochFence: an ongoing transaction is being aborted by
	// the coordinator with a bumped epoch. Kafka holds it only in memory,
	// as a pending state; so does Gregor, in the abort itself.
	StatePrepareEpochFence State = 7
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort",
	"CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// String returns Kafka's name of the state, as DescribeTransactions and
// ListTransactions report it.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// stateByName is the inverse of String, for ListTransactions' filters.
func stateByName(name string) (State, bool) {
	for i, n := range stateNames {
		if n == name {
			return State(i), true
		}
	}
	return 0, false
}

// complete reports whether no transaction is open: the states in which a
// new one may begin and the id may expire.
func (s State) complete() bool {
	return s == StateEmpty || s == StateCompleteCommit || s == StateCompleteAbort
}

func (s State) preparing() bool { return s == StatePrepareCommit || s == StatePrepareAbort }

// expiring reports whether t's tombstone is on its way: Kafka's Dead, which
// DescribeTransactions and ListTransactions treat as gone.
func (t *txn) expiring() bool { return t.pending != nil && t.pending.kind == transitExpire }

const (
	noProducerID    int64 = -1
	noProducerEpoch int16 = -1

	// tv2 is transaction version 2 (KIP-890 part 2): the epoch is bumped
	// at every transaction end. Clients that send EndTxn v5+ or
	// AddPartitionsToTxn v5+ use it.
	tv2 int16 = 2
)

// epochExhausted reports whether an epoch leaves no room for another bump
// (Kafka keeps MaxInt16 for the fencing of an ongoing transaction).
func epochExhausted(e int16) bool { return e >= math.MaxInt16-1 }

// topicPartition names a partition of a transaction.
type topicPartition struct {
	Topic     string
	Partition int32
}

func comparePartitions(a, b topicPartition) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// meta is the durable state of a transactional id: exactly what its record
// holds, plus lastEpoch, which Kafka keeps in memory only (a KIP-360 retry
// across a coordinator change therefore fails, as in Kafka).
type meta struct {
	producerID     int64
	prevProducerID int64 // the producer id before the last rotation, or -1
	nextProducerID int64 // PrepareCommit/PrepareAbort of a TV2 end whose epoch overflowed: the id it rotates to
	epoch          int16
	lastEpoch      int16 // the epoch before the last bump by this producer, or -1
	timeoutMs      int32
	state          State
	partitions     []topicPartition // sorted, no duplicates; empty unless Ongoing or Prepare*
	startMs        int64            // when the open transaction began, -1 none
	lastUpdateMs   int64
	clientTV       int16 // the transaction version of the last client request that set it
}

func (m meta) clone() meta {
	m.partitions = slices.Clone(m.partitions)
	return m
}

func (m *meta) hasPartition(tp topicPartition) bool {
	_, ok := slices.BinarySearchFunc(m.partitions, tp, comparePartitions)
	return ok
}

// addPartitions returns the sorted union of m's partitions and tps.
func (m *meta) withPartitions(tps []topicPartition) []topicPartition {
	out := slices.Clone(m.partitions)
	for _, tp := range tps {
		if i, ok := slices.BinarySearchFunc(out, tp, comparePartitions); !ok {
			out = slices.Insert(out, i, tp)
		}
	}
	return out
}

func (m *meta) removePartition(tp topicPartition) bool {
	i, ok := slices.BinarySearchFunc(m.partitions, tp, comparePartitions)
	if ok {
		m.partitions = slices.Delete(m.partitions, i, i+1)
	}
	return ok
}

// txn is one transactional id.
type txn struct {
	id string
	meta
	// pending is the transition whose record is being made durable, as
	// Kafka's pendingState: while it is set, other requests that would
	// change the id get CONCURRENT_TRANSACTIONS.
	pending *transit
	// fresh marks an id created by an InitProducerId whose first record is
	// not durable yet.
	fresh bool
}

// transitKind says what happens when a transition becomes durable.
type transitKind uint8

const (
	transitInit       transitKind = iota // answer InitProducerId with the new id and epoch
	transitAdd                           // answer AddPartitionsToTxn / AddOffsetsToTxn
	transitEnd                           // answer EndTxn, then write markers
	transitFenceAbort                    // answer InitProducerId with CONCURRENT_TRANSACTIONS (if any), then write markers
	transitComplete                      // nothing to answer: the markers are written
	transitExpire                        // remove the id
)

// transit is a transition of one id waiting for its record to be durable.
type transit struct {
	kind transitKind
	to   meta
}
