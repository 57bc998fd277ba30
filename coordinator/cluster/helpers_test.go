package cluster

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"
)

// testTimeout bounds every wait in these tests: far above what any step
// needs on a loaded 2-core machine under -race, far below the test timeout.
const testTimeout = 20 * time.Second

// testLogger shows the package's logs with -v only.
func testLogger(t *testing.T) *slog.Logger {
	if !testing.Verbose() {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).
		With("test", t.Name())
}

// embeddedConfig is a config for an embedded member in dir on free ports.
func embeddedConfig(dir string, node int32) Config {
	cfg := DefaultConfig()
	cfg.DataDir = dir
	cfg.ClientListenAddr = "127.0.0.1:0"
	cfg.PeerListenAddr = "127.0.0.1:0"
	cfg.NodeID = node
	cfg.RequestTimeout = 10 * time.Second
	return cfg
}

// externalConfig is a config for a node that uses the member of c.
func externalConfig(c *Cluster, node int32) Config {
	cfg := DefaultConfig()
	cfg.Endpoints = c.ClientURLs()
	cfg.NodeID = node
	cfg.RequestTimeout = 10 * time.Second
	return cfg
}

// open opens a Cluster and closes it at the end of the test.
func open(t *testing.T, cfg Config) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	c, err := Open(ctx, cfg, testLogger(t))
	if err != nil {
		t.Fatalf("Open(%+v): %v", cfg, err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

// testCtx is a context for one step of a test.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond until it returns "" or the deadline passes; cond
// returns what is still wrong, reported on failure.
func eventually(t *testing.T, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		msg := cond()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still not true after %s: %s", testTimeout, msg)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// seeRevision waits until c's cache reflects rev (e.g. another node's write).
func seeRevision(t *testing.T, c *Cluster, rev int64) {
	t.Helper()
	if err := c.WaitForRevision(testCtx(t), rev); err != nil {
		t.Fatalf("WaitForRevision(%d): %v (cache at %d)", rev, err, c.Snapshot().Revision)
	}
}

func brokerIDs(m *Metadata) []int32 {
	ids := make([]int32, 0, len(m.Brokers))
	for _, b := range m.Brokers {
		ids = append(ids, b.NodeID)
	}
	return ids
}
