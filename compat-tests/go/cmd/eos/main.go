// Command eos is the exactly-once harness behind `make eos-test` (run
// through compat-tests/eos/run.sh): a transactional consume-transform-
// produce pipeline while brokers are killed -9 under it.
//
// It runs -brokers `gregor serve` processes (1 or 3) on free ports of
// 127.0.0.1 with their data under -dir, writes -records unique values
// (in-NNNNNNNN) to an input topic, and runs franz-go's
// GroupTransactSession over it: each poll's records are written to an
// output topic as out-<value>, and the consumed offsets are committed in
// the same transaction. Meanwhile, every -kill-every, a broker is killed
// -9 (with three brokers, the leader of a random input or output
// partition, or of the pipeline's group or transaction coordinator; with
// one, the broker) and restarted -down later, -kills times. A session
// whose commit fails is closed and made again (the new one fences the
// old and its transaction is aborted), as an application would. Besides
// the aborts the kills cause, the pipeline aborts a share of its
// transactions on purpose (-abort-rate) after flushing their records, so
// that aborted records are surely in the log; the input they consumed
// comes again in a later transaction. Every output record carries the id
// of its transaction in a header.
//
// When the group's committed offsets reach the input's end, the output is
// read back with read_committed: it must hold each input value exactly
// once (count and a sum of CRC-32s) and no record of a transaction known
// to be aborted; a read_uncommitted pass must hold every record of the
// transactions aborted on purpose (acknowledged with acks=all before the
// abort). Exit status 1 on a missing, duplicated, foreign or aborted
// output record, or a lost aborted one; 2 when the harness could not run.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-io/gregor/compat-tests/go/internal/lab"
)

const (
	inTopic   = "eos-in"
	outTopic  = "eos-out"
	group     = "eos-pipeline"
	txnID     = "eos-pipeline"
	partCount = 6
)

type options struct {
	gregor, dir    string
	brokers        int
	records        int
	kills          int
	killEvery      time.Duration
	down           time.Duration
	sessionTimeout time.Duration
	abortRate      float64
	seed           uint64
}

func main() {
	var o options
	flag.StringVar(&o.gregor, "gregor", "bin/gregor", "the gregor binary")
	flag.StringVar(&o.dir, "dir", "", "run dir: brokers' data and logs (required)")
	flag.IntVar(&o.brokers, "brokers", 3, "brokers: 1 or 3")
	flag.IntVar(&o.records, "records", 20000, "input records")
	flag.IntVar(&o.kills, "kills", 6, "kill -9s during the pipeline")
	flag.DurationVar(&o.killEvery, "kill-every", 6*time.Second, "time between kills")
	flag.DurationVar(&o.down, "down", 2*time.Second, "how long a killed broker stays down")
	flag.DurationVar(&o.sessionTimeout, "session-timeout", 4*time.Second, "brokers' broker.session.timeout.ms")
	flag.Float64Var(&o.abortRate, "abort-rate", 0.1, "share of transactions the pipeline aborts on purpose")
	flag.Uint64Var(&o.seed, "seed", 0, "seed of the victims' and the aborts' choice (0: from the clock)")
	flag.Parse()
	if o.dir == "" || (o.brokers != 1 && o.brokers != 3) || o.records < 1 {
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
		fmt.Fprintf(os.Stderr, "eos: %v\n", err)
		os.Exit(2)
	case failed:
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Printf("eos: %s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func run(ctx context.Context, o options) (bool, error) {
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return false, err
	}
	c, err := lab.NewCluster(lab.Config{Bin: o.gregor, Dir: dir, N: o.brokers, SessionTimeout: o.sessionTimeout, Tag: "eos harness",
		Args: []string{"--replica.lag.time.max.ms", "5000"}})
	if err != nil {
		return false, err
	}
	defer c.KillAll()
	logf("seed %d; %d broker(s) on %s; %d records; %d kills every %s; data and logs in %s",
		o.seed, o.brokers, strings.Join(c.Seeds(), ","), o.records, o.kills, o.killEvery, dir)
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
	adm := kadm.NewClient(adminCl)
	if !lab.Poll(ctx, 2*time.Minute, 200*time.Millisecond, func() bool {
		v, _ := lab.Metadata(ctx, adm, inTopic)
		return len(v.Brokers) == o.brokers
	}) {
		return false, fmt.Errorf("the brokers did not all register within 2m (see %s/broker-*.log)", dir)
	}
	minISR := min(2, o.brokers)
	for _, topic := range []string{inTopic, outTopic} {
		var createErr error
		if !lab.Poll(ctx, time.Minute, 500*time.Millisecond, func() bool {
			r, err := adm.CreateTopic(ctx, partCount, int16(o.brokers), map[string]*string{"min.insync.replicas": kadm.StringPtr(fmt.Sprint(minISR))}, topic)
			if err == nil {
				err = r.Err
			}
			createErr = err
			return err == nil
		}) {
			return false, fmt.Errorf("create topic %s: %w", topic, createErr)
		}
	}
	if err := writeInput(ctx, c.Seeds(), o.records); err != nil {
		return false, err
	}
	logf("input: %d records in %s", o.records, inTopic)

	// The pipeline runs until the group's offsets reach the input's end;
	// the killer until its kills are done.
	pctx, stopPipe := context.WithCancel(ctx)
	defer stopPipe()
	led := newLedger()
	pipeRng := rand.New(rand.NewPCG(o.seed^0x5bd1e995, o.seed))
	pipeDone := make(chan error, 1)
	go func() { pipeDone <- pipeline(pctx, c.Seeds(), led, o.abortRate, pipeRng) }()
	killsDone := make(chan int, 1)
	go func() { killsDone <- killer(pctx, o, c, adm, rng) }()

	ends, err := adm.ListEndOffsets(ctx, inTopic)
	if err != nil {
		return false, err
	}
	finished := lab.Poll(ctx, 10*time.Minute, time.Second, func() bool {
		offs, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return false
		}
		done := true
		ends.Each(func(e kadm.ListedOffset) {
			if o, ok := offs.Lookup(inTopic, e.Partition); e.Offset > 0 && (!ok || o.At < e.Offset) {
				done = false
			}
		})
		return done
	})
	kills := <-killsDone // the killer ends its kills first
	if !finished {
		stopPipe()
		led.mu.Lock()
		n := led.committedRecs
		led.mu.Unlock()
		return true, fmt.Errorf("the pipeline did not commit the whole input within 10m (%d records committed)", n)
	}
	stopPipe()
	if err := <-pipeDone; err != nil && !errors.Is(err, context.Canceled) {
		logf("pipeline: %v", err)
	}
	for _, b := range c.Brokers {
		if !b.Running() {
			if err := c.Start(b); err != nil {
				return false, err
			}
		}
	}
	led.mu.Lock()
	logf("pipeline done: %d kills, %d sessions; transactions: %d committed (%d records), %d aborted on purpose (%d records), %d other aborted or unknown (%d records)",
		kills, led.sessions, len(led.committed), led.committedRecs, len(led.purposed), led.purposedRecs,
		len(led.aborted)-len(led.purposed), led.otherRecs)
	led.mu.Unlock()

	rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	// The last kill's broker may still be starting: read once every
	// partition of the output answers ListOffsets (read_committed).
	if !lab.Poll(rctx, 2*time.Minute, 500*time.Millisecond, func() bool {
		ends, err := adm.ListCommittedOffsets(rctx, outTopic)
		return err == nil && ends.Error() == nil
	}) {
		return false, errors.New("the output's partitions did not all answer ListOffsets within 2m")
	}
	got, err := readAll(rctx, c.Seeds(), kgo.ReadCommitted())
	if err != nil {
		return false, err
	}
	all, err := readAll(rctx, c.Seeds(), kgo.ReadUncommitted())
	if err != nil {
		return false, err
	}
	return check(o.records, got, all, led), nil
}

// value is the input value of record i.
func value(i int) string { return fmt.Sprintf("in-%08d", i) }

func writeInput(ctx context.Context, seeds []string, n int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(inTopic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	var failed atomic.Value
	for i := range n {
		cl.Produce(ctx, kgo.StringRecord(value(i)), func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Store(err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if err, _ := failed.Load().(error); err != nil {
		return fmt.Errorf("write input: %w", err)
	}
	return nil
}

// txnHeader names the header that carries an output record's transaction
// id (s<session>-t<transaction>).
const txnHeader = "txn"

// ledger is what the pipeline knows of its transactions' outcomes.
type ledger struct {
	mu        sync.Mutex
	committed map[string]bool // committed (End said so)
	aborted   map[string]int  // known aborted: records each wrote (0 when none may have reached the log)
	purposed  map[string]bool // aborted on purpose, after a flush every record of which was acknowledged
	// records counts input records per outcome: committed, aborted on
	// purpose, aborted otherwise or unknown.
	committedRecs, purposedRecs, otherRecs int64
	sessions                               int64
}

func newLedger() *ledger {
	return &ledger{committed: map[string]bool{}, aborted: map[string]int{}, purposed: map[string]bool{}}
}

// pipeline runs the transactional consume-transform-produce loop, making
// a new session whenever one fails, until ctx ends.
func pipeline(ctx context.Context, seeds []string, led *ledger, abortRate float64, rng *rand.Rand) error {
	for session := 1; ctx.Err() == nil; session++ {
		sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(seeds...), kgo.TransactionalID(txnID),
			kgo.ConsumerGroup(group), kgo.ConsumeTopics(inTopic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.RequireStableFetchOffsets(), kgo.DefaultProduceTopic(outTopic), kgo.TransactionTimeout(20*time.Second),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.MetadataMinAge(250*time.Millisecond),
			kgo.RequestRetries(50), kgo.RetryTimeout(30*time.Second))
		if err != nil {
			return err
		}
		led.mu.Lock()
		led.sessions++
		led.mu.Unlock()
		err = serve(ctx, sess, session, led, abortRate, rng)
		sess.Close()
		if err != nil && ctx.Err() == nil {
			logf("session ended: %v; starting a new one", err)
			time.Sleep(500 * time.Millisecond)
		}
	}
	return ctx.Err()
}

func serve(ctx context.Context, sess *kgo.GroupTransactSession, session int, led *ledger, abortRate float64, rng *rand.Rand) error {
	for txn := 1; ; txn++ {
		fs := sess.PollRecords(ctx, 500)
		if err := ctx.Err(); err != nil {
			return err
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			logf("fetch: %v", ferr)
		}
		n := fs.NumRecords()
		if n == 0 {
			continue
		}
		id := fmt.Sprintf("s%d-t%d", session, txn)
		if err := sess.Begin(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			sess.Produce(ctx, &kgo.Record{Key: r.Value, Value: append([]byte("out-"), r.Value...),
				Headers: []kgo.RecordHeader{{Key: txnHeader, Value: []byte(id)}}}, nil)
		})
		if rng.Float64() < abortRate {
			// Flushed first, so every record of the transaction is
			// acknowledged (acks=all) and in the log before the abort.
			if err := sess.Client().Flush(ctx); err != nil {
				led.record(id, n, false, false)
				_, _ = sess.End(ctx, kgo.TryAbort)
				return fmt.Errorf("flush: %w", err)
			}
			if _, err := sess.End(ctx, kgo.TryAbort); err != nil {
				led.record(id, n, false, false)
				return fmt.Errorf("end (abort): %w", err)
			}
			led.record(id, n, false, true)
			continue
		}
		ok, err := sess.End(ctx, kgo.TryCommit)
		switch {
		case err != nil:
			led.record(id, n, false, false) // outcome unknown
			return fmt.Errorf("end: %w", err)
		case ok:
			led.record(id, n, true, false)
		default:
			// The session aborted it (a rebalance or a failed flush):
			// its records come again.
			led.abortedKnown(id, n)
		}
	}
}

// record notes the outcome of transaction id of n input records:
// committed, aborted on purpose, or (both false) unknown.
func (l *ledger) record(id string, n int, committed, purposed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case committed:
		l.committed[id] = true
		l.committedRecs += int64(n)
	case purposed:
		l.aborted[id] = n
		l.purposed[id] = true
		l.purposedRecs += int64(n)
	default:
		l.otherRecs += int64(n)
	}
}

// abortedKnown notes a transaction End reported aborted (not on purpose).
func (l *ledger) abortedKnown(id string, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.aborted[id] = 0
	l.otherRecs += int64(n)
}

// killer kills a broker -kills times, every -kill-every, and restarts it
// -down later; it returns the kills done.
func killer(ctx context.Context, o options, c *lab.Cluster, adm *kadm.Client, rng *rand.Rand) int {
	done := 0
	for done < o.kills {
		select {
		case <-ctx.Done():
			return done
		case <-time.After(o.killEvery):
		}
		victim := c.Brokers[0]
		what := "the broker"
		if len(c.Brokers) > 1 {
			victim, what = pickVictim(ctx, c, adm, rng)
		}
		if _, err := c.Kill(ctx, victim); err != nil {
			logf("kill broker %d: %v", victim.ID, err)
			continue
		}
		done++
		logf("kill %d: kill -9 broker %d (%s)", done, victim.ID, what)
		select {
		case <-ctx.Done():
		case <-time.After(o.down):
		}
		if err := c.Start(victim); err != nil {
			logf("restart broker %d: %v", victim.ID, err)
		}
	}
	return done
}

// pickVictim chooses the leader of a random input or output partition,
// or the group's or the transaction's coordinator.
func pickVictim(ctx context.Context, c *lab.Cluster, adm *kadm.Client, rng *rand.Rand) (*lab.Broker, string) {
	switch k := rng.IntN(4); k {
	case 0, 1:
		topic := []string{inTopic, outTopic}[k]
		if v, err := lab.Metadata(ctx, adm, topic); err == nil {
			p := rng.Int32N(partCount)
			if b := c.Broker(v.Parts[p].Leader); b != nil {
				return b, fmt.Sprintf("leader of %s-%d", topic, p)
			}
		}
	case 2:
		for _, g := range adm.FindGroupCoordinators(ctx, group) {
			if b := c.Broker(g.NodeID); b != nil && g.Err == nil {
				return b, "group coordinator"
			}
		}
	case 3:
		for _, t := range adm.FindTxnCoordinators(ctx, txnID) {
			if b := c.Broker(t.NodeID); b != nil && t.Err == nil {
				return b, "transaction coordinator"
			}
		}
	}
	return c.Brokers[rng.IntN(len(c.Brokers))], "a random broker"
}

// output is one record read back: its value and its transaction's id.
type output struct{ value, txn string }

// readAll reads the output topic from the start until ten seconds pass
// without a record (the pipeline has stopped; every partition ends with a
// transaction marker, which a consumer never sees, so its end offset is
// no stop condition).
func readAll(ctx context.Context, seeds []string, iso kgo.IsolationLevel) ([]output, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(outTopic), kgo.FetchIsolationLevel(iso),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []output
	for {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return out, fmt.Errorf("read back: %w (read %d records)", err, len(out))
		}
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			o := output{value: string(r.Value)}
			for _, h := range r.Headers {
				if h.Key == txnHeader {
					o.txn = string(h.Value)
				}
			}
			out = append(out, o)
			n++
		})
		if n == 0 && pctx.Err() != nil {
			return out, nil
		}
	}
}

// check verifies exactly once: got (read_committed) holds out-<value> for
// every input value once and nothing from a transaction known aborted; all
// (read_uncommitted) holds, besides, every record of the transactions
// aborted on purpose.
func check(n int, got, all []output, led *ledger) bool {
	led.mu.Lock()
	defer led.mu.Unlock()
	seen := make(map[string]int, n)
	foreign, abortedRead := 0, 0
	var sum uint64
	for _, o := range got {
		if _, ok := led.aborted[o.txn]; ok {
			abortedRead++
			if abortedRead <= 10 {
				logf("PROBLEM %s of aborted transaction %s was read with read_committed", o.value, o.txn)
			}
		}
		if !strings.HasPrefix(o.value, "out-in-") {
			foreign++
			continue
		}
		seen[o.value]++
		sum += uint64(crc32.ChecksumIEEE([]byte(o.value)))
	}
	var want uint64
	missing, dup := 0, 0
	for i := range n {
		v := "out-" + value(i)
		want += uint64(crc32.ChecksumIEEE([]byte(v)))
		switch seen[v] {
		case 0:
			missing++
			if missing <= 10 {
				logf("PROBLEM %s is not in the output", v)
			}
		case 1:
		default:
			dup++
			if dup <= 10 {
				logf("PROBLEM %s is in the output %d times", v, seen[v])
			}
		}
	}
	// Every record of a transaction aborted on purpose was acknowledged
	// before the abort: read_uncommitted must return it.
	inLog := map[string]int{}
	for _, o := range all {
		if led.purposed[o.txn] {
			inLog[o.txn]++
		}
	}
	var purposedInLog int
	lostAborted := 0
	for id := range led.purposed {
		purposedInLog += inLog[id]
		if inLog[id] < led.aborted[id] {
			lostAborted++
			if lostAborted <= 10 {
				logf("PROBLEM aborted transaction %s wrote %d acknowledged records; read_uncommitted returned %d", id, led.aborted[id], inLog[id])
			}
		}
	}
	logf("read_committed: %d records (want %d), missing %d, duplicated %d, foreign %d, from aborted transactions %d, checksum %x (want %x, sums of CRC-32s)",
		len(got), n, missing, dup, foreign, abortedRead, sum, want)
	logf("read_uncommitted: %d records, %d of them from the %d transactions aborted on purpose (%d of which lack records)",
		len(all), purposedInLog, len(led.purposed), lostAborted)
	ok := len(got) == n && missing == 0 && dup == 0 && foreign == 0 && abortedRead == 0 && sum == want && lostAborted == 0
	if ok {
		fmt.Println("eos: PASS")
	} else {
		fmt.Println("eos: FAIL")
	}
	return !ok
}
