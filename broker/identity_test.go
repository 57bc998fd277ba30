package broker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gregor-io/gregor/protocol"
)

// tryStart starts a broker with node id nodeID on dirs, its embedded etcd
// in the first, and returns it, or the error Start returned.
func tryStart(t *testing.T, nodeID int32, reg *prometheus.Registry, dirs ...string) (*Broker, error) {
	t.Helper()
	return tryStartWith(t, nodeID, nil, reg, dirs...)
}

// tryStartWith starts a broker with node id nodeID on dirs (etcd's data in
// the first, or the external etcd at endpoints), with an admin listener
// and, when reg is set, its metrics in reg.
func tryStartWith(t *testing.T, nodeID int32, endpoints []string, reg *prometheus.Registry, dirs ...string) (*Broker, error) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.NodeID = nodeID
	cfg.Listeners = []string{"PLAINTEXT://127.0.0.1:0"}
	cfg.LogDirs = dirs
	cfg.AdminListener = "127.0.0.1:0"
	cfg.EtcdEndpoints = endpoints
	cfg.EtcdClientAddr, cfg.EtcdPeerAddr = "127.0.0.1:0", "127.0.0.1:0"
	if reg != nil {
		cfg.Registerer, cfg.Gatherer = reg, reg
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// TestLogDirIdentity is issue 27's second report: a restart with another
// node.id, after the embedded etcd's dir was lost, or with a new empty dir
// first in log.dirs each started a new identity or cluster and deleted
// every partition log as no longer here. Each must now refuse to start,
// saying why, and leave the logs as they were; a log the registry does not
// know at start-up (here: the registry restored from a copy older than a
// topic) is kept as a stray and counted, not deleted.
func TestLogDirIdentity(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, err := tryStart(t, 1, nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	w := dialWire(t, b)
	w.createTopic("kept", 1, nil)
	checkCode(t, "produce", w.producePartition(-1, "kept", 0, buildBatch(t, plainHeader(), "kept", 5)).ErrorCode, protocol.None)
	b.Close()
	// A copy of the registry before the next topic, as an old backup.
	oldEtcd := filepath.Join(t.TempDir(), "etcd")
	if err := copyDir(filepath.Join(dir, "etcd"), oldEtcd); err != nil {
		t.Fatal(err)
	}
	b, err = tryStart(t, 1, nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	w = dialWire(t, b)
	w.createTopic("later", 1, nil)
	checkCode(t, "produce", w.producePartition(-1, "later", 0, buildBatch(t, plainHeader(), "later", 3)).ErrorCode, protocol.None)
	b.Close()

	intact := func(what string) {
		t.Helper()
		b, err := tryStart(t, 1, nil, dir)
		if err != nil {
			t.Fatalf("%s: start as before: %v", what, err)
		}
		defer b.Close()
		w := dialWire(t, b)
		for topic, n := range map[string]int64{"kept": 5, "later": 3} {
			if end := w.logEnd(topic, 0); end != n {
				t.Fatalf("%s: %s ends at %d, want %d", what, topic, end, n)
			}
		}
	}
	refused := func(what, want string, nodeID int32, dirs ...string) {
		t.Helper()
		b, err := tryStart(t, nodeID, nil, dirs...)
		if err == nil {
			b.Close()
			t.Fatalf("%s: the broker started", what)
		}
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: refused with %q, want it to say %q", what, err, want)
		}
		t.Logf("%s: refused: %v", what, err)
	}

	refused("another node.id", "this broker is node.id 2", 2, dir)
	intact("after a start with another node.id")

	etcdDir := filepath.Join(dir, "etcd")
	if err := os.Rename(etcdDir, etcdDir+".away"); err != nil {
		t.Fatal(err)
	}
	refused("the embedded etcd dir lost", "the registry holds no cluster", 1, dir)
	if err := os.RemoveAll(etcdDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(etcdDir+".away", etcdDir); err != nil {
		t.Fatal(err)
	}
	intact("after the etcd dir came back")

	refused("a new empty dir first in log.dirs", "the registry holds no cluster", 1, t.TempDir(), dir)
	intact("after a start with a new dir first")

	// The registry restored from before "later" was created: its log is
	// kept as a stray.
	if err := os.RemoveAll(etcdDir); err != nil {
		t.Fatal(err)
	}
	if err := copyDir(oldEtcd, etcdDir); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	b, err = tryStart(t, 1, reg, dir)
	if err != nil {
		t.Fatalf("start on the older registry: %v", err)
	}
	defer b.Close()
	strays, _ := filepath.Glob(filepath.Join(dir, "later-0.*-stray"))
	if len(strays) != 1 {
		t.Fatalf("stray dirs of later-0: %v, want one", strays)
	}
	if segs, _ := filepath.Glob(filepath.Join(strays[0], "*.log")); len(segs) == 0 {
		t.Fatalf("the stray %s holds no segment", strays[0])
	}
	if got, _ := scrapeMetrics(t, b.AdminAddr()).sum("gregor_log_strays", nil); got != 1 {
		t.Errorf("gregor_log_strays: %v, want 1", got)
	}
}

// copyDir copies the regular files under src to dst.
func copyDir(src, dst string) error {
	return filepath.Walk(src, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, data, info.Mode())
	})
}
