package storage

import (
	"errors"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Every write and fsync of a file holding log data (segments, indexes,
// checkpoints, producer snapshots, leader epochs) goes through writeAt and
// fdatasync/fsyncFile, so that tests can put a fault-injecting layer under
// them. ioHooks is nil outside tests, and the cost is one atomic load.
type ioHooks struct {
	// writeAt replaces f.WriteAt(p, off).
	writeAt func(f *os.File, p []byte, off int64) (int, error)
	// sync replaces an fdatasync (data) or fsync of f.
	sync func(f *os.File, data bool) error
	// syncFS replaces a syncfs of the file system holding dir.
	syncFS func(dir string) error
	// writeback, when set, replaces starting writeback of a range of f.
	writeback func(f *os.File, off, n int64) error
	// dropCache, when set, replaces dropping a range of f from the page
	// cache.
	dropCache func(f *os.File, off, n int64) error
}

var testIO atomic.Pointer[ioHooks]

func writeAt(f *os.File, p []byte, off int64) (int, error) {
	if h := testIO.Load(); h != nil {
		return h.writeAt(f, p, off)
	}
	return f.WriteAt(p, off)
}

// fdatasync flushes a file's data, and the metadata needed to read it back
// (its size), to stable storage.
func fdatasync(f *os.File) error {
	if h := testIO.Load(); h != nil {
		return h.sync(f, true)
	}
	return rawFdatasync(f)
}

// fsyncFile is f.Sync through the hooks.
func fsyncFile(f *os.File) error {
	if h := testIO.Load(); h != nil {
		return h.sync(f, false)
	}
	return f.Sync()
}

// startWriteback asks the kernel to start writing n bytes of f from off to
// disk, and returns without waiting for them (sync_file_range(2) with
// SYNC_FILE_RANGE_WRITE). It makes nothing durable; that stays the job of
// fdatasync, which also reports any error the writeback meets.
func startWriteback(f *os.File, off, n int64) error {
	if h := testIO.Load(); h != nil && h.writeback != nil {
		return h.writeback(f, off, n)
	}
	return retryEINTR(func() error { return unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE) })
}

// dropCache asks the kernel to drop n bytes of f from off out of the page
// cache (posix_fadvise(2) with POSIX_FADV_DONTNEED). Clean pages are freed;
// dirty ones stay and have their writeback started. The data on disk is
// untouched: a later read of the range reads it from there.
func dropCache(f *os.File, off, n int64) error {
	if h := testIO.Load(); h != nil && h.dropCache != nil {
		return h.dropCache(f, off, n)
	}
	return retryEINTR(func() error { return unix.Fadvise(int(f.Fd()), off, n, unix.FADV_DONTNEED) })
}

// prefault asks the kernel to read n bytes of f from off into the page
// cache (posix_fadvise(2) with POSIX_FADV_WILLNEED, which reads them before
// it returns where they are a hole: zero-filled pages, no disk read).
func prefault(f *os.File, off, n int64) error {
	return retryEINTR(func() error { return unix.Fadvise(int(f.Fd()), off, n, unix.FADV_WILLNEED) })
}

func rawFdatasync(f *os.File) error {
	return retryEINTR(func() error { return unix.Fdatasync(int(f.Fd())) })
}

// retryEINTR calls call again for as long as a signal interrupts it.
func retryEINTR(call func() error) error {
	for {
		if err := call(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// syncFS flushes every file of the file system holding dir (syncfs(2)),
// data and metadata: one call instead of an fdatasync per file when a
// group commit round covers many logs of one log dir.
func syncFS(dir string) error {
	if h := testIO.Load(); h != nil {
		return h.syncFS(dir)
	}
	return rawSyncFS(dir)
}

func rawSyncFS(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := retryEINTR(func() error { return unix.Syncfs(int(d.Fd())) }); err != nil {
		return &os.PathError{Op: "syncfs", Path: dir, Err: err}
	}
	return nil
}
