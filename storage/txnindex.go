package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gregor-io/gregor/protocol/record"
)

// Aborted-transaction index (.txnindex): one per segment, listing the
// transactions whose ABORT marker lies in the segment. A read_committed
// fetch asks for the aborted transactions overlapping what it returns and
// the consumer drops their records (see Log.AbortedTransactions).
//
// 34-byte entries, no header, big-endian, in the order of their markers:
//
//	offset  size  field
//	     0     2  version           int16: 0
//	     2     8  producerId        int64
//	    10     8  firstOffset       int64: the transaction's first offset
//	    18     8  lastOffset        int64: offset of its ABORT marker
//	    26     8  lastStableOffset  int64: the partition's last stable offset
//	                                 once the marker was appended: the first
//	                                 offset of the earliest other ongoing
//	                                 transaction, else lastOffset + 1
//
// lastOffset lies in the segment and strictly increases from entry to
// entry; firstOffset is at most lastOffset. A segment with no aborted
// transaction has no file (a missing file reads as empty). The entries are
// kept in memory and written out with the offset and time indexes: when the
// segment is rolled (then fsynced, and the directory too when the file is
// new) and at Close. After a crash, recovery rebuilds the index of every
// segment it scans from the log and the producer state; a file that fails
// its checks is rebuilt from the log when first used, by replaying the
// transactions from the log start.

const (
	txnIndexSuffix  = ".txnindex"
	txnEntrySize    = 34
	txnEntryVersion = 0
)

// AbortedTxn is an aborted transaction: its producer, first offset and
// the offset of its ABORT marker.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
	// LastStableOffset is the partition's last stable offset once the
	// marker was written; a search for the transactions overlapping a
	// range ending at or below it need not look at later entries.
	LastStableOffset int64
}

func txnEntry(a AbortedTxn) [txnEntrySize]byte {
	var e [txnEntrySize]byte
	be := binary.BigEndian
	be.PutUint16(e[0:], txnEntryVersion)
	be.PutUint64(e[2:], uint64(a.ProducerID))
	be.PutUint64(e[10:], uint64(a.FirstOffset))
	be.PutUint64(e[18:], uint64(a.LastOffset))
	be.PutUint64(e[26:], uint64(a.LastStableOffset))
	return e
}

func readTxnEntry(buf []byte, i int) AbortedTxn {
	e := buf[i*txnEntrySize:]
	be := binary.BigEndian
	return AbortedTxn{
		ProducerID:       int64(be.Uint64(e[2:])),
		FirstOffset:      int64(be.Uint64(e[10:])),
		LastOffset:       int64(be.Uint64(e[18:])),
		LastStableOffset: int64(be.Uint64(e[26:])),
	}
}

// checkTxnIndex returns a checker of a segment's txn index entries:
// version 0, markers in the segment (at or above base) in increasing
// order, first offsets at most the marker and not negative.
func checkTxnIndex(base int64) func([]byte) error {
	return func(buf []byte) error {
		n := len(buf) / txnEntrySize
		prev := int64(-1)
		for i := 0; i < n; i++ {
			if v := int16(binary.BigEndian.Uint16(buf[i*txnEntrySize:])); v != txnEntryVersion {
				return fmt.Errorf("entry %d version %d", i, v)
			}
			a := readTxnEntry(buf, i)
			if a.LastOffset < base || a.LastOffset <= prev {
				return fmt.Errorf("entry %d marker offset %d not above %d and at least base %d", i, a.LastOffset, prev, base)
			}
			if a.FirstOffset < 0 || a.FirstOffset > a.LastOffset || a.LastStableOffset < 0 {
				return fmt.Errorf("entry %d offsets first %d last %d stable %d", i, a.FirstOffset, a.LastOffset, a.LastStableOffset)
			}
			prev = a.LastOffset
		}
		return nil
	}
}

// decodeTxnIndex decodes and checks a whole .txnindex file.
func decodeTxnIndex(buf []byte, base int64) ([]AbortedTxn, error) {
	if len(buf)%txnEntrySize != 0 {
		return nil, fmt.Errorf("%w: txn index of %d bytes, not a multiple of %d", ErrCorruptIndex, len(buf), txnEntrySize)
	}
	if err := checkTxnIndex(base)(buf); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorruptIndex, err)
	}
	out := make([]AbortedTxn, len(buf)/txnEntrySize)
	for i := range out {
		out[i] = readTxnEntry(buf, i)
	}
	return out, nil
}

// txnEntriesBelow returns the entries whose marker lies below offset.
func txnEntriesBelow(buf []byte, offset int64) []byte {
	n := len(buf) / txnEntrySize
	i := 0
	for i < n && readTxnEntry(buf, i).LastOffset < offset {
		i++
	}
	return buf[:i*txnEntrySize]
}

// loadTxnIndex loads the segment's txn index; a file that fails its checks
// is ErrCorruptIndex (see Log.segmentTxnIndex for the rebuild).
func (s *segment) loadTxnIndex() error {
	return s.txn.load(checkTxnIndex(s.base))
}

// segmentTxnIndex returns the entries of a segment's txn index, loading it
// and, when its file fails its checks, rebuilding it from the log.
func (l *Log) segmentTxnIndex(s *segment) ([]byte, error) {
	err := s.loadTxnIndex()
	if err == nil {
		return s.txn.entries(), nil
	}
	if !errors.Is(err, ErrCorruptIndex) {
		return nil, err
	}
	s.txnMu.Lock()
	defer s.txnMu.Unlock()
	if s.txn.isLoaded() {
		return s.txn.entries(), nil
	}
	l.logger.Warn("rebuilding a damaged transaction index", "file", s.txn.path, "err", err)
	entries, err := l.replayAbortedTxns(s)
	if err != nil {
		return nil, err
	}
	s.txn.install(entries)
	return entries, nil
}

// replayAbortedTxns rebuilds one segment's txn index: it replays the
// transactions from the first segment of the log to the end of s, reading
// batch headers (and the markers' records). A transaction whose first
// batch lies below the log start counts from its first batch still in the
// log, which is all a reader can see of it.
func (l *Log) replayAbortedTxns(s *segment) ([]byte, error) {
	ps := newProducerState()
	var out []byte
	segs := *l.segs.Load()
	for _, cur := range segs {
		if cur.base > s.base {
			break
		}
		err := l.replaySegment(cur, cur.base, cur.size.Load(), func(h record.Batch, m *record.EndTxnMarker) {
			done := ps.apply(h, m)
			if cur == s && done != nil && done.aborted {
				e := txnEntry(AbortedTxn{ProducerID: done.pid, FirstOffset: done.first, LastOffset: done.last,
					LastStableOffset: ps.stableAfter(done)})
				out = append(out, e[:]...)
			}
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// persistTxnIndex writes the segment's txn index. A segment without
// aborted transactions gets no file; a file the persist creates is made
// durable with a directory fsync when sync is set.
func (s *segment) persistTxnIndex(sync bool) error {
	ix := s.txn
	ix.mu.RLock()
	loaded, n, fileLen := ix.mu.loaded, len(ix.mu.buf), ix.mu.fileLen
	ix.mu.RUnlock()
	if !loaded {
		return nil
	}
	created := false
	if fileLen <= 0 {
		_, err := os.Stat(ix.path)
		switch {
		case errors.Is(err, fs.ErrNotExist) && n == 0:
			ix.mu.Lock()
			if len(ix.mu.buf) == 0 {
				ix.mu.persisted, ix.mu.fileLen, ix.mu.synced = 0, 0, true
			}
			ix.mu.Unlock()
			return nil
		case errors.Is(err, fs.ErrNotExist):
			created = true
		case err != nil:
			return fmt.Errorf("stat txn index: %w", err)
		}
	}
	if err := ix.persist(sync); err != nil {
		return err
	}
	if created && sync {
		return syncDir(filepath.Dir(ix.path))
	}
	return nil
}
