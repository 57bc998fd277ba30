package lab

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

// reserved reports the ports other people's clusters use on a shared
// machine (make cluster: Kafka 9092-9094, etcd 2379-2384, admin
// 9644-9646); the harness never takes them on 127.0.0.1, even when the
// kernel offers them.
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

// Config says how to run the brokers of a Cluster.
type Config struct {
	Bin string // the gregor binary
	Dir string // parent of each broker's data dir and log
	N   int    // brokers, node ids 1 to N
	// SessionTimeout is the brokers' broker.session.timeout.ms.
	SessionTimeout time.Duration
	// Hosts, when set, gives broker i+1 the address Hosts[i] of its own
	// (its network namespace's), on which it serves Kafka, admin and etcd
	// on their usual ports; unset, every broker is on 127.0.0.1 with free
	// ports.
	Hosts []string
	// Wrap, when set, returns the command a broker's `gregor serve` runs
	// under (such as ip netns exec NAME); it must exec the command in its
	// place, so that the process the harness signals is the broker.
	Wrap func(b *Broker) []string
	// Args are extra flags of every broker's `gregor serve`.
	Args []string
	// Command, when set, is the command that runs broker b in place of
	// `gregor serve` and its flags (another broker under the same test,
	// such as Apache Kafka); Wrap still applies.
	Command func(b *Broker) []string
	// Tag names the harness in the line it writes into a broker's log at
	// each start.
	Tag string
	// Etcd, when set, is an etcd binary: the cluster then runs three etcd
	// members as processes of their own (member i beside broker i, on
	// its host, with the ports its embedded member would have) and the
	// brokers use them through etcd.endpoints instead of embedding
	// theirs, so that an etcd member can be lost without a broker.
	Etcd string
	// EtcdMembers, with Etcd, is how many etcd members run (beside
	// brokers 1 to EtcdMembers); 0 means one per broker. Fewer members
	// than brokers let a broker be retired without its etcd member.
	EtcdMembers int
}

// process is one process of the cluster, restarted with the same command
// after each kill.
type process struct {
	what string // "broker 2", "etcd member 1"
	mu   struct {
		sync.Mutex
		cmd    *exec.Cmd
		exited chan struct{} // closed once cmd has been waited for
		starts int
	}
}

// Member is one etcd process of a cluster run with Config.Etcd.
type Member struct {
	process
	ID                   int32
	Host                 string
	ClientPort, PeerPort int
	DataDir, LogPath     string
}

// ClientURL is the member's client URL.
func (m *Member) ClientURL() string {
	return "http://" + net.JoinHostPort(m.Host, strconv.Itoa(m.ClientPort))
}

// Broker is one `gregor serve` process of the cluster, restarted with the
// same flags and data dir after each kill.
type Broker struct {
	process
	ID                                         int32
	Host                                       string
	KafkaPort, AdminPort, EtcdClient, EtcdPeer int
	DataDir, LogPath                           string
}

// Addr is the broker's Kafka listener, host:port.
func (b *Broker) Addr() string { return net.JoinHostPort(b.Host, strconv.Itoa(b.KafkaPort)) }

// Cluster is the brokers, each in a process group of its own so that a
// signal reaches nothing else and a Ctrl-C at the terminal reaches the
// harness alone, which then kills them. The process groups alive are
// listed in Dir/pgids, for the calling script's trap should the harness
// itself be killed.
type Cluster struct {
	cfg      Config
	initial  string
	pgidFile string
	Brokers  []*Broker
	// Members are the etcd members when Config.Etcd is set.
	Members []*Member

	pgMu sync.Mutex
	pgs  map[int]string // live process groups -> what they are
}

// NewCluster lays out the brokers' addresses and data dirs; nothing runs
// until Start.
func NewCluster(cfg Config) (*Cluster, error) {
	if cfg.Hosts != nil && len(cfg.Hosts) != cfg.N {
		return nil, fmt.Errorf("lab: %d hosts for %d brokers", len(cfg.Hosts), cfg.N)
	}
	var ports []int
	if cfg.Hosts == nil {
		var err error
		if ports, err = freePorts(4 * cfg.N); err != nil {
			return nil, err
		}
	}
	c := &Cluster{cfg: cfg, pgidFile: filepath.Join(cfg.Dir, "pgids"), pgs: map[int]string{}}
	var initial, members []string
	for i := range cfg.N {
		b := &Broker{process: process{what: fmt.Sprintf("broker %d", i+1)}, ID: int32(i + 1),
			DataDir: filepath.Join(cfg.Dir, fmt.Sprintf("broker-%d", i+1)), LogPath: filepath.Join(cfg.Dir, fmt.Sprintf("broker-%d.log", i+1))}
		if cfg.Hosts == nil {
			b.Host, b.KafkaPort, b.AdminPort, b.EtcdClient, b.EtcdPeer = "127.0.0.1", ports[4*i], ports[4*i+1], ports[4*i+2], ports[4*i+3]
		} else {
			b.Host, b.KafkaPort, b.AdminPort, b.EtcdClient, b.EtcdPeer = cfg.Hosts[i], 9092, 9644, 2379, 2380
		}
		if err := os.MkdirAll(b.DataDir, 0o755); err != nil {
			return nil, err
		}
		c.Brokers = append(c.Brokers, b)
		initial = append(initial, fmt.Sprintf("gregor-%d=http://%s", b.ID, net.JoinHostPort(b.Host, strconv.Itoa(b.EtcdPeer))))
		if cfg.Etcd != "" && (cfg.EtcdMembers == 0 || i < cfg.EtcdMembers) {
			m := &Member{process: process{what: fmt.Sprintf("etcd member %d", i+1)}, ID: b.ID, Host: b.Host,
				ClientPort: b.EtcdClient, PeerPort: b.EtcdPeer,
				DataDir: filepath.Join(cfg.Dir, fmt.Sprintf("etcd-%d", i+1)), LogPath: filepath.Join(cfg.Dir, fmt.Sprintf("etcd-%d.log", i+1))}
			c.Members = append(c.Members, m)
			members = append(members, fmt.Sprintf("etcd-%d=http://%s", m.ID, net.JoinHostPort(m.Host, strconv.Itoa(m.PeerPort))))
		}
	}
	c.initial = strings.Join(initial, ",")
	if cfg.Etcd != "" {
		c.initial = strings.Join(members, ",")
	}
	return c, nil
}

// Seeds are the brokers' Kafka listeners.
func (c *Cluster) Seeds() []string {
	var s []string
	for _, b := range c.Brokers {
		s = append(s, b.Addr())
	}
	return s
}

// Broker returns the broker with node id id, nil for none.
func (c *Cluster) Broker(id int32) *Broker {
	for _, b := range c.Brokers {
		if b.ID == id {
			return b
		}
	}
	return nil
}

// trackPG records (what != "") or forgets a live process group and
// rewrites pgidFile.
func (c *Cluster) trackPG(pgid int, what string) {
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

// StartProcess starts cmd in a process group of its own, tracked until it
// has been waited for; the returned channel is closed then.
func (c *Cluster) StartProcess(cmd *exec.Cmd, what string) (chan struct{}, error) {
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

// Start runs broker b (again) with its fixed flags, its output appended to
// b.LogPath after a line marking the start.
func (c *Cluster) Start(b *Broker) error {
	hostPort := func(p int) string { return net.JoinHostPort(b.Host, strconv.Itoa(p)) }
	args := []string{c.cfg.Bin, "serve",
		"--node.id", strconv.Itoa(int(b.ID)),
		"--log.dirs", b.DataDir,
		"--listeners", "PLAINTEXT://" + b.Addr(),
		"--admin.listener", hostPort(b.AdminPort),
		"--broker.session.timeout.ms", strconv.FormatInt(c.cfg.SessionTimeout.Milliseconds(), 10),
	}
	if c.cfg.Etcd != "" {
		var urls []string
		for _, m := range c.Members {
			urls = append(urls, m.ClientURL())
		}
		args = append(args, "--etcd.endpoints", strings.Join(urls, ","))
	} else {
		args = append(args, "--etcd.client.addr", hostPort(b.EtcdClient), "--etcd.peer.addr", hostPort(b.EtcdPeer),
			"--etcd.initial.cluster", c.initial)
	}
	args = append(args, c.cfg.Args...)
	if c.cfg.Command != nil {
		args = c.cfg.Command(b)
	}
	if c.cfg.Wrap != nil {
		args = append(c.cfg.Wrap(b), args...)
	}
	return c.start(&b.process, args, b.LogPath)
}

// StartMember runs etcd member m (again), its output appended to
// m.LogPath. A restarted member finds its data dir and rejoins.
func (c *Cluster) StartMember(m *Member) error {
	url := func(p int) string { return "http://" + net.JoinHostPort(m.Host, strconv.Itoa(p)) }
	args := []string{c.cfg.Etcd,
		"--name", fmt.Sprintf("etcd-%d", m.ID),
		"--data-dir", m.DataDir,
		"--listen-client-urls", url(m.ClientPort), "--advertise-client-urls", url(m.ClientPort),
		"--listen-peer-urls", url(m.PeerPort), "--initial-advertise-peer-urls", url(m.PeerPort),
		"--initial-cluster", c.initial, "--initial-cluster-state", "new", "--initial-cluster-token", "lab",
		"--log-level", "warn",
	}
	if c.cfg.Wrap != nil {
		b := c.Broker(m.ID)
		args = append(c.cfg.Wrap(b), args...)
	}
	return c.start(&m.process, args, m.LogPath)
}

// start runs args as p (again), its output appended to logPath after a
// line marking the start.
func (c *Cluster) start(p *process, args []string, logPath string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.cmd != nil {
		select {
		case <-p.mu.exited: // it exited by itself; start it again
		default:
			return fmt.Errorf("%s is already running", p.what)
		}
	}
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close() // the child holds its own descriptor
	p.mu.starts++
	fmt.Fprintf(f, "==== %s: start %d of %s at %s\n", c.cfg.Tag, p.mu.starts, p.what, time.Now().UTC().Format(time.RFC3339Nano))
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	exited, err := c.StartProcess(cmd, p.what)
	if err != nil {
		return err
	}
	p.mu.cmd, p.mu.exited = cmd, exited
	return nil
}

// Kill sends SIGKILL to broker b's process group and waits until it is
// gone, returning the time the signal was sent.
func (c *Cluster) Kill(ctx context.Context, b *Broker) (time.Time, error) {
	return b.kill(ctx)
}

// KillMember is Kill for an etcd member.
func (c *Cluster) KillMember(ctx context.Context, m *Member) (time.Time, error) {
	return m.kill(ctx)
}

func (p *process) kill(ctx context.Context) (time.Time, error) {
	p.mu.Lock()
	cmd, exited := p.mu.cmd, p.mu.exited
	p.mu.cmd, p.mu.exited = nil, nil
	p.mu.Unlock()
	if cmd == nil {
		return time.Time{}, fmt.Errorf("%s is not running", p.what)
	}
	at := time.Now()
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return at, fmt.Errorf("kill %s: %w", p.what, err)
	}
	select {
	case <-exited:
		return at, nil
	case <-ctx.Done():
		return at, ctx.Err()
	}
}

// Signal sends sig (SIGSTOP, SIGCONT) to broker b's process group.
func (c *Cluster) Signal(b *Broker, sig syscall.Signal) error {
	b.mu.Lock()
	cmd := b.mu.cmd
	b.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("broker %d is not running", b.ID)
	}
	if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("signal %v to broker %d: %w", sig, b.ID, err)
	}
	return nil
}

// Running reports whether the process is up (it may have exited by
// itself).
func (p *process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.cmd == nil {
		return false
	}
	select {
	case <-p.mu.exited:
		return false
	default:
		return true
	}
}

// KillAll kills every process group still alive (a stopped one too: a
// SIGKILL ends a stopped process) and waits for the brokers, so that
// nothing the harness started outlives it.
func (c *Cluster) KillAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, b := range c.Brokers {
		if b.Running() {
			c.Kill(ctx, b)
		}
	}
	for _, m := range c.Members {
		if m.Running() {
			m.kill(ctx)
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
