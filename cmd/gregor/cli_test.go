package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gregor-io/gregor/broker"
)

// The client commands run in-process against an in-process broker, with
// their stdin, stdout and stderr captured. The tests of this file share
// one broker; each uses topics and groups of its own, so they run in
// parallel.

// startBroker starts an in-process single-node broker on free ports with
// its data in a temporary directory, closed when the test ends. The
// functions given change its config.
func startBroker(t *testing.T, configure ...func(*broker.Config)) *broker.Broker {
	t.Helper()
	cfg := broker.DefaultConfig()
	cfg.Listeners = []string{"PLAINTEXT://127.0.0.1:0"}
	cfg.LogDirs = []string{t.TempDir()}
	cfg.AdminListener = ""
	cfg.EtcdClientAddr, cfg.EtcdPeerAddr = "127.0.0.1:0", "127.0.0.1:0"
	// Few offsets partitions are quicker to create; groups need not wait
	// for more members.
	cfg.OffsetsTopicNumPartitions = 3
	cfg.Groups.InitialRebalanceDelay = 0
	for _, f := range configure {
		f(&cfg)
	}
	b, err := broker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close broker: %v", err)
		}
	})
	return b
}

// cli runs gregor commands in-process against one broker.
type cli struct {
	t         *testing.T
	bootstrap string
}

// exec runs `gregor args... -b <broker>` with stdin and returns its
// stdout, stderr and error.
func (c *cli) exec(stdin string, args ...string) (stdout, stderr string, err error) {
	c.t.Helper()
	return execArgs(c.t, stdin, append(args, "-b", c.bootstrap)...)
}

// execArgs runs `gregor args...` with stdin, bounded by a minute.
func execArgs(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := newRootCmd(process{exit: func(code int) { t.Errorf("exit(%d) called", code) }})
	var out, errOut bytes.Buffer
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	err = root.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

// run runs a command that must succeed and returns its stdout.
func (c *cli) run(args ...string) string {
	c.t.Helper()
	return c.runIn("", args...)
}

// runIn runs a command with stdin that must succeed and returns its stdout.
func (c *cli) runIn(stdin string, args ...string) string {
	c.t.Helper()
	out, errOut, err := c.exec(stdin, args...)
	if err != nil {
		c.t.Fatalf("gregor %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// fail runs a command that must fail and returns its stderr and error.
func (c *cli) fail(stdin string, args ...string) (stderr string, err error) {
	c.t.Helper()
	out, errOut, err := c.exec(stdin, args...)
	if err == nil {
		c.t.Fatalf("gregor %s succeeded, want an error\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), out, errOut)
	}
	return errOut, err
}

// runJSON runs a command with --json that must succeed and decodes its
// stdout into v.
func (c *cli) runJSON(v any, args ...string) {
	c.t.Helper()
	out := c.run(append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		c.t.Fatalf("gregor %s --json: %v\nstdout:\n%s", strings.Join(args, " "), err, out)
	}
}

func TestCLI(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	for _, tt := range []struct {
		name string
		fn   func(t *testing.T, c *cli)
	}{
		{"topics", testTopics},
		{"cluster", func(t *testing.T, c *cli) { testCluster(t, c, b) }},
		{"completion", testCompletion},
		{"produce-consume", testProduceConsume},
		{"groups", testGroups},
		{"bench", testBench},
		{"rebalance", testRebalance},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, &cli{t: t, bootstrap: strings.Join(b.Addrs(), ",")})
		})
	}
}

// describedTopic finds topic in `topic describe --json`.
func describeTopic(t *testing.T, c *cli, topic string) topicDescription {
	t.Helper()
	var ds []topicDescription
	c.runJSON(&ds, "topic", "describe", topic)
	if len(ds) != 1 || ds[0].Topic != topic {
		t.Fatalf("topic describe %s --json = %+v, want that topic only", topic, ds)
	}
	return ds[0]
}

// topicConfig returns the value and source of config name in d, or
// false.
func topicConfig(d topicDescription, name string) (value, source string, ok bool) {
	for _, c := range d.Configs {
		if c.Name == name {
			return c.valueString(), c.Source, true
		}
	}
	return "", "", false
}

func listTopics(t *testing.T, c *cli) map[string]topicSummary {
	t.Helper()
	var ts []topicSummary
	c.runJSON(&ts, "topic", "list")
	m := map[string]topicSummary{}
	for _, s := range ts {
		m[s.Topic] = s
	}
	return m
}

func testTopics(t *testing.T, c *cli) {
	const topic = "cli-topics"
	if got, want := c.run("topic", "create", topic, "-p", "2", "-c", "retention.ms=60000"),
		"Created topic cli-topics with 2 partitions, replication factor 1\n"; got != want {
		t.Errorf("topic create = %q, want %q", got, want)
	}
	// A failed create shows the broker's own message beside the code.
	if _, err := c.fail("", "topic", "create", topic); !strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS") ||
		!strings.Contains(err.Error(), "Topic '"+topic+"' already exists.") {
		t.Errorf("creating it again: %v, want TOPIC_ALREADY_EXISTS with the broker's message", err)
	}
	if _, err := c.fail("", "topic", "create", "bad-config", "-c", "retention.ms=abc"); !strings.Contains(err.Error(), "INVALID_CONFIG") ||
		!strings.Contains(err.Error(), "retention.ms") {
		t.Errorf("create with retention.ms=abc: %v, want INVALID_CONFIG with the broker's message naming retention.ms", err)
	}
	if _, err := c.fail("", "topic", "create", "cli-bad", "-c", "retention.ms"); !strings.Contains(err.Error(), "want key=value") {
		t.Errorf("topic create -c retention.ms: %v, want a usage error", err)
	}

	if s, ok := listTopics(t, c)[topic]; !ok || s.Partitions != 2 || s.ReplicationFactor != 1 || s.Internal {
		t.Errorf("topic list --json: %s = %+v (listed: %v), want 2 partitions, replication factor 1", topic, s, ok)
	}
	if out := c.run("topic", "list"); !regexp.MustCompile(`(?m)^TOPIC +PARTITIONS +REPLICATION-FACTOR\n(.*\n)*cli-topics +2 +1\n`).MatchString(out) {
		t.Errorf("topic list does not show %s with 2 partitions:\n%s", topic, out)
	}

	d := describeTopic(t, c, topic)
	if len(d.Partitions) != 2 || d.ReplicationFactor != 1 {
		t.Fatalf("describe: %d partitions, replication factor %d, want 2 and 1", len(d.Partitions), d.ReplicationFactor)
	}
	for i, p := range d.Partitions {
		if p.Partition != int32(i) || p.Leader != 1 || int32s(p.Replicas) != "1" || int32s(p.ISR) != "1" {
			t.Errorf("describe: partition %+v, want partition %d led by broker 1, replicas and ISR [1]", p, i)
		}
	}
	if v, src, ok := topicConfig(d, "retention.ms"); !ok || v != "60000" || src != "DYNAMIC_TOPIC_CONFIG" {
		t.Errorf("describe: retention.ms = %q from %q (shown: %v), want 60000 from DYNAMIC_TOPIC_CONFIG", v, src, ok)
	}
	for _, cfg := range d.Configs {
		if cfg.Source == "DEFAULT_CONFIG" {
			t.Errorf("describe shows default config %s", cfg.Name)
		}
	}
	text := c.run("topic", "describe", topic)
	for _, want := range []string{"Topic: cli-topics", "Partitions: 2", "retention.ms=60000", "PARTITION  LEADER"} {
		if !strings.Contains(text, want) {
			t.Errorf("topic describe does not show %q:\n%s", want, text)
		}
	}

	if got, want := c.run("topic", "alter-config", topic, "--set", "cleanup.policy=compact", "--delete", "retention.ms"),
		"Altered the configs of topic cli-topics\n"; got != want {
		t.Errorf("alter-config = %q, want %q", got, want)
	}
	d = describeTopic(t, c, topic)
	if v, src, ok := topicConfig(d, "cleanup.policy"); !ok || v != "compact" || src != "DYNAMIC_TOPIC_CONFIG" {
		t.Errorf("after alter-config: cleanup.policy = %q from %q (shown: %v), want compact from the topic", v, src, ok)
	}
	if v, _, ok := topicConfig(d, "retention.ms"); ok {
		t.Errorf("after alter-config --delete retention.ms: still shown as %q", v)
	}
	if _, err := c.fail("", "topic", "alter-config", topic); !strings.Contains(err.Error(), "nothing to do") {
		t.Errorf("alter-config without changes: %v", err)
	}

	if got, want := c.run("topic", "add-partitions", topic, "--count", "3"), "Added 3 partitions to topic cli-topics\n"; got != want {
		t.Errorf("add-partitions = %q, want %q", got, want)
	}
	if d := describeTopic(t, c, topic); len(d.Partitions) != 5 {
		t.Errorf("after add-partitions --count 3: %d partitions, want 5", len(d.Partitions))
	}

	if got, want := c.run("topic", "delete", topic), "Deleted topic cli-topics\n"; got != want {
		t.Errorf("topic delete = %q, want %q", got, want)
	}
	if _, ok := listTopics(t, c)[topic]; ok {
		t.Errorf("%s still listed after delete", topic)
	}
	stderr, err := c.fail("", "topic", "delete", topic)
	if !strings.Contains(stderr, "gregor: topic cli-topics: UNKNOWN_TOPIC_OR_PARTITION") || !strings.Contains(err.Error(), "1 of 1 topics failed") {
		t.Errorf("deleting it again: %v, stderr %q; want UNKNOWN_TOPIC_OR_PARTITION", err, stderr)
	}
	if stderr, _ := c.fail("", "topic", "describe", topic); !strings.Contains(stderr, "UNKNOWN_TOPIC_OR_PARTITION") {
		t.Errorf("describing a deleted topic: stderr %q, want UNKNOWN_TOPIC_OR_PARTITION", stderr)
	}
}

func testCluster(t *testing.T, c *cli, b *broker.Broker) {
	var info clusterInfo
	c.runJSON(&info, "cluster", "info")
	if info.ClusterID != b.ClusterID() || info.Controller != 1 || len(info.Brokers) != 1 {
		t.Fatalf("cluster info = %+v, want cluster %s, controller 1, one broker", info, b.ClusterID())
	}
	br := info.Brokers[0]
	if addr := br.Host + ":" + itoa(br.Port); br.ID != 1 || addr != b.Addrs()[0] || br.Configs != nil {
		t.Errorf("broker = %+v, want id 1 at %s, no configs without --configs", br, b.Addrs()[0])
	}
	text := c.run("cluster", "info")
	for _, want := range []string{"Cluster ID: " + b.ClusterID(), "Controller: 1", b.Addrs()[0]} {
		if !strings.Contains(text, want) {
			t.Errorf("cluster info does not show %q:\n%s", want, text)
		}
	}

	c.runJSON(&info, "cluster", "info", "--configs")
	found := false
	for _, cfg := range info.Brokers[0].Configs {
		if cfg.Name == "node.id" {
			found = cfg.valueString() == "1"
		}
	}
	if !found {
		t.Errorf("cluster info --configs: no node.id=1 in %+v", info.Brokers[0].Configs)
	}
	if text := c.run("cluster", "info", "--configs"); !strings.Contains(text, "Configs of broker 1:") {
		t.Errorf("cluster info --configs shows no configs:\n%s", text)
	}
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }

func testCompletion(t *testing.T, c *cli) {
	c.run("topic", "create", "cli-complete-me")
	out, _, err := execArgs(t, "", "__complete", "topic", "describe", "-b", c.bootstrap, "cli-complete")
	if err != nil || !strings.Contains(out, "cli-complete-me\n") {
		t.Errorf("completing a topic name: %v\n%s", err, out)
	}
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		if out, _, err := execArgs(t, "", "completion", shell); err != nil || len(out) < 100 {
			t.Errorf("gregor completion %s: %v, %d bytes", shell, err, len(out))
		}
	}
}

func testProduceConsume(t *testing.T, c *cli) {
	const topic = "cli-records"
	c.run("topic", "create", topic, "-p", "3")

	_, stderr, err := c.exec("k1|v1\nk2|v2\nk3|v3|x\n", "produce", topic,
		"--key-separator", "|", "-H", "trace=abc", "-H", "src=test", "--partition", "1")
	if err != nil {
		t.Fatalf("produce: %v\n%s", err, stderr)
	}
	if want := "Produced 3 records (14 bytes) to topic cli-records, partitions 1\n"; stderr != want {
		t.Errorf("produce summary = %q, want %q", stderr, want)
	}

	format := `{{.Topic}} {{.Partition}}/{{.Offset}} {{.Key}}={{.Value}} [{{range .Headers}}{{.Key}}:{{.Value}};{{end}}] {{.Header "src"}}`
	out := c.run("consume", topic, "--offset", "start", "-n", "3", "--format", format)
	want := `cli-records 1/0 k1=v1 [trace:abc;src:test;] test
cli-records 1/1 k2=v2 [trace:abc;src:test;] test
cli-records 1/2 k3=v3|x [trace:abc;src:test;] test
`
	if out != want {
		t.Errorf("consume --format:\n%s\nwant:\n%s", out, want)
	}
	if got := c.run("consume", topic, "--partitions", "1", "--offset", "1", "-n", "2"); got != "v2\nv3|x\n" {
		t.Errorf("consume --offset 1 = %q, want the values of offsets 1 and 2", got)
	}

	// Stop when idle: nothing comes after a time in the future, and
	// nothing is produced meanwhile.
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	out, stderr, err = c.exec("", "consume", topic, "--timestamp", future, "--timeout", "300ms")
	if err != nil || out != "" || !strings.Contains(stderr, "Consumed 0 records (no record for 300ms)") {
		t.Errorf("consume --timestamp <future> --timeout: %v, stdout %q, stderr %q", err, out, stderr)
	}
	// From a time in the past: all of partition 1.
	out = c.run("consume", topic, "--partitions", "1", "--timestamp", "0", "--timeout", "300ms")
	if out != "v1\nv2\nv3|x\n" {
		t.Errorf("consume --timestamp 0 = %q, want the 3 values", out)
	}

	// --json: one object per line; the last record of partition 1.
	out = c.run("consume", topic, "--partitions", "1", "--offset", "-1", "-n", "1", "--json")
	var r jsonRecord
	if err := json.Unmarshal([]byte(out), &r); err != nil || strings.Count(out, "\n") != 1 {
		t.Fatalf("consume --json = %q: %v", out, err)
	}
	if r.Topic != topic || r.Partition != 1 || r.Offset != 2 || r.Key == nil || *r.Key != "k3" || r.Value == nil || *r.Value != "v3|x" ||
		len(r.Headers) != 2 || r.Headers[0] != (recordHeader{"trace", "abc"}) || r.Timestamp.IsZero() {
		t.Errorf("consume --json = %+v, want offset 2 of partition 1, k3=v3|x with 2 headers", r)
	}

	// A line without the separator is reported, the others are produced,
	// and the exit status says so.
	stderr, err = c.fail("a:1\nno separator\nb:2\n", "produce", topic, "--key-separator", ":", "--partition", "0",
		"--acks", "1", "--compression", "zstd")
	if !strings.Contains(stderr, `gregor: line 2: no key separator ":"`) || !strings.Contains(stderr, "Produced 2 records") ||
		!strings.Contains(err.Error(), "1 of 3 records not produced") {
		t.Errorf("produce with a bad line: %v\n%s", err, stderr)
	}
	if got := c.run("consume", topic, "--partitions", "0", "--offset", "start", "-n", "2", "--format", "{{.Key}}={{.Value}}"); got != "a=1\nb=2\n" {
		t.Errorf("consume of the zstd records = %q", got)
	}
	var sum produceSummary
	c.runJSON(&sum, "produce", topic, "--acks", "0", "--compression", "gzip", "--partition", "2")
	if sum.Records != 0 || sum.Topic != topic {
		t.Errorf("produce of empty stdin --json = %+v, want 0 records", sum)
	}
	out, stderr, err = c.exec("x\ny\n", "produce", topic, "--acks", "0", "--compression", "gzip", "--partition", "2", "--json")
	if err == nil {
		err = json.Unmarshal([]byte(out), &sum)
	}
	if err != nil || sum.Records != 2 || sum.Bytes != 2 || int32s(sum.Partitions) != "2" {
		t.Errorf("produce --json = %q (%+v): %v; stderr %q", out, sum, err, stderr)
	}

	// All of them, from all partitions. (acks=0: the count waits until
	// they are there.)
	out = c.run("consume", topic, "--offset", "start", "-n", "7")
	if got := strings.Fields(out); len(got) != 7 {
		t.Errorf("consume of all partitions: %q, want 7 values", got)
	}

	for _, bad := range [][]string{
		{"--offset", "middle"},
		{"--timestamp", "yesterday"},
		{"--format", "{{.Nope"},
		{"--partitions", "x"},
		{"--group", "g", "--partitions", "0"},
	} {
		if _, err := c.fail("", append([]string{"consume", topic}, bad...)...); err == nil {
			t.Errorf("consume %q succeeded", bad)
		}
	}
	if _, err := c.fail("", "produce", topic, "--acks", "2"); !strings.Contains(err.Error(), "--acks") {
		t.Errorf("produce --acks 2: %v", err)
	}
}

// describeGroup returns `group describe --json` of one group.
func describeGroup(t *testing.T, c *cli, group string) groupDescription {
	t.Helper()
	var ds []groupDescription
	c.runJSON(&ds, "group", "describe", group)
	if len(ds) != 1 || ds[0].Group != group {
		t.Fatalf("group describe %s --json = %+v", group, ds)
	}
	return ds[0]
}

func listGroups(t *testing.T, c *cli) map[string]groupSummary {
	t.Helper()
	var gs []groupSummary
	c.runJSON(&gs, "group", "list")
	m := map[string]groupSummary{}
	for _, g := range gs {
		m[g.Group] = g
	}
	return m
}

func testGroups(t *testing.T, c *cli) {
	const (
		topic = "cli-groups"
		group = "cli-group"
		n     = 5
	)
	c.run("topic", "create", topic, "-p", "2")
	c.runIn("1\n2\n3\n4\n5\n", "produce", topic)

	consumeAll := func() {
		t.Helper()
		out := c.run("consume", topic, "--group", group, "--offset", "start", "-n", "5")
		if got := strings.Fields(out); len(got) != n {
			t.Fatalf("consume --group: %q, want %d records", got, n)
		}
	}
	consumeAll()
	d := describeGroup(t, c, group)
	var committed int64
	for _, o := range d.Offsets {
		if o.Topic == topic && o.Committed > 0 {
			committed += o.Committed
		}
	}
	if d.State != "Empty" || d.TotalLag != 0 || committed != n {
		t.Errorf("after consuming: group %+v, want Empty with lag 0 and %d offsets committed", d, n)
	}
	if g, ok := listGroups(t, c)[group]; !ok || g.State != "Empty" || g.ProtocolType != "consumer" {
		t.Errorf("group list: %s = %+v (listed: %v)", group, g, ok)
	}
	if out := c.run("group", "list"); !regexp.MustCompile(`(?m)^GROUP +STATE +PROTOCOL-TYPE +COORDINATOR\n(.*\n)*cli-group +Empty +consumer +1\n`).MatchString(out) {
		t.Errorf("group list does not show %s:\n%q", group, out)
	}
	text := c.run("group", "describe", group)
	for _, want := range []string{"Group: cli-group  State: Empty", "COMMITTED", "Total lag: 0"} {
		if !strings.Contains(text, want) {
			t.Errorf("group describe does not show %q:\n%s", want, text)
		}
	}

	// A dry run changes nothing.
	var res resetOffsetsResult
	c.runJSON(&res, "group", "reset-offsets", group, "--topic", topic, "--to-earliest")
	if res.Executed || len(res.Offsets) != 2 {
		t.Errorf("reset-offsets dry run = %+v, want 2 partitions, not executed", res)
	}
	for _, o := range res.Offsets {
		if o.New != 0 {
			t.Errorf("reset-offsets --to-earliest: %+v, want new offset 0", o)
		}
	}
	if d := describeGroup(t, c, group); d.TotalLag != 0 {
		t.Errorf("after a dry run the lag is %d, want 0", d.TotalLag)
	}
	_, stderr, err := c.exec("", "group", "reset-offsets", group, "--topic", topic, "--to-earliest")
	if err != nil || !strings.Contains(stderr, "Dry run") {
		t.Errorf("reset-offsets without --execute: %v, stderr %q, want a dry-run note", err, stderr)
	}

	c.run("group", "reset-offsets", group, "--topic", topic, "--to-earliest", "--execute")
	if d := describeGroup(t, c, group); d.TotalLag != n {
		t.Errorf("after reset-offsets --to-earliest --execute the lag is %d, want %d", d.TotalLag, n)
	}
	// The group reads everything again, and is then caught up.
	consumeAll()
	if d := describeGroup(t, c, group); d.TotalLag != 0 {
		t.Errorf("after consuming again the lag is %d, want 0", d.TotalLag)
	}
	// --shift-by moves back from the committed offsets; --to-offset is
	// kept within the log.
	c.runJSON(&res, "group", "reset-offsets", group, "--topic", topic, "--shift-by", "-1", "--execute")
	var shifted int64
	for _, o := range res.Offsets {
		if o.Current > 0 && o.New != o.Current-1 {
			t.Errorf("--shift-by -1: %+v", o)
		}
		shifted += o.Current - o.New
	}
	if d := describeGroup(t, c, group); d.TotalLag != shifted {
		t.Errorf("after --shift-by -1 the lag is %d, want %d", d.TotalLag, shifted)
	}
	c.runJSON(&res, "group", "reset-offsets", group, "--topic", topic+":0", "--to-offset", "1000", "--execute")
	if len(res.Offsets) != 1 || res.Offsets[0].Partition != 0 {
		t.Errorf("--topic %s:0 reset %+v, want partition 0 only", topic, res.Offsets)
	}
	if _, err := c.fail("", "group", "reset-offsets", group, "--topic", topic); err == nil {
		t.Error("reset-offsets without a --to- flag succeeded")
	}

	if got, want := c.run("group", "delete", group), "Deleted group cli-group\n"; got != want {
		t.Errorf("group delete = %q, want %q", got, want)
	}
	if _, ok := listGroups(t, c)[group]; ok {
		t.Errorf("%s still listed after delete", group)
	}
	if stderr, _ := c.fail("", "group", "delete", group); !strings.Contains(stderr, "GROUP_ID_NOT_FOUND") {
		t.Errorf("deleting it again: stderr %q, want GROUP_ID_NOT_FOUND", stderr)
	}
}

func testBench(t *testing.T, c *cli) {
	common := []string{"--topic", "cli-bench", "--partitions", "2", "--record-size", "64", "--progress", "300ms"}
	bench := func(mode string, args ...string) (benchReport, string) {
		t.Helper()
		out, stderr, err := c.exec("", append(append([]string{"bench", mode, "--json"}, common...), args...)...)
		if err != nil {
			t.Fatalf("bench %s: %v\n%s", mode, err, stderr)
		}
		var r benchReport
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("bench %s --json: %v\n%s", mode, err, out)
		}
		if r.Mode != mode || !strings.HasPrefix(r.Topic, "cli-bench") || r.Partitions != 2 || r.Seconds <= 0 {
			t.Errorf("bench %s: report %+v", mode, r)
		}
		return r, stderr
	}
	checkLatency := func(what string, l *latencyReport) {
		t.Helper()
		if l == nil || l.P50 <= 0 || l.P50 > l.P99 || l.P99 > l.P999 || l.P999 > l.Max {
			t.Errorf("%s latency %+v, want 0 < p50 <= p99 <= p99.9 <= max", what, l)
		}
	}

	r, stderr := bench("produce", "--duration", "1s", "--rate", "40")
	p := r.Produce
	if p == nil || p.Records == 0 || p.Records > 40 || p.Errors != 0 || p.Bytes != 64*p.Records || p.RecordsPerSec <= 0 || r.Consume != nil {
		t.Fatalf("bench produce: %+v, want up to 40 records of 64 bytes, no errors", p)
	}
	checkLatency("produce", p.Latency)
	if !strings.Contains(stderr, "s] produce: ") {
		t.Errorf("bench produce printed no progress line:\n%s", stderr)
	}

	r, _ = bench("consume", "--duration", "30s", "--drain")
	if cr := r.Consume; cr == nil || cr.Records != p.Records || cr.Bytes != p.Bytes || cr.Latency != nil || r.Produce != nil {
		t.Errorf("bench consume --drain: %+v, want the %d records produced", cr, p.Records)
	}

	// e2e on a topic it creates: the consumer must wait for its leaders.
	r, _ = bench("e2e", "--topic", "cli-bench-e2e", "--duration", "1s", "--rate", "40", "--producers", "2", "--acks", "1", "--compression", "snappy")
	if r.Produce == nil || r.Consume == nil || r.Produce.Records == 0 || r.Consume.Records != r.Produce.Records {
		t.Fatalf("bench e2e: produce %+v, consume %+v, want the same nonzero counts", r.Produce, r.Consume)
	}
	checkLatency("produce", r.Produce.Latency)
	checkLatency("end-to-end", r.Consume.Latency)

	// At full speed every record is counted and some are timed.
	r, _ = bench("produce", "--topic", "cli-bench-max", "--duration", "300ms")
	if p := r.Produce; p == nil || p.Records < latencySampleEvery || p.Errors != 0 || p.Bytes != 64*p.Records {
		t.Fatalf("bench produce at full speed: %+v, want at least %d records of 64 bytes, no errors", p, latencySampleEvery)
	}
	checkLatency("full-speed produce", r.Produce.Latency)
	// A buffer of 64 records' bytes still carries them all.
	r, _ = bench("produce", "--topic", "cli-bench-max", "--duration", "300ms", "--buffer-bytes", "4096")
	if p := r.Produce; p == nil || p.Records < latencySampleEvery || p.Errors != 0 || p.Bytes != 64*p.Records {
		t.Fatalf("bench produce --buffer-bytes 4096: %+v, want at least %d records of 64 bytes, no errors", p, latencySampleEvery)
	}

	out := c.run(append([]string{"bench", "produce", "--duration", "300ms", "--rate", "20"}, common...)...)
	if !regexp.MustCompile(`RECORDS +ERRORS +RECORDS/S +MiB/S +MEAN\(ms\) +P50\(ms\) +P99\(ms\) +P99.9\(ms\) +MAX\(ms\)\nproduce +\d+ +0 `).MatchString(out) {
		t.Errorf("bench produce table:\n%s", out)
	}
	if _, err := c.fail("", "bench", "produce", "--record-size", "4"); !strings.Contains(err.Error(), "--record-size") {
		t.Errorf("bench --record-size 4: %v", err)
	}
	if _, err := c.fail("", "bench", "produce", "--buffer-bytes", "-1"); !strings.Contains(err.Error(), "--buffer-bytes") {
		t.Errorf("bench --buffer-bytes -1: %v", err)
	}
}
