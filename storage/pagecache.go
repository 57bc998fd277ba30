package storage

import (
	"container/heap"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
)

// cacheWindow holds the page cache of what a Manager's logs append to the
// newest keep bytes appended to any of them (ManagerConfig.PageCacheKeepBytes).
// Where memory the page cache has not used yet is slow to get, as on a VM
// whose free memory goes back to the host, each new page of a growing cache
// costs a fault on the host, and that was most of the broker's CPU time for
// a fast producer; with the cache held to a window, appends reuse the pages
// the window frees. The window is broker-wide, not per log, so that ten
// thousand partitions each taking a little are held too. A reader further
// behind reads from disk, and drops what it read (Log.Read). Pages still
// dirty stay (the call starts their writeback).
//
// A log drops its old pages when it appends; one that does not append again
// (one of ten thousand partitions that a producer visits in turn) has its
// pages dropped by the window's keeper goroutine (run) once the clock has
// moved keep past them, so that the window holds however few appends each
// log gets.
type cacheWindow struct {
	keep int64
	// clock is the bytes appended to the Manager's logs since it opened.
	clock atomic.Int64
	// due is the clock, less keep, at which the keeper has a log to visit
	// (the least key in mu.logs); math.MaxInt64: none.
	due  atomic.Int64
	kick chan struct{}
	mu   struct {
		sync.Mutex
		// logs holds each log that has marks, keyed by a clock at or
		// before its oldest mark's (Log.cacheKey), least first.
		logs cacheHeap
	}
}

func newCacheWindow(keep int64) *cacheWindow {
	if keep <= 0 {
		return nil
	}
	w := &cacheWindow{keep: keep, kick: make(chan struct{}, 1)}
	w.due.Store(math.MaxInt64)
	return w
}

// cacheHeap is a min-heap of logs by Log.cacheKey; Log.cacheAt is each
// log's index in it. Guarded by cacheWindow.mu.
type cacheHeap []*Log

func (h cacheHeap) Len() int           { return len(h) }
func (h cacheHeap) Less(i, j int) bool { return h[i].cacheKey < h[j].cacheKey }
func (h cacheHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].cacheAt, h[j].cacheAt = i, j
}
func (h *cacheHeap) Push(x any) {
	l := x.(*Log)
	l.cacheAt = len(*h)
	*h = append(*h, l)
}
func (h *cacheHeap) Pop() any {
	old := *h
	l := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	l.cacheAt = -1
	return l
}

// track puts l, which has marks, in the keeper's heap unless it is there.
// Called with l.mu held.
func (w *cacheWindow) track(l *Log) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if l.cacheAt >= 0 {
		return
	}
	l.cacheKey = l.marks[0].clock
	heap.Push(&w.mu.logs, l)
	w.setDueLocked()
}

// untrack takes l out of the keeper's heap (a log closing).
func (w *cacheWindow) untrack(l *Log) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if l.cacheAt >= 0 {
		heap.Remove(&w.mu.logs, l.cacheAt)
		w.setDueLocked()
	}
}

func (w *cacheWindow) setDueLocked() {
	if len(w.mu.logs) == 0 {
		w.due.Store(math.MaxInt64)
		return
	}
	w.due.Store(w.mu.logs[0].cacheKey)
}

// run is the keeper: it drops the pages of logs whose marks the clock has
// left behind, each time an append moves the clock past due, until ctx is
// done.
func (w *cacheWindow) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.kick:
			w.expire()
		}
	}
}

// expire visits every log whose key is behind the window: it drops what
// the log appended before the window, and keeps the log in the heap, keyed
// by its oldest mark, while it has marks left.
func (w *cacheWindow) expire() {
	for {
		horizon := w.clock.Load() - w.keep
		w.mu.Lock()
		if len(w.mu.logs) == 0 || w.mu.logs[0].cacheKey > horizon {
			w.mu.Unlock()
			return
		}
		l := heap.Pop(&w.mu.logs).(*Log)
		w.setDueLocked()
		w.mu.Unlock()

		l.mu.Lock()
		if !l.mu.closed {
			l.expireCacheLocked(w.clock.Load()-w.keep, true)
			if len(l.marks) > 0 {
				w.track(l)
			}
		}
		l.mu.Unlock()
	}
}

// cacheMark says that the bytes of seg before end were all appended by the
// time the window's clock read clock; start is the clock of the first
// append the mark covers.
type cacheMark struct {
	seg          *segment
	end          int64
	start, clock int64
}

const (
	// cacheMarksPerWindow: a log starts a new mark once the clock moved a
	// keep/cacheMarksPerWindow past its newest mark's start, so a log keeps
	// about this many marks however often it appends.
	cacheMarksPerWindow = 8
	// cacheDropMin is the most a log may hold beyond the window (at most
	// a mark's worth): it drops its active segment in ranges at least this
	// long, so that many logs each taking a little make few calls.
	cacheDropMin = 64 << 10
)

// holdCacheLocked notes that the log appended n bytes to seg, which now
// ends at end, and drops from the page cache what it appended before the
// window's last keep bytes (nothing without a window).
func (l *Log) holdCacheLocked(seg *segment, end, n int64) {
	w := l.cache
	if w == nil {
		return
	}
	c := w.clock.Add(n)
	grain := max(w.keep/cacheMarksPerWindow, 1)
	if k := len(l.marks); k > 0 && l.marks[k-1].seg == seg && c-l.marks[k-1].start < grain {
		l.marks[k-1].end, l.marks[k-1].clock = end, c
	} else {
		l.marks = append(l.marks, cacheMark{seg: seg, end: end, start: c, clock: c})
		w.track(l)
	}
	l.expireCacheLocked(c-w.keep, false)
	if c-w.keep >= w.due.Load() {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
}

// expireCacheLocked drops the log's marks at or behind horizon and the
// pages they cover: in ranges of at least cacheDropMin (or a mark's worth),
// so that many small appends make few calls, or, with all, whatever is
// pending once no mark is left (the keeper's visit to a log that stopped
// appending).
func (l *Log) expireCacheLocked(horizon int64, all bool) {
	grain := max(l.cache.keep/cacheMarksPerWindow, 1)
	i := 0
	for ; i < len(l.marks) && l.marks[i].clock <= horizon; i++ {
		m := l.marks[i]
		if l.drop.seg != m.seg {
			l.dropCacheLocked()
			l.drop.seg = m.seg
		}
		l.drop.to = m.end
	}
	if i == 0 {
		return
	}
	l.marks = append(l.marks[:0], l.marks[i:]...)
	if s := l.drop.seg; s != nil && (all && len(l.marks) == 0 || l.drop.to-max(s.uncached.Load(), 0) >= min(cacheDropMin, grain)) {
		l.dropCacheLocked()
	}
}

// dropCacheLocked drops the pending range of holdCacheLocked: the bytes of
// l.drop.seg from where its cache begins up to l.drop.to.
func (l *Log) dropCacheLocked() {
	s := l.drop.seg
	if s == nil {
		return
	}
	l.drop.seg = nil
	u := s.uncached.Load()
	if u < 0 || l.drop.to <= u {
		return
	}
	if f, err := s.file(); err == nil {
		_ = dropCache(f, u, l.drop.to-u)
	}
	s.uncached.Store(l.drop.to)
}

// untrackCacheLocked takes a closing log out of the window keeper's heap,
// so that the keeper does not keep it alive.
func (l *Log) untrackCacheLocked() {
	if l.cache != nil {
		l.cache.untrack(l)
	}
}

// forgetCacheLocked drops the log's marks, after a truncation: what they
// name may be gone or rewritten.
func (l *Log) forgetCacheLocked() {
	l.marks = l.marks[:0]
	l.drop.seg = nil
}

// readBehindBytes is how far before a read behind the page-cache window
// dropReadBehind drops: the reads a sequential reader made before this one.
const readBehindBytes = 8 << 20

// dropReadBehind drops from the page cache the readBehindBytes of f before
// pos, when a read at pos lies behind the page-cache window, so that a
// reader catching up does not grow the cache either. Not the slice about to
// be read: that is sent from the cache's pages after this returns, and a
// reader's earlier slices are the ones it has received by the time it asks
// for more.
func dropReadBehind(f *os.File, pos int64) {
	if from := max(pos-readBehindBytes, 0); pos > from {
		_ = dropCache(f, from, pos-from)
	}
}

// virtioBalloonReporting is VIRTIO_BALLOON_F_REPORTING, the feature bit of
// a virtio balloon device through which the guest's kernel reports free
// pages to the hypervisor, which takes them back.
const virtioBalloonReporting = 5

// FreePageReporting tells whether this machine's kernel hands free memory
// back to a hypervisor (a virtio balloon device with free page reporting),
// so that each page the page cache grows by is a fault on the host: where
// a page-cache window (ManagerConfig.PageCacheKeepBytes) pays. It reads
// sysfs under root ("/" on a live system).
func FreePageReporting(root string) bool {
	devs, err := filepath.Glob(filepath.Join(root, "sys/bus/virtio/devices/*"))
	if err != nil {
		return false
	}
	for _, d := range devs {
		id, err := os.ReadFile(filepath.Join(d, "device"))
		if err != nil || strings.TrimSpace(string(id)) != "0x0005" {
			continue
		}
		// features: one '0' or '1' per feature bit, bit 0 first.
		feat, err := os.ReadFile(filepath.Join(d, "features"))
		if err == nil && len(feat) > virtioBalloonReporting && feat[virtioBalloonReporting] == '1' {
			return true
		}
	}
	return false
}
