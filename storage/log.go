package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-io/gregor/protocol/record"
)

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return tp.DirName() }

// DirName is the partition's directory name, "<topic>-<partition>".
func (tp TopicPartition) DirName() string {
	return tp.Topic + "-" + strconv.FormatInt(int64(tp.Partition), 10)
}

// ParseDirName parses "<topic>-<partition>". Topic names may contain '-',
// so the partition is what follows the last one.
func ParseDirName(name string) (TopicPartition, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return TopicPartition{}, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 || strconv.FormatInt(p, 10) != name[i+1:] {
		return TopicPartition{}, false
	}
	return TopicPartition{Topic: name[:i], Partition: int32(p)}, true
}

// OpenState is what the log's owner persisted about it, in the per-dir
// checkpoint files, and whether the last shutdown was clean.
type OpenState struct {
	RecoveryPoint int64
	LogStart      int64
	HighWatermark int64
	// Clean skips the recovery scan: the files were closed by Close.
	Clean bool
}

// Log is one partition's log: a sequence of segments with dense offsets
// from LogStart to LogEndOffset, where appends are serialised and reads are
// lock-free.
//
// Offsets: LogStart <= HighWatermark <= LogEndOffset. Below DurableOffset
// everything is fsynced; below RecoveryPoint the segments and their indexes
// are fsynced, so recovery after a crash scans only from there.
type Log struct {
	dir     string
	tp      TopicPartition
	logger  *slog.Logger
	syncer  *syncer  // nil: flushes run inline
	deleter *deleter // nil: deleted segments' files are removed at once
	now     func() time.Time
	// dirFailed takes the log's dir offline (logEnv.dirFailed); nil
	// outside a Manager.
	dirFailed func(error)
	// writebackBytes is logEnv.writebackBytes (see writeBehindLocked).
	writebackBytes int64
	// wb is where writeBehindLocked last started writeback: seg's bytes
	// below from. Guarded by mu.
	wb struct {
		seg  *segment
		from int64
	}
	// cache is logEnv.cache (see pagecache.go); marks are the log's
	// appends the window has not dropped yet, oldest first, and drop the
	// range it is about to drop. Guarded by mu.
	cache *cacheWindow
	marks []cacheMark
	drop  struct {
		seg *segment
		to  int64
	}
	// cacheAt is the log's index in the window keeper's heap (-1: not in
	// it) and cacheKey its key there. Guarded by cache.mu.
	cacheAt  int
	cacheKey int64
	// prefault is logEnv.prefault (see prefault.go); appended is what was
	// appended since the log was opened, tail the log's share of the
	// prefault budget. Guarded by mu.
	prefault *prefaulter
	appended int64
	tail     int64

	cfg atomic.Pointer[Config]

	// mu serialises appends, rolls, truncation and segment deletion. The
	// append path writes to the page cache while holding it, and may start
	// (not wait for) writeback (writeBehindLocked) or drop older pages from
	// the page cache (holdCacheLocked); no fsync and no directory scan
	// happen under it.
	mu struct {
		sync.Mutex
		closed bool
		gen    uint64 // bumped by truncation, so a sync that raced it does not count
	}
	// syncMu serialises flushes of this log.
	syncMu sync.Mutex

	segs          atomic.Pointer[[]*segment] // copy on write; the last is active
	leo           atomic.Int64
	logStart      atomic.Int64
	hw            atomic.Pointer[offsetPos]
	durable       atomic.Int64
	recoveryPoint atomic.Int64
	firstUnsynced atomic.Int64 // unix ms of the oldest unflushed append; 0 when none
	failed        atomic.Pointer[error]
	syncQueued    atomic.Bool
	// shut is set when the log is closed for good without a flush (its
	// partition deleted, or moved to another log dir): reads fail with
	// ErrClosed from then on.
	shut atomic.Bool
	// truncMark is the lowest log end a truncation left since a move's
	// copy last took it (math.MaxInt64: none); see copyTail.
	truncMark atomic.Int64

	epochs    *epochCache
	producers *producerState // guarded by mu
	// firstUnstable is producers.firstUnstable as of the last change of
	// the producer state or the high watermark (see LastStableOffset).
	firstUnstable atomic.Int64
	autoHW        bool // guarded by mu; see SetAutoHighWatermark
	notify        notifier

	waiters struct {
		sync.Mutex
		list []flushWaiter
	}

	// Cleaner state (compacted logs, see cleaner.go). cleanMu serialises
	// cleanings of this log; firstDirty is the cleaner's checkpoint (-1:
	// none); deleteHorizon is the earliest delete horizon of a tombstone
	// the last cleaning kept (math.MaxInt64: none known).
	cleanMu       sync.Mutex
	firstDirty    atomic.Int64
	deleteHorizon atomic.Int64

	// stepHook, set only by tests, is called after each step of a
	// segment swap or deletion that changes the files, so that a test
	// can take the files as a kill -9 at that moment leaves them.
	stepHook func(step string)
}

// step calls the test hook, if any.
func (l *Log) step(name string) {
	if l.stepHook != nil {
		l.stepHook(name)
	}
}

// offsetPos is an offset with the position of the batch starting at it.
type offsetPos struct {
	offset int64
	seg    *segment
	pos    int64
}

type flushWaiter struct {
	offset int64
	done   chan error
}

// Open opens (and, after an unclean shutdown, recovers) the log in dir.
// A log opened alone flushes inline, and removes the files of segments it
// deletes at once; a Manager's logs share its group commit and its delayed
// file deletion.
func Open(dir string, tp TopicPartition, cfg Config, st OpenState, logger *slog.Logger) (*Log, error) {
	return openLog(dir, tp, cfg, st, logger, logEnv{})
}

// logEnv is what a Manager shares with its logs. The zero value is a log
// on its own, on the wall clock.
type logEnv struct {
	syncer  *syncer
	deleter *deleter
	now     func() time.Time
	// dirFailed is told the first error that fails the log, to take the
	// log's dir offline; nil for a log outside a Manager.
	dirFailed func(error)
	// writebackBytes is ManagerConfig.WritebackBytes; 0 for a log outside
	// a Manager.
	writebackBytes int64
	// cache is the Manager's page-cache window; nil: none (a log outside
	// a Manager, or ManagerConfig.PageCacheKeepBytes 0).
	cache *cacheWindow
	// prefault extends hot logs' files ahead of their end; nil: off (a
	// log outside a Manager, or ManagerConfig.PrefaultBytes 0).
	prefault *prefaulter
}

func openLog(dir string, tp TopicPartition, cfg Config, st OpenState, logger *slog.Logger, env logEnv) (*Log, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if env.now == nil {
		env.now = time.Now
	}
	l := &Log{dir: dir, tp: tp, logger: logger.With("partition", tp.String()),
		syncer: env.syncer, deleter: env.deleter, now: env.now, dirFailed: env.dirFailed,
		writebackBytes: env.writebackBytes, cache: env.cache, prefault: env.prefault, cacheAt: -1}
	l.cfg.Store(&cfg)
	l.firstDirty.Store(-1)
	l.deleteHorizon.Store(math.MaxInt64)
	l.truncMark.Store(math.MaxInt64)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create log dir: %w", err)
	}
	epochs, err := loadEpochCache(filepath.Join(dir, epochCheckpointFile))
	if err != nil {
		return nil, err
	}
	l.epochs = epochs
	if err := l.load(st); err != nil {
		l.closeFiles()
		return nil, fmt.Errorf("open %s: %w", tp, err)
	}
	return l, nil
}

// load lists the segments, recovers the ones after the recovery point when
// the shutdown was not clean, and sets the offsets.
func (l *Log) load(st OpenState) error {
	// A cleaning the crash interrupted after its .swap files were in
	// place is completed first.
	if err := completeSwaps(l.dir); err != nil {
		return err
	}
	ents, err := os.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("list log dir: %w", err)
	}
	cfg := l.cfg.Load()
	var segs []*segment
	indexFiles := map[int64][]string{}
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, deletedSuffix), strings.HasSuffix(name, cleanedSuffix),
			strings.HasSuffix(name, swapSuffix), strings.HasSuffix(name, ".tmp"):
			// Leftovers of an interrupted delete, clean or checkpoint write.
			if err := os.Remove(filepath.Join(l.dir, name)); err != nil {
				return fmt.Errorf("remove leftover: %w", err)
			}
		case strings.HasSuffix(name, logSuffix):
			base, ok := parseSegmentName(name, logSuffix)
			if !ok {
				continue
			}
			s := newSegment(l.dir, base, cfg.IndexIntervalBytes)
			info, err := e.Info()
			if err != nil {
				return fmt.Errorf("stat segment: %w", err)
			}
			s.size.Store(info.Size())
			s.synced.Store(info.Size())
			segs = append(segs, s)
		case strings.HasSuffix(name, indexSuffix), strings.HasSuffix(name, timeIndexSuffix),
			strings.HasSuffix(name, txnIndexSuffix):
			suffix := indexSuffix
			if strings.HasSuffix(name, timeIndexSuffix) {
				suffix = timeIndexSuffix
			} else if strings.HasSuffix(name, txnIndexSuffix) {
				suffix = txnIndexSuffix
			}
			if base, ok := parseSegmentName(name, suffix); ok {
				indexFiles[base] = append(indexFiles[base], name)
			}
		}
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].base < segs[j].base })
	have := map[int64]bool{}
	for _, s := range segs {
		have[s.base] = true
	}
	for base, names := range indexFiles {
		if !have[base] {
			for _, n := range names {
				if err := os.Remove(filepath.Join(l.dir, n)); err != nil {
					return fmt.Errorf("remove orphan index: %w", err)
				}
			}
		}
	}
	if len(segs) == 0 {
		s, err := createSegment(l.dir, st.LogStart, cfg.IndexIntervalBytes)
		if err != nil {
			return err
		}
		if err := syncDir(l.dir); err != nil {
			return err
		}
		segs = append(segs, s)
	}
	for _, s := range segs[:len(segs)-1] {
		s.sealed = true
	}
	l.segs.Store(&segs)

	l.mu.Lock()
	defer l.mu.Unlock()
	rebuildFrom := int64(math.MaxInt64)
	if st.Clean {
		if err := l.openActiveLocked(); err != nil {
			return err
		}
	} else if rebuildFrom, err = l.recoverLocked(st.RecoveryPoint); err != nil {
		return err
	}
	segs = *l.segs.Load()
	active := segs[len(segs)-1]
	leo := active.ib.next
	l.leo.Store(leo)
	l.durable.Store(leo)
	logStart := max(st.LogStart, segs[0].base)
	if logStart > leo {
		logStart = leo
	}
	l.logStart.Store(logStart)
	// A clean shutdown fsynced everything; a recovery fsynced what it
	// scanned, with its indexes, and what lay before the checkpointed
	// recovery point was durable already: either way the whole log is.
	l.recoveryPoint.Store(leo)
	// Epochs starting past the log end lost their batches in a crash. One
	// starting at the log end stays: it began there (a leader's epoch with
	// no batch yet), and dropping it cost every restart an epoch file
	// rewrite, and the broker another one to assign it again, per partition.
	if err := l.epochs.truncateFromEnd(leo + 1); err != nil {
		return err
	}
	if err := l.epochs.truncateFromStart(logStart); err != nil {
		return err
	}
	hw := min(max(st.HighWatermark, logStart), leo)
	l.setHWLocked(hw)
	if err := l.loadProducerStateLocked(rebuildFrom); err != nil {
		return err
	}
	if rebuildFrom == math.MaxInt64 {
		return nil
	}
	// The txn indexes the replay refilled are made durable with the rest
	// of what recovery scanned.
	for _, s := range segs {
		if s.base >= rebuildFrom {
			if err := s.persistTxnIndex(true); err != nil {
				return err
			}
		}
	}
	return nil
}

// openActiveLocked restores the active segment's appender state after a
// clean shutdown: its indexes are complete, so only the batches after its
// last index entry are read.
func (l *Log) openActiveLocked() error {
	segs := *l.segs.Load()
	active := segs[len(segs)-1]
	if err := active.loadIndexes(); err != nil {
		return err
	}
	if _, err := l.segmentTxnIndex(active); err != nil {
		return err
	}
	f, err := active.file()
	if err != nil {
		return err
	}
	return active.restoreAppenderLocked(f)
}

// recoverLocked scans every segment from the one holding the recovery
// point and cuts each after its last valid batch; it deletes no segment.
// It returns the base of the first segment it scanned, whose txn index and
// those of the segments after it the producer state replay refills.
func (l *Log) recoverLocked(recoveryPoint int64) (int64, error) {
	segs := *l.segs.Load()
	cfg := l.cfg.Load()
	first := sort.Search(len(segs), func(i int) bool { return segs[i].base > recoveryPoint }) - 1
	first = max(first, 0)
	for i := first; i < len(segs); i++ {
		s := segs[i]
		limit := int64(math.MaxInt64)
		if i+1 < len(segs) {
			limit = segs[i+1].base
		}
		res, err := s.recoverLocked(cfg.IndexIntervalBytes, limit)
		if err != nil {
			return 0, err
		}
		for _, e := range res.epochs {
			if _, err := l.epochs.assign(e.epoch, e.start, false); err != nil {
				return 0, err
			}
		}
		// A tail of zeros is where batches were not yet written (an
		// extended segment, see prefault.go, or a size that reached the
		// disk before the data): the segment ends before it.
		if res.validBytes < res.fileSize && !res.zeroTail {
			// Only the invalid bytes go: the torn or corrupt tail of this
			// segment, from its first batch that fails its checks or
			// reaches into the next segment's offsets. Later segments
			// stay: each is checked on its own, and what it holds passed
			// its checks, so nothing proves it unacknowledged. Offsets between segments may have gaps
			// (compaction makes them, and a lost unsynced tail of a
			// rolled segment leaves one), so a gap is no damage.
			l.logger.Warn("truncated a damaged log tail", "segment", s.logPath,
				"valid_bytes", res.validBytes, "cut_bytes", res.fileSize-res.validBytes)
		}
	}
	// An empty last segment stays whatever the segment before it ends at:
	// its base offset is the log end a roll reached, and the offsets below
	// it may have been handed out (to records the cleaner later removed,
	// or whose unsynced bytes a crash lost), so they are not handed out
	// again.
	for _, s := range segs[:len(segs)-1] {
		s.sealed = true
	}
	active := segs[len(segs)-1]
	if active.sealed {
		active.sealed = false
		if err := active.loadIndexes(); err != nil {
			return 0, err
		}
		f, err := active.file()
		if err != nil {
			return 0, err
		}
		if err := active.restoreAppenderLocked(f); err != nil {
			return 0, err
		}
	}
	l.segs.Store(&segs)
	for _, s := range segs[first:] {
		if err := s.persistIndexes(true); err != nil {
			return 0, err
		}
	}
	if err := l.epochs.persist(); err != nil {
		return 0, err
	}
	return segs[first].base, syncDir(l.dir)
}

func parseSegmentName(name, suffix string) (int64, bool) {
	digits := strings.TrimSuffix(name, suffix)
	if len(digits) != 20 {
		return 0, false
	}
	base, err := strconv.ParseInt(digits, 10, 64)
	return base, err == nil && base >= 0
}

// Config returns the log's current config.
func (l *Log) Config() Config { return *l.cfg.Load() }

// SetConfig changes the log's config; it applies to the next append.
func (l *Log) SetConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	l.cfg.Store(&cfg)
	return nil
}

// TopicPartition is the partition this log holds.
func (l *Log) TopicPartition() TopicPartition { return l.tp }

// Dir is the log's directory.
func (l *Log) Dir() string { return l.dir }

// LogEndOffset is the offset the next appended record gets.
func (l *Log) LogEndOffset() int64 { return l.leo.Load() }

// LogStartOffset is the first offset readers may fetch.
func (l *Log) LogStartOffset() int64 { return l.logStart.Load() }

// HighWatermark is the offset up to which records are committed.
func (l *Log) HighWatermark() int64 { return l.hw.Load().offset }

// DurableOffset is the offset below which every record is fsynced.
func (l *Log) DurableOffset() int64 { return l.durable.Load() }

// AckedEnd is the offset up to which the log holds its records as an
// acknowledgement promises: the durable offset when appends are fsynced
// before they are acknowledged (flush.messages 1), else the log end. A
// leader counts its own replica at this offset in the high watermark.
func (l *Log) AckedEnd() int64 {
	if l.cfg.Load().syncBeforeAck() {
		return l.durable.Load()
	}
	return l.leo.Load()
}

// RecoveryPoint is the offset from whose segment recovery would scan.
func (l *Log) RecoveryPoint() int64 { return l.recoveryPoint.Load() }

// Size is the total size of the log's segment files.
func (l *Log) Size() int64 {
	var n int64
	for _, s := range *l.segs.Load() {
		n += s.size.Load()
	}
	return n
}

// SegmentCount is the number of segments.
func (l *Log) SegmentCount() int { return len(*l.segs.Load()) }

// Changed returns a channel closed at the next change of the log end, high
// watermark or log start offset.
func (l *Log) Changed() <-chan struct{} { return l.notify.wait() }

// Subscribe makes every later change of the log end, high watermark or log
// start offset send on ch, without blocking, until the returned function is
// called. A fetch long-poll subscribes one channel to all its partitions.
func (l *Log) Subscribe(ch chan<- struct{}) (unsubscribe func()) { return l.notify.subscribe(ch) }

// SetAutoHighWatermark makes the high watermark follow the log by itself,
// for a partition with no other replica: the durable offset when appends
// are fsynced before they are acknowledged (so consumers never see a record
// a crash could take back), else the log end. Off, the owner (replication)
// sets it.
func (l *Log) SetAutoHighWatermark(on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.autoHW = on
	if on {
		target := l.leo.Load()
		if l.cfg.Load().syncBeforeAck() {
			target = l.durable.Load()
		}
		if target > l.hw.Load().offset {
			l.setHWLocked(target)
			l.notify.broadcast()
		}
	}
}

// Err returns the error that failed the log, or nil.
func (l *Log) Err() error {
	if p := l.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// fail marks the log failed after an I/O error: data acknowledged before
// stays, but nothing more is appended or flushed, as Kafka takes a log dir
// offline after a failed write or fsync.
func (l *Log) fail(err error) error {
	if l.shut.Load() {
		// Closed for good (deleted, or moved to another log dir): its
		// files were renamed or removed on purpose, and work that began
		// before (a queued flush persisting a rolled segment's indexes)
		// fails on them. That is no fault of the disk: the dir stays
		// online.
		l.wakeWaiters(math.MaxInt64, ErrClosed)
		return ErrClosed
	}
	wrapped := fmt.Errorf("%w: %w", ErrLogFailed, err)
	if l.failed.CompareAndSwap(nil, &wrapped) {
		l.logger.Error("log failed", "err", err)
		if l.dirFailed != nil {
			l.dirFailed(err)
		}
	}
	l.wakeWaiters(math.MaxInt64, wrapped)
	return wrapped
}

// AppendOptions says how an append treats the batches' offsets.
type AppendOptions struct {
	// AssignOffsets gives the batches offsets from the log end and stamps
	// LeaderEpoch on them (a leader appending producer batches). Without it
	// the batches keep their offsets, which must lie above the log end (a
	// follower copying the leader's log).
	AssignOffsets bool
	LeaderEpoch   int32
	// VerifyTxn (with AssignOffsets) makes a transactional batch that
	// would begin its producer's transaction here require Guard to be
	// the producer's current verification guard (Log.VerificationGuard):
	// the write was verified with the transaction coordinator and no
	// marker for the producer came since. Otherwise ErrInvalidTxnState.
	VerifyTxn bool
	Guard     uint64
}

// AppendResult describes an append.
type AppendResult struct {
	FirstOffset int64
	LastOffset  int64
	// LogStart is the log start offset after the append.
	LogStart int64
	// NeedsFlush is set when the flush policy wants the append fsynced
	// before it is acknowledged: call Flush(ctx, LastOffset+1).
	NeedsFlush bool
	// Duplicate is set when an idempotent producer retried a batch that is
	// already in the log; the offsets are the original append's, and
	// DuplicateTimestamp its max timestamp.
	Duplicate          bool
	DuplicateTimestamp int64
}

// Append writes a record set (whole batches back to back) to the end of the
// log. The batches must have passed validation (record.Validate or, from a
// leader, record.CheckIntegrity): Append only parses their lengths and
// offsets. With AssignOffsets their base offset and leader epoch are patched
// in place in set. The write goes to the page cache; see NeedsFlush.
func (l *Log) Append(set []byte, opts AppendOptions) (AppendResult, error) {
	var res AppendResult
	if len(set) == 0 {
		return res, fmt.Errorf("%w: empty record set", record.ErrTruncated)
	}
	cfg := l.cfg.Load()
	if int64(len(set)) > cfg.SegmentBytes {
		return res, fmt.Errorf("%w: %d bytes, segment.bytes %d", ErrRecordTooLarge, len(set), cfg.SegmentBytes)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return res, ErrClosed
	}
	if err := l.Err(); err != nil {
		return res, err
	}
	next := l.leo.Load()
	first := int64(-1)
	var maxTS int64 = -1
	var prev record.Batch
	it := record.NewIter(set)
	for b, ok := it.Next(); ok; b, ok = it.Next() {
		if opts.AssignOffsets {
			if b.ProducerID() >= 0 && b.Control() {
				if err := l.checkControlLocked(b); err != nil {
					return res, err
				}
			} else if b.ProducerID() >= 0 {
				var same record.Batch
				if prev != nil && prev.ProducerID() == b.ProducerID() {
					same = prev
				}
				dup, isDup, err := l.producers.check(b, same)
				if err != nil {
					return res, err
				}
				if opts.VerifyTxn && b.Transactional() && same == nil && !isDup {
					if err := l.producers.checkGuard(b.ProducerID(), opts.Guard); err != nil {
						return res, err
					}
				}
				if isDup {
					// A retry of a batch already in the log: answer with
					// its offsets and append nothing, as Kafka does.
					return AppendResult{FirstOffset: dup.firstOffset, LastOffset: dup.lastOffset,
						LogStart: l.logStart.Load(), Duplicate: true, DuplicateTimestamp: dup.timestamp,
						NeedsFlush: dup.lastOffset >= l.durable.Load()}, nil
				}
			}
			b.SetBaseOffset(next)
			b.SetPartitionLeaderEpoch(opts.LeaderEpoch)
		} else if b.BaseOffset() < next {
			return res, fmt.Errorf("%w: batch at %d, log end %d", ErrOffsetOrder, b.BaseOffset(), next)
		} else if b.BaseOffset() > math.MaxInt64-int64(b.LastOffsetDelta()) || b.LastOffsetDelta() < 0 {
			return res, fmt.Errorf("%w: batch at %d with last offset delta %d", ErrOffsetOrder, b.BaseOffset(), b.LastOffsetDelta())
		}
		if first < 0 {
			first = b.BaseOffset()
		}
		next = b.NextOffset()
		maxTS = max(maxTS, b.MaxTimestamp())
		prev = b
	}
	if err := it.Err(); err != nil {
		return res, err
	}
	res.FirstOffset = first
	seg, err := l.maybeRollLocked(cfg, int64(len(set)), first, next-1, maxTS)
	if err != nil {
		return res, err
	}
	f, err := seg.file()
	if err != nil {
		return res, err
	}
	pos := seg.size.Load()
	if u := seg.uncached.Load(); u < 0 || u > pos {
		seg.uncached.Store(pos)
	}
	if _, err := writeAt(f, set, pos); err != nil {
		// The bytes past pos are not counted and the next append overwrites
		// them, but a failed write may mean a failing disk: stop here.
		return res, l.fail(fmt.Errorf("write %s: %w", seg.logPath, err))
	}
	it = record.NewIter(set)
	for b, ok := it.Next(); ok; b, ok = it.Next() {
		p := pos + int64(it.Pos()-len(b))
		seg.indexBatchLocked(p, int64(len(b)), b.LastOffset(), b.MaxTimestamp())
		if e := b.PartitionLeaderEpoch(); e >= 0 {
			if _, err := l.epochs.assign(e, b.BaseOffset(), true); err != nil {
				return res, l.fail(err)
			}
		}
		if b.ProducerID() >= 0 {
			var m *record.EndTxnMarker
			if b.Control() {
				if _, mk, ok, err := record.ParseControl(b); err == nil && ok {
					m = &mk
				}
			}
			if done := l.producers.apply(b, m); done != nil && done.aborted {
				e := txnEntry(AbortedTxn{ProducerID: done.pid, FirstOffset: done.first, LastOffset: done.last,
					LastStableOffset: l.producers.stableAfter(done)})
				seg.txn.appendEntry(e[:])
			}
		}
	}
	seg.size.Store(pos + int64(len(set)))
	l.writeBehindLocked(cfg, seg, f, pos+int64(len(set)))
	l.holdCacheLocked(seg, pos+int64(len(set)), int64(len(set)))
	l.extendLocked(cfg, seg, f, pos+int64(len(set)), int64(len(set)))
	l.leo.Store(next)
	if l.firstUnsynced.Load() == 0 {
		l.firstUnsynced.Store(time.Now().UnixMilli())
	}
	res.LastOffset = next - 1
	res.LogStart = l.logStart.Load()
	res.NeedsFlush = next-l.durable.Load() >= cfg.FlushMessages
	if l.autoHW && !cfg.syncBeforeAck() {
		l.hw.Store(&offsetPos{offset: next, seg: seg, pos: seg.size.Load()})
	}
	l.publishTxnLocked()
	l.notify.broadcast()
	return res, nil
}

// writeBehindLocked starts writeback of the active segment's new bytes once
// writebackBytes of them have been appended since the last start, when
// appends are not fsynced before they are acknowledged (flush.messages
// above 1). Left to itself, the kernel writes dirty pages back in bursts
// once they pass its background threshold, and makes writers sleep (up to
// 200 ms a write) once they near its limit: at a steady produce rate after
// a burst of writes that showed as produce and end-to-end stalls of
// 100-600 ms. Started as the log grows, writeback keeps each log's dirty
// data small, as RocksDB's bytes_per_sync and PostgreSQL's *_flush_after
// settings do. Nothing waits for it; a failed writeback is reported by the
// next fsync of the file (flush.ms, a roll, shutdown), so the error of the
// call itself is not kept.
//
// A log holding no pages in the page-cache window (it was idle, or the
// window's keeper dropped what it had) starts at once for an append of at
// least cacheDropMin: a producer visiting thousands of partitions in turn
// brings each a batch at a time, so the log would not reach writebackBytes
// before the window moved past those pages, and the keeper cannot drop
// pages that are still dirty. With 10,000 partitions in page-cache mode the
// cache then grew by every byte appended and each append copied into fresh
// pages: 325-338 k records/s of 1 KiB, against 604-698 k with this.
func (l *Log) writeBehindLocked(cfg *Config, seg *segment, f *os.File, end int64) {
	if l.writebackBytes <= 0 || cfg.syncBeforeAck() {
		return
	}
	if l.wb.seg != seg || l.wb.from > end {
		l.wb.seg, l.wb.from = seg, 0
	}
	pending := end - l.wb.from
	if pending < l.writebackBytes && (pending < cacheDropMin || l.cache == nil || len(l.marks) > 0) {
		return
	}
	_ = startWriteback(f, l.wb.from, pending)
	l.wb.from = end
}

// maybeRollLocked returns the segment to append to, rolling a new one when
// the active segment would pass segment.bytes, its first batch is older
// than segment.ms, its index is full, or the offsets would not fit its
// relative offsets.
func (l *Log) maybeRollLocked(cfg *Config, size, first, last, maxTS int64) (*segment, error) {
	segs := *l.segs.Load()
	active := segs[len(segs)-1]
	overflow := last-active.base > math.MaxInt32
	if active.size.Load() == 0 {
		if overflow {
			// Only a follower's batch far above an empty log gets here.
			return l.rollLocked(first)
		}
		return active, nil
	}
	roll := overflow || active.size.Load()+size > cfg.SegmentBytes || active.indexFull(cfg)
	if !roll {
		// Kafka measures segment.ms on record timestamps when it has them.
		if active.ib.firstTS >= 0 && maxTS >= 0 {
			roll = maxTS-active.ib.firstTS > cfg.rollMs()
		} else {
			roll = time.Since(active.created).Milliseconds() > cfg.rollMs()
		}
	}
	if !roll {
		return active, nil
	}
	return l.rollLocked(first)
}

// rollLocked seals the active segment and starts a new one at base. The
// sealed segment is fsynced with its indexes in the background, which then
// moves the recovery point past it.
func (l *Log) rollLocked(base int64) (*segment, error) {
	segs := *l.segs.Load()
	old := segs[len(segs)-1]
	cfg := l.cfg.Load()
	// A sealed segment's file ends at its last batch.
	if err := l.trimLocked(old); err != nil {
		return nil, l.fail(err)
	}
	s, err := createSegment(l.dir, base, cfg.IndexIntervalBytes)
	if err != nil {
		return nil, l.fail(err)
	}
	if err := syncDir(l.dir); err != nil {
		return nil, l.fail(err)
	}
	newSegs := make([]*segment, 0, len(segs)+1)
	if old.size.Load() == 0 {
		// An empty active segment is replaced, not kept.
		if err := old.removeFiles(); err != nil {
			return nil, l.fail(err)
		}
		newSegs = append(newSegs, segs[:len(segs)-1]...)
	} else {
		old.sealLocked()
		old.sealed = true
		newSegs = append(newSegs, segs...)
	}
	newSegs = append(newSegs, s)
	l.segs.Store(&newSegs)
	if err := l.writeSnapshotLocked(); err != nil {
		return nil, l.fail(err)
	}
	l.logger.Debug("rolled segment", "base", base)
	if l.syncer != nil {
		l.syncer.request(l)
	}
	return s, nil
}

// Flush fsyncs the log up to at least upTo (with everything before) and
// returns once it is durable. Concurrent flushes of this and other logs of
// one Manager share a round of fsyncs (group commit).
func (l *Log) Flush(ctx context.Context, upTo int64) error {
	done, err := l.addFlushWaiter(upTo)
	if done == nil {
		return err
	}
	l.syncer.request(l)
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// addFlushWaiter registers a waiter for the log to be durable up to upTo.
// A nil channel means there is nothing to wait for: the log is durable
// that far already (nil error), it has failed, or it has no syncer and
// was flushed inline (their error).
func (l *Log) addFlushWaiter(upTo int64) (<-chan error, error) {
	if l.durable.Load() >= upTo {
		return nil, nil
	}
	if err := l.Err(); err != nil {
		return nil, err
	}
	if l.syncer == nil {
		return nil, l.sync()
	}
	w := flushWaiter{offset: upTo, done: make(chan error, 1)}
	l.waiters.Lock()
	l.waiters.list = append(l.waiters.list, w)
	l.waiters.Unlock()
	if l.durable.Load() >= upTo { // raced with a sync that finished
		l.wakeWaiters(l.durable.Load(), nil)
	}
	return w.done, nil
}

// FlushTarget is a log and the offset it must be durable up to.
type FlushTarget struct {
	Log  *Log
	UpTo int64
}

// Flushing is a flush of many logs under way (Flush for many logs at
// once, as a produce request that touched many partitions needs).
type Flushing struct {
	waits []<-chan error
}

// StartFlush queues every log of targets before the syncer wakes, so they
// share one group-commit round (and, with syncFSMin or more in a log dir,
// one syncfs) instead of trickling into rounds of their own as each is
// queued. It does not wait.
func StartFlush(targets []FlushTarget) *Flushing {
	f := &Flushing{}
	var syncers []*syncer
	for _, t := range targets {
		done, _ := t.Log.addFlushWaiter(t.UpTo)
		if done == nil {
			continue
		}
		f.waits = append(f.waits, done)
		s := t.Log.syncer
		s.enqueue(t.Log)
		if !slices.Contains(syncers, s) {
			syncers = append(syncers, s)
		}
	}
	for _, s := range syncers {
		s.wake()
	}
	return f
}

// Wait returns once every log is durable up to its target, has failed, or
// ctx is done; the caller reads each log's DurableOffset and Err for the
// outcome.
func (f *Flushing) Wait(ctx context.Context) {
	for _, done := range f.waits {
		select {
		case <-done:
		case <-ctx.Done():
			return
		}
	}
}

// FlushAsync queues the log for the next group-commit round without
// waiting (an acks=0 append, which nobody waits for, still becomes durable
// and, with an automatic high watermark, visible).
func (l *Log) FlushAsync() {
	if l.syncer != nil {
		l.syncer.request(l)
		return
	}
	go l.sync() //nolint:errcheck // errors fail the log and reach its waiters
}

func (l *Log) wakeWaiters(durable int64, err error) {
	l.waiters.Lock()
	defer l.waiters.Unlock()
	keep := l.waiters.list[:0]
	for _, w := range l.waiters.list {
		if w.offset <= durable || err != nil {
			w.done <- err
		} else {
			keep = append(keep, w)
		}
	}
	clear(l.waiters.list[len(keep):])
	l.waiters.list = keep
}

// sync fsyncs every segment with unsynced bytes, persists and fsyncs the
// indexes of sealed segments, then advances the durable offset and the
// recovery point. Only data fsyncs happen here, outside mu.
// observer returns the Observer of the log's Manager; a log on its own
// reports to none.
func (l *Log) observer() Observer {
	if l.syncer == nil {
		return nopObserver{}
	}
	return l.syncer.obs
}

func (l *Log) sync() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	r, err := l.syncBegin()
	if err != nil {
		return err
	}
	return l.syncFinish(r, false)
}

// syncRound is one flush of a log: what it makes durable, captured before
// any fsync starts.
type syncRound struct {
	gen       uint64
	target    int64
	targetPos offsetPos
	todo      []syncWork
}

type syncWork struct {
	s      *segment
	size   int64
	sealed bool // read under mu: a roll sets it
}

// syncBegin captures what a flush covers: every segment's bytes written so
// far and the indexes of sealed segments. Callers hold syncMu until
// syncFinish.
func (l *Log) syncBegin() (*syncRound, error) {
	if err := l.Err(); err != nil {
		l.wakeWaiters(math.MaxInt64, err)
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	segs := *l.segs.Load()
	r := &syncRound{gen: l.mu.gen, target: l.leo.Load()}
	r.targetPos = offsetPos{offset: r.target, seg: segs[len(segs)-1], pos: segs[len(segs)-1].size.Load()}
	for _, s := range segs {
		if n := s.size.Load(); s.synced.Load() < n || (s.sealed && !s.indexesPersisted()) {
			r.todo = append(r.todo, syncWork{s, n, s.sealed})
		}
	}
	l.firstUnsynced.Store(0)
	return r, nil
}

// syncFinish fsyncs what r covers (only the sealed segments' indexes when
// dataSynced says a syncfs of the log's file system, started after
// syncBegin, succeeded) and moves the durable offset and, in durable
// mode, the high watermark.
func (l *Log) syncFinish(r *syncRound, dataSynced bool) error {
	obs := l.observer()
	for _, w := range r.todo {
		if w.s.synced.Load() < w.size {
			if !dataSynced {
				f, err := w.s.acquire()
				if err != nil {
					if errors.Is(err, ErrClosed) {
						continue // deleted meanwhile
					}
					return l.fail(err)
				}
				start := time.Now()
				err = fdatasync(f)
				obs.Fsynced(time.Since(start))
				w.s.release()
				if err != nil {
					return l.fail(fmt.Errorf("sync %s: %w", w.s.logPath, err))
				}
			}
			w.s.synced.Store(w.size)
		}
		if w.sealed {
			if err := w.s.persistIndexes(true); err != nil {
				return l.fail(err)
			}
		}
	}

	l.mu.Lock()
	if l.mu.gen == r.gen {
		if prev := l.durable.Load(); r.target > prev {
			l.durable.Store(r.target)
			obs.Synced(r.target - prev)
		}
		if l.autoHW && l.cfg.Load().syncBeforeAck() && r.target > l.hw.Load().offset {
			targetPos := r.targetPos
			l.hw.Store(&targetPos)
			l.publishTxnLocked()
			l.notify.broadcast()
		}
		segs := *l.segs.Load()
		rp := segs[len(segs)-1].base
		for _, s := range segs[:len(segs)-1] {
			if s.synced.Load() < s.size.Load() || !s.indexesPersisted() {
				rp = s.base
				break
			}
		}
		if rp > l.recoveryPoint.Load() {
			l.recoveryPoint.Store(rp)
		}
	}
	durable := l.durable.Load()
	l.mu.Unlock()
	l.wakeWaiters(durable, nil)
	return nil
}

// needsTimedFlush reports whether flush.ms asks for a background flush now.
func (l *Log) needsTimedFlush(now time.Time) bool {
	first := l.firstUnsynced.Load()
	return first != 0 && now.UnixMilli()-first >= l.cfg.Load().FlushMs
}

// SetHighWatermark moves the high watermark, clamped to [LogStart, LogEnd].
// It must lie on a batch boundary, as every replica's log end does.
func (l *Log) SetHighWatermark(hw int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setHWLocked(min(max(hw, l.logStart.Load()), l.leo.Load()))
	l.notify.broadcast()
}

func (l *Log) setHWLocked(hw int64) {
	segs := *l.segs.Load()
	i := segmentFor(segs, hw)
	s := segs[i]
	op := &offsetPos{offset: hw, seg: s}
	if hw >= s.ib.next && i == len(segs)-1 {
		op.pos = s.size.Load()
	} else {
		f, err := s.acquire()
		if err == nil {
			op.pos, _, err = s.findPosition(f, hw, s.size.Load())
			s.release()
		}
		if err != nil {
			op.seg = nil // position unknown: readers look it up
		}
	}
	l.hw.Store(op)
	if l.producers != nil {
		l.publishTxnLocked()
	}
}

// segmentFor returns the index of the last segment whose base is at most
// offset (0 when offset lies below all of them).
func segmentFor(segs []*segment, offset int64) int {
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > offset }) - 1
	return max(i, 0)
}

// ReadOptions bounds a read.
type ReadOptions struct {
	// Offset is the first offset wanted; the read starts at the batch that
	// holds it.
	Offset int64
	// MaxBytes bounds the slice. The slice may end inside a batch, as
	// Kafka's fetch responses may: clients drop a partial last batch.
	MaxBytes int64
	// MaxOffset is an exclusive upper bound on the batches read (the high
	// watermark for consumers, the log end for followers); it must lie on a
	// batch boundary. Zero or less means the log end.
	MaxOffset int64
	// MinOneBatch returns the whole first batch even when it is larger than
	// MaxBytes (KIP-74), so a consumer always makes progress.
	MinOneBatch bool
	// WholeBatches ends the slice at the end of a batch, never inside one
	// (a fetch whose bytes count against a quota: a partial last batch,
	// which the client drops, would be counted all the same).
	WholeBatches bool
	// ReadCommitted bounds the read at the last stable offset too, taken
	// with the high watermark at the start of the read (a read_committed
	// fetch; the aborted transactions in what it returns come from
	// AbortedTransactions).
	ReadCommitted bool
}

// Slice is a byte range of one segment file holding stored batches. It keeps
// the file open until Release, so a server can send it with sendfile.
type Slice struct {
	seg *segment
	f   *os.File
	// Pos and Len locate the bytes in File.
	Pos, Len int64
	// BaseOffset is the base offset of the first batch in the slice (at or
	// below the offset asked for); -1 when the slice is empty.
	BaseOffset int64
}

// File is the segment file the slice lies in; nil for an empty slice.
func (s *Slice) File() *os.File { return s.f }

// ReadAt copies the slice's bytes from off into p.
func (s *Slice) ReadAt(p []byte, off int64) (int, error) {
	if off >= s.Len {
		return 0, io.EOF
	}
	if rem := s.Len - off; int64(len(p)) > rem {
		p = p[:rem]
	}
	return s.f.ReadAt(p, s.Pos+off)
}

// AppendTo appends the slice's bytes to dst.
func (s *Slice) AppendTo(dst []byte) ([]byte, error) {
	n := len(dst)
	dst = append(dst, make([]byte, s.Len)...)
	if s.Len == 0 {
		return dst, nil
	}
	if _, err := s.f.ReadAt(dst[n:], s.Pos); err != nil {
		return dst[:n], fmt.Errorf("read segment: %w", err)
	}
	return dst, nil
}

// WriteTo writes the slice's bytes to w.
func (s *Slice) WriteTo(w io.Writer) (int64, error) {
	if s.Len == 0 {
		return 0, nil
	}
	return io.Copy(w, io.NewSectionReader(s.f, s.Pos, s.Len))
}

// Release gives the file back; the slice must not be used afterwards.
func (s *Slice) Release() {
	if s.seg != nil {
		s.seg.release()
		s.seg, s.f = nil, nil
	}
}

// ReadResult is a read's bytes with the log's offsets at the time of the read.
type ReadResult struct {
	Slice
	LogStart         int64
	HighWatermark    int64
	LastStableOffset int64
	LogEnd           int64
}

// Read returns the stored bytes from the batch holding opts.Offset on, from
// one segment, without copying them. An offset below the log start or above
// the log end is ErrOffsetOutOfRange; at the end, the slice is empty. The
// caller must Release the result.
func (l *Log) Read(opts ReadOptions) (ReadResult, error) {
	hw := l.hw.Load()
	res := ReadResult{LogStart: l.logStart.Load(), HighWatermark: hw.offset, LogEnd: l.leo.Load(),
		LastStableOffset: lastStable(l.firstUnstable.Load(), l.logStart.Load(), hw.offset)}
	res.BaseOffset = -1
	if err := l.Err(); err != nil {
		return res, err // offline, as Kafka's partitions in a failed dir
	}
	if l.shut.Load() {
		return res, ErrClosed
	}
	if opts.Offset < res.LogStart || opts.Offset > res.LogEnd {
		return res, fmt.Errorf("%w: %d not in [%d, %d]", ErrOffsetOutOfRange, opts.Offset, res.LogStart, res.LogEnd)
	}
	maxOffset := opts.MaxOffset
	if maxOffset <= 0 || maxOffset > res.LogEnd {
		maxOffset = res.LogEnd
	}
	if opts.ReadCommitted {
		maxOffset = min(maxOffset, res.LastStableOffset)
	}
	if opts.Offset >= maxOffset {
		return res, nil
	}
	for attempt := 0; ; attempt++ {
		segsNow := l.segs.Load()
		res, retry, err := l.readFrom(*segsNow, opts, res, hw, maxOffset)
		// A segment closed under the read was deleted or replaced by a
		// cleaned one: with a new segment list, read again.
		if !retry || attempt == 8 || l.segs.Load() == segsNow {
			switch {
			case retry && l.shut.Load():
				err = ErrClosed
			case retry:
				err = fmt.Errorf("%w: %d", ErrOffsetOutOfRange, opts.Offset)
			}
			return res, err
		}
	}
}

// readFrom is Read over one segment list; retry is set when a segment was
// closed under it.
func (l *Log) readFrom(segs []*segment, opts ReadOptions, res ReadResult, hw *offsetPos, maxOffset int64) (_ ReadResult, retry bool, _ error) {
	if ls := l.logStart.Load(); opts.Offset < ls {
		// The log start moved since it was read, and its segments may
		// be gone from segs (it moves before they go).
		res.LogStart = ls
		return res, false, fmt.Errorf("%w: %d below log start %d", ErrOffsetOutOfRange, opts.Offset, ls)
	}
	for i := segmentFor(segs, opts.Offset); i < len(segs); i++ {
		s := segs[i]
		f, err := s.acquire()
		if err != nil {
			if errors.Is(err, ErrClosed) {
				// Deleted under us (retention or truncation: the offset
				// is no longer there), or replaced by a cleaned segment.
				return res, true, nil
			}
			return res, false, err
		}
		end := s.size.Load()
		lastSeg := i == len(segs)-1 || segs[i+1].base > maxOffset
		if lastSeg && maxOffset < res.LogEnd {
			if hw.offset == maxOffset && hw.seg == s {
				end = hw.pos
			} else if end, _, err = s.findPosition(f, maxOffset, end); err != nil {
				s.release()
				return res, false, err
			}
		}
		pos, base, err := s.findPosition(f, opts.Offset, end)
		if err != nil {
			s.release()
			return res, errors.Is(err, ErrClosed), err
		}
		if pos >= end {
			s.release()
			if lastSeg {
				return res, false, nil
			}
			continue
		}
		n := min(end-pos, max(opts.MaxBytes, 0))
		if opts.MinOneBatch {
			var hdr [record.LogOverhead]byte
			if _, err := f.ReadAt(hdr[:], pos); err != nil {
				s.release()
				return res, false, fmt.Errorf("read segment: %w", err)
			}
			n = max(n, min(record.Size(hdr[:]), end-pos))
		}
		if opts.WholeBatches && n > 0 && n < end-pos {
			e, err := s.wholeBatchEnd(f, pos, pos+n, end)
			if err != nil {
				s.release()
				return res, false, err
			}
			n = e - pos
		}
		if n == 0 {
			s.release()
			return res, false, nil
		}
		if l.cache != nil && pos+n <= s.uncached.Load() {
			dropReadBehind(f, pos)
		}
		res.Slice = Slice{seg: s, f: f, Pos: pos, Len: n, BaseOffset: base}
		return res, false, nil
	}
	return res, false, nil
}

// TimestampOffset is a record found by timestamp.
type TimestampOffset struct {
	Offset      int64
	Timestamp   int64
	LeaderEpoch int32
}

// OffsetForTimestamp finds the first record at or after the log start whose
// timestamp is at least ts (ListOffsets by timestamp). ok is false when no
// record is that recent.
func (l *Log) OffsetForTimestamp(ts int64) (TimestampOffset, bool, error) {
	logStart := l.logStart.Load()
	segs := *l.segs.Load()
	for i, s := range segs {
		if s.base < logStart && nextBase(segs, i, l.leo.Load()) <= logStart {
			continue
		}
		if err := s.loadIndexes(); err != nil {
			return TimestampOffset{}, false, err
		}
		if s.maxTS.Load() < ts {
			continue
		}
		from := max(s.base, logStart)
		if o, ok := lookupTimeBefore(s.tidx.entries(), s.base, ts); ok {
			from = max(from, o+1)
		}
		r, ok, err := s.findRecord(from, func(rts int64) bool { return rts >= ts })
		if err != nil || ok {
			return r, ok, err
		}
	}
	return TimestampOffset{}, false, nil
}

// MaxTimestamp finds the first record with the largest timestamp in the log
// (ListOffsets MAX_TIMESTAMP, KIP-734). ok is false for an empty log.
func (l *Log) MaxTimestamp() (TimestampOffset, bool, error) {
	maxTS := int64(-1)
	for _, s := range *l.segs.Load() {
		if err := s.loadIndexes(); err != nil {
			return TimestampOffset{}, false, err
		}
		maxTS = max(maxTS, s.maxTS.Load())
	}
	if maxTS < 0 {
		return TimestampOffset{}, false, nil
	}
	return l.OffsetForTimestamp(maxTS)
}

// nextBase is the offset where segment i of segs ends: the next segment's
// base, or the log end for the last one.
func nextBase(segs []*segment, i int, logEnd int64) int64 {
	if i+1 < len(segs) {
		return segs[i+1].base
	}
	return logEnd
}

// findRecord returns the first record at or after offset from whose
// timestamp match accepts, reading the segment's batches from the one that
// holds from.
func (s *segment) findRecord(from int64, match func(ts int64) bool) (TimestampOffset, bool, error) {
	f, err := s.acquire()
	if err != nil {
		return TimestampOffset{}, false, err
	}
	defer s.release()
	end := s.size.Load()
	pos, _, err := s.findPosition(f, from, end)
	if err != nil {
		return TimestampOffset{}, false, err
	}
	hs := newHeaderScanner(f, end)
	var buf, scratch []byte
	for pos < end {
		h, err := hs.header(pos)
		if err != nil {
			return TimestampOffset{}, false, err
		}
		size := record.Size(h)
		if h.LastOffset() >= from && match(h.MaxTimestamp()) {
			if int64(cap(buf)) < size {
				buf = make([]byte, size)
			}
			b := record.Batch(buf[:size])
			if _, err := f.ReadAt(b, pos); err != nil {
				return TimestampOffset{}, false, fmt.Errorf("read segment: %w", err)
			}
			var found TimestampOffset
			errFound := errors.New("found")
			err := record.ForEachRecord(b, &scratch, func(off, ts int64, _ *record.Record) error {
				if off >= from && match(ts) {
					found = TimestampOffset{Offset: off, Timestamp: ts, LeaderEpoch: b.PartitionLeaderEpoch()}
					return errFound
				}
				return nil
			})
			if errors.Is(err, errFound) {
				return found, true, nil
			}
			if err != nil {
				return TimestampOffset{}, false, fmt.Errorf("read batch at %d: %w", pos, err)
			}
		}
		pos += size
	}
	return TimestampOffset{}, false, nil
}
