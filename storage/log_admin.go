package storage

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// TruncateTo removes every record at or above offset (a follower dropping a
// divergent tail, KIP-101). A batch holding offset goes whole, so the log
// end may land below offset. Truncating below the first segment empties the
// log and restarts it at offset.
func (l *Log) TruncateTo(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return ErrClosed
	}
	if err := l.Err(); err != nil {
		return err
	}
	if offset >= l.leo.Load() {
		// No record to cut; but an epoch that begins at the log's end (a
		// leadership taken here, nothing written under it) goes when the
		// offset is the end: a leader that does not know that epoch sent
		// the truncation, and a follower that kept it would ask with it
		// again and diverge at every fetch.
		if offset == l.leo.Load() {
			if err := l.epochs.truncateFromEnd(offset); err != nil {
				return l.fail(err)
			}
		}
		return nil
	}
	segs := *l.segs.Load()
	if offset <= segs[0].base || offset < l.logStart.Load() {
		return l.truncateFullyLocked(offset)
	}
	i := segmentFor(segs, offset)
	// Newest first: a crash part way leaves a log cut at a segment
	// boundary above offset, which the next truncation finishes. Oldest
	// first, it left a hole with the divergent segments above it still
	// in the log.
	for j := len(segs) - 1; j > i; j-- {
		if err := segs[j].removeFiles(); err != nil {
			return l.fail(err)
		}
		l.step("segment removed")
	}
	s := segs[i]
	if _, err := l.segmentTxnIndex(s); err != nil {
		return l.fail(err)
	}
	s.sealed = false
	leo, err := s.truncateLocked(offset)
	if err != nil {
		return l.fail(err)
	}
	kept := append([]*segment(nil), segs[:i+1]...)
	l.segs.Store(&kept)
	return l.afterTruncateLocked(leo)
}

// TruncateFullyAndStartAt deletes every segment and restarts the log empty
// at offset (a follower whose leader's log starts above its log end).
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return ErrClosed
	}
	return l.truncateFullyLocked(offset)
}

func (l *Log) truncateFullyLocked(offset int64) error {
	segs := *l.segs.Load()
	cfg := l.cfg.Load()
	// Newest first, as TruncateTo: a crash part way leaves a shorter log,
	// not one whose start jumped up.
	for j := len(segs) - 1; j >= 0; j-- {
		if err := segs[j].removeFiles(); err != nil {
			return l.fail(err)
		}
		l.step("segment removed")
	}
	s, err := createSegment(l.dir, offset, cfg.IndexIntervalBytes)
	if err != nil {
		return l.fail(err)
	}
	if err := syncDir(l.dir); err != nil {
		return l.fail(err)
	}
	l.segs.Store(&[]*segment{s})
	l.logStart.Store(offset)
	if err := l.epochs.truncateFromStart(offset); err != nil {
		return l.fail(err)
	}
	return l.afterTruncateLocked(offset)
}

func (l *Log) afterTruncateLocked(leo int64) error {
	l.mu.gen++
	for {
		if old := l.truncMark.Load(); leo >= old || l.truncMark.CompareAndSwap(old, leo) {
			break
		}
	}
	l.forgetCacheLocked()
	segs := *l.segs.Load()
	active := segs[len(segs)-1]
	l.settleTailLocked(max(active.allocEnd-active.size.Load(), 0))
	l.leo.Store(leo)
	// Producer state: from the newest snapshot below the new end, then the
	// batches that remain after it, as Kafka reloads it after truncation.
	if err := l.loadProducerStateLocked(math.MaxInt64); err != nil {
		return l.fail(err)
	}
	if l.durable.Load() > leo {
		l.durable.Store(leo)
	}
	if l.recoveryPoint.Load() > leo {
		l.recoveryPoint.Store(leo)
	}
	if l.logStart.Load() > leo {
		l.logStart.Store(leo)
	}
	if err := l.epochs.truncateFromEnd(leo); err != nil {
		return l.fail(err)
	}
	hw := l.hw.Load().offset
	l.setHWLocked(min(max(hw, l.logStart.Load()), leo))
	if err := syncDir(l.dir); err != nil {
		return l.fail(err)
	}
	l.notify.broadcast()
	return nil
}

// DeleteBelow moves the log start offset up to offset (DeleteRecords) and
// deletes the segments that lie wholly below it, as a retention pass would
// (see DeleteOldSegments). The active segment is kept. offset may not pass
// the log end.
func (l *Log) DeleteBelow(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return ErrClosed
	}
	if offset > l.leo.Load() {
		return fmt.Errorf("%w: %d above log end %d", ErrOffsetOutOfRange, offset, l.leo.Load())
	}
	if offset <= l.logStart.Load() {
		return nil
	}
	l.logStart.Store(offset)
	segs := *l.segs.Load()
	n := 0
	for n+1 < len(segs) && segs[n+1].base <= offset {
		n++
	}
	if err := l.dropOldestLocked(n); err != nil {
		return l.fail(err)
	}
	if err := l.epochs.truncateFromStart(offset); err != nil {
		return l.fail(err)
	}
	if hw := l.hw.Load().offset; hw < offset {
		l.setHWLocked(offset)
	}
	l.notify.broadcast()
	return nil
}

// dropOldestLocked takes the n oldest segments out of the log and deletes
// them: their files are renamed with the .deleted suffix and removed after
// file.delete.delay.ms (at once for a log without a Manager). Readers
// holding one of their files keep reading it. The caller has moved the log
// start offset to at least the base of the new first segment, before the
// segments go, which Read relies on.
func (l *Log) dropOldestLocked(n int) error {
	if n <= 0 {
		return nil
	}
	segs := *l.segs.Load()
	kept := append([]*segment(nil), segs[n:]...)
	l.segs.Store(&kept)
	return l.deleteSegmentsLocked(segs[:n])
}

// deleteSegmentsLocked deletes segments that already left the list: their
// files are renamed with the .deleted suffix and removed after
// file.delete.delay.ms (at once for a log without a Manager).
func (l *Log) deleteSegmentsLocked(segs []*segment) error {
	due := l.now().Add(time.Duration(l.cfg.Load().FileDeleteDelayMs) * time.Millisecond)
	var errs []error
	for _, s := range segs {
		paths, err := s.renameDeleted()
		errs = append(errs, err)
		l.step("segment renamed .deleted")
		if l.deleter != nil {
			l.deleter.schedule(paths, due)
			continue
		}
		for _, p := range paths {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// LatestEpoch is the newest leader epoch in the log's epoch history, or -1.
func (l *Log) LatestEpoch() int32 { return l.epochs.latest() }

// EndOffsetForEpoch answers OffsetForLeaderEpoch for this log: the largest
// epoch at most epoch and the first offset after it, or (-1, -1).
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	return l.epochs.endOffsetFor(epoch, l.leo.Load())
}

// EpochForOffset is the leader epoch under which offset was written, from
// the epoch history, or -1.
func (l *Log) EpochForOffset(offset int64) int32 { return l.epochs.epochFor(offset) }

// AssignEpoch records that a leader with epoch starts writing at the log
// end, as a new leader does before its first append.
func (l *Log) AssignEpoch(epoch int32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := l.epochs.assign(epoch, l.leo.Load(), true)
	return err
}

// Close flushes the log (data and indexes, fsynced) and closes its files.
// After Close the log may be opened with OpenState.Clean set. Readers still
// holding a Slice keep their file until they release it.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return nil
	}
	l.mu.closed = true
	l.untrackCacheLocked()
	segs := *l.segs.Load()
	segs[len(segs)-1].sealLocked()
	// A clean open takes each segment's size from its file.
	err := l.trimLocked(segs[len(segs)-1])
	if err == nil {
		err = l.writeSnapshotLocked()
	}
	l.mu.Unlock()

	if err == nil {
		err = l.sync()
	}
	if err == nil {
		for _, s := range segs {
			if e := s.persistIndexes(true); e != nil {
				err = e
				break
			}
		}
	}
	if err == nil {
		err = syncDir(l.dir)
	}
	if err == nil {
		l.recoveryPoint.Store(l.leo.Load())
	}
	l.closeFiles()
	l.wakeWaiters(0, ErrClosed)
	l.notify.broadcast()
	return err
}

func (l *Log) closeFiles() {
	if p := l.segs.Load(); p != nil {
		for _, s := range *p {
			s.closeFile()
		}
	}
}

// Delete closes the log and removes its directory.
func (l *Log) Delete() error {
	l.mu.Lock()
	l.mu.closed = true
	l.untrackCacheLocked()
	l.settleTailLocked(0)
	l.mu.Unlock()
	l.closeFiles()
	l.wakeWaiters(0, ErrClosed)
	l.notify.broadcast()
	if err := os.RemoveAll(l.dir); err != nil {
		return fmt.Errorf("remove %s: %w", l.dir, err)
	}
	return syncDir(filepath.Dir(l.dir))
}

const partitionMetadataFile = "partition.metadata"

// SetTopicID writes partition.metadata with the topic's id, in Kafka's
// format ("version: 0" and "topic_id: <base64url id>" lines).
func (l *Log) SetTopicID(id [16]byte) error {
	data := "version: 0\ntopic_id: " + base64.RawURLEncoding.EncodeToString(id[:]) + "\n"
	if err := l.Err(); err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(l.dir, partitionMetadataFile), []byte(data)); err != nil {
		// As any failed write of the log's files, it takes the log's
		// dir offline.
		return l.fail(err)
	}
	return nil
}

// TopicID reads partition.metadata; ok is false when the file is absent.
func (l *Log) TopicID() (id [16]byte, ok bool, err error) {
	data, err := os.ReadFile(filepath.Join(l.dir, partitionMetadataFile))
	if errors.Is(err, fs.ErrNotExist) {
		return id, false, nil
	}
	if err != nil {
		return id, false, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, found := strings.CutPrefix(line, "topic_id: "); found {
			raw, err := base64.RawURLEncoding.DecodeString(strings.TrimSpace(v))
			if err != nil || len(raw) != 16 {
				return id, false, fmt.Errorf("%w: partition.metadata topic id %q", ErrCorruptCheckpoint, v)
			}
			copy(id[:], raw)
			return id, true, nil
		}
	}
	return id, false, fmt.Errorf("%w: partition.metadata without topic_id", ErrCorruptCheckpoint)
}
