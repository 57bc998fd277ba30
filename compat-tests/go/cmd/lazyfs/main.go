// Command lazyfs mounts a directory over a backing directory, passing
// everything through except file data, which it keeps in memory until the
// file is fsynced, so that a "power cut" can drop what was never synced.
// It is the file layer under the fault harness's drop-unsynced nemesis
// (compat-tests/go/cmd/chaos): a broker killed and restarted on it finds
// its files as they were at their last fsync.
//
//	lazyfs [-debug] BACKING MOUNTPOINT
//
// Semantics:
//
//   - write(2) (and a shared mapping's pages, which reach a FUSE file
//     system as writes when the kernel writes them back) goes into a
//     per-file overlay of 4 KiB pages, keyed by the backing file's inode
//     so that every descriptor of the file and a rename see the same
//     data. Reads, stat sizes, SEEK_DATA/SEEK_HOLE see the overlay
//     (read-your-writes). A mapped page counts as written when the
//     kernel writes it back, not when the program stores to it; fsync
//     writes dirty mapped pages back before it asks the file system to
//     sync, so an msync/fsync after stores makes them durable as it
//     should.
//   - truncate, ftruncate, open with O_TRUNC and fallocate with mode 0
//     (growing the file) are held the same way; fallocate with
//     FALLOC_FL_KEEP_SIZE succeeds and does nothing; other fallocate
//     modes are refused (EOPNOTSUPP); copy_file_range is refused
//     (ENOSYS) so the kernel copies through reads and writes.
//   - fsync and fdatasync of a file write its overlay through to the
//     backing file (cut to where truncates left it, the pages written,
//     the size set) and sync the backing file; only then is the overlay
//     emptied. Closing a file makes nothing durable.
//   - SIGUSR1 is the power cut: every overlay is dropped, so each file
//     holds exactly what its last fsync wrote through, and the kernel's
//     caches of those files are invalidated. A line "lazyfs: power cut N:
//     ..." on standard output says it is done. The processes using the
//     files should be gone first: a descriptor left open reads the file
//     as it now is, but the kernel may hold pages of a mapping.
//   - Metadata goes straight through: create, mkdir, rename, unlink,
//     link, symlink, chmod, utimes, xattrs and directory fsync act on the
//     backing directory at once. This layer loses unsynced file data,
//     not unsynced directory entries: a file created and never synced is
//     still there after a cut, empty; a renamed file keeps its new name
//     and its synced data.
//   - syncfs(2) and sync(2) do not reach a FUSE file system (the kernel
//     sends FUSE_SYNCFS to virtiofs only), so lazyfs cannot see them: a
//     program that makes files durable with syncfs instead of fsync
//     loses that data at a cut here, where a real disk would keep it.
//     Gregor's storage syncs a log dir with syncfs when one group-commit
//     round covers 32 or more of its logs (storage/syncer.go,
//     syncFSMin); anything lazyfs reports lost there is not a finding
//     until that is ruled out.
//   - O_DIRECT on an open is accepted: the kernel then sends that
//     descriptor's reads and writes to lazyfs uncached, and they go
//     through the overlay like any others; the backing file is opened
//     without it (lazyfs reads and writes it with unaligned buffers).
//     Other opens keep the kernel's page cache (lazyfs asks for no direct
//     I/O), so mmap works.
//
// SIGINT and SIGTERM unmount and exit. A lazyfs killed otherwise leaves
// a dead mount that umount(8) removes (as root; fusermount is not
// needed: the mount is made with mount(2) directly).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

func main() {
	debug := flag.Bool("debug", false, "log every FUSE request")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: lazyfs [-debug] BACKING MOUNTPOINT\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 2 {
		flag.Usage()
		os.Exit(2)
	}
	ov := newOverlay()
	srv, err := mount(flag.Arg(0), flag.Arg(1), ov, time.Second, time.Second, *debug)
	if err != nil {
		fmt.Fprintf(os.Stderr, "lazyfs: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("lazyfs: serving %s over %s\n", flag.Arg(1), flag.Arg(0))
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		cuts := 0
		for sig := range sigs {
			if sig != syscall.SIGUSR1 {
				if err := srv.Unmount(); err != nil {
					fmt.Fprintf(os.Stderr, "lazyfs: unmount: %v\n", err)
					os.Exit(1)
				}
				continue
			}
			cuts++
			files, bytes := powerCut(ov)
			fmt.Printf("lazyfs: power cut %d: unsynced writes dropped: %d files, %d bytes of pages\n", cuts, files, bytes)
		}
	}()
	srv.Wait()
}

// mount mounts backing at dir through ov and waits until the kernel
// serves it. The kernel keeps names for entryTTL and attributes for
// attrTTL before it asks again.
func mount(backing, dir string, ov *overlay, entryTTL, attrTTL time.Duration, debug bool) (*fuse.Server, error) {
	root, err := newRoot(backing, ov)
	if err != nil {
		return nil, err
	}
	srv, err := fs.Mount(dir, root, &fs.Options{EntryTimeout: &entryTTL, AttrTimeout: &attrTTL, MountOptions: fuse.MountOptions{
		FsName:            backing,
		Name:              "lazyfs",
		AllowOther:        true,
		DirectMountStrict: true,
		Debug:             debug,
	}})
	if err != nil {
		return nil, fmt.Errorf("mount %s over %s: %w", dir, backing, err)
	}
	return srv, nil
}

// powerCut drops every unsynced write and invalidates the kernel's cache
// of the files that had some.
func powerCut(ov *overlay) (files int, bytes int64) {
	files, bytes, inodes := ov.cut()
	for _, in := range inodes {
		in.NotifyContent(0, 0) // ENOENT for an inode the kernel forgot: nothing cached
	}
	return files, bytes
}
