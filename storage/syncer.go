package storage

import (
	"context"
	"sync"
)

// syncer runs group commit for the logs of one Manager. Flush calls queue
// their log and wait; the syncer takes every queued log at once and fsyncs
// them in parallel, so appends that arrive while a round runs share the next
// round's fsyncs, however many partitions they touch.
type syncer struct {
	parallel int
	kick     chan struct{}
	mu       struct {
		sync.Mutex
		queue []*Log
	}
}

func newSyncer(parallel int) *syncer {
	return &syncer{parallel: max(parallel, 1), kick: make(chan struct{}, 1)}
}

// request queues l for the next round (once, however often it is asked).
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

// run loops until ctx is done, then serves what is still queued and returns.
func (s *syncer) run(ctx context.Context) {
	for {
		select {
		case <-s.kick:
			s.round()
		case <-ctx.Done():
			s.round()
			return
		}
	}
}

// round fsyncs every queued log, at most parallel at a time.
func (s *syncer) round() {
	s.mu.Lock()
	batch := s.mu.queue
	s.mu.queue = nil
	s.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	for _, l := range batch {
		// Cleared before the sync starts: an append after this point
		// queues the log again for the next round.
		l.syncQueued.Store(false)
	}
	if len(batch) == 1 {
		_ = batch[0].sync() // errors reach the waiters through fail
		return
	}
	sem := make(chan struct{}, s.parallel)
	var wg sync.WaitGroup
	for _, l := range batch {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = l.sync()
			<-sem
		}()
	}
	wg.Wait()
}
