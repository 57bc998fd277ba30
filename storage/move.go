package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gregor-io/gregor/protocol/record"
)

// Moving a partition's log from one log dir to another of the same broker
// (AlterReplicaLogDirs), as Kafka does it: a future log is made in the
// destination dir ("<topic>-<partition>.<32 hex digits>-future") and filled
// with copies of the current log's batches while the current log goes on
// taking writes; once it has caught up, FinishMove stops writes to the
// current log, copies the last batches and puts the future log in its
// place.
//
// What a kill -9 at any moment leaves, the next open settles:
//   - a future log without the move-done marker is a copy under way: the
//     current log is the partition's, the future one is opened again and
//     the copy resumes (Futures lists it);
//   - a future log with the marker holds every record of the current log
//     (the marker is written, and fsynced, only after the last copy with
//     writes to the current log stopped and the future log flushed and
//     closed): the move is finished, the current log renamed away and
//     removed, the future one renamed to the partition's name;
//   - a future log whose partition has no current log, marker or not, is
//     not a state any step leaves: the open fails rather than guess.

const (
	futureDirSuffix = "-future"
	// moveDoneFile, in a future log's dir, marks it complete: see above.
	moveDoneFile = "move.done"
)

// ErrLogDirNotFound is a path that is none of the Manager's log dirs
// (LOG_DIR_NOT_FOUND).
var ErrLogDirNotFound = errors.New("storage: not a log dir of this broker")

// futureLog is a move under way: the copy and the dir it is in.
type futureLog struct {
	log *Log
	dir *logDir
}

// dirByPath returns the log dir at path (compared as absolute paths), or
// nil.
func (m *Manager) dirByPath(path string) *logDir {
	want, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	for _, d := range m.dirs {
		if abs, err := filepath.Abs(d.path); err == nil && abs == want {
			return d
		}
	}
	return nil
}

// LogDir returns the log dir holding tp's log.
func (m *Manager) LogDir(tp TopicPartition) (string, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	d, ok := m.mu.dirOf[tp]
	if !ok {
		return "", false
	}
	return d.path, true
}

// Future returns tp's future log and the log dir it is in, while tp moves.
func (m *Manager) Future(tp TopicPartition) (*Log, string, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	f, ok := m.mu.futures[tp]
	if !ok {
		return nil, "", false
	}
	return f.log, f.dir.path, true
}

// Futures lists the partitions moving between log dirs.
func (m *Manager) Futures() []TopicPartition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]TopicPartition, 0, len(m.mu.futures))
	for tp := range m.mu.futures {
		out = append(out, tp)
	}
	return out
}

// SetPreferredDir records the log dir tp's log is to be created in, for a
// partition this broker does not hold yet (Kafka's preferred log dir): the
// next Create of tp uses it if it is online, and forgets it.
func (m *Manager) SetPreferredDir(tp TopicPartition, path string) error {
	d := m.dirByPath(path)
	if d == nil {
		return fmt.Errorf("%w: %s", ErrLogDirNotFound, path)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mu.preferred[tp] = d
	return nil
}

// StartMove begins moving tp's log to the log dir at path: it creates the
// future log there, empty from the current log's start, and reports true.
// It reports false when there is nothing to start: the log is in that dir
// already (a move elsewhere under way is cancelled), or a move to it is
// under way. ErrLogDirNotFound: no such dir; ErrLogFailed: the dir is
// offline; ErrUnknownPartition: no log of tp; ErrInvalidConfig: the future
// log's name would be too long (as Kafka, which refuses such a move).
func (m *Manager) StartMove(tp TopicPartition, path string) (bool, error) {
	m.moveMu.Lock()
	defer m.moveMu.Unlock()
	d := m.dirByPath(path)
	if d == nil {
		return false, fmt.Errorf("%w: %s", ErrLogDirNotFound, path)
	}
	if err := d.Err(); err != nil {
		return false, fmt.Errorf("%w: log dir %s is offline: %w", ErrLogFailed, d.path, err)
	}
	if n := len(fmt.Sprintf("%s.%032x%s", tp.DirName(), 0, futureDirSuffix)); n > maxFileNameBytes {
		return false, fmt.Errorf("%w: the future log's name of %s would be %d bytes, over %d", ErrInvalidConfig, tp, n, maxFileNameBytes)
	}
	m.mu.Lock()
	cur, ok := m.mu.logs[tp]
	curDir := m.mu.dirOf[tp]
	f := m.mu.futures[tp]
	closed := m.mu.closed
	m.mu.Unlock()
	switch {
	case closed:
		return false, ErrClosed
	case !ok:
		return false, fmt.Errorf("%w: %s", ErrUnknownPartition, tp)
	case f != nil && f.dir == d:
		return false, nil
	case f != nil:
		if err := m.cancelMoveLocked(tp); err != nil {
			return false, err
		}
	}
	if curDir == d {
		return false, nil
	}
	fpath := filepath.Join(d.path, markedDirName(tp, futureDirSuffix))
	fl, err := openLog(fpath, tp, *cur.cfg.Load(), OpenState{Clean: true, LogStart: cur.LogStartOffset()}, m.logger, m.env(d))
	if err == nil {
		if id, has, ierr := cur.TopicID(); ierr != nil {
			err = ierr
		} else if has {
			err = fl.SetTopicID(id)
		}
		if err != nil {
			fl.closeFiles()
		}
	}
	if err == nil {
		if err = syncDir(d.path); err != nil {
			fl.closeFiles()
		}
	}
	if err != nil {
		m.discardNewFuture(fpath, "its create failed")
		m.failDirOnIO(d, err)
		return false, err
	}
	m.step("future created")
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.closed || m.mu.logs[tp] != cur || m.mu.futures[tp] != nil {
		// The log went, or another move began, meanwhile.
		fl.closeFiles()
		m.discardNewFuture(fpath, "it is no longer wanted")
		return false, fmt.Errorf("%w: %s changed while its move began", ErrUnknownPartition, tp)
	}
	m.mu.futures[tp] = &futureLog{log: fl, dir: d}
	m.logger.Info("moving a log between log dirs", "partition", tp.String(), "from", curDir.path, "to", d.path)
	return true, nil
}

// discardNewFuture removes a future log StartMove made and did not list.
// It holds no record yet, so a crash part way through the removal leaves
// at worst an empty copy, which the next start resumes or, once its
// partition is gone, refuses to guess about (see the top of this file).
func (m *Manager) discardNewFuture(path, why string) {
	if err := os.RemoveAll(path); err != nil {
		m.logger.Error("removing a future log: "+why, "dir", path, "err", err)
	}
}

// CancelMove stops tp's move, if one is under way, and removes its future
// log: its dir is renamed with the -delete suffix first, so a crash midway
// finishes the removal at the next start instead of resuming a copy with
// files missing.
func (m *Manager) CancelMove(tp TopicPartition) error {
	m.moveMu.Lock()
	defer m.moveMu.Unlock()
	return m.cancelMoveLocked(tp)
}

func (m *Manager) cancelMoveLocked(tp TopicPartition) error {
	m.mu.Lock()
	f := m.mu.futures[tp]
	delete(m.mu.futures, tp)
	m.mu.Unlock()
	if f == nil {
		return nil
	}
	return m.dropFuture(tp, f)
}

func (m *Manager) dropFuture(tp TopicPartition, f *futureLog) error {
	f.log.shutForGood()
	renamed := filepath.Join(f.dir.path, markedDirName(tp, deleteDirSuffix))
	if err := os.Rename(f.log.dir, renamed); err != nil {
		m.failDirOnIO(f.dir, err)
		return fmt.Errorf("rename future log to %s: %w", renamed, err)
	}
	m.step("future renamed -delete")
	if err := syncDir(f.dir.path); err != nil {
		m.failDirOnIO(f.dir, err)
		return err
	}
	if err := os.RemoveAll(renamed); err != nil {
		return fmt.Errorf("remove future log: %w", err)
	}
	return nil
}

// CopyToFuture copies the batches of tp's log that its future log lacks,
// at most about maxBytes (one batch at least), and returns the bytes
// copied and how many offsets the future log is still behind. The future
// log follows the current one through truncations (a follower's) and
// log start moves (retention, DeleteRecords).
func (m *Manager) CopyToFuture(tp TopicPartition, maxBytes int64) (copied, lag int64, err error) {
	cur, f, err := m.moving(tp)
	if err != nil {
		return 0, 0, err
	}
	copied, err = copyTail(cur, f.log, maxBytes)
	return copied, max(cur.LogEndOffset()-f.log.LogEndOffset(), 0), err
}

func (m *Manager) moving(tp TopicPartition) (*Log, *futureLog, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	cur, ok := m.mu.logs[tp]
	f := m.mu.futures[tp]
	if !ok || f == nil {
		return nil, nil, fmt.Errorf("%w: %s is not moving", ErrUnknownPartition, tp)
	}
	return cur, f, nil
}

// copyTail is one step of a copy from cur to fl: it first undoes in fl
// what cur no longer holds, then appends what cur holds past fl's end.
func copyTail(cur, fl *Log, maxBytes int64) (int64, error) {
	if mark := cur.truncMark.Swap(math.MaxInt64); mark < fl.LogEndOffset() {
		// cur was truncated (to mark, at the lowest) since the last step:
		// what fl holds from there may not be cur's any more.
		if err := fl.TruncateTo(mark); err != nil {
			return 0, err
		}
	}
	if start := cur.LogStartOffset(); fl.LogEndOffset() < start {
		// Retention or DeleteRecords took the records fl would copy next.
		if err := fl.TruncateFullyAndStartAt(start); err != nil {
			return 0, err
		}
	}
	next := fl.LogEndOffset()
	if next > cur.LogEndOffset() {
		return 0, fl.TruncateTo(cur.LogEndOffset())
	}
	if next == cur.LogEndOffset() {
		return 0, nil
	}
	maxBytes = max(min(maxBytes, cur.cfg.Load().SegmentBytes), 1)
	rr, err := cur.Read(ReadOptions{Offset: next, MaxBytes: maxBytes, MinOneBatch: true})
	if err != nil {
		if errors.Is(err, ErrOffsetOutOfRange) {
			return 0, nil // moved under the read: the next step sees where
		}
		return 0, err
	}
	buf, err := rr.AppendTo(nil)
	rr.Release()
	if err != nil {
		return 0, err
	}
	it := record.NewIter(buf)
	from, end := 0, 0
	keepStart := int64(-1)
	for b, ok := it.Next(); ok; b, ok = it.Next() {
		switch {
		case b.NextOffset() <= next:
			from = it.Pos() // below fl's end: fl has it
		case b.BaseOffset() < next && next == fl.LogStartOffset() && keepStart < 0:
			// fl is empty at a log start inside this batch (DeleteRecords
			// moved cur's there): fl starts at the batch's base to take
			// it whole, then gets its log start back.
			keepStart = next
			if err := fl.TruncateFullyAndStartAt(b.BaseOffset()); err != nil {
				return 0, err
			}
		case b.BaseOffset() < next:
			// A batch of cur straddles fl's end: cur's batches are not
			// the ones fl copied (a truncation raced the mark). Start
			// that batch again.
			return 0, fl.TruncateTo(b.BaseOffset())
		}
		end = it.Pos()
	}
	if end <= from {
		return 0, nil
	}
	if _, err := fl.Append(buf[from:end], AppendOptions{}); err != nil {
		return 0, err
	}
	if keepStart >= 0 {
		if err := fl.DeleteBelow(keepStart); err != nil {
			return 0, err
		}
	}
	return int64(end - from), nil
}

// FinishMove puts tp's future log in place of its log and returns the log
// now in use, opened from the future log's files in the new dir. Writes to
// the current log stop for the time it takes (Append and truncation fail
// with ErrClosed, reads on it then too): the caller keeps its own writers
// away meanwhile and moves them to the returned log. Call it once the
// future log has caught up (CopyToFuture's lag small): the last batches
// are copied while writes are stopped.
//
// A failure before the current log is renamed away gives the current log
// its writes back and keeps the future log (the move may be finished
// again); after it, the dir is taken offline and the next start finishes
// the move (see the top of this file).
func (m *Manager) FinishMove(tp TopicPartition) (*Log, error) {
	m.moveMu.Lock()
	defer m.moveMu.Unlock()
	cur, f, err := m.moving(tp)
	if err != nil {
		return nil, err
	}
	m.mu.RLock()
	curDir := m.mu.dirOf[tp]
	m.mu.RUnlock()
	fl := f.log
	// What was copied so far goes to disk before writes stop, so that the
	// flush under the stop covers only the last batches.
	if err := fl.sync(); err != nil {
		return nil, err
	}
	// No cleaning swaps cur's segments from here on.
	cur.cleanMu.Lock()
	defer cur.cleanMu.Unlock()

	stopped := time.Now()
	cur.mu.Lock()
	if cur.mu.closed {
		cur.mu.Unlock()
		return nil, ErrClosed
	}
	cur.mu.closed = true
	autoHW := cur.autoHW
	cur.mu.Unlock()
	m.step("writes stopped")
	reopen := func(err error) (*Log, error) {
		cur.mu.Lock()
		cur.mu.closed = false
		cur.mu.Unlock()
		return nil, err
	}
	// Everything cur acknowledged is durable in cur (its flush waiters
	// answered), then in fl.
	if err := cur.sync(); err != nil {
		return reopen(err)
	}
	// cur takes no write now: each step copies or cuts until fl ends
	// where cur does; two steps in a row that change nothing are a stall.
	for idle := 0; fl.LogEndOffset() != cur.LogEndOffset() || cur.truncMark.Load() < fl.LogEndOffset(); {
		before := fl.LogEndOffset()
		n, err := copyTail(cur, fl, 8<<20)
		if err != nil {
			return reopen(err)
		}
		if n > 0 || fl.LogEndOffset() != before {
			idle = 0
		} else if idle++; idle == 2 {
			return reopen(fmt.Errorf("copy of %s to its future log stalled at %d of %d", tp, fl.LogEndOffset(), cur.LogEndOffset()))
		}
	}
	if start := cur.LogStartOffset(); fl.LogStartOffset() < start {
		if err := fl.DeleteBelow(start); err != nil {
			return reopen(err)
		}
	}
	if e := cur.LatestEpoch(); e > fl.LatestEpoch() {
		// A leadership taken with nothing written under it yet.
		if err := fl.AssignEpoch(e); err != nil {
			return reopen(err)
		}
	}
	fl.SetHighWatermark(cur.HighWatermark())
	hw, start, end := fl.HighWatermark(), fl.LogStartOffset(), fl.LogEndOffset()
	// A future log that fails from here is closed: the move is given up
	// (asked again, it starts over), and cur gets its writes back only
	// once no move-done marker can be left on disk to finish the move at
	// the next start with a log that lacks those writes.
	giveUp := func(err error) (*Log, error) {
		m.failDirOnIO(f.dir, err)
		m.mu.Lock()
		delete(m.mu.futures, tp)
		m.mu.Unlock()
		if derr := m.dropFuture(tp, f); derr != nil {
			// The marker may be there: cur stays stopped, and its dir
			// offline until the next start settles the move.
			m.failDir(curDir, derr)
			return nil, errors.Join(err, derr)
		}
		return reopen(err)
	}
	if err := fl.Close(); err != nil {
		return giveUp(err)
	}
	m.step("future closed")
	// The new dir's checkpoints get tp's offsets before the move is
	// decided, and no other checkpoint is written until tp is listed in
	// that dir: a kill from the marker on opens the moved log with its
	// own log start and recovery point, never with none (a log start a
	// DeleteRecords moved would fall back to the first segment's base)
	// nor with a stale entry left in the dir by an earlier move out of
	// it whose own checkpoint a kill prevented.
	m.ckptMu.Lock()
	ckptHeld := true
	releaseCkpt := func() {
		if ckptHeld {
			ckptHeld = false
			m.ckptMu.Unlock()
		}
	}
	defer releaseCkpt()
	if err := m.writeDirCheckpointLocked(f.dir, tp, end, start, hw); err != nil {
		releaseCkpt()
		return giveUp(err)
	}
	m.step("new dir checkpointed")
	if err := m.writeMoveDone(fl.dir); err != nil {
		releaseCkpt()
		return giveUp(err)
	}
	m.step("marked done")

	// From here the move is decided: the next start finishes it.
	cur.shutForGood()
	old := filepath.Join(curDir.path, markedDirName(tp, deleteDirSuffix))
	if err := os.Rename(cur.dir, old); err != nil {
		m.failDir(curDir, err)
		return nil, fmt.Errorf("rename %s out of the way: %w", cur.dir, err)
	}
	m.step("current renamed")
	if err := syncDir(curDir.path); err != nil {
		m.failDir(curDir, err)
		return nil, err
	}
	m.step("current synced")
	path := filepath.Join(f.dir.path, tp.DirName())
	if err := os.Rename(fl.dir, path); err != nil {
		m.failDir(f.dir, err)
		return nil, fmt.Errorf("rename future log to %s: %w", path, err)
	}
	m.step("future renamed")
	if err := syncDir(f.dir.path); err != nil {
		m.failDir(f.dir, err)
		return nil, err
	}
	m.step("future synced")
	if err := removeMoveDone(path); err != nil {
		m.failDir(f.dir, err)
		return nil, err
	}
	m.step("marker removed")
	nl, err := openLog(path, tp, *cur.cfg.Load(), OpenState{Clean: true, RecoveryPoint: end, LogStart: start, HighWatermark: hw},
		m.logger, m.env(f.dir))
	if err != nil {
		m.failDirOnIO(f.dir, err)
		return nil, err
	}
	nl.SetAutoHighWatermark(autoHW)
	m.mu.Lock()
	m.mu.logs[tp] = nl
	m.mu.dirOf[tp] = f.dir
	delete(m.mu.futures, tp)
	m.mu.Unlock()
	releaseCkpt()
	// Off the caller's path, which waits on it with writes stopped.
	m.goTracked(func() {
		if err := os.RemoveAll(old); err != nil {
			m.logger.Error("removing a moved log's old dir; the next start removes it", "dir", old, "err", err)
		}
		if err := m.Checkpoint(); err != nil {
			m.logger.Error("checkpointing after a log moved dirs", "partition", tp.String(), "err", err)
		}
	})
	m.logger.Info("log moved between log dirs", "partition", tp.String(), "from", curDir.path, "to", f.dir.path,
		"log_end", end, "writes_stopped", time.Since(stopped))
	return nl, nil
}

// Shut reports whether the log was closed for good (deleted, or moved to
// another log dir: see FinishMove).
func (l *Log) Shut() bool { return l.shut.Load() }

// shutForGood closes the log for good without flushing it: no append, no
// truncation and no read from now on (reads fail with ErrClosed; readers
// holding a Slice keep their file until they release it). Its waiters
// wake and find it closed.
func (l *Log) shutForGood() {
	l.mu.Lock()
	l.mu.closed = true
	l.untrackCacheLocked()
	l.mu.Unlock()
	l.shut.Store(true)
	l.closeFiles()
	l.wakeWaiters(0, ErrClosed)
	l.notify.broadcast()
}

// writeMoveDone writes the move-done marker in dir; a test may make it
// fail (Manager.markerHook).
func (m *Manager) writeMoveDone(dir string) error {
	if m.markerHook != nil {
		if err := m.markerHook(dir); err != nil {
			return err
		}
	}
	p := filepath.Join(dir, moveDoneFile)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return syncDir(dir)
}

func removeMoveDone(dir string) error {
	if err := os.Remove(filepath.Join(dir, moveDoneFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return syncDir(dir)
}

// parseFutureDirName returns the partition of a future log's dir name
// ("<topic>-<partition>.<32 hex digits>-future").
func parseFutureDirName(name string) (TopicPartition, bool) {
	rest, ok := strings.CutSuffix(name, futureDirSuffix)
	if !ok {
		return TopicPartition{}, false
	}
	i := strings.LastIndexByte(rest, '.')
	if i < 0 || len(rest)-i-1 != 32 {
		return TopicPartition{}, false
	}
	return ParseDirName(rest[:i])
}

// settleMoves runs at open, before the dirs are scanned: it finishes the
// moves whose future log is marked done and returns the others, to be
// opened as futures once the logs are.
func (m *Manager) settleMoves() ([]openJob, error) {
	type found struct {
		d    *logDir
		path string
	}
	futures := map[TopicPartition][]found{}
	current := map[TopicPartition][]found{}
	for _, d := range m.dirs {
		ents, err := os.ReadDir(d.path)
		if err != nil {
			return nil, fmt.Errorf("list log dir: %w", err)
		}
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			if tp, ok := parseFutureDirName(e.Name()); ok {
				futures[tp] = append(futures[tp], found{d, filepath.Join(d.path, e.Name())})
			} else if tp, ok := ParseDirName(e.Name()); ok {
				current[tp] = append(current[tp], found{d, filepath.Join(d.path, e.Name())})
			}
		}
	}
	// A marker left in a log renamed into place: the move was finished.
	for _, list := range current {
		for _, c := range list {
			if _, err := os.Stat(filepath.Join(c.path, moveDoneFile)); err == nil {
				if err := removeMoveDone(c.path); err != nil {
					return nil, err
				}
				m.logger.Info("finished a log move interrupted after its rename", "dir", c.path)
			}
		}
	}
	var jobs []openJob
	for tp, list := range futures {
		if len(list) > 1 {
			return nil, fmt.Errorf("%w: %s has %d future logs (%s, %s)", ErrPartitionExists, tp, len(list), list[0].path, list[1].path)
		}
		f := list[0]
		_, err := os.Stat(filepath.Join(f.path, moveDoneFile))
		done := err == nil
		cur := current[tp]
		switch {
		case len(cur) > 1:
			return nil, fmt.Errorf("%w: %s in two log dirs", ErrPartitionExists, tp)
		case len(cur) == 1 && cur[0].d == f.d:
			return nil, fmt.Errorf("%w: %s has its future log %s in its own log dir", ErrPartitionExists, tp, f.path)
		case done:
			if len(cur) == 1 {
				old := filepath.Join(cur[0].d.path, markedDirName(tp, deleteDirSuffix))
				if err := os.Rename(cur[0].path, old); err != nil {
					return nil, fmt.Errorf("rename %s out of the way: %w", cur[0].path, err)
				}
				if err := syncDir(cur[0].d.path); err != nil {
					return nil, err
				}
			}
			path := filepath.Join(f.d.path, tp.DirName())
			if err := os.Rename(f.path, path); err != nil {
				return nil, fmt.Errorf("rename future log to %s: %w", path, err)
			}
			if err := syncDir(f.d.path); err != nil {
				return nil, err
			}
			if err := removeMoveDone(path); err != nil {
				return nil, err
			}
			m.logger.Info("finished a log move a crash interrupted", "partition", tp.String(), "dir", path)
		case len(cur) == 0:
			return nil, fmt.Errorf("%w: %s has a future log (%s) that is not complete and no current log; not guessing which data to keep",
				ErrUnknownPartition, tp, f.path)
		default:
			// A copy under way: recovered from its start (no checkpoint
			// holds its offsets) and resumed.
			jobs = append(jobs, openJob{dir: f.d, tp: tp, path: f.path, firstDirty: -1, future: true})
		}
	}
	return jobs, nil
}
