package broker

// kill -9 of a real broker process while an idempotent producer writes to
// it. TestBrokerCrash re-executes this test binary as the broker
// (TestChildBroker, told its data dir and fixed ports by an environment
// variable), produces with acks=all through one kgo client that
// lives across every crash, SIGKILLs the child at a random point, restarts
// it on the same data dir and ports (its embedded etcd included) and goes
// on producing. At the end it reads everything back and checks that every
// acknowledged record is at its acknowledged partition and offset with its
// value, that no value is stored twice (the producer retries what was in
// flight at the crash, and the restarted broker must recognise the batches
// it already has), and that each partition holds the producer's records
// in the order it sent them.
//
// After each restart it also checks the indexes the restarted broker
// rebuilt or recovered: a fetch at a sample of acknowledged offsets
// returns exactly that record first (offset index), and ListOffsets by
// each sampled record's timestamp answers an offset at or before it whose
// record is not older (time index).
//
// Beside it, the same client writes keyed records to a compacted topic
// whose segments roll every 200 ms, which the log cleaner compacts all the time (a
// dirty ratio of 1%, a short backoff), so that kills land before, during
// and after cleanings. After each restart every record acknowledged
// there before the kill must be in the log with its value, or superseded
// by a later record of its key in the log. Restarts also change settings:
// the cleaner's backoff and whether it runs at all, and the compacted
// topic's segment.ms and dirty ratio.
//
// The broker has two log dirs, and all along partitions of both topics
// move between them (AlterReplicaLogDirs, the copy throttled so that it
// takes a while), so kills land while a copy runs and while a moved log is
// put in place: the next start resumes the copy or finishes the move, and
// every acknowledged record is still there. With 50 cycles or more, at
// least one restart must have found a move under way.
//
// The RNG seed is logged; GREGOR_CRASH_SEED=<seed> replays the same
// choices (kill points, codec), though not the same timing.
// GREGOR_CRASH_CYCLES=<n> sets the number of kill -9 cycles (default
// crashCycles; `make crash-test` runs 100).

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/protocol/record"
)

const (
	crashCycles     = 5  // GREGOR_CRASH_CYCLES overrides
	crashIndexProbe = 20 // acknowledged records whose index entries are checked per cycle
	crashPartitions = 4
	crashTopic      = "crash"
	crashCompacted  = "crash-compacted"
	crashKeys       = 40 // keys of the compacted topic
)

// crashHarness picks a data dir and free ports for a child broker and
// returns a function starting it (again) on them. Child logs are shown
// when the test fails and scanned for race reports.
// The spec is returned by pointer: a change to it applies from the next
// start on.
func crashHarness(t *testing.T) (*childBrokerSpec, func() *childBroker) {
	logDir := t.TempDir()
	// A broker killed with -9 leaves its registration in etcd under a
	// lease that lives on until the session timeout passes (etcd renews
	// every lease when it restarts, too), and Start waits for it. A short
	// timeout keeps each restart short.
	spec := &childBrokerSpec{Dir: t.TempDir(), KafkaPort: freePort(t), EtcdClientPort: freePort(t), EtcdPeerPort: freePort(t),
		SessionTimeout: 2 * time.Second}
	var logs []string
	t.Cleanup(func() {
		for _, p := range logs {
			if t.Failed() {
				t.Logf("--- %s (last lines)\n%s", filepath.Base(p), tail(p, 40))
			}
			if strings.Contains(readFile(p), "DATA RACE") {
				t.Errorf("the child broker of %s reported a data race:\n%s", filepath.Base(p), readFile(p))
			}
		}
	})
	run := 0
	return spec, func() *childBroker {
		logPath := filepath.Join(logDir, fmt.Sprintf("child-%d.log", run))
		run++
		logs = append(logs, logPath)
		c, took := startChild(t, *spec, logPath)
		t.Logf("child broker run %d ready in %s", run, took.Round(time.Millisecond))
		return c
	}
}

// crashAck is one acknowledged record.
type crashAck struct {
	seq       int64
	partition int32
	offset    int64
	timestamp int64 // ms, as the producer stamped it
}

func crashValue(seq int64) []byte {
	v := fmt.Appendf(nil, "crash-%012d-", seq)
	for len(v) < 80 {
		v = append(v, byte('a'+len(v)%26))
	}
	return v
}

func crashSeq(v []byte) (int64, bool) {
	if len(v) != 80 || !strings.HasPrefix(string(v), "crash-") {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v[6:18]), 10, 64)
	return n, err == nil && string(v) == string(crashValue(n))
}

func TestBrokerCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 cycles of a child broker process: not with -short")
	}
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("GREGOR_CRASH_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("GREGOR_CRASH_SEED: %v", err)
		}
	}
	t.Logf("seed %d (GREGOR_CRASH_SEED=%d replays the choices)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	cycles := crashCycles
	if s := os.Getenv("GREGOR_CRASH_CYCLES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("GREGOR_CRASH_CYCLES=%q: want a positive number", s)
		}
		cycles = n
	}

	spec, startChild := crashHarness(t)
	spec.CleanerBackoff = 100 * time.Millisecond
	spec.SecondDir = t.TempDir()
	var childLogs []string
	start := func() *childBroker {
		c := startChild()
		childLogs = append(childLogs, c.logPath)
		return c
	}
	child := start()

	ctx := testContext(t, 8*time.Minute+time.Duration(cycles)*20*time.Second)
	addr := spec.addr()
	adminCl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(adminCl.Close)
	adm := kadm.NewClient(adminCl)
	created, err := adm.CreateTopic(ctx, crashPartitions, 1, nil, crashTopic)
	if err != nil || created.Err != nil {
		t.Fatalf("create topic: %v %v", err, created.Err)
	}

	compacted, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{
		"cleanup.policy": kadm.StringPtr("compact"), "segment.ms": kadm.StringPtr("200"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
	}, crashCompacted)
	if err != nil || compacted.Err != nil {
		t.Fatalf("create the compacted topic: %v %v", err, compacted.Err)
	}

	md, err := adm.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	clusterID := md.Cluster
	moves := startCrashMoves(ctx, t, adm, addr, []string{spec.Dir, spec.SecondDir}, rng.Uint64())

	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
	}{{"none", kgo.NoCompression()}, {"gzip", kgo.GzipCompression()}, {"snappy", kgo.SnappyCompression()},
		{"lz4", kgo.Lz4Compression()}, {"zstd", kgo.ZstdCompression()}}
	codec := codecs[rng.IntN(len(codecs))]
	t.Logf("producing with %s compression", codec.name)
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(crashTopic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(codec.codec),
		kgo.MaxBufferedRecords(5000), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)

	// The producer loop sends only as many records as the cycles have
	// granted, so the test's size does not depend on the machine's speed.
	var (
		mu   sync.Mutex
		acks []crashAck
		// compAcks are the compacted topic's acknowledged records.
		compAcks []compactedAck
		failed   []string
		nacked   atomic.Int64
		sent     atomic.Int64
		killAt   atomic.Int64 // the acknowledgement count that triggers the kill
		killNow  = make(chan struct{}, 1)

		budget struct {
			sync.Mutex
			cond    *sync.Cond
			allowed int64
			stop    bool
		}
		loopDone = make(chan struct{})
	)
	budget.cond = sync.NewCond(&budget.Mutex)
	grant := func(n int64) int64 {
		budget.Lock()
		defer budget.Unlock()
		budget.allowed += n
		budget.cond.Broadcast()
		return budget.allowed
	}
	killAt.Store(-1)
	go func() {
		defer close(loopDone)
		for seq := int64(0); ; seq++ {
			budget.Lock()
			for seq >= budget.allowed && !budget.stop {
				budget.cond.Wait()
			}
			stop := budget.stop
			budget.Unlock()
			if stop {
				return
			}
			sent.Store(seq + 1)
			if seq%3 == 0 {
				key := fmt.Appendf(nil, "key-%03d", (seq*7919)%crashKeys)
				cr := &kgo.Record{Topic: crashCompacted, Key: key, Value: crashValue(seq)}
				prod.Produce(ctx, cr, func(r *kgo.Record, err error) {
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						if len(failed) < 10 {
							failed = append(failed, fmt.Sprintf("compacted record %d: %v", seq, err))
						}
						return
					}
					compAcks = append(compAcks, compactedAck{key: string(key), seq: seq, offset: r.Offset})
				})
			}
			prod.Produce(ctx, &kgo.Record{Value: crashValue(seq)}, func(r *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					if len(failed) < 10 {
						failed = append(failed, fmt.Sprintf("record %d: %v", seq, err))
					}
					return
				}
				acks = append(acks, crashAck{seq: seq, partition: r.Partition, offset: r.Offset, timestamp: r.Timestamp.UnixMilli()})
				if nacked.Add(1) == killAt.Load() {
					select {
					case killNow <- struct{}{}:
					default:
					}
				}
			})
		}
	}()

	var probes int
	for cycle := range cycles {
		// Grant a random number of records and kill the broker when a
		// random part of the first half of them is acknowledged, plus a
		// random moment: the rest are then being batched, written or
		// synced, or wait for their response.
		n := 2_000 + rng.Int64N(40_000)
		killAt.Store(nacked.Load() + 1 + rng.Int64N(n/2))
		extra := time.Duration(rng.IntN(3_000)) * time.Microsecond
		allowed := grant(n)
		select {
		case <-killNow:
		case <-ctx.Done():
			t.Fatalf("cycle %d: %d of %d acknowledgements before the deadline", cycle, nacked.Load(), killAt.Load())
		}
		time.Sleep(extra) // the kill point itself, not a wait for a condition
		child.kill()
		atKill := nacked.Load()
		mu.Lock()
		compBefore := append([]compactedAck(nil), compAcks...)
		mu.Unlock()
		t.Logf("cycle %d: SIGKILL %s after acknowledgement %d; %d records sent and not yet acknowledged",
			cycle, extra, killAt.Load(), sent.Load()-atKill)

		changed := rng.IntN(2) == 0
		if changed {
			// Restart under changed settings.
			spec.CleanerBackoff = time.Duration(50+rng.IntN(2000)) * time.Millisecond
			spec.CleanerOff = rng.IntN(4) == 0
		}
		child = start()
		if changed {
			_, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
				{Name: "segment.ms", Value: kadm.StringPtr(strconv.Itoa(50 + rng.IntN(1000)))},
				{Name: "min.cleanable.dirty.ratio", Value: kadm.StringPtr(fmt.Sprint([]string{"0.01", "0.3", "0.6"}[rng.IntN(3)]))},
			}, crashCompacted)
			if err != nil {
				t.Fatalf("cycle %d: alter the compacted topic's configs: %v", cycle, err)
			}
			t.Logf("cycle %d: restarted with log.cleaner.backoff.ms %d, log.cleaner.enable %v",
				cycle, spec.CleanerBackoff.Milliseconds(), !spec.CleanerOff)
		}
		checkCompacted(t, fmt.Sprintf("cycle %d", cycle), spec.addr(), compacted.ID, compBefore)

		// The producer carries on against the restarted broker until all
		// granted records are acknowledged.
		waitFor(t, 3*time.Minute, fmt.Sprintf("cycle %d: produce resumes after restart", cycle), func() error {
			if n := nacked.Load(); n < allowed {
				mu.Lock()
				defer mu.Unlock()
				return fmt.Errorf("%d of %d acknowledged; failures: %v", n, allowed, failed)
			}
			return nil
		})

		// The embedded etcd came back with the cluster and the topic.
		md, err := adm.Metadata(ctx, crashTopic)
		if err != nil {
			t.Fatalf("cycle %d: metadata after restart: %v", cycle, err)
		}
		if md.Cluster != clusterID {
			t.Errorf("cycle %d: cluster id %q after restart, was %q", cycle, md.Cluster, clusterID)
		}
		if td := md.Topics[crashTopic]; td.Err != nil || td.ID != created.ID || len(td.Partitions) != crashPartitions {
			t.Fatalf("cycle %d: topic after restart: id %v, %d partitions, err %v; want id %v, %d partitions",
				cycle, td.ID, len(td.Partitions), td.Err, created.ID, crashPartitions)
		}

		// Everything acknowledged before the kill is below the end offsets
		// of the restarted broker.
		mu.Lock()
		before := append([]crashAck(nil), acks[:atKill]...)
		mu.Unlock()
		ends, err := adm.ListEndOffsets(ctx, crashTopic)
		if err != nil {
			t.Fatalf("cycle %d: list end offsets after restart: %v", cycle, err)
		}
		for _, a := range before {
			end, ok := ends.Lookup(crashTopic, a.partition)
			if !ok || end.Err != nil || a.offset >= end.Offset {
				t.Fatalf("cycle %d: record %d acknowledged at %d/%d, but the restarted broker ends that partition at %+v",
					cycle, a.seq, a.partition, a.offset, end)
			}
		}
		probes += checkCrashIndexes(t, cycle, spec.addr(), created.ID, before, rng)
	}
	budget.Lock()
	budget.stop = true
	budget.cond.Broadcast()
	budget.Unlock()
	resumed, finished := moves.stop(childLogs)
	t.Logf("log dir moves: %d asked; restarts found %d copies under way (resumed) and %d moves past their marker (finished)",
		moves.asked.Load(), resumed, finished)
	if cycles >= 50 && resumed+finished == 0 {
		t.Errorf("%d kills and not one found a move between log dirs under way: the moves did not run", cycles)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	<-loopDone
	mu.Lock()
	for _, f := range failed {
		t.Errorf("produce failed: %s", f)
	}
	allAcks := acks
	mu.Unlock()
	total := sent.Load()

	// Read everything back.
	ends, err := adm.ListEndOffsets(ctx, crashTopic)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	var stored int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of partition %d: %v", o.Partition, o.Err)
		}
		want[o.Partition] = o.Offset
		stored += o.Offset
	})
	const none = -1
	// where[seq] is partition<<40 | offset of the stored copy.
	where := make([]int64, total)
	for i := range where {
		where[i] = none
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(crashTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	next := map[int32]int64{}
	lastSeq := map[int32]int64{}
	var problems []string
	problem := func(format string, args ...any) {
		if len(problems) < 20 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	var read int64
	for read < stored {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d stored records before the deadline", read, stored)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("fetch partition %d: %v", p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			read++
			if r.Offset != next[r.Partition] {
				problem("partition %d: offset %d after %d", r.Partition, r.Offset, next[r.Partition]-1)
			}
			next[r.Partition] = r.Offset + 1
			seq, ok := crashSeq(r.Value)
			if !ok || seq >= total {
				problem("partition %d offset %d: value %q was never produced", r.Partition, r.Offset, r.Value)
				return
			}
			if where[seq] != none {
				problem("record %d stored twice: at %d/%d and %d/%d", seq,
					where[seq]>>40, where[seq]&(1<<40-1), r.Partition, r.Offset)
			}
			where[seq] = int64(r.Partition)<<40 | r.Offset
			if last, ok := lastSeq[r.Partition]; ok && seq <= last {
				problem("partition %d offset %d: record %d after record %d: out of order", r.Partition, r.Offset, seq, last)
			}
			lastSeq[r.Partition] = seq
		})
	}
	for _, p := range problems {
		t.Error(p)
	}
	for p, end := range want {
		if next[p] != end {
			t.Errorf("partition %d: read up to %d, end offset %d", p, next[p], end)
		}
	}
	lost := 0
	for _, a := range allAcks {
		if w := where[a.seq]; w != int64(a.partition)<<40|a.offset {
			if lost++; lost <= 20 {
				if w == none {
					t.Errorf("record %d acknowledged at %d/%d is missing", a.seq, a.partition, a.offset)
				} else {
					t.Errorf("record %d acknowledged at %d/%d is stored at %d/%d", a.seq, a.partition, a.offset, w>>40, w&(1<<40-1))
				}
			}
		}
	}
	mu.Lock()
	allComp := compAcks
	mu.Unlock()
	kept := checkCompacted(t, "at the end", addr, compacted.ID, allComp)
	t.Logf("%d records sent, %d acknowledged, %d stored, %d acknowledged records lost or moved; %d kill -9 cycles; %d index probes",
		total, len(allAcks), stored, lost, cycles, probes)
	t.Logf("compacted topic: %d records acknowledged, %d in the log", len(allComp), kept)
	if int64(len(allAcks)) != stored {
		// Every record the producer sent was finally acknowledged (the
		// flush succeeded), so the log holds exactly those.
		t.Errorf("%d records acknowledged but %d stored", len(allAcks), stored)
	}
}

// compactedAck is an acknowledged record of the compacted topic.
type compactedAck struct {
	key    string
	seq    int64
	offset int64
}

// checkCompacted reads the compacted topic whole and checks every record
// of acks: in the log at its offset with its value, or superseded by a
// later record of its key in the log. Every key of acks keeps a record.
// It returns the records the log holds.
func checkCompacted(t *testing.T, when, addr string, id [16]byte, acks []compactedAck) int {
	t.Helper()
	w := dialWireAddr(t, addr)
	type stored struct {
		key   string
		value []byte
	}
	log := map[int64]stored{}
	latest := map[string]int64{}
	var scratch []byte
	for next := int64(0); ; {
		_, fp := w.fetchPartition(12, crashCompacted, id, 0, next)
		if fp.ErrorCode == int16(protocol.OffsetOutOfRange) || (fp.ErrorCode == 0 && next >= fp.HighWatermark) {
			break
		}
		if fp.ErrorCode != 0 {
			t.Fatalf("%s: fetch the compacted topic at %d: error %d", when, next, fp.ErrorCode)
		}
		before := next
		for buf := fp.RecordBatches; len(buf) > 0; {
			b, rest, err := record.Parse(buf)
			if err != nil {
				break // a partial batch at the end
			}
			buf = rest
			err = record.ForEachRecord(b, &scratch, func(off, _ int64, r *record.Record) error {
				if off >= next {
					log[off] = stored{key: string(r.Key), value: append([]byte(nil), r.Value...)}
					latest[string(r.Key)] = max(latest[string(r.Key)], off)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("%s: compacted topic batch at %d: %v", when, b.BaseOffset(), err)
			}
			next = b.LastOffset() + 1
		}
		if next == before {
			t.Fatalf("%s: a fetch of the compacted topic at %d below its high watermark %d returned no batch",
				when, next, fp.HighWatermark)
		}
	}
	lost := 0
	for _, a := range acks {
		s, ok := log[a.offset]
		switch {
		case ok && (s.key != a.key || string(s.value) != string(crashValue(a.seq))):
			t.Errorf("%s: compacted offset %d holds %s=%.20q, acknowledged %s=%.20q",
				when, a.offset, s.key, s.value, a.key, crashValue(a.seq))
		case !ok && latest[a.key] <= a.offset:
			if lost++; lost <= 20 {
				t.Errorf("%s: compacted record %s=%d acknowledged at %d is missing and no later record of its key is in the log (latest %d)",
					when, a.key, a.seq, a.offset, latest[a.key])
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%s: %d acknowledged records of the compacted topic lost", when, lost)
	}
	return len(log)
}

// checkCrashIndexes checks the restarted broker's indexes at up to
// crashIndexProbe acknowledged records of acks: a fetch at a record's offset
// must return that record first, with its value, and ListOffsets by its
// timestamp must answer an offset at or before it whose record has a
// timestamp at least that one's (the records of a partition were stamped
// in offset order). It returns the number of records probed.
func checkCrashIndexes(t *testing.T, cycle int, addr string, id [16]byte, acks []crashAck, rng *rand.Rand) int {
	t.Helper()
	if len(acks) == 0 {
		return 0
	}
	w := dialWireAddr(t, addr)
	first := func(partition int32, offset int64) (int64, int64, []byte) {
		t.Helper()
		_, fp := w.fetchPartition(12, crashTopic, id, partition, offset)
		if fp.ErrorCode != 0 {
			t.Fatalf("cycle %d: fetch %d/%d: error %d", cycle, partition, offset, fp.ErrorCode)
		}
		var scratch []byte
		for buf := fp.RecordBatches; len(buf) > 0; {
			b, rest, err := record.Parse(buf)
			if err != nil {
				t.Fatalf("cycle %d: fetch %d/%d: batch: %v", cycle, partition, offset, err)
			}
			buf = rest
			var (
				off, ts int64 = -1, 0
				val     []byte
			)
			err = record.ForEachRecord(b, &scratch, func(o, stamp int64, r *record.Record) error {
				if off < 0 && o >= offset {
					off, ts, val = o, stamp, append([]byte(nil), r.Value...)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("cycle %d: fetch %d/%d: records: %v", cycle, partition, offset, err)
			}
			if off >= 0 {
				return off, ts, val
			}
		}
		t.Fatalf("cycle %d: fetch %d/%d returned no record at or after it", cycle, partition, offset)
		return 0, 0, nil
	}
	n := min(crashIndexProbe, len(acks))
	for range n {
		a := acks[rng.IntN(len(acks))]
		off, _, val := first(a.partition, a.offset)
		if off != a.offset || string(val) != string(crashValue(a.seq)) {
			t.Fatalf("cycle %d: fetch at %d/%d (record %d) returned offset %d value %.20q first",
				cycle, a.partition, a.offset, a.seq, off, val)
		}
		lp := w.listOffset(8, crashTopic, a.partition, a.timestamp)
		if lp.ErrorCode != 0 || lp.Offset < 0 || lp.Offset > a.offset {
			t.Fatalf("cycle %d: ListOffsets %d/time %d (record %d at offset %d): offset %d error %d",
				cycle, a.partition, a.timestamp, a.seq, a.offset, lp.Offset, lp.ErrorCode)
		}
		if _, ts, _ := first(a.partition, lp.Offset); ts < a.timestamp {
			t.Fatalf("cycle %d: ListOffsets %d/time %d answered offset %d, whose record is older (%d)",
				cycle, a.partition, a.timestamp, lp.Offset, ts)
		}
	}
	return n
}

// The producer state a kill -9 leaves behind: producer state snapshots are
// written only at close and at segment rolls, so after a crash a
// partition's idempotence state must be rebuilt from the log itself. Sent
// over the wire with exact batches: after the restart a retry of the last
// acknowledged batches is answered with their original offsets and not
// stored again, a sequence gap is still refused, a stale epoch is still
// fenced, and the next sequence is accepted.
func TestBrokerCrashProducerState(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 of a child broker process: not with -short")
	}
	t.Parallel()
	spec, start := crashHarness(t)
	child := start()
	w := dialWireAddr(t, spec.addr())
	w.createTopic("pstate", 2, nil)
	pid, epoch := w.initProducerID()
	pidOld, _ := w.initProducerID()

	batches := map[int32][][]byte{}
	for i := range int32(6) {
		for p := range int32(2) {
			bt := buildBatch(t, idempotentHeader(pid, epoch+1, i*3), fmt.Sprintf("p%d-b%d", p, i), 3)
			batches[p] = append(batches[p], bt)
			rp := w.producePartition(-1, "pstate", p, append([]byte(nil), bt...))
			if rp.ErrorCode != 0 || rp.BaseOffset != int64(i*3) {
				t.Fatalf("partition %d batch %d: error %d, base offset %d", p, i, rp.ErrorCode, rp.BaseOffset)
			}
		}
	}
	// pidOld writes at epoch 1, then epoch 2 fences epoch 1.
	for _, e := range []int16{1, 2} {
		rp := w.producePartition(-1, "pstate", 0, buildBatch(t, idempotentHeader(pidOld, e, 0), fmt.Sprintf("old-e%d", e), 1))
		if rp.ErrorCode != 0 {
			t.Fatalf("producer %d epoch %d: error %d", pidOld, e, rp.ErrorCode)
		}
	}

	child.kill()
	start()
	w = dialWireAddr(t, spec.addr())

	for p := range int32(2) {
		// Kafka keeps the last five batches per producer for retries.
		for i := 1; i < 6; i++ {
			rp := w.producePartition(-1, "pstate", p, append([]byte(nil), batches[p][i]...))
			if rp.ErrorCode != 0 || rp.BaseOffset != int64(i*3) {
				t.Errorf("partition %d: retry of batch %d after kill -9: error %d (%s), base offset %d; want the original offset %d",
					p, i, rp.ErrorCode, protocol.ErrorCode(rp.ErrorCode), rp.BaseOffset, i*3)
			}
		}
		rp := w.producePartition(-1, "pstate", p, buildBatch(t, idempotentHeader(pid, epoch+1, 30), "gap", 1))
		checkCode(t, fmt.Sprintf("partition %d: a sequence gap after kill -9", p), rp.ErrorCode, protocol.OutOfOrderSequenceNumber)
	}
	rp := w.producePartition(-1, "pstate", 0, buildBatch(t, idempotentHeader(pidOld, 1, 1), "stale", 1))
	checkCode(t, "a fenced epoch after kill -9", rp.ErrorCode, protocol.InvalidProducerEpoch)

	wantEnd := map[int32]int64{0: 20, 1: 18}
	for p := range int32(2) {
		if end := w.logEnd("pstate", p); end != wantEnd[p] {
			t.Errorf("partition %d: log end %d after retries, want %d (retries stored again?)", p, end, wantEnd[p])
		}
		rp := w.producePartition(-1, "pstate", p, buildBatch(t, idempotentHeader(pid, epoch+1, 18), "next", 1))
		checkCode(t, fmt.Sprintf("partition %d: the next sequence after kill -9", p), rp.ErrorCode, protocol.None)
		if rp.BaseOffset != wantEnd[p] {
			t.Errorf("partition %d: next batch at %d, want %d", p, rp.BaseOffset, wantEnd[p])
		}
	}
}

// crashMoves moves partitions of the crash topics between the child
// broker's log dirs while the cycles run.
type crashMoves struct {
	asked atomic.Int64
	done  chan struct{}
	quit  chan struct{}
}

// startCrashMoves throttles moves between log dirs to 1 MB/s (a dynamic
// config, kept across restarts) and asks, every 200 to 600 ms, for the
// next partition of the crash topics in turn to move to the dir it was
// not last asked to go to: a move still under way is then cancelled (the
// replica stays where it is), else it starts. Errors (the broker is down,
// restarting) are expected and ignored.
func startCrashMoves(ctx context.Context, t *testing.T, adm *kadm.Client, addr string, dirs []string, seed uint64) *crashMoves {
	t.Helper()
	rate := "1000000"
	if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "replica.alter.log.dirs.io.max.bytes.per.second", Value: &rate}}); err != nil {
		t.Fatalf("throttle log dir moves: %v", err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	m := &crashMoves{done: make(chan struct{}), quit: make(chan struct{})}
	rng := rand.New(rand.NewPCG(seed, seed^0x51))
	type part struct {
		topic string
		p     int32
	}
	var parts []part
	for p := range int32(crashPartitions) {
		parts = append(parts, part{crashTopic, p})
	}
	parts = append(parts, part{crashCompacted, 0})
	last := make([]int, len(parts))
	go func() {
		defer close(m.done)
		defer cl.Close()
		for {
			select {
			case <-m.quit:
				return
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(200+rng.IntN(400)) * time.Millisecond):
			}
			i := int(m.asked.Load()) % len(parts)
			topic, p := parts[i].topic, parts[i].p
			last[i] = (last[i] + 1) % len(dirs)
			req := kmsg.NewPtrAlterReplicaLogDirsRequest()
			d := kmsg.NewAlterReplicaLogDirsRequestDir()
			d.Dir = dirs[last[i]]
			rt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
			rt.Topic, rt.Partitions = topic, []int32{p}
			d.Topics = append(d.Topics, rt)
			req.Dirs = append(req.Dirs, d)
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, _ = req.RequestWith(rctx, cl) // the broker may be down: the next ask goes on
			m.asked.Add(1)
			cancel()
		}
	}()
	return m
}

// stop ends the moves and counts, in the child brokers' logs, the starts
// that resumed a copy or finished a move a kill interrupted.
func (m *crashMoves) stop(logs []string) (resumed, finished int) {
	close(m.quit)
	<-m.done
	for _, p := range logs {
		s := readFile(p)
		resumed += strings.Count(s, "resuming a log move between log dirs")
		finished += strings.Count(s, "finished a log move a crash interrupted") + strings.Count(s, "finished a log move interrupted after its rename")
	}
	return resumed, finished
}
