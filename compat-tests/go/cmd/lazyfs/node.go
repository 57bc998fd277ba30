package main

import (
	"context"
	"os"
	"path/filepath"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// node is a loopback node whose files keep written data in the overlay
// until fsync. Everything but file data and sizes (directories, names,
// modes, times, xattrs, links) is the loopback's, straight through.
type node struct {
	fs.LoopbackNode
	ov *overlay
}

// newRoot returns the root node of a lazy mount of backing.
func newRoot(backing string, ov *overlay) (fs.InodeEmbedder, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(backing, &st); err != nil {
		return nil, err
	}
	r := &fs.LoopbackRoot{Path: backing, Dev: uint64(st.Dev)}
	//lint:ignore SA1019 NodeWrapChilder would wrap the loopback's nodes; this makes ours directly.
	r.NewNode = func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &node{LoopbackNode: fs.LoopbackNode{RootData: r}, ov: ov}
	}
	r.RootNode = r.NewNode(r, nil, "", &st)
	return r.RootNode, nil
}

func (n *node) backingPath() string {
	return filepath.Join(n.RootData.Path, n.Path(n.Root()))
}

var (
	_ fs.NodeLookuper       = (*node)(nil)
	_ fs.NodeOpener         = (*node)(nil)
	_ fs.NodeCreater        = (*node)(nil)
	_ fs.NodeGetattrer      = (*node)(nil)
	_ fs.NodeSetattrer      = (*node)(nil)
	_ fs.NodeUnlinker       = (*node)(nil)
	_ fs.NodeRenamer        = (*node)(nil)
	_ fs.NodeCopyFileRanger = (*node)(nil)
)

// openFlags are the flags a backing file is opened with: read and write
// always (a sync writes through whichever handle it comes on), no
// O_TRUNC (a truncate is held like a write), no O_APPEND (the kernel
// gives every write its offset, and pwrite on an O_APPEND descriptor
// would ignore it), no O_DIRECT (the overlay reads and writes the
// backing file with buffers of any alignment).
func openFlags(flags uint32) int {
	f := int(flags) &^ (syscall.O_ACCMODE | syscall.O_TRUNC | syscall.O_APPEND | syscall.O_DIRECT | fuse.FMODE_EXEC)
	return f | syscall.O_RDWR
}

// Open opens the backing file; O_TRUNC becomes a held truncate to 0.
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fd, err := syscall.Open(n.backingPath(), openFlags(flags)|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, 0, fs.ToErrno(err)
	}
	h, errno := n.newHandle(fd)
	if errno != 0 {
		return nil, 0, errno
	}
	if flags&syscall.O_TRUNC != 0 {
		p, errno := n.ov.get(h.key, fd, true)
		if errno != 0 {
			h.Release(ctx)
			return nil, 0, errno
		}
		p.truncate(0)
		p.inode = n.EmbeddedInode()
		p.mu.Unlock()
	}
	return h, 0, 0
}

// Create creates the backing file (a directory entry: straight through)
// and forgets anything held under its inode number, which a deleted file
// may have had.
func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	ch, lf, _, errno := n.LoopbackNode.Create(ctx, name, uint32(openFlags(flags)), mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	// The loopback's handle could hand its descriptor to the kernel
	// (passthrough), bypassing the overlay: take a copy and close it.
	pfd, ok := lf.(fs.FilePassthroughFder).PassthroughFd()
	var fd int
	var err error
	if ok {
		fd, err = unix.FcntlInt(uintptr(pfd), unix.F_DUPFD_CLOEXEC, 0)
	}
	lf.(fs.FileReleaser).Release(ctx)
	if !ok || err != nil {
		return nil, nil, 0, syscall.EIO
	}
	h, errno := n.newHandle(fd)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	n.ov.forget(h.key)
	return ch, h, 0, 0
}

func (n *node) newHandle(fd int) (*handle, syscall.Errno) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, fs.ToErrno(err)
	}
	return &handle{f: os.NewFile(uintptr(fd), ""), fd: fd, key: keyOf(&st), n: n}, 0
}

// stat fills st from the handle's descriptor, else the backing path.
func (n *node) stat(f fs.FileHandle, st *syscall.Stat_t) syscall.Errno {
	if h, ok := f.(*handle); ok {
		return fs.ToErrno(syscall.Fstat(h.fd, st))
	}
	if &n.Inode == n.Root() {
		return fs.ToErrno(syscall.Stat(n.backingPath(), st))
	}
	return fs.ToErrno(syscall.Lstat(n.backingPath(), st))
}

// Lookup is the loopback's, with the size the file has here: the kernel
// keeps the attributes a lookup returns, and would cut its view of a file
// to the backing file's size.
func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ch, errno := n.LoopbackNode.Lookup(ctx, name, out)
	if errno != 0 {
		return nil, errno
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(n.backingPath(), name), &st); err == nil && st.Ino == out.Attr.Ino {
		n.ov.held(keyOf(&st), &out.Attr)
	}
	return ch, 0
}

// Getattr is the backing file's attributes with the size it has here.
func (n *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	var st syscall.Stat_t
	if errno := n.stat(f, &st); errno != 0 {
		return errno
	}
	out.FromStat(&st)
	n.ov.held(keyOf(&st), &out.Attr)
	return 0
}

// Setattr holds a size change (truncate, ftruncate) and passes the rest
// (mode, owner, times) through.
func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok {
		fd := -1
		if h, ok := f.(*handle); ok {
			fd = h.fd
		} else {
			var err error
			if fd, err = syscall.Open(n.backingPath(), syscall.O_RDONLY|syscall.O_CLOEXEC, 0); err != nil {
				return fs.ToErrno(err)
			}
			defer syscall.Close(fd)
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			return fs.ToErrno(err)
		}
		p, errno := n.ov.get(keyOf(&st), fd, true)
		if errno != 0 {
			return errno
		}
		p.truncate(int64(size))
		p.inode = n.EmbeddedInode()
		p.mu.Unlock()
		in.Valid &^= fuse.FATTR_SIZE
	}
	if in.Valid&^(fuse.FATTR_FH|fuse.FATTR_LOCKOWNER) != 0 {
		if errno := n.LoopbackNode.Setattr(ctx, nil, in, out); errno != 0 {
			return errno
		}
	}
	return n.Getattr(ctx, f, out)
}

// Unlink removes the name; when it was the file's last, what was held for
// the file goes too.
func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	var st syscall.Stat_t
	statErr := syscall.Lstat(filepath.Join(n.backingPath(), name), &st)
	if errno := n.LoopbackNode.Unlink(ctx, name); errno != 0 {
		return errno
	}
	if statErr == nil && st.Nlink <= 1 {
		n.ov.forget(keyOf(&st))
	}
	return 0
}

// Rename renames straight through; a file it replaced is forgotten.
func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	var st syscall.Stat_t
	replaced := false
	if np, ok := newParent.(*node); ok && flags&fs.RENAME_EXCHANGE == 0 {
		replaced = syscall.Lstat(filepath.Join(np.backingPath(), newName), &st) == nil
	}
	if errno := n.LoopbackNode.Rename(ctx, name, newParent, newName, flags); errno != 0 {
		return errno
	}
	if replaced && st.Nlink <= 1 && st.Mode&syscall.S_IFMT == syscall.S_IFREG {
		n.ov.forget(keyOf(&st))
	}
	return 0
}

// CopyFileRange is refused, so that the kernel copies through reads and
// writes, which the overlay sees.
func (n *node) CopyFileRange(context.Context, fs.FileHandle, uint64, *fs.Inode, fs.FileHandle, uint64, uint64, uint64) (uint32, syscall.Errno) {
	return 0, syscall.ENOSYS
}

// handle is an open file: the backing file's descriptor, read and
// written through the overlay.
type handle struct {
	f   *os.File // owns fd
	fd  int
	key fileKey
	n   *node
}

var (
	_ fs.FileReader    = (*handle)(nil)
	_ fs.FileWriter    = (*handle)(nil)
	_ fs.FileFsyncer   = (*handle)(nil)
	_ fs.FileFlusher   = (*handle)(nil)
	_ fs.FileReleaser  = (*handle)(nil)
	_ fs.FileLseeker   = (*handle)(nil)
	_ fs.FileAllocater = (*handle)(nil)
)

func (h *handle) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	p, _ := h.n.ov.get(h.key, h.fd, false)
	if p == nil {
		return fuse.ReadResultFd(uintptr(h.fd), off, len(buf)), 0
	}
	defer p.mu.Unlock()
	n, errno := p.read(h.fd, buf, off)
	if errno != 0 {
		return nil, errno
	}
	return fuse.ReadResultData(buf[:n]), 0
}

func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	p, errno := h.n.ov.get(h.key, h.fd, true)
	if errno != 0 {
		return 0, errno
	}
	defer p.mu.Unlock()
	p.inode = h.n.EmbeddedInode()
	if errno := p.write(h.fd, data, off); errno != 0 {
		return 0, errno
	}
	return uint32(len(data)), 0
}

// Fsync writes the file's held data through and syncs the backing file;
// flags bit 0 is fdatasync's.
func (h *handle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	data := flags&1 != 0
	p, errno := h.n.ov.get(h.key, h.fd, false)
	if errno != 0 {
		return errno
	}
	if p == nil {
		return syncFd(h.fd, data)
	}
	defer p.mu.Unlock()
	return p.sync(h.fd, data)
}

// Flush (each close of a descriptor) makes nothing durable.
func (h *handle) Flush(ctx context.Context) syscall.Errno { return 0 }

// Release closes the backing descriptor. Held data stays: a closed file's
// unsynced writes are lost only at a power cut.
func (h *handle) Release(ctx context.Context) syscall.Errno {
	return fs.ToErrno(h.f.Close())
}

// Lseek answers SEEK_DATA and SEEK_HOLE (the others the kernel answers
// itself) as if the file had no holes below its size.
func (h *handle) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	p, _ := h.n.ov.get(h.key, h.fd, false)
	if p == nil {
		n, err := unix.Seek(h.fd, int64(off), int(whence))
		return uint64(n), fs.ToErrno(err)
	}
	defer p.mu.Unlock()
	switch whence {
	case unix.SEEK_DATA:
		if int64(off) >= p.size {
			return 0, syscall.ENXIO
		}
		return off, 0
	case unix.SEEK_HOLE:
		if int64(off) >= p.size {
			return 0, syscall.ENXIO
		}
		return uint64(p.size), 0
	case unix.SEEK_END:
		return uint64(p.size + int64(off)), 0
	default:
		return off, 0
	}
}

// Allocate with mode 0 grows the file like a held truncate;
// FALLOC_FL_KEEP_SIZE reserves nothing and changes nothing; other modes
// (punching holes, zeroing, collapsing ranges) are not supported.
func (h *handle) Allocate(ctx context.Context, off uint64, size uint64, mode uint32) syscall.Errno {
	switch mode {
	case unix.FALLOC_FL_KEEP_SIZE:
		return 0
	case 0:
		p, errno := h.n.ov.get(h.key, h.fd, true)
		if errno != 0 {
			return errno
		}
		defer p.mu.Unlock()
		if end := int64(off + size); end > p.size {
			p.size = end
			p.dirty = true
		}
		return 0
	default:
		return syscall.EOPNOTSUPP
	}
}
