package storage

import (
	"context"
	"sync"
)

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
// the fsync starts).
func (s *syncer) request(l *Log) {
	if !l.syncQueued.CompareAndSwap(false, true) {
		return
	}
	s.mu.Lock()
	s.mu.queue = append(s.mu.queue, l)
	s.mu.Unlock()
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
// fsyncs are in flight.
func (s *syncer) start() {
	s.mu.Lock()
	batch := s.mu.queue
	s.mu.queue = nil
	s.mu.Unlock()
	if len(batch) > 0 {
		s.obs.GroupCommit(len(batch))
	}
	for _, l := range batch {
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
