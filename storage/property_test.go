package storage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gregor-io/gregor/protocol/record"
)

// The data-safety property test: a random sequence of appends (keyed,
// idempotent or not, tombstones, in transactions that are committed or
// aborted), cleanings, retention passes, DeleteRecords and restarts (clean,
// and as a kill -9 leaves the files) over logs with different policies,
// checked after every restart and at the end against a model of what was
// acknowledged:
//
//   - every acknowledged record is in the log with its key and value, or
//     was legitimately removed: below a DeleteRecords offset, past its
//     retention, or, in a compacted log, superseded by a later record of
//     its key (or a tombstone, which the cleaner may drop), or aborted
//     (the cleaner drops aborted records; they supersede nothing);
//   - the last stable offset is the first offset of the earliest open
//     transaction (not below the log start) or the high watermark; every
//     aborted record in the log below it is in a transaction the aborted
//     list holds, and no committed one is;
//   - the log holds nothing that was not acknowledged;
//   - offsets never go backwards: the log end never falls below what was
//     acknowledged, and the log start never falls below a DeleteRecords
//     offset once it was checkpointed;
//   - the Manager opens again after every restart, under changed settings
//     too (segment.bytes, index.interval.bytes, the cleanup policy's
//     "delete").
//
// GREGOR_PROPERTY_DURATION sets how long it runs (default 8s; `make
// property-test` runs it for minutes), GREGOR_PROPERTY_SEED replays a run.
// The seed is printed at the start and in every failure.
const (
	propertyDurationEnv = "GREGOR_PROPERTY_DURATION"
	propertySeedEnv     = "GREGOR_PROPERTY_SEED"
)

// propPartition is one log of the property test with its model.
type propPartition struct {
	tp  TopicPartition
	cfg Config
	// acked holds every acknowledged record by offset.
	acked map[int64]propRecord
	// latest is the offset of the newest acknowledged record of each key.
	latest map[string]int64
	// ackedEnd is one past the highest acknowledged offset.
	ackedEnd int64
	// deletedBelow is the highest DeleteRecords offset whose log start
	// was checkpointed; minStart the log start the log may not fall
	// below.
	deletedBelow int64
	// retainedAfter: records with timestamps below it may have gone to
	// retention (the latest retention pass's now - retention.ms).
	retainedAfter int64
	// producers are the idempotent producers writing to the log;
	// txnProds the transactional ones.
	producers []*propProducer
	txnProds  []*propTxnProducer
}

type propRecord struct {
	key, value []byte // value nil: a tombstone
	ts         int64
	pid        int64
	txn        propTxnState
}

// propTxnState is where a record's transaction stands.
type propTxnState int8

const (
	propNoTxn propTxnState = iota // not transactional, or committed
	propOpen
	propAborted
)

type propTxnProducer struct {
	id   int64
	seq  int32
	offs []int64 // offsets of the open transaction's records; nil: none open
}

type propProducer struct {
	id    int64
	epoch int16
	seq   int32
}

// propRun is one run of the property test.
type propRun struct {
	t     *testing.T
	rng   *rand.Rand
	seed  uint64
	tmp   string
	dir   string       // the live data dir
	gen   int          // data dirs made so far
	clock atomic.Int64 // fake time, unix ms; the retention goroutine reads it
	m     *Manager
	parts []*propPartition
	step  int
	stats map[string]int
}

func (r *propRun) fatalf(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("seed %d (rerun with %s=%d), step %d: %s", r.seed, propertySeedEnv, r.seed, r.step,
		fmt.Sprintf(format, args...))
}

func (r *propRun) now() time.Time { return time.UnixMilli(r.clock.Load()) }

func (r *propRun) managerConfig() ManagerConfig {
	cfg := DefaultManagerConfig(r.dir)
	cfg.Now = r.now
	// Nothing runs on its own timer: the test drives cleaning, retention
	// and checkpoints, so that a seed replays the same run.
	cfg.CleanerEnable = false
	cfg.CheckpointInterval = time.Hour
	cfg.HighWatermarkCheckpointInterval = time.Hour
	cfg.RetentionCheckInterval = time.Hour
	return cfg
}

func (r *propRun) open() {
	r.t.Helper()
	cfg := r.managerConfig()
	m, err := OpenManager(cfg)
	if err != nil {
		r.fatalf("open the logs: %v", err)
	}
	r.m = m
	for _, p := range r.parts {
		l, err := m.GetOrCreate(p.tp, p.cfg)
		if err != nil {
			r.fatalf("open %s: %v", p.tp, err)
		}
		if err := l.SetConfig(p.cfg); err != nil {
			r.fatalf("config of %s: %v", p.tp, err)
		}
		l.SetAutoHighWatermark(true)
	}
}

func (r *propRun) log(p *propPartition) *Log {
	r.t.Helper()
	l, ok := r.m.Get(p.tp)
	if !ok {
		r.fatalf("%s is not open", p.tp)
	}
	return l
}

// append writes one batch to p and waits until it is durable (acks=all).
func (r *propRun) append(p *propPartition) {
	n := 1 + r.rng.IntN(12)
	keys := 4 + r.rng.IntN(60)
	var prod *propProducer
	h := record.BatchHeader{BaseTimestamp: r.clock.Load(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	if r.rng.IntN(2) == 0 {
		prod = p.producers[r.rng.IntN(len(p.producers))]
		h.ProducerID, h.ProducerEpoch, h.BaseSequence = prod.id, prod.epoch, prod.seq
	}
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{
			OffsetDelta:    int32(i),
			TimestampDelta: int64(i),
			Key:            fmt.Appendf(nil, "k%d", r.rng.IntN(keys)),
			Value:          fmt.Appendf(nil, "%s/%d/%d", p.tp, r.step, i),
		}
		if p.cfg.Compact && r.rng.IntN(20) == 0 {
			recs[i].Value = nil
		}
	}
	set, err := record.Build(nil, h, recs)
	if err != nil {
		r.fatalf("build batch: %v", err)
	}
	l := r.log(p)
	res, err := l.Append(set, AppendOptions{AssignOffsets: true})
	if prod != nil && (errors.Is(err, ErrOutOfOrderSequence) || errors.Is(err, ErrInvalidProducerEpoch)) {
		// The producer's state went with its batches (retention,
		// DeleteRecords): it starts again as a new producer would.
		r.stats["producer restarts"]++
		prod.id += 100
		prod.seq = 0
		return
	}
	if err != nil {
		r.fatalf("append to %s: %v", p.tp, err)
	}
	if res.Duplicate {
		r.fatalf("append to %s: a new batch (producer %d seq %d) taken for a duplicate", p.tp, h.ProducerID, h.BaseSequence)
	}
	if err := l.Flush(context.Background(), res.LastOffset+1); err != nil {
		r.fatalf("flush %s: %v", p.tp, err)
	}
	if prod != nil {
		prod.seq += int32(n)
	}
	for i, rec := range recs {
		off := res.FirstOffset + int64(i)
		if off < p.ackedEnd {
			r.fatalf("%s: record acknowledged at %d, below an earlier acknowledged offset %d", p.tp, off, p.ackedEnd-1)
		}
		p.acked[off] = propRecord{key: rec.Key, value: rec.Value, ts: r.clock.Load() + int64(i), pid: h.ProducerID}
		p.latest[string(rec.Key)] = off
	}
	p.ackedEnd = res.LastOffset + 1
	r.clock.Add(int64(n) + int64(r.rng.IntN(50)))
	r.stats["appends"]++
}

// txnAppend writes one transactional batch of a producer of p, opening
// its transaction if none is open, and waits until it is durable.
func (r *propRun) txnAppend(p *propPartition) {
	prod := p.txnProds[r.rng.IntN(len(p.txnProds))]
	n := 1 + r.rng.IntN(6)
	keys := 4 + r.rng.IntN(60)
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{OffsetDelta: int32(i), TimestampDelta: int64(i),
			Key: fmt.Appendf(nil, "k%d", r.rng.IntN(keys)), Value: fmt.Appendf(nil, "%s/%d/%d/txn", p.tp, r.step, i)}
	}
	set, err := record.Build(nil, record.BatchHeader{Transactional: true, BaseTimestamp: r.clock.Load(),
		ProducerID: prod.id, BaseSequence: prod.seq}, recs)
	if err != nil {
		r.fatalf("build batch: %v", err)
	}
	l := r.log(p)
	res, err := l.Append(set, AppendOptions{AssignOffsets: true})
	if err != nil {
		r.fatalf("transactional append to %s: %v", p.tp, err)
	}
	if err := l.Flush(context.Background(), res.LastOffset+1); err != nil {
		r.fatalf("flush %s: %v", p.tp, err)
	}
	prod.seq += int32(n)
	for i, rec := range recs {
		off := res.FirstOffset + int64(i)
		p.acked[off] = propRecord{key: rec.Key, value: rec.Value, ts: r.clock.Load() + int64(i), pid: prod.id, txn: propOpen}
		prod.offs = append(prod.offs, off)
	}
	p.ackedEnd = res.LastOffset + 1
	r.clock.Add(int64(n) + int64(r.rng.IntN(50)))
	r.stats["transactional appends"]++
}

// txnEnd commits or aborts the open transaction of a producer of p.
func (r *propRun) txnEnd(p *propPartition) {
	prod := p.txnProds[r.rng.IntN(len(p.txnProds))]
	if prod.offs == nil {
		return
	}
	commit := r.rng.IntN(2) == 0
	l := r.log(p)
	res, err := l.AppendTxnMarker(TxnMarker{ProducerID: prod.id, Commit: commit}, 0)
	if err != nil {
		r.fatalf("marker to %s: %v", p.tp, err)
	}
	if err := l.Flush(context.Background(), res.LastOffset+1); err != nil {
		r.fatalf("flush %s: %v", p.tp, err)
	}
	for _, off := range prod.offs {
		rec, ok := p.acked[off]
		if !ok {
			continue // below the log start
		}
		if commit {
			rec.txn = propNoTxn
			if o, ok := p.latest[string(rec.key)]; !ok || o < off {
				p.latest[string(rec.key)] = off
			}
		} else {
			rec.txn = propAborted
		}
		p.acked[off] = rec
	}
	prod.offs = nil
	p.ackedEnd = res.LastOffset + 1
	if commit {
		r.stats["commits"]++
	} else {
		r.stats["aborts"]++
	}
}

// deleteRecords moves p's log start to a random offset up to its high
// watermark and checkpoints it, as the broker's DeleteRecords does.
func (r *propRun) deleteRecords(p *propPartition) {
	l := r.log(p)
	hw := l.HighWatermark()
	start := l.LogStartOffset()
	if hw <= start {
		return
	}
	off := start + r.rng.Int64N(hw-start+1)
	if err := l.DeleteBelow(off); err != nil {
		r.fatalf("delete records of %s below %d: %v", p.tp, off, err)
	}
	if err := r.m.Checkpoint(); err != nil {
		r.fatalf("checkpoint: %v", err)
	}
	p.deletedBelow = max(p.deletedBelow, off)
	r.stats["delete records"]++
}

// retention advances the clock and runs a retention pass.
func (r *propRun) retention() {
	r.clock.Add(int64(r.rng.IntN(400)))
	if _, err := r.m.RunRetention(); err != nil {
		r.fatalf("retention: %v", err)
	}
	for _, p := range r.parts {
		if p.cfg.CleanupDelete && p.cfg.RetentionMs >= 0 {
			p.retainedAfter = max(p.retainedAfter, r.clock.Load()-p.cfg.RetentionMs)
		}
	}
	r.stats["retention passes"]++
}

// restart closes the Manager and opens it again. A crash restart opens a
// copy of the files taken before the close, which is what a kill -9 at
// that moment leaves: every write reached the page cache, nothing after
// it ran. Some restarts change settings.
func (r *propRun) restart(crash bool) {
	if crash {
		r.gen++
		snap := filepath.Join(r.tmp, fmt.Sprintf("data-%d", r.gen))
		if err := copyTree(r.dir, snap); err != nil {
			r.fatalf("copy the data dir: %v", err)
		}
		if err := os.Remove(filepath.Join(snap, dirLockFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			r.fatalf("remove the copied lock file: %v", err)
		}
		r.stats["kill -9 restarts"]++
		defer func(old string) {
			if err := os.RemoveAll(old); err != nil {
				r.fatalf("remove the old data dir: %v", err)
			}
		}(r.dir)
		// The old Manager is closed only to release its files; its dir
		// is dropped.
		if err := r.m.Close(); err != nil {
			r.fatalf("close: %v", err)
		}
		r.dir = snap
	} else {
		if err := r.m.Close(); err != nil {
			r.fatalf("close: %v", err)
		}
		r.stats["clean restarts"]++
	}
	if r.rng.IntN(3) == 0 {
		for _, p := range r.parts {
			p.cfg.SegmentBytes = int64(1024 + r.rng.IntN(6<<10))
			p.cfg.IndexIntervalBytes = int64(r.rng.IntN(1024))
			if p.cfg.Compact && p.cfg.RetentionMs < 0 {
				// compact <-> compact,delete with no time limit: the
				// policy changes, what may be removed does not.
				p.cfg.CleanupDelete = !p.cfg.CleanupDelete
			}
		}
		r.stats["restarts with changed settings"]++
	}
	r.m = nil
	r.open()
	r.check("after restart")
}

// check reads every log whole and compares it with the model.
func (r *propRun) check(when string) {
	r.t.Helper()
	for _, p := range r.parts {
		l := r.log(p)
		start, end := l.LogStartOffset(), l.LogEndOffset()
		if end < p.ackedEnd {
			r.fatalf("%s %s: log end %d below the acknowledged end %d", when, p.tp, end, p.ackedEnd)
		}
		if start < p.deletedBelow {
			r.fatalf("%s %s: log start %d below the DeleteRecords offset %d", when, p.tp, start, p.deletedBelow)
		}
		if hw := l.HighWatermark(); hw < start || hw > end {
			r.fatalf("%s %s: high watermark %d outside [%d, %d]", when, p.tp, hw, start, end)
		}
		got := r.readAll(l, start, end)
		r.checkTxns(when, p, l, got, start)
		for off, rec := range got {
			want, ok := p.acked[off]
			if !ok {
				r.fatalf("%s %s: offset %d holds %q=%q, which was never acknowledged", when, p.tp, off, rec.key, rec.value)
			}
			if string(rec.key) != string(want.key) || string(rec.value) != string(want.value) || (rec.value == nil) != (want.value == nil) {
				r.fatalf("%s %s: offset %d holds %q=%q, acknowledged %q=%q", when, p.tp, off, rec.key, rec.value, want.key, want.value)
			}
		}
		for off, want := range p.acked {
			if _, ok := got[off]; ok {
				continue
			}
			switch {
			case off < start && (off < p.deletedBelow || want.ts < p.retainedAfter):
				// Below a DeleteRecords offset or past retention.
			case off < start:
				r.fatalf("%s %s: acknowledged offset %d (ts %d) is below the log start %d, but no DeleteRecords (%d) or retention (before ts %d) removed it",
					when, p.tp, off, want.ts, start, p.deletedBelow, p.retainedAfter)
			case p.cfg.Compact && (p.latest[string(want.key)] > off || want.value == nil || want.txn == propAborted):
				// Compacted away: a later record of its key, a tombstone,
				// or an aborted record.
			default:
				r.fatalf("%s %s: acknowledged offset %d (%q=%q) is missing; the log holds [%d, %d)",
					when, p.tp, off, want.key, want.value, start, end)
			}
		}
		// What is below the log start is gone for good: the model
		// forgets it, so the next checks hold the log to its present.
		for off := range p.acked {
			if off < start {
				delete(p.acked, off)
			}
		}
		p.deletedBelow = max(p.deletedBelow, start)
	}
}

// checkTxns checks p's last stable offset and aborted list against the
// model and the records read (got).
func (r *propRun) checkTxns(when string, p *propPartition, l *Log, got map[int64]propRecord, start int64) {
	r.t.Helper()
	first := int64(math.MaxInt64)
	for _, prod := range p.txnProds {
		if len(prod.offs) > 0 {
			first = min(first, prod.offs[0])
		}
	}
	lso := l.LastStableOffset()
	if want := min(max(first, start), l.HighWatermark()); lso != want {
		r.fatalf("%s %s: last stable offset %d, want %d (earliest open transaction at %d, high watermark %d)",
			when, p.tp, lso, want, first, l.HighWatermark())
	}
	aborted, err := l.AbortedTransactions(start, lso)
	if err != nil {
		r.fatalf("%s %s: aborted transactions: %v", when, p.tp, err)
	}
	for off, rec := range got {
		if off >= lso || rec.pid < 0 {
			continue
		}
		covered := false
		for _, a := range aborted {
			covered = covered || a.ProducerID == rec.pid && a.FirstOffset <= off && off < a.LastOffset
		}
		want := p.acked[off]
		if want.txn == propAborted && !covered {
			r.fatalf("%s %s: aborted record at %d (producer %d) is in no aborted transaction %+v", when, p.tp, off, rec.pid, aborted)
		}
		if want.txn == propNoTxn && covered {
			r.fatalf("%s %s: record at %d (producer %d) is in an aborted transaction %+v", when, p.tp, off, rec.pid, aborted)
		}
	}
}

// readAll returns every record of l in [start, end) by offset.
func (r *propRun) readAll(l *Log, start, end int64) map[int64]propRecord {
	r.t.Helper()
	out := map[int64]propRecord{}
	var scratch, buf []byte
	for next := start; next < end; {
		res, err := l.Read(ReadOptions{Offset: next, MaxBytes: 1 << 20, MaxOffset: end, MinOneBatch: true})
		if err != nil {
			r.fatalf("read %s at %d: %v", l.tp, next, err)
		}
		if res.Len == 0 {
			res.Release()
			// Only a gap left by compaction at the end of a segment reads
			// as nothing below the end.
			segs := *l.segs.Load()
			i := segmentFor(segs, next)
			if i+1 >= len(segs) {
				r.fatalf("read %s at %d: nothing below the log end %d", l.tp, next, end)
			}
			next = segs[i+1].base
			continue
		}
		buf, err = res.AppendTo(buf[:0])
		res.Release()
		if err != nil {
			r.fatalf("read %s: %v", l.tp, err)
		}
		moved := false
		for len(buf) > 0 {
			b, rest, err := record.Parse(buf)
			if err != nil {
				break // a partial batch at the end of the slice
			}
			buf = rest
			if b.LastOffset() < next {
				continue
			}
			if b.Control() {
				next = b.LastOffset() + 1
				moved = true
				continue
			}
			err = record.ForEachRecord(b, &scratch, func(off, _ int64, rec *record.Record) error {
				if off >= next {
					out[off] = propRecord{key: append([]byte(nil), rec.Key...), value: cloneNil(rec.Value), pid: b.ProducerID()}
				}
				return nil
			})
			if err != nil {
				r.fatalf("decode %s batch at %d: %v", l.tp, b.BaseOffset(), err)
			}
			next = b.LastOffset() + 1
			moved = true
		}
		if !moved {
			r.fatalf("read %s at %d: no whole batch", l.tp, next)
		}
	}
	return out
}

func cloneNil(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

func propertyDuration(t *testing.T) time.Duration {
	d := 8 * time.Second
	if s := os.Getenv(propertyDurationEnv); s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			t.Fatalf("%s=%q: %v", propertyDurationEnv, s, err)
		}
	}
	return d
}

func TestDataSafetyProperty(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(propertySeedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", propertySeedEnv, s, err)
		}
	}
	t.Logf("seed %d (rerun with %s=%d)", seed, propertySeedEnv, seed)
	tmp := t.TempDir()
	r := &propRun{t: t, rng: rand.New(rand.NewPCG(seed, 1)), seed: seed, tmp: tmp, dir: filepath.Join(tmp, "data-0"),
		stats: map[string]int{}}
	r.clock.Store(1_700_000_000_000)
	newPart := func(topic string, mutate func(c *Config)) *propPartition {
		c := DefaultConfig()
		c.SegmentBytes = 4 << 10
		c.IndexIntervalBytes = 256
		c.FileDeleteDelayMs = 0
		c.MinCleanableDirtyRatio = 0
		c.DeleteRetentionMs = 500
		mutate(&c)
		p := &propPartition{tp: TopicPartition{Topic: topic}, cfg: c, acked: map[int64]propRecord{}, latest: map[string]int64{},
			retainedAfter: math.MinInt64}
		for i := range 3 {
			p.producers = append(p.producers, &propProducer{id: int64(1000 + i)})
			p.txnProds = append(p.txnProds, &propTxnProducer{id: int64(5000 + i)})
		}
		return p
	}
	r.parts = []*propPartition{
		newPart("compacted", func(c *Config) { c.Compact, c.CleanupDelete, c.RetentionMs = true, false, -1 }),
		newPart("deleted", func(c *Config) { c.RetentionMs = 20_000 }),
		newPart("pagecache", func(c *Config) {
			c.Compact, c.CleanupDelete, c.RetentionMs = true, true, -1
			c.FlushMessages = math.MaxInt64 // Kafka's page-cache mode
		}),
	}
	r.open()
	defer func() {
		if r.m != nil {
			r.m.Close()
		}
	}()
	deadline := time.Now().Add(propertyDuration(t))
	for r.step = 1; time.Now().Before(deadline); r.step++ {
		p := r.parts[r.rng.IntN(len(r.parts))]
		switch x := r.rng.IntN(100); {
		case x < 56:
			r.append(p)
		case x < 66:
			r.txnAppend(p)
		case x < 72:
			r.txnEnd(p)
		case x < 80:
			if _, err := r.m.CleanNow(context.Background()); err != nil {
				r.fatalf("clean: %v", err)
			}
			r.stats["cleanings"]++
		case x < 84:
			r.retention()
		case x < 87:
			if p.cfg.CleanupDelete {
				r.deleteRecords(p)
			}
		case x < 89:
			if err := r.m.Checkpoint(); err != nil {
				r.fatalf("checkpoint: %v", err)
			}
		case x < 93:
			r.restart(false)
		default:
			r.restart(true)
		}
	}
	r.check("at the end")
	var parts []string
	for k, v := range r.stats {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	t.Logf("seed %d: %d steps: %s", seed, r.step, strings.Join(parts, ", "))
}
