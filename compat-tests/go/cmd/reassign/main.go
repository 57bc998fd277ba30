// Command reassign is the harness behind `make reassign-test` (run through
// compat-tests/reassign/run.sh): a running cluster grown from three brokers
// to four and then shrunk by one, with the operator's verbs, under a steady
// acks=all load that is checked for loss.
//
// It runs four `gregor serve` processes on free ports of 127.0.0.1 (three
// at first) over three etcd members of their own (built from the etcd
// server module Gregor embeds, so that retiring a broker costs etcd
// nothing), fills a topic of -partitions partitions with -bytes of data,
// and starts an idempotent acks=all writer (franz-go, -rate records a
// second) on a second topic whose every acknowledgement is kept. Then:
//
//  1. before: -baseline of load alone;
//  2. grow: broker 4 starts, and `gregor cluster rebalance --execute
//     --throttle` moves partitions onto it until replicas and leaders are
//     even; with -kill, the controller (or the broker receiving the most
//     replicas, -kill receiver) is killed -9 once moves are under way and
//     restarted -down later: the moves must complete;
//  3. decommission: `gregor cluster decommission 1 --execute --throttle`
//     moves everything off broker 1, which must then hold no partition (in
//     the metadata and on its disk) and is stopped;
//  4. after: -baseline of load on the three brokers left.
//
// At the end: no reassignment in flight; every partition's ISR is its
// whole replica set; every replica of the filled topic has the size of its
// leader (no replica left half-moved) and its end offsets are those after
// the fill; the load topic read back holds every acknowledged record once,
// at its offset (compat-tests/go/internal/lab's checker). It prints the
// producer's latency (median, p99, max) in each phase and each phase's
// time. Exit status 1 on a failed check, 2 when the harness could not run.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/compat-tests/go/internal/lab"
)

const (
	bulkTopic = "reassign-bulk"
	loadTopic = "reassign-load"
	loadParts = 6
)

type options struct {
	gregor, etcd, dir string
	partitions        int
	bytes             int64
	rate              int
	throttle          int64
	baseline          time.Duration
	kill              string
	down              time.Duration
	moveTimeout       time.Duration
	seed              uint64
}

func main() {
	var o options
	flag.StringVar(&o.gregor, "gregor", "bin/gregor", "the gregor binary")
	flag.StringVar(&o.etcd, "etcd", "", "an etcd binary (required)")
	flag.StringVar(&o.dir, "dir", "", "run dir: brokers' data and logs (required)")
	flag.IntVar(&o.partitions, "partitions", 48, "partitions of the filled topic")
	flag.Int64Var(&o.bytes, "bytes", 1<<30, "bytes written to the filled topic before the moves")
	flag.IntVar(&o.rate, "rate", 500, "records a second of the checked load")
	flag.Int64Var(&o.throttle, "throttle", 50<<20, "the moves' replication throttle, bytes a second")
	flag.DurationVar(&o.baseline, "baseline", 20*time.Second, "load alone before and after the moves")
	flag.StringVar(&o.kill, "kill", "", "kill -9 during the grow's moves: controller, receiver, or empty for none")
	flag.DurationVar(&o.down, "down", 3*time.Second, "how long a killed broker stays down")
	flag.DurationVar(&o.moveTimeout, "move-timeout", 20*time.Minute, "time allowed for each phase's moves")
	flag.Uint64Var(&o.seed, "seed", 0, "seed of the filled data (0: from the clock)")
	flag.Parse()
	if o.dir == "" || o.etcd == "" || o.partitions < 1 || (o.kill != "" && o.kill != "controller" && o.kill != "receiver") {
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
		fmt.Fprintf(os.Stderr, "reassign: %v\n", err)
		os.Exit(2)
	case failed:
		fmt.Println("reassign: FAIL")
		os.Exit(1)
	}
	fmt.Println("reassign: PASS")
}

func logf(format string, args ...any) {
	fmt.Printf("reassign: %s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// latencies collects the load's acknowledgement latencies per phase.
type latencies struct {
	mu    sync.Mutex
	phase string
	by    map[string][]time.Duration
	order []string
}

func (l *latencies) set(phase string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.phase = phase
	l.order = append(l.order, phase)
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.by[l.phase] = append(l.by[l.phase], d)
}

// quantiles returns the median, p99 and max of phase's latencies.
func (l *latencies) quantiles(phase string) (n int, p50, p99, maximum time.Duration) {
	l.mu.Lock()
	ds := slices.Clone(l.by[phase])
	l.mu.Unlock()
	if len(ds) == 0 {
		return 0, 0, 0, 0
	}
	slices.Sort(ds)
	q := func(f float64) time.Duration { return ds[min(len(ds)-1, int(f*float64(len(ds))))] }
	return len(ds), q(0.5), q(0.99), ds[len(ds)-1]
}

type harness struct {
	o    options
	c    *lab.Cluster
	cl   *kgo.Client
	adm  *kadm.Client
	dir  string
	lat  *latencies
	fail []string
}

func (h *harness) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	logf("PROBLEM %s", msg)
	h.fail = append(h.fail, msg)
}

func run(ctx context.Context, o options) (bool, error) {
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return false, err
	}
	c, err := lab.NewCluster(lab.Config{Bin: o.gregor, Dir: dir, N: 4, SessionTimeout: 6 * time.Second, Tag: "reassign harness",
		Etcd: o.etcd, EtcdMembers: 3})
	if err != nil {
		return false, err
	}
	defer c.KillAll()
	h := &harness{o: o, c: c, dir: dir, lat: &latencies{by: map[string][]time.Duration{}}}
	logf("seed %d; brokers %s (broker 4 joins later); %d partitions, %s to move; load %d records/s; throttle %s/s; kill: %q; data and logs in %s",
		o.seed, strings.Join(c.Seeds(), ","), o.partitions, size(o.bytes), o.rate, size(o.throttle), o.kill, dir)
	for _, m := range c.Members {
		if err := c.StartMember(m); err != nil {
			return false, err
		}
	}
	for _, b := range c.Brokers[:3] {
		if err := c.Start(b); err != nil {
			return false, err
		}
	}
	adminCl, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		return false, err
	}
	defer adminCl.Close()
	h.cl, h.adm = adminCl, kadm.NewClient(adminCl)
	if err := h.waitBrokers(ctx, 3); err != nil {
		return false, err
	}
	for _, t := range []struct {
		name  string
		parts int
	}{{bulkTopic, o.partitions}, {loadTopic, loadParts}} {
		var createErr error
		if !lab.Poll(ctx, time.Minute, 500*time.Millisecond, func() bool {
			r, err := h.adm.CreateTopic(ctx, int32(t.parts), 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, t.name)
			if err == nil {
				err = r.Err
			}
			createErr = err
			return err == nil
		}) {
			return false, fmt.Errorf("create topic %s: %w", t.name, createErr)
		}
	}
	start := time.Now()
	if err := fill(ctx, c.Seeds(), o.partitions, o.bytes, o.seed); err != nil {
		return false, err
	}
	logf("filled %s with %s in %s", bulkTopic, size(o.bytes), time.Since(start).Round(time.Millisecond))
	bulkEnds, err := h.adm.ListEndOffsets(ctx, bulkTopic)
	if err != nil || bulkEnds.Error() != nil {
		return false, fmt.Errorf("end offsets of %s: %v %v", bulkTopic, err, bulkEnds.Error())
	}

	acks, err := lab.NewAckLog(filepath.Join(dir, "acks.log"))
	if err != nil {
		return false, err
	}
	defer acks.Close()
	h.lat.set("before")
	w, err := lab.StartKgoWriterTimed(c.Seeds(), loadTopic, loadParts, o.rate, acks, h.lat.add)
	if err != nil {
		return false, err
	}
	phases := []struct {
		name string
		took time.Duration
	}{}
	sleep(ctx, o.baseline)

	// Grow: broker 4 joins and the rebalance moves partitions onto it.
	h.lat.set("grow")
	start = time.Now()
	if err := c.Start(c.Brokers[3]); err != nil {
		return false, err
	}
	if err := h.waitBrokers(ctx, 4); err != nil {
		return false, err
	}
	killed := make(chan struct{})
	if o.kill != "" {
		go h.killDuringMoves(ctx, killed)
	} else {
		close(killed)
	}
	if err := h.cli(ctx, "grow", "cluster", "rebalance", "--execute", "--throttle", strconv.FormatInt(o.throttle, 10)); err != nil {
		h.problem("grow: %v", err)
	}
	<-killed
	if err := h.waitMoves(ctx, "grow"); err != nil {
		h.problem("grow: %v", err)
	}
	phases = append(phases, struct {
		name string
		took time.Duration
	}{"grow (3 -> 4, rebalance)", time.Since(start)})
	h.countReplicas(ctx, "after the grow")

	// Decommission broker 1.
	h.lat.set("decommission")
	start = time.Now()
	if err := h.cli(ctx, "decommission", "cluster", "decommission", "1", "--execute", "--throttle", strconv.FormatInt(o.throttle, 10)); err != nil {
		h.problem("decommission: %v", err)
	}
	if err := h.waitMoves(ctx, "decommission"); err != nil {
		h.problem("decommission: %v", err)
	}
	phases = append(phases, struct {
		name string
		took time.Duration
	}{"decommission broker 1", time.Since(start)})
	h.checkRetired(ctx, 1)
	if err := c.Signal(c.Brokers[0], syscall.SIGTERM); err != nil {
		h.problem("stop broker 1: %v", err)
	}
	h.countReplicas(ctx, "after the decommission")

	h.lat.set("after")
	sleep(ctx, o.baseline)
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	sent, werr := w.Stop(sctx)
	cancel()
	if werr != nil {
		h.problem("%v", werr)
	}
	if ctx.Err() != nil {
		return false, ctx.Err()
	}

	// The checks.
	h.checkPartitions(ctx, bulkEnds)
	rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	log, _, err := lab.ReadAll(rctx, c.Seeds()[1:], loadTopic, loadParts, logf)
	if err != nil {
		return false, err
	}
	acked, givenUp := acks.Snapshot()
	v := lab.Check(lab.History{Acks: acked, Log: log})
	for _, p := range v.Problems {
		logf("PROBLEM %s", p)
	}
	logf("load: sent %d, acked %d, given up %d; read back %d: lost %d, misplaced %d, duplicated %d, reordered %d, foreign %d",
		sent, v.Acked, len(givenUp), v.Read, v.Lost, v.Misplaced, v.Duplicated, v.Reordered, v.Foreign)
	if v.Failed() {
		h.fail = append(h.fail, "the load's check failed")
	}
	if len(givenUp) > 0 {
		// acks=all sends given up on are not lost records, but a move
		// must not make the producer fail: show them.
		for i, e := range givenUp {
			if i < 5 {
				logf("given up: %s", e)
			}
		}
		h.problem("%d sends of the load were given up on", len(givenUp))
	}

	fmt.Println("reassign: | phase | acks | p50 | p99 | max |")
	fmt.Println("reassign: | --- | ---: | ---: | ---: | ---: |")
	for _, ph := range []string{"before", "grow", "decommission", "after"} {
		n, p50, p99, mx := h.lat.quantiles(ph)
		fmt.Printf("reassign: | %s | %d | %s | %s | %s |\n", ph, n, ms(p50), ms(p99), ms(mx))
	}
	for _, ph := range phases {
		logf("%s took %s", ph.name, ph.took.Round(100*time.Millisecond))
	}
	return len(h.fail) > 0, nil
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%d B", n)
	}
}

func (h *harness) waitBrokers(ctx context.Context, n int) error {
	if !lab.Poll(ctx, 2*time.Minute, 200*time.Millisecond, func() bool {
		bs, err := h.adm.ListBrokers(ctx)
		return err == nil && len(bs) == n
	}) {
		return fmt.Errorf("%d brokers did not all register within 2m (see %s/broker-*.log)", n, h.dir)
	}
	return nil
}

// fill writes total bytes to the bulk topic, in 16 KiB records of
// pseudo-random bytes spread evenly over its partitions, acks=all.
func fill(ctx context.Context, seeds []string, partitions int, total int64, seed uint64) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(bulkTopic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedBytes(64<<20))
	if err != nil {
		return err
	}
	defer cl.Close()
	const recSize = 16 << 10
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	block := make([]byte, 1<<20)
	for i := 0; i+8 <= len(block); i += 8 {
		v := rng.Uint64()
		for j := range 8 {
			block[i+j] = byte(v >> (8 * j))
		}
	}
	var mu sync.Mutex
	var firstErr error
	n := total / recSize
	for i := range n {
		off := int(rng.Uint64N(uint64(len(block) - recSize)))
		r := &kgo.Record{Partition: int32(i % int64(partitions)), Value: block[off : off+recSize]}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if firstErr != nil {
		return fmt.Errorf("fill: %w", firstErr)
	}
	return nil
}

// cli runs `gregor ARGS...` against the live brokers, its output going to
// the run dir's <name>.out and the harness's log.
func (h *harness) cli(ctx context.Context, name string, args ...string) error {
	var seeds []string
	for _, b := range h.c.Brokers {
		if b.Running() {
			seeds = append(seeds, b.Addr())
		}
	}
	args = append(args, "--bootstrap-server", strings.Join(seeds, ","), "--timeout", "0")
	logf("%s: gregor %s", name, strings.Join(args, " "))
	out, err := os.Create(filepath.Join(h.dir, name+".out"))
	if err != nil {
		return err
	}
	defer out.Close()
	var tail bytes.Buffer
	cmd := exec.CommandContext(ctx, h.o.gregor, args...)
	cmd.Stdout, cmd.Stderr = out, &tail
	err = cmd.Run()
	if tail.Len() > 0 {
		fmt.Fprint(out, tail.String())
	}
	if err != nil {
		return fmt.Errorf("gregor %s: %w: %s (output in %s)", args[0]+" "+args[1], err, strings.TrimSpace(lastLines(tail.String(), 5)), out.Name())
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// killDuringMoves waits until moves are in flight, kills -9 the chosen
// broker, and restarts it after -down.
func (h *harness) killDuringMoves(ctx context.Context, done chan struct{}) {
	defer close(done)
	if !lab.Poll(ctx, 5*time.Minute, 100*time.Millisecond, func() bool {
		n, err := h.inFlight(ctx)
		return err == nil && n > 0
	}) {
		h.problem("kill: no reassignment in flight within 5m")
		return
	}
	var victim *lab.Broker
	what := o2what(h.o.kill)
	switch h.o.kill {
	case "controller":
		if md, err := h.adm.BrokerMetadata(ctx); err == nil {
			victim = h.c.Broker(md.Controller)
		}
	case "receiver":
		victim = h.c.Brokers[3]
	}
	if victim == nil {
		h.problem("kill: no %s found", what)
		return
	}
	sleep(ctx, time.Second) // moves under way, not just submitted
	n, _ := h.inFlight(ctx)
	if _, err := h.c.Kill(ctx, victim); err != nil {
		h.problem("kill broker %d: %v", victim.ID, err)
		return
	}
	logf("kill -9 broker %d (%s) with %d moves in flight", victim.ID, what, n)
	sleep(ctx, h.o.down)
	if err := h.c.Start(victim); err != nil {
		h.problem("restart broker %d: %v", victim.ID, err)
		return
	}
	logf("broker %d restarted", victim.ID)
}

func o2what(kill string) string {
	if kill == "receiver" {
		return "the broker receiving replicas"
	}
	return "the controller"
}

// inFlight counts the partitions with a reassignment in flight: a
// ListPartitionReassignments with a null topic list, which asks for all
// (kadm's answers an empty set without asking).
func (h *harness) inFlight(ctx context.Context) (int, error) {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	req.TimeoutMillis = 10000
	resp, err := req.RequestWith(ctx, h.cl)
	if err != nil {
		return 0, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return 0, err
	}
	n := 0
	for _, t := range resp.Topics {
		n += len(t.Partitions)
	}
	return n, nil
}

// waitMoves waits until no reassignment is in flight.
func (h *harness) waitMoves(ctx context.Context, phase string) error {
	var left int
	if !lab.Poll(ctx, h.o.moveTimeout, time.Second, func() bool {
		var err error
		left, err = h.inFlight(ctx)
		return err == nil && left == 0
	}) {
		return fmt.Errorf("%d reassignments still in flight after %s", left, h.o.moveTimeout)
	}
	return nil
}

// countReplicas logs replicas and preferred leaders per broker.
func (h *harness) countReplicas(ctx context.Context, when string) {
	md, err := h.adm.Metadata(ctx, bulkTopic, loadTopic)
	if err != nil {
		h.problem("metadata %s: %v", when, err)
		return
	}
	replicas, leaders := map[int32]int{}, map[int32]int{}
	for _, t := range md.Topics {
		for _, p := range t.Partitions {
			for _, r := range p.Replicas {
				replicas[r]++
			}
			if len(p.Replicas) > 0 {
				leaders[p.Replicas[0]]++
			}
		}
	}
	var ids []int32
	for id := range replicas {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var parts []string
	for _, id := range ids {
		parts = append(parts, fmt.Sprintf("broker %d: %d replicas, %d preferred leaders", id, replicas[id], leaders[id]))
	}
	logf("%s: %s", when, strings.Join(parts, "; "))
}

// checkRetired checks that no partition has a replica on broker id and
// that its data dir holds no partition's log.
func (h *harness) checkRetired(ctx context.Context, id int32) {
	md, err := h.adm.Metadata(ctx, bulkTopic, loadTopic)
	if err != nil {
		h.problem("metadata: %v", err)
		return
	}
	for _, t := range md.Topics {
		for _, p := range t.Partitions {
			if slices.Contains(p.Replicas, id) {
				h.problem("%s-%d still has a replica on broker %d: %v", t.Topic, p.Partition, id, p.Replicas)
			}
		}
	}
	// The broker deletes a log once its view no longer assigns it; give
	// it a moment to apply the last change.
	var left []string
	lab.Poll(ctx, 30*time.Second, 500*time.Millisecond, func() bool {
		left = partitionDirs(h.c.Brokers[id-1].DataDir)
		return len(left) == 0
	})
	if len(left) > 0 {
		h.problem("broker %d still holds the logs of %d partitions, e.g. %s", id, len(left), left[0])
	} else {
		logf("broker %d holds no partition (metadata and disk)", id)
	}
}

// partitionDirs lists the dirs of the run's topics' logs in a data dir.
func partitionDirs(dir string) []string {
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		if e.IsDir() && (strings.HasPrefix(e.Name(), bulkTopic+"-") || strings.HasPrefix(e.Name(), loadTopic+"-")) {
			out = append(out, e.Name())
		}
	}
	return out
}

// checkPartitions checks every partition at the end: its ISR is its whole
// replica set, no replica lives on a broker not in it, and each bulk
// replica has its leader's size and the end offset the fill left.
func (h *harness) checkPartitions(ctx context.Context, bulkEnds kadm.ListedOffsets) {
	var md kadm.Metadata
	if !lab.Poll(ctx, 2*time.Minute, time.Second, func() bool {
		var err error
		md, err = h.adm.Metadata(ctx, bulkTopic, loadTopic)
		if err != nil {
			return false
		}
		for _, t := range md.Topics {
			for _, p := range t.Partitions {
				if p.Leader < 0 || len(p.ISR) != len(p.Replicas) {
					return false
				}
			}
		}
		return true
	}) {
		for _, t := range md.Topics {
			for _, p := range t.Partitions {
				if p.Leader < 0 || len(p.ISR) != len(p.Replicas) {
					h.problem("%s-%d: replicas %v, ISR %v, leader %d two minutes after the moves", t.Topic, p.Partition, p.Replicas, p.ISR, p.Leader)
				}
			}
		}
	}
	ends, err := h.adm.ListEndOffsets(ctx, bulkTopic)
	if err != nil {
		h.problem("end offsets: %v", err)
	} else {
		ends.Each(func(e kadm.ListedOffset) {
			if want, ok := bulkEnds.Lookup(bulkTopic, e.Partition); !ok || want.Offset != e.Offset || e.Err != nil {
				h.problem("%s-%d ends at %d (%v), after the fill at %d", bulkTopic, e.Partition, e.Offset, e.Err, want.Offset)
			}
		})
	}
	// Every replica of a bulk partition holds what its leader holds (the
	// topic takes no writes after the fill).
	dirs, err := h.adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		h.problem("describe log dirs: %v", err)
		return
	}
	sizes := map[int32]map[int32]int64{} // partition -> broker -> size
	dirs.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if p.Topic != bulkTopic {
				return
			}
			if sizes[p.Partition] == nil {
				sizes[p.Partition] = map[int32]int64{}
			}
			sizes[p.Partition][d.Broker] = p.Size
		})
	})
	var total int64
	for _, t := range md.Topics {
		if t.Topic != bulkTopic {
			continue
		}
		for _, p := range t.Partitions {
			lead := sizes[p.Partition][p.Leader]
			total += lead
			var on []int32
			for b := range sizes[p.Partition] {
				on = append(on, b)
			}
			sort.Slice(on, func(i, j int) bool { return on[i] < on[j] })
			want := slices.Clone(p.Replicas)
			slices.Sort(want)
			if !slices.Equal(on, want) {
				h.problem("%s-%d: replicas %v, logs on brokers %v", bulkTopic, p.Partition, p.Replicas, on)
			}
			for _, b := range p.Replicas {
				if s := sizes[p.Partition][b]; s != lead {
					h.problem("%s-%d: replica on broker %d holds %d bytes, its leader %d", bulkTopic, p.Partition, b, s, lead)
				}
			}
		}
	}
	logf("%s: %d partitions, %s per replica set, every replica the size of its leader unless said above", bulkTopic, len(sizes), size(total))
}
