package main

import (
	"context"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupStarts makes `consume --group` commit every partition it was
// assigned, not only those it printed records of. A partition of a group
// without a committed offset starts where --offset or --timestamp say; when
// the command ends before printing a record of it (--count reached, timeout,
// Ctrl-C), that start is committed, so that the group's next member reads
// the partition from there. Otherwise the next member, with the default
// --offset end, would skip the records that this one never printed.
//
// The starts are resolved with ListOffsets when the group's offsets have
// been fetched, and the partition is consumed from the resolved offset, so
// that what is committed is exactly where this member started.
type groupStarts struct {
	topic  string
	offset string // --offset: start, end, N or -N
	milli  int64  // --timestamp in ms, or -1

	mu    sync.Mutex
	cl    *kgo.Client
	fresh map[int32]bool  // partitions the group has no committed offset for
	start map[int32]int64 // assigned partitions without a commit: their resolved start
}

func newGroupStarts(topic string, c *consumeOptions) (*groupStarts, error) {
	g := &groupStarts{topic: topic, offset: c.offset, milli: -1}
	if c.timestamp != "" {
		ms, err := parseTimestamp(c.timestamp)
		if err != nil {
			return nil, err
		}
		g.milli = ms
	}
	return g, nil
}

// opts are the group options that hook groupStarts into the client.
func (g *groupStarts) opts() []kgo.Opt {
	return []kgo.Opt{
		kgo.OnOffsetsFetched(g.onFetched),
		kgo.AdjustFetchOffsetsFn(g.adjust),
		kgo.OnPartitionsRevoked(g.forget),
		kgo.OnPartitionsLost(g.forget),
	}
}

// onFetched notes the partitions of the topic without a committed offset.
func (g *groupStarts) onFetched(_ context.Context, cl *kgo.Client, resp *kmsg.OffsetFetchResponse) error {
	fresh := make(map[int32]bool)
	add := func(topic string, p int32, offset int64) {
		if topic == g.topic && offset < 0 {
			fresh[p] = true
		}
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			add(t.Topic, p.Partition, p.Offset)
		}
	}
	for _, grp := range resp.Groups {
		for _, t := range grp.Topics {
			for _, p := range t.Partitions {
				add(t.Topic, p.Partition, p.Offset)
			}
		}
	}
	g.mu.Lock()
	g.cl, g.fresh = cl, fresh
	g.mu.Unlock()
	return nil
}

// adjust replaces the reset offset of each partition without a commit by
// the offset it resolves to. When the lookup fails the partitions keep the
// reset offset and are not committed unless records of them are printed.
func (g *groupStarts) adjust(ctx context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	g.mu.Lock()
	cl, fresh := g.cl, g.fresh
	g.mu.Unlock()
	var ps []int32
	for p := range offsets[g.topic] {
		if fresh[p] {
			ps = append(ps, p)
		}
	}
	if cl == nil || len(ps) == 0 {
		return offsets, nil
	}
	resolved, err := g.resolve(ctx, kadm.NewClient(cl), ps)
	if err != nil {
		return offsets, nil //nolint:nilerr // the reset offsets still apply
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.start == nil {
		g.start = make(map[int32]int64)
	}
	for p, o := range resolved {
		offsets[g.topic][p] = kgo.NewOffset().At(o)
		g.start[p] = o
	}
	return offsets, nil
}

// resolve returns the offsets where --offset or --timestamp start in
// partitions ps: an offset N or the last N records are kept between the
// log start and the log end offset.
func (g *groupStarts) resolve(ctx context.Context, adm *kadm.Client, ps []int32) (map[int32]int64, error) {
	lookup := func(l kadm.ListedOffsets, p int32) (int64, bool) {
		o, ok := l.Lookup(g.topic, p)
		return o.Offset, ok && o.Err == nil && o.Offset >= 0
	}
	var starts, ends kadm.ListedOffsets
	var err error
	if g.milli >= 0 {
		if starts, err = adm.ListOffsetsAfterMilli(ctx, g.milli, g.topic); err != nil {
			return nil, err
		}
	} else {
		if starts, err = adm.ListStartOffsets(ctx, g.topic); err != nil {
			return nil, err
		}
		if ends, err = adm.ListEndOffsets(ctx, g.topic); err != nil {
			return nil, err
		}
	}
	out := make(map[int32]int64, len(ps))
	for _, p := range ps {
		first, ok := lookup(starts, p)
		if !ok {
			continue
		}
		if g.milli >= 0 {
			out[p] = first
			continue
		}
		end, ok := lookup(ends, p)
		if !ok {
			continue
		}
		switch g.offset {
		case "start", "beginning", "earliest":
			out[p] = first
		case "end", "latest":
			out[p] = end
		default:
			n, err := strconv.ParseInt(g.offset, 10, 64)
			if err != nil {
				continue
			}
			if n < 0 {
				n += end
			}
			out[p] = min(max(n, first), end)
		}
	}
	return out, nil
}

// forget drops revoked or lost partitions: another member owns them now.
func (g *groupStarts) forget(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range lost[g.topic] {
		delete(g.start, p)
	}
}

// unprinted returns the start of every partition still assigned that has
// no commit and no record printed (marked).
func (g *groupStarts) unprinted(cl *kgo.Client) map[string]map[int32]kgo.EpochOffset {
	done := func(m map[string]map[int32]kgo.EpochOffset, p int32) bool {
		_, ok := m[g.topic][p]
		return ok
	}
	marked, committed := cl.MarkedOffsets(), cl.CommittedOffsets()
	g.mu.Lock()
	defer g.mu.Unlock()
	starts := make(map[int32]kgo.EpochOffset)
	for p, o := range g.start {
		if !done(marked, p) && !done(committed, p) {
			starts[p] = kgo.EpochOffset{Epoch: -1, Offset: o}
		}
	}
	if len(starts) == 0 {
		return nil
	}
	return map[string]map[int32]kgo.EpochOffset{g.topic: starts}
}

// commitUnprinted commits what unprinted returns and returns the first
// error.
func (g *groupStarts) commitUnprinted(ctx context.Context, cl *kgo.Client, offsets map[string]map[int32]kgo.EpochOffset) error {
	if len(offsets) == 0 {
		return nil
	}
	var first error
	cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			first = err
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil && first == nil {
					first = err
				}
			}
		}
	})
	return first
}
