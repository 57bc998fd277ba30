package storage

import (
	"bufio"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/gregor-io/gregor/protocol/record"
)

// Log compaction (cleanup.policy "compact"), after Kafka's log cleaner.
//
// A compacted log has a clean part, from the log start to its first dirty
// offset (kept per log in cleaner-offset-checkpoint), and a dirty part
// after it. The cleanable range ends at the first uncleanable offset: the
// lowest of the active segment's base, the high watermark, the recovery
// point (only segments fsynced with their indexes are cleaned) and the
// base of the first dirty segment whose newest record is younger than
// min.compaction.lag.ms.
//
// A log is cleaned when the dirty share of its cleanable bytes is above
// min.cleanable.dirty.ratio, when its oldest dirty batch is older than
// max.compaction.lag.ms, or when a tombstone the cleaner kept has reached
// its delete horizon. Cleaning builds an offset map (the hash of each key
// to its latest offset) over the dirty range; when the map reaches its
// bound it stops at a batch boundary and that boundary ends the range.
// Then every segment from the first up to the end of the range is
// rewritten, in groups of consecutive segments that together fit in
// segment.bytes, segment.index.bytes and 2^31 offsets, each group into one
// new segment. A record stays when it lies past the range, or when it has
// a key and no later offset in the map holds that key; a tombstone (null
// value) that stays also needs its batch's delete horizon not passed.
// Records without a key are dropped, as Kafka drops them.
//
// Delete horizon (KIP-534): when a batch that keeps a tombstone is
// rewritten and has no delete horizon yet, it gets one: now +
// delete.retention.ms, stored as its base timestamp with attribute bit 6
// set (record timestamp deltas are rebased, so record timestamps do not
// change). A later cleaning at or after the horizon drops its tombstones.
// The earliest horizon in the log is kept in memory to trigger that later
// cleaning; after a restart it is unknown until the next cleaning that the
// dirty ratio or the lag triggers.
//
// Rewritten batches keep their base offset, last offset delta (so the last
// offset and sequence number survive when the last record goes), leader
// epoch, producer id, epoch and base sequence, timestamp type, and codec
// (recompressed with it). A batch left with no record is dropped, except
// the last batch of an idempotent producer (kept empty, as Kafka keeps it,
// so that the producer's state survives) and, when nothing of a group's
// last segment is kept, that segment's last batch (kept empty so that a
// cleaned segment always reaches into the last segment it replaces, which
// completing a .swap at open relies on). A cleaned segment may still end
// before the next segment's base, when it keeps early batches of its last
// segment and drops the later ones: crash recovery takes such gaps as
// they are. Batches
// with no change are copied as they are; a group of one segment in which
// nothing changed is not rewritten at all.
//
// Transactions: the cleanable range also ends at the last stable offset,
// so every transaction in it is decided. The records of aborted
// transactions (listed by the txn indexes) are dropped and never enter
// the offset map: an aborted record supersedes nothing. A COMMIT or ABORT
// marker stays while a batch of its transaction is in the log (a
// cleaning reads the log from its first segment, so it sees them); once
// none is, the marker gets a delete horizon as tombstones do (now +
// delete.retention.ms, attribute bit 6 and its base timestamp), and a
// cleaning after it drops the marker. A cleaned segment's txn index keeps
// the aborted transactions whose marker it keeps with batches read by
// this cleaning, and those past the cleaned range.
//
// Replacement: the group is written to <base>.log.cleaned with
// <base>.index.cleaned, <base>.timeindex.cleaned and, when it has
// entries, <base>.txnindex.cleaned, fsynced, all without the log's lock.
// Then, under the lock (appends wait only for renames and two directory
// fsyncs): if the log still holds the group's segments, the files are
// renamed to .swap (the log file last: from here the
// replacement is decided) and the directory fsynced; the old segments
// leave the list and their files are renamed .deleted, to be removed after
// file.delete.delay.ms; the .swap files get their final names; the
// directory is fsynced. Readers holding an old segment's file keep reading
// it; a read that finds an old segment closed starts again on the new
// list. At open, .cleaned files are removed and a <base>.log.swap
// completes its replacement: the segments whose base lies in
// [base, its last offset] are deleted, and the .swap files renamed.

const (
	cleanerCheckpointFile = "cleaner-offset-checkpoint"
	// offsetMapEntrySize is what Kafka counts per offset map entry: a
	// 16-byte key hash and an 8-byte offset.
	offsetMapEntrySize = 24
	// offsetMapLoadFactor is Kafka's dedupe buffer load factor.
	offsetMapLoadFactor = 0.9
)

// errCleaningAborted stops a cleaning whose segments the log no longer
// holds (retention, truncation or deletion ran meanwhile).
var errCleaningAborted = errors.New("storage: cleaning aborted: the log changed")

// CleanStats describes a cleaning pass.
type CleanStats struct {
	// Logs is the number of logs cleaned.
	Logs int
	// BytesRead is the size of the segments read (the offset map's range
	// and the rewritten segments); BytesWritten the size of the segments
	// written.
	BytesRead, BytesWritten int64
	// RecordsRead and RecordsKept count the records of rewritten segments.
	RecordsRead, RecordsKept int64
}

func (s *CleanStats) add(o CleanStats) {
	s.Logs += o.Logs
	s.BytesRead += o.BytesRead
	s.BytesWritten += o.BytesWritten
	s.RecordsRead += o.RecordsRead
	s.RecordsKept += o.RecordsKept
}

// offsetMap maps key hashes to the latest offset of the key, up to a
// number of entries.
type offsetMap struct {
	m          map[[md5.Size]byte]int64
	maxEntries int
}

func newOffsetMap(maxEntries int) *offsetMap {
	return &offsetMap{m: make(map[[md5.Size]byte]int64, min(maxEntries, 1<<16)), maxEntries: maxEntries}
}

func (om *offsetMap) put(key []byte, offset int64) { om.m[md5.Sum(key)] = offset }

func (om *offsetMap) get(key []byte) (int64, bool) {
	o, ok := om.m[md5.Sum(key)]
	return o, ok
}

// cleanable is a log's cleaning state at one moment.
type cleanable struct {
	firstDirty       int64
	firstUncleanable int64
	cleanBytes       int64
	dirtyBytes       int64
	lagExceeded      bool
	horizonDue       bool
}

func (c cleanable) ratio() float64 {
	if c.cleanBytes+c.dirtyBytes == 0 {
		return 0
	}
	return float64(c.dirtyBytes) / float64(c.cleanBytes+c.dirtyBytes)
}

// needsCleaning applies Kafka's rule: a dirty ratio above
// min.cleanable.dirty.ratio, or max.compaction.lag.ms passed with
// something to clean; plus a tombstone delete horizon that passed.
func (c cleanable) needsCleaning(cfg *Config) bool {
	return (c.dirtyBytes > 0 && c.ratio() > cfg.MinCleanableDirtyRatio) ||
		(c.lagExceeded && c.dirtyBytes > 0) || c.horizonDue
}

// FirstDirtyOffset is where the log's dirty (not yet cleaned) part starts:
// the cleaner's checkpoint, or the log start when it has none or it lies
// outside the log.
func (l *Log) FirstDirtyOffset() int64 {
	fd, start, leo := l.firstDirty.Load(), l.logStart.Load(), l.leo.Load()
	if fd < start || fd > leo {
		return start
	}
	return fd
}

// cleanableState computes the log's cleanable range and sizes at now.
func (l *Log) cleanableState(now int64) (cleanable, error) {
	cfg := l.cfg.Load()
	segs := *l.segs.Load()
	var c cleanable
	c.firstDirty = l.FirstDirtyOffset()
	active := segs[len(segs)-1]
	fu := min(active.base, l.LastStableOffset(), l.recoveryPoint.Load())
	for i, s := range segs[:len(segs)-1] {
		if s.base >= fu {
			break
		}
		if nextBase(segs, i, l.leo.Load()) <= c.firstDirty || cfg.MinCompactionLagMs == 0 {
			continue
		}
		ts, err := s.largestTimestamp()
		if err != nil {
			return c, err
		}
		if now-ts < cfg.MinCompactionLagMs {
			fu = s.base
			break
		}
	}
	c.firstUncleanable = max(fu, c.firstDirty)
	for i, s := range segs[:len(segs)-1] {
		end := nextBase(segs, i, l.leo.Load())
		switch {
		case s.base < c.firstDirty:
			c.cleanBytes += s.size.Load()
		case s.base < c.firstUncleanable && end > c.firstDirty:
			c.dirtyBytes += s.size.Load()
		}
	}
	if c.dirtyBytes > 0 && cfg.MaxCompactionLagMs < math.MaxInt64 {
		ts, ok, err := l.batchTimestampAt(segs, c.firstDirty)
		if err != nil {
			return c, err
		}
		c.lagExceeded = ok && ts >= 0 && now-ts > cfg.MaxCompactionLagMs
	}
	c.horizonDue = l.deleteHorizon.Load() <= now
	return c, nil
}

// batchTimestampAt is the max timestamp of the batch holding offset.
func (l *Log) batchTimestampAt(segs []*segment, offset int64) (int64, bool, error) {
	s := segs[segmentFor(segs, offset)]
	f, err := s.acquire()
	if err != nil {
		return 0, false, err
	}
	defer s.release()
	end := s.size.Load()
	pos, _, err := s.findPosition(f, offset, end)
	if err != nil || pos >= end {
		return 0, false, err
	}
	h, err := newHeaderScanner(f, end).header(pos)
	if err != nil {
		return 0, false, err
	}
	return h.MaxTimestamp(), true, nil
}

// cleaner cleans compacted logs one at a time.
type cleaner struct {
	maxEntries int
	now        func() time.Time
}

// batchReader reads the batches of one segment in order.
type batchReader struct {
	r   *bufio.Reader
	buf []byte
}

func newBatchReader(f *os.File, size int64) *batchReader {
	return &batchReader{r: bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 256<<10)}
}

// next returns the next batch, valid until the following call; io.EOF at
// the end.
func (br *batchReader) next() (record.Batch, error) {
	var hdr [record.LogOverhead]byte
	if _, err := io.ReadFull(br.r, hdr[:]); err != nil {
		return nil, err
	}
	size := record.Size(hdr[:])
	if size < record.HeaderSize || size > math.MaxInt32 {
		return nil, fmt.Errorf("%w: bad batch length", record.ErrTruncated)
	}
	if int64(cap(br.buf)) < size {
		br.buf = make([]byte, size)
	}
	b := br.buf[:size]
	copy(b, hdr[:])
	if _, err := io.ReadFull(br.r, b[record.LogOverhead:]); err != nil {
		return nil, fmt.Errorf("read batch: %w", err)
	}
	return record.Batch(b), nil
}

// forEachBatch calls fn for every batch of s, in order.
func forEachBatch(ctx context.Context, s *segment, fn func(b record.Batch) error) error {
	f, err := s.acquire()
	if err != nil {
		if errors.Is(err, ErrClosed) {
			return errCleaningAborted
		}
		return err
	}
	defer s.release()
	br := newBatchReader(f, s.size.Load())
	for i := 0; ; i++ {
		if i%64 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		b, err := br.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", s.logPath, err)
		}
		if err := fn(b); err != nil {
			return err
		}
	}
}

var errMapFull = errors.New("offset map full")

// buildOffsetMap maps the keys of the records in [c.firstDirty,
// c.firstUncleanable) to their latest offsets. It returns where the
// mapped range ends: c.firstUncleanable, or the base of the first batch
// that did not fit in the map.
func (cl *cleaner) buildOffsetMap(ctx context.Context, segs []*segment, c cleanable, om *offsetMap, aborted abortedSet, st *CleanStats) (int64, error) {
	end := c.firstUncleanable
	var scratch []byte
	for _, s := range segs[:len(segs)-1] {
		if s.base >= c.firstUncleanable {
			break
		}
		err := forEachBatch(ctx, s, func(b record.Batch) error {
			if b.LastOffset() < c.firstDirty {
				return nil
			}
			if b.BaseOffset() >= c.firstUncleanable {
				return errMapFull // past the range: stop here
			}
			st.BytesRead += int64(len(b))
			if b.Control() || aborted.holds(b) {
				return nil // markers have no key; aborted records never supersede
			}
			if len(om.m) > 0 && len(om.m)+int(b.RecordCount()) > om.maxEntries {
				end = max(b.BaseOffset(), c.firstDirty)
				return errMapFull
			}
			return record.ForEachRecord(b, &scratch, func(off, _ int64, r *record.Record) error {
				if r.Key != nil && off >= c.firstDirty {
					om.put(r.Key, off)
				}
				return nil
			})
		})
		if errors.Is(err, errMapFull) {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	return end, nil
}

// groupSegments splits segs into groups of consecutive segments whose
// sizes add up to at most segment.bytes and their offset indexes to at most
// segment.index.bytes, spanning fewer than 2^31 offsets (Kafka's rule).
// next gives where a segment's offsets end.
func groupSegments(segs []*segment, cfg *Config, next func(i int) int64) ([][]*segment, error) {
	var groups [][]*segment
	for i := 0; i < len(segs); {
		if err := segs[i].loadIndexes(); err != nil {
			return nil, err
		}
		size, idx := segs[i].size.Load(), int64(len(segs[i].idx.entries()))
		j := i + 1
		for ; j < len(segs); j++ {
			if err := segs[j].loadIndexes(); err != nil {
				return nil, err
			}
			s := segs[j]
			if size+s.size.Load() > cfg.SegmentBytes || idx+int64(len(s.idx.entries())) > cfg.SegmentIndexBytes ||
				next(j)-1-segs[i].base > math.MaxInt32 {
				break
			}
			size += s.size.Load()
			idx += int64(len(s.idx.entries()))
		}
		groups = append(groups, segs[i:j])
		i = j
	}
	return groups, nil
}

// cleanLog cleans l once if its state asks for it (or always with force)
// and returns what it did.
func (cl *cleaner) cleanLog(ctx context.Context, l *Log, force bool) (CleanStats, error) {
	var st CleanStats
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	cfg := l.cfg.Load()
	if !cfg.Compact || l.shut.Load() {
		// A log deleted, or moved to another log dir, since the pass
		// listed it: nothing of it is to be rewritten.
		return st, nil
	}
	now := cl.now().UnixMilli()
	c, err := l.cleanableState(now)
	if err != nil {
		return st, err
	}
	if !force && !c.needsCleaning(cfg) {
		return st, nil
	}
	segs := *l.segs.Load()
	// The aborted transactions that start in the cleanable range: it ends
	// at or below the last stable offset, so each is decided and listed.
	abortedList, err := l.AbortedTransactions(segs[0].base, c.firstUncleanable)
	if err != nil {
		return st, err
	}
	aborted := newAbortedSet(abortedList)
	om := newOffsetMap(cl.maxEntries)
	end, err := cl.buildOffsetMap(ctx, segs, c, om, aborted, &st)
	if err != nil {
		return st, err
	}
	// The segments to rewrite: from the first, those that start below the
	// end of the mapped range (never the active one).
	n := 0
	for n < len(segs)-1 && segs[n].base < end {
		n++
	}
	if n == 0 {
		return st, nil
	}
	leo := l.leo.Load()
	groups, err := groupSegments(segs[:n], cfg, func(i int) int64 { return nextBase(segs, i, leo) })
	if err != nil {
		return st, err
	}
	l.mu.Lock()
	lastOfProducer := l.producers.lastOffsets()
	l.mu.Unlock()
	w := groupWriter{
		l: l, cfg: cfg, om: om, end: end, now: now, lastOfProducer: lastOfProducer,
		horizon: math.MaxInt64, aborted: aborted, txnSeen: map[int64]bool{}, abortSeen: map[int64]bool{},
	}
	for _, g := range groups {
		if err := w.clean(ctx, g, &st); err != nil {
			return st, err
		}
	}
	l.firstDirty.Store(end)
	l.deleteHorizon.Store(w.horizon)
	st.Logs = 1
	l.logger.Info("cleaned log", "first_dirty", c.firstDirty, "end", end, "segments", n, "groups", len(groups),
		"bytes_read", st.BytesRead, "bytes_written", st.BytesWritten, "records_kept", st.RecordsKept)
	return st, nil
}

// groupWriter rewrites groups of segments of one log.
type groupWriter struct {
	l              *Log
	cfg            *Config
	om             *offsetMap
	end            int64 // records at or past it stay
	now            int64
	lastOfProducer map[int64]int64
	horizon        int64 // earliest delete horizon of a batch that keeps a tombstone or a marker
	// aborted are the aborted transactions starting below end; txnSeen
	// the producers with a batch of their current transaction read in
	// this cleaning (it started at the log's first segment), abortSeen the
	// markers (by offset) of aborted transactions with a batch read.
	aborted   abortedSet
	txnSeen   map[int64]bool
	abortSeen map[int64]bool

	scratch []byte
	out     []byte
	recs    []record.Record
	hdrs    []record.Header
}

// filter returns the batch to write in place of b (b itself when nothing
// changes), or nil to drop it; kept counts its records that stay.
func (w *groupWriter) filter(b record.Batch) (out record.Batch, kept int, err error) {
	if b.Control() {
		return w.filterControl(b)
	}
	abortedBatch := false
	if b.Transactional() && b.LastOffset() < w.end {
		if t, ok := w.aborted.find(b); ok {
			abortedBatch = true
			w.abortSeen[t.LastOffset] = true
		} else {
			w.txnSeen[b.ProducerID()] = true
		}
	}
	horizonPassed := b.HasDeleteHorizon() && w.now >= b.BaseTimestamp()
	w.recs, w.hdrs = w.recs[:0], w.hdrs[:0]
	total := 0
	tombstones := false
	err = record.ForEachRecord(b, &w.scratch, func(off, _ int64, r *record.Record) error {
		total++
		keep := true
		switch {
		case abortedBatch:
			keep = false
		case off >= w.end:
		case r.Key == nil:
			keep = false
		default:
			if latest, ok := w.om.get(r.Key); ok && off < latest {
				keep = false
			} else if r.Value == nil && horizonPassed {
				keep = false
			}
		}
		if !keep {
			return nil
		}
		tombstones = tombstones || r.Value == nil
		rec := *r
		n := len(w.hdrs)
		w.hdrs = append(w.hdrs, r.Headers...)
		rec.Headers = w.hdrs[n:len(w.hdrs):len(w.hdrs)]
		w.recs = append(w.recs, rec)
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("batch at offset %d: %w", b.BaseOffset(), err)
	}
	setHorizon := tombstones && !b.HasDeleteHorizon()
	if tombstones {
		h := b.BaseTimestamp()
		if setHorizon {
			h = satAdd(w.now, w.cfg.DeleteRetentionMs)
		}
		w.horizon = min(w.horizon, h)
	}
	if len(w.recs) == total && !setHorizon {
		return b, total, nil
	}
	if len(w.recs) == 0 {
		if pid := b.ProducerID(); pid >= 0 && w.lastOfProducer[pid] == b.LastOffset() {
			w.out = record.AppendEmpty(w.out[:0], b)
			return record.Batch(w.out), 0, nil
		}
		return nil, 0, nil
	}
	h := record.BatchHeader{
		BaseOffset: b.BaseOffset(), PartitionLeaderEpoch: b.PartitionLeaderEpoch(), Codec: b.Codec(),
		LogAppendTime: b.LogAppendTime(), Transactional: b.Transactional(),
		DeleteHorizon: b.HasDeleteHorizon() || setHorizon, BaseTimestamp: b.BaseTimestamp(),
		ProducerID: b.ProducerID(), ProducerEpoch: b.ProducerEpoch(), BaseSequence: b.BaseSequence(),
	}
	if setHorizon {
		// The base timestamp becomes the horizon; the deltas are rebased
		// so that every record keeps its timestamp.
		h.BaseTimestamp = satAdd(w.now, w.cfg.DeleteRetentionMs)
		for i := range w.recs {
			w.recs[i].TimestampDelta += b.BaseTimestamp() - h.BaseTimestamp
		}
	}
	w.out, err = record.Build(w.out[:0], h, w.recs)
	if err != nil {
		return nil, 0, fmt.Errorf("rebuild batch at offset %d: %w", b.BaseOffset(), err)
	}
	nb := record.Batch(w.out)
	nb.SetLastOffsetDelta(b.LastOffsetDelta())
	if b.LogAppendTime() {
		nb.SetMaxTimestamp(b.MaxTimestamp())
	}
	return nb, len(w.recs), nil
}

// filterControl decides what becomes of a control batch (Kafka's rules for
// markers). A marker below the cleaned range's end whose transaction left
// no batch in the log (an aborted one whose batches an earlier cleaning
// removed, or a committed one all of whose records were compacted away)
// only tells readers what they no longer see: it gets a delete horizon
// (now + delete.retention.ms, as a tombstone does), and a cleaning after
// the horizon drops it. Other control batches stay as they are.
func (w *groupWriter) filterControl(b record.Batch) (record.Batch, int, error) {
	if b.LastOffset() >= w.end || b.ProducerID() < 0 {
		return b, int(b.RecordCount()), nil
	}
	_, m, ok, err := record.ParseControl(b)
	if err != nil {
		return nil, 0, fmt.Errorf("control batch at offset %d: %w", b.BaseOffset(), err)
	}
	if !ok {
		return b, int(b.RecordCount()), nil
	}
	pid := b.ProducerID()
	empty := !w.txnSeen[pid]
	if !m.Commit {
		empty = !w.abortSeen[b.BaseOffset()]
	}
	delete(w.txnSeen, pid)
	if !empty {
		return b, int(b.RecordCount()), nil
	}
	if b.HasDeleteHorizon() {
		if w.now >= b.BaseTimestamp() {
			return nil, 0, nil
		}
		w.horizon = min(w.horizon, b.BaseTimestamp())
		return b, int(b.RecordCount()), nil
	}
	horizon := satAdd(w.now, w.cfg.DeleteRetentionMs)
	w.horizon = min(w.horizon, horizon)
	w.recs = w.recs[:0]
	err = record.ForEachRecord(b, &w.scratch, func(_, ts int64, r *record.Record) error {
		rec := *r
		rec.Headers = nil
		rec.TimestampDelta = ts - horizon // the record keeps its timestamp
		w.recs = append(w.recs, rec)
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("control batch at offset %d: %w", b.BaseOffset(), err)
	}
	w.out, err = record.Build(w.out[:0], record.BatchHeader{
		BaseOffset: b.BaseOffset(), PartitionLeaderEpoch: b.PartitionLeaderEpoch(),
		Transactional: true, Control: true, DeleteHorizon: true, BaseTimestamp: horizon,
		ProducerID: pid, ProducerEpoch: b.ProducerEpoch(), BaseSequence: b.BaseSequence(),
	}, w.recs)
	if err != nil {
		return nil, 0, fmt.Errorf("rebuild control batch at offset %d: %w", b.BaseOffset(), err)
	}
	nb := record.Batch(w.out)
	nb.SetLastOffsetDelta(b.LastOffsetDelta())
	return nb, len(w.recs), nil
}

// abortedSet finds the aborted transaction a batch belongs to.
type abortedSet map[int64][]AbortedTxn

func newAbortedSet(list []AbortedTxn) abortedSet {
	s := abortedSet{}
	for _, a := range list {
		s[a.ProducerID] = append(s[a.ProducerID], a)
	}
	return s
}

func (s abortedSet) find(b record.Batch) (AbortedTxn, bool) {
	if !b.Transactional() || b.Control() {
		return AbortedTxn{}, false
	}
	for _, a := range s[b.ProducerID()] {
		if a.FirstOffset <= b.BaseOffset() && b.LastOffset() < a.LastOffset {
			return a, true
		}
	}
	return AbortedTxn{}, false
}

func (s abortedSet) holds(b record.Batch) bool {
	_, ok := s.find(b)
	return ok
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// cleanedPaths are the files of a cleaned segment with a suffix (.cleaned
// or .swap) after the final names, log file last. The txn index file is
// there only when the cleaned segment has aborted transactions.
func cleanedPaths(dir string, base int64, suffix string) [4]string {
	return [4]string{
		filepath.Join(dir, segmentFileName(base, indexSuffix)+suffix),
		filepath.Join(dir, segmentFileName(base, timeIndexSuffix)+suffix),
		filepath.Join(dir, segmentFileName(base, txnIndexSuffix)+suffix),
		filepath.Join(dir, segmentFileName(base, logSuffix)+suffix),
	}
}

// clean rewrites one group of segments into one and swaps it in.
func (w *groupWriter) clean(ctx context.Context, g []*segment, st *CleanStats) error {
	l := w.l
	base := g[0].base
	paths := cleanedPaths(l.dir, base, cleanedSuffix)
	removeCleaned := func() {
		for _, p := range paths {
			os.Remove(p) //nolint:errcheck // best effort; the next open removes leftovers too
		}
	}
	var oldTxn []byte
	for _, s := range g {
		buf, err := l.segmentTxnIndex(s)
		if err != nil {
			return err
		}
		oldTxn = append(oldTxn, buf...)
	}
	f, err := os.OpenFile(paths[3], os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("create cleaned segment: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			removeCleaned()
		}
	}()
	bw := bufio.NewWriterSize(f, 256<<10)
	ib := newIndexBuilder(base, w.cfg.IndexIntervalBytes)
	var idx, tidx []byte
	var pos int64
	changed := len(g) > 1
	write := func(b record.Batch) error {
		if pos+int64(len(b)) > math.MaxInt32 {
			return fmt.Errorf("%w: cleaned segment over 2 GiB", ErrRecordTooLarge)
		}
		if _, err := bw.Write(b); err != nil {
			return fmt.Errorf("write cleaned segment: %w", err)
		}
		oe, okO, te, okT := ib.add(pos, int64(len(b)), b.LastOffset(), b.MaxTimestamp())
		if okO {
			idx = append(idx, oe[:]...)
		}
		if okT {
			tidx = append(tidx, te[:]...)
		}
		pos += int64(len(b))
		st.BytesWritten += int64(len(b))
		return nil
	}
	last := g[len(g)-1]
	var lastHdr []byte // header of the last batch of the last segment
	for _, s := range g {
		err := forEachBatch(ctx, s, func(b record.Batch) error {
			st.BytesRead += int64(len(b))
			st.RecordsRead += int64(b.RecordCount())
			if s == last {
				lastHdr = append(lastHdr[:0], b[:record.HeaderSize]...)
			}
			out, kept, err := w.filter(b)
			if err != nil {
				return err
			}
			st.RecordsKept += int64(kept)
			if len(out) != len(b) || (len(out) > 0 && &out[0] != &b[0]) {
				changed = true
			}
			if out == nil {
				return nil
			}
			return write(out)
		})
		if err != nil {
			return err
		}
	}
	if !changed {
		return nil
	}
	// The cleaned segment keeps the aborted transactions whose marker it
	// keeps with some of their batches read now (their records are gone,
	// but a reader of an older copy may still meet them), and those past
	// the cleaned range, untouched. A transaction whose batches an earlier
	// cleaning removed has nothing left to abort.
	var txn []byte
	for i := 0; i < len(oldTxn)/txnEntrySize; i++ {
		if a := readTxnEntry(oldTxn, i); a.LastOffset >= w.end || w.abortSeen[a.LastOffset] {
			txn = append(txn, oldTxn[i*txnEntrySize:(i+1)*txnEntrySize]...)
		}
	}
	if lastHdr != nil && (pos == 0 || ib.next <= last.base) {
		// Keep the cleaned segment reaching into the last segment it
		// replaces (see crash recovery of .swap files).
		if err := write(record.AppendEmpty(nil, record.Batch(lastHdr))); err != nil {
			return err
		}
	}
	if te, okT := ib.final(); okT {
		tidx = append(tidx, te[:]...)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write cleaned segment: %w", err)
	}
	if err := fdatasync(f); err != nil {
		return fmt.Errorf("sync cleaned segment: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close cleaned segment: %w", err)
	}
	for i, data := range [][]byte{idx, tidx, txn} {
		if i == 2 && len(data) == 0 {
			continue
		}
		if err := writeFileSynced(paths[i], data); err != nil {
			return err
		}
	}
	l.step(".cleaned files written")
	ok = true
	if err := l.replaceSegments(g, base, pos, paths); err != nil {
		removeCleaned()
		return err
	}
	return nil
}

func writeFileSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := fdatasync(f); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return f.Close()
}

// replaceSegments swaps the cleaned segment (files at cleaned, size bytes)
// in for old, which must still be consecutive segments of the log.
func (l *Log) replaceSegments(old []*segment, base, size int64, cleaned [4]string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return ErrClosed
	}
	if err := l.Err(); err != nil {
		return err
	}
	segs := *l.segs.Load()
	at := -1
	for i, s := range segs {
		if s == old[0] {
			at = i
			break
		}
	}
	if at < 0 || at+len(old) > len(segs)-1 {
		return errCleaningAborted
	}
	for i, s := range old {
		if segs[at+i] != s {
			return errCleaningAborted
		}
	}
	swap := cleanedPaths(l.dir, base, swapSuffix)
	for i := range cleaned {
		if err := os.Rename(cleaned[i], swap[i]); err != nil {
			if i == 2 && errors.Is(err, os.ErrNotExist) {
				continue // no aborted transaction
			}
			return fmt.Errorf("rename cleaned segment: %w", err)
		}
		l.step("renamed " + filepath.Base(swap[i]))
	}
	if err := syncDir(l.dir); err != nil {
		return l.fail(err)
	}
	l.step(".swap files synced")
	// From here the replacement is decided: a crash completes it at open.
	ns := newSegment(l.dir, base, l.cfg.Load().IndexIntervalBytes)
	ns.size.Store(size)
	ns.synced.Store(size)
	ns.sealed = true
	newSegs := make([]*segment, 0, len(segs)-len(old)+1)
	newSegs = append(newSegs, segs[:at]...)
	newSegs = append(newSegs, ns)
	newSegs = append(newSegs, segs[at+len(old):]...)
	l.segs.Store(&newSegs)
	errDel := l.deleteSegmentsLocked(old)
	final := [4]string{ns.idx.path, ns.tidx.path, ns.txn.path, ns.logPath}
	for i := range swap {
		if err := os.Rename(swap[i], final[i]); err != nil {
			if i == 2 && errors.Is(err, os.ErrNotExist) {
				continue
			}
			return l.fail(fmt.Errorf("rename swap segment: %w", err))
		}
		l.step("renamed " + filepath.Base(final[i]))
	}
	if err := syncDir(l.dir); err != nil {
		return l.fail(err)
	}
	l.step("swap done")
	if errDel != nil {
		return l.fail(errDel)
	}
	if hw := l.hw.Load(); hw.seg != nil && hw.seg.deleted.Load() {
		l.setHWLocked(hw.offset)
	}
	return nil
}

// completeSwaps finishes, at open, the segment replacements a crash
// interrupted: for each <base>.log.swap, the segments whose base lies
// between base and the swap's last offset are deleted and the .swap files
// take their final names. Other leftovers are removed by load.
func completeSwaps(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list log dir: %w", err)
	}
	var swaps, logs []int64
	for _, e := range ents {
		name := e.Name()
		if b, ok := parseSegmentName(name, logSuffix+swapSuffix); ok {
			swaps = append(swaps, b)
		} else if b, ok := parseSegmentName(name, logSuffix); ok {
			logs = append(logs, b)
		}
	}
	if len(swaps) == 0 {
		return nil
	}
	sort.Slice(swaps, func(i, j int) bool { return swaps[i] < swaps[j] })
	for _, base := range swaps {
		paths := cleanedPaths(dir, base, swapSuffix)
		f, err := os.Open(paths[3])
		if err != nil {
			return fmt.Errorf("open swap segment: %w", err)
		}
		info, err := f.Stat()
		if err != nil {
			f.Close()
			return fmt.Errorf("stat swap segment: %w", err)
		}
		res := scanSegment(f, info.Size(), base, defaultIndexInterval, true)
		f.Close()
		next := max(res.ib.next, base+1)
		for _, b := range logs {
			if b < base || b >= next {
				continue
			}
			for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
				if err := os.Remove(filepath.Join(dir, segmentFileName(b, suffix))); err != nil && !errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("remove replaced segment: %w", err)
				}
			}
		}
		for i, final := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix, logSuffix} {
			err := os.Rename(paths[i], filepath.Join(dir, segmentFileName(base, final)))
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("rename swap segment: %w", err)
			}
		}
	}
	return syncDir(dir)
}

// RunCleaner runs one cleaning pass now over every compacted log, as the
// Manager's cleaner does every log.cleaner.backoff.ms: each log whose
// state asks for it (see cleanable.needsCleaning) is cleaned once, the
// dirtiest first, and the cleaner offset checkpoints are written.
func (m *Manager) RunCleaner(ctx context.Context) (CleanStats, error) {
	return m.runCleaner(ctx, false)
}

// CleanNow cleans every compacted log once, whatever its dirty ratio.
func (m *Manager) CleanNow(ctx context.Context) (CleanStats, error) {
	return m.runCleaner(ctx, true)
}

func (m *Manager) runCleaner(ctx context.Context, force bool) (CleanStats, error) {
	type cand struct {
		l     *Log
		ratio float64
	}
	var cands []cand
	var errs []error
	now := m.now().UnixMilli()
	for _, l := range m.Logs() {
		cfg := l.cfg.Load()
		if !cfg.Compact || l.Err() != nil {
			continue
		}
		c, err := l.cleanableState(now)
		if err != nil {
			if !errors.Is(err, ErrClosed) {
				errs = append(errs, fmt.Errorf("cleaner state of %s: %w", l.tp, err))
			}
			continue
		}
		if force || c.needsCleaning(cfg) {
			cands = append(cands, cand{l, c.ratio()})
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].ratio > cands[j].ratio })
	var total CleanStats
	for _, c := range cands {
		if ctx.Err() != nil {
			break
		}
		st, err := m.cl.cleanLog(ctx, c.l, force)
		total.add(st)
		if err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, errCleaningAborted) && !errors.Is(err, context.Canceled) {
			errs = append(errs, fmt.Errorf("cleaning %s: %w", c.l.tp, err))
		}
	}
	if total.Logs > 0 {
		errs = append(errs, m.writeCleanerCheckpoints())
	}
	return total, errors.Join(errs...)
}

// writeCleanerCheckpoints writes each dir's cleaner-offset-checkpoint: the
// first dirty offset of every compacted log.
func (m *Manager) writeCleanerCheckpoints() error {
	m.ckptMu.Lock()
	defer m.ckptMu.Unlock()
	m.mu.RLock()
	per := map[*logDir]map[TopicPartition]int64{}
	for _, d := range m.dirs {
		per[d] = map[TopicPartition]int64{}
	}
	for tp, l := range m.mu.logs {
		if l.cfg.Load().Compact && l.firstDirty.Load() >= 0 {
			per[m.mu.dirOf[tp]][tp] = l.FirstDirtyOffset()
		}
	}
	m.mu.RUnlock()
	var errs []error
	for d, o := range per {
		if d.Err() != nil {
			continue
		}
		if err := writeOffsetCheckpoint(filepath.Join(d.path, cleanerCheckpointFile), o); err != nil {
			m.failDir(d, err)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// cleanerLoop runs cleaning passes until ctx is done, waiting
// log.cleaner.backoff.ms after a pass that found nothing to clean.
func (m *Manager) cleanerLoop(ctx context.Context) {
	t := time.NewTimer(m.cfg.CleanerBackoff)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, err := m.RunCleaner(ctx)
		if err != nil && ctx.Err() == nil {
			m.logger.Error("cleaner pass failed", "err", err)
		}
		wait := m.cfg.CleanerBackoff
		if st.Logs > 0 && err == nil {
			wait = 0
		}
		t.Reset(wait)
	}
}
