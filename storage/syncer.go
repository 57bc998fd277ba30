package storage

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// syncFSMin is the smallest number of logs of one log dir that a group
// commit round flushes with one syncfs(2) of their file system instead of
// an fdatasync each. Measured on this project's test machine (ext4): 16
// small dirty files take 1.8 ms with 16 fdatasyncs in flight and 0.5 ms
// with one syncfs; 256 take 15.7 ms and 2.3 ms. syncfs also flushes what
// else is dirty on the file system, so it is kept for large rounds.
const syncFSMin = 32

// syncer runs group commit for the logs of one Manager. Flush calls queue
// their log and wait; the syncer takes every queued log and starts its
// fsync, up to parallel at once. Appends that arrive while a log's fsync
// runs queue it again, and its next fsync covers all of them: concurrent
// producers share fsyncs however many partitions they touch. Fsyncs of
// different logs do not wait for each other (one slow disk round does not
// hold back the logs queued behind it); a log's own fsyncs run one at a
// time (Log.syncMu).
type syncer struct {
	obs  Observer
	sem  chan struct{} // one token per fsync in flight
	kick chan struct{}
	wg   sync.WaitGroup
	mu   struct {
		sync.Mutex
		queue []*Log
	}
}

func newSyncer(parallel int, obs Observer) *syncer {
	return &syncer{obs: obs, sem: make(chan struct{}, max(parallel, 1)), kick: make(chan struct{}, 1)}
}

// request queues l for an fsync (once, however often it is asked before
// the fsync starts) and wakes the syncer.
func (s *syncer) request(l *Log) {
	s.enqueue(l)
	s.wake()
}

// enqueue queues l for the next round without waking the syncer.
func (s *syncer) enqueue(l *Log) {
	if !l.syncQueued.CompareAndSwap(false, true) {
		return
	}
	s.mu.Lock()
	s.mu.queue = append(s.mu.queue, l)
	s.mu.Unlock()
}

// wake makes the syncer start a round for what is queued.
func (s *syncer) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// run loops until ctx is done, then serves what is still queued, waits for
// every fsync in flight and returns.
func (s *syncer) run(ctx context.Context) {
	defer s.wg.Wait()
	for {
		select {
		case <-s.kick:
			s.start()
		case <-ctx.Done():
			s.start()
			return
		}
	}
}

// start begins an fsync for every queued log, blocking while parallel
// fsyncs are in flight. The logs of a log dir with at least syncFSMin of
// them queued share one syncfs instead.
func (s *syncer) start() {
	s.mu.Lock()
	batch := s.mu.queue
	s.mu.queue = nil
	s.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	s.obs.GroupCommit(len(batch))
	byDir := map[string][]*Log{}
	if len(batch) >= syncFSMin {
		for _, l := range batch {
			d := filepath.Dir(l.dir)
			byDir[d] = append(byDir[d], l)
		}
	}
	var single []*Log
	for d, logs := range byDir {
		if len(logs) < syncFSMin {
			single = append(single, logs...)
			continue
		}
		s.sem <- struct{}{}
		for _, l := range logs {
			l.syncQueued.Store(false)
		}
		s.wg.Add(1)
		go func() {
			defer func() { <-s.sem; s.wg.Done() }()
			s.syncGroup(d, logs)
		}()
	}
	if len(byDir) == 0 {
		single = batch
	}
	for _, l := range single {
		s.sem <- struct{}{}
		// Cleared just before the fsync starts: an append after this
		// point queues the log again.
		l.syncQueued.Store(false)
		s.wg.Add(1)
		go func() {
			defer func() { <-s.sem; s.wg.Done() }()
			_ = l.sync() // errors reach the waiters through fail
		}()
	}
}

// syncGroup flushes logs, all in log dir dir, with one syncfs: each log's
// round is captured first, then the file system is flushed, then each
// round is finished (sealed segments' indexes still get their own fsync).
// The logs' syncMu are taken in the order of their paths, so that two
// groups sharing logs cannot deadlock.
func (s *syncer) syncGroup(dir string, logs []*Log) {
	slices.SortFunc(logs, func(a, b *Log) int { return strings.Compare(a.dir, b.dir) })
	rounds := make([]*syncRound, len(logs))
	for i, l := range logs {
		l.syncMu.Lock()
		rounds[i], _ = l.syncBegin() // a failed log is skipped; its waiters have the error
	}
	start := time.Now()
	err := syncFS(dir)
	s.obs.Fsynced(time.Since(start))
	for i, l := range logs {
		if r := rounds[i]; r != nil {
			if err != nil {
				l.fail(fmt.Errorf("sync log dir %s: %w", dir, err))
			} else {
				_ = l.syncFinish(r, true)
			}
		}
		l.syncMu.Unlock()
	}
}
