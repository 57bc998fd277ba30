package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gregor-io/gregor/protocol/record"
)

// producerBatchesKept is how many recent batches per producer are kept for
// duplicate detection, as Kafka keeps (max.in.flight.requests.per.connection
// may be at most 5 with idempotence).
const producerBatchesKept = 5

// producerBatch is what is remembered of one idempotent batch.
type producerBatch struct {
	firstSeq    int32
	lastSeq     int32
	firstOffset int64
	lastOffset  int64
	timestamp   int64
}

// producerEntry is the state of one producer id on one partition.
type producerEntry struct {
	epoch int16
	// coordinatorEpoch is the epoch of the transaction coordinator that
	// wrote the producer's last marker here; -1 before any.
	coordinatorEpoch int32
	// txnFirst is the first offset of the producer's ongoing transaction;
	// -1 when none is open.
	txnFirst int64
	batches  []producerBatch // oldest first, at most producerBatchesKept
}

func newProducerEntry(epoch int16) *producerEntry {
	return &producerEntry{epoch: epoch, coordinatorEpoch: -1, txnFirst: -1,
		batches: make([]producerBatch, 0, producerBatchesKept)}
}

func (e *producerEntry) lastSeq() int32 {
	if len(e.batches) == 0 {
		return record.NoSequence
	}
	return e.batches[len(e.batches)-1].lastSeq
}

func (e *producerEntry) add(b producerBatch) {
	if len(e.batches) == producerBatchesKept {
		copy(e.batches, e.batches[1:])
		e.batches = e.batches[:producerBatchesKept-1]
	}
	e.batches = append(e.batches, b)
}

func (e *producerEntry) duplicateOf(firstSeq, lastSeq int32) (producerBatch, bool) {
	for _, b := range e.batches {
		if b.firstSeq == firstSeq && b.lastSeq == lastSeq {
			return b, true
		}
	}
	return producerBatch{}, false
}

// producerState is a partition's producer state, guarded by Log.mu: for
// each producer id its epoch, its last five batches, its ongoing
// transaction and the epoch of the coordinator of its last marker.
type producerState struct {
	entries map[int64]*producerEntry
	// ongoing maps the producers with an open transaction to its first
	// offset (their entries' txnFirst).
	ongoing map[int64]int64
	// unreplicated are the transactions completed by a marker at or above
	// the high watermark, in marker order: until the high watermark passes
	// the marker, a new leader may not have it, so they stay unstable.
	unreplicated []completedTxn
	// guards are the verification guards of producers whose next
	// transactional write here is being verified with their transaction
	// coordinator (see Log.VerificationGuard); in memory only.
	guards    map[int64]verification
	lastGuard uint64
}

// verification is a producer's pending verification (KIP-890): its guard,
// and the lowest sequence of the writes verified under it at the newest
// epoch asked. A verified write above that sequence may not begin the
// transaction: a producer with several batches in flight had its first one
// refused (say its verification failed) while a later one was verified, and
// that later batch, landing first, would leave the first out of sequence on
// every retry.
type verification struct {
	guard     uint64
	epoch     int16
	lowestSeq int32
}

// completedTxn is a transaction a marker ended: its first offset and the
// marker's offset.
type completedTxn struct {
	pid         int64
	first, last int64
	aborted     bool
}

// lastOffsets maps each producer id to the last offset of its last batch.
func (ps *producerState) lastOffsets() map[int64]int64 {
	out := make(map[int64]int64, len(ps.entries))
	for pid, e := range ps.entries {
		if n := len(e.batches); n > 0 {
			out[pid] = e.batches[n-1].lastOffset
		}
	}
	return out
}

func newProducerState() *producerState {
	return &producerState{entries: map[int64]*producerEntry{}, ongoing: map[int64]int64{}, guards: map[int64]verification{}}
}

// firstUnstable is the first offset a read_committed reader may not pass:
// the first offset of the earliest transaction still open or completed by
// a marker at or above hw; math.MaxInt64 when there is none. Completed
// transactions whose marker lies below hw are forgotten.
func (ps *producerState) firstUnstable(hw int64) int64 {
	n := 0
	for n < len(ps.unreplicated) && ps.unreplicated[n].last < hw {
		n++
	}
	if n > 0 {
		ps.unreplicated = append(ps.unreplicated[:0], ps.unreplicated[n:]...)
	}
	first := int64(math.MaxInt64)
	for _, o := range ps.ongoing {
		first = min(first, o)
	}
	for _, t := range ps.unreplicated {
		first = min(first, t.first)
	}
	return first
}

// stableAfter is the last stable offset recorded with an aborted
// transaction t that just completed: the first offset of the earliest
// transaction still open, else the offset after t's marker.
func (ps *producerState) stableAfter(t *completedTxn) int64 {
	first := t.last + 1
	for _, o := range ps.ongoing {
		first = min(first, o)
	}
	return first
}

// ongoingTxn returns the first offset of the producer's open transaction.
func (ps *producerState) ongoingTxn(pid int64) (int64, bool) {
	o, ok := ps.ongoing[pid]
	return o, ok
}

// batchLastSeq is the sequence number of a batch's last record; sequences
// wrap from math.MaxInt32 to 0.
func batchLastSeq(b record.Batch) int32 {
	return int32((int64(b.BaseSequence()) + int64(b.LastOffsetDelta())) % (math.MaxInt32 + 1))
}

func inSequence(lastSeq, nextSeq int32) bool {
	return nextSeq == lastSeq+1 || (nextSeq == 0 && lastSeq == math.MaxInt32)
}

// check applies Kafka's producer checks to a batch a producer sent. prev is
// the previous batch of the same append when it came from the same producer
// (it is not in the state yet), else nil. It returns the original batch when
// this one is a retry of it.
func (ps *producerState) check(b, prev record.Batch) (producerBatch, bool, error) {
	pid := b.ProducerID()
	epoch, first := b.ProducerEpoch(), b.BaseSequence()
	if prev != nil && prev.ProducerEpoch() == epoch {
		if !inSequence(batchLastSeq(prev), first) {
			return producerBatch{}, false, fmt.Errorf("%w: producer %d expected sequence %d, got %d",
				ErrOutOfOrderSequence, pid, batchLastSeq(prev)+1, first)
		}
		return producerBatch{}, false, nil
	}
	if b.Transactional() && len(ps.guards) > 0 {
		if v, ok := ps.guards[pid]; ok && epoch == v.epoch && v.lowestSeq != record.NoSequence && first > v.lowestSeq {
			return producerBatch{}, false, fmt.Errorf("%w: producer %d begins its transaction at sequence %d, but sequence %d was verified first",
				ErrOutOfOrderSequence, pid, first, v.lowestSeq)
		}
	}
	cur := ps.entries[pid]
	if cur != nil && cur.txnFirst >= 0 && !b.Transactional() {
		return producerBatch{}, false, fmt.Errorf("%w: producer %d sent a non-transactional batch inside its transaction from %d",
			ErrInvalidTxnState, pid, cur.txnFirst)
	}
	if cur == nil {
		// An unknown producer (new, or whose state expired or was
		// removed with the records) may start at any sequence.
		return producerBatch{}, false, nil
	}
	if epoch < cur.epoch {
		return producerBatch{}, false, fmt.Errorf("%w: producer %d epoch %d, current %d", ErrInvalidProducerEpoch, pid, epoch, cur.epoch)
	}
	if epoch > cur.epoch && cur.txnFirst >= 0 && b.Transactional() {
		// A newer epoch's transaction would otherwise join the open one
		// and be settled by its marker (Log.VerificationGuard makes the
		// leader wait for that marker instead).
		return producerBatch{}, false, fmt.Errorf("%w: producer %d epoch %d writes while its transaction of epoch %d from offset %d is open",
			ErrInvalidTxnState, pid, epoch, cur.epoch, cur.txnFirst)
	}
	if epoch > cur.epoch {
		if first != 0 {
			return producerBatch{}, false, fmt.Errorf("%w: producer %d new epoch %d starts at sequence %d", ErrOutOfOrderSequence, pid, epoch, first)
		}
		return producerBatch{}, false, nil
	}
	if dup, ok := cur.duplicateOf(first, batchLastSeq(b)); ok {
		return dup, true, nil
	}
	if last := cur.lastSeq(); last != record.NoSequence && !inSequence(last, first) {
		return producerBatch{}, false, fmt.Errorf("%w: producer %d expected sequence %d, got %d", ErrOutOfOrderSequence, pid, last+1, first)
	}
	return producerBatch{}, false, nil
}

// checkGuard checks a transactional batch that would begin producer pid's
// transaction against its verification guard.
func (ps *producerState) checkGuard(pid int64, guard uint64) error {
	if _, ok := ps.ongoing[pid]; ok {
		return nil
	}
	if v, ok := ps.guards[pid]; !ok || v.guard != guard {
		return fmt.Errorf("%w: producer %d's transactional write was not verified with its coordinator (or its transaction ended since)", ErrInvalidTxnState, pid)
	}
	return nil
}

// checkMarker applies Kafka's checks to a transaction marker the leader is
// about to write for a producer: a producer epoch below the producer's is
// fenced (a higher one fences the producer's older epochs once written),
// and so is a coordinator epoch below that of the producer's last marker.
func (ps *producerState) checkMarker(pid int64, epoch int16, coordinatorEpoch int32) error {
	cur := ps.entries[pid]
	if cur == nil {
		return nil
	}
	if epoch < cur.epoch {
		return fmt.Errorf("%w: marker for producer %d epoch %d, current %d", ErrInvalidProducerEpoch, pid, epoch, cur.epoch)
	}
	if coordinatorEpoch < cur.coordinatorEpoch {
		return fmt.Errorf("%w: marker for producer %d from coordinator epoch %d, last %d",
			ErrTransactionCoordinatorFenced, pid, coordinatorEpoch, cur.coordinatorEpoch)
	}
	return nil
}

// apply records an appended batch of a producer (b may be its header
// only): a data batch is remembered for duplicate detection and, when
// transactional, opens the producer's transaction if none is open; a
// COMMIT or ABORT marker (m, parsed from a control batch) closes it and
// returns it when it held data. Other control batches change nothing. A
// producer's entry is allocated once; its batch ring is reused.
func (ps *producerState) apply(b record.Batch, m *record.EndTxnMarker) *completedTxn {
	pid := b.ProducerID()
	e := ps.entries[pid]
	if e == nil {
		e = newProducerEntry(b.ProducerEpoch())
		ps.entries[pid] = e
	}
	if b.Control() {
		if m == nil {
			return nil
		}
		// The transaction a verification was for has ended (or was
		// fenced): a write verified before the marker must not land
		// after it.
		delete(ps.guards, pid)
		if b.ProducerEpoch() > e.epoch {
			e.epoch = b.ProducerEpoch()
			e.batches = e.batches[:0]
		}
		e.coordinatorEpoch = m.CoordinatorEpoch
		if e.txnFirst < 0 {
			return nil
		}
		t := completedTxn{pid: pid, first: e.txnFirst, last: b.BaseOffset(), aborted: !m.Commit}
		e.txnFirst = -1
		delete(ps.ongoing, pid)
		ps.unreplicated = append(ps.unreplicated, t)
		return &t
	}
	if b.Transactional() && e.txnFirst < 0 {
		e.txnFirst = b.BaseOffset()
		ps.ongoing[pid] = e.txnFirst
		delete(ps.guards, pid) // verified and begun
	}
	if b.ProducerEpoch() != e.epoch {
		e.epoch = b.ProducerEpoch()
		e.batches = e.batches[:0]
	}
	e.add(producerBatch{
		firstSeq:    b.BaseSequence(),
		lastSeq:     batchLastSeq(b),
		firstOffset: b.BaseOffset(),
		lastOffset:  b.LastOffset(),
		timestamp:   b.MaxTimestamp(),
	})
	return nil
}

// Producer state snapshots, <offset>.snapshot in the partition directory:
// the state of every producer after all batches below offset. Written at
// Close and at every roll; a log opened loads the newest snapshot at or
// below its log end and replays the batch headers after it. Big-endian:
//
//	offset  size  field
//	     0     2  version      int16: 2 (1 is still read, see below)
//	     2     4  crc          uint32: CRC-32C of everything after this field
//	     6     4  count        int32: number of producers
//	    10     -  producers, ascending by id, each:
//	                 producerId        int64
//	                 epoch             int16
//	                 coordinatorEpoch  int32: of the producer's last marker; -1: none
//	                 txnFirstOffset    int64: first offset of its ongoing
//	                                   transaction; -1: none open
//	                 batchCount        int8 (0..5)
//	                 batchCount x (firstSeq int32, lastSeq int32,
//	                               firstOffset int64, lastOffset int64, timestamp int64)
//
// Version 1, written before transactions were stored, lacks
// coordinatorEpoch and txnFirstOffset (read as -1) and has 1..5 batches
// per producer. A snapshot of another version, or that fails its CRC or
// length checks, is skipped with a warning: the state is then rebuilt
// from an older snapshot or from the log.
const (
	snapshotSuffix    = ".snapshot"
	snapshotVersion   = 2
	snapshotVersionV1 = 1
	snapBatchSize     = 4 + 4 + 8 + 8 + 8
	snapProducerV1    = 8 + 2 + 1
	snapProducerV2    = 8 + 2 + 4 + 8 + 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func (ps *producerState) encode() []byte {
	pids := make([]int64, 0, len(ps.entries))
	for pid, e := range ps.entries {
		if len(e.batches) > 0 || e.txnFirst >= 0 || e.coordinatorEpoch >= 0 {
			pids = append(pids, pid)
		}
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	be := binary.BigEndian
	buf := make([]byte, 10, 10+len(pids)*(snapProducerV2+producerBatchesKept*snapBatchSize))
	be.PutUint16(buf, snapshotVersion)
	be.PutUint32(buf[6:], uint32(len(pids)))
	for _, pid := range pids {
		e := ps.entries[pid]
		buf = be.AppendUint64(buf, uint64(pid))
		buf = be.AppendUint16(buf, uint16(e.epoch))
		buf = be.AppendUint32(buf, uint32(e.coordinatorEpoch))
		buf = be.AppendUint64(buf, uint64(e.txnFirst))
		buf = append(buf, byte(len(e.batches)))
		for _, b := range e.batches {
			buf = be.AppendUint32(buf, uint32(b.firstSeq))
			buf = be.AppendUint32(buf, uint32(b.lastSeq))
			buf = be.AppendUint64(buf, uint64(b.firstOffset))
			buf = be.AppendUint64(buf, uint64(b.lastOffset))
			buf = be.AppendUint64(buf, uint64(b.timestamp))
		}
	}
	be.PutUint32(buf[2:], crc32.Checksum(buf[6:], castagnoli))
	return buf
}

func decodeProducerSnapshot(buf []byte) (*producerState, error) {
	be := binary.BigEndian
	if len(buf) < 10 {
		return nil, fmt.Errorf("%w: producer snapshot header", ErrCorruptCheckpoint)
	}
	version := be.Uint16(buf)
	if version != snapshotVersion && version != snapshotVersionV1 {
		return nil, fmt.Errorf("%w: producer snapshot version %d", ErrCorruptCheckpoint, version)
	}
	if be.Uint32(buf[2:]) != crc32.Checksum(buf[6:], castagnoli) {
		return nil, fmt.Errorf("%w: producer snapshot CRC", ErrCorruptCheckpoint)
	}
	fixed, minBatches := snapProducerV2, 0
	if version == snapshotVersionV1 {
		fixed, minBatches = snapProducerV1, 1
	}
	n := int64(be.Uint32(buf[6:]))
	rest := buf[10:]
	if n > int64(len(rest))/int64(fixed) {
		return nil, fmt.Errorf("%w: producer snapshot count %d", ErrCorruptCheckpoint, n)
	}
	ps := newProducerState()
	prevPID := int64(math.MinInt64)
	for i := int64(0); i < n; i++ {
		if len(rest) < fixed {
			return nil, fmt.Errorf("%w: producer snapshot truncated", ErrCorruptCheckpoint)
		}
		pid := int64(be.Uint64(rest))
		e := newProducerEntry(int16(be.Uint16(rest[8:])))
		if version != snapshotVersionV1 {
			e.coordinatorEpoch = int32(be.Uint32(rest[10:]))
			e.txnFirst = int64(be.Uint64(rest[14:]))
		}
		k := int(rest[fixed-1])
		rest = rest[fixed:]
		if i > 0 && pid <= prevPID {
			return nil, fmt.Errorf("%w: producer snapshot ids not ascending", ErrCorruptCheckpoint)
		}
		prevPID = pid
		if k < minBatches || k > producerBatchesKept || len(rest) < k*snapBatchSize || e.txnFirst < -1 ||
			e.coordinatorEpoch < -1 || k == 0 && e.txnFirst < 0 && e.coordinatorEpoch < 0 {
			return nil, fmt.Errorf("%w: producer snapshot batches", ErrCorruptCheckpoint)
		}
		for j := 0; j < k; j++ {
			e.batches = append(e.batches, producerBatch{
				firstSeq:    int32(be.Uint32(rest)),
				lastSeq:     int32(be.Uint32(rest[4:])),
				firstOffset: int64(be.Uint64(rest[8:])),
				lastOffset:  int64(be.Uint64(rest[16:])),
				timestamp:   int64(be.Uint64(rest[24:])),
			})
			rest = rest[snapBatchSize:]
		}
		ps.entries[pid] = e
		if e.txnFirst >= 0 {
			ps.ongoing[pid] = e.txnFirst
		}
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: producer snapshot trailing bytes", ErrCorruptCheckpoint)
	}
	return ps, nil
}

// listSnapshots returns the offsets of the snapshot files in dir, ascending.
func listSnapshots(dir string) ([]int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list log dir: %w", err)
	}
	var out []int64
	for _, e := range ents {
		if off, ok := parseSegmentName(e.Name(), snapshotSuffix); ok && strings.HasSuffix(e.Name(), snapshotSuffix) {
			out = append(out, off)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// writeSnapshotLocked writes the producer state as of the log end, and
// deletes all but the two newest snapshots. A snapshot already there at the
// log end is kept as it is: it describes the same batches (a truncation
// below it deletes it), and rewriting it would cost every idle log an
// fsync at each close.
func (l *Log) writeSnapshotLocked() error {
	leo := l.leo.Load()
	path := filepath.Join(l.dir, segmentFileName(leo, snapshotSuffix))
	if _, err := os.Stat(path); err != nil {
		if err := writeFileAtomic(path, l.producers.encode()); err != nil {
			return err
		}
	}
	offs, err := listSnapshots(l.dir)
	if err != nil {
		return err
	}
	for len(offs) > 2 {
		if err := os.Remove(filepath.Join(l.dir, segmentFileName(offs[0], snapshotSuffix))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		offs = offs[1:]
	}
	return nil
}

// loadProducerStateLocked restores the producer state: the newest
// readable snapshot at or below the log end, then the batches after it,
// read from their headers (and the markers' records). Snapshots above the
// log end (written before a truncation or a lost tail) are deleted.
//
// rebuildFrom is the base of the first segment whose txn index recovery
// installed empty (math.MaxInt64: none); those are refilled by a replay
// of their own (see rebuildTxnIndexesLocked).
func (l *Log) loadProducerStateLocked(rebuildFrom int64) error {
	ps, from, err := l.loadSnapshotLocked(l.leo.Load(), true)
	if err != nil {
		return err
	}
	l.producers = ps
	// From the snapshot on, below the log start too: what the first
	// segment still holds there keeps a producer's state (and the first
	// offset of a transaction a DeleteRecords cut into) whole.
	if err := l.replayProducersLocked(ps, from, nil); err != nil {
		return err
	}
	if rebuildFrom != math.MaxInt64 {
		if err := l.rebuildTxnIndexesLocked(rebuildFrom); err != nil {
			return err
		}
	}
	l.publishTxnLocked()
	return nil
}

// loadSnapshotLocked returns the newest readable snapshot at or below
// upTo and its offset, or an empty state and the first segment's base.
// With removeAbove it deletes the snapshots above the log end.
func (l *Log) loadSnapshotLocked(upTo int64, removeAbove bool) (*producerState, int64, error) {
	offs, err := listSnapshots(l.dir)
	if err != nil {
		return nil, 0, err
	}
	leo := l.leo.Load()
	for i := len(offs) - 1; i >= 0; i-- {
		path := filepath.Join(l.dir, segmentFileName(offs[i], snapshotSuffix))
		if offs[i] > leo && removeAbove {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, 0, err
			}
			continue
		}
		if offs[i] > upTo {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, 0, fmt.Errorf("read producer snapshot: %w", err)
		}
		loaded, err := decodeProducerSnapshot(data)
		if err != nil {
			l.logger.Warn("ignoring a damaged producer snapshot", "file", path, "err", err)
			continue
		}
		return loaded, offs[i], nil
	}
	return newProducerState(), (*l.segs.Load())[0].base, nil
}

// rebuildTxnIndexesLocked refills the txn indexes of the segments from
// base rebuildFrom on, which recovery scanned: it replays the transactions
// from the newest snapshot at or below rebuildFrom, or from the first
// segment when there is none (every batch still on disk, below the log
// start too, so that a transaction that began there keeps its first
// offset), and records each transaction an ABORT marker in those
// segments ends.
func (l *Log) rebuildTxnIndexesLocked(rebuildFrom int64) error {
	ps, from, err := l.loadSnapshotLocked(rebuildFrom, false)
	if err != nil {
		return err
	}
	return l.replayProducersLocked(ps, from, func(s *segment, done *completedTxn) {
		if s.base >= rebuildFrom && done.aborted {
			e := txnEntry(AbortedTxn{ProducerID: done.pid, FirstOffset: done.first, LastOffset: done.last,
				LastStableOffset: ps.stableAfter(done)})
			s.txn.appendEntry(e[:])
		}
	})
}

// replayProducersLocked reads the batches from offset from to the log end
// into ps, and tells completed (when not nil) each transaction a marker
// ends, with the segment holding the marker.
func (l *Log) replayProducersLocked(ps *producerState, from int64, completed func(*segment, *completedTxn)) error {
	segs := *l.segs.Load()
	for i, s := range segs {
		end := s.size.Load()
		if end == 0 || nextBase(segs, i, l.leo.Load()) <= from {
			continue
		}
		err := l.replaySegment(s, from, end, func(h record.Batch, m *record.EndTxnMarker) {
			if done := ps.apply(h, m); done != nil && completed != nil {
				completed(s, done)
			}
		})
		if err != nil {
			return fmt.Errorf("replay producer state: %w", err)
		}
	}
	return nil
}

// replaySegment calls fn for each producer batch of s from offset from
// to the byte position end, with its header and, for a COMMIT or ABORT
// marker, the marker.
func (l *Log) replaySegment(s *segment, from, end int64, fn func(h record.Batch, m *record.EndTxnMarker)) error {
	f, err := s.acquire()
	if err != nil {
		return err
	}
	defer s.release()
	pos, _, err := s.findPosition(f, from, end)
	if err != nil {
		return err
	}
	hs := newHeaderScanner(f, end)
	var buf []byte
	for pos < end {
		h, err := hs.header(pos)
		if err != nil {
			return err
		}
		size := record.Size(h)
		if h.ProducerID() >= 0 && h.BaseOffset() >= from {
			var m *record.EndTxnMarker
			if h.Control() {
				buf = append(buf[:0], make([]byte, size)...)
				if _, err := f.ReadAt(buf, pos); err != nil {
					return fmt.Errorf("read control batch at %d: %w", pos, err)
				}
				// As at append, a control batch that is no readable
				// marker changes no producer state.
				if _, mk, ok, err := record.ParseControl(buf); err == nil && ok {
					m = &mk
				}
			}
			fn(h, m)
		}
		pos += size
	}
	return nil
}
