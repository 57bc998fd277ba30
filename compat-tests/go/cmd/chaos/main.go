// Command chaos is the fault harness behind `make chaos` (run through
// compat-tests/chaos/run.sh, which says how to run it): three `gregor
// serve` processes under a real workload while a nemesis at a time
// crashes, pauses, cuts off or slows them, each fault held for a bounded
// time and then healed, round robin over the nemeses chosen (-nemeses).
//
// Each broker runs in a network namespace of its own, joined to the
// harness by a bridge (see network), so that network faults are real
// dropped packets. Where namespaces cannot be made (not root), it says so
// and runs the brokers on 127.0.0.1 with the process nemeses only.
//
// The workload: idempotent acks=all writers (franz-go here, kafka-clients
// in a JVM with -java-classpath) sending unique values to a topic of
// replication factor 3 and min.insync.replicas=2, every acknowledgement
// logged (acks.log); a consumer group member reading throughout and
// committing after each poll, every record read and every committed offset
// seen logged (consumer.log). A cycle is: wait until every partition has a
// leader, inject, hold, heal, wait (at most -heal-timeout) until every
// broker is back in every ISR. Its unavailability is the longest time one
// partition went without an acknowledged write from the injection to that
// point (and, beside it, the longest time the whole topic did).
//
// At the end the writers stop, the log is read back and checked (package
// lab): acknowledged records lost, misplaced, duplicated or reordered,
// records the consumer read that are gone, committed offsets going back.
// The run's results go to -dir/results.json (and a copy into -results);
// the exit status is 1 when the checker or a finding fails the run, 2
// when the harness could not run. With -summarize it instead writes the
// table of all results files of a directory into a README.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gregor-io/gregor/compat-tests/go/internal/lab"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	topic = "chaos"
	group = "chaos-readers"
)

type options struct {
	gregor, dir, java, classpath, results string
	target, kafkaLibs                     string
	network                               string
	nemeses                               []nemesis
	duration                              time.Duration
	cycles                                int
	partitions                            int32
	rate                                  int
	seed                                  uint64
	sessionTimeout, faultTime             time.Duration
	healTimeout                           time.Duration
	tmpfsSize                             int64
	// build names the build tags of a deliberately broken broker;
	// expectLoss inverts the verdict: the run passes only if the checker
	// finds acknowledged records lost.
	build      string
	expectLoss bool
	// etcd, when set, is an etcd binary: three etcd members run as
	// processes of their own and the brokers use them (etcd.endpoints).
	etcd string
	// lazyfs is the lazyfs binary the drop-unsynced nemesis mounts the
	// data dirs with.
	lazyfs string
}

func main() {
	var o options
	var partitions int
	var names, summarize, readme string
	flag.StringVar(&o.gregor, "gregor", "bin/gregor", "the gregor binary")
	flag.StringVar(&o.target, "target", "gregor", "gregor, or kafka: three Apache Kafka nodes from -kafka-libs (network namespaces only)")
	flag.StringVar(&o.kafkaLibs, "kafka-libs", "", "with -target kafka: the Kafka server jars (compat-tests/kafka/kafka.sh fetch prints the dir)")
	flag.StringVar(&o.dir, "dir", "", "run dir: brokers' data and logs, acks.log, consumer.log, results.json (required)")
	flag.StringVar(&o.results, "results", "", "directory to copy results.json into, as <start time>.json")
	flag.StringVar(&o.java, "java", "java", "the java command")
	flag.StringVar(&o.classpath, "java-classpath", "", "class path holding FailoverWriter and kafka-clients; empty: no Java writer")
	flag.StringVar(&o.network, "network", "auto", "netns (fail without namespaces), loopback (process nemeses only) or auto (netns where it can)")
	flag.StringVar(&names, "nemeses", "all", "comma-separated nemeses to go round, or all")
	flag.DurationVar(&o.duration, "duration", 10*time.Minute, "run cycles until this much time has passed (and at least one of each nemesis)")
	flag.IntVar(&o.cycles, "cycles", 0, "run exactly this many cycles instead (0: by -duration)")
	flag.IntVar(&partitions, "partitions", 6, "partitions of the topic")
	flag.IntVar(&o.rate, "rate", 200, "records per second of each writer")
	flag.Uint64Var(&o.seed, "seed", 0, "seed of the victims' choice (0: from the clock)")
	flag.DurationVar(&o.sessionTimeout, "session-timeout", 4*time.Second, "brokers' broker.session.timeout.ms")
	flag.DurationVar(&o.faultTime, "fault-time", 8*time.Second, "how long each fault is held")
	flag.DurationVar(&o.healTimeout, "heal-timeout", 90*time.Second, "longest wait after a heal for every broker to be back in every ISR")
	flag.Int64Var(&o.tmpfsSize, "tmpfs-size", 1<<30, "with disk-full: size in bytes of the tmpfs each broker's data dir gets")
	flag.StringVar(&o.build, "build", "", "build tags the broker binary was built with (recorded in the results; chaos_unsafe_hw for make chaos-broken)")
	flag.BoolVar(&o.expectLoss, "expect-loss", false, "pass only if the checker finds acknowledged records lost (a deliberately broken broker)")
	flag.StringVar(&o.etcd, "etcd", "", "an etcd binary: run three etcd members as processes of their own beside the brokers (enables kill-etcd)")
	flag.StringVar(&o.lazyfs, "lazyfs", "", "the lazyfs binary (compat-tests/go/cmd/lazyfs): enables drop-unsynced")
	flag.StringVar(&summarize, "summarize", "", "instead of a run: summarize the results files of this directory")
	flag.StringVar(&readme, "readme", "", "with -summarize: the README whose summary section to rewrite (default: print)")
	flag.Parse()
	if summarize != "" {
		if err := writeSummary(summarize, readme); err != nil {
			fmt.Fprintf(os.Stderr, "chaos: %v\n", err)
			os.Exit(2)
		}
		return
	}
	o.partitions = int32(partitions)
	for _, n := range nemeses {
		if names == "all" || strings.Contains(","+names+",", ","+n.name+",") {
			o.nemeses = append(o.nemeses, n)
		}
	}
	if names != "all" && len(o.nemeses) != len(strings.Split(names, ",")) {
		fmt.Fprintf(os.Stderr, "chaos: unknown nemesis in %q; known: %s\n", names, nemesisNames(nemeses))
		os.Exit(2)
	}
	if (o.target != "gregor" && o.target != "kafka") || (o.target == "kafka" && o.kafkaLibs == "") {
		fmt.Fprintln(os.Stderr, "chaos: -target is gregor or kafka; kafka needs -kafka-libs")
		os.Exit(2)
	}
	if o.dir == "" || len(o.nemeses) == 0 || o.partitions < 1 || o.rate < 1 {
		flag.Usage()
		os.Exit(2)
	}
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	failed, err := run(ctx, o)
	stop()
	switch {
	case err != nil:
		fmt.Fprintf(os.Stderr, "chaos: %v\n", err)
		os.Exit(2)
	case failed:
		os.Exit(1)
	}
}

func nemesisNames(ns []nemesis) string {
	var s []string
	for _, n := range ns {
		s = append(s, n.name)
	}
	return strings.Join(s, ",")
}

// harness is one run.
type harness struct {
	o    options
	c    *lab.Cluster
	net  *network // nil in loopback mode
	adm  *kadm.Client
	acks *lab.AckLog
	rng  *rand.Rand
	// hold is how long the current fault is held, when a nemesis asks
	// for longer than the fault time.
	hold time.Duration
	// until, set by a nemesis for the current fault, holds it past its
	// time until it is done (at most untilLimit more).
	until    *holdUntil
	cl       *kgo.Client
	findings []string
	// disks are the brokers' file systems, by broker index: the data
	// dirs, or the backing dirs of their lazyfs mounts (lazy).
	disks []string
	lazy  []*lazyMount
}

func (h *harness) logf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	fmt.Printf("chaos: %s %s\n", time.Now().Format("15:04:05.000"), msg)
	if h.acks != nil {
		h.acks.Note("%s", msg)
	}
}

func (h *harness) finding(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	h.findings = append(h.findings, msg)
	h.logf("FINDING: %s", msg)
}

// cycleResult is what one fault cycle did and measured; times in ms.
type cycleResult struct {
	N       int    `json:"n"`
	Nemesis string `json:"nemesis"`
	Detail  string `json:"detail"`
	StartMS int64  `json:"start_ms"` // since the run's start
	HeldMS  int64  `json:"held_ms"`
	// RecoveredMS is from the injection until every broker was back in
	// every ISR after the heal; Recovered false when that did not happen
	// within the heal timeout.
	RecoveredMS int64 `json:"recovered_ms"`
	Recovered   bool  `json:"recovered"`
	// UnavailMS is the longest time one partition (UnavailPartition)
	// went without an acknowledged write, from the injection to the
	// recovery (or the heal timeout); UnavailAnyMS the longest time the
	// whole topic did.
	UnavailMS        int64 `json:"unavail_ms"`
	UnavailPartition int32 `json:"unavail_partition"`
	UnavailAnyMS     int64 `json:"unavail_any_ms"`
}

// results is a run's results file.
type results struct {
	Target         string        `json:"target"`
	Build          string        `json:"build,omitempty"`
	Started        time.Time     `json:"started"`
	Seconds        int64         `json:"seconds"`
	Network        string        `json:"network"`
	Etcd           string        `json:"etcd,omitempty"` // "external" with -etcd
	Seed           uint64        `json:"seed"`
	Partitions     int32         `json:"partitions"`
	Rate           int           `json:"rate_per_writer"`
	Writers        []string      `json:"writers"`
	SessionTimeout int64         `json:"session_timeout_ms"`
	FaultTime      int64         `json:"fault_ms"`
	Nemeses        []string      `json:"nemeses"`
	Skipped        []string      `json:"skipped,omitempty"`
	Cycles         []cycleResult `json:"cycles"`
	Counts         struct {
		Acked            int `json:"acked"`
		Read             int `json:"read_back"`
		Lost             int `json:"lost"`
		Misplaced        int `json:"misplaced"`
		Duplicated       int `json:"duplicated"`
		Reordered        int `json:"reordered"`
		Foreign          int `json:"foreign"`
		UnackedStored    int `json:"unacked_stored"`
		Consumed         int `json:"consumed"`
		Vanished         int `json:"vanished"`
		VanishedUnacked  int `json:"vanished_unacked"`
		Moved            int `json:"moved"`
		Commits          int `json:"commits_seen"`
		CommitsBackwards int `json:"commits_backwards"`
		GaveUp           int `json:"sends_given_up"`
		// The register workload on a compacted topic (register.go).
		RegisterAcked      int `json:"register_acked"`
		RegisterSuperseded int `json:"register_superseded"`
		RegisterLost       int `json:"register_lost"`
		RegisterDuplicated int `json:"register_duplicated"`
		RegisterGaveUp     int `json:"register_gave_up"`
	} `json:"counts"`
	Problems []string `json:"problems,omitempty"`
	Findings []string `json:"findings,omitempty"`
	Pass     bool     `json:"pass"`
	RunDir   string   `json:"run_dir"`
}

// namespacesWork reports whether this process may create network
// namespaces, and why not.
func namespacesWork() error {
	if os.Geteuid() != 0 {
		return errors.New("not root")
	}
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s (iproute2) not installed", tool)
		}
	}
	name := fmt.Sprintf("gch%xn0", os.Getpid())
	if err := sh("ip", "netns", "add", name); err != nil {
		return err
	}
	return sh("ip", "netns", "del", name)
}

func run(ctx context.Context, o options) (failed bool, err error) {
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return false, err
	}
	res := &results{Target: o.target, Build: o.build, Started: time.Now().UTC(), Seed: o.seed, Partitions: o.partitions, Rate: o.rate,
		SessionTimeout: o.sessionTimeout.Milliseconds(), FaultTime: o.faultTime.Milliseconds(), RunDir: dir}
	h := &harness{o: o, rng: rand.New(rand.NewPCG(o.seed, o.seed^0x9e3779b97f4a7c15))}
	cfg := lab.Config{Bin: o.gregor, Dir: dir, N: 3, SessionTimeout: o.sessionTimeout, Tag: "chaos harness",
		// A paused or cut-off follower leaves the ISR within the fault
		// time, not after Kafka's 30 s.
		Args: []string{"--replica.lag.time.max.ms", "5000"}}
	res.Network = "loopback"
	if o.network != "loopback" {
		removeLeftovers(h.logf)
		nsErr := namespacesWork()
		switch {
		case nsErr == nil:
			if h.net, err = newNetwork(3); err != nil {
				return false, fmt.Errorf("network namespaces: %w", err)
			}
			defer h.net.close()
			res.Network = "netns"
			cfg.Hosts = h.net.brokers
			cfg.Wrap = func(b *lab.Broker) []string { return []string{"ip", "netns", "exec", h.net.ns[b.ID-1]} }
			h.logf("network: bridge %s (harness at %s), namespaces %v with brokers at %v; slow links by %s",
				h.net.bridge, h.net.client, h.net.ns, h.net.brokers, map[bool]string{true: "netem", false: "htb rate limits (no netem in this kernel)"}[h.net.netem])
		case o.network == "netns":
			return false, fmt.Errorf("network namespaces cannot be made: %w", nsErr)
		default:
			h.logf("network namespaces cannot be made (%v): brokers on 127.0.0.1, network nemeses skipped", nsErr)
		}
	}
	if o.etcd != "" {
		if o.target != "gregor" {
			return false, errors.New("-etcd runs Gregor brokers on external etcd members; not with -target kafka")
		}
		cfg.Etcd, res.Etcd = o.etcd, "external"
	}
	var enabled []nemesis
	fuseErr := fuseWorks(o.lazyfs)
	for _, n := range o.nemeses {
		if n.fuse && fuseErr != nil {
			h.logf("SKIPPED %s: its file system cannot be mounted (%v)", n.name, fuseErr)
			res.Skipped = append(res.Skipped, n.name)
			continue
		}
		if n.etcd && o.etcd == "" {
			h.logf("SKIPPED %s: the brokers embed their etcd members (CHAOS_ETCD=external runs them apart)", n.name)
			res.Skipped = append(res.Skipped, n.name)
			continue
		}
		if (n.network || n.mounts) && h.net == nil {
			res.Skipped = append(res.Skipped, n.name)
			continue
		}
		enabled = append(enabled, n)
		res.Nemeses = append(res.Nemeses, n.name)
	}
	if len(res.Skipped) > 0 {
		h.logf("SKIPPED (not root or no network namespaces): %s", strings.Join(res.Skipped, ", "))
	}
	if len(enabled) == 0 {
		return false, errors.New("no nemesis left to run")
	}
	// The Kafka nodes' command is known once the cluster has laid out
	// their addresses and dirs.
	var kafkaCommand func(b *lab.Broker) []string
	if o.target == "kafka" {
		if h.net == nil {
			return false, errors.New("the Kafka target runs in network namespaces only")
		}
		cfg.Command = func(b *lab.Broker) []string { return kafkaCommand(b) }
	}
	c, err := lab.NewCluster(cfg)
	if err != nil {
		return false, err
	}
	var mounted []string
	passed := false
	// Processes go before the namespaces they run in and the file
	// systems they write to (defers run last first); the lazyfs mounts
	// (whose processes KillAll ends) before the tmpfs mounts under them.
	defer func() {
		c.KillAll()
		h.unmountLazy()
		unmount(mounted, !passed)
	}()
	h.c = c
	// Each broker's disk: its data dir, or with a lazyfs the backing dir
	// under it.
	lazy := false
	for _, b := range c.Brokers {
		h.disks = append(h.disks, b.DataDir)
	}
	for _, n := range enabled {
		if n.fuse {
			lazy = true
			for i, b := range c.Brokers {
				h.disks[i] = b.DataDir + ".backing"
				if err := os.MkdirAll(h.disks[i], 0o755); err != nil {
					return false, err
				}
			}
		}
	}
	for _, n := range enabled {
		if n.mounts {
			if mounted, err = mountDataDirs(h.disks, o.tmpfsSize); err != nil {
				return false, err
			}
			h.logf("data dirs on tmpfs mounts of %d MiB each (for disk-full)", o.tmpfsSize>>20)
			break
		}
	}
	if lazy {
		if err := h.mountLazy(ctx, h.disks); err != nil {
			return false, err
		}
		h.logf("data dirs on lazyfs mounts over %v (for drop-unsynced: a power cut drops what a broker did not fsync)", h.disks)
	}
	// Kafka's configuration and formatted log dir go into the data dirs,
	// on the tmpfs when there is one.
	if o.target == "kafka" {
		if kafkaCommand, err = setupKafka(c, o.kafkaLibs, o.java, o); err != nil {
			return false, err
		}
	}
	h.logf("seed %d; brokers on %s; nemeses %s; data and logs in %s", o.seed, strings.Join(c.Seeds(), ","), nemesisNames(enabled), dir)
	for _, m := range c.Members {
		if err := c.StartMember(m); err != nil {
			return false, err
		}
	}
	if len(c.Members) > 0 {
		h.logf("etcd members of their own at %v", func() (u []string) {
			for _, m := range c.Members {
				u = append(u, m.ClientURL())
			}
			return u
		}())
	}
	for _, b := range c.Brokers {
		if err := c.Start(b); err != nil {
			return false, err
		}
	}
	adminCl, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		return false, err
	}
	defer adminCl.Close()
	h.cl = adminCl
	h.adm = kadm.NewClient(adminCl)
	if !lab.Poll(ctx, 2*time.Minute, 200*time.Millisecond, func() bool {
		v, _ := lab.Metadata(ctx, h.adm, topic)
		return len(v.Brokers) == len(c.Brokers)
	}) {
		return false, fmt.Errorf("the three brokers did not all register within 2m (see %s/broker-*.log)", dir)
	}
	var createErr error
	if !lab.Poll(ctx, time.Minute, 500*time.Millisecond, func() bool {
		r, err := h.adm.CreateTopic(ctx, o.partitions, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
		if err == nil {
			err = r.Err
		}
		createErr = err
		return err == nil
	}) {
		return false, fmt.Errorf("create topic %s: %w", topic, createErr)
	}
	if !lab.Poll(ctx, time.Minute, 500*time.Millisecond, func() bool {
		r, err := h.adm.CreateTopic(ctx, registerPartitions, 3, registerConfigs(), registerTopic)
		if err == nil {
			err = r.Err
		}
		createErr = err
		return err == nil
	}) {
		return false, fmt.Errorf("create topic %s: %w", registerTopic, createErr)
	}
	if !lab.Poll(ctx, 2*time.Minute, 200*time.Millisecond, func() bool { return h.fullISR(ctx) }) {
		return false, errors.New("the topic's partitions did not all get three in-sync replicas within 2m")
	}
	if h.acks, err = lab.NewAckLog(filepath.Join(dir, "acks.log")); err != nil {
		return false, err
	}
	defer h.acks.Close()
	kw, err := lab.StartKgoWriter(c.Seeds(), topic, o.partitions, o.rate, h.acks)
	if err != nil {
		return false, err
	}
	writers := []lab.Writer{kw}
	var jw *lab.JavaWriter
	if o.classpath != "" {
		if jw, err = lab.StartJavaWriter(c, o.java, o.classpath, filepath.Join(dir, "java-writer.log"), topic, o.partitions, o.rate, h.acks); err != nil {
			kw.Stop(ctx)
			return false, err
		}
		writers = append(writers, jw)
	}
	for _, w := range writers {
		res.Writers = append(res.Writers, w.Name())
	}
	reg, err := startRegisterWriter(c.Seeds(), o.rate, filepath.Join(dir, "registers.log"))
	if err != nil {
		return false, err
	}
	regOn := true
	var regAcks []regAck
	var regFailed []string
	stopRegister := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		sent, acks, failed, err := reg.stop(sctx)
		if err != nil {
			h.finding("%v", err)
		}
		regOn, regAcks, regFailed = false, acks, failed
		h.logf("register writer stopped after %d writes, %d acknowledged", sent, len(acks))
	}
	defer func() {
		if regOn {
			stopRegister()
		}
	}()
	stopWriters := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		for _, w := range writers {
			sent, err := w.Stop(sctx)
			if err != nil {
				h.finding("%v", err)
			}
			h.logf("writer %s stopped after sending %d records", w.Name(), sent)
		}
		writers = nil
	}
	defer func() {
		if writers != nil {
			stopWriters()
		}
	}()
	rd, err := startReader(c.Seeds(), topic, group, filepath.Join(dir, "consumer.log"))
	if err != nil {
		return false, err
	}
	readerOn := true
	defer func() {
		if readerOn {
			rd.stop()
		}
	}()
	if !lab.Poll(ctx, 2*time.Minute, 200*time.Millisecond, func() bool {
		acks, _ := h.acks.Snapshot()
		seen := map[string]bool{}
		for _, a := range acks {
			seen[fmt.Sprintf("%s/%d", a.Writer, a.Partition)] = true
		}
		return len(seen) == len(writers)*int(o.partitions)
	}) {
		return false, errors.New("the writers did not each get an acknowledgement on every partition within 2m (see java-writer.log)")
	}
	h.logf("writers %v acknowledged on every partition; %d acks so far", res.Writers, h.acks.Count())

	start := time.Now()
	for n := 1; ctx.Err() == nil; n++ {
		if o.cycles > 0 && n > o.cycles {
			break
		}
		if o.cycles == 0 && time.Since(start) >= o.duration && n > len(enabled) {
			break
		}
		if jw != nil && !jw.Alive() {
			return false, errors.New("the java writer exited (see java-writer.log)")
		}
		for _, m := range c.Members {
			if !m.Running() {
				h.finding("etcd member %d exited by itself before cycle %d (see etcd-%d.log); starting it again", m.ID, n, m.ID)
				if err := c.StartMember(m); err != nil {
					return false, err
				}
			}
		}
		for _, b := range c.Brokers {
			if !b.Running() {
				h.finding("broker %d exited by itself before cycle %d (see broker-%d.log); starting it again", b.ID, n, b.ID)
				if err := c.Start(b); err != nil {
					return false, err
				}
			}
		}
		cy, err := h.cycle(ctx, enabled[(n-1)%len(enabled)], n, start)
		if err != nil {
			if ctx.Err() != nil {
				return false, fmt.Errorf("interrupted in cycle %d: %w", n, err)
			}
			return false, err
		}
		res.Cycles = append(res.Cycles, cy)
		if !cy.Recovered {
			// The cluster is not in the state a cycle starts from; more
			// faults would measure nothing new. The check still runs.
			h.logf("no more fault cycles after cycle %d, which did not recover", n)
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second + time.Duration(h.rng.Int64N(int64(2*time.Second)))):
		}
	}
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("interrupted: %w", err)
	}
	stopWriters()
	stopRegister()
	// The reader gets a moment to read the last records.
	time.Sleep(2 * time.Second)
	consumed, commits := rd.stop()
	readerOn = false
	acks, errs := h.acks.Snapshot()
	for i, e := range errs {
		if i == 10 {
			h.finding("... %d more sends given up on", len(errs)-10)
			break
		}
		h.finding("a writer gave up on %s", e)
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	log, hw, err := lab.ReadAll(rctx, c.Seeds(), topic, o.partitions, func(format string, args ...any) { h.logf(format, args...) })
	if err != nil {
		return false, err
	}
	h.logf("high watermarks %v", hw)
	regLog, regHW, err := lab.ReadAll(rctx, c.Seeds(), registerTopic, registerPartitions, func(format string, args ...any) { h.logf(format, args...) })
	if err != nil {
		return false, err
	}
	rv := checkRegister(regAcks, regLog)
	h.logf("register topic: high watermarks %v, %d records kept of %d acknowledged writes (%d superseded and compacted away)", regHW, len(regLog), rv.Acked, rv.Superseded)
	for i, e := range regFailed {
		if i == 10 {
			h.finding("... %d more register writes given up on", len(regFailed)-10)
			break
		}
		h.finding("the register writer gave up on %s", e)
	}
	v := lab.Check(lab.History{Acks: acks, Log: log, Consumed: consumed, Commits: commits})
	res.Seconds = int64(time.Since(res.Started).Seconds())
	k := &res.Counts
	k.Acked, k.Read, k.Lost, k.Misplaced, k.Duplicated, k.Reordered, k.Foreign, k.UnackedStored = v.Acked, v.Read, v.Lost, v.Misplaced, v.Duplicated, v.Reordered, v.Foreign, v.UnackedStored
	k.Consumed, k.Vanished, k.VanishedUnacked, k.Moved, k.Commits, k.CommitsBackwards, k.GaveUp = v.Consumed, v.Vanished, v.VanishedUnacked, v.Moved, len(commits), v.CommitsBackwards, len(errs)
	k.RegisterAcked, k.RegisterSuperseded, k.RegisterLost, k.RegisterDuplicated, k.RegisterGaveUp = rv.Acked, rv.Superseded, rv.Lost, rv.Duplicated, len(regFailed)
	res.Problems, res.Findings = append(v.Problems, rv.Problems...), h.findings
	res.Pass = !v.Failed() && rv.Lost == 0 && rv.Duplicated == 0 && len(h.findings) == 0
	passed = res.Pass
	if err := h.write(res); err != nil {
		return false, err
	}
	h.report(res)
	if o.expectLoss {
		if k.Lost+k.RegisterLost == 0 {
			h.logf("FAIL: the broker was built to lose acknowledged records (%s), and the checker found none lost", o.build)
			return true, nil
		}
		h.logf("as expected of a broker built with %s: the checker found %d acknowledged records lost (and %d register writes)", o.build, k.Lost, k.RegisterLost)
		return false, nil
	}
	return !res.Pass, nil
}

// sessionsUp reports whether every Gregor broker holds its etcd session
// (gregor_etcd_session_up 1 on its /metrics); true for Kafka. A broker
// back in every ISR may still be without one: its etcd member reconnects
// to the others seconds after a partition heals, and a fault injected
// meanwhile cuts a second member off, which leaves etcd without a quorum.
func (h *harness) sessionsUp(ctx context.Context) bool {
	if h.o.target != "gregor" {
		return true
	}
	for _, b := range h.c.Brokers {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		up, err := sessionUp(rctx, fmt.Sprintf("http://%s/metrics", net.JoinHostPort(b.Host, strconv.Itoa(b.AdminPort))))
		cancel()
		if err != nil || !up {
			return false
		}
	}
	return true
}

// sessionUp reads gregor_etcd_session_up from a broker's metrics page.
func sessionUp(ctx context.Context, url string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "gregor_etcd_session_up "); ok {
			return strings.TrimSpace(v) == "1", nil
		}
	}
	return false, sc.Err()
}

// fullISR reports whether every partition has a leader and every broker
// in its ISR.
func (h *harness) fullISR(ctx context.Context) bool {
	v, err := lab.Metadata(ctx, h.adm, topic)
	return err == nil && v.FullISR(h.o.partitions, len(h.c.Brokers))
}

// cycle runs nemesis nm once: inject, hold, heal, wait for full ISRs.
func (h *harness) cycle(ctx context.Context, nm nemesis, n int, runStart time.Time) (cycleResult, error) {
	cy := cycleResult{N: n, Nemesis: nm.name}
	if _, err := h.settled(ctx); err != nil {
		h.finding("cycle %d (%s): %v before the fault", n, nm.name, err)
	}
	h.hold, h.until = h.o.faultTime, nil
	at := time.Now()
	cy.StartMS = at.Sub(runStart).Milliseconds()
	detail, heal, err := nm.inject(ctx, h, n)
	if err != nil {
		return cy, fmt.Errorf("cycle %d: %s: %w", n, nm.name, err)
	}
	cy.Detail = detail
	h.hold = max(h.hold, h.o.faultTime)
	h.logf("cycle %d %s: %s, for %s (%d acks so far)", n, nm.name, detail, h.hold, h.acks.Count())
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(at.Add(h.hold))):
	}
	if h.until != nil {
		done := lab.Poll(ctx, untilLimit, 200*time.Millisecond, func() bool { return h.until.done(ctx) })
		h.logf("cycle %d %s: held %s waiting until %s: %v", n, nm.name, time.Since(at).Round(time.Millisecond), h.until.what, done)
	}
	healErr := heal(context.WithoutCancel(ctx))
	cy.HeldMS = time.Since(at).Milliseconds()
	if healErr != nil {
		return cy, fmt.Errorf("cycle %d: heal %s: %w", n, nm.name, healErr)
	}
	cy.Recovered = lab.Poll(ctx, h.o.healTimeout, 200*time.Millisecond, func() bool { return h.fullISR(ctx) && h.sessionsUp(ctx) })
	end := time.Now()
	cy.RecoveredMS = end.Sub(at).Milliseconds()
	acks, _ := h.acks.Snapshot()
	worst, part, anyGap := unavailability(acks, h.o.partitions, at, end)
	cy.UnavailMS, cy.UnavailPartition, cy.UnavailAnyMS = worst.Milliseconds(), part, anyGap.Milliseconds()
	if !cy.Recovered {
		if ctx.Err() != nil {
			return cy, ctx.Err()
		}
		v, _ := lab.Metadata(ctx, h.adm, topic)
		h.finding("cycle %d %s: not every broker back in every ISR %s after the heal: %v", n, nm.name, h.o.healTimeout, v.Parts)
	}
	h.logf("cycle %d %s: healed after %s, ISR full %s after the fault; unavailable %s (partition %d), topic %s",
		n, nm.name, time.Duration(cy.HeldMS)*time.Millisecond, time.Duration(cy.RecoveredMS)*time.Millisecond,
		worst.Round(time.Millisecond), part, anyGap.Round(time.Millisecond))
	return cy, nil
}

// write puts results.json into the run dir and a copy into -results.
func (h *harness) write(res *results) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if err := os.WriteFile(filepath.Join(res.RunDir, "results.json"), b, 0o644); err != nil {
		return err
	}
	if h.o.results != "" {
		if err := os.MkdirAll(h.o.results, 0o755); err != nil {
			return err
		}
		name := fmt.Sprintf("%s-%s.json", res.Target, res.Started.Format("20060102T150405Z"))
		return os.WriteFile(filepath.Join(h.o.results, name), b, 0o644)
	}
	return nil
}

// report prints the run's summary.
func (h *harness) report(res *results) {
	for _, p := range res.Problems {
		fmt.Printf("chaos: PROBLEM %s\n", p)
	}
	for _, line := range summaryTable([]*results{res}) {
		fmt.Printf("chaos: %s\n", line)
	}
	k := res.Counts
	fmt.Printf("chaos: acked %d, read back %d, lost %d, misplaced %d, duplicated %d, reordered %d, foreign %d; sends given up %d; unacknowledged but stored %d\n",
		k.Acked, k.Read, k.Lost, k.Misplaced, k.Duplicated, k.Reordered, k.Foreign, k.GaveUp, k.UnackedStored)
	fmt.Printf("chaos: consumer read %d (vanished %d, of which never acknowledged %d; moved %d); committed offsets seen %d, going back %d\n",
		k.Consumed, k.Vanished, k.VanishedUnacked, k.Moved, k.Commits, k.CommitsBackwards)
	fmt.Printf("chaos: register writes acked %d (superseded and compacted away %d), lost %d, duplicated %d; given up %d\n",
		k.RegisterAcked, k.RegisterSuperseded, k.RegisterLost, k.RegisterDuplicated, k.RegisterGaveUp)
	for _, f := range res.Findings {
		fmt.Printf("chaos: FINDING %s\n", f)
	}
	if res.Pass {
		fmt.Println("chaos: PASS")
	} else {
		fmt.Println("chaos: FAIL")
	}
}
