package franzsuite

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-io/gregor/compat-tests/go/internal/compat"
)

// groupCommitResume has one group member read until it has seen offset
// mid-1 of every partition, commit exactly those records (so offset mid),
// and leave; a second member of the same group must start at mid in every
// partition and read the rest, nothing lost and nothing repeated. Both
// members would start from the earliest offset without a commit, so a lost
// commit shows as records read twice.
func (s *suite) groupCommitResume(ctx context.Context, t *compat.T) (string, error) {
	const mid = 40
	topic, group := t.Name(""), t.Name("g")
	recs := compat.Generate(500, 300, 3, compat.BaseTime())
	if err := s.setup(ctx, t, topic, 3, recs); err != nil {
		return "", err
	}

	first, err := s.client(t, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return "", err
	}
	defer first.Close()
	at := make(map[int32]*kgo.Record) // the record at mid-1, per partition
	rctx, cancel := t.Step(ctx, "first member reads")
	defer cancel()
	err = compat.Poll(rctx, 0, func(ctx context.Context) (bool, string, error) {
		fs := first.PollFetches(ctx)
		if err := fetchErr(fs); err != nil {
			return false, "", err
		}
		fs.EachRecord(func(kr *kgo.Record) {
			if kr.Offset == mid-1 {
				at[kr.Partition] = kr
			}
		})
		return len(at) == 3, fmt.Sprintf("saw offset %d in %d of 3 partitions", mid-1, len(at)), nil
	})
	if err != nil {
		return "", err
	}
	cctx, cancel := t.Step(ctx, "first member commits")
	defer cancel()
	if err := first.CommitRecords(cctx, slices.Collect(maps.Values(at))...); err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	lctx, cancel := t.Step(ctx, "first member leaves")
	defer cancel()
	if err := first.LeaveGroupContext(lctx); err != nil {
		return "", fmt.Errorf("leave group: %w", err)
	}
	first.Close()

	var want []compat.Record
	for _, r := range recs {
		if r.Offset >= mid {
			want = append(want, r)
		}
	}
	second, err := s.client(t, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return "", err
	}
	defer second.Close()
	var got []compat.Record
	wantN := compat.Counts(want)
	have := make(map[int32]int)
	sctx, cancel := t.Step(ctx, "second member reads")
	defer cancel()
	err = compat.Poll(sctx, 0, func(ctx context.Context) (bool, string, error) {
		fs := second.PollFetches(ctx)
		if err := fetchErr(fs); err != nil {
			return false, "", err
		}
		fs.EachRecord(func(kr *kgo.Record) {
			got = append(got, toCompat(kr))
			have[kr.Partition]++
		})
		for p, n := range wantN {
			if have[p] < n {
				return false, fmt.Sprintf("second member read %v records per partition, want %v", have, wantN), nil
			}
		}
		return true, "", nil
	})
	if err != nil {
		return "", err
	}
	if err := compat.Compare(want, got); err != nil {
		return "", fmt.Errorf("second member (should resume at offset %d): %w", mid, err)
	}
	return fmt.Sprintf("committed offset %d on 3 partitions, the next member read the %d records after it", mid, len(got)), nil
}

// groupRebalance starts two members of one group on a 4-partition topic,
// waits until the group has split the partitions between them (disjoint,
// together all four, each some), then produces, and checks that together
// they read every record exactly once, each from its own partitions.
func (s *suite) groupRebalance(ctx context.Context, t *compat.T) (string, error) {
	topic, group := t.Name(""), t.Name("g")
	recs := compat.Generate(600, 400, 4, compat.BaseTime())
	cl, err := s.producer(t)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	sctx, cancel := t.Step(ctx, "create topic")
	defer cancel()
	if err := createTopic(sctx, kadm.NewClient(cl), topic, 4, nil); err != nil {
		return "", err
	}

	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stop()
		wg.Wait()
	}()
	var members []*compat.Member
	for _, name := range []string{"a", "b"} {
		m := compat.NewMember(name)
		mc, err := s.client(t, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) { m.Assign(a[topic]...) }),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) { m.Revoke(r[topic]...) }),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) { m.Revoke(l[topic]...) }),
		)
		if err != nil {
			return "", err
		}
		defer mc.Close()
		members = append(members, m)
		wg.Go(func() {
			for runCtx.Err() == nil {
				mc.PollFetches(runCtx).EachRecord(func(kr *kgo.Record) { m.Add(toCompat(kr)) })
			}
		})
	}

	jctx, cancel := t.Step(ctx, "wait for the partitions to be split")
	defer cancel()
	split, err := compat.WaitSplit(jctx, 4, members...)
	if err != nil {
		return "", err
	}
	pctx, cancel := t.Step(ctx, "produce")
	defer cancel()
	if err := produce(pctx, cl, topic, recs); err != nil {
		return "", err
	}
	if err := compat.CheckAcked(recs, 0); err != nil {
		return "", err
	}
	rctx, cancel := t.Step(ctx, "members read")
	defer cancel()
	if err := compat.WaitRead(rctx, len(recs), members...); err != nil {
		return "", err
	}
	stop()
	wg.Wait()
	return compat.CheckSplitRead(recs, split, members...)
}
