package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"sync"
)

const (
	offsetEntrySize = 8  // relative offset u32, position u32
	timeEntrySize   = 12 // timestamp i64, relative offset u32
)

// index is the in-memory form of one .index or .timeindex file: its entries
// as they sit in the file, loaded on first use so that opening a data dir
// reads no index until a partition is used. Entries are only appended (by
// the log's appender) or cut off at the end (truncation); the file is brought
// up to date by persist, and may lag the memory between calls: a crash loses
// at most entries that recovery rebuilds.
type index struct {
	path      string
	base      int64 // segment base offset; entries hold offsets relative to it
	entrySize int
	// missingEmpty: a missing file is an empty index, not a damaged one
	// (the txn index, whose file exists only once it has entries).
	missingEmpty bool

	// loadMu serialises the one-time load, which reads the file; mu is not
	// held across that read.
	loadMu sync.Mutex

	mu struct {
		sync.RWMutex
		loaded    bool
		buf       []byte // entries; never written below len by appends
		persisted int    // bytes of buf the file holds
		fileLen   int64  // length of the file as last seen or written
		synced    bool   // the file holds exactly buf and was fsynced since
	}
}

func newIndex(path string, base int64, entrySize int) *index {
	return &index{path: path, base: base, entrySize: entrySize}
}

// setEmpty marks a new index as loaded and empty, for a new segment.
func (ix *index) setEmpty() {
	ix.mu.Lock()
	ix.mu.loaded, ix.mu.buf, ix.mu.persisted, ix.mu.fileLen, ix.mu.synced = true, nil, 0, 0, false
	ix.mu.Unlock()
}

func (ix *index) isLoaded() bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.mu.loaded
}

// load reads the file if it was not read yet. check validates the entries;
// a failure leaves the index unloaded and returns ErrCorruptIndex.
func (ix *index) load(check func([]byte) error) error {
	ix.mu.RLock()
	loaded := ix.mu.loaded
	ix.mu.RUnlock()
	if loaded {
		return nil
	}
	ix.loadMu.Lock()
	defer ix.loadMu.Unlock()
	ix.mu.RLock()
	loaded = ix.mu.loaded
	ix.mu.RUnlock()
	if loaded {
		return nil
	}
	buf, err := os.ReadFile(ix.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read index %s: %w", ix.path, err)
	}
	if errors.Is(err, fs.ErrNotExist) {
		if ix.missingEmpty {
			ix.mu.Lock()
			ix.mu.loaded, ix.mu.buf, ix.mu.persisted, ix.mu.fileLen, ix.mu.synced = true, nil, 0, 0, true
			ix.mu.Unlock()
			return nil
		}
		return fmt.Errorf("%w: %s missing", ErrCorruptIndex, ix.path)
	}
	if len(buf)%ix.entrySize != 0 {
		return fmt.Errorf("%w: %s has %d bytes, not a multiple of %d", ErrCorruptIndex, ix.path, len(buf), ix.entrySize)
	}
	if err := check(buf); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrCorruptIndex, ix.path, err)
	}
	ix.mu.Lock()
	// A file read back was fsynced: at Close, or before the recovery
	// point passed its segment; the ones recovery scans are installed anew.
	ix.mu.loaded, ix.mu.buf, ix.mu.persisted, ix.mu.fileLen, ix.mu.synced = true, buf, len(buf), int64(len(buf)), true
	ix.mu.Unlock()
	return nil
}

// entries returns the current entries. The slice is never written below its
// length afterwards, so it may be read without the lock.
func (ix *index) entries() []byte {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.mu.buf
}

func (ix *index) count() int { return len(ix.entries()) / ix.entrySize }

// appendEntry adds one entry. Callers hold the log's append lock.
func (ix *index) appendEntry(e []byte) {
	ix.mu.Lock()
	ix.mu.buf = append(ix.mu.buf, e...)
	ix.mu.synced = false
	ix.mu.Unlock()
}

// persist writes the entries the file lacks (and cuts the file if it is
// longer than the entries), then fsyncs it when sync is set. An index never
// loaded has nothing to write.
func (ix *index) persist(sync bool) error {
	ix.mu.RLock()
	loaded, buf, from, fileLen, synced := ix.mu.loaded, ix.mu.buf, ix.mu.persisted, ix.mu.fileLen, ix.mu.synced
	ix.mu.RUnlock()
	if !loaded {
		return nil
	}
	if from == len(buf) && fileLen == int64(len(buf)) && (!sync || synced) {
		return nil
	}
	f, err := os.OpenFile(ix.path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open index: %w", err)
	}
	defer f.Close()
	if fileLen != int64(from) || fileLen < 0 {
		if err := f.Truncate(int64(from)); err != nil {
			return fmt.Errorf("truncate index: %w", err)
		}
	}
	if _, err := writeAt(f, buf[from:], int64(from)); err != nil {
		return fmt.Errorf("write index: %w", err)
	}
	if sync {
		if err := fdatasync(f); err != nil {
			return fmt.Errorf("sync index: %w", err)
		}
	}
	ix.mu.Lock()
	// Only record progress if no truncation happened meanwhile.
	if ix.mu.persisted == from && len(ix.mu.buf) >= len(buf) {
		ix.mu.persisted = len(buf)
		ix.mu.synced = sync && len(ix.mu.buf) == len(buf)
	}
	ix.mu.fileLen = int64(len(buf))
	ix.mu.Unlock()
	return nil
}

// install replaces the entries with buf, built by a scan of the log; the
// file is rewritten by the next persist.
func (ix *index) install(buf []byte) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.mu.loaded, ix.mu.buf, ix.mu.persisted, ix.mu.synced = true, buf, 0, false
	ix.mu.fileLen = -1 // unknown: persist truncates before writing
}

// Offset index: entries (relative offset, position), both strictly increasing.

func offsetEntry(rel uint32, pos uint32) [offsetEntrySize]byte {
	var e [offsetEntrySize]byte
	binary.BigEndian.PutUint32(e[0:], rel)
	binary.BigEndian.PutUint32(e[4:], pos)
	return e
}

func readOffsetEntry(buf []byte, i int) (rel uint32, pos uint32) {
	e := buf[i*offsetEntrySize:]
	return binary.BigEndian.Uint32(e), binary.BigEndian.Uint32(e[4:])
}

// checkOffsetIndex returns a checker of offset index entries: increasing
// relative offsets and positions, all positions inside the segment.
func checkOffsetIndex(segSize int64) func([]byte) error {
	return func(buf []byte) error {
		n := len(buf) / offsetEntrySize
		var prevRel, prevPos uint32
		for i := 0; i < n; i++ {
			rel, pos := readOffsetEntry(buf, i)
			if i > 0 && (rel <= prevRel || pos <= prevPos) {
				return fmt.Errorf("entry %d (%d, %d) not above (%d, %d)", i, rel, pos, prevRel, prevPos)
			}
			if int64(pos) >= segSize {
				return fmt.Errorf("entry %d position %d beyond segment size %d", i, pos, segSize)
			}
			prevRel, prevPos = rel, pos
		}
		return nil
	}
}

// lookupOffset returns the position of the last indexed batch whose last
// offset is at most target, or position 0 when there is none. Scanning the
// log from there finds the batch holding target.
func lookupOffset(buf []byte, base, target int64) int64 {
	n := len(buf) / offsetEntrySize
	i := sort.Search(n, func(i int) bool {
		rel, _ := readOffsetEntry(buf, i)
		return base+int64(rel) > target
	})
	if i == 0 {
		return 0
	}
	_, pos := readOffsetEntry(buf, i-1)
	return int64(pos)
}

// lookupPosition returns the position of the last indexed batch that
// starts at or below limit, or position 0 when there is none.
func lookupPosition(buf []byte, limit int64) int64 {
	n := len(buf) / offsetEntrySize
	i := sort.Search(n, func(i int) bool {
		_, pos := readOffsetEntry(buf, i)
		return int64(pos) > limit
	})
	if i == 0 {
		return 0
	}
	_, pos := readOffsetEntry(buf, i-1)
	return int64(pos)
}

// Time index: entries (timestamp, relative offset), both strictly increasing.
// An entry (t, o) says that no record at an offset up to o has a timestamp
// above t.

func timeEntry(ts int64, rel uint32) [timeEntrySize]byte {
	var e [timeEntrySize]byte
	binary.BigEndian.PutUint64(e[0:], uint64(ts))
	binary.BigEndian.PutUint32(e[8:], rel)
	return e
}

func readTimeEntry(buf []byte, i int) (ts int64, rel uint32) {
	e := buf[i*timeEntrySize:]
	return int64(binary.BigEndian.Uint64(e)), binary.BigEndian.Uint32(e[8:])
}

func checkTimeIndex(buf []byte) error {
	n := len(buf) / timeEntrySize
	var prevTS int64
	var prevRel uint32
	for i := 0; i < n; i++ {
		ts, rel := readTimeEntry(buf, i)
		if i > 0 && (ts <= prevTS || rel < prevRel) {
			return fmt.Errorf("entry %d (%d, %d) not above (%d, %d)", i, ts, rel, prevTS, prevRel)
		}
		prevTS, prevRel = ts, rel
	}
	return nil
}

// lookupTimeBefore returns the offset of the last entry whose timestamp is
// below ts: every record up to that offset is older than ts.
func lookupTimeBefore(buf []byte, base, ts int64) (int64, bool) {
	n := len(buf) / timeEntrySize
	i := sort.Search(n, func(i int) bool {
		t, _ := readTimeEntry(buf, i)
		return t >= ts
	})
	if i == 0 {
		return 0, false
	}
	_, rel := readTimeEntry(buf, i-1)
	return base + int64(rel), true
}

func lastTimeEntry(buf []byte, base int64) (ts, offset int64, ok bool) {
	n := len(buf) / timeEntrySize
	if n == 0 {
		return -1, -1, false
	}
	t, rel := readTimeEntry(buf, n-1)
	return t, base + int64(rel), true
}

// isPersisted reports whether the file holds every entry.
func (ix *index) isPersisted() bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return !ix.mu.loaded || (ix.mu.persisted == len(ix.mu.buf) && ix.mu.fileLen == int64(len(ix.mu.buf)))
}
