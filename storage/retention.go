package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"time"
)

// DeleteOldSegments applies the log's retention at time now, the way
// Kafka's periodic retention check does, and returns the number of
// segments it deleted. Three rules run in turn, each deleting segments
// from the oldest on and stopping at the first segment it keeps:
//
//   - a segment whose successor starts at or below the log start offset
//     holds nothing readers may fetch (whatever cleanup.policy says);
//   - with cleanup.policy "delete" and retention.bytes >= 0: when the log
//     holds at least retention.bytes, a segment goes while the bytes over
//     the limit still cover its whole size;
//   - with cleanup.policy "delete" and retention.ms >= 0: a segment goes
//     when now minus its largest timestamp is above retention.ms.
//
// Only whole segments that end at or below the high watermark are deleted,
// so the log start never passes it, and never the active segment, which
// is not rolled for retention. The log start moves up to the base of the
// first segment kept. Deleted files are renamed with the .deleted suffix
// and removed after file.delete.delay.ms; readers holding them keep
// reading.
func (l *Log) DeleteOldSegments(now time.Time) (int, error) {
	// The largest timestamps may need index or file reads: they are taken
	// without the lock, then the plan is made again under it with what was
	// read. A segment that appeared meanwhile has no entry and is kept.
	known := map[*segment]int64{}
	var readErr error
	l.planRetention(now, func(s *segment) (int64, bool) {
		ts, err := s.largestTimestamp()
		if err != nil {
			if !s.deleted.Load() {
				readErr = err
			}
			return 0, false
		}
		known[s] = ts
		return ts, true
	})

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return 0, ErrClosed
	}
	if err := l.Err(); err != nil {
		return 0, err
	}
	n := l.planRetention(now, func(s *segment) (int64, bool) {
		ts, ok := known[s]
		return ts, ok
	})
	if n == 0 {
		return 0, readErr
	}
	segs := *l.segs.Load()
	start := segs[n].base
	if start > l.logStart.Load() {
		l.logStart.Store(start)
	}
	if err := l.dropOldestLocked(n); err != nil {
		return n, l.fail(err)
	}
	if err := l.epochs.truncateFromStart(l.logStart.Load()); err != nil {
		return n, l.fail(err)
	}
	l.logger.Info("deleted segments by retention", "segments", n, "log_start", l.logStart.Load())
	l.notify.broadcast()
	return n, readErr
}

// planRetention returns how many of the oldest segments retention deletes
// now (see DeleteOldSegments). largestTS gives a segment's largest
// timestamp; false keeps the segment and the ones after it.
func (l *Log) planRetention(now time.Time, largestTS func(*segment) (int64, bool)) int {
	cfg := l.cfg.Load()
	segs := *l.segs.Load()
	hw := l.hw.Load().offset
	logStart := l.logStart.Load()
	// Segment i may go: not the active one, and it ends at or below the
	// high watermark.
	deletable := func(i int) bool { return i+1 < len(segs) && segs[i+1].base <= hw }

	n := 0
	for deletable(n) && segs[n+1].base <= logStart {
		n++
	}
	if !cfg.CleanupDelete {
		return n
	}
	if cfg.RetentionBytes >= 0 {
		var size int64
		for _, s := range segs[n:] {
			size += s.size.Load()
		}
		if size >= cfg.RetentionBytes {
			over := size - cfg.RetentionBytes
			for deletable(n) && over >= segs[n].size.Load() {
				over -= segs[n].size.Load()
				n++
			}
		}
	}
	if cfg.RetentionMs >= 0 {
		for deletable(n) {
			ts, ok := largestTS(segs[n])
			if !ok || now.UnixMilli()-ts <= cfg.RetentionMs {
				break
			}
			n++
		}
	}
	return n
}

// deleter removes the files of deleted segments once their
// file.delete.delay.ms has passed, on the Manager's clock. Files still
// pending at shutdown stay, with their .deleted suffix, until the next
// open removes them.
type deleter struct {
	now    func() time.Time
	logger *slog.Logger
	wake   chan struct{}

	// removing is held over a whole removeDue, so that a caller returns
	// only once the files due are gone, even when the background loop
	// took them off the list first.
	removing sync.Mutex

	mu struct {
		sync.Mutex
		pending []pendingDelete
	}
}

type pendingDelete struct {
	paths []string
	due   time.Time
}

func newDeleter(now func() time.Time, logger *slog.Logger) *deleter {
	return &deleter{now: now, logger: logger, wake: make(chan struct{}, 1)}
}

// schedule removes paths at due or later.
func (d *deleter) schedule(paths []string, due time.Time) {
	if len(paths) == 0 {
		return
	}
	d.mu.Lock()
	d.mu.pending = append(d.mu.pending, pendingDelete{paths: paths, due: due})
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// removeDue removes the files due by now. It returns the earliest due time
// of what is left, and false when nothing is.
func (d *deleter) removeDue() (time.Time, bool, error) {
	d.removing.Lock()
	defer d.removing.Unlock()
	now := d.now()
	var due []pendingDelete
	var next time.Time
	d.mu.Lock()
	keep := d.mu.pending[:0]
	for _, p := range d.mu.pending {
		if !p.due.After(now) {
			due = append(due, p)
			continue
		}
		if len(keep) == 0 || p.due.Before(next) {
			next = p.due
		}
		keep = append(keep, p)
	}
	clear(d.mu.pending[len(keep):])
	d.mu.pending = keep
	left := len(keep) > 0
	d.mu.Unlock()

	var errs []error
	for _, p := range due {
		for _, path := range p.paths {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("remove deleted segment file: %w", err))
			}
		}
	}
	return next, left, errors.Join(errs...)
}

// run removes files as they fall due until ctx is done.
func (d *deleter) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next, left, err := d.removeDue()
		if err != nil {
			d.logger.Error("removing deleted segment files failed", "err", err)
		}
		timer.Stop()
		var fire <-chan time.Time
		if left {
			// At least a millisecond: a clock that stands still (in
			// tests) must not make this spin.
			timer.Reset(max(next.Sub(d.now()), time.Millisecond))
			fire = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		case <-fire:
		}
	}
}

// RunRetention runs one retention pass now over every log, as the
// Manager does every RetentionCheckInterval: it deletes the segments each
// log's retention allows (Log.DeleteOldSegments), removes the files of
// deleted segments whose file.delete.delay.ms has passed, and, when a log
// start offset moved, writes the offset checkpoints so the new starts
// outlive a crash. It returns the number of segments deleted.
func (m *Manager) RunRetention() (int, error) {
	now := m.now()
	var total int
	var errs []error
	for _, l := range m.Logs() {
		n, err := l.DeleteOldSegments(now)
		total += n
		if err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, fmt.Errorf("retention of %s: %w", l.tp, err))
		}
	}
	if total > 0 {
		errs = append(errs, m.writeCheckpoints(true, false)...)
	}
	if _, _, err := m.del.removeDue(); err != nil {
		errs = append(errs, err)
	}
	return total, errors.Join(errs...)
}

// retentionLoop runs RunRetention every RetentionCheckInterval.
func (m *Manager) retentionLoop(ctx context.Context) {
	t := time.NewTicker(m.cfg.RetentionCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := m.RunRetention(); err != nil {
				m.logger.Error("retention pass failed", "err", err)
			}
		}
	}
}
