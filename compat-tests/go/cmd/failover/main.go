// Command failover is the replication acceptance harness behind `make
// failover-test` (run through compat-tests/failover/run.sh): "kill the
// leader 50 times".
//
// It runs three real `gregor serve` processes, node ids 1 to 3, each
// embedding one member of a three-member etcd cluster, on free ports of
// 127.0.0.1 and with their data under -dir, and creates a topic with
// replication factor 3 and min.insync.replicas=2. Two idempotent acks=all
// writers load it: franz-go in this process and kafka-clients in a JVM
// (FailoverWriter.java); each sends unique values (writer-seq) to
// partition seq % partitions, and every acknowledgement is logged to
// -dir/acks.log as it comes.
//
// Each cycle picks a random partition, kill -9s its leader, measures the
// failover (from the kill until, for every partition the victim led,
// metadata shows another leader and a write on it has been acknowledged
// since), restarts the victim with the same flags and data dir, and waits
// (at most -rejoin-timeout) until every partition's ISR holds all three
// brokers again.
//
// At the end the writers stop, every partition is read back from offset 0
// to its high watermark by a fresh consumer, and each acknowledged record
// must be there exactly once, at its acknowledged partition and offset,
// with each writer's records in sequence order in each partition. The
// exit status is 1 on any lost, misplaced, duplicated, reordered or
// foreign record, on a failover that did not complete within
// -failover-timeout, on a send a writer gave up on, or on a broker that
// exited by itself; 2 when the harness itself could not run.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gregor-io/gregor/compat-tests/go/internal/lab"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const topic = "failover"

type options struct {
	gregor, dir, java, classpath string
	cycles                       int
	partitions                   int32
	rate                         int
	seed                         uint64
	sessionTimeout               time.Duration
	failoverTimeout              time.Duration
	rejoinTimeout                time.Duration
}

func main() {
	var o options
	var partitions int
	flag.StringVar(&o.gregor, "gregor", "bin/gregor", "the gregor binary")
	flag.StringVar(&o.dir, "dir", "", "work dir: brokers' data and logs, acks.log (required)")
	flag.StringVar(&o.java, "java", "java", "the java command")
	flag.StringVar(&o.classpath, "java-classpath", "", "class path holding FailoverWriter and kafka-clients (required)")
	flag.IntVar(&o.cycles, "cycles", 50, "kill -9 cycles")
	flag.IntVar(&partitions, "partitions", 6, "partitions of the topic")
	flag.IntVar(&o.rate, "rate", 300, "records per second of each writer")
	flag.Uint64Var(&o.seed, "seed", 0, "seed of the victims' choice (0: from the clock)")
	flag.DurationVar(&o.sessionTimeout, "session-timeout", 4*time.Second, "brokers' broker.session.timeout.ms")
	flag.DurationVar(&o.failoverTimeout, "failover-timeout", 60*time.Second, "longest wait for a failover")
	flag.DurationVar(&o.rejoinTimeout, "rejoin-timeout", 90*time.Second, "longest wait for a restarted broker to be back in every ISR")
	flag.Parse()
	o.partitions = int32(partitions)
	if o.dir == "" || o.classpath == "" || o.cycles < 0 || o.partitions < 1 || o.rate < 1 {
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
		fmt.Fprintf(os.Stderr, "failover: %v\n", err)
		os.Exit(2)
	case failed:
		os.Exit(1)
	}
}

// harness is one run: the cluster, an admin client, the acknowledgements.
type harness struct {
	o    options
	c    *lab.Cluster
	adm  *kadm.Client
	acks *lab.AckLog
	// findings are what makes the run fail besides the checker's counts.
	findings []string
}

func (h *harness) logf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	fmt.Printf("failover: %s %s\n", time.Now().Format("15:04:05.000"), msg)
	if h.acks != nil {
		h.acks.Note("%s", msg)
	}
}

func (h *harness) finding(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	h.findings = append(h.findings, msg)
	h.logf("FINDING: %s", msg)
}

// metadata asks the cluster for its brokers, its controller and the
// topic's partitions.
func (h *harness) metadata(ctx context.Context) (lab.View, error) {
	return lab.Metadata(ctx, h.adm, topic)
}

// fullISR reports whether every partition has a leader and all three
// brokers in its ISR.
func (h *harness) fullISR(ctx context.Context) bool {
	v, err := h.metadata(ctx)
	return err == nil && v.FullISR(h.o.partitions, len(h.c.Brokers))
}

// cycle is what one kill -9 cycle measured.
type cycle struct {
	victim     int32
	controller bool    // the victim was the controller too
	led        []int32 // the partitions the victim led
	// elected is when metadata showed new leaders for all of led after
	// the kill, failover when they had all acknowledged a write too.
	elected, failover time.Duration
	completed         bool
	rejoin            time.Duration
	rejoined          bool
}

func run(ctx context.Context, o options) (failed bool, err error) {
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return false, err
	}
	c, err := lab.NewCluster(lab.Config{Bin: o.gregor, Dir: dir, N: 3, SessionTimeout: o.sessionTimeout, Tag: "failover harness"})
	if err != nil {
		return false, err
	}
	defer c.KillAll()
	h := &harness{o: o, c: c}
	h.logf("seed %d; brokers on %s; broker.session.timeout.ms=%d; data and logs in %s",
		o.seed, strings.Join(c.Seeds(), ","), o.sessionTimeout.Milliseconds(), dir)
	rng := rand.New(rand.NewPCG(o.seed, o.seed^0x9e3779b97f4a7c15))

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
	h.adm = kadm.NewClient(adminCl)

	if !lab.Poll(ctx, 2*time.Minute, 200*time.Millisecond, func() bool {
		v, _ := h.metadata(ctx)
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
	if !lab.Poll(ctx, 2*time.Minute, 200*time.Millisecond, func() bool { return h.fullISR(ctx) }) {
		return false, errors.New("the topic's partitions did not all get three in-sync replicas within 2m")
	}
	h.logf("topic %s: %d partitions, replication factor 3, min.insync.replicas=2, ISR=3 everywhere", topic, o.partitions)

	if h.acks, err = lab.NewAckLog(filepath.Join(dir, "acks.log")); err != nil {
		return false, err
	}
	defer h.acks.Close()
	kw, err := lab.StartKgoWriter(c.Seeds(), topic, o.partitions, o.rate, h.acks)
	if err != nil {
		return false, err
	}
	jw, err := lab.StartJavaWriter(c, o.java, o.classpath, filepath.Join(dir, "java-writer.log"), topic, o.partitions, o.rate, h.acks)
	if err != nil {
		kw.Stop(ctx)
		return false, err
	}
	writers := []lab.Writer{kw, jw}
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

	if !lab.Poll(ctx, 2*time.Minute, 200*time.Millisecond, func() bool {
		acks, _ := h.acks.Snapshot()
		seen := map[string]bool{}
		for _, a := range acks {
			seen[fmt.Sprintf("%s/%d", a.Writer, a.Partition)] = true
		}
		return len(seen) == 2*int(o.partitions)
	}) {
		return false, errors.New("the writers did not each get an acknowledgement on every partition within 2m (see java-writer.log)")
	}
	h.logf("both writers acknowledged on every partition; %d acks so far", h.acks.Count())

	var cycles []cycle
	for n := 1; n <= o.cycles && ctx.Err() == nil; n++ {
		if !jw.Alive() {
			return false, errors.New("the java writer exited (see java-writer.log)")
		}
		for _, b := range c.Brokers {
			if !b.Running() {
				h.finding("broker %d exited by itself before cycle %d (see broker-%d.log); starting it again", b.ID, n, b.ID)
				if err := c.Start(b); err != nil {
					return false, err
				}
			}
		}
		cy, err := h.cycle(ctx, rng, n)
		if err != nil {
			if ctx.Err() != nil {
				return false, fmt.Errorf("interrupted in cycle %d: %w", n, err)
			}
			return false, err
		}
		cycles = append(cycles, cy)
		// Load between kills, so that each kill lands mid-stream.
		select {
		case <-ctx.Done():
		case <-time.After(time.Second + time.Duration(rng.Int64N(int64(2*time.Second)))):
		}
	}
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("interrupted: %w", err)
	}

	stopWriters()
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
	log, hw, err := lab.ReadAll(rctx, c.Seeds(), topic, o.partitions, func(format string, args ...any) {
		fmt.Printf("failover: "+format+"\n", args...)
	})
	if err != nil {
		return false, err
	}
	v := lab.Check(lab.History{Acks: acks, Log: log})
	return h.report(cycles, v, hw, len(errs)), nil
}

// cycle kills the leader of a random partition, waits for the failover,
// restarts the victim and waits for it to be back in every ISR.
func (h *harness) cycle(ctx context.Context, rng *rand.Rand, n int) (cycle, error) {
	var before lab.View
	if !lab.Poll(ctx, time.Minute, 200*time.Millisecond, func() bool {
		var err error
		before, err = h.metadata(ctx)
		if err != nil || len(before.Parts) != int(h.o.partitions) {
			return false
		}
		for _, p := range before.Parts {
			if p.Leader < 0 {
				return false
			}
		}
		return true
	}) {
		return cycle{}, fmt.Errorf("cycle %d: no leader for every partition within 1m", n)
	}
	pick := rng.Int32N(h.o.partitions)
	cy := cycle{victim: before.Parts[pick].Leader}
	cy.controller = cy.victim == before.Controller
	for p, st := range before.Parts {
		if st.Leader == cy.victim {
			cy.led = append(cy.led, p)
		}
	}
	slices.Sort(cy.led)
	b := h.c.Broker(cy.victim)
	if b == nil {
		return cy, fmt.Errorf("cycle %d: partition %d's leader %d is no broker of this cluster", n, pick, cy.victim)
	}
	killedAt, err := h.c.Kill(ctx, b)
	if err != nil {
		return cy, err
	}
	what := ""
	if cy.controller {
		what = " and the controller"
	}
	h.logf("cycle %d/%d: kill -9 broker %d, leader of partitions %v%s (%d acks so far)", n, h.o.cycles, cy.victim, cy.led, what, h.acks.Count())

	// An acknowledgement read within 100 ms of the kill may be an answer
	// of the victim itself, still on its way; later ones are a new
	// leader's.
	ackAfter := killedAt.Add(100 * time.Millisecond)
	moved := map[int32]time.Time{}
	served := map[int32]time.Time{}
	cy.completed = lab.Poll(ctx, h.o.failoverTimeout, 100*time.Millisecond, func() bool {
		now, err := h.metadata(ctx)
		seen := time.Now()
		for _, p := range cy.led {
			if _, ok := moved[p]; !ok && err == nil {
				if st, ok := now.Parts[p]; ok && st.Leader >= 0 && st.Leader != cy.victim {
					moved[p] = seen
				}
			}
			if _, ok := served[p]; !ok {
				if at, ok := h.acks.FirstAfter(p, ackAfter); ok {
					served[p] = at
				}
			}
		}
		return len(moved) == len(cy.led) && len(served) == len(cy.led)
	})
	// Per partition: when metadata first showed another leader, and the
	// failover, the later of that and the first acknowledgement since.
	since := func(t time.Time) string {
		if t.IsZero() {
			return "none"
		}
		return t.Sub(killedAt).Round(time.Millisecond).String()
	}
	var each []string
	for _, p := range cy.led {
		m, s := moved[p], served[p]
		if !m.IsZero() && m.Sub(killedAt) > cy.elected {
			cy.elected = m.Sub(killedAt)
		}
		at := s
		if m.IsZero() || s.IsZero() {
			at = time.Time{}
		} else if m.After(s) {
			at = m
		}
		if !at.IsZero() && at.Sub(killedAt) > cy.failover {
			cy.failover = at.Sub(killedAt)
		}
		each = append(each, fmt.Sprintf("p%d: %s, new leader at %s", p, since(at), since(m)))
	}
	if !cy.completed {
		if ctx.Err() != nil {
			return cy, ctx.Err()
		}
		h.finding("cycle %d: failover of broker %d's partitions not complete after %s: %s (moved: %v, served: %v)",
			n, cy.victim, h.o.failoverTimeout, strings.Join(each, ", "), keys(moved), keys(served))
	} else {
		h.logf("cycle %d/%d: failover %s (%s)", n, h.o.cycles, cy.failover.Round(time.Millisecond), strings.Join(each, ", "))
	}

	restartAt := time.Now()
	if err := h.c.Start(b); err != nil {
		return cy, err
	}
	cy.rejoined = lab.Poll(ctx, h.o.rejoinTimeout, 200*time.Millisecond, func() bool { return h.fullISR(ctx) })
	cy.rejoin = time.Since(restartAt)
	if !cy.rejoined {
		if ctx.Err() != nil {
			return cy, ctx.Err()
		}
		now, _ := h.metadata(ctx)
		h.logf("cycle %d/%d: broker %d NOT back in every ISR %s after its restart: %v", n, h.o.cycles, cy.victim, h.o.rejoinTimeout, now.Parts)
	} else {
		h.logf("cycle %d/%d: broker %d restarted, ISR=3 everywhere after %s", n, h.o.cycles, cy.victim, cy.rejoin.Round(time.Millisecond))
	}
	return cy, nil
}

func keys(m map[int32]time.Time) []int32 {
	var ks []int32
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// report prints the summary and returns whether the run failed.
func (h *harness) report(cycles []cycle, v *lab.Verdict, hw map[int32]int64, gaveUp int) bool {
	var fo, el, foCtl, foOther, rj []time.Duration
	victims := map[int32]int{}
	var notCompleted, notRejoined []int
	for i, cy := range cycles {
		victims[cy.victim]++
		if cy.completed {
			fo = append(fo, cy.failover)
			el = append(el, cy.elected)
			if cy.controller {
				foCtl = append(foCtl, cy.failover)
			} else {
				foOther = append(foOther, cy.failover)
			}
		} else {
			notCompleted = append(notCompleted, i+1)
		}
		if cy.rejoined {
			rj = append(rj, cy.rejoin)
		} else {
			notRejoined = append(notRejoined, i+1)
		}
	}
	for _, p := range v.Problems {
		fmt.Printf("failover: PROBLEM %s\n", p)
	}
	foMed, foMax := lab.MedianMax(fo)
	elMed, elMax := lab.MedianMax(el)
	ctlMed, ctlMax := lab.MedianMax(foCtl)
	otherMed, otherMax := lab.MedianMax(foOther)
	rjMed, rjMax := lab.MedianMax(rj)
	fmt.Printf("failover: cycles %d (victims by broker: %v); failover not complete: %d %v; not back in every ISR: %d %v\n",
		len(cycles), victims, len(notCompleted), notCompleted, len(notRejoined), notRejoined)
	fmt.Printf("failover: high watermarks %v\n", hw)
	fmt.Printf("failover: acked %d, read %d, lost %d, misplaced %d, duplicated %d, reordered %d, foreign %d; sends given up %d; unacknowledged but stored %d\n",
		v.Acked, v.Read, v.Lost, v.Misplaced, v.Duplicated, v.Reordered, v.Foreign, gaveUp, v.UnackedStored)
	fmt.Printf("failover: failover time median %s max %s (kill -9 to a new leader serving acks=all writes on every partition the victim led)\n",
		foMed.Round(time.Millisecond), foMax.Round(time.Millisecond))
	fmt.Printf("failover: new leaders in metadata median %s max %s after the kill\n", elMed.Round(time.Millisecond), elMax.Round(time.Millisecond))
	fmt.Printf("failover: of which victim was the controller: %d cycles, median %s max %s; was not: %d cycles, median %s max %s\n",
		len(foCtl), ctlMed.Round(time.Millisecond), ctlMax.Round(time.Millisecond), len(foOther), otherMed.Round(time.Millisecond), otherMax.Round(time.Millisecond))
	fmt.Printf("failover: rejoin time median %s max %s (restart to ISR=3 on every partition)\n", rjMed.Round(time.Millisecond), rjMax.Round(time.Millisecond))
	failed := v.Failed() || len(h.findings) > 0
	if failed {
		for _, f := range h.findings {
			fmt.Printf("failover: FINDING %s\n", f)
		}
		fmt.Println("failover: FAIL")
	} else {
		fmt.Println("failover: PASS")
	}
	return failed
}
