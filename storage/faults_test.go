package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gregor-io/gregor/protocol/record"
)

// The fault-injecting file layer of these tests. Installed once as testIO,
// it passes every write and fsync of the storage code through, except for
// files under a dir a test registered (a faultDisk), where it
//   - fails a chosen write or fsync with a chosen errno, or writes half the
//     bytes and then fails (a short write, as ENOSPC leaves one);
//   - remembers how much of each file was fsynced, so that crash() can drop
//     what never was, the way a power cut does: cut the file back to its
//     synced size, keep a random part of the unsynced tail, or zero it.

// faultOp is an operation the layer can fail.
type faultOp int

const (
	opWrite faultOp = iota
	opSync
)

// fault fails the after+1-th operation op on a file whose name ends with
// suffix; short writes half the bytes before failing.
type fault struct {
	op     faultOp
	suffix string
	after  int
	err    error
	short  bool
}

type faultDisk struct {
	root string

	mu     sync.Mutex
	synced map[string]int64 // fsynced bytes of each file written since reset
	// written is where each segment file's written bytes end: an extended
	// segment (prefault.go) is larger, and an fsync makes no more than
	// its written bytes durable.
	written map[string]int64
	fault   *fault
	fired   int  // faults fired
	syncfs  int  // syncfs calls
	crashed bool // after crash: writes and fsyncs reach nothing
	// writebacks are the writeback starts asked for, in order.
	writebacks []rangeCall
	// drops are the page-cache drops asked for, in order.
	drops []rangeCall
}

// rangeCall is one startWriteback or dropCache of a file under a fault
// disk.
type rangeCall struct {
	name   string // base name of the file
	off, n int64
}

// faultWriteback records the call and passes it on.
func faultWriteback(f *os.File, off, n int64) error {
	if d := diskOf(f.Name()); d != nil {
		d.mu.Lock()
		d.writebacks = append(d.writebacks, rangeCall{filepath.Base(f.Name()), off, n})
		d.mu.Unlock()
	}
	return unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}

// faultDropCache records the call and passes it on.
func faultDropCache(f *os.File, off, n int64) error {
	if d := diskOf(f.Name()); d != nil {
		d.mu.Lock()
		d.drops = append(d.drops, rangeCall{filepath.Base(f.Name()), off, n})
		d.mu.Unlock()
	}
	return unix.Fadvise(int(f.Fd()), off, n, unix.FADV_DONTNEED)
}

var faultDisks struct {
	once sync.Once
	sync.Mutex
	m map[string]*faultDisk
}

// newFaultDisk returns the fault layer of root: every file under it goes
// through the disk from now until the test ends.
func newFaultDisk(t *testing.T, root string) *faultDisk {
	faultDisks.once.Do(func() {
		faultDisks.m = map[string]*faultDisk{}
		testIO.Store(&ioHooks{writeAt: faultWriteAt, sync: faultSync, syncFS: faultSyncFS, writeback: faultWriteback,
			dropCache: faultDropCache})
	})
	d := &faultDisk{root: filepath.Clean(root) + string(filepath.Separator), synced: map[string]int64{}, written: map[string]int64{}}
	faultDisks.Lock()
	faultDisks.m[d.root] = d
	faultDisks.Unlock()
	t.Cleanup(func() {
		faultDisks.Lock()
		delete(faultDisks.m, d.root)
		faultDisks.Unlock()
	})
	return d
}

func diskOf(path string) *faultDisk {
	faultDisks.Lock()
	defer faultDisks.Unlock()
	for root, d := range faultDisks.m {
		if strings.HasPrefix(path, root) {
			return d
		}
	}
	return nil
}

// arm sets the next fault.
func (d *faultDisk) arm(f fault) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fault = &f
}

func (d *faultDisk) syncfsCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.syncfs
}

func (d *faultDisk) firedCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fired
}

// take reports whether op on path fires the armed fault.
func (d *faultDisk) take(op faultOp, path string) (*fault, bool) {
	f := d.fault
	if f == nil || f.op != op || !strings.HasSuffix(path, f.suffix) {
		return nil, false
	}
	if f.after > 0 {
		f.after--
		return nil, false
	}
	d.fault = nil
	d.fired++
	return f, true
}

// track notes a file written since reset; what it held before counts as
// synced (the previous crash already decided its fate).
func (d *faultDisk) track(f *os.File) {
	if _, ok := d.synced[f.Name()]; ok {
		return
	}
	var size int64
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	d.synced[f.Name()] = size
	d.written[f.Name()] = size
}

// durableSize is how much of path an fsync now makes durable: its size, or
// for a segment file no more than its written bytes.
func (d *faultDisk) durableSize(path string, size int64) int64 {
	if w, ok := d.written[path]; ok && strings.HasSuffix(path, logSuffix) {
		return min(size, w)
	}
	return size
}

func faultWriteAt(f *os.File, p []byte, off int64) (int, error) {
	d := diskOf(f.Name())
	if d == nil {
		return f.WriteAt(p, off)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.crashed {
		return len(p), nil
	}
	d.track(f)
	d.written[f.Name()] = max(d.written[f.Name()], off+int64(len(p)))
	if ft, ok := d.take(opWrite, f.Name()); ok {
		if !ft.short {
			return 0, &os.PathError{Op: "write", Path: f.Name(), Err: ft.err}
		}
		n, err := f.WriteAt(p[:len(p)/2], off)
		if err == nil {
			err = &os.PathError{Op: "write", Path: f.Name(), Err: ft.err}
		}
		return n, err
	}
	return f.WriteAt(p, off)
}

func faultSync(f *os.File, data bool) error {
	d := diskOf(f.Name())
	if d == nil {
		if data {
			return rawFdatasync(f)
		}
		return f.Sync()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.crashed {
		return nil
	}
	d.track(f)
	if ft, ok := d.take(opSync, f.Name()); ok {
		// As after a failed fsync on Linux, what was not synced may be
		// gone: synced stays where it was.
		return &os.PathError{Op: "fsync", Path: f.Name(), Err: ft.err}
	}
	var err error
	if data {
		err = rawFdatasync(f)
	} else {
		err = f.Sync()
	}
	if err == nil {
		if st, serr := f.Stat(); serr == nil {
			d.synced[f.Name()] = d.durableSize(f.Name(), st.Size())
		}
	}
	return err
}

// syncFSSuffix, as a fault's suffix, fails a syncfs.
const syncFSSuffix = "(syncfs)"

// faultSyncFS is syncfs: every file of the disk is synced as it is now; a
// fault armed for opSync with suffix syncFSSuffix fails it instead.
func faultSyncFS(dir string) error {
	d := diskOf(filepath.Clean(dir) + string(filepath.Separator))
	if d == nil {
		return rawSyncFS(dir)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.crashed {
		return nil
	}
	d.syncfs++
	if _, ok := d.take(opSync, syncFSSuffix); ok {
		return &os.PathError{Op: "syncfs", Path: dir, Err: syscall.EIO}
	}
	if err := rawSyncFS(dir); err != nil {
		return err
	}
	for path := range d.synced {
		if st, err := os.Stat(path); err == nil {
			d.synced[path] = d.durableSize(path, st.Size())
		}
	}
	return nil
}

// crash drops, file by file, what was written but never fsynced, in one of
// the ways a power cut can, and from then on lets no write or fsync
// through, as the process is dead. It returns how many files lost data.
func (d *faultDisk) crash(rng *rand.Rand) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.crashed = true
	lost := 0
	for path, synced := range d.synced {
		st, err := os.Stat(path)
		if err != nil || st.Size() <= synced {
			continue // removed or renamed since, or nothing unsynced
		}
		size := st.Size()
		keep := synced + rng.Int64N(size-synced+1)
		lost++
		switch rng.IntN(3) {
		case 0: // the unsynced tail never reached the disk
			err = os.Truncate(path, synced)
		case 1: // part of it did
			err = os.Truncate(path, keep)
		default: // the size did, the data did not (up to keep)
			err = zeroRange(path, keep, size)
		}
		if err != nil {
			return lost, err
		}
	}
	return lost, nil
}

func zeroRange(path string, from, to int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, to-from), from); err != nil {
		return err
	}
	return nil
}

// reset forgets the crash: the files as they are now are what the disk
// holds.
func (d *faultDisk) reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.crashed, d.fault = false, nil
	d.synced = map[string]int64{}
	d.written = map[string]int64{}
}

// abandon stops m as a killed process stops: no flush, no checkpoint, no
// clean-shutdown marker; only its files are closed and its dirs unlocked,
// so that the test can open them again.
func (m *Manager) abandon() {
	m.mu.Lock()
	m.mu.closed = true
	logs := make([]*Log, 0, len(m.mu.logs))
	for _, l := range m.mu.logs {
		logs = append(logs, l)
	}
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
	for _, l := range logs {
		l.mu.Lock()
		l.mu.closed = true
		l.mu.Unlock()
		l.closeFiles()
		l.wakeWaiters(0, ErrClosed)
	}
	for _, d := range m.dirs {
		d.lock.Close()
	}
}

// faultLog is one log of a fault test and what was appended to it: every
// batch an Append returned offsets for, and how many of them a Flush
// acknowledged.
type faultLog struct {
	tp       TopicPartition
	appended []record.Batch
	acked    int
}

func (fl *faultLog) append(l *Log, set []byte) error {
	_, err := l.Append(set, AppendOptions{AssignOffsets: true})
	if err != nil {
		return err
	}
	fl.appended = append(fl.appended, append(record.Batch(nil), set...))
	return nil
}

func (fl *faultLog) flush(ctx context.Context, l *Log) error {
	if len(fl.appended) == 0 {
		return nil
	}
	if err := l.Flush(ctx, fl.appended[len(fl.appended)-1].NextOffset()); err != nil {
		return err
	}
	fl.acked = len(fl.appended)
	return nil
}

// check reads l from its start: it must hold every acknowledged batch and
// then at most more of the appended ones, each byte for byte and at its
// offset, and a read at each batch's first offset must find it (the offset
// index).
func (fl *faultLog) check(t *testing.T, l *Log, what string) {
	t.Helper()
	got := readAll(t, l, 0, 0)
	if len(got) < fl.acked || len(got) > len(fl.appended) {
		t.Fatalf("%s: %s holds %d batches; %d were acknowledged and %d appended", what, fl.tp, len(got), fl.acked, len(fl.appended))
	}
	// The acknowledged batches come first, as they were appended. After
	// them, a crash may have lost any unsynced batch: a rolled segment's
	// lost tail leaves a gap before a later segment's batches, which stay.
	// Every batch kept is the one appended at its offset.
	byOffset := map[int64][]byte{}
	for _, b := range fl.appended {
		byOffset[b.BaseOffset()] = b
	}
	for i, b := range got {
		want := byOffset[b.BaseOffset()]
		if i < fl.acked {
			want = fl.appended[i]
		}
		if !bytes.Equal(b, want) {
			t.Fatalf("%s: %s batch %d (offset %d) differs from the one appended at that offset",
				what, fl.tp, i, b.BaseOffset())
		}
	}
	if end := l.LogEndOffset(); len(got) > 0 && (end < got[len(got)-1].NextOffset() || end > fl.appended[len(fl.appended)-1].NextOffset()) {
		t.Fatalf("%s: %s log end %d after a last batch ending at %d, %d appended", what, fl.tp, end,
			got[len(got)-1].NextOffset(), fl.appended[len(fl.appended)-1].NextOffset())
	}
	for i := 0; i < len(got); i += 1 + len(got)/16 {
		res, err := l.Read(ReadOptions{Offset: got[i].BaseOffset(), MaxBytes: 1, MinOneBatch: true})
		if err != nil {
			t.Fatalf("%s: %s read at %d: %v", what, fl.tp, got[i].BaseOffset(), err)
		}
		buf, err := res.AppendTo(nil)
		res.Release()
		if err != nil || !bytes.Equal(buf, got[i]) {
			t.Fatalf("%s: %s read at %d did not return its batch first (%v)", what, fl.tp, got[i].BaseOffset(), err)
		}
	}
	// What was lost with the crash is appended again by the next cycle.
	fl.appended = got
	fl.acked = len(got)
}

func faultManager(t *testing.T, cfg Config, dirs ...string) *Manager {
	t.Helper()
	mc := DefaultManagerConfig(dirs...)
	mc.Log = cfg
	mc.CleanerEnable = false
	// Extended segments (prefault.go) from a log's first 8 KiB on, so
	// that crashes meet their tails.
	mc.PrefaultBytes = 8 << 10
	// A child process another test is starting holds a copy of every fd
	// between its fork and its exec, the dir lock of an abandoned Manager
	// too: wait for that to pass.
	deadline := time.Now().Add(10 * time.Second)
	for {
		m, err := OpenManager(mc)
		if err == nil {
			return m
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			t.Fatalf("open manager: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func faultCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestDiskFaults injects each disk fault into one of two log dirs while
// logs in both are written with fsync before acknowledgement. The fault
// must fail the operation that hit it and take that whole dir offline
// (appends and reads of every log in it fail with ErrLogFailed, which the
// broker answers with KAFKA_STORAGE_ERROR; new logs go to the other dir),
// while the other dir carries on. After a crash that also drops whatever
// was not fsynced, every log holds every batch acknowledged before (and
// after, in the healthy dir) the fault, unchanged, and the failed dir works
// again.
func TestDiskFaults(t *testing.T) {
	cases := []struct {
		name string
		f    fault
	}{
		{"segment write EIO", fault{op: opWrite, suffix: logSuffix, err: syscall.EIO}},
		{"segment write ENOSPC", fault{op: opWrite, suffix: logSuffix, err: syscall.ENOSPC}},
		{"segment short write ENOSPC", fault{op: opWrite, suffix: logSuffix, err: syscall.ENOSPC, short: true}},
		{"segment fsync EIO", fault{op: opSync, suffix: logSuffix, err: syscall.EIO}},
		{"index write ENOSPC", fault{op: opWrite, suffix: indexSuffix, err: syscall.ENOSPC, short: true}},
		{"index fsync EIO", fault{op: opSync, suffix: timeIndexSuffix, err: syscall.EIO}},
		{"checkpoint write ENOSPC", fault{op: opWrite, suffix: recoveryPointFile + ".tmp", err: syscall.ENOSPC, short: true}},
		{"checkpoint fsync EIO", fault{op: opSync, suffix: recoveryPointFile + ".tmp", err: syscall.EIO}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			dirA, dirB := t.TempDir(), t.TempDir()
			disk := newFaultDisk(t, dirA)
			cfg := testConfig()
			cfg.FlushMessages = 1 // fsync before acknowledgement
			m := faultManager(t, cfg, dirA, dirB)
			ctx := faultCtx(t)

			// Create places logs alternately: 0 and 2 in dirA, 1 and 3 in dirB.
			logs := make([]*faultLog, 4)
			for p := range logs {
				logs[p] = &faultLog{tp: TopicPartition{Topic: "f", Partition: int32(p)}}
				l, err := m.Create(logs[p].tp, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if want := []string{dirA, dirB}[p%2]; filepath.Dir(l.Dir()) != want {
					t.Fatalf("partition %d in %s, want %s", p, filepath.Dir(l.Dir()), want)
				}
			}
			get := func(p int) *Log {
				l, ok := m.Get(logs[p].tp)
				if !ok {
					t.Fatalf("no log %d", p)
				}
				return l
			}
			write := func(p int) error {
				// Random values: makeBatch's end in zeros, and half of a
				// one-record batch torn by the short write, followed by a
				// zero tail (the crash's, or the segment's extension), would
				// read back as the whole batch.
				b := randomValuesBatch(t, rng, 1+rng.IntN(8), 200, time.Now().UnixMilli())
				if err := logs[p].append(get(p), b); err != nil {
					return err
				}
				return logs[p].flush(ctx, get(p))
			}
			for range 40 {
				for p := range logs {
					if err := write(p); err != nil {
						t.Fatalf("partition %d before the fault: %v", p, err)
					}
				}
			}

			// The fault: partition 0 writes until it hits it (the index and
			// checkpoint cases need a segment roll or a checkpoint first).
			disk.arm(tc.f)
			var faultErr error
			for n := 0; faultErr == nil && n < 2000; n++ {
				if tc.f.suffix == recoveryPointFile+".tmp" {
					faultErr = m.Checkpoint()
				} else {
					faultErr = write(0)
				}
			}
			if disk.firedCount() != 1 || faultErr == nil {
				t.Fatalf("the fault fired %d times; the operation it hit returned %v", disk.firedCount(), faultErr)
			}
			if !errors.Is(faultErr, ErrLogFailed) && tc.f.suffix != recoveryPointFile+".tmp" {
				t.Errorf("the append or flush the fault hit returned %v, want ErrLogFailed", faultErr)
			}
			t.Logf("fault: %v", faultErr)

			// The whole dir is offline; the other one is not.
			if err := m.DirError(dirA); !errors.Is(err, ErrLogFailed) {
				t.Errorf("DirError(dirA) = %v, want ErrLogFailed", err)
			}
			if err := m.DirError(dirB); err != nil {
				t.Errorf("DirError(dirB) = %v, want nil", err)
			}
			for _, p := range []int{0, 2} {
				deadline := time.Now().Add(10 * time.Second)
				for get(p).Err() == nil && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
				if err := write(p); !errors.Is(err, ErrLogFailed) {
					t.Errorf("append to partition %d in the offline dir: %v, want ErrLogFailed", p, err)
				}
				if _, err := get(p).Read(ReadOptions{Offset: 0, MaxBytes: 1 << 20}); !errors.Is(err, ErrLogFailed) {
					t.Errorf("read of partition %d in the offline dir: %v, want ErrLogFailed", p, err)
				}
			}
			for range 20 {
				for _, p := range []int{1, 3} {
					if err := write(p); err != nil {
						t.Fatalf("partition %d in the healthy dir after the fault: %v", p, err)
					}
				}
			}
			nl, err := m.Create(TopicPartition{Topic: "f", Partition: 4}, cfg)
			if err != nil || filepath.Dir(nl.Dir()) != dirB {
				t.Errorf("a log created after the fault: %v in %v, want dirB", err, nl)
			}
			for _, p := range []int{1, 3} {
				logs[p].check(t, get(p), "healthy dir after the fault")
			}

			// The crash, losing what was not fsynced, and the restart.
			if _, err := disk.crash(rng); err != nil {
				t.Fatal(err)
			}
			m.abandon()
			disk.reset()
			m = faultManager(t, cfg, dirA, dirB)
			defer m.Close()
			for p := range logs {
				logs[p].check(t, get(p), "after the restart")
			}
			for range 10 {
				for p := range logs {
					if err := write(p); err != nil {
						t.Fatalf("partition %d after the restart: %v", p, err)
					}
				}
			}
			for p := range logs {
				logs[p].check(t, get(p), "after writing again")
			}
		})
	}
}

// randomValuesBatch is an uncompressed batch of n records with random
// values of valueSize bytes.
func randomValuesBatch(t *testing.T, rng *rand.Rand, n, valueSize int, ts int64) []byte {
	t.Helper()
	return buildBatch(t, n, ts, record.CodecNone, func(int) []byte {
		v := make([]byte, valueSize)
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		return v
	})
}

// TestDiskCrashDropsUnsynced appends to logs in page-cache mode, with
// flushes at random points acknowledging what came before them, and
// crashes again and again, each time dropping what was not fsynced in one
// of the ways a power cut can. After each restart every acknowledged batch
// is there, unchanged, at its offset; whatever follows the acknowledged
// batches is what was appended at its offset (a lost unsynced tail of a
// rolled segment leaves a gap before the next segment's batches).
func TestDiskCrashDropsUnsynced(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	dir := t.TempDir()
	disk := newFaultDisk(t, dir)
	cfg := testConfig()
	cfg.FlushMessages = 1 << 40 // page-cache mode: only Flush syncs
	cfg.FlushMs = 1 << 40
	ctx := faultCtx(t)
	logs := []*faultLog{{tp: TopicPartition{Topic: "d", Partition: 0}}, {tp: TopicPartition{Topic: "d", Partition: 1}}}
	m := faultManager(t, cfg, dir)
	for _, fl := range logs {
		if _, err := m.Create(fl.tp, cfg); err != nil {
			t.Fatal(err)
		}
	}
	cycles := 30
	if testing.Short() {
		cycles = 5
	}
	tag := uint64(0)
	lostFiles := 0
	for cycle := range cycles {
		for range 20 + rng.IntN(120) {
			fl := logs[rng.IntN(len(logs))]
			l, _ := m.Get(fl.tp)
			tag++
			codec := []record.Codec{record.CodecNone, record.CodecLZ4, record.CodecZstd}[rng.IntN(3)]
			if err := fl.append(l, makeBatch(t, 1+rng.IntN(20), 10+rng.IntN(300), time.Now().UnixMilli(), tag, codec)); err != nil {
				t.Fatalf("cycle %d: append: %v", cycle, err)
			}
			if rng.IntN(8) == 0 {
				if err := fl.flush(ctx, l); err != nil {
					t.Fatalf("cycle %d: flush: %v", cycle, err)
				}
			}
		}
		n, err := disk.crash(rng)
		if err != nil {
			t.Fatal(err)
		}
		lostFiles += n
		m.abandon()
		disk.reset()
		m = faultManager(t, cfg, dir)
		for _, fl := range logs {
			l, ok := m.Get(fl.tp)
			if !ok {
				t.Fatalf("cycle %d: %s gone after the crash", cycle, fl.tp)
			}
			fl.check(t, l, fmt.Sprintf("cycle %d", cycle))
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d crashes; %d files lost unsynced data", cycles, lostFiles)
	if lostFiles == 0 {
		t.Errorf("no crash dropped any unsynced data: the test did not test it")
	}
}

// TestGroupCommitSyncFS: a group commit round of at least syncFSMin logs of
// one dir makes them durable with one syncfs; what it acknowledged survives
// a crash that drops everything unsynced; a failed syncfs fails every log
// of the round and takes the dir offline.
func TestGroupCommitSyncFS(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	dir := t.TempDir()
	disk := newFaultDisk(t, dir)
	cfg := testConfig()
	cfg.FlushMessages = 1
	m := faultManager(t, cfg, dir)
	n := syncFSMin + 16
	logs := make([]*faultLog, n)
	for i := range logs {
		logs[i] = &faultLog{tp: TopicPartition{Topic: "g", Partition: int32(i)}}
		l, err := m.Create(logs[i].tp, cfg)
		if err != nil {
			t.Fatal(err)
		}
		l.SetAutoHighWatermark(true) // as the broker runs a leader's log

	}
	get := func(i int) *Log {
		l, ok := m.Get(logs[i].tp)
		if !ok {
			t.Fatalf("no log %d", i)
		}
		return l
	}
	tag := uint64(0)
	appendAll := func() {
		for i := range logs {
			tag++
			if err := logs[i].append(get(i), makeBatch(t, 1+rng.IntN(5), 100, time.Now().UnixMilli(), tag, record.CodecNone)); err != nil {
				t.Fatalf("append to %d: %v", i, err)
			}
		}
	}
	// round queues every log on a syncer of its own, as appends from many
	// producers queue them in one round, and runs the round.
	round := func() {
		sy := newSyncer(16, nopObserver{})
		for i := range logs {
			sy.request(get(i))
		}
		sy.start()
		sy.wg.Wait()
	}

	for range 3 {
		appendAll()
		before := disk.syncfsCount()
		round()
		if got := disk.syncfsCount() - before; got != 1 {
			t.Fatalf("a round of %d logs of one dir ran %d syncfs, want 1", n, got)
		}
		for i := range logs {
			l := get(i)
			if d, end := l.DurableOffset(), l.LogEndOffset(); d != end {
				t.Fatalf("log %d: durable offset %d after the round, log end %d", i, d, end)
			}
			if hw := l.HighWatermark(); hw != l.LogEndOffset() {
				t.Fatalf("log %d: high watermark %d after the round, log end %d", i, hw, l.LogEndOffset())
			}
			logs[i].acked = len(logs[i].appended)
		}
	}
	appendAll() // never synced: the crash may drop it
	if _, err := disk.crash(rng); err != nil {
		t.Fatal(err)
	}
	m.abandon()
	disk.reset()
	m = faultManager(t, cfg, dir)
	for i := range logs {
		logs[i].check(t, get(i), "after the crash")
	}

	appendAll()
	disk.arm(fault{op: opSync, suffix: syncFSSuffix, err: syscall.EIO})
	round()
	if disk.firedCount() != 1 {
		t.Fatalf("the syncfs fault fired %d times", disk.firedCount())
	}
	for i := range logs {
		if err := get(i).Err(); !errors.Is(err, ErrLogFailed) {
			t.Fatalf("log %d after a failed syncfs: %v, want ErrLogFailed", i, err)
		}
		if err := logs[i].flush(faultCtx(t), get(i)); !errors.Is(err, ErrLogFailed) {
			t.Fatalf("flush of log %d after a failed syncfs: %v, want ErrLogFailed", i, err)
		}
	}
	if err := m.DirError(dir); !errors.Is(err, ErrLogFailed) {
		t.Errorf("DirError after a failed syncfs = %v", err)
	}
	m.abandon()
	disk.reset()
	m = faultManager(t, cfg, dir)
	defer m.Close()
	for i := range logs {
		logs[i].check(t, get(i), "after the failed syncfs and a restart")
	}
}
