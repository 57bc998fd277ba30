package main

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/gregor-io/gregor/broker"
)

// The tests here that touch the environment use t.Setenv and so must not
// run in parallel.

// clearEnv unsets every GREGOR_ variable for the test; t.Setenv restores
// them afterwards.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, envPrefix+"_") {
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
	}
}

// writeConfig writes a config file and returns its path.
func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gregor.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// load parses args as serve's flags and loads the config.
func load(t *testing.T, args ...string) (serveConfig, error) {
	t.Helper()
	l := newConfigLoader()
	l.addListenerFlags(args)
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.AddFlagSet(l.own)
	fs.AddFlagSet(l.topic)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return l.load()
}

func mustLoad(t *testing.T, args ...string) serveConfig {
	t.Helper()
	c, err := load(t, args...)
	if err != nil {
		t.Fatalf("load %q: %v", args, err)
	}
	return c
}

func TestDefaults(t *testing.T) {
	clearEnv(t)
	c := mustLoad(t)
	want := broker.DefaultConfig()
	want.StaticTopicDefaults = map[string]string{"log.flush.interval.messages": "1"}
	if !reflect.DeepEqual(c.broker, want) {
		t.Errorf("config without settings:\n got %+v\nwant %+v", c.broker, want)
	}
	if c.logLevel != slog.LevelInfo || c.logFormat != "text" {
		t.Errorf("logging = %v %s, want INFO text", c.logLevel, c.logFormat)
	}
	if len(c.warnings) != 0 {
		t.Errorf("warnings = %q, want none", c.warnings)
	}
}

func TestPrecedence(t *testing.T) {
	file := writeConfig(t, `
node.id: 5
log.dirs: /file
admin.listener: file:1
log.retention.hours: 5
log.level: warn
`)
	get := func(c serveConfig) []any {
		return []any{c.broker.NodeID, c.broker.LogDirs, c.broker.AdminListener,
			c.broker.StaticTopicDefaults["log.retention.hours"], c.logLevel}
	}
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want []any
	}{
		{name: "file", want: []any{int32(5), []string{"/file"}, "file:1", "5", slog.LevelWarn}},
		{
			name: "env beats file",
			env: map[string]string{"GREGOR_NODE_ID": "6", "GREGOR_LOG_DIRS": "/env",
				"GREGOR_ADMIN_LISTENER": "", "GREGOR_LOG_RETENTION_HOURS": "6"},
			want: []any{int32(6), []string{"/env"}, "", "6", slog.LevelWarn},
		},
		{
			name: "flag beats env",
			env: map[string]string{"GREGOR_NODE_ID": "6", "GREGOR_LOG_DIRS": "/env",
				"GREGOR_ADMIN_LISTENER": "env:1", "GREGOR_LOG_RETENTION_HOURS": "6", "GREGOR_LOG_LEVEL": "error"},
			args: []string{"--node.id=7", "--log.dirs", "/flag", "--admin.listener", "flag:1",
				"--log.retention.hours", "7", "--log.level", "debug"},
			want: []any{int32(7), []string{"/flag"}, "flag:1", "7", slog.LevelDebug},
		},
		{
			name: "flag beats file",
			args: []string{"--node.id", "7", "--admin.listener="},
			want: []any{int32(7), []string{"/file"}, "", "5", slog.LevelWarn},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			c := mustLoad(t, append([]string{"--config", file}, tt.args...)...)
			if got := get(c); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("node.id, log.dirs, admin.listener, log.retention.hours, log.level:\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestLists(t *testing.T) {
	clearEnv(t)
	t.Setenv("GREGOR_ETCD_ENDPOINTS", "http://e1:2379, http://e2:2379")
	file := writeConfig(t, `
listeners:
  - PLAINTEXT://a:9092
  - INTERNAL://b:9093
log.dirs: "/d1, /d2,,/d3"
log.cleanup.policy: [compact, delete]
listener.security.protocol.map: PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT
inter.broker.listener.name: INTERNAL
`)
	c := mustLoad(t, "--config", file, "--advertised.listeners", "PLAINTEXT://x:1,INTERNAL://y:2")
	if c.broker.ListenerSecurityProtocolMap != "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT" || c.broker.InterBrokerListenerName != "INTERNAL" {
		t.Errorf("listener.security.protocol.map = %q, inter.broker.listener.name = %q; want the file's",
			c.broker.ListenerSecurityProtocolMap, c.broker.InterBrokerListenerName)
	}
	for _, tt := range []struct {
		key       string
		got, want []string
	}{
		{"listeners", c.broker.Listeners, []string{"PLAINTEXT://a:9092", "INTERNAL://b:9093"}},
		{"advertised.listeners", c.broker.AdvertisedListeners, []string{"PLAINTEXT://x:1", "INTERNAL://y:2"}},
		{"log.dirs", c.broker.LogDirs, []string{"/d1", "/d2", "/d3"}},
		{"etcd.endpoints", c.broker.EtcdEndpoints, []string{"http://e1:2379", "http://e2:2379"}},
	} {
		if !slices.Equal(tt.got, tt.want) {
			t.Errorf("%s = %q, want %q", tt.key, tt.got, tt.want)
		}
	}
	if got := c.broker.StaticTopicDefaults["log.cleanup.policy"]; got != "compact,delete" {
		t.Errorf("log.cleanup.policy = %q, want %q", got, "compact,delete")
	}

	// An empty etcd.endpoints means the embedded member.
	t.Setenv("GREGOR_ETCD_ENDPOINTS", "")
	if c := mustLoad(t); c.broker.EtcdEndpoints != nil {
		t.Errorf("empty etcd.endpoints = %q, want none", c.broker.EtcdEndpoints)
	}
}

func TestServeOwnKeys(t *testing.T) {
	clearEnv(t)
	file := writeConfig(t, `
broker.rack: r1
etcd.client.addr: 127.0.0.1:0
etcd.peer.addr: 127.0.0.1:0
broker.session.timeout.ms: 12000
num.partitions: 3
default.replication.factor: 2
auto.create.topics.enable: FALSE
message.max.bytes: 2000000
socket.request.max.bytes: 1000000
log.format: json
`)
	c := mustLoad(t, "--config", file)
	want := broker.DefaultConfig()
	want.Rack = "r1"
	want.EtcdClientAddr, want.EtcdPeerAddr = "127.0.0.1:0", "127.0.0.1:0"
	want.SessionTimeout = 12 * time.Second
	want.NumPartitions, want.DefaultReplicationFactor = 3, 2
	want.AutoCreateTopicsEnable = false
	want.MessageMaxBytes, want.SocketRequestMaxBytes = 2000000, 1000000
	// message.max.bytes is a field, not a topic default.
	want.StaticTopicDefaults = map[string]string{"log.flush.interval.messages": "1"}
	if !reflect.DeepEqual(c.broker, want) {
		t.Errorf("config:\n got %+v\nwant %+v", c.broker, want)
	}
	if c.logFormat != "json" {
		t.Errorf("log.format = %q, want json", c.logFormat)
	}
}

func TestTopicDefaults(t *testing.T) {
	clearEnv(t)
	t.Setenv("GREGOR_LOG_ROLL_MS", "3600000")
	file := writeConfig(t, `
log.segment.bytes: 2097152
log.retention.hours: 24
log.retention.bytes: 1073741824
compression.type: zstd
min.insync.replicas: 2
log.message.timestamp.type: LogAppendTime
log.index.interval.bytes: " 8192 "
`)
	c := mustLoad(t, "--config", file, "--log.flush.interval.ms", "1000", "--unclean.leader.election.enable", "true")
	want := map[string]string{
		"log.segment.bytes":              "2097152",
		"log.retention.hours":            "24",
		"log.retention.bytes":            "1073741824",
		"compression.type":               "zstd",
		"min.insync.replicas":            "2",
		"log.message.timestamp.type":     "LogAppendTime",
		"log.index.interval.bytes":       "8192",
		"log.roll.ms":                    "3600000",
		"log.flush.interval.ms":          "1000",
		"unclean.leader.election.enable": "true",
		"log.flush.interval.messages":    "1",
	}
	if !maps.Equal(c.broker.StaticTopicDefaults, want) {
		t.Errorf("StaticTopicDefaults:\n got %v\nwant %v", c.broker.StaticTopicDefaults, want)
	}
	if len(c.warnings) != 0 {
		t.Errorf("warnings = %q, want none", c.warnings)
	}
}

func TestDurableDefault(t *testing.T) {
	const kafka = "9223372036854775807"
	tests := []struct {
		name string
		env  string
		args []string
		want string
	}{
		{name: "unset", want: "1"},
		{name: "flag", args: []string{"--log.flush.interval.messages", kafka}, want: kafka},
		{name: "env", env: "1000", want: "1000"},
		// flush.ms alone does not switch off the per-message fsync.
		{name: "other flush setting", args: []string{"--log.flush.interval.ms", "1000"}, want: "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			if tt.env != "" {
				t.Setenv("GREGOR_LOG_FLUSH_INTERVAL_MESSAGES", tt.env)
			}
			c := mustLoad(t, tt.args...)
			if got := c.broker.StaticTopicDefaults["log.flush.interval.messages"]; got != tt.want {
				t.Errorf("log.flush.interval.messages = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSynonyms checks one setting given under several names: the names
// from the highest source count; within one source all are passed on (the
// broker applies Kafka's order), except for node.id/broker.id and
// log.dirs/log.dir, which are resolved here.
func TestSynonyms(t *testing.T) {
	file := writeConfig(t, `
log.retention.ms: 1000
log.retention.minutes: 2
log.flush.scheduler.interval.ms: 500
broker.id: 3
log.dir: /file-dir
`)
	t.Run("flag beats file under another name", func(t *testing.T) {
		clearEnv(t)
		c := mustLoad(t, "--config", file, "--log.retention.hours", "1", "--log.flush.interval.ms", "200")
		want := map[string]string{
			"log.retention.hours": "1",
			// a fallback of log.flush.interval.ms, not another name of it
			"log.flush.scheduler.interval.ms": "500",
			"log.flush.interval.ms":           "200",
			"log.flush.interval.messages":     "1",
		}
		if !maps.Equal(c.broker.StaticTopicDefaults, want) {
			t.Errorf("StaticTopicDefaults:\n got %v\nwant %v", c.broker.StaticTopicDefaults, want)
		}
		if c.broker.NodeID != 3 || !slices.Equal(c.broker.LogDirs, []string{"/file-dir"}) {
			t.Errorf("node.id, log.dirs = %d %q, want 3 [/file-dir] from broker.id and log.dir", c.broker.NodeID, c.broker.LogDirs)
		}
	})
	t.Run("same source", func(t *testing.T) {
		clearEnv(t)
		c := mustLoad(t, "--config", file, "--log.dirs", "/a", "--log.dir", "/b", "--node.id", "4", "--broker.id", "4")
		if got := c.broker.StaticTopicDefaults; got["log.retention.ms"] != "1000" || got["log.retention.minutes"] != "2" {
			t.Errorf("StaticTopicDefaults = %v, want log.retention.ms and .minutes both", got)
		}
		if c.broker.NodeID != 4 || !slices.Equal(c.broker.LogDirs, []string{"/a"}) {
			t.Errorf("node.id, log.dirs = %d %q, want 4 [/a]", c.broker.NodeID, c.broker.LogDirs)
		}
	})
	t.Run("env alias beats file", func(t *testing.T) {
		clearEnv(t)
		t.Setenv("GREGOR_LOG_DIR", "/env-dir")
		c := mustLoad(t, "--config", writeConfig(t, "log.dirs: /file-dirs\n"))
		if !slices.Equal(c.broker.LogDirs, []string{"/env-dir"}) {
			t.Errorf("log.dirs = %q, want [/env-dir]", c.broker.LogDirs)
		}
	})
}

func TestInvalid(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		file string
		args []string
		want string // in the error
	}{
		{name: "not a number", args: []string{"--node.id", "abc"}, want: `node.id (flag --node.id): invalid value "abc"`},
		{name: "out of range", args: []string{"--num.partitions", "3000000000"}, want: "num.partitions"},
		{name: "short", args: []string{"--default.replication.factor", "40000"}, want: "default.replication.factor"},
		{name: "bool", env: map[string]string{"GREGOR_AUTO_CREATE_TOPICS_ENABLE": "yes"}, want: "GREGOR_AUTO_CREATE_TOPICS_ENABLE"},
		{name: "log level", args: []string{"--log.level", "verbose"}, want: "log.level"},
		{name: "log format", file: "log.format: xml\n", want: "log.format (config file"},
		{name: "session timeout", args: []string{"--broker.session.timeout.ms", "-5"}, want: "broker.session.timeout.ms"},
		{name: "map", file: "num.partitions: {a: 1}\n", want: "num.partitions"},
		{name: "topic default type", env: map[string]string{"GREGOR_LOG_RETENTION_MS": "x"},
			want: "Invalid value x for configuration log.retention.ms: Not a number of type LONG"},
		{name: "topic default range", args: []string{"--log.segment.bytes", "1000"}, want: "log.segment.bytes"},
		{name: "topic default enum", file: "compression.type: brotli\n", want: "compression.type"},
		{name: "node.id and broker.id", args: []string{"--node.id", "1", "--broker.id", "2"}, want: "broker.id"},
		{name: "listener", args: []string{"--listeners", "localhost:9092"}, want: "listener"},
		{name: "no listeners", args: []string{"--listeners", ""}, want: "no listeners"},
		{name: "listener without protocol", args: []string{"--listeners", "INTERNAL://localhost:9092"},
			want: "listener INTERNAL has no security protocol in listener.security.protocol.map"},
		{name: "unknown protocol", args: []string{"--listener.security.protocol.map", "PLAINTEXT:TLS"}, want: `unknown security protocol "TLS"`},
		{name: "ssl listener without a key", args: []string{"--listeners", "SSL://localhost:9093"}, want: "TLS of listener SSL: no key and certificate"},
		{name: "sasl_ssl listener without a key", args: []string{"--listeners", "SASL_SSL://localhost:9093", "--sasl.enabled.mechanisms", "PLAIN"}, want: "TLS of listener SASL_SSL: no key and certificate"},
		{name: "inter-broker listener", args: []string{"--inter.broker.listener.name", "INTERNAL"},
			want: "inter.broker.listener.name INTERNAL is not the name of a listener"},
		{name: "advertised name", args: []string{"--advertised.listeners", "EXTERNAL://x:1"},
			want: "advertised.listeners: EXTERNAL is not the name of a listener"},
		{name: "validate", args: []string{"--num.partitions", "0"}, want: "num.partitions 0 below 1"},
		{name: "missing file", args: []string{"--config", "/nonexistent/gregor.yaml"}, want: "/nonexistent/gregor.yaml"},
		{name: "bad yaml", file: "node.id: [\n", want: "read config file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			args := tt.args
			if tt.file != "" {
				args = append([]string{"--config", writeConfig(t, tt.file)}, args...)
			}
			_, err := load(t, args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("load %q: error %v, want one containing %q", args, err, tt.want)
			}
		})
	}
}

func TestIgnoredKeysWarn(t *testing.T) {
	clearEnv(t)
	t.Setenv("GREGOR_NO_SUCH_THING", "1")
	t.Setenv("GREGOR_NUM_REPLICA_FETCHERS", "1000")
	// Read by the client commands: no warning.
	t.Setenv(bootstrapEnv, "localhost:9092")
	file := writeConfig(t, `
node.id: 2
foo.bar: 1
num.io.threads: 4
log.cleaner.threads: 2
follower.replication.throttled.rate: 1000
`)
	c := mustLoad(t, "--config", file)
	if c.broker.NodeID != 2 {
		t.Errorf("node.id = %d, want 2", c.broker.NodeID)
	}
	want := []string{"foo.bar", "num.io.threads", "GREGOR_NO_SUCH_THING", "GREGOR_NUM_REPLICA_FETCHERS",
		"log.cleaner.threads (config file " + file + ") is a Kafka broker config Gregor does not act on; ignored",
		"follower.replication.throttled.rate (config file " + file + ") can only be set dynamically"}
	all := strings.Join(c.warnings, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("warnings %q do not mention %s", c.warnings, w)
		}
	}
	if len(c.warnings) != len(want) {
		t.Errorf("got %d warnings %q, want %d", len(c.warnings), c.warnings, len(want))
	}
}

func TestReplicationQuotaWindowKeys(t *testing.T) {
	clearEnv(t)
	c := mustLoad(t, "--config", writeConfig(t, "replication.quota.window.num: 5\nreplication.quota.window.size.seconds: 2\n"))
	if c.broker.ReplicationQuotaWindowNum != 5 || c.broker.ReplicationQuotaWindowSize != 2*time.Second || len(c.warnings) != 0 {
		t.Errorf("window num %d size %s, warnings %q; want 5, 2s, none",
			c.broker.ReplicationQuotaWindowNum, c.broker.ReplicationQuotaWindowSize, c.warnings)
	}
}

func TestQuotaWindowKeys(t *testing.T) {
	clearEnv(t)
	c := mustLoad(t, "--config", writeConfig(t, "quota.window.num: 7\nquota.window.size.seconds: 3\n"))
	if c.broker.QuotaWindowNum != 7 || c.broker.QuotaWindowSize != 3*time.Second || len(c.warnings) != 0 {
		t.Errorf("window num %d size %s, warnings %q; want 7, 3s, none",
			c.broker.QuotaWindowNum, c.broker.QuotaWindowSize, c.warnings)
	}
}

func TestNestedYAML(t *testing.T) {
	clearEnv(t)
	c := mustLoad(t, "--config", writeConfig(t, "node:\n  id: 9\nlog:\n  dirs: /nested\n  retention:\n    hours: 3\n"))
	if c.broker.NodeID != 9 || !slices.Equal(c.broker.LogDirs, []string{"/nested"}) ||
		c.broker.StaticTopicDefaults["log.retention.hours"] != "3" {
		t.Errorf("nested keys: node.id %d, log.dirs %q, topic defaults %v", c.broker.NodeID, c.broker.LogDirs, c.broker.StaticTopicDefaults)
	}
}

// fakeServer is a server whose Close blocks until release is closed.
type fakeServer struct {
	startErr error
	started  chan struct{} // closed when Start is called
	block    chan struct{} // Start waits for it, or its ctx, when set
	closing  chan struct{} // closed when Close is called
	release  chan struct{}
}

func newFakeServer() *fakeServer {
	return &fakeServer{started: make(chan struct{}), closing: make(chan struct{}), release: make(chan struct{})}
}

func (f *fakeServer) Start(ctx context.Context) error {
	close(f.started)
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return f.startErr
}

func (f *fakeServer) Close() error {
	close(f.closing)
	<-f.release
	return nil
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestRunSignals(t *testing.T) {
	t.Run("first signal closes", func(t *testing.T) {
		f := newFakeServer()
		close(f.release)
		sigs := make(chan os.Signal, 2)
		sigs <- syscall.SIGTERM
		exit := func(code int) { t.Errorf("exit(%d) after one signal", code) }
		if err := run(t.Context(), f, sigs, discard(), exit, func() {}); err != nil {
			t.Errorf("run: %v, want nil", err)
		}
		select {
		case <-f.closing:
		default:
			t.Error("Close was not called")
		}
	})

	t.Run("second signal exits 1", func(t *testing.T) {
		f := newFakeServer()
		sigs := make(chan os.Signal, 2)
		codes := make(chan int, 1)
		exit := func(code int) {
			codes <- code
			close(f.release) // os.Exit would not return; let the test end
		}
		errc := make(chan error, 1)
		go func() { errc <- run(t.Context(), f, sigs, discard(), exit, func() {}) }()
		sigs <- syscall.SIGINT
		<-f.closing
		sigs <- syscall.SIGINT
		select {
		case code := <-codes:
			if code != 1 {
				t.Errorf("exit code %d, want 1", code)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no exit after a second signal during shutdown")
		}
		<-errc
	})

	t.Run("signal during start", func(t *testing.T) {
		f := newFakeServer()
		f.block = make(chan struct{})
		sigs := make(chan os.Signal, 2)
		errc := make(chan error, 1)
		go func() {
			errc <- run(t.Context(), f, sigs, discard(), func(int) { t.Error("exit called") }, func() { t.Error("started called") })
		}()
		<-f.started
		sigs <- syscall.SIGTERM
		if err := <-errc; err != nil {
			t.Errorf("run: %v, want nil after an interrupted start", err)
		}
		select {
		case <-f.closing:
			t.Error("Close called after a failed Start (which closes what it started)")
		default:
		}
	})

	t.Run("start error", func(t *testing.T) {
		f := newFakeServer()
		f.startErr = errors.New("boom")
		err := run(t.Context(), f, make(chan os.Signal), discard(), func(int) {}, func() { t.Error("started called") })
		if err == nil || !strings.Contains(err.Error(), "boom") {
			t.Errorf("run: %v, want the start error", err)
		}
	})
}

// TestListenerKeys: per-listener settings (listener.name.<l>.<key>) come
// from flags and from the config file, the flag winning, and reach the
// broker's config with the SASL settings.
func TestListenerKeys(t *testing.T) {
	clearEnv(t)
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="a";`
	file := writeConfig(t, "listeners: PLAINTEXT://localhost:9092,SASL_PLAINTEXT://localhost:9093\n"+
		"sasl.enabled.mechanisms: [PLAIN, SCRAM-SHA-512]\n"+
		"listener.name.sasl_plaintext.plain.sasl.jaas.config: 'org.x.PlainLoginModule required user_bob=\"b\";'\n"+
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms: PLAIN\n")
	c := mustLoad(t, "--config", file, "--listener.name.sasl_plaintext.plain.sasl.jaas.config="+jaas,
		"--connections.max.reauth.ms", "60000", "--sasl.server.max.receive.size", "1000",
		"--sasl.oauthbearer.jwks.endpoint.url", "https://idp.example/jwks")
	if got := c.broker.OAuthBearerConfigs["sasl.oauthbearer.jwks.endpoint.url"]; got != "https://idp.example/jwks" {
		t.Errorf("sasl.oauthbearer.jwks.endpoint.url %q", got)
	}
	want := map[string]string{
		"listener.name.sasl_plaintext.plain.sasl.jaas.config":  jaas,
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
	}
	if !reflect.DeepEqual(c.broker.ListenerConfigs, want) {
		t.Errorf("listener configs %v, want %v", c.broker.ListenerConfigs, want)
	}
	if got := strings.Join(c.broker.SASLEnabledMechanisms, ","); got != "PLAIN,SCRAM-SHA-512" {
		t.Errorf("sasl.enabled.mechanisms %s", got)
	}
	if c.broker.ConnectionsMaxReauth != time.Minute || c.broker.SASLServerMaxReceiveSize != 1000 {
		t.Errorf("connections.max.reauth.ms %v, sasl.server.max.receive.size %d", c.broker.ConnectionsMaxReauth, c.broker.SASLServerMaxReceiveSize)
	}
	for _, w := range c.warnings {
		if strings.Contains(w, "listener.name") {
			t.Errorf("warning for a listener key: %s", w)
		}
	}
	if _, err := load(t, "--listeners", "SASL_PLAINTEXT://localhost:9093"); err == nil || !strings.Contains(err.Error(), "GSSAPI") {
		t.Errorf("a SASL listener with Kafka's default mechanism: %v, want an error naming GSSAPI", err)
	}
}
