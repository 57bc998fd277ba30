package saramasuite

import (
	"context"
	"fmt"
	"sync"

	"github.com/IBM/sarama"

	"github.com/gregor-io/gregor/compat-tests/go/internal/compat"
)

// groupCommitResume has one member mark the record at offset mid-1 of every
// partition and commit (so offset mid), then leave; a second member of the
// same group must resume at mid in every partition and read the rest,
// nothing lost and nothing repeated. Without the commit it would start at
// the earliest offset.
func groupCommitResume(ctx context.Context, t *compat.T) (string, error) {
	const mid = 40
	topic, group := t.Name(""), t.Name("g")
	recs := compat.Generate(510, 300, 3, compat.BaseTime())
	if err := setup(ctx, t, topic, 3, recs); err != nil {
		return "", err
	}

	rctx, cancel := t.Step(ctx, "first member reads and commits")
	defer cancel()
	var (
		mu        sync.Mutex
		marked    = make(map[int32]bool)
		committed = make(chan struct{})
	)
	first, err := join(ctx, t, config(), group, topic, handler{
		message: func(s sarama.ConsumerGroupSession, m *sarama.ConsumerMessage) {
			if m.Offset != mid-1 {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if marked[m.Partition] {
				return
			}
			s.MarkMessage(m, "")
			marked[m.Partition] = true
			if len(marked) == 3 {
				s.Commit()
				close(committed)
			}
		},
	})
	if err != nil {
		return "", err
	}
	defer first.stop()
	select {
	case <-committed:
	case <-rctx.Done():
		mu.Lock()
		defer mu.Unlock()
		return "", fmt.Errorf("%w with offset %d seen in %d of 3 partitions (%s)", rctx.Err(), mid-1, len(marked), first.errors())
	}
	_, cancel = t.Step(ctx, "first member leaves")
	defer cancel()
	if err := first.stop(); err != nil {
		return "", fmt.Errorf("close first member: %w", err)
	}
	if e := first.errors(); e != "no errors reported" {
		return "", fmt.Errorf("first member: %s", e)
	}

	var want []compat.Record
	for _, r := range recs {
		if r.Offset >= mid {
			want = append(want, r)
		}
	}
	sctx, cancel := t.Step(ctx, "second member reads")
	defer cancel()
	m := compat.NewMember("second")
	second, err := join(ctx, t, config(), group, topic, handler{
		message: func(_ sarama.ConsumerGroupSession, msg *sarama.ConsumerMessage) { m.Add(toCompat(msg)) },
	})
	if err != nil {
		return "", err
	}
	defer second.stop()
	if err := compat.WaitRead(sctx, len(want), m); err != nil {
		return "", fmt.Errorf("%w (%s)", err, second.errors())
	}
	if err := second.stop(); err != nil {
		return "", fmt.Errorf("close second member: %w", err)
	}
	if err := compat.Compare(want, m.Read()); err != nil {
		return "", fmt.Errorf("second member (should resume at offset %d): %w", mid, err)
	}
	return fmt.Sprintf("committed offset %d on 3 partitions, the next member read the %d records after it", mid, len(want)), nil
}

// groupRebalance starts two members of one group on a 4-partition topic,
// waits until the group has split the partitions between them, then
// produces, and checks that together they read every record once, each from
// its own partitions.
func groupRebalance(ctx context.Context, t *compat.T) (string, error) {
	topic, group := t.Name(""), t.Name("g")
	recs := compat.Generate(610, 400, 4, compat.BaseTime())
	_, cancel := t.Step(ctx, "create topic")
	defer cancel()
	if err := createTopic(t, topic, 4); err != nil {
		return "", err
	}
	var (
		members []*compat.Member
		running []*groupMember
	)
	for _, name := range []string{"a", "b"} {
		m := compat.NewMember(name)
		gm, err := join(ctx, t, config(), group, topic, handler{
			setup:   func(s sarama.ConsumerGroupSession) { m.Assign(s.Claims()[topic]...) },
			cleanup: func(sarama.ConsumerGroupSession) { m.RevokeAll() },
			message: func(_ sarama.ConsumerGroupSession, msg *sarama.ConsumerMessage) { m.Add(toCompat(msg)) },
		})
		if err != nil {
			return "", err
		}
		defer gm.stop()
		members = append(members, m)
		running = append(running, gm)
	}
	jctx, cancel := t.Step(ctx, "wait for the partitions to be split")
	defer cancel()
	split, err := compat.WaitSplit(jctx, 4, members...)
	if err != nil {
		return "", fmt.Errorf("%w (a: %s; b: %s)", err, running[0].errors(), running[1].errors())
	}
	_, cancel = t.Step(ctx, "produce")
	defer cancel()
	if err := produce(t, config(), topic, recs); err != nil {
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
	// Check before stopping: leaving the group revokes the partitions.
	return compat.CheckSplitRead(recs, split, members...)
}
