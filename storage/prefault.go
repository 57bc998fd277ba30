package storage

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync/atomic"
)

// Prefault: a hot log's active segment file is extended (ftruncate, a
// sparse tail) ahead of the log's end, and a background goroutine reads the
// new tail's pages into the page cache, where they are zero-filled. An
// append then copies into pages that are already there. Without it every
// append allocates its page-cache pages under Log.mu, in the one goroutine
// that appends to the log, and where new memory is slow to get (a VM whose
// free memory goes back to the host, so that each new page is a fault on
// the host) that allocation was most of the append path's time: a program
// writing 1 MiB blocks to a file went from 482-741 to 977-1,627 MiB/s with
// a reader 16-64 MiB ahead of it, and spent less CPU per GiB.
//
// The tail is never data: readers stop at the segment's size, recovery
// stops at the first batch that is not one (a zero length is not) and cuts
// the file there, and the segment's file is cut back to its size when it
// is sealed or the log closes, so a clean shutdown leaves no tail.

// prefaulter reads the tails that logs extended into the page cache. It
// belongs to a Manager; a log outside one does not prefault.
type prefaulter struct {
	ahead  int64 // ManagerConfig.PrefaultBytes
	budget int64 // bound on all logs' tails not yet written
	tails  atomic.Int64
	reqs   chan prefaultReq
}

type prefaultReq struct {
	seg    *segment
	off, n int64
}

// prefaultLogs is how many logs' worth of tails (ahead bytes each) a
// Manager keeps at most, so that many hot logs cannot fill memory with
// pages not yet written.
const prefaultLogs = 16

func newPrefaulter(ahead int64) *prefaulter {
	return &prefaulter{ahead: ahead, budget: ahead * prefaultLogs, reqs: make(chan prefaultReq, 256)}
}

// run serves requests until ctx is done.
func (p *prefaulter) run(ctx context.Context) {
	for {
		select {
		case r := <-p.reqs:
			f, err := r.seg.acquire()
			if err != nil {
				continue // the segment was closed or removed since
			}
			_ = prefault(f, r.off, r.n)
			r.seg.release()
		case <-ctx.Done():
			return
		}
	}
}

// extendLocked keeps seg, the active segment with end bytes in it after an
// append of n, extended at least half of ahead beyond end once the log is
// hot (ahead bytes appended since it was opened), within segment.bytes and
// the budget, and asks for the new tail's pages. It then settles the log's
// share of the budget. A failed extension is not an error: the append path
// just allocates its pages itself.
func (l *Log) extendLocked(cfg *Config, seg *segment, f *os.File, end, n int64) {
	p := l.prefault
	if p == nil {
		return
	}
	l.appended += n
	from := max(seg.allocEnd, end)
	if l.appended >= p.ahead && from-end < p.ahead/2 {
		to := min(end+p.ahead, cfg.SegmentBytes)
		if to > from && p.tails.Load()-l.tail+(to-end) <= p.budget {
			if err := f.Truncate(to); err == nil {
				seg.allocEnd = to
				select {
				case p.reqs <- prefaultReq{seg: seg, off: from, n: to - from}:
				default: // the prefaulter is behind: appends fault their own pages
				}
			}
		}
	}
	l.settleTailLocked(max(seg.allocEnd-end, 0))
}

// settleTailLocked sets the log's share of the prefault budget to tail.
func (l *Log) settleTailLocked(tail int64) {
	if l.prefault != nil && tail != l.tail {
		l.prefault.tails.Add(tail - l.tail)
		l.tail = tail
	}
}

// trimLocked cuts seg's file back to its size when an extension left a
// tail behind it: before it is sealed, and when the log closes.
func (l *Log) trimLocked(seg *segment) error {
	if seg.allocEnd == 0 {
		return nil
	}
	f, err := seg.file()
	if err != nil {
		return err
	}
	if err := f.Truncate(seg.size.Load()); err != nil {
		return fmt.Errorf("trim %s: %w", seg.logPath, err)
	}
	seg.allocEnd = 0
	l.settleTailLocked(0)
	return nil
}

// zeroFrom reports whether f holds only zero bytes from off to its size:
// the tail of an extended segment that its log did not cut back (a crash),
// as opposed to damaged batches.
func zeroFrom(f io.ReaderAt, off, size int64) bool {
	buf := make([]byte, 64<<10)
	for off < size {
		n := min(int64(len(buf)), size-off)
		m, err := f.ReadAt(buf[:n], off)
		for _, c := range buf[:m] {
			if c != 0 {
				return false
			}
		}
		if err != nil && int64(m) < n {
			return false
		}
		off += n
	}
	return true
}
