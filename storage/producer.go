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
	epoch   int16
	batches []producerBatch // oldest first, at most producerBatchesKept
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

// producerState is a partition's idempotent producer state, guarded by
// Log.mu: for each producer id its epoch and its last five batches.
type producerState struct {
	entries map[int64]*producerEntry
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
	return &producerState{entries: map[int64]*producerEntry{}}
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
	cur := ps.entries[pid]
	if cur == nil {
		// An unknown producer (new, or whose state expired or was
		// removed with the records) may start at any sequence.
		return producerBatch{}, false, nil
	}
	if epoch < cur.epoch {
		return producerBatch{}, false, fmt.Errorf("%w: producer %d epoch %d, current %d", ErrInvalidProducerEpoch, pid, epoch, cur.epoch)
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

// apply records an appended idempotent batch. A producer's entry is
// allocated once; its batch ring is reused.
func (ps *producerState) apply(b record.Batch) {
	pid := b.ProducerID()
	e := ps.entries[pid]
	if e == nil {
		e = &producerEntry{epoch: b.ProducerEpoch(), batches: make([]producerBatch, 0, producerBatchesKept)}
		ps.entries[pid] = e
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
}

// Producer state snapshots, <offset>.snapshot in the partition directory:
// the state of every producer after all batches below offset. Written at
// Close and at every roll; a log opened loads the newest snapshot at or
// below its log end and replays the batch headers after it. Big-endian:
//
//	offset  size  field
//	     0     2  version      int16: 1
//	     2     4  crc          uint32: CRC-32C of everything after this field
//	     6     4  count        int32: number of producers
//	    10     -  producers, each:
//	                 producerId   int64
//	                 epoch        int16
//	                 batchCount   int8 (1..5)
//	                 batchCount x (firstSeq int32, lastSeq int32,
//	                               firstOffset int64, lastOffset int64, timestamp int64)
const (
	snapshotSuffix  = ".snapshot"
	snapshotVersion = 1
	snapBatchSize   = 4 + 4 + 8 + 8 + 8
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func (ps *producerState) encode() []byte {
	pids := make([]int64, 0, len(ps.entries))
	for pid, e := range ps.entries {
		if len(e.batches) > 0 {
			pids = append(pids, pid)
		}
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	be := binary.BigEndian
	buf := make([]byte, 10, 10+len(pids)*(11+producerBatchesKept*snapBatchSize))
	be.PutUint16(buf, snapshotVersion)
	be.PutUint32(buf[6:], uint32(len(pids)))
	for _, pid := range pids {
		e := ps.entries[pid]
		buf = be.AppendUint64(buf, uint64(pid))
		buf = be.AppendUint16(buf, uint16(e.epoch))
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
	if len(buf) < 10 || be.Uint16(buf) != snapshotVersion {
		return nil, fmt.Errorf("%w: producer snapshot header", ErrCorruptCheckpoint)
	}
	if be.Uint32(buf[2:]) != crc32.Checksum(buf[6:], castagnoli) {
		return nil, fmt.Errorf("%w: producer snapshot CRC", ErrCorruptCheckpoint)
	}
	n := int64(be.Uint32(buf[6:]))
	rest := buf[10:]
	if n > int64(len(rest))/11 {
		return nil, fmt.Errorf("%w: producer snapshot count %d", ErrCorruptCheckpoint, n)
	}
	ps := newProducerState()
	for i := int64(0); i < n; i++ {
		if len(rest) < 11 {
			return nil, fmt.Errorf("%w: producer snapshot truncated", ErrCorruptCheckpoint)
		}
		pid := int64(be.Uint64(rest))
		e := &producerEntry{epoch: int16(be.Uint16(rest[8:]))}
		k := int(rest[10])
		rest = rest[11:]
		if k < 1 || k > producerBatchesKept || len(rest) < k*snapBatchSize {
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

// loadProducerStateLocked restores the producer state: the newest readable
// snapshot at or below the log end, then the idempotent batches after it,
// read from their headers. Snapshots above the log end (written before a
// truncation or a lost tail) are deleted.
func (l *Log) loadProducerStateLocked() error {
	offs, err := listSnapshots(l.dir)
	if err != nil {
		return err
	}
	leo := l.leo.Load()
	ps, from := newProducerState(), l.logStart.Load()
	for i := len(offs) - 1; i >= 0; i-- {
		path := filepath.Join(l.dir, segmentFileName(offs[i], snapshotSuffix))
		if offs[i] > leo {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("read producer snapshot: %w", err)
		}
		loaded, err := decodeProducerSnapshot(data)
		if err != nil {
			l.logger.Warn("ignoring a damaged producer snapshot", "file", path, "err", err)
			continue
		}
		ps, from = loaded, max(offs[i], from)
		break
	}
	l.producers = ps
	return l.replayProducersLocked(from)
}

// replayProducersLocked reads the batch headers from offset from to the
// log end and records the idempotent batches in the producer state.
func (l *Log) replayProducersLocked(from int64) error {
	segs := *l.segs.Load()
	for i, s := range segs {
		end := s.size.Load()
		if end == 0 || nextBase(segs, i, l.leo.Load()) <= from {
			continue
		}
		f, err := s.acquire()
		if err != nil {
			return err
		}
		pos, _, err := s.findPosition(f, from, end)
		if err != nil {
			s.release()
			return err
		}
		hs := newHeaderScanner(f, end)
		for pos < end {
			h, err := hs.header(pos)
			if err != nil {
				s.release()
				return fmt.Errorf("replay producer state: %w", err)
			}
			if h.ProducerID() >= 0 && h.BaseOffset() >= from {
				l.producers.apply(h)
			}
			pos += record.Size(h)
		}
		s.release()
	}
	return nil
}
