package storage

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStampLogDirs stamps two log dirs, reopens them and checks each way a
// stamp may disagree: another node, another cluster, two dirs of two
// clusters, a damaged file. None of them may be overwritten.
func TestStampLogDirs(t *testing.T) {
	t.Parallel()
	a, b := t.TempDir(), t.TempDir()
	open := func(dirs ...string) *Manager {
		t.Helper()
		cfg := DefaultManagerConfig(dirs[0])
		cfg.Dirs = dirs
		m, err := OpenManager(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := open(a, b)
	if id, err := m.ClusterIDOnDisk(); err != nil || id != "" {
		t.Fatalf("unstamped dirs: cluster id %q, %v", id, err)
	}
	if err := m.Stamp("clusterA", 7); err != nil {
		t.Fatal(err)
	}
	m.Close()

	m = open(a, b)
	ids := m.Identities()
	if len(ids) != 2 || ids[a].ClusterID != "clusterA" || ids[a].NodeID != 7 || ids[a].DirectoryID == "" ||
		ids[a].DirectoryID == ids[b].DirectoryID {
		t.Fatalf("stamps read back: %+v", ids)
	}
	if id, err := m.ClusterIDOnDisk(); err != nil || id != "clusterA" {
		t.Fatalf("cluster id on disk %q, %v", id, err)
	}
	if err := m.CheckNodeID(8); !errors.Is(err, ErrIdentityMismatch) || !strings.Contains(err.Error(), "node.id=7") {
		t.Errorf("node 8 on node 7's dirs: %v", err)
	}
	if err := m.Stamp("clusterB", 7); !errors.Is(err, ErrIdentityMismatch) || !strings.Contains(err.Error(), "clusterA") {
		t.Errorf("cluster B on cluster A's dirs: %v", err)
	}
	if err := m.Stamp("clusterA", 7); err != nil {
		t.Errorf("stamp again with the same identity: %v", err)
	}
	m.Close()
	before, err := os.ReadFile(filepath.Join(a, metaPropertiesFile))
	if err != nil {
		t.Fatal(err)
	}

	// A new dir of another cluster beside them.
	c := t.TempDir()
	if err := writeMeta(c, DirIdentity{ClusterID: "clusterC", NodeID: 7, DirectoryID: newDirectoryID()}); err != nil {
		t.Fatal(err)
	}
	m = open(a, c)
	if _, err := m.ClusterIDOnDisk(); !errors.Is(err, ErrIdentityMismatch) || !strings.Contains(err.Error(), c) {
		t.Errorf("dirs of two clusters: %v", err)
	}
	m.Close()

	after, err := os.ReadFile(filepath.Join(a, metaPropertiesFile))
	if err != nil || string(after) != string(before) {
		t.Fatalf("stamp changed by refused starts:\n%s\nthen\n%s (%v)", before, after, err)
	}

	// A damaged stamp refuses to open rather than guess.
	if err := os.WriteFile(filepath.Join(b, metaPropertiesFile), []byte("version=1\nnode.id=seven\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultManagerConfig(a)
	cfg.Dirs = []string{a, b}
	if m, err := OpenManager(cfg); !errors.Is(err, ErrCorruptCheckpoint) {
		if m != nil {
			m.Close()
		}
		t.Errorf("open with a damaged meta.properties: %v", err)
	}
}

// TestStrayKept marks a log stray and reopens the dir: the stray is listed,
// not opened, and its files are as they were.
func TestStrayKept(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m, err := OpenManager(DefaultManagerConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	tp := TopicPartition{Topic: "old", Partition: 0}
	l, err := m.Create(tp, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(makeBatch(t, 3, 10, 1, 1, 0), AppendOptions{AssignOffsets: true}); err != nil {
		t.Fatal(err)
	}
	path, err := m.MarkStray(tp)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(path, strayDirSuffix) || filepath.Dir(path) != dir {
		t.Fatalf("stray dir %s", path)
	}
	if _, ok := m.Get(tp); ok {
		t.Error("stray log still served")
	}
	m.Close()

	m, err = OpenManager(DefaultManagerConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if s := m.Strays(); len(s) != 1 || s[0] != path {
		t.Errorf("strays after reopen: %v, want [%s]", s, path)
	}
	if len(m.Logs()) != 0 {
		t.Errorf("stray opened as a log: %d logs", len(m.Logs()))
	}
	seg, err := os.Stat(filepath.Join(path, segmentFileName(0, logSuffix)))
	if err != nil || seg.Size() == 0 {
		t.Errorf("stray's segment: %v", err)
	}
}

// FuzzMetaProperties decodes arbitrary meta.properties: an error or a stamp
// that writes back to itself, never a panic.
func FuzzMetaProperties(f *testing.F) {
	f.Add([]byte("#\n#Written by Gregor\ncluster.id=abc\ndirectory.id=xyz\nnode.id=1\nversion=1\n"))
	f.Add([]byte("version=1\nnode.id=-3\ncluster.id=x\n"))
	f.Add([]byte("version=0\nbroker.id=1\n"))
	f.Add([]byte("node.id=99999999999\nversion=1\ncluster.id=q"))
	f.Fuzz(func(t *testing.T, data []byte) {
		id, err := parseMeta("meta.properties", data)
		if err != nil {
			return
		}
		dir := t.TempDir()
		if err := writeMeta(dir, id); err != nil {
			t.Fatal(err)
		}
		again, ok, err := readMeta(dir)
		if err != nil || !ok {
			// A value with a line break cannot be written back; the
			// decoder never yields one (it splits on lines).
			t.Fatalf("stamp %+v does not read back: %v", id, err)
		}
		if again != id {
			t.Fatalf("stamp %+v read back as %+v", id, again)
		}
	})
}

// TestStrayKilledAtEveryStep takes the files as a kill -9 leaves them
// after each step of MarkStray (log closed, dir renamed, log dir fsynced)
// and of Delete, and reopens them: the Manager always opens, and every
// record of the marked log is there, in the log (a crash before the
// rename) or in the stray dir; a deletion is either undone (before the
// rename) or finished at the open.
func TestStrayKilledAtEveryStep(t *testing.T) {
	t.Parallel()
	tp := TopicPartition{Topic: "marked", Partition: 3}
	for _, op := range []string{"stray", "delete"} {
		for _, kill := range []string{"closed", "renamed", "synced"} {
			what := op + ", killed after " + kill
			dir := t.TempDir()
			m, err := OpenManager(DefaultManagerConfig(dir))
			if err != nil {
				t.Fatal(err)
			}
			l, err := m.Create(tp, testConfig())
			if err != nil {
				t.Fatal(err)
			}
			for range 5 {
				if _, err := l.Append(makeBatch(t, 4, 100, 1, 1, 0), AppendOptions{AssignOffsets: true}); err != nil {
					t.Fatal(err)
				}
			}
			end := l.LogEndOffset()
			var snap string
			m.stepHook = func(step string) {
				if step == kill {
					snap = killCopy(t, dir)
				}
			}
			if op == "stray" {
				_, err = m.MarkStray(tp)
			} else {
				err = m.Delete(tp)
			}
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			m.Close()
			if snap == "" {
				t.Fatalf("%s: no such step", what)
			}

			m2, err := OpenManager(DefaultManagerConfig(snap))
			if err != nil {
				t.Fatalf("%s: open after the kill: %v", what, err)
			}
			l2, open := m2.Get(tp)
			strays := m2.Strays()
			switch {
			case open:
				if got := l2.LogEndOffset(); got != end || len(readAll(t, l2, 0, 0)) != 5 {
					t.Errorf("%s: the log reopened with end %d, want %d and 5 batches", what, got, end)
				}
			case op == "stray" && len(strays) == 1:
				// The stray dir, opened as a log of its own, holds it all.
				m3, err := OpenManager(DefaultManagerConfig(t.TempDir()))
				if err != nil {
					t.Fatal(err)
				}
				if err := copyTree(strays[0], filepath.Join(m3.cfg.Dirs[0], tp.DirName())); err != nil {
					t.Fatal(err)
				}
				m3.Close()
				m4, err := OpenManager(DefaultManagerConfig(m3.cfg.Dirs[0]))
				if err != nil {
					t.Fatal(err)
				}
				if l4, ok := m4.Get(tp); !ok || l4.LogEndOffset() != end || len(readAll(t, l4, 0, 0)) != 5 {
					t.Errorf("%s: the stray dir does not hold the log's %d offsets", what, end)
				}
				m4.Close()
			case op == "delete" && len(strays) == 0:
				if left, _ := filepath.Glob(filepath.Join(snap, "*"+deleteDirSuffix)); len(left) != 0 {
					t.Errorf("%s: %v left after the open", what, left)
				}
			default:
				t.Errorf("%s: log open %v, strays %v", what, open, strays)
			}
			if op == "delete" && kill != "closed" && open {
				t.Errorf("%s: a deleted log came back after its rename", what)
			}
			m2.Close()
		}
	}
}
