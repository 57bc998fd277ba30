package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// lazyMount mounts a lazyfs over a temporary backing dir for the test's
// lifetime and returns the mount point, the backing dir and the overlay
// (whose power cut the test calls directly).
func lazyMount(t *testing.T) (mnt, backing string, ov *overlay) {
	t.Helper()
	// The kernel asks for every name and attribute each time, so that
	// the tests see what lazyfs answers, not what the kernel kept.
	return lazyMountTTL(t, 0, 0)
}

func lazyMountTTL(t *testing.T, entryTTL, attrTTL time.Duration) (mnt, backing string, ov *overlay) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("lazyfs tests mount a FUSE file system with mount(2), which needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no /dev/fuse to mount a FUSE file system with: %v", err)
	}
	dir := t.TempDir()
	mnt, backing = filepath.Join(dir, "mnt"), filepath.Join(dir, "backing")
	for _, d := range []string{mnt, backing} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ov = newOverlay()
	srv, err := mount(backing, mnt, ov, entryTTL, attrTTL, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
	})
	return mnt, backing, ov
}

// cut is a power cut as SIGUSR1 makes it.
func cut(t *testing.T, ov *overlay) {
	t.Helper()
	powerCut(ov)
}

func wantFile(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s holds %d bytes %.40q, want %d bytes %.40q", path, len(got), got, len(want), want)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != int64(len(want)) {
		t.Fatalf("%s has size %d, want %d", path, st.Size(), len(want))
	}
}

func writeSynced(t *testing.T, path string, data []byte) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

func TestUnsyncedWriteReadBackThenDropped(t *testing.T) {
	mnt, backing, ov := lazyMount(t)
	p := filepath.Join(mnt, "seg")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("unsynced "), 1000) // spans pages
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	wantFile(t, p, data) // another descriptor reads what this one wrote
	if st, err := os.Stat(filepath.Join(backing, "seg")); err != nil || st.Size() != 0 {
		t.Fatalf("backing file before any fsync: %v, %v; want it empty", st, err)
	}
	f.Close()
	wantFile(t, p, data) // closing makes nothing durable, nor drops anything
	cut(t, ov)
	wantFile(t, p, nil) // the file was created (metadata), its data never synced
}

// TestLookupSeesHeldSize: a name looked up again (here every time) gets
// attributes the kernel then keeps (here for an hour): their size must be
// the held one, or the kernel cuts its view of the file to the synced
// size.
func TestLookupSeesHeldSize(t *testing.T) {
	mnt, _, _ := lazyMountTTL(t, 0, time.Hour)
	p := filepath.Join(mnt, "seg")
	writeSynced(t, p, []byte("synced"))
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte(", held"))
	f.Close()
	wantFile(t, p, []byte("synced, held"))
	wantFile(t, p, []byte("synced, held"))
}

func TestSyncedWriteSurvivesCut(t *testing.T) {
	mnt, backing, ov := lazyMount(t)
	p := filepath.Join(mnt, "seg")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	synced := []byte("first batch;")
	f.Write(synced)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	more := []byte("second batch;")
	f.Write(more)
	if err := syscall.Fdatasync(int(f.Fd())); err != nil {
		t.Fatal(err)
	}
	synced = append(synced, more...)
	f.Write([]byte("third, never synced"))
	wantFile(t, filepath.Join(backing, "seg"), synced)
	cut(t, ov)
	wantFile(t, p, synced)
	// The descriptor still open writes on from the file's new end.
	f.Write([]byte("after"))
	wantFile(t, p, append(synced, "after"...))
}

func TestTruncateIsHeldUntilSync(t *testing.T) {
	mnt, backing, ov := lazyMount(t)
	p := filepath.Join(mnt, "seg")
	old := bytes.Repeat([]byte{'a'}, 10000)
	writeSynced(t, p, old)

	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(100); err != nil {
		t.Fatal(err)
	}
	wantFile(t, p, old[:100])
	// Growing the file again: the bytes the truncate cut off read as
	// zeros, although the backing file still has them.
	if _, err := f.WriteAt([]byte("z"), 8000); err != nil {
		t.Fatal(err)
	}
	want := append(append(bytes.Clone(old[:100]), make([]byte, 7900)...), 'z')
	wantFile(t, p, want)
	wantFile(t, filepath.Join(backing, "seg"), old)
	cut(t, ov)
	wantFile(t, p, old)

	// The same, synced this time: the backing file becomes what was read.
	if err := f.Truncate(100); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("z"), 8000); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	wantFile(t, filepath.Join(backing, "seg"), want)
	// A truncate by path and a grow (a sparse tail) are held too.
	if err := os.Truncate(p, 50); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 1<<20); err != nil {
		t.Fatal(err)
	}
	wantFile(t, p, append(bytes.Clone(want[:50]), make([]byte, 1<<20-50)...))
	cut(t, ov)
	wantFile(t, p, want)
}

func TestOpenTruncIsHeld(t *testing.T) {
	mnt, _, ov := lazyMount(t)
	p := filepath.Join(mnt, "checkpoint")
	writeSynced(t, p, []byte("epoch 7"))
	if err := os.WriteFile(p, []byte("epoch 8"), 0o644); err != nil { // O_TRUNC, no fsync
		t.Fatal(err)
	}
	wantFile(t, p, []byte("epoch 8"))
	cut(t, ov)
	wantFile(t, p, []byte("epoch 7"))
}

func TestCreatedSyncedRenamedFileSurvives(t *testing.T) {
	mnt, _, ov := lazyMount(t)
	if err := os.Mkdir(filepath.Join(mnt, "topic-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, final := filepath.Join(mnt, "topic-0", "cp.tmp"), filepath.Join(mnt, "topic-0", "cp")
	writeSynced(t, final, []byte("old"))
	writeSynced(t, tmp, []byte("new checkpoint"))
	if err := os.Rename(tmp, final); err != nil {
		t.Fatal(err)
	}
	// A file written but never synced, renamed over: the rename stays, the
	// data goes.
	unsynced := filepath.Join(mnt, "topic-0", "unsynced")
	if err := os.WriteFile(unsynced+".tmp", []byte("lost"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(unsynced+".tmp", unsynced); err != nil {
		t.Fatal(err)
	}
	cut(t, ov)
	wantFile(t, final, []byte("new checkpoint"))
	wantFile(t, unsynced, nil)
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("stat %s after the rename: %v, want it gone", tmp, err)
	}
}

func TestDeletedFileForgotten(t *testing.T) {
	mnt, _, ov := lazyMount(t)
	p := filepath.Join(mnt, "seg")
	if err := os.WriteFile(p, []byte("held for a file that goes"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	// A new file may get the deleted one's inode number: it must not
	// inherit its unsynced data.
	if err := os.WriteFile(p, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantFile(t, p, []byte("new"))
	// Synced, then changed: the file the cut loses something of.
	writeSynced(t, filepath.Join(mnt, "other"), []byte("synced"))
	if files, _, _ := ov.cut(); files != 1 {
		t.Fatalf("a power cut after a delete and a create dropped the writes of %d files, want 1", files)
	}
	wantFile(t, p, nil)
}

func TestMappedWritesSyncedByMsync(t *testing.T) {
	mnt, _, ov := lazyMount(t)
	p := filepath.Join(mnt, "index")
	writeSynced(t, p, make([]byte, 8192))
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := syscall.Mmap(int(f.Fd()), 0, 8192, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	copy(m[10:], "synced entry")
	if err := unix.Msync(m, unix.MS_SYNC); err != nil {
		t.Fatal(err)
	}
	// Stored after the msync: written back (at the latest by the close
	// below, which flushes a FUSE file's dirty pages) but never synced.
	copy(m[5000:], "unsynced entry")
	syscall.Munmap(m)
	want := make([]byte, 8192)
	copy(want[10:], "synced entry")
	f.Close()
	cut(t, ov)
	wantFile(t, p, want)
}

// TestMain runs the test binary as lazyfs itself when TestSignalCut asks,
// so that the command (flags, mount, SIGUSR1) is tested as the harness
// uses it.
func TestMain(m *testing.M) {
	if os.Getenv("LAZYFS_TEST_MAIN") == "1" {
		os.Args = append([]string{"lazyfs"}, os.Args[slices.Index(os.Args, "--")+1:]...)
		main()
		return
	}
	os.Exit(m.Run())
}

// TestSignalCut runs lazyfs as a process, as the fault harness does, and
// power-cuts it with SIGUSR1.
func TestSignalCut(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("lazyfs tests mount a FUSE file system with mount(2), which needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no /dev/fuse to mount a FUSE file system with: %v", err)
	}
	dir := t.TempDir()
	mnt, backing := filepath.Join(dir, "mnt"), filepath.Join(dir, "backing")
	os.Mkdir(mnt, 0o755)
	os.Mkdir(backing, 0o755)
	var out syncBuffer
	cmd := exec.Command(os.Args[0], "--", backing, mnt)
	cmd.Env = append(os.Environ(), "LAZYFS_TEST_MAIN=1")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("lazyfs after SIGTERM: %v; output:\n%s", err, out.String())
		}
	})
	waitFor := func(s string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(out.String(), s) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q from lazyfs within 10s; output:\n%s", s, out.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("lazyfs: serving ")
	p := filepath.Join(mnt, "f")
	writeSynced(t, p, []byte("synced"))
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte(" and not"))
	f.Close()
	wantFile(t, p, []byte("synced and not"))
	cmd.Process.Signal(syscall.SIGUSR1)
	waitFor("lazyfs: power cut 1: unsynced writes dropped: 1 files, 4096 bytes of pages")
	wantFile(t, p, []byte("synced"))
}

// syncBuffer is a bytes.Buffer safe for a process's output and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
