package broker

// A broker in a process of its own, for the tests that kill it with -9
// (TestBrokerCrash) or read its memory and descriptors from /proc/<pid>
// (TestConnectionLoad, TestHostileRSS). The parent re-executes this test
// binary to run TestChildBroker, which reads what to serve from an
// environment variable, starts a broker, prints a ready line and serves
// until it is killed.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

const (
	childBrokerEnv   = "GREGOR_CHILD_BROKER"
	childBrokerReady = "GREGOR_CHILD_BROKER_READY"
)

// childBrokerSpec is what a parent test tells TestChildBroker.
type childBrokerSpec struct {
	Dir string `json:"dir"`
	// SecondDir, when set, is a second log dir.
	SecondDir      string `json:"second_dir"`
	KafkaPort      int    `json:"kafka_port"`
	AdminPort      int    `json:"admin_port"` // 0: no admin server
	EtcdClientPort int    `json:"etcd_client_port"`
	EtcdPeerPort   int    `json:"etcd_peer_port"`
	// SessionTimeout, when set, replaces broker.session.timeout.ms.
	SessionTimeout time.Duration `json:"session_timeout"`
	// CleanerBackoff, when set, replaces log.cleaner.backoff.ms;
	// CleanerOff sets log.cleaner.enable to false.
	CleanerBackoff time.Duration `json:"cleaner_backoff"`
	CleanerOff     bool          `json:"cleaner_off"`
	// Unlimited lifts the connection limits and sets the idle timeout to
	// 10 minutes, longer than any test runs. Kafka's defaults, which are
	// Gregor's, already allow that much; setting them keeps a change of
	// defaults from turning a load test into a test of the limits.
	Unlimited bool `json:"unlimited"`
	// SASLPort, when set, adds a SASL_PLAINTEXT listener there with PLAIN
	// (users as saslListeners gives them).
	SASLPort int `json:"sasl_port"`
	// RuntimeMetrics adds the Go runtime's metrics to /metrics: they tell
	// the heap in use from memory the runtime freed but has not yet
	// returned to the OS.
	RuntimeMetrics bool `json:"runtime_metrics"`
}

// addr is the child broker's Kafka listener.
func (s childBrokerSpec) addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.KafkaPort))
}

// TestChildBroker is the broker process of the tests above; run on its
// own it skips. It serves until it is killed.
func TestChildBroker(t *testing.T) {
	raw := os.Getenv(childBrokerEnv)
	if raw == "" {
		t.Skip("the broker process of TestBrokerCrash, TestConnectionLoad and TestHostileRSS; runs only when re-executed by them")
	}
	var spec childBrokerSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		t.Fatalf("bad %s: %v", childBrokerEnv, err)
	}
	cfg := DefaultConfig()
	cfg.Listeners = []string{fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", spec.KafkaPort)}
	if spec.SASLPort != 0 {
		cfg.Listeners = append(cfg.Listeners, fmt.Sprintf("SASL_PLAINTEXT://127.0.0.1:%d", spec.SASLPort))
		cfg.SASLEnabledMechanisms = []string{"PLAIN", "SCRAM-SHA-512"}
		cfg.ListenerConfigs = map[string]string{"listener.name.sasl_plaintext.plain.sasl.jaas.config": plainJAAS}
	}
	cfg.LogDirs = []string{spec.Dir}
	if spec.SecondDir != "" {
		cfg.LogDirs = append(cfg.LogDirs, spec.SecondDir)
	}
	cfg.AdminListener = ""
	if spec.AdminPort != 0 {
		cfg.AdminListener = fmt.Sprintf("127.0.0.1:%d", spec.AdminPort)
	}
	cfg.EtcdClientAddr = fmt.Sprintf("127.0.0.1:%d", spec.EtcdClientPort)
	cfg.EtcdPeerAddr = fmt.Sprintf("127.0.0.1:%d", spec.EtcdPeerPort)
	if spec.SessionTimeout > 0 {
		cfg.SessionTimeout = spec.SessionTimeout
	}
	if spec.CleanerBackoff > 0 {
		cfg.LogCleanerBackoff = spec.CleanerBackoff
	}
	if spec.CleanerOff {
		cfg.LogCleanerEnable = false
	}
	if spec.Unlimited {
		cfg.MaxConnections = math.MaxInt32
		cfg.MaxConnectionsPerIP = math.MaxInt32
		cfg.ConnectionsMaxIdle = 10 * time.Minute
	}
	if spec.RuntimeMetrics {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector())
		cfg.Registerer, cfg.Gatherer = reg, reg
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))

	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		t.Fatalf("start broker: %v", err)
	}
	fmt.Println(childBrokerReady)
	select {} // until SIGKILL
}

// childBroker is one run of a TestChildBroker process.
type childBroker struct {
	spec    childBrokerSpec
	cmd     *exec.Cmd
	pid     int
	logPath string
	exited  chan struct{}
	waitErr error
}

// startChild starts a broker process for spec, its output going to
// logPath, and waits until it serves. It is killed when the test ends if
// it is still running. It returns the time the start took.
func startChild(t *testing.T, spec childBrokerSpec, logPath string) (*childBroker, time.Duration) {
	t.Helper()
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildBroker$", "-test.count=1", "-test.timeout=30m")
	cmd.Env = append(os.Environ(), childBrokerEnv+"="+string(raw))
	cmd.Stdout, cmd.Stderr = f, f
	// Killed with the test process if that dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start child broker: %v", err)
	}
	c := &childBroker{spec: spec, cmd: cmd, pid: cmd.Process.Pid, logPath: logPath, exited: make(chan struct{})}
	go func() {
		c.waitErr = cmd.Wait()
		f.Close()
		close(c.exited)
	}()
	t.Cleanup(c.kill)
	waitFor(t, 3*time.Minute, "child broker ready", func() error {
		if err := c.alive(); err != nil {
			t.Fatalf("%v before it was ready; its log:\n%s", err, tail(logPath, 60))
		}
		if strings.Contains(readFile(logPath), childBrokerReady) {
			return nil
		}
		return errors.New("no ready line yet")
	})
	return c, time.Since(start)
}

// alive fails once the process has exited.
func (c *childBroker) alive() error {
	select {
	case <-c.exited:
		return fmt.Errorf("child broker exited: %w", c.waitErr)
	default:
		return nil
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (c *childBroker) kill() {
	select {
	case <-c.exited:
		return
	default:
	}
	c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.exited
}

func (c *childBroker) addr() string { return c.spec.addr() }

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

func tail(path string, lines int) string {
	all := strings.Split(strings.TrimRight(readFile(path), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}
