package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-io/gregor/broker"
)

// syncBuffer is a bytes.Buffer the broker's goroutines can log to while
// the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServe runs `gregor serve` in-process on free ports, talks to it over
// HTTP and the Kafka protocol, stops it with SIGTERM as an operator would,
// and checks that the shutdown was clean. Not parallel: it receives a
// process signal.
func TestServe(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	started := make(chan *broker.Broker, 1)
	root := newRootCmd(process{
		exit:    func(code int) { t.Errorf("exit(%d) called", code) },
		started: func(b *broker.Broker) { started <- b },
	})
	var stderr syncBuffer
	root.SetOut(io.Discard)
	root.SetErr(&stderr)
	root.SetArgs([]string{"serve",
		"--listeners", "PLAINTEXT://127.0.0.1:0",
		"--admin.listener", "127.0.0.1:0",
		"--etcd.client.addr", "127.0.0.1:0",
		"--etcd.peer.addr", "127.0.0.1:0",
		"--log.dirs", dir,
		"--log.level", "debug",
	})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	var b *broker.Broker
	select {
	case b = <-started:
	case err := <-done:
		t.Fatalf("serve ended before it started: %v\nstderr:\n%s", err, stderr.String())
	case <-time.After(15 * time.Second):
		cancel()
		t.Fatalf("broker not started after 15s\nstderr:\n%s", stderr.String())
	}

	get := func(path string) string {
		t.Helper()
		resp, err := http.Get("http://" + b.AdminAddr() + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: status %d, err %v", path, resp.StatusCode, err)
		}
		return string(body)
	}
	if got := get("/healthz"); got != "ok\n" {
		t.Errorf("/healthz = %q, want %q", got, "ok\n")
	}
	if got := get("/readyz"); got != "ok\n" {
		t.Errorf("/readyz = %q, want %q", got, "ok\n")
	}
	metrics := get("/metrics")
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if !strings.Contains(metrics, name) {
			t.Errorf("/metrics has no %s", name)
		}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
	err = cl.Ping(pctx) // an ApiVersions round trip
	pcancel()
	cl.Close()
	if err != nil {
		t.Errorf("kgo Ping: %v", err)
	}

	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve after SIGTERM: %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("serve still running 10s after SIGTERM\nstderr:\n%s", stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, ".kafka_cleanshutdown")); err != nil {
		t.Errorf("no clean-shutdown marker after SIGTERM: %v", err)
	}
	logs := stderr.String()
	for _, want := range []string{`msg="shutting down" signal=terminated`, "broker started"} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs do not contain %s:\n%s", want, logs)
		}
	}
}

func TestServeStartError(t *testing.T) {
	clearEnv(t)
	// A log dir that is a file cannot be opened.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	root := newRootCmd(process{exit: func(code int) { t.Errorf("exit(%d) called", code) }})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	root.SetArgs([]string{"serve", "--listeners", "PLAINTEXT://127.0.0.1:0", "--admin.listener=",
		"--etcd.client.addr", "127.0.0.1:0", "--etcd.peer.addr", "127.0.0.1:0", "--log.dirs", file})
	err := root.ExecuteContext(t.Context())
	if err == nil || !strings.Contains(err.Error(), "start broker") {
		t.Errorf("serve with a file as log dir: %v, want a start error", err)
	}
}

func TestHelpAndVersion(t *testing.T) {
	run := func(args ...string) string {
		t.Helper()
		root := newRootCmd(process{})
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatalf("gregor %q: %v", args, err)
		}
		return out.String()
	}
	if got := run("version"); !strings.Contains(got, "gregor "+version) || !strings.Contains(got, runtime.Version()) {
		t.Errorf("gregor version = %q, want the version and %s", got, runtime.Version())
	}
	help := run("--help")
	for _, cmd := range []string{"serve", "version", "topic", "produce", "consume", "group", "cluster", "bench", "completion"} {
		if !strings.Contains(help, "\n  "+cmd+" ") {
			t.Errorf("gregor --help does not list %s:\n%s", cmd, help)
		}
	}
	if strings.Contains(run("serve", "--help"), "bootstrap-server") {
		t.Error("gregor serve --help lists the client flag --bootstrap-server")
	}
	if got := run("consume", "--help"); !strings.Contains(got, "--bootstrap-server") || !strings.Contains(got, bootstrapEnv) {
		t.Errorf("gregor consume --help does not show --bootstrap-server and %s:\n%s", bootstrapEnv, got)
	}
	help = run("serve", "--help")
	for _, want := range []string{"log.flush.interval.messages=1", "--node.id", "--log.dirs", "--log.retention.hours", "GREGOR_NODE_ID"} {
		if !strings.Contains(help, want) {
			t.Errorf("gregor serve --help does not mention %s", want)
		}
	}
}
