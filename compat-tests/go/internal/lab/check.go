package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Stored is one record at a place in the log: as a fresh consumer reads
// it back at the end, or as a consumer read it during the run.
type Stored struct {
	Partition int32
	Offset    int64
	Key       string
	Value     string
}

// Commit is a group's committed offset of a partition as one source saw
// it: the broker's answer to the consumer's own commit, or a later
// OffsetFetch of the group.
type Commit struct {
	Source    string
	Partition int32
	Offset    int64
}

// endOffsets lists the high watermark of each of topic's partitions,
// asking again while an answer is a retriable error (a leader election
// the last fault started may still be under way); logf reports them.
func endOffsets(ctx context.Context, adm *kadm.Client, topic string, partitions int32, logf func(string, ...any)) (map[int32]int64, error) {
	for {
		hw, err := listEndOffsets(ctx, adm, topic, partitions)
		if err == nil || !kerr.IsRetriable(err) {
			return hw, err
		}
		logf("list end offsets of %s: %v (retrying)", topic, err)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("list end offsets of %s: %w (last error: %w)", topic, ctx.Err(), err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func listEndOffsets(ctx context.Context, adm *kadm.Client, topic string, partitions int32) (map[int32]int64, error) {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		var se *kadm.ShardErrors
		if errors.As(err, &se) && len(se.Errs) > 0 {
			err = se.Errs[0].Err // its kerr code says whether to retry
		}
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	hw := map[int32]int64{}
	for p := range partitions {
		o, ok := ends.Lookup(topic, p)
		if !ok {
			return nil, fmt.Errorf("no end offset of partition %d", p)
		}
		if o.Err != nil {
			return nil, fmt.Errorf("end offset of partition %d: %w", p, o.Err)
		}
		hw[p] = o.Offset
	}
	return hw, nil
}

// ReadAll reads every partition of topic from offset 0 up to its high
// watermark (read_uncommitted, kgo's default) with a client of its own;
// logf reports fetch errors it retries.
func ReadAll(ctx context.Context, seeds []string, topic string, partitions int32, logf func(string, ...any)) ([]Stored, map[int32]int64, error) {
	adminCl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return nil, nil, err
	}
	defer adminCl.Close()
	hw, err := endOffsets(ctx, kadm.NewClient(adminCl), topic, partitions, logf)
	if err != nil {
		return nil, nil, err
	}
	at := map[int32]kgo.Offset{}
	for p := range partitions {
		at[p] = kgo.NewOffset().At(0)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: at}),
		kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	next := map[int32]int64{}
	var out []Stored
	pending := func() bool {
		for p, end := range hw {
			if next[p] < end {
				return true
			}
		}
		return false
	}
	for pending() {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return out, hw, fmt.Errorf("read back: %w (read %d records)", err, len(out))
		}
		for _, e := range fs.Errors() {
			if !errors.Is(e.Err, context.Canceled) && !errors.Is(e.Err, io.EOF) {
				logf("read back partition %d: %v (retrying)", e.Partition, e.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= hw[r.Partition] {
				return // past the high watermark the harness read up to
			}
			out = append(out, Stored{Partition: r.Partition, Offset: r.Offset, Key: string(r.Key), Value: string(r.Value)})
			next[r.Partition] = r.Offset + 1
		})
	}
	return out, hw, nil
}

// History is what a run saw: the acknowledgements, the log read back at
// the end, and, when a consumer group read during the run, every record
// it read and every committed offset seen.
type History struct {
	Acks     []Ack
	Log      []Stored
	Consumed []Stored // in the order read
	Commits  []Commit // in the order seen, per source
}

// Verdict is the checker's count of each kind of wrong.
type Verdict struct {
	Acked, Read   int
	Lost          int // acknowledged, not in the log at all
	Misplaced     int // acknowledged, in the log but not at the acknowledged offset
	Duplicated    int // extra copies of a value in the log
	Reordered     int // a writer's record after one it sent later, in one partition
	Foreign       int // records no writer of this run wrote
	UnackedStored int // in the log though its writer never learnt of an ack (allowed)

	Consumed int // records the group consumer read (again counted again)
	// Vanished are records a consumer read that are not in the log at the
	// end, of which VanishedUnacked were never acknowledged (those the
	// writers had acknowledged are Lost as well).
	Vanished, VanishedUnacked int
	// Moved are records a consumer read at one offset and the log holds
	// at another.
	Moved int
	// CommitsBackwards counts committed offsets of a partition lower than
	// one seen before from the same source.
	CommitsBackwards int

	Problems []string
}

// Failed reports whether the verdict holds any anomaly; unacknowledged
// records in the log are allowed (a writer may not learn of an ack).
func (v *Verdict) Failed() bool {
	return v.Lost+v.Misplaced+v.Duplicated+v.Reordered+v.Foreign+v.Vanished+v.Moved+v.CommitsBackwards > 0
}

func (v *Verdict) problem(format string, args ...any) {
	if len(v.Problems) < 50 {
		v.Problems = append(v.Problems, fmt.Sprintf(format, args...))
	}
}

type loc struct {
	partition int32
	offset    int64
}

// Check holds the log read back against the history: every acknowledged
// record present exactly once, at its acknowledged partition and offset;
// in each partition each writer's sequence numbers rising; every record a
// consumer read still in the log at the offset it was read at; each
// source's committed offsets of a partition never going down.
func Check(h History) *Verdict {
	v := &Verdict{Acked: len(h.Acks), Read: len(h.Log), Consumed: len(h.Consumed)}
	log := append([]Stored(nil), h.Log...)
	where := map[string][]loc{}
	at := map[loc]string{}
	sort.Slice(log, func(i, j int) bool {
		if log[i].Partition != log[j].Partition {
			return log[i].Partition < log[j].Partition
		}
		return log[i].Offset < log[j].Offset
	})
	type pw struct {
		partition int32
		writer    string
	}
	last := map[pw]Stored{}
	for _, s := range log {
		where[s.Value] = append(where[s.Value], loc{s.Partition, s.Offset})
		at[loc{s.Partition, s.Offset}] = s.Value
		wr, seq, ok := ParseValue(s.Value)
		if !ok {
			v.Foreign++
			v.problem("partition %d offset %d holds %q, which no writer wrote", s.Partition, s.Offset, s.Value)
			continue
		}
		k := pw{s.Partition, wr}
		if prev, ok := last[k]; ok {
			_, pseq, _ := ParseValue(prev.Value)
			if seq < pseq {
				v.Reordered++
				v.problem("partition %d: %s at offset %d after %s at offset %d", s.Partition, s.Value, s.Offset, prev.Value, prev.Offset)
			}
		}
		last[k] = s
	}
	for val, locs := range where {
		if len(locs) > 1 {
			v.Duplicated += len(locs) - 1
			v.problem("%s stored %d times: %v", val, len(locs), locs)
		}
	}
	ackedValues := map[string]bool{}
	for _, a := range h.Acks {
		val := RecordValue(a.Writer, a.Seq)
		ackedValues[val] = true
		if at[loc{a.Partition, a.Offset}] == val {
			continue
		}
		if locs := where[val]; len(locs) > 0 {
			v.Misplaced++
			v.problem("%s acknowledged at partition %d offset %d, stored at %v (that offset holds %q)", val, a.Partition, a.Offset, locs, at[loc{a.Partition, a.Offset}])
			continue
		}
		v.Lost++
		v.problem("%s acknowledged at partition %d offset %d (at %s), not in the log (that offset holds %q)", val, a.Partition, a.Offset,
			a.At.Format("15:04:05.000"), at[loc{a.Partition, a.Offset}])
	}
	for val := range where {
		if _, _, ok := ParseValue(val); ok && !ackedValues[val] {
			v.UnackedStored++
		}
	}
	// A consumer may read a record twice (after a rebalance, say); each
	// place it read a record at is checked once.
	seen := map[Stored]bool{}
	for _, c := range h.Consumed {
		if seen[c] {
			continue
		}
		seen[c] = true
		if at[loc{c.Partition, c.Offset}] == c.Value {
			continue
		}
		if locs := where[c.Value]; len(locs) > 0 {
			v.Moved++
			v.problem("%s read by the consumer at partition %d offset %d, stored at %v", c.Value, c.Partition, c.Offset, locs)
			continue
		}
		v.Vanished++
		if !ackedValues[c.Value] {
			v.VanishedUnacked++
		}
		v.problem("%s read by the consumer at partition %d offset %d (acknowledged: %v), not in the log (that offset holds %q)",
			c.Value, c.Partition, c.Offset, ackedValues[c.Value], at[loc{c.Partition, c.Offset}])
	}
	type sp struct {
		source    string
		partition int32
	}
	high := map[sp]int64{}
	for _, c := range h.Commits {
		k := sp{c.Source, c.Partition}
		if prev, ok := high[k]; ok && c.Offset < prev {
			v.CommitsBackwards++
			v.problem("%s: committed offset of partition %d went back from %d to %d", c.Source, c.Partition, prev, c.Offset)
			continue
		}
		high[k] = c.Offset
	}
	return v
}
