package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// stored is one record as a fresh consumer reads it back.
type stored struct {
	partition int32
	offset    int64
	value     string
}

// readAll reads every partition of topic from offset 0 up to its high
// watermark (read_uncommitted, kgo's default) with a client of its own.
func readAll(ctx context.Context, seeds []string, topic string, partitions int32) ([]stored, map[int32]int64, error) {
	adminCl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return nil, nil, err
	}
	defer adminCl.Close()
	ends, err := kadm.NewClient(adminCl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, nil, fmt.Errorf("list end offsets: %w", err)
	}
	hw := map[int32]int64{}
	at := map[int32]kgo.Offset{}
	for p := range partitions {
		o, ok := ends.Lookup(topic, p)
		if !ok {
			return nil, nil, fmt.Errorf("no end offset of partition %d", p)
		}
		if o.Err != nil {
			return nil, nil, fmt.Errorf("end offset of partition %d: %w", p, o.Err)
		}
		hw[p] = o.Offset
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
	var out []stored
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
				fmt.Printf("failover: read back partition %d: %v (retrying)\n", e.Partition, e.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= hw[r.Partition] {
				return // past the high watermark the harness read up to
			}
			out = append(out, stored{partition: r.Partition, offset: r.Offset, value: string(r.Value)})
			next[r.Partition] = r.Offset + 1
		})
	}
	return out, hw, nil
}

// verdict is the checker's count of each kind of wrong.
type verdict struct {
	acked, read   int
	lost          int // acknowledged, not in the log at all
	misplaced     int // acknowledged, in the log but not at the acknowledged offset
	duplicated    int // extra copies of a value in the log
	reordered     int // a writer's record after one it sent later, in one partition
	foreign       int // records no writer of this run wrote
	unackedStored int // in the log though its writer never learnt of an ack (allowed)
	problems      []string
}

func (v *verdict) failed() bool {
	return v.lost+v.misplaced+v.duplicated+v.reordered+v.foreign > 0
}

func (v *verdict) problem(format string, args ...any) {
	if len(v.problems) < 50 {
		v.problems = append(v.problems, fmt.Sprintf(format, args...))
	}
}

// check holds the log read back against the acknowledgements: every
// acknowledged record present exactly once, at its acknowledged partition
// and offset; in each partition each writer's sequence numbers rising.
func check(acks []ack, log []stored) *verdict {
	v := &verdict{acked: len(acks), read: len(log)}
	type loc struct {
		partition int32
		offset    int64
	}
	where := map[string][]loc{}
	at := map[loc]string{}
	sort.Slice(log, func(i, j int) bool {
		if log[i].partition != log[j].partition {
			return log[i].partition < log[j].partition
		}
		return log[i].offset < log[j].offset
	})
	type pw struct {
		partition int32
		writer    string
	}
	last := map[pw]stored{}
	for _, s := range log {
		where[s.value] = append(where[s.value], loc{s.partition, s.offset})
		at[loc{s.partition, s.offset}] = s.value
		wr, seq, ok := parseValue(s.value)
		if !ok {
			v.foreign++
			v.problem("partition %d offset %d holds %q, which no writer wrote", s.partition, s.offset, s.value)
			continue
		}
		k := pw{s.partition, wr}
		if prev, ok := last[k]; ok {
			_, pseq, _ := parseValue(prev.value)
			if seq < pseq {
				v.reordered++
				v.problem("partition %d: %s at offset %d after %s at offset %d", s.partition, s.value, s.offset, prev.value, prev.offset)
			}
		}
		last[k] = s
	}
	for val, locs := range where {
		if len(locs) > 1 {
			v.duplicated += len(locs) - 1
			v.problem("%s stored %d times: %v", val, len(locs), locs)
		}
	}
	ackedValues := map[string]bool{}
	for _, a := range acks {
		val := recordValue(a.writer, a.seq)
		ackedValues[val] = true
		if at[loc{a.partition, a.offset}] == val {
			continue
		}
		if locs := where[val]; len(locs) > 0 {
			v.misplaced++
			v.problem("%s acknowledged at partition %d offset %d, stored at %v (that offset holds %q)", val, a.partition, a.offset, locs, at[loc{a.partition, a.offset}])
			continue
		}
		v.lost++
		v.problem("%s acknowledged at partition %d offset %d (at +%s), not in the log (that offset holds %q)", val, a.partition, a.offset,
			a.at.Format("15:04:05.000"), at[loc{a.partition, a.offset}])
	}
	for val := range where {
		if _, _, ok := parseValue(val); ok && !ackedValues[val] {
			v.unackedStored++
		}
	}
	return v
}
