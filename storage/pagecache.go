package storage

import (
	"os"
	"path/filepath"
	"strings"
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
type cacheWindow struct {
	keep int64
	// clock is the bytes appended to the Manager's logs since it opened.
	clock atomic.Int64
}

func newCacheWindow(keep int64) *cacheWindow {
	if keep <= 0 {
		return nil
	}
	return &cacheWindow{keep: keep}
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
	}
	horizon := c - w.keep
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
	if s := l.drop.seg; s != nil && l.drop.to-max(s.uncached.Load(), 0) >= min(cacheDropMin, grain) {
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
