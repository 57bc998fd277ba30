package storage

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// ManagerConfig configures a Manager. Names in comments are Kafka's broker
// configs of the same meaning.
type ManagerConfig struct {
	// Dirs are the log directories (log.dirs).
	Dirs []string
	// Log is the config new and reopened logs start with.
	Log Config
	// OpenParallelism is how many logs are opened at once at start-up
	// (num.recovery.threads.per.data.dir, across all dirs).
	OpenParallelism int
	// CheckpointInterval is how often recovery points and log start offsets
	// are written (log.flush.offset.checkpoint.interval.ms).
	CheckpointInterval time.Duration
	// HighWatermarkCheckpointInterval is how often high watermarks are
	// written (replica.high.watermark.checkpoint.interval.ms).
	HighWatermarkCheckpointInterval time.Duration
	// FlushCheckInterval is how often logs are checked against flush.ms
	// (log.flush.scheduler.interval.ms).
	FlushCheckInterval time.Duration
	// RetentionCheckInterval is how often every log's retention runs
	// (log.retention.check.interval.ms).
	RetentionCheckInterval time.Duration
	// SyncParallelism bounds the fsyncs in flight in one group-commit round.
	SyncParallelism int
	// WritebackBytes starts writeback of a log's newest bytes each time
	// this many have been appended, in logs whose appends are not fsynced
	// before they are acknowledged; 0 leaves writeback to the kernel (see
	// Log.writeBehindLocked).
	WritebackBytes int64
	// PageCacheKeepBytes holds the page cache of what the logs append to
	// the newest this many bytes appended to any of them: older appends
	// are dropped from it; 0 leaves the page cache to the kernel (see
	// pagecache.go).
	PageCacheKeepBytes int64
	// PrefaultBytes is how far ahead of a hot log's end its active
	// segment's file is extended and its pages read into the page cache
	// in the background, so that appends do not allocate them; 0: off,
	// the file grows with each append (see prefault.go).
	PrefaultBytes int64
	// CleanerEnable runs the log cleaner, which compacts logs whose
	// cleanup.policy has "compact" (log.cleaner.enable).
	CleanerEnable bool
	// CleanerBackoff is how long the cleaner sleeps after a pass that found
	// no log to clean (log.cleaner.backoff.ms).
	CleanerBackoff time.Duration
	// CleanerDedupeBufferSize bounds the cleaner's offset map: it holds at
	// most 90% of this over 24 bytes (a 16-byte key hash and an offset)
	// entries, as Kafka sizes it (log.cleaner.dedupe.buffer.size). A
	// cleaning whose dirty range has more keys stops where the map fills.
	CleanerDedupeBufferSize int64
	// Now is the clock retention and delayed file deletion go by; nil is
	// time.Now. Tests set a fake one.
	Now    func() time.Time
	Logger *slog.Logger
	// Observer receives fsync and group-commit events for metrics; nil
	// ignores them.
	Observer Observer
}

// DefaultManagerConfig returns Kafka's defaults for dirs.
func DefaultManagerConfig(dirs ...string) ManagerConfig {
	return ManagerConfig{
		Dirs:                            dirs,
		Log:                             DefaultConfig(),
		OpenParallelism:                 8,
		CheckpointInterval:              60 * time.Second,
		HighWatermarkCheckpointInterval: 5 * time.Second,
		FlushCheckInterval:              time.Second,
		RetentionCheckInterval:          5 * time.Minute,
		SyncParallelism:                 16,
		WritebackBytes:                  4 << 20,
		PrefaultBytes:                   16 << 20,
		CleanerEnable:                   true,
		CleanerBackoff:                  15 * time.Second,
		CleanerDedupeBufferSize:         128 << 20,
	}
}

// Validate checks the config.
func (c ManagerConfig) Validate() error {
	if len(c.Dirs) == 0 {
		return fmt.Errorf("%w: no log dirs", ErrInvalidConfig)
	}
	seen := map[string]bool{}
	for _, d := range c.Dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return fmt.Errorf("%w: log dir %q: %w", ErrInvalidConfig, d, err)
		}
		if seen[abs] {
			return fmt.Errorf("%w: log dir %q listed twice", ErrInvalidConfig, d)
		}
		seen[abs] = true
	}
	if c.OpenParallelism < 1 || c.SyncParallelism < 1 {
		return fmt.Errorf("%w: parallelism below 1", ErrInvalidConfig)
	}
	if c.CheckpointInterval <= 0 || c.HighWatermarkCheckpointInterval <= 0 || c.FlushCheckInterval <= 0 ||
		c.RetentionCheckInterval <= 0 || c.CleanerBackoff <= 0 {
		return fmt.Errorf("%w: intervals must be positive", ErrInvalidConfig)
	}
	if c.WritebackBytes < 0 {
		return fmt.Errorf("%w: writeback bytes %d below 0", ErrInvalidConfig, c.WritebackBytes)
	}
	if c.PageCacheKeepBytes < 0 {
		return fmt.Errorf("%w: page cache keep bytes %d below 0", ErrInvalidConfig, c.PageCacheKeepBytes)
	}
	if c.PrefaultBytes < 0 {
		return fmt.Errorf("%w: prefault bytes %d below 0", ErrInvalidConfig, c.PrefaultBytes)
	}
	if c.CleanerDedupeBufferSize < offsetMapEntrySize*2 {
		return fmt.Errorf("%w: log.cleaner.dedupe.buffer.size %d too small", ErrInvalidConfig, c.CleanerDedupeBufferSize)
	}
	return c.Log.Validate()
}

// Manager owns the logs of one or more log dirs: it opens them in parallel,
// runs group commit for all of them, checkpoints their offsets, applies
// their retention, removes deleted segments' files after their delay, and
// closes them. It is the only owner of the logs and of the dirs' files.
//
// Close order: stop the background goroutines (the syncer serves what is
// queued first), close every log (each fsyncs its data and indexes), write
// the checkpoint files, write the clean-shutdown markers, unlock the dirs.
// Deleted files still waiting for their delay are left to the next open.
type Manager struct {
	cfg    ManagerConfig
	logger *slog.Logger
	now    func() time.Time
	sy     *syncer
	del    *deleter
	pf     *prefaulter  // nil: PrefaultBytes 0
	cache  *cacheWindow // nil: PageCacheKeepBytes 0
	cl     *cleaner
	dirs   []*logDir

	// moveMu serialises the steps of moves between log dirs that change
	// which files are whose (StartMove, CancelMove, FinishMove), and a
	// deletion's cancel of a move with them.
	moveMu sync.Mutex

	// ckptMu serialises checkpoint writes, which share their .tmp files,
	// so that a later snapshot of the offsets is never overwritten by an
	// earlier one.
	ckptMu sync.Mutex

	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu struct {
		sync.RWMutex
		logs  map[TopicPartition]*Log
		dirOf map[TopicPartition]*logDir
		// pending holds the partitions whose Create is under way.
		pending map[TopicPartition]*pendingCreate
		// strays are the stray partition dirs (see MarkStray).
		strays []string
		// futures are the moves between log dirs under way (move.go);
		// preferred the dirs asked for partitions not created yet.
		futures   map[TopicPartition]*futureLog
		preferred map[TopicPartition]*logDir
		closed    bool
	}
	// stepHook, set only by tests, is called after each step of a rename
	// of a partition dir (detachAndRename), so that a test can take the
	// files as a kill -9 at that moment leaves them.
	stepHook func(step string)
	// markerHook, set only by tests, runs before a move-done marker is
	// written; an error it returns is the write's.
	markerHook func(dir string) error
	// creating counts the Creates under way; Add is only called under mu
	// while the Manager is open, so Close can wait for them.
	creating sync.WaitGroup
}

// pendingCreate is a Create under way: the dir it was given, and a channel
// closed when it ends.
type pendingCreate struct {
	dir  *logDir
	done chan struct{}
}

type logDir struct {
	path string
	lock *os.File
	// meta is the dir's stamp (meta.properties); nil until Stamp writes
	// one in a dir that had none.
	meta *DirIdentity
	// failed is set, once, by the first I/O error in the dir: the dir is
	// offline from then on, as Kafka takes a log dir offline, until the
	// next start recovers it.
	failed atomic.Pointer[error]
}

// Err returns the error that took the dir offline, or nil.
func (d *logDir) Err() error {
	if p := d.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// OpenManager opens every log found in the dirs. After an unclean shutdown
// (no clean-shutdown marker) each log is recovered from its recovery point.
// Before it returns, the markers are removed: a crash from now on is
// unclean.
func OpenManager(cfg ManagerConfig) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	obs := cfg.Observer
	if obs == nil {
		obs = nopObserver{}
	}
	m := &Manager{cfg: cfg, logger: logger, now: now, sy: newSyncer(cfg.SyncParallelism, obs), del: newDeleter(now, logger)}
	m.cl = &cleaner{now: now, maxEntries: max(int(float64(cfg.CleanerDedupeBufferSize)*offsetMapLoadFactor/offsetMapEntrySize), 1)}
	if cfg.PrefaultBytes > 0 {
		m.pf = newPrefaulter(cfg.PrefaultBytes)
	}
	m.cache = newCacheWindow(cfg.PageCacheKeepBytes)
	m.mu.logs = map[TopicPartition]*Log{}
	m.mu.dirOf = map[TopicPartition]*logDir{}
	m.mu.pending = map[TopicPartition]*pendingCreate{}
	m.mu.futures = map[TopicPartition]*futureLog{}
	m.mu.preferred = map[TopicPartition]*logDir{}
	if err := m.openDirs(); err != nil {
		m.abort()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	m.goTracked(func() { m.sy.run(ctx) })
	m.goTracked(func() { m.checkpointLoop(ctx) })
	m.goTracked(func() { m.flushLoop(ctx) })
	m.goTracked(func() { m.del.run(ctx) })
	m.goTracked(func() { m.retentionLoop(ctx) })
	if m.pf != nil {
		m.goTracked(func() { m.pf.run(ctx) })
	}
	if m.cache != nil {
		m.goTracked(func() { m.cache.run(ctx) })
	}
	if cfg.CleanerEnable {
		m.goTracked(func() { m.cleanerLoop(ctx) })
	}
	return m, nil
}

// env is what the logs of dir d share.
func (m *Manager) env(d *logDir) logEnv {
	return logEnv{syncer: m.sy, deleter: m.del, now: m.now, dirFailed: func(err error) { m.failDir(d, err) },
		writebackBytes: m.cfg.WritebackBytes, cache: m.cache, prefault: m.pf}
}

// failDir takes dir d offline after an I/O error in it: every log in the dir
// fails (appends, flushes and reads get ErrLogFailed, which the broker
// answers with KAFKA_STORAGE_ERROR), no log is created in it and its
// checkpoints are no longer written. Logs in other dirs carry on. The logs
// are failed in the background: the caller may hold a log's lock.
func (m *Manager) failDir(d *logDir, cause error) {
	err := fmt.Errorf("log dir %s offline: %w", d.path, cause)
	if !d.failed.CompareAndSwap(nil, &err) {
		return
	}
	m.logger.Error("log dir offline after an I/O error; its partitions are unavailable until restart",
		"dir", d.path, "err", cause)
	go func() {
		m.mu.RLock()
		var logs []*Log
		for tp, l := range m.mu.logs {
			if m.mu.dirOf[tp] == d {
				logs = append(logs, l)
			}
		}
		m.mu.RUnlock()
		for _, l := range logs {
			l.fail(err)
		}
	}()
}

// DirError returns the error that took the log dir at path offline, nil
// when it is online. A path that is not one of the Manager's dirs is
// reported as ErrUnknownPartition.
func (m *Manager) DirError(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	for _, d := range m.dirs {
		if da, err := filepath.Abs(d.path); err == nil && da == abs {
			if err := d.Err(); err != nil {
				return fmt.Errorf("%w: %w", ErrLogFailed, err)
			}
			return nil
		}
	}
	return fmt.Errorf("%w: no log dir %s", ErrUnknownPartition, path)
}

// goTracked starts a goroutine that Close waits for.
func (m *Manager) goTracked(fn func()) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		fn()
	}()
}

type openJob struct {
	dir        *logDir
	tp         TopicPartition
	path       string
	st         OpenState
	firstDirty int64 // from cleaner-offset-checkpoint; -1 when absent
	future     bool  // a future log (move.go), opened once the logs are
}

func (m *Manager) openDirs() error {
	var jobs []openJob
	for _, path := range m.cfg.Dirs {
		if err := os.MkdirAll(path, 0o755); err != nil {
			return fmt.Errorf("create log dir: %w", err)
		}
		lock, err := lockDir(path)
		if err != nil {
			return err
		}
		d := &logDir{path: path, lock: lock}
		m.dirs = append(m.dirs, d)
		meta, ok, err := readMeta(path)
		if err != nil {
			return fmt.Errorf("log dir %s: %w", path, err)
		}
		if ok {
			d.meta = &meta
		}
	}
	// Moves between dirs a crash interrupted, before any dir is scanned:
	// a finished one renames logs across dirs.
	futureJobs, err := m.settleMoves()
	if err != nil {
		return err
	}
	for _, d := range m.dirs {
		dirJobs, err := m.scanDir(d)
		if err != nil {
			return err
		}
		jobs = append(jobs, dirJobs...)
	}
	jobs = append(jobs, futureJobs...)
	start := time.Now()
	logs := make([]*Log, len(jobs))
	errs := make([]error, len(jobs))
	forEachParallel(len(jobs), m.cfg.OpenParallelism, func(i int) {
		j := jobs[i]
		logs[i], errs[i] = openLog(j.path, j.tp, m.cfg.Log, j.st, m.logger, m.env(j.dir))
	})
	for i, j := range jobs {
		if logs[i] == nil || j.future {
			continue
		}
		if _, dup := m.mu.logs[j.tp]; dup {
			errs[i] = fmt.Errorf("%w: %s in two log dirs", ErrPartitionExists, j.tp)
			logs[i].closeFiles()
			continue
		}
		logs[i].firstDirty.Store(j.firstDirty)
		m.mu.logs[j.tp] = logs[i]
		m.mu.dirOf[j.tp] = j.dir
	}
	for i, j := range jobs {
		if logs[i] == nil || !j.future {
			continue
		}
		if _, ok := m.mu.logs[j.tp]; !ok {
			// Its current log did not open (an error, reported below).
			logs[i].closeFiles()
			continue
		}
		m.mu.futures[j.tp] = &futureLog{log: logs[i], dir: j.dir}
		m.logger.Info("resuming a log move between log dirs", "partition", j.tp.String(), "to", j.dir.path)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, d := range m.dirs {
		marker := filepath.Join(d.path, cleanShutdownFile)
		if err := os.Remove(marker); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove clean-shutdown marker: %w", err)
		}
		if err := syncDir(d.path); err != nil {
			return err
		}
	}
	m.logger.Info("opened logs", "logs", len(jobs), "dirs", len(m.dirs), "took", time.Since(start))
	return nil
}

// scanDir lists the partition directories of one log dir with their
// checkpointed offsets.
func (m *Manager) scanDir(d *logDir) ([]openJob, error) {
	_, err := os.Stat(filepath.Join(d.path, cleanShutdownFile))
	clean := err == nil
	rps, err := readOffsetCheckpoint(filepath.Join(d.path, recoveryPointFile))
	if err != nil {
		return nil, err
	}
	starts, err := readOffsetCheckpoint(filepath.Join(d.path, logStartFile))
	if err != nil {
		return nil, err
	}
	hws, err := readOffsetCheckpoint(filepath.Join(d.path, highWatermarkFile))
	if err != nil {
		return nil, err
	}
	dirty, err := readOffsetCheckpoint(filepath.Join(d.path, cleanerCheckpointFile))
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(d.path)
	if err != nil {
		return nil, fmt.Errorf("list log dir: %w", err)
	}
	var jobs []openJob
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		name := e.Name()
		if strings.HasSuffix(name, strayDirSuffix) {
			m.logger.Warn("stray partition dir kept: the metadata did not know it when it was found; remove it once it is not needed",
				"dir", filepath.Join(d.path, name))
			m.mu.strays = append(m.mu.strays, filepath.Join(d.path, name))
			continue
		}
		if strings.HasSuffix(name, deleteDirSuffix) {
			// A deletion interrupted by a crash: finish it.
			if err := os.RemoveAll(filepath.Join(d.path, name)); err != nil {
				return nil, fmt.Errorf("remove deleted log: %w", err)
			}
			continue
		}
		tp, ok := ParseDirName(name)
		if !ok {
			continue
		}
		rp, haveRP := rps[tp]
		st := OpenState{RecoveryPoint: rp, LogStart: starts[tp], HighWatermark: hws[tp], Clean: clean && haveRP}
		fd, ok := dirty[tp]
		if !ok {
			fd = -1
		}
		jobs = append(jobs, openJob{dir: d, tp: tp, path: filepath.Join(d.path, name), st: st, firstDirty: fd})
	}
	return jobs, nil
}

// lockDir takes an exclusive lock on the dir, so two brokers cannot share it.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(path, dirLockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open dir lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("log dir %s is in use by another process: %w", path, err)
	}
	return f, nil
}

// abort releases what a failed OpenManager took.
func (m *Manager) abort() {
	for _, l := range m.mu.logs {
		l.closeFiles()
	}
	for _, d := range m.dirs {
		d.lock.Close()
	}
}

// Get returns the log of tp.
func (m *Manager) Get(tp TopicPartition) (*Log, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	l, ok := m.mu.logs[tp]
	return l, ok
}

// Logs returns every open log.
func (m *Manager) Logs() []*Log {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*Log, 0, len(m.mu.logs))
	for _, l := range m.mu.logs {
		out = append(out, l)
	}
	return out
}

// Create creates an empty log for tp in the online dir holding the fewest
// logs. Creates of different partitions run in parallel: the files are
// made and fsynced outside the Manager's lock, so that many partitions
// created at once (a topic's) share the file system's journal commits
// instead of queueing for one each.
//
// A create that fails on an I/O error takes its dir offline, removes what
// it made there and tries the next online dir, as Kafka places a new
// replica only in an online dir; it fails with ErrLogFailed once every
// dir is offline.
func (m *Manager) Create(tp TopicPartition, cfg Config) (*Log, error) {
	return m.create(tp, cfg, nil)
}

// CreateForTopic is Create for a partition of the topic with id: the log's
// partition.metadata is written before the log is in the Manager's list,
// so no log of the topic exists without its id.
func (m *Manager) CreateForTopic(tp TopicPartition, cfg Config, id [16]byte) (*Log, error) {
	return m.create(tp, cfg, &id)
}

func (m *Manager) create(tp TopicPartition, cfg Config, id *[16]byte) (*Log, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if _, ok := ParseDirName(tp.DirName()); !ok || tp.Topic == "" {
		return nil, fmt.Errorf("%w: bad partition name %q", ErrInvalidConfig, tp.DirName())
	}
	if len(tp.DirName()) > maxFileNameBytes {
		// A name error, not a failing disk: the dir stays online.
		return nil, fmt.Errorf("%w: partition dir name %.40q... is %d bytes, over %d", ErrInvalidConfig,
			tp.DirName(), len(tp.DirName()), maxFileNameBytes)
	}
	for {
		l, retry, err := m.createIn(tp, cfg, id)
		if !retry {
			return l, err
		}
		m.logger.Error("creating a log failed; trying another log dir", "partition", tp.String(), "err", err)
	}
}

// createIn is one attempt of create, in the dir reserve picks. retry is
// set when it failed on an I/O error that took that dir offline.
func (m *Manager) createIn(tp TopicPartition, cfg Config, id *[16]byte) (_ *Log, retry bool, _ error) {
	pc, err := m.reserve(tp)
	if err != nil {
		return nil, false, err
	}
	defer m.creating.Done()
	defer close(pc.done)
	d := pc.dir
	path := filepath.Join(d.path, tp.DirName())
	// A new log: no recovery needed, and its directory entry made durable.
	l, err := openLog(path, tp, cfg, OpenState{Clean: true}, m.logger, m.env(d))
	if err == nil && id != nil {
		if err = l.SetTopicID(*id); err != nil {
			l.closeFiles()
		}
	}
	if err == nil {
		if err = syncDir(d.path); err != nil {
			l.closeFiles()
		}
	}
	if err != nil && m.failDirOnIO(d, err) {
		// The log was never listed, so nothing but this create knows
		// it: what it made is removed, or left for the next start to
		// report (a partition dir without partition.metadata).
		if rmErr := os.RemoveAll(path); rmErr != nil {
			m.logger.Error("removing a log whose create failed", "dir", path, "err", rmErr)
		}
		retry = true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.mu.pending, tp)
	if err != nil {
		return nil, retry, err
	}
	// Close waits for the creates in flight before it lists the logs to
	// close, so the log is added even if Close has begun.
	m.mu.logs[tp] = l
	m.mu.dirOf[tp] = d
	return l, false, nil
}

// reserve picks the dir of a new log for tp and holds tp's name until the
// create ends (m.creating.Done, and closing done).
func (m *Manager) reserve(tp TopicPartition) (*pendingCreate, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.closed {
		return nil, ErrClosed
	}
	if _, ok := m.mu.logs[tp]; ok {
		return nil, fmt.Errorf("%w: %s", ErrPartitionExists, tp)
	}
	if _, ok := m.mu.pending[tp]; ok {
		return nil, fmt.Errorf("%w: %s (being created)", ErrPartitionExists, tp)
	}
	count := map[*logDir]int{}
	for _, d := range m.mu.dirOf {
		count[d]++
	}
	for _, pc := range m.mu.pending {
		count[pc.dir]++
	}
	var d *logDir
	if p := m.mu.preferred[tp]; p != nil && p.Err() == nil {
		d = p // the dir AlterReplicaLogDirs asked for
	} else {
		for _, x := range m.dirs {
			if x.Err() == nil && (d == nil || count[x] < count[d]) {
				d = x
			}
		}
	}
	delete(m.mu.preferred, tp)
	if d == nil {
		var causes []error
		for _, x := range m.dirs {
			causes = append(causes, x.Err())
		}
		return nil, fmt.Errorf("%w: every log dir is offline: %w", ErrLogFailed, errors.Join(causes...))
	}
	pc := &pendingCreate{dir: d, done: make(chan struct{})}
	m.mu.pending[tp] = pc
	m.creating.Add(1)
	return pc, nil
}

// GetOrCreate returns tp's log, creating it with cfg if there is none; a
// Create of tp already under way is waited for.
func (m *Manager) GetOrCreate(tp TopicPartition, cfg Config) (*Log, error) {
	for {
		if l, ok := m.Get(tp); ok {
			return l, nil
		}
		l, err := m.Create(tp, cfg)
		if !errors.Is(err, ErrPartitionExists) {
			return l, err
		}
		m.mu.RLock()
		pc := m.mu.pending[tp]
		m.mu.RUnlock()
		if pc != nil {
			<-pc.done // then Get finds its log, or Create may try again
		}
	}
}

// MarkStray closes tp's log and renames its dir
// "<topic>-<partition>.<32 hex digits>-stray", as Kafka names a log the
// metadata does not know: it is kept, never opened again and never
// removed by the broker, for an operator to look at and remove. It returns
// the new path. A crash before the rename leaves the log as it was (the
// next start finds it unknown again); after it, the stray.
func (m *Manager) MarkStray(tp TopicPartition) (string, error) {
	renamed, err := m.detachAndRename(tp, strayDirSuffix, func(l *Log) {
		// Flushed and closed cleanly: the stray keeps every byte.
		if err := l.Close(); err != nil {
			m.logger.Error("closing a stray log", "partition", tp.String(), "err", err)
		}
	})
	if err != nil {
		return "", err
	}
	m.mu.Lock()
	m.mu.strays = append(m.mu.strays, renamed)
	m.mu.Unlock()
	return renamed, nil
}

// Strays returns the stray partition dirs in the log dirs: found at open
// or marked since.
func (m *Manager) Strays() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return append([]string(nil), m.mu.strays...)
}

// Delete closes tp's log and removes its files. The directory is first
// renamed with a -delete suffix, so a crash midway finishes the removal at
// the next start instead of bringing the partition back.
func (m *Manager) Delete(tp TopicPartition) error {
	renamed, err := m.detachAndRename(tp, deleteDirSuffix, func(l *Log) {
		// Its data is going: closed without flushing.
		l.shutForGood()
	})
	if err != nil {
		return err
	}
	if err := os.RemoveAll(renamed); err != nil {
		return fmt.Errorf("remove deleted log: %w", err)
	}
	return nil
}

// detachAndRename takes tp's log out of the Manager, closes it with
// closeLog, renames its dir with suffix (markedDirName) and fsyncs the log
// dir, so the rename survives a crash. It returns the new path.
func (m *Manager) detachAndRename(tp TopicPartition, suffix string, closeLog func(*Log)) (string, error) {
	// A move between dirs under way goes first: its copy is of no use.
	if err := m.CancelMove(tp); err != nil {
		return "", err
	}
	m.mu.Lock()
	l, ok := m.mu.logs[tp]
	d := m.mu.dirOf[tp]
	if ok {
		delete(m.mu.logs, tp)
		delete(m.mu.dirOf, tp)
	}
	m.mu.Unlock()
	if !ok {
		return "", fmt.Errorf("%w: %s", ErrUnknownPartition, tp)
	}
	closeLog(l)
	m.step("closed")
	renamed := filepath.Join(d.path, markedDirName(tp, suffix))
	if err := os.Rename(l.dir, renamed); err != nil {
		return "", fmt.Errorf("rename log dir to %s: %w", renamed, err)
	}
	m.step("renamed")
	if err := syncDir(d.path); err != nil {
		return "", err
	}
	m.step("synced")
	return renamed, nil
}

// step calls the test hook, if any.
func (m *Manager) step(name string) {
	if m.stepHook != nil {
		m.stepHook(name)
	}
}

// Suffixes of partition dirs renamed out of the way: a partition being
// deleted (removed at the next open if a crash interrupts it), and a stray
// one (a log the metadata does not know, kept for an operator to look at).
const (
	deleteDirSuffix = "-delete"
	strayDirSuffix  = "-stray"
)

// maxFileNameBytes is the longest file name the file systems Gregor runs
// on take (NAME_MAX).
const maxFileNameBytes = 255

// markedDirName is the name a partition dir is renamed to with suffix, as
// Kafka names them: "<topic>-<partition>.<32 hex digits><suffix>", the
// topic cut short where the whole would pass 255 bytes, so that any legal
// topic name (up to 249 characters) can be renamed.
func markedDirName(tp TopicPartition, suffix string) string {
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	tail := fmt.Sprintf("-%d.%x%s", tp.Partition, id, suffix)
	topic := tp.Topic
	if n := maxFileNameBytes - len(tail); len(topic) > n {
		topic = topic[:n]
	}
	return topic + tail
}

// Checkpoint writes every dir's recovery points, log start offsets and high
// watermarks now.
func (m *Manager) Checkpoint() error {
	return errors.Join(m.writeCheckpoints(true, true)...)
}

// dirOffsets are the checkpointed offsets of one log dir's logs.
type dirOffsets struct{ rp, start, hw map[TopicPartition]int64 }

// offsetsByDir reads every log's offsets, by the dir it is in.
func (m *Manager) offsetsByDir() map[*logDir]*dirOffsets {
	m.mu.RLock()
	defer m.mu.RUnlock()
	per := map[*logDir]*dirOffsets{}
	for _, d := range m.dirs {
		per[d] = &dirOffsets{rp: map[TopicPartition]int64{}, start: map[TopicPartition]int64{}, hw: map[TopicPartition]int64{}}
	}
	for tp, l := range m.mu.logs {
		o := per[m.mu.dirOf[tp]]
		o.rp[tp] = l.RecoveryPoint()
		o.start[tp] = l.LogStartOffset()
		o.hw[tp] = l.HighWatermark()
	}
	return per
}

// write writes d's recovery point and log start checkpoints (offsets),
// its high watermark checkpoint (hws), or both.
func (o *dirOffsets) write(d *logDir, offsets, hws bool) error {
	var errs []error
	if offsets {
		errs = append(errs, writeOffsetCheckpoint(filepath.Join(d.path, recoveryPointFile), o.rp))
		errs = append(errs, writeOffsetCheckpoint(filepath.Join(d.path, logStartFile), o.start))
	}
	if hws {
		errs = append(errs, writeOffsetCheckpoint(filepath.Join(d.path, highWatermarkFile), o.hw))
	}
	return errors.Join(errs...)
}

func (m *Manager) writeCheckpoints(offsets, hws bool) []error {
	m.ckptMu.Lock()
	defer m.ckptMu.Unlock()
	var errs []error
	for d, o := range m.offsetsByDir() {
		if d.Err() != nil {
			continue // offline: its files are left as they are
		}
		if err := o.write(d, offsets, hws); err != nil {
			m.failDir(d, err)
			errs = append(errs, err)
		}
	}
	return errs
}

// writeDirCheckpointLocked writes dir d's checkpoints with tp's entries
// set to rp, start and hw: tp's log is about to be in d (FinishMove).
// ckptMu must be held.
func (m *Manager) writeDirCheckpointLocked(d *logDir, tp TopicPartition, rp, start, hw int64) error {
	o := m.offsetsByDir()[d]
	o.rp[tp], o.start[tp], o.hw[tp] = rp, start, hw
	return o.write(d, true, true)
}

// failDirOnIO takes d offline when err came from the file system (not from
// a config or a name), and reports whether it did.
func (m *Manager) failDirOnIO(d *logDir, err error) bool {
	var pe *fs.PathError
	var le *os.LinkError
	var se *os.SyscallError
	if errors.As(err, &pe) || errors.As(err, &le) || errors.As(err, &se) || errors.Is(err, ErrLogFailed) {
		m.failDir(d, err)
		return true
	}
	return false
}

func (m *Manager) checkpointLoop(ctx context.Context) {
	offsets := time.NewTicker(m.cfg.CheckpointInterval)
	defer offsets.Stop()
	hws := time.NewTicker(m.cfg.HighWatermarkCheckpointInterval)
	defer hws.Stop()
	for {
		var errs []error
		select {
		case <-ctx.Done():
			return
		case <-offsets.C:
			errs = m.writeCheckpoints(true, false)
		case <-hws.C:
			errs = m.writeCheckpoints(false, true)
		}
		if err := errors.Join(errs...); err != nil {
			m.logger.Error("checkpoint failed", "err", err)
		}
	}
}

// flushLoop queues logs whose oldest unflushed append is older than their
// flush.ms.
func (m *Manager) flushLoop(ctx context.Context) {
	t := time.NewTicker(m.cfg.FlushCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			for _, l := range m.Logs() {
				if l.needsTimedFlush(now) {
					m.sy.request(l)
				}
			}
		}
	}
}

// Close stops the background work, closes every log, writes the
// checkpoints and the clean-shutdown markers, and unlocks the dirs.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return nil
	}
	m.mu.closed = true
	m.mu.Unlock()
	m.creating.Wait()
	m.mu.Lock()
	logs := make([]*Log, 0, len(m.mu.logs))
	for _, l := range m.mu.logs {
		logs = append(logs, l)
	}
	m.mu.Unlock()

	m.cancel()
	m.wg.Wait()

	// Future logs close too (flushed, though the next open recovers them
	// from their start: no checkpoint holds their offsets).
	m.mu.Lock()
	for _, f := range m.mu.futures {
		logs = append(logs, f.log)
	}
	m.mu.Unlock()
	errs := make([]error, len(logs))
	forEachParallel(len(logs), m.cfg.OpenParallelism, func(i int) { errs[i] = logs[i].Close() })
	err := errors.Join(errs...)
	if err == nil {
		err = errors.Join(m.writeCheckpoints(true, true)...)
	}
	for _, d := range m.dirs {
		if err == nil && d.Err() == nil {
			// Only a fully flushed dir is marked clean: otherwise the next
			// start recovers it.
			if e := os.WriteFile(filepath.Join(d.path, cleanShutdownFile), nil, 0o644); e != nil {
				err = e
			} else if e := syncDir(d.path); e != nil {
				err = e
			}
		}
		d.lock.Close()
	}
	return err
}

// forEachParallel calls fn(i) for every i in [0, n), at most limit
// (at least 1) at a time, and returns once every call has returned.
func forEachParallel(n, limit int, fn func(i int)) {
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(i)
		}()
	}
	wg.Wait()
}
