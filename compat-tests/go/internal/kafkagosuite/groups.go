package kafkagosuite

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/gregor-io/gregor/compat-tests/go/internal/compat"
)

// groupReader returns a Reader that is a member of group, reading topic
// from the earliest offset where the group has none committed, committing
// only when told to (synchronously).
func (s *suite) groupReader(t *compat.T, group, topic string) *kafka.Reader {
	return kafka.NewReader(kafka.ReaderConfig{
		Brokers:           t.Brokers(),
		GroupID:           group,
		Topic:             topic,
		Dialer:            dialer(),
		MinBytes:          1,
		MaxBytes:          10 << 20,
		MaxWait:           500 * time.Millisecond,
		StartOffset:       kafka.FirstOffset,
		CommitInterval:    0,
		HeartbeatInterval: time.Second,
		JoinGroupBackoff:  500 * time.Millisecond,
		MaxAttempts:       5,
		Logger:            s.info(),
		ErrorLogger:       s.errLog,
	})
}

// groupCommitResume has one member read until it has fetched offset mid-1
// of every partition, commit those messages (so offset mid), and leave; a
// second member of the same group must resume at mid in every partition and
// read the rest, nothing lost and nothing repeated. Without the commit it
// would start at the earliest offset.
func (s *suite) groupCommitResume(ctx context.Context, t *compat.T) (string, error) {
	const mid = 40
	topic, group := t.Name(""), t.Name("g")
	recs := compat.Generate(520, 300, 3, compat.BaseTime())
	if err := s.setup(ctx, t, topic, 3, recs); err != nil {
		return "", err
	}

	rctx, cancel := t.Step(ctx, "first member reads")
	defer cancel()
	first := s.groupReader(t, group, topic)
	defer first.Close()
	at := make(map[int32]kafka.Message)
	for len(at) < 3 {
		m, err := first.FetchMessage(rctx)
		if err != nil {
			return "", fmt.Errorf("fetch with offset %d seen in %d of 3 partitions: %w", mid-1, len(at), err)
		}
		if m.Offset == mid-1 {
			at[int32(m.Partition)] = m
		}
	}
	cctx, cancel := t.Step(ctx, "first member commits")
	defer cancel()
	if err := first.CommitMessages(cctx, slices.Collect(maps.Values(at))...); err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	_, cancel = t.Step(ctx, "first member leaves")
	defer cancel()
	if err := first.Close(); err != nil {
		return "", fmt.Errorf("close first member: %w", err)
	}

	var want []compat.Record
	for _, r := range recs {
		if r.Offset >= mid {
			want = append(want, r)
		}
	}
	sctx, cancel := t.Step(ctx, "second member reads")
	defer cancel()
	second := s.groupReader(t, group, topic)
	defer second.Close()
	var got []compat.Record
	for len(got) < len(want) {
		m, err := second.FetchMessage(sctx)
		if err != nil {
			return "", fmt.Errorf("second member after %d of %d records: %w", len(got), len(want), err)
		}
		got = append(got, toCompat(m))
	}
	if err := compare(want, got); err != nil {
		return "", fmt.Errorf("second member (should resume at offset %d): %w", mid, err)
	}
	return fmt.Sprintf("committed offset %d on 3 partitions, the next member read the %d records after it", mid, len(want)), nil
}

// groupRebalance runs two ConsumerGroup members on a 4-partition topic,
// each reading its assigned partitions with a partition Reader per
// generation; it waits until the group has split the partitions between
// them, then produces, and checks that together they read every record
// once, each from its own partitions.
func (s *suite) groupRebalance(ctx context.Context, t *compat.T) (string, error) {
	topic, group := t.Name(""), t.Name("g")
	recs := compat.Generate(620, 400, 4, compat.BaseTime())
	cctx, cancel := t.Step(ctx, "create topic")
	defer cancel()
	if err := createTopic(cctx, t, topic, 4); err != nil {
		return "", err
	}

	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stop()
		wg.Wait()
	}()
	var (
		members []*compat.Member
		errMu   sync.Mutex
		errs    []error
	)
	report := func(err error) {
		errMu.Lock()
		defer errMu.Unlock()
		errs = append(errs, err)
	}
	for _, name := range []string{"a", "b"} {
		m := compat.NewMember(name)
		cg, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
			ID:                group,
			Brokers:           t.Brokers(),
			Dialer:            dialer(),
			Topics:            []string{topic},
			StartOffset:       kafka.FirstOffset,
			HeartbeatInterval: time.Second,
			JoinGroupBackoff:  500 * time.Millisecond,
			Logger:            s.info(),
			ErrorLogger:       s.errLog,
		})
		if err != nil {
			return "", fmt.Errorf("consumer group member %s: %w", name, err)
		}
		defer cg.Close()
		members = append(members, m)
		wg.Go(func() {
			for {
				gen, err := cg.Next(runCtx)
				if err != nil {
					if runCtx.Err() != nil || errors.Is(err, kafka.ErrGroupClosed) {
						return
					}
					// kafka-go hands the errors of joining a generation to
					// Next's caller and tries again on the next call (a
					// SyncGroup that meets the other member's join gets
					// REBALANCE_IN_PROGRESS, for one). They are kept for
					// the failure reason; the scenario's deadline bounds
					// the retries.
					report(fmt.Errorf("member %s: next generation: %w", name, err))
					select {
					case <-runCtx.Done():
						return
					case <-time.After(100 * time.Millisecond):
					}
					continue
				}
				// A new generation replaces the old assignment whole.
				m.RevokeAll()
				for _, pa := range gen.Assignments[topic] {
					m.Assign(int32(pa.ID))
					gen.Start(func(ctx context.Context) {
						if err := s.readAssigned(ctx, t, topic, pa, m); err != nil {
							report(fmt.Errorf("member %s: %w", name, err))
						}
					})
				}
			}
		})
	}
	why := func() string {
		errMu.Lock()
		defer errMu.Unlock()
		if len(errs) == 0 {
			return "no member errors"
		}
		return fmt.Sprintf("%d member errors, first: %v", len(errs), errs[0])
	}

	jctx, cancel := t.Step(ctx, "wait for the partitions to be split")
	defer cancel()
	split, err := compat.WaitSplit(jctx, 4, members...)
	if err != nil {
		return "", fmt.Errorf("%w (%s)", err, why())
	}
	pctx, cancel := t.Step(ctx, "produce")
	defer cancel()
	if err := s.produce(pctx, topic, t, 0, recs); err != nil {
		return "", err
	}
	if err := compat.CheckAcked(recs, 0); err != nil {
		return "", err
	}
	rctx, cancel := t.Step(ctx, "members read")
	defer cancel()
	if err := compat.WaitRead(rctx, len(recs), members...); err != nil {
		return "", fmt.Errorf("%w (%s)", err, why())
	}
	return compat.CheckSplitRead(compat.EmptyAsNull(recs), split, members...)
}

// readAssigned reads one assigned partition from the generation's offset
// until the generation ends.
func (s *suite) readAssigned(ctx context.Context, t *compat.T, topic string, pa kafka.PartitionAssignment, m *compat.Member) error {
	r, err := s.partitionReader(t, topic, int32(pa.ID), pa.Offset)
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		msg, err := r.ReadMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("read partition %d: %w", pa.ID, err)
		}
		m.Add(toCompat(msg))
	}
}
