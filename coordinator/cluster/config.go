package cluster

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// Config says where the cluster metadata lives and how this node talks to
// it. Build one with DefaultConfig and change what differs; Open calls
// Validate.
type Config struct {
	// Endpoints are the client URLs of an external etcd cluster
	// ("http://10.0.0.1:2379", or host:port). Empty means: start an embedded
	// single etcd member in DataDir and use it in-process.
	Endpoints []string

	// DataDir is the node's data directory. The embedded member keeps its
	// data in DataDir/etcd; etcd's own log (see EtcdLogFile) goes to
	// DataDir/etcd.log. Required when Endpoints is empty.
	DataDir string

	// ClientListenAddr and PeerListenAddr are the host:port the embedded
	// member listens on for clients and for peers. Port 0 picks a free port;
	// ClientURLs then reports the one picked. Unused with Endpoints.
	ClientListenAddr string
	PeerListenAddr   string

	// InitialCluster, with Endpoints empty, makes the embedded member one
	// of a multi-member etcd cluster embedded in several brokers, in etcd's
	// initial-cluster form: "gregor-1=http://10.0.0.1:2380,gregor-2=...".
	// Each member is named gregor-<node id>; this node's entry must name
	// the peer address it listens on (PeerListenAddr, a fixed port), or,
	// when PeerListenAddr's host is unspecified (0.0.0.0:2380, [::]:2380,
	// :2380), a host name or address at the same port: the member listens
	// on every interface and its peers reach it at that name (a pod's or
	// container's DNS name, whose address is not known beforehand; etcd
	// listens on IP addresses only). Its client URL is then advertised at
	// the same host, on ClientListenAddr's port, when ClientListenAddr's
	// host is unspecified too. The
	// members form the cluster once a majority of them have started, and
	// the list is read only then: a member that has its data ignores it.
	// Empty: a single member of its own.
	InitialCluster string

	// Prefix is prepended to every key this package reads or writes, so
	// that several Gregor clusters (or other users) can share one etcd. It
	// starts with "/" and does not end with one.
	Prefix string

	// NodeID is this broker's node.id. It names the embedded member
	// ("gregor-<id>") and must match the BrokerInfo given to Register.
	NodeID int32

	// SessionTTL is the TTL of the lease that holds the broker
	// registration: a broker that stops sending keep-alives disappears from
	// the cluster this long after its last one (Kafka's
	// broker.session.timeout.ms). Whole seconds (rounded up), at least 1 s;
	// etcd raises very short TTLs to its own minimum (about 2 s).
	SessionTTL time.Duration

	// DialTimeout bounds connecting the etcd client.
	DialTimeout time.Duration

	// RequestTimeout bounds each etcd request, and the wait of a write
	// until the metadata cache shows it.
	RequestTimeout time.Duration

	// StartTimeout bounds how long Open waits for the embedded member to
	// become ready (to elect itself leader after replaying its WAL).
	StartTimeout time.Duration

	// StopTimeout bounds how long Close (or a failed Open) waits for the
	// embedded member to stop; a member that cannot write its files may
	// never finish, and is then left behind.
	StopTimeout time.Duration

	// EtcdLogLevel is the level of etcd's own (zap) logs, from the embedded
	// server and the client: debug, info, warn, error, panic or fatal.
	// Gregor's own logs go to the slog.Logger given to Open.
	EtcdLogLevel string

	// EtcdLogFile is where etcd's own logs go, as JSON lines: a file path,
	// "stderr" or "stdout". Empty means DataDir/etcd.log, or stderr when
	// DataDir is empty.
	EtcdLogFile string

	// ExpectClusterID, when set, is the cluster id the node's log dirs are
	// stamped with: Open then refuses (ErrRegistryLost) a registry that
	// holds no cluster id instead of starting a new cluster in it, and
	// the id it finds is the caller's to compare.
	ExpectClusterID string

	// LeaderRebalanceInterval is how often the controller gives
	// partitions back to their preferred leaders (Kafka's
	// auto.leader.rebalance.enable and
	// leader.imbalance.check.interval.seconds). Zero: never.
	LeaderRebalanceInterval time.Duration

	// UncleanLeaderElection is the default of
	// unclean.leader.election.enable for topics that do not set it and
	// when no cluster-wide dynamic default is set (the controller's own
	// setting, as in Kafka).
	UncleanLeaderElection bool

	// Observer receives etcd request timings and the registration
	// session's state, for metrics. Nil means none.
	Observer Observer
}

// DefaultConfig returns an embedded single-member setup on etcd's usual
// ports, with Kafka-like session timing. DataDir and NodeID are left for the
// caller.
func DefaultConfig() Config {
	return Config{
		ClientListenAddr: "127.0.0.1:2379",
		PeerListenAddr:   "127.0.0.1:2380",
		Prefix:           "/gregor",
		SessionTTL:       10 * time.Second,
		DialTimeout:      5 * time.Second,
		RequestTimeout:   5 * time.Second,
		StartTimeout:     30 * time.Second,
		StopTimeout:      15 * time.Second,
		EtcdLogLevel:     "error",

		LeaderRebalanceInterval: 300 * time.Second,
	}
}

// Validate reports every problem it finds, joined.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("cluster config: "+format, args...))
	}
	if len(c.Endpoints) == 0 {
		if c.DataDir == "" {
			bad("data dir is required for the embedded etcd member (no endpoints given)")
		}
		if _, _, err := net.SplitHostPort(c.ClientListenAddr); err != nil {
			bad("embedded client listen address %q: %v", c.ClientListenAddr, err)
		}
		if _, _, err := net.SplitHostPort(c.PeerListenAddr); err != nil {
			bad("embedded peer listen address %q: %v", c.PeerListenAddr, err)
		}
		if c.InitialCluster != "" {
			if err := c.checkInitialCluster(); err != nil {
				bad("%v", err)
			}
		}
	} else if c.InitialCluster != "" {
		bad("an initial etcd cluster (%q) is for embedded members; with etcd endpoints give none", c.InitialCluster)
	}
	for _, ep := range c.Endpoints {
		if strings.TrimSpace(ep) == "" {
			bad("empty etcd endpoint")
		}
	}
	if !strings.HasPrefix(c.Prefix, "/") || len(c.Prefix) < 2 || strings.HasSuffix(c.Prefix, "/") {
		bad("prefix %q must start with / and not end with one", c.Prefix)
	}
	if c.NodeID < 0 {
		bad("node id %d is negative", c.NodeID)
	}
	if c.SessionTTL < time.Second {
		bad("session ttl %s is under 1s", c.SessionTTL)
	}
	if c.DialTimeout <= 0 {
		bad("dial timeout %s must be positive", c.DialTimeout)
	}
	if c.RequestTimeout <= 0 {
		bad("request timeout %s must be positive", c.RequestTimeout)
	}
	if c.StartTimeout <= 0 && len(c.Endpoints) == 0 {
		bad("start timeout %s must be positive", c.StartTimeout)
	}
	if c.StopTimeout <= 0 && len(c.Endpoints) == 0 {
		bad("stop timeout %s must be positive", c.StopTimeout)
	}
	if c.LeaderRebalanceInterval < 0 {
		bad("leader rebalance interval %s is negative", c.LeaderRebalanceInterval)
	}
	switch c.EtcdLogLevel {
	case "debug", "info", "warn", "error", "panic", "fatal":
	default:
		bad("etcd log level %q is not one of debug, info, warn, error, panic, fatal", c.EtcdLogLevel)
	}
	return errors.Join(errs...)
}

// ttlSeconds is SessionTTL in whole seconds, rounded up, as etcd leases take.
func (c Config) ttlSeconds() int64 {
	return int64((c.SessionTTL + time.Second - 1) / time.Second)
}

// memberName is the embedded member's etcd name.
func (c Config) memberName() string { return fmt.Sprintf("gregor-%d", c.NodeID) }

// checkInitialCluster checks InitialCluster's form and that it names this
// node's member at the peer address it listens on.
func (c Config) checkInitialCluster() error {
	mine := ""
	for _, entry := range strings.Split(c.InitialCluster, ",") {
		name, peer, ok := strings.Cut(strings.TrimSpace(entry), "=")
		if !ok || name == "" || peer == "" {
			return fmt.Errorf("initial etcd cluster entry %q is not name=peer-url", entry)
		}
		u, err := url.Parse(peer)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return fmt.Errorf("initial etcd cluster entry %q: the peer url is not http://host:port", entry)
		}
		if name == c.memberName() {
			if mine != "" {
				return fmt.Errorf("initial etcd cluster names %s twice", name)
			}
			mine = u.Host
		}
	}
	switch {
	case mine == "":
		return fmt.Errorf("initial etcd cluster %q has no member %s for node %d; a broker that is not an etcd member takes etcd endpoints instead",
			c.InitialCluster, c.memberName(), c.NodeID)
	case mine != c.PeerListenAddr && !advertisable(c.PeerListenAddr, mine):
		return fmt.Errorf("initial etcd cluster gives %s the peer address %s, but it listens on %s", c.memberName(), mine, c.PeerListenAddr)
	}
	return nil
}

// advertisable reports whether a member listening on listen can be
// reached at peer: listen's host is unspecified (every interface) and the
// ports are the same.
func advertisable(listen, peer string) bool {
	lh, lp, err := net.SplitHostPort(listen)
	if err != nil || !unspecifiedHost(lh) {
		return false
	}
	_, pp, err := net.SplitHostPort(peer)
	return err == nil && pp == lp && lp != "0"
}

// unspecifiedHost reports whether host, of a listen address, means every
// interface.
func unspecifiedHost(host string) bool {
	if host == "" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

// advertisedURLs returns the peer and client URLs the embedded member
// advertises: the addresses it listens on, or, when it listens on every
// interface for peers and the initial cluster names it elsewhere, that
// name (see InitialCluster), for peers and, when the client listen
// address is unspecified too, for clients.
func (c Config) advertisedURLs() (peer, client url.URL) {
	peer = url.URL{Scheme: "http", Host: c.PeerListenAddr}
	client = url.URL{Scheme: "http", Host: c.ClientListenAddr}
	if c.InitialCluster == "" {
		return peer, client
	}
	for _, entry := range strings.Split(c.InitialCluster, ",") {
		name, raw, _ := strings.Cut(strings.TrimSpace(entry), "=")
		if name != c.memberName() {
			continue
		}
		u, err := url.Parse(raw)
		if err != nil || u.Host == c.PeerListenAddr || !advertisable(c.PeerListenAddr, u.Host) {
			return peer, client
		}
		peer = *u
		if ch, cp, err := net.SplitHostPort(c.ClientListenAddr); err == nil && unspecifiedHost(ch) && cp != "0" {
			client.Host = net.JoinHostPort(u.Hostname(), cp)
		}
		return peer, client
	}
	return peer, client
}
