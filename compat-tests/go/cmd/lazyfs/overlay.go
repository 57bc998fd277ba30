package main

import (
	"io"
	"sort"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// pageSize is the unit in which unsynced data is held. A page holds the
// whole logical image of its range of the file (what was synced under
// what was written since), so that a read needs nothing else.
const pageSize = 4096

// fileKey names a backing file by its inode, which a rename keeps. A
// new file may get the inode number of one that was deleted; creating a
// file forgets whatever was held under its key (forget), and unlinking a
// file's last name does too.
type fileKey struct{ dev, ino uint64 }

func keyOf(st *syscall.Stat_t) fileKey { return fileKey{uint64(st.Dev), st.Ino} }

// pending is what was written to one file since its last fsync. The file
// as the mount shows it is: size bytes, each byte from pages where its
// page is held, else from the backing file below low, else zero. low is
// the backing file's size when this was started, lowered by every
// truncate since, so that bytes a truncate cut off read as zeros when the
// file grows again even though the backing file still holds them.
type pending struct {
	mu    sync.Mutex
	dead  bool // dropped by a power cut: look the key up again
	dirty bool // changed since the last sync (a cut loses something)
	size  int64
	low   int64
	pages map[int64]*[pageSize]byte
	inode *fs.Inode // for invalidating the kernel's cache at a cut; may be nil
}

// overlay holds the unsynced writes of every file of a mount.
type overlay struct {
	mu    sync.Mutex
	files map[fileKey]*pending
}

func newOverlay() *overlay { return &overlay{files: map[fileKey]*pending{}} }

// get returns k's pending writes, locked, creating them (from the backing
// file fd's size) when create is set; nil when there are none and create
// is not set. The caller unlocks.
func (o *overlay) get(k fileKey, fd int, create bool) (*pending, syscall.Errno) {
	for {
		o.mu.Lock()
		p := o.files[k]
		if p == nil {
			if !create {
				o.mu.Unlock()
				return nil, 0
			}
			var st syscall.Stat_t
			if err := syscall.Fstat(fd, &st); err != nil {
				o.mu.Unlock()
				return nil, fs.ToErrno(err)
			}
			p = &pending{size: st.Size, low: st.Size, pages: map[int64]*[pageSize]byte{}}
			o.files[k] = p
		}
		o.mu.Unlock()
		p.mu.Lock()
		if !p.dead {
			return p, 0
		}
		p.mu.Unlock()
	}
}

// held sets a's size to k's held size, if anything is held for k.
func (o *overlay) held(k fileKey, a *fuse.Attr) {
	if p, _ := o.get(k, -1, false); p != nil {
		a.Size = uint64(p.size)
		a.Blocks = (a.Size + 511) / 512
		p.mu.Unlock()
	}
}

// forget drops whatever is held for k (a new or deleted file).
func (o *overlay) forget(k fileKey) {
	o.mu.Lock()
	p := o.files[k]
	delete(o.files, k)
	o.mu.Unlock()
	if p != nil {
		p.mu.Lock()
		p.dead = true
		p.mu.Unlock()
	}
}

// cut drops every unsynced write: afterwards each file holds what its
// last fsync wrote through. It returns how many files had unsynced
// changes and how many bytes of pages they held, and the inodes whose
// kernel caches may now show data that is gone.
func (o *overlay) cut() (files int, bytes int64, inodes []*fs.Inode) {
	o.mu.Lock()
	old := o.files
	o.files = map[fileKey]*pending{}
	o.mu.Unlock()
	for _, p := range old {
		p.mu.Lock()
		p.dead = true
		if p.dirty {
			files++
		}
		bytes += int64(len(p.pages)) * pageSize
		if p.inode != nil {
			inodes = append(inodes, p.inode)
		}
		p.mu.Unlock()
	}
	return files, bytes, inodes
}

// readBacking fills dst with the file's bytes from off as the backing
// file holds them below low, zeros from low on.
func readBacking(fd int, dst []byte, off, low int64) syscall.Errno {
	n := int64(len(dst))
	if off+n > low {
		n = max(low-off, 0)
		clear(dst[n:])
	}
	for done := int64(0); done < n; {
		m, err := syscall.Pread(fd, dst[done:n], off+done)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return fs.ToErrno(err)
		}
		if m == 0 { // the backing file is shorter: a hole reads as zeros
			clear(dst[done:n])
			break
		}
		done += int64(m)
	}
	return 0
}

// read fills buf from off (fd is the backing file) and returns how many
// bytes the file has there.
func (p *pending) read(fd int, buf []byte, off int64) (int, syscall.Errno) {
	if off >= p.size {
		return 0, 0
	}
	n := min(int64(len(buf)), p.size-off)
	for pos := off; pos < off+n; {
		pg, in := pos/pageSize, pos%pageSize
		chunk := min(pageSize-in, off+n-pos)
		dst := buf[pos-off : pos-off+chunk]
		if page := p.pages[pg]; page != nil {
			copy(dst, page[in:in+chunk])
		} else if errno := readBacking(fd, dst, pos, p.low); errno != 0 {
			return 0, errno
		}
		pos += chunk
	}
	return int(n), 0
}

// write puts data at off into the pages, each page first filled with the
// file's current bytes.
func (p *pending) write(fd int, data []byte, off int64) syscall.Errno {
	end := off + int64(len(data))
	for pos := off; pos < end; {
		pg, in := pos/pageSize, pos%pageSize
		chunk := min(pageSize-in, end-pos)
		page := p.pages[pg]
		if page == nil {
			page = new([pageSize]byte)
			if errno := readBacking(fd, page[:], pg*pageSize, min(p.low, p.size)); errno != 0 {
				return errno
			}
			p.pages[pg] = page
		}
		copy(page[in:in+chunk], data[pos-off:pos-off+chunk])
		pos += chunk
	}
	p.dirty = true
	p.size = max(p.size, end)
	return 0
}

// truncate sets the file's size: pages past it go, the rest of the page
// it falls in is zeroed, and a cut below low lowers low.
func (p *pending) truncate(size int64) {
	for pg := range p.pages {
		if pg*pageSize >= size {
			delete(p.pages, pg)
		}
	}
	if page := p.pages[size/pageSize]; page != nil {
		clear(page[size%pageSize:])
	}
	p.low = min(p.low, size)
	p.size = size
	p.dirty = true
}

// sync writes the pending state through to the backing file fd (which
// must be open for writing) and syncs it (fdatasync when data is set):
// the backing file is cut to low (dropping bytes a truncate removed),
// the pages are written in file order, the file is set to size, then
// synced. Only then is the state emptied; a failed sync keeps it, so
// that the data stays readable and a later fsync tries again.
func (p *pending) sync(fd int, data bool) syscall.Errno {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return fs.ToErrno(err)
	}
	if st.Size > p.low {
		if err := syscall.Ftruncate(fd, p.low); err != nil {
			return fs.ToErrno(err)
		}
	}
	pgs := make([]int64, 0, len(p.pages))
	for pg := range p.pages {
		pgs = append(pgs, pg)
	}
	sort.Slice(pgs, func(i, j int) bool { return pgs[i] < pgs[j] })
	for _, pg := range pgs {
		b := p.pages[pg][:min(pageSize, p.size-pg*pageSize)]
		for done := 0; done < len(b); {
			n, err := syscall.Pwrite(fd, b[done:], pg*pageSize+int64(done))
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				return fs.ToErrno(err)
			}
			if n == 0 {
				return fs.ToErrno(io.ErrShortWrite)
			}
			done += n
		}
	}
	if err := syscall.Ftruncate(fd, p.size); err != nil {
		return fs.ToErrno(err)
	}
	if errno := syncFd(fd, data); errno != 0 {
		return errno
	}
	clear(p.pages)
	p.low = p.size
	p.dirty = false
	return 0
}

func syncFd(fd int, data bool) syscall.Errno {
	for {
		var err error
		if data {
			err = syscall.Fdatasync(fd)
		} else {
			err = syscall.Fsync(fd)
		}
		if err != syscall.EINTR {
			return fs.ToErrno(err)
		}
	}
}
