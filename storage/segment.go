package storage

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-io/gregor/protocol/record"
)

// File name suffixes of a segment and of files around it.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	deletedSuffix   = ".deleted"
	cleanedSuffix   = ".cleaned"
	swapSuffix      = ".swap"
)

func segmentFileName(base int64, suffix string) string {
	return fmt.Sprintf("%020d%s", base, suffix)
}

// segment is one .log file with its two indexes. Its base offset is fixed;
// bytes are only added at the end (by the log's appender, under Log.mu) or
// cut off by truncation. Readers see the bytes below size.
type segment struct {
	base    int64
	logPath string
	idx     *index // offset index
	tidx    *index // time index
	txn     *index // aborted-transaction index (see txnindex.go)

	size   atomic.Int64 // bytes of complete batches in the file
	synced atomic.Int64 // bytes known to be on stable storage

	// maxTS and maxTSOffset are the largest batch max timestamp and the last
	// offset of its batch; -1 until known. Loaded lazily for old segments.
	maxTS       atomic.Int64
	maxTSOffset atomic.Int64

	fmu struct {
		sync.Mutex
		f       *os.File
		refs    int  // readers holding f
		closing bool // close f when refs reaches zero
	}

	// rebuildMu serialises loading or rebuilding the indexes; txnMu
	// rebuilding the txn index, which reads this segment's other indexes.
	rebuildMu sync.Mutex
	txnMu     sync.Mutex

	// deleted is set once the segment left the log and its files were
	// renamed for deletion: its indexes are no longer written.
	deleted atomic.Bool

	// Appender state, guarded by Log.mu.
	ib      indexBuilder
	created time.Time
	sealed  bool // no longer the active segment
	// uncached is where the bytes this process appended to the segment
	// begin to be in the page cache: below it holdCacheLocked dropped
	// them (or the segment held them before its first append here). -1
	// until the first append: a segment only read is left to the kernel.
	// Written under Log.mu; read by Log.Read.
	uncached atomic.Int64
	// allocEnd is the file's size when Log.extendLocked extended it past
	// size (a tail for appends, see prefault.go); 0 otherwise.
	allocEnd int64
}

func newSegment(dir string, base, interval int64) *segment {
	s := &segment{
		base:    base,
		logPath: filepath.Join(dir, segmentFileName(base, logSuffix)),
		idx:     newIndex(filepath.Join(dir, segmentFileName(base, indexSuffix)), base, offsetEntrySize),
		tidx:    newIndex(filepath.Join(dir, segmentFileName(base, timeIndexSuffix)), base, timeEntrySize),
		txn:     newIndex(filepath.Join(dir, segmentFileName(base, txnIndexSuffix)), base, txnEntrySize),
		created: time.Now(),
	}
	s.txn.missingEmpty = true
	s.uncached.Store(-1)
	s.ib = newIndexBuilder(base, interval)
	s.maxTS.Store(-1)
	s.maxTSOffset.Store(-1)
	return s
}

// createSegment creates the files of a new, empty segment.
func createSegment(dir string, base, interval int64) (*segment, error) {
	s := newSegment(dir, base, interval)
	f, err := os.OpenFile(s.logPath, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create segment: %w", err)
	}
	s.fmu.f = f
	s.idx.setEmpty()
	s.tidx.setEmpty()
	s.txn.setEmpty()
	// A txn index exists only with entries; one left at this base by a
	// segment removed before (whose removal a crash interrupted) is not
	// this segment's.
	if err := os.Remove(s.txn.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		f.Close()
		return nil, fmt.Errorf("remove stale txn index: %w", err)
	}
	for _, ix := range []*index{s.idx, s.tidx} {
		if err := os.WriteFile(ix.path, nil, 0o644); err != nil {
			f.Close()
			return nil, fmt.Errorf("create index: %w", err)
		}
	}
	return s, nil
}

// acquire returns the segment's file, opening it on first use, and holds a
// reference that release gives back. A segment being removed or closed
// keeps its file open until the last reader releases it.
func (s *segment) acquire() (*os.File, error) {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	if s.fmu.closing {
		return nil, ErrClosed
	}
	if s.fmu.f == nil {
		f, err := os.OpenFile(s.logPath, os.O_RDWR, 0)
		if err != nil {
			return nil, fmt.Errorf("open segment: %w", err)
		}
		s.fmu.f = f
	}
	s.fmu.refs++
	return s.fmu.f, nil
}

func (s *segment) release() {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	s.fmu.refs--
	if s.fmu.refs == 0 && s.fmu.closing && s.fmu.f != nil {
		s.fmu.f.Close()
		s.fmu.f = nil
	}
}

// file returns the open file without taking a reference, for the appender
// and syncer, which close files themselves only after they stop.
func (s *segment) file() (*os.File, error) {
	f, err := s.acquire()
	if err != nil {
		return nil, err
	}
	s.release()
	return f, nil
}

// closeFile closes the file now or, while readers hold it, when the last one
// releases it.
func (s *segment) closeFile() {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	s.fmu.closing = true
	if s.fmu.refs == 0 && s.fmu.f != nil {
		s.fmu.f.Close()
		s.fmu.f = nil
	}
}

// loadIndexes loads both indexes, rebuilding them from the log when they are
// missing or fail their checks.
func (s *segment) loadIndexes() error {
	if s.idx.isLoaded() && s.tidx.isLoaded() {
		return nil
	}
	s.rebuildMu.Lock()
	defer s.rebuildMu.Unlock()
	errO := s.idx.load(checkOffsetIndex(s.size.Load()))
	errT := s.tidx.load(checkTimeIndex)
	if errO == nil && errT == nil {
		s.loadMaxTimestamp()
		return nil
	}
	for _, err := range []error{errO, errT} {
		if err != nil && !errors.Is(err, ErrCorruptIndex) {
			return err
		}
	}
	return s.rebuildIndexes()
}

// loadMaxTimestamp takes the segment's max timestamp from the time index's
// last entry, which is written when a segment is sealed or closed.
func (s *segment) loadMaxTimestamp() {
	if s.maxTS.Load() >= 0 {
		return
	}
	if ts, off, ok := lastTimeEntry(s.tidx.entries(), s.base); ok {
		s.maxTS.Store(ts)
		s.maxTSOffset.Store(off)
	}
}

// indexBatchLocked records a batch appended at pos in the indexes and the
// appender state.
func (s *segment) indexBatchLocked(pos, size, lastOffset, maxTS int64) {
	oe, okO, te, okT := s.ib.add(pos, size, lastOffset, maxTS)
	if okO {
		s.idx.appendEntry(oe[:])
	}
	if okT {
		s.tidx.appendEntry(te[:])
	}
	s.publishMaxTS()
}

func (s *segment) publishMaxTS() {
	if s.ib.maxTS > s.maxTS.Load() {
		s.maxTS.Store(s.ib.maxTS)
		s.maxTSOffset.Store(s.ib.maxTSOffset)
	}
}

// sealLocked adds the final time index entry, so that the time index's last
// entry holds the segment's max timestamp, as Kafka does on roll and close.
func (s *segment) sealLocked() {
	if te, ok := s.ib.final(); ok {
		s.tidx.appendEntry(te[:])
	}
}

// indexBuilder decides, batch by batch, which index entries a segment gets.
// Kafka's rule: once more than the index interval of bytes were appended
// since the previous entry, an offset entry (the batch's last offset, its
// position) and a time entry (max timestamp so far, and the last offset of
// the batch that carried it) if that timestamp is above the last time entry.
// The appender and the recovery scan share it, so a rebuilt index equals the
// one appends wrote.
type indexBuilder struct {
	base        int64
	interval    int64
	next        int64 // offset after the last batch
	firstTS     int64 // max timestamp of the first batch; -1 when empty
	bytesSince  int64
	maxTS       int64 // -1 when empty
	maxTSOffset int64
	lastTimeTS  int64 // timestamp of the last time entry; -1 when none
}

func newIndexBuilder(base, interval int64) indexBuilder {
	return indexBuilder{base: base, interval: interval, next: base, firstTS: -1, maxTS: -1, maxTSOffset: -1, lastTimeTS: -1}
}

// add accounts for a batch at pos and returns the index entries it gets:
// an offset entry when okO, a time entry when okT.
func (ib *indexBuilder) add(pos, size, lastOffset, maxTS int64) (oe [offsetEntrySize]byte, okO bool, te [timeEntrySize]byte, okT bool) {
	if maxTS > ib.maxTS {
		ib.maxTS, ib.maxTSOffset = maxTS, lastOffset
	}
	if ib.firstTS < 0 {
		ib.firstTS = maxTS
	}
	if ib.bytesSince > ib.interval {
		oe, okO = offsetEntry(uint32(lastOffset-ib.base), uint32(pos)), true
		te, okT = ib.final()
		ib.bytesSince = 0
	}
	ib.bytesSince += size
	ib.next = lastOffset + 1
	return oe, okO, te, okT
}

// final returns a time entry for the max timestamp so far when it is above
// the last time entry.
func (ib *indexBuilder) final() ([timeEntrySize]byte, bool) {
	if ib.maxTS < 0 || ib.maxTS <= ib.lastTimeTS {
		return [timeEntrySize]byte{}, false
	}
	ib.lastTimeTS = ib.maxTS
	return timeEntry(ib.maxTS, uint32(ib.maxTSOffset-ib.base)), true
}

const defaultIndexInterval = 4096

// indexFull reports whether the offset index reached segment.index.bytes.
func (s *segment) indexFull(cfg *Config) bool {
	return int64(s.idx.count()+1)*offsetEntrySize > cfg.SegmentIndexBytes
}

// headerScanner reads batch headers of a segment file through a read-ahead
// buffer, so that walking from an index entry to a target costs one or two
// reads rather than one per batch.
type headerScanner struct {
	f       io.ReaderAt
	end     int64 // bytes readable
	buf     []byte
	bufPos  int64 // file position of buf[0]
	bufFill int
}

func newHeaderScanner(f io.ReaderAt, end int64) *headerScanner {
	return &headerScanner{f: f, end: end, buf: make([]byte, 16<<10)}
}

// header returns the header of the batch at pos (record.HeaderSize bytes),
// or an error if the batch does not fit below end.
func (hs *headerScanner) header(pos int64) (record.Batch, error) {
	if pos+record.HeaderSize > hs.end {
		return nil, io.ErrUnexpectedEOF
	}
	if pos < hs.bufPos || pos+record.HeaderSize > hs.bufPos+int64(hs.bufFill) {
		n := int64(len(hs.buf))
		if hs.end-pos < n {
			n = hs.end - pos
		}
		m, err := hs.f.ReadAt(hs.buf[:n], pos)
		if int64(m) < record.HeaderSize {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		hs.bufPos, hs.bufFill = pos, m
	}
	off := pos - hs.bufPos
	h := record.Batch(hs.buf[off : off+record.HeaderSize])
	size := record.Size(h)
	if size < record.HeaderSize || pos+size > hs.end {
		return nil, fmt.Errorf("%w: bad batch length at position %d", record.ErrTruncated, pos)
	}
	return h, nil
}

// findPosition returns the position of the first batch whose last offset is
// at least target, scanning from the index's hint; pos == end when no batch
// below end holds such an offset. base is that batch's base offset.
func (s *segment) findPosition(f io.ReaderAt, target, end int64) (pos, base int64, err error) {
	if err := s.loadIndexes(); err != nil {
		return 0, 0, err
	}
	pos = lookupOffset(s.idx.entries(), s.base, target)
	hs := newHeaderScanner(f, end)
	for pos < end {
		h, err := hs.header(pos)
		if err != nil {
			return 0, 0, fmt.Errorf("scan %s at %d: %w", s.logPath, pos, err)
		}
		if h.LastOffset() >= target {
			return pos, h.BaseOffset(), nil
		}
		pos += record.Size(h)
	}
	return end, -1, nil
}

// wholeBatchEnd returns where the last whole batch that starts at or after
// pos and ends at or below limit ends, pos when the batch at pos ends
// beyond limit. pos must be where a batch starts, and the indexes loaded
// (findPosition loads them). It scans from the last indexed batch at or
// below limit, so at most an index interval and a batch.
func (s *segment) wholeBatchEnd(f io.ReaderAt, pos, limit, end int64) (int64, error) {
	p := max(pos, lookupPosition(s.idx.entries(), limit))
	hs := newHeaderScanner(f, end)
	for p < limit {
		h, err := hs.header(p)
		if err != nil {
			return 0, fmt.Errorf("scan %s at %d: %w", s.logPath, p, err)
		}
		size := record.Size(h)
		if p+size > limit {
			break
		}
		p += size
	}
	return p, nil
}

// scanResult is what a scan of a segment's log file found.
type scanResult struct {
	validBytes int64 // bytes of valid batches from the start
	fileSize   int64
	// zeroTail: the bytes after validBytes are all zero, an extended
	// segment's tail (see prefault.go) rather than damage. Set by
	// segment.recoverLocked only.
	zeroTail  bool
	ib        indexBuilder
	idx, tidx []byte
	epochs    []epochEntry // leader epochs in the order they start
}

// scanSegment reads a segment's log file from the start and builds its
// indexes. With verify it checks every batch's integrity (length, magic,
// CRC) and that offsets increase and fit the segment, and stops at the first
// batch that fails (crash recovery); validBytes is where it stopped.
func scanSegment(f io.ReaderAt, fileSize, base, interval int64, verify bool) scanResult {
	return scanSegmentBelow(f, fileSize, base, interval, verify, math.MaxInt64)
}

// scanSegmentBelow is scanSegment that, verifying, also stops at the first
// batch reaching limit: the base offset of the next segment, which owns
// the offsets from there.
func scanSegmentBelow(f io.ReaderAt, fileSize, base, interval int64, verify bool, limit int64) scanResult {
	res := scanResult{fileSize: fileSize, ib: newIndexBuilder(base, interval)}
	buf := make([]byte, 64<<10)
	var pos int64
	lastEpoch := int32(-1)
	for pos < fileSize {
		var hdr [record.LogOverhead]byte
		if _, err := f.ReadAt(hdr[:], pos); err != nil {
			break
		}
		size := record.Size(hdr[:])
		if size < record.HeaderSize || pos+size > fileSize {
			break
		}
		if int64(len(buf)) < size {
			buf = make([]byte, size)
		}
		b := record.Batch(buf[:size])
		if !verify {
			b = b[:record.HeaderSize] // the header is all the indexes need
		}
		if _, err := f.ReadAt(b, pos); err != nil {
			break
		}
		if verify && (record.CheckIntegrity(b) != nil || b.BaseOffset() < res.ib.next ||
			b.LastOffset()-base > math.MaxUint32 || b.LastOffset() >= limit) {
			break
		}
		oe, okO, te, okT := res.ib.add(pos, size, b.LastOffset(), b.MaxTimestamp())
		if okO {
			res.idx = append(res.idx, oe[:]...)
		}
		if okT {
			res.tidx = append(res.tidx, te[:]...)
		}
		if e := b.PartitionLeaderEpoch(); e > lastEpoch {
			res.epochs = append(res.epochs, epochEntry{epoch: e, start: b.BaseOffset()})
			lastEpoch = e
		}
		pos += size
	}
	res.validBytes = pos
	return res
}

// recoverLocked scans the segment as crash recovery does, cuts the file
// after its last valid batch below limit (the next segment's base) and
// installs rebuilt indexes. It returns the scan, whose fileSize -
// validBytes is what was cut.
func (s *segment) recoverLocked(interval, limit int64) (scanResult, error) {
	f, err := s.acquire()
	if err != nil {
		return scanResult{}, err
	}
	defer s.release()
	st, err := f.Stat()
	if err != nil {
		return scanResult{}, fmt.Errorf("stat segment: %w", err)
	}
	res := scanSegmentBelow(f, st.Size(), s.base, interval, true, limit)
	if res.validBytes < res.fileSize {
		res.zeroTail = zeroFrom(f, res.validBytes, res.fileSize)
		if err := f.Truncate(res.validBytes); err != nil {
			return res, fmt.Errorf("truncate segment: %w", err)
		}
	}
	// What recovery keeps is made durable now, so that the recovery
	// point can move past it at once (the cleaner cleans only below it).
	if err := fdatasync(f); err != nil {
		return res, fmt.Errorf("sync recovered segment %s: %w", s.logPath, err)
	}
	s.size.Store(res.validBytes)
	s.synced.Store(res.validBytes)
	s.ib = res.ib
	if s.sealed {
		if te, ok := s.ib.final(); ok {
			res.tidx = append(res.tidx, te[:]...)
		}
	}
	s.idx.install(res.idx)
	s.tidx.install(res.tidx)
	// The aborted transactions are refilled by the producer state replay
	// that follows recovery (see Log.loadProducerStateLocked).
	s.txn.install(nil)
	s.maxTS.Store(s.ib.maxTS)
	s.maxTSOffset.Store(s.ib.maxTSOffset)
	return res, nil
}

// rebuildIndexes rebuilds the indexes of a segment whose index files were
// lost or damaged, trusting its log bytes (they lie below the recovery
// point). Callers hold rebuildMu.
func (s *segment) rebuildIndexes() error {
	f, err := s.acquire()
	if err != nil {
		return err
	}
	defer s.release()
	size := s.size.Load()
	res := scanSegment(f, size, s.base, defaultIndexInterval, false)
	if res.validBytes != size {
		return fmt.Errorf("%w: %s: unreadable batch at %d below the recovery point", ErrCorruptIndex, s.logPath, res.validBytes)
	}
	ib := res.ib
	if te, ok := ib.final(); ok {
		res.tidx = append(res.tidx, te[:]...)
	}
	s.idx.install(res.idx)
	s.tidx.install(res.tidx)
	s.maxTS.Store(ib.maxTS)
	s.maxTSOffset.Store(ib.maxTSOffset)
	return nil
}

// truncateLocked removes every batch from the one holding offset on, and
// the index entries that pointed at them. It returns the new end offset of
// the segment.
func (s *segment) truncateLocked(offset int64) (int64, error) {
	f, err := s.acquire()
	if err != nil {
		return 0, err
	}
	defer s.release()
	pos, _, err := s.findPosition(f, offset, s.size.Load())
	if err != nil {
		return 0, err
	}
	if pos == s.size.Load() {
		return s.ib.next, nil
	}
	// The caller loaded the txn index (Log.segmentTxnIndex).
	txn := s.txn.entries()
	if err := f.Truncate(pos); err != nil {
		return 0, fmt.Errorf("truncate segment: %w", err)
	}
	s.allocEnd = 0
	s.size.Store(pos)
	if s.synced.Load() > pos {
		s.synced.Store(pos)
	}
	// The scan of what is left is short (one segment's worth at most) and
	// yields indexes exactly as appends would have built them.
	res := scanSegment(f, pos, s.base, s.ib.interval, false)
	s.ib = res.ib
	s.idx.install(res.idx)
	s.tidx.install(res.tidx)
	s.txn.install(append([]byte(nil), txnEntriesBelow(txn, s.ib.next)...))
	s.maxTS.Store(s.ib.maxTS)
	s.maxTSOffset.Store(s.ib.maxTSOffset)
	return s.ib.next, nil
}

// persistIndexes writes both indexes to their files, fsynced when sync is
// set. A deleted segment's are not written: they would come back under
// their old names. (A persist that raced the rename may still leave an
// index file without its .log; the next open removes it.)
func (s *segment) persistIndexes(sync bool) error {
	if s.deleted.Load() {
		return nil
	}
	if err := s.idx.persist(sync); err != nil {
		return err
	}
	if err := s.tidx.persist(sync); err != nil {
		return err
	}
	return s.persistTxnIndex(sync)
}

// indexesPersisted reports whether every index file holds its entries.
func (s *segment) indexesPersisted() bool {
	return s.idx.isPersisted() && s.tidx.isPersisted() && s.txn.isPersisted()
}

// removeFiles deletes the segment's files. Readers still holding the log
// file keep reading it; the file is closed when they release it.
func (s *segment) removeFiles() error {
	s.closeFile()
	var errs []error
	for _, p := range []string{s.logPath, s.idx.path, s.tidx.path, s.txn.path} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// renameDeleted takes the segment out of use: new readers get ErrClosed,
// readers holding the file keep it until they release it, and the files
// are renamed with the .deleted suffix (Kafka's names, e.g.
// 00000000000000000000.log.deleted), to be removed later. It returns the
// new paths. A missing index file is skipped.
func (s *segment) renameDeleted() ([]string, error) {
	s.deleted.Store(true)
	s.closeFile()
	var paths []string
	var errs []error
	for _, p := range []string{s.logPath, s.idx.path, s.tidx.path, s.txn.path} {
		to := p + deletedSuffix
		if err := os.Rename(p, to); err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("rename deleted segment file: %w", err))
			}
			continue
		}
		paths = append(paths, to)
	}
	return paths, errors.Join(errs...)
}

// largestTimestamp is the segment's largest record timestamp, which time
// retention measures; for a segment with no timestamps (all -1), the log
// file's modification time, as Kafka does.
func (s *segment) largestTimestamp() (int64, error) {
	if err := s.loadIndexes(); err != nil {
		return 0, err
	}
	if ts := s.maxTS.Load(); ts >= 0 {
		return ts, nil
	}
	st, err := os.Stat(s.logPath)
	if err != nil {
		return 0, fmt.Errorf("stat segment: %w", err)
	}
	return st.ModTime().UnixMilli(), nil
}

// restoreAppenderLocked rebuilds the appender state of a segment whose
// indexes are loaded and complete (a clean shutdown): it reads the first
// batch's header and the batches after the last offset index entry.
func (s *segment) restoreAppenderLocked(f io.ReaderAt) error {
	ib := newIndexBuilder(s.base, s.ib.interval)
	if ts, off, ok := lastTimeEntry(s.tidx.entries(), s.base); ok {
		ib.lastTimeTS, ib.maxTS, ib.maxTSOffset = ts, ts, off
	}
	end := s.size.Load()
	var pos int64
	if ents := s.idx.entries(); len(ents) > 0 {
		_, p := readOffsetEntry(ents, len(ents)/offsetEntrySize-1)
		pos = int64(p)
	}
	// After an entry the counter restarts with the indexed batch's size,
	// so the bytes since the entry are all bytes from its position on.
	ib.bytesSince = end - pos
	hs := newHeaderScanner(f, end)
	if end > 0 {
		h, err := hs.header(0)
		if err != nil {
			return fmt.Errorf("scan %s at 0: %w", s.logPath, err)
		}
		ib.firstTS = h.MaxTimestamp()
	}
	for pos < end {
		h, err := hs.header(pos)
		if err != nil {
			return fmt.Errorf("scan %s at %d: %w", s.logPath, pos, err)
		}
		if ts := h.MaxTimestamp(); ts > ib.maxTS {
			ib.maxTS, ib.maxTSOffset = ts, h.LastOffset()
		}
		ib.next = h.NextOffset()
		pos += record.Size(h)
	}
	s.ib = ib
	s.maxTS.Store(ib.maxTS)
	s.maxTSOffset.Store(ib.maxTSOffset)
	return nil
}
