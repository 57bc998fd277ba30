package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

const benchLong = `Generate load and measure throughput and latency, in the manner of the
OpenMessaging Benchmark.

  produce  --producers clients send --record-size records at --rate for
           --duration; latency is from the send to the acknowledgement.
           Without --rate, one record in 16 is timed. With
           --transaction-records N each producer is transactional and
           commits every N records (latency stays send to
           acknowledgement; the report adds the commits and their
           latency, from the moment a transaction's records are all
           acknowledged to the end of its commit).
  consume  read the topic for --duration (from --offset); with --drain
           stop once what was there at the start has been read.
  share    a share group of --consumers members reads the topic, each
           record acknowledged on its own (queues, KIP-932).
  e2e      produce as above while one consumer reads the new records;
           end-to-end latency is from the send, whose time each record
           carries in its first 8 bytes, to the consumer receiving it.

The topic is created with --partitions (and --replication-factor) if it
does not exist. A progress line goes to stderr every --progress; the final
report is a table, or JSON with --json. Rates are in records/s and MiB/s
(2^20 bytes of values); latencies are p50, p99, p99.9 and max. Ctrl-C ends
the run early and still reports.`

// benchOptions are the flags of bench.
type benchOptions struct {
	topic             string
	partitions        int32
	replicationFactor int16
	recordSize        int
	rate              float64
	duration          time.Duration
	producers         int
	acks              string
	linger            time.Duration
	batchMaxBytes     int32
	compression       string
	maxInFlight       int
	bufferBytes       int64
	progress          time.Duration
	offset            string
	drain             bool
	txnRecords        int
}

// sendTimeBytes is the size of the send time at the start of each value.
const sendTimeBytes = 8

// newBenchCmd returns `gregor bench` and its subcommands.
func newBenchCmd() *cobra.Command {
	o := &clientOptions{}
	b := &benchOptions{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure produce, consume and end-to-end throughput and latency",
		Long:  benchLong,
		Args:  cobra.NoArgs,
	}
	o.addFlags(cmd)
	f := cmd.PersistentFlags()
	f.StringVar(&b.topic, "topic", "gregor-bench", "topic to use")
	f.Int32Var(&b.partitions, "partitions", 6, "partitions of the topic when it is created")
	f.Int16Var(&b.replicationFactor, "replication-factor", -1, "replication factor of the topic when it is created (-1: the broker's default)")
	f.IntVar(&b.recordSize, "record-size", 1024, "bytes per record value (at least 8: the send time)")
	f.Float64Var(&b.rate, "rate", 0, "records per second over all producers (0: as fast as possible)")
	f.DurationVar(&b.duration, "duration", time.Minute, "how long to produce (or consume)")
	f.IntVar(&b.producers, "producers", 1, "producer clients, each with its share of --rate")
	f.StringVar(&b.acks, "acks", "all", "acknowledgements: all, 1 or 0")
	f.DurationVar(&b.linger, "linger", 5*time.Millisecond, "how long a partition's batch waits for more records")
	f.Int32Var(&b.batchMaxBytes, "batch-max-bytes", 1<<20, "largest record batch")
	f.StringVar(&b.compression, "compression", "none", "none, gzip, snappy, lz4 or zstd")
	f.IntVar(&b.maxInFlight, "max-in-flight", 5, "produce requests in flight per broker with --acks 1 or 0 (an idempotent producer, acks=all, keeps 5), as the Java producer's max.in.flight.requests.per.connection")
	f.Int64Var(&b.bufferBytes, "buffer-bytes", 0, "record bytes a producer buffers before sending waits, as the Java producer's buffer.memory (0: franz-go's limit of 50,000 records)")
	f.IntVar(&b.txnRecords, "transaction-records", 0, "produce in transactions of this many records per producer, each committed (0: no transactions; needs --acks all)")
	f.DurationVar(&b.progress, "progress", 5*time.Second, "interval of the progress lines on stderr (0: none)")
	cmd.AddCommand(
		&cobra.Command{
			Use:   "produce",
			Short: "Produce at --rate for --duration and measure acknowledgement latency",
			Args:  cobra.NoArgs,
			RunE:  func(cmd *cobra.Command, _ []string) error { return runBench(cmd, o, b, "produce") },
		},
		newBenchConsumeCmd(o, b),
		newBenchShareCmd(o, b),
		&cobra.Command{
			Use:   "e2e",
			Short: "Produce and consume at once and measure end-to-end latency",
			Args:  cobra.NoArgs,
			RunE:  func(cmd *cobra.Command, _ []string) error { return runBench(cmd, o, b, "e2e") },
		},
	)
	return cmd
}

func newBenchConsumeCmd(o *clientOptions, b *benchOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "consume",
		Short: "Consume for --duration and measure throughput",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runBench(cmd, o, b, "consume") },
	}
	cmd.Flags().StringVar(&b.offset, "offset", "start", "where to start reading: start or end")
	cmd.Flags().BoolVar(&b.drain, "drain", false, "stop once the records that were there at the start have been read")
	return cmd
}

// benchStats are the counts and latencies of one side of a run. Latencies
// are recorded twice: for the run, and for the progress interval.
type benchStats struct {
	// txn counts a transactional producer's commits; nil without
	// --transaction-records.
	txn      *txnStats
	mu       sync.Mutex
	records  int64
	bytes    int64
	errors   int64
	hist     histogram
	interval struct {
		records, bytes int64
		hist           histogram
	}
}

// add counts a record of size bytes; lat < 0 means no latency is known.
func (s *benchStats) add(size int, lat time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records++
	s.bytes += int64(size)
	s.interval.records++
	s.interval.bytes += int64(size)
	if lat >= 0 {
		s.hist.record(lat)
		s.interval.hist.record(lat)
	}
}

func (s *benchStats) fail() {
	s.mu.Lock()
	s.errors++
	s.mu.Unlock()
}

func (s *benchStats) count() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.records
}

// benchResult is one side of a report.
type benchResult struct {
	Records       int64          `json:"records"`
	Bytes         int64          `json:"bytes"`
	Errors        int64          `json:"errors"`
	RecordsPerSec float64        `json:"records_per_sec"`
	MiBPerSec     float64        `json:"mib_per_sec"`
	Latency       *latencyReport `json:"latency_ms,omitempty"`
}

// latencyReport holds latencies in milliseconds.
type latencyReport struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func latencyOf(h *histogram) *latencyReport {
	if h.count() == 0 {
		return nil
	}
	return &latencyReport{Mean: ms(h.mean()), P50: ms(h.quantile(0.5)), P99: ms(h.quantile(0.99)),
		P999: ms(h.quantile(0.999)), Max: ms(h.quantile(1))}
}

func resultOf(records, bytes, errors int64, h *histogram, elapsed time.Duration) *benchResult {
	r := &benchResult{Records: records, Bytes: bytes, Errors: errors, Latency: latencyOf(h)}
	if s := elapsed.Seconds(); s > 0 {
		r.RecordsPerSec = float64(records) / s
		r.MiBPerSec = float64(bytes) / s / (1 << 20)
	}
	return r
}

// result is the report of the whole run.
func (s *benchStats) result(elapsed time.Duration) *benchResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	return resultOf(s.records, s.bytes, s.errors, &s.hist, elapsed)
}

// takeInterval returns the report of the interval and starts a new one.
func (s *benchStats) takeInterval(elapsed time.Duration) *benchResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := resultOf(s.interval.records, s.interval.bytes, 0, &s.interval.hist, elapsed)
	s.interval.records, s.interval.bytes, s.interval.hist = 0, 0, histogram{}
	return r
}

// benchReport is the final report.
type benchReport struct {
	Mode        string  `json:"mode"`
	Topic       string  `json:"topic"`
	Partitions  int     `json:"partitions"`
	RecordSize  int     `json:"record_size,omitempty"`
	Producers   int     `json:"producers,omitempty"`
	TargetRate  float64 `json:"target_rate,omitempty"`
	Acks        string  `json:"acks,omitempty"`
	Compression string  `json:"compression,omitempty"`
	// Seconds is how long the run measured: from the first send (or
	// read) until the last acknowledgement (or record).
	Seconds float64      `json:"seconds"`
	Produce *benchResult `json:"produce,omitempty"`
	// Transactions are the commits of --transaction-records.
	Transactions *txnResult `json:"transactions,omitempty"`
	// Consume holds the consumer's side; its latency is end to end (e2e only).
	Consume *benchResult `json:"consume,omitempty"`
}

func runBench(cmd *cobra.Command, o *clientOptions, b *benchOptions, mode string) error {
	switch {
	case b.recordSize < sendTimeBytes:
		return fmt.Errorf("--record-size: want at least %d bytes", sendTimeBytes)
	case b.producers < 1:
		return errors.New("--producers: want at least 1")
	case b.rate < 0:
		return errors.New("--rate: want 0 (no limit) or more")
	case b.duration <= 0:
		return errors.New("--duration: want more than 0")
	case b.maxInFlight < 1:
		return errors.New("--max-in-flight: want at least 1")
	case b.bufferBytes < 0:
		return errors.New("--buffer-bytes: want 0 (franz-go's default) or more")
	case b.txnRecords < 0:
		return errors.New("--transaction-records: want 0 (no transactions) or more")
	case b.txnRecords > 0 && b.acks != "all" && b.acks != "-1":
		return errors.New("--transaction-records needs --acks all")
	}
	popts, err := producerOpts(b.acks, b.compression, b.maxInFlight)
	if err != nil {
		return err
	}
	popts = append(popts, kgo.DefaultProduceTopic(b.topic), kgo.ProducerLinger(b.linger), kgo.ProducerBatchMaxBytes(b.batchMaxBytes))
	// Unkeyed records stay on one partition until a batch's worth has gone
	// to it, as with the Java producer's built-in partitioner (KIP-794
	// sticks for batch.size bytes); franz-go's default moves on after
	// 64 KiB, which with thousands of partitions makes every batch small.
	popts = append(popts, kgo.RecordPartitioner(kgo.UniformBytesPartitioner(int(b.batchMaxBytes), true, true, nil)))
	if b.bufferBytes > 0 {
		// A limit in bytes alone, as the Java producer's: every record has
		// at least sendTimeBytes, so this bounds the records too.
		popts = append(popts, kgo.MaxBufferedBytes(int(b.bufferBytes)), kgo.MaxBufferedRecords(int(b.bufferBytes/sendTimeBytes)))
	}

	setupCtx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
	defer cancel()
	acl, err := o.newClient()
	if err != nil {
		return err
	}
	defer acl.Close()
	adm := kadm.NewClient(acl)
	partitions, err := ensureTopic(setupCtx, adm, b)
	if err != nil {
		return err
	}

	rep := benchReport{Mode: mode, Topic: b.topic, Partitions: partitions}
	if mode != "consume" {
		rep.RecordSize, rep.Producers, rep.TargetRate, rep.Acks, rep.Compression = b.recordSize, b.producers, b.rate, b.acks, b.compression
	}
	var prod, cons *benchStats
	if mode != "consume" {
		prod = &benchStats{}
		if b.txnRecords > 0 {
			prod.txn = &txnStats{}
		}
	}
	if mode != "produce" {
		cons = &benchStats{}
	}

	// Ctrl-C ends producing and consuming; a second one ends the process.
	ctx, stop := interruptible(cmd.Context())
	defer stop()
	stderr := &lockedWriter{w: cmd.ErrOrStderr()}

	// The consumer starts at offsets listed now, so that e2e sees every
	// record produced from here on.
	var (
		consumeDone chan error
		consumer    *kgo.Client
		stopConsume context.CancelFunc
		drainTo     kadm.ListedOffsets
	)
	if cons != nil {
		list := adm.ListEndOffsets
		if mode == "consume" && b.offset == "start" {
			list = adm.ListStartOffsets
		} else if mode == "consume" && b.offset != "end" {
			return fmt.Errorf("--offset %q: want start or end", b.offset)
		}
		starts, err := listOffsets(setupCtx, list, b.topic)
		if err != nil {
			return err
		}
		if b.drain {
			if drainTo, err = listOffsets(setupCtx, adm.ListEndOffsets, b.topic); err != nil {
				return err
			}
		}
		consumer, err = o.newClient(kgo.ConsumePartitions(starts.KOffsets()), kgo.FetchMaxWait(100*time.Millisecond))
		if err != nil {
			return err
		}
		defer consumer.Close()
	}

	start := time.Now()
	var (
		lastProduce atomic.Int64 // ns since start of the last acknowledgement
		lastConsume atomic.Int64 // ns since start of the last record read
	)
	if cons != nil {
		var cctx context.Context
		if mode == "consume" {
			cctx, stopConsume = context.WithTimeout(ctx, b.duration)
		} else {
			cctx, stopConsume = context.WithCancel(ctx)
		}
		defer stopConsume()
		consumeDone = make(chan error, 1)
		go func() {
			consumeDone <- consumeBench(cctx, consumer, cons, mode == "e2e", start, &lastConsume, drainTo)
		}()
	}

	progressDone := make(chan struct{})
	var progressWG sync.WaitGroup
	if b.progress > 0 {
		progressWG.Add(1)
		go func() {
			defer progressWG.Done()
			printProgress(stderr, b.progress, start, prod, cons, mode, progressDone)
		}()
	}

	var runErr error
	if prod != nil {
		pctx, cancel := context.WithTimeout(ctx, b.duration)
		runErr = produceBench(pctx, cmd.Context(), o, popts, b, mode == "e2e", prod, start, &lastProduce)
		cancel()
		if cons != nil {
			// Give the consumer time to read what was acknowledged.
			waitCaughtUp(ctx, cons, prod.count(), max(b.duration, 10*time.Second))
			stopConsume()
		}
	}
	if cons != nil {
		if err := <-consumeDone; err != nil && runErr == nil {
			runErr = err
		}
	}
	close(progressDone)
	progressWG.Wait()

	elapsed := time.Duration(max(lastProduce.Load(), lastConsume.Load()))
	if mode == "consume" && !b.drain {
		elapsed = min(time.Since(start), b.duration)
	}
	rep.Seconds = elapsed.Seconds()
	if prod != nil {
		rep.Produce = prod.result(time.Duration(lastProduce.Load()))
		if t := prod.txn; t != nil {
			t.mu.Lock()
			rep.Transactions = &txnResult{Records: b.txnRecords, Committed: t.committed, Failed: t.failed}
			if t.committed > 0 {
				rep.Transactions.CommitLatency = latencyOf(&t.commit)
			}
			t.mu.Unlock()
		}
	}
	if cons != nil {
		consElapsed := time.Duration(lastConsume.Load())
		if mode == "consume" {
			consElapsed = elapsed
		}
		rep.Consume = cons.result(consElapsed)
	}
	if o.json {
		if err := writeJSON(cmd.OutOrStdout(), rep); err != nil {
			return err
		}
	} else if err := printBenchReport(cmd.OutOrStdout(), rep); err != nil {
		return err
	}
	if runErr == nil && rep.Transactions != nil && rep.Transactions.Failed > 0 {
		runErr = fmt.Errorf("%d transactions not committed", rep.Transactions.Failed)
	}
	if runErr == nil && rep.Produce != nil && rep.Produce.Errors > 0 {
		runErr = fmt.Errorf("%d records not produced", rep.Produce.Errors)
	}
	return runErr
}

// ensureTopic creates the topic if it does not exist and returns its
// partition count.
func ensureTopic(ctx context.Context, adm *kadm.Client, b *benchOptions) (int, error) {
	md, err := adm.Metadata(ctx, b.topic)
	if err != nil {
		return 0, fmt.Errorf("metadata of %s: %w", b.topic, err)
	}
	if t, ok := md.Topics[b.topic]; ok && t.Err == nil {
		return len(t.Partitions), nil
	} else if ok && !errors.Is(t.Err, kerr.UnknownTopicOrPartition) {
		return 0, fmt.Errorf("topic %s: %w", b.topic, t.Err)
	}
	r, err := adm.CreateTopic(ctx, b.partitions, b.replicationFactor, nil, b.topic)
	if err = createTopicErr(r, err); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return 0, fmt.Errorf("create topic %s: %w", b.topic, err)
	}
	return int(b.partitions), nil
}

// listOffsets lists the offsets of topic, retrying while its partitions
// have no leader yet, as right after the topic was created.
func listOffsets(ctx context.Context, list func(context.Context, ...string) (kadm.ListedOffsets, error), topic string) (kadm.ListedOffsets, error) {
	for {
		os, err := list(ctx, topic)
		if err == nil {
			err = os.Error()
		}
		if err == nil {
			return os, nil
		}
		if !errors.Is(err, kerr.UnknownTopicOrPartition) && !kerr.IsRetriable(err) {
			return nil, fmt.Errorf("list offsets of %s: %w", topic, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("list offsets of %s: %w", topic, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// produceBench runs the producers until ctx ends or, with a rate, until
// the records scheduled within --duration were sent; then it waits, with
// flushCtx, for their acknowledgements.
func produceBench(ctx, flushCtx context.Context, o *clientOptions, opts []kgo.Opt, b *benchOptions, stamp bool,
	s *benchStats, start time.Time, last *atomic.Int64) error {
	payload := make([]byte, b.recordSize)
	r := rand.New(rand.NewPCG(uint64(start.UnixNano()), 1))
	for i := range payload {
		payload[i] = byte(r.Uint32())
	}
	clients := make([]*kgo.Client, b.producers)
	for i := range clients {
		copts := opts
		if b.txnRecords > 0 {
			copts = append(slices.Clone(opts), kgo.TransactionalID(fmt.Sprintf("gregor-bench-%d-%d", start.UnixNano(), i)))
		}
		cl, err := o.newClient(copts...)
		if err != nil {
			for _, c := range clients[:i] {
				c.Close()
			}
			return err
		}
		clients[i] = cl
	}
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()

	// The load generator should cost as little as it can, so that the
	// broker, not the client, is measured: records are reused once
	// acknowledged, and the send time travels in the record's timestamp,
	// so one promise serves them all. In produce mode every record shares
	// one payload, as in Kafka's ProducerPerformance; e2e stamps the send
	// time into each record's own copy of it.
	pool := sync.Pool{New: func() any { return new(kgo.Record) }}
	// At full speed, reading the clock twice per record costs a fifth of
	// the load generator's CPU with 100-byte records. So without a rate
	// only every latencySampleEvery-th record of a producer is timed, as
	// Kafka's ProducerPerformance samples its latencies too; the records
	// between carry the last timed one's send time. A timed record is
	// marked by its context, a child of flushCtx that only tells it apart
	// (the client never replaces a record's context).
	timedCtx, stopTimed := context.WithCancel(flushCtx)
	defer stopTimed()
	sampleEvery := latencySampleEvery
	if b.rate > 0 || stamp {
		sampleEvery = 1
	}
	promise := func(rec *kgo.Record, err error) {
		switch {
		case err != nil:
			s.fail()
		case rec.Context == timedCtx:
			now := time.Now()
			s.add(len(rec.Value), now.Sub(rec.Timestamp))
			storeMax(last, int64(now.Sub(start)))
		default:
			s.add(len(rec.Value), -1)
		}
		*rec = kgo.Record{Value: rec.Value}
		pool.Put(rec)
	}
	newRecord := func(sent time.Time, timed bool) *kgo.Record {
		rec := pool.Get().(*kgo.Record)
		rec.Timestamp = sent
		if timed {
			rec.Context = timedCtx
		}
		if !stamp {
			rec.Value = payload
			return rec
		}
		if len(rec.Value) != len(payload) || &rec.Value[0] == &payload[0] {
			rec.Value = bytes.Clone(payload)
		}
		binary.BigEndian.PutUint64(rec.Value, uint64(sent.UnixNano()))
		return rec
	}

	// Each producer sends its share of the rate on a fixed schedule; one
	// that falls behind sends at once until it has caught up.
	var interval time.Duration
	if b.rate > 0 {
		interval = time.Duration(float64(time.Second) * float64(b.producers) / b.rate)
	}
	var wg sync.WaitGroup
	for _, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			timer := time.NewTimer(0)
			defer timer.Stop()
			var sent time.Time
			open := false // a transaction of this producer is open
			if s.txn != nil {
				// Whatever ends the loop, the open transaction is
				// committed (its records were sent).
				defer func() {
					if open {
						s.txn.end(flushCtx, cl)
					}
				}()
			}
			for i := 0; ctx.Err() == nil; i++ {
				if interval > 0 {
					at := time.Duration(i) * interval
					if at >= b.duration {
						return
					}
					if d := time.Until(start.Add(at)); d > 0 {
						timer.Reset(d)
						select {
						case <-ctx.Done():
							return
						case <-timer.C:
						}
					}
				}
				// flushCtx, not ctx: records sent before the end are
				// still delivered.
				if s.txn != nil && i%b.txnRecords == 0 {
					if open {
						open = false
						if !s.txn.end(flushCtx, cl) {
							return
						}
					}
					if err := cl.BeginTransaction(); err != nil {
						s.txn.fail()
						return
					}
					open = true
				}
				timed := i%sampleEvery == 0
				if timed {
					sent = time.Now()
				}
				cl.Produce(flushCtx, newRecord(sent, timed), promise)
			}
		}()
	}
	wg.Wait()
	for _, cl := range clients {
		if err := cl.Flush(flushCtx); err != nil {
			return fmt.Errorf("flush: %w", err)
		}
	}
	return nil
}

// txnStats counts the transactions of --transaction-records.
type txnStats struct {
	mu        sync.Mutex
	committed int64
	failed    int64
	commit    histogram
}

// end flushes the open transaction of cl and commits it, recording the
// time from the flush to the end of the commit. It reports false when the
// commit failed.
func (t *txnStats) end(ctx context.Context, cl *kgo.Client) bool {
	err := cl.Flush(ctx)
	began := time.Now()
	if err == nil {
		err = cl.EndTransaction(ctx, kgo.TryCommit)
	}
	took := time.Since(began)
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.failed++
		return false
	}
	t.committed++
	t.commit.record(took)
	return true
}

func (t *txnStats) fail() {
	t.mu.Lock()
	t.failed++
	t.mu.Unlock()
}

// txnResult is the transactions' part of a report.
type txnResult struct {
	Records       int            `json:"records_per_transaction"`
	Committed     int64          `json:"committed"`
	Failed        int64          `json:"failed"`
	CommitLatency *latencyReport `json:"commit_latency,omitempty"`
}

// latencySampleEvery is how many records of a producer running without a
// rate share one clock reading; one of them is timed.
const latencySampleEvery = 16

// storeMax raises a to v if v is larger.
func storeMax(a *atomic.Int64, v int64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

// consumeBench reads until ctx ends, or until the offsets of drainTo are
// reached. With latency, each record's first bytes are its send time.
func consumeBench(ctx context.Context, cl *kgo.Client, s *benchStats, latency bool, start time.Time,
	last *atomic.Int64, drainTo kadm.ListedOffsets) error {
	remaining := map[int32]int64{}
	drainTo.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			remaining[o.Partition] = o.Offset
		}
	})
	drained := func() bool {
		if drainTo == nil {
			return false
		}
		// An empty topic is drained at once.
		return len(remaining) == 0
	}
	for !drained() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil && fs.NumRecords() == 0 {
			return nil
		}
		now := time.Now()
		fs.EachRecord(func(r *kgo.Record) {
			lat := time.Duration(-1)
			if latency && len(r.Value) >= sendTimeBytes {
				lat = now.Sub(time.Unix(0, int64(binary.BigEndian.Uint64(r.Value))))
			}
			s.add(len(r.Value), lat)
			if end, ok := remaining[r.Partition]; ok && r.Offset+1 >= end {
				delete(remaining, r.Partition)
			}
		})
		if fs.NumRecords() > 0 {
			storeMax(last, int64(now.Sub(start)))
		}
		for _, fe := range fs.Errors() {
			if !errors.Is(fe.Err, context.Canceled) && !errors.Is(fe.Err, context.DeadlineExceeded) {
				return fmt.Errorf("consume %s partition %d: %w", fe.Topic, fe.Partition, fe.Err)
			}
		}
	}
	return nil
}

// waitCaughtUp waits until s has n records, for at most limit.
func waitCaughtUp(ctx context.Context, s *benchStats, n int64, limit time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for s.count() < n {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// printProgress writes a line for the last interval every interval until
// done is closed.
func printProgress(w io.Writer, interval time.Duration, start time.Time, prod, cons *benchStats, mode string, done <-chan struct{}) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	prev := start
	for {
		select {
		case <-done:
			return
		case now := <-tick.C:
			var parts []string
			if prod != nil {
				parts = append(parts, "produce: "+progressCells(prod.takeInterval(now.Sub(prev))))
			}
			if cons != nil {
				name := "consume"
				if mode == "e2e" {
					name = "e2e"
				}
				parts = append(parts, name+": "+progressCells(cons.takeInterval(now.Sub(prev))))
			}
			prev = now
			fmt.Fprintf(w, "[%6.1fs] %s\n", now.Sub(start).Seconds(), strings.Join(parts, " | "))
		}
	}
}

func progressCells(r *benchResult) string {
	s := fmt.Sprintf("%.0f rec/s %.2f MiB/s", r.RecordsPerSec, r.MiBPerSec)
	if l := r.Latency; l != nil {
		s += fmt.Sprintf(" p50 %.2fms p99 %.2fms max %.2fms", l.P50, l.P99, l.Max)
	}
	return s
}

func printBenchReport(w io.Writer, r benchReport) error {
	fmt.Fprintf(w, "Mode: %s  Topic: %s  Partitions: %d", r.Mode, r.Topic, r.Partitions)
	if r.Produce != nil {
		fmt.Fprintf(w, "  Record size: %d B", r.RecordSize)
		rate := "max"
		if r.TargetRate > 0 {
			rate = fmt.Sprintf("%g/s", r.TargetRate)
		}
		fmt.Fprintf(w, "  Producers: %d  Rate: %s  Acks: %s  Compression: %s", r.Producers, rate, r.Acks, r.Compression)
	}
	fmt.Fprintf(w, "  Measured: %v\n\n", time.Duration(r.Seconds*float64(time.Second)).Round(time.Millisecond))
	tb := newTable(w, "", "RECORDS", "ERRORS", "RECORDS/S", "MiB/S", "MEAN(ms)", "P50(ms)", "P99(ms)", "P99.9(ms)", "MAX(ms)")
	row := func(name string, x *benchResult) {
		if x == nil {
			return
		}
		cells := []any{name, x.Records, x.Errors, fmt.Sprintf("%.1f", x.RecordsPerSec), fmt.Sprintf("%.2f", x.MiBPerSec)}
		if l := x.Latency; l != nil {
			for _, v := range []float64{l.Mean, l.P50, l.P99, l.P999, l.Max} {
				cells = append(cells, fmt.Sprintf("%.3f", v))
			}
		} else {
			cells = append(cells, "-", "-", "-", "-", "-")
		}
		tb.row(cells...)
	}
	row("produce", r.Produce)
	if t := r.Transactions; t != nil {
		cells := []any{fmt.Sprintf("commits of %d", t.Records), t.Committed, t.Failed, fmt.Sprintf("%.1f", float64(t.Committed)/max(r.Seconds, 1e-9)), "-"}
		if l := t.CommitLatency; l != nil {
			for _, v := range []float64{l.Mean, l.P50, l.P99, l.P999, l.Max} {
				cells = append(cells, fmt.Sprintf("%.3f", v))
			}
		} else {
			cells = append(cells, "-", "-", "-", "-", "-")
		}
		tb.row(cells...)
	}
	name := "consume"
	if r.Mode == "e2e" {
		name = "e2e"
	}
	row(name, r.Consume)
	return tb.flush()
}
