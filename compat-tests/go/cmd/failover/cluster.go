package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// reservedPorts are ports other people's clusters use on a shared
// machine (make cluster: Kafka 9092-9094, etcd 2379-2384, admin
// 9644-9646); the harness never takes them, even when the kernel offers
// them.
func reserved(port int) bool {
	return (port >= 9092 && port <= 9094) || (port >= 2379 && port <= 2384) || (port >= 9644 && port <= 9646)
}

// freePorts returns n distinct free ports on 127.0.0.1, holding each
// listener open until all are chosen so that none is handed out twice.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pick a free port: %w", err)
		}
		ls = append(ls, l)
		if p := l.Addr().(*net.TCPAddr).Port; !reserved(p) {
			ports = append(ports, p)
		}
	}
	return ports, nil
}

// broker is one `gregor serve` process of the cluster, restarted with the
// same flags and data dir after each kill.
type broker struct {
	id                                         int32
	kafkaPort, adminPort, etcdClient, etcdPeer int
	dataDir, logPath                           string

	mu struct {
		sync.Mutex
		cmd    *exec.Cmd
		exited chan struct{} // closed once cmd has been waited for
		starts int
	}
}

func (b *broker) addr() string { return "127.0.0.1:" + strconv.Itoa(b.kafkaPort) }

// cluster is the three brokers, each in a process group of its own so
// that a kill reaches nothing else and a Ctrl-C at the terminal reaches
// the harness alone, which then kills them. The process groups alive are
// listed in pgidFile, for run.sh's trap should the harness itself be
// killed.
type cluster struct {
	bin            string
	sessionTimeout time.Duration
	initial        string
	pgidFile       string
	brokers        []*broker

	pgMu sync.Mutex
	pgs  map[int]string // live process groups -> what they are
}

func newCluster(bin, dir string, n int, sessionTimeout time.Duration) (*cluster, error) {
	ports, err := freePorts(4 * n)
	if err != nil {
		return nil, err
	}
	c := &cluster{bin: bin, sessionTimeout: sessionTimeout, pgidFile: filepath.Join(dir, "pgids"), pgs: map[int]string{}}
	var initial []string
	for i := range n {
		b := &broker{id: int32(i + 1), kafkaPort: ports[4*i], adminPort: ports[4*i+1], etcdClient: ports[4*i+2], etcdPeer: ports[4*i+3],
			dataDir: filepath.Join(dir, fmt.Sprintf("broker-%d", i+1)), logPath: filepath.Join(dir, fmt.Sprintf("broker-%d.log", i+1))}
		if err := os.MkdirAll(b.dataDir, 0o755); err != nil {
			return nil, err
		}
		c.brokers = append(c.brokers, b)
		initial = append(initial, fmt.Sprintf("gregor-%d=http://127.0.0.1:%d", b.id, b.etcdPeer))
	}
	c.initial = strings.Join(initial, ",")
	return c, nil
}

func (c *cluster) seeds() []string {
	var s []string
	for _, b := range c.brokers {
		s = append(s, b.addr())
	}
	return s
}

func (c *cluster) broker(id int32) *broker {
	for _, b := range c.brokers {
		if b.id == id {
			return b
		}
	}
	return nil
}

// trackPG records (what != "") or forgets a live process group and
// rewrites pgidFile.
func (c *cluster) trackPG(pgid int, what string) {
	c.pgMu.Lock()
	defer c.pgMu.Unlock()
	if what == "" {
		delete(c.pgs, pgid)
	} else {
		c.pgs[pgid] = what
	}
	var sb strings.Builder
	for pg := range c.pgs {
		fmt.Fprintf(&sb, "%d\n", pg)
	}
	tmp := c.pgidFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(sb.String()), 0o644); err == nil {
		os.Rename(tmp, c.pgidFile)
	}
}

// startProcess starts cmd in a process group of its own, tracked until it
// has been waited for; the returned channel is closed then.
func (c *cluster) startProcess(cmd *exec.Cmd, what string) (chan struct{}, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", what, err)
	}
	pid := cmd.Process.Pid
	c.trackPG(pid, what)
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		// The group leader is reaped; anything it left in its group
		// goes too, before the group id can be reused.
		syscall.Kill(-pid, syscall.SIGKILL)
		c.trackPG(pid, "")
		close(exited)
	}()
	return exited, nil
}

// start runs broker b (again) with its fixed flags, its output appended to
// b.logPath after a line marking the start.
func (c *cluster) start(b *broker) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mu.cmd != nil {
		select {
		case <-b.mu.exited: // it exited by itself; start it again
		default:
			return fmt.Errorf("broker %d is already running", b.id)
		}
	}
	f, err := os.OpenFile(b.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close() // the child holds its own descriptor
	b.mu.starts++
	fmt.Fprintf(f, "==== failover harness: start %d of broker %d at %s\n", b.mu.starts, b.id, time.Now().UTC().Format(time.RFC3339Nano))
	cmd := exec.Command(c.bin, "serve",
		"--node.id", strconv.Itoa(int(b.id)),
		"--log.dirs", b.dataDir,
		"--listeners", "PLAINTEXT://"+b.addr(),
		"--admin.listener", "127.0.0.1:"+strconv.Itoa(b.adminPort),
		"--etcd.client.addr", "127.0.0.1:"+strconv.Itoa(b.etcdClient),
		"--etcd.peer.addr", "127.0.0.1:"+strconv.Itoa(b.etcdPeer),
		"--etcd.initial.cluster", c.initial,
		"--broker.session.timeout.ms", strconv.FormatInt(c.sessionTimeout.Milliseconds(), 10),
	)
	cmd.Stdout, cmd.Stderr = f, f
	exited, err := c.startProcess(cmd, fmt.Sprintf("broker %d", b.id))
	if err != nil {
		return err
	}
	b.mu.cmd, b.mu.exited = cmd, exited
	return nil
}

// kill sends SIGKILL to broker b's process group and waits until it is
// gone, returning the time the signal was sent.
func (c *cluster) kill(ctx context.Context, b *broker) (time.Time, error) {
	b.mu.Lock()
	cmd, exited := b.mu.cmd, b.mu.exited
	b.mu.cmd, b.mu.exited = nil, nil
	b.mu.Unlock()
	if cmd == nil {
		return time.Time{}, fmt.Errorf("broker %d is not running", b.id)
	}
	at := time.Now()
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return at, fmt.Errorf("kill broker %d: %w", b.id, err)
	}
	select {
	case <-exited:
		return at, nil
	case <-ctx.Done():
		return at, ctx.Err()
	}
}

// running reports whether broker b's process is up (it may have exited
// by itself).
func (b *broker) running() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mu.cmd == nil {
		return false
	}
	select {
	case <-b.mu.exited:
		return false
	default:
		return true
	}
}

// killAll kills every process group still alive and waits for each, so
// that nothing the harness started outlives it.
func (c *cluster) killAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, b := range c.brokers {
		if b.running() {
			c.kill(ctx, b)
		}
	}
	c.pgMu.Lock()
	left := make([]int, 0, len(c.pgs))
	for pg := range c.pgs {
		left = append(left, pg)
	}
	c.pgMu.Unlock()
	for _, pg := range left {
		syscall.Kill(-pg, syscall.SIGKILL)
	}
}
