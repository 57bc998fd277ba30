package cluster

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// mountTmpfs mounts a tmpfs of size (e.g. "20m") on a new temp dir.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a small tmpfs (needs root): %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fillTo writes a file in dir that leaves about free bytes free.
func fillTo(t *testing.T, dir string, free int64) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	n := int64(st.Bavail)*int64(st.Bsize) - free
	if n <= 0 {
		return
	}
	f, err := os.CreateTemp(dir, "filler")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, n)); err != nil {
		t.Fatal(err)
	}
}

// TestMemberSmallDisk starts the embedded member in small file systems.
// It used to need about 125 MB (two preallocated 64 MB WAL segments) and
// panicked ("failed to create WAL", the cause only in etcd's log) in less.
// With too little room it must now refuse with the cause and the numbers;
// with a little more it must start, its files sized for a registry.
func TestMemberSmallDisk(t *testing.T) {
	t.Parallel()
	small := mountTmpfs(t, "20m")
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	c, err := Open(ctx, embeddedConfig(small, 1), testLogger(t))
	if err == nil {
		c.Close()
		t.Fatal("the member started with 20 MiB free, below what it needs")
	}
	if !errors.Is(err, ErrMemberNoSpace) || !strings.Contains(err.Error(), small) || !strings.Contains(err.Error(), "MiB") {
		t.Errorf("start with 20 MiB free: %v, want ErrMemberNoSpace naming the dir and the sizes", err)
	}

	roomy := mountTmpfs(t, "40m")
	cfg := embeddedConfig(roomy, 1)
	c, err = Open(ctx, cfg, testLogger(t))
	if err != nil {
		t.Fatalf("start in 40 MiB: %v", err)
	}
	if _, err := c.client.Put(testCtx(t), "/probe", strings.Repeat("x", 1<<20)); err != nil {
		t.Fatalf("write to the member in 40 MiB: %v", err)
	}
	held, err := allocatedBytes(filepath.Join(roomy, "etcd"))
	if err != nil {
		t.Fatal(err)
	}
	if held > memberMinFreeBytes {
		t.Errorf("the member's files take %d MiB, more than the %d MiB it asks for", held>>20, memberMinFreeBytes>>20)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	// A member that has its files needs room to restart, also when its
	// WAL's tail is torn and etcd copies the segment aside to repair it.
	if held, err = allocatedBytes(filepath.Join(roomy, "etcd")); err != nil {
		t.Fatal(err)
	}
	free := int64(memberMinGrowBytes + 1<<20)
	fillTo(t, roomy, free)
	c, err = Open(ctx, cfg, testLogger(t))
	if err != nil {
		t.Fatalf("restart with files of %d KiB and %d KiB free: %v", held>>10, free>>10, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	fillTo(t, roomy, 0)
	if c, err = Open(ctx, cfg, testLogger(t)); !errors.Is(err, ErrMemberNoSpace) {
		if err == nil {
			c.Close()
		}
		t.Errorf("restart with a full disk: %v, want ErrMemberNoSpace", err)
	}
}

// TestMemberDamagedDatabase flips bytes in the member's database file: etcd
// used to panic inside bbolt, naming no file. Open must refuse, naming the
// file and what to do, and leave the file as it was.
func TestMemberDamagedDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := open(t, embeddedConfig(dir, 1))
	for i := range 50 {
		if _, err := c.client.Put(testCtx(t), "/k/"+strings.Repeat("k", i), strings.Repeat("v", 3000)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "etcd", "member", "snap", "db")
	data, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	// Every page after the two meta pages and the freelist: the branch and
	// leaf pages of the key space.
	for i := 4 * 4096; i < len(data); i += 97 {
		data[i] ^= 0x5a
	}
	if err := os.WriteFile(db, data, 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	c2, err := Open(ctx, embeddedConfig(dir, 1), testLogger(t))
	if err == nil {
		c2.Close()
		t.Fatal("the member started on a damaged database")
	}
	if !errors.Is(err, ErrMemberDamaged) || !strings.Contains(err.Error(), db) || !strings.Contains(err.Error(), "backup") {
		t.Errorf("start on a damaged database: %v, want ErrMemberDamaged naming %s and what to do", err, db)
	}
	after, err := os.ReadFile(db)
	if err != nil || !bytes.Equal(after, data) {
		t.Errorf("the damaged database was changed by the refused start (%v)", err)
	}
}

// TestMemberStopBounded makes the member's stop hang, as it did for a
// member that could not write its files (SIGTERM then never ended the
// broker): Close must return, with an error, after StopTimeout. Not
// parallel: it replaces closeEtcd.
func TestMemberStopBounded(t *testing.T) {
	dir := t.TempDir()
	cfg := embeddedConfig(dir, 1)
	cfg.StopTimeout = time.Second
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	c, err := Open(ctx, cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	closeEtcd = func(*embed.Etcd) { <-release }
	defer func() {
		closeEtcd = (*embed.Etcd).Close
		close(release)
		c.member.Close()
	}()

	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "did not stop within 1s") {
			t.Errorf("Close with a member that does not stop: %v, want an error saying so", err)
		}
		t.Logf("Close returned after %s: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(testTimeout):
		t.Fatalf("Close still blocked %s after it began, with StopTimeout 1s", testTimeout)
	}
}

// TestMemberDatabaseCheckBounded gives the member's database a root page
// that claims four billion overflow pages: the check, as etcd would, walks
// them for minutes. It must stop at its bound and refuse the file as
// damaged. Not parallel: it shortens dbCheckTimeout.
func TestMemberDatabaseCheckBounded(t *testing.T) {
	dir := t.TempDir()
	c := open(t, embeddedConfig(dir, 1))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "etcd", "member", "snap", "db")
	data, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	// The newer of the two meta pages (page 0 and 1, 4 KiB each: the
	// page header is 16 bytes, then magic, version, page size, flags,
	// the root bucket's page id at 32, ..., the txid at 64) names the
	// root page; its header's overflow count is at byte 12.
	meta := func(i int) (root, txid uint64) {
		p := data[i*4096:]
		return binary.LittleEndian.Uint64(p[32:]), binary.LittleEndian.Uint64(p[64:])
	}
	root, tx0 := meta(0)
	if r1, tx1 := meta(1); tx1 > tx0 {
		root = r1
	}
	binary.LittleEndian.PutUint32(data[int(root)*4096+12:], 0xfffffff0)
	if err := os.WriteFile(db, data, 0o600); err != nil {
		t.Fatal(err)
	}

	dbCheckTimeout = 2 * time.Second
	defer func() { dbCheckTimeout = 15 * time.Second }()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	start := time.Now()
	c2, err := Open(ctx, embeddedConfig(dir, 1), testLogger(t))
	if err == nil {
		c2.Close()
		t.Fatal("the member started on a database whose root page claims 4 billion overflow pages")
	}
	if !errors.Is(err, ErrMemberDamaged) || !strings.Contains(err.Error(), db) {
		t.Errorf("start on it: %v (after %s), want ErrMemberDamaged naming %s", err, time.Since(start).Round(time.Millisecond), db)
	}
	t.Logf("refused after %s: %v", time.Since(start).Round(time.Millisecond), err)
}
