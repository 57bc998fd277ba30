package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestConsumerGroupProtocol: franz-go consumers on the KIP-848 protocol
// (ConsumerGroupHeartbeat, server-side assignment) share a topic, commit,
// and when one leaves the other takes its partitions and resumes from the
// commits; a member of the group restarted on the broker after the
// others left finds the group and its offsets again (loaded from the
// records).
func TestConsumerGroupProtocol(t *testing.T) {
	t.Parallel()
	rb := startGrpRestartable(t, false)
	ctx := testContext(t, 2*time.Minute)
	const topic, groupID, n = "kip848", "kip848-group", 600
	adm := kadm.NewClient(newClient(t, rb.b))
	grpCreateTopic(ctx, t, adm, topic, 6)
	prod := newClient(t, rb.b, kgo.DefaultProduceTopic(topic))
	for i := range n {
		if err := prod.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	var mu sync.Mutex
	seen := map[string]int{}
	member := func(name string) *kgo.Client {
		return newClient(t, rb.b, kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.ClientID(name))
	}
	poll := func(cl *kgo.Client, until func() bool) {
		t.Helper()
		for !until() {
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			fs := cl.PollFetches(pctx)
			cancel()
			if err := ctx.Err(); err != nil {
				t.Fatalf("polling: %v (read %d)", err, len(seen))
			}
			fs.EachRecord(func(r *kgo.Record) {
				mu.Lock()
				seen[string(r.Value)]++
				mu.Unlock()
			})
			if err := cl.CommitUncommittedOffsets(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				t.Logf("commit: %v", err)
			}
		}
	}
	a, b := member("a"), member("b")
	// Both members end up with three partitions each.
	waitFor(t, 60*time.Second, "two members with three partitions each", func() error {
		poll(a, func() bool { return true })
		poll(b, func() bool { return true })
		described, err := adm.DescribeConsumerGroups(ctx, groupID)
		if err != nil {
			return err
		}
		g := described[groupID]
		if g.Err != nil || g.State != "Stable" || len(g.Members) != 2 {
			return fmt.Errorf("group %s, %d members (%w)", g.State, len(g.Members), g.Err)
		}
		for _, m := range g.Members {
			if ps := m.Assignment[topic]; len(ps) != 3 || len(m.Assignment) != 1 {
				return fmt.Errorf("member %s assigned %v", m.ClientID, m.Assignment)
			}
		}
		return nil
	})
	// The group is listed as a consumer group.
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := listed[groupID]; !ok || g.ProtocolType != "consumer" {
		t.Fatalf("ListGroups: %+v", listed)
	}
	b.Close() // b leaves the group
	poll(a, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == n
	})
	if err := a.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	a.Close()

	mu.Lock()
	for v, c := range seen {
		if c > 1 {
			t.Logf("record %s read %d times (redelivered after the rebalance)", v, c)
		}
	}
	mu.Unlock()
	offs, err := adm.FetchOffsets(ctx, groupID)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
	if sum != n {
		t.Fatalf("committed offsets add up to %d, want %d", sum, n)
	}

	// After a restart the group and its offsets are loaded from the log:
	// a new member resumes at the end.
	rb.restart(t)
	c := member("c")
	ctx2, cancel := context.WithTimeout(ctx, 8*time.Second)
	defer cancel()
	got := 0
	for ctx2.Err() == nil {
		c.PollFetches(ctx2).EachRecord(func(*kgo.Record) { got++ })
	}
	if got != 0 {
		t.Fatalf("a member after the restart read %d records, want none (the group's offsets are at the end)", got)
	}
	described, err := kadm.NewClient(newClient(t, rb.b)).DescribeConsumerGroups(ctx, groupID)
	if err != nil {
		t.Fatal(err)
	}
	if g := described[groupID]; g.Err != nil || len(g.Members) != 1 {
		t.Fatalf("after the restart: %+v", g)
	}
}

// TestConsumerGroupMigration: a classic franz-go consumer's group becomes
// a consumer group when a KIP-848 member joins (online upgrade); the
// classic member stays in it through JoinGroup, SyncGroup and Heartbeat
// and the two share the partitions; when the KIP-848 member leaves, the
// group is classic again (online downgrade) and the classic member gets
// every partition. Every record is read.
func TestConsumerGroupMigration(t *testing.T) {
	t.Parallel()
	rb := startGrpRestartable(t, false)
	ctx := testContext(t, 2*time.Minute)
	const topic, groupID = "migrate", "migrate-group"
	adm := kadm.NewClient(newClient(t, rb.b))
	grpCreateTopic(ctx, t, adm, topic, 6)
	prod := newClient(t, rb.b, kgo.DefaultProduceTopic(topic))
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if err := prod.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	opts := []kgo.Opt{kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit()}
	classic := newClient(t, rb.b, append(opts, kgo.ClientID("classic"), kgo.HeartbeatInterval(200*time.Millisecond))...)
	poll := func(cl *kgo.Client) {
		pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			mu.Lock()
			seen[string(r.Value)] = true
			mu.Unlock()
		})
		if err := cl.CommitUncommittedOffsets(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Logf("commit: %v", err)
		}
	}
	readAll := func(n int, cls ...*kgo.Client) {
		t.Helper()
		waitFor(t, 60*time.Second, fmt.Sprintf("%d records read", n), func() error {
			for _, cl := range cls {
				poll(cl)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) < n {
				return fmt.Errorf("%d read", len(seen))
			}
			return nil
		})
	}
	produce(0, 100)
	readAll(100, classic)
	if d, err := adm.DescribeGroups(ctx, groupID); err != nil || d[groupID].State != "Stable" || d[groupID].ProtocolType != "consumer" {
		t.Fatalf("classic group: %+v %v", d[groupID], err)
	}

	// A KIP-848 member joins: the group is upgraded and shared.
	next := newClient(t, rb.b, append(opts, kgo.ClientID("kip848"), kgo.ServerSideBalancer())...)
	waitFor(t, 60*time.Second, "a consumer group of both members, three partitions each", func() error {
		poll(classic)
		poll(next)
		described, err := adm.DescribeConsumerGroups(ctx, groupID)
		if err != nil {
			return err
		}
		g := described[groupID]
		if g.Err != nil || g.State != "Stable" || len(g.Members) != 2 {
			return fmt.Errorf("group %s, %d members (%w)", g.State, len(g.Members), g.Err)
		}
		for _, m := range g.Members {
			if ps := m.Assignment[topic]; len(ps) != 3 {
				return fmt.Errorf("member %s assigned %v", m.ClientID, m.Assignment)
			}
		}
		return nil
	})
	produce(100, 200)
	readAll(200, classic, next)

	// The KIP-848 member leaves: the group is classic again and the
	// classic member takes every partition.
	next.Close()
	waitFor(t, 60*time.Second, "a classic group of one member with six partitions", func() error {
		poll(classic)
		d, err := adm.DescribeGroups(ctx, groupID)
		if err != nil {
			return err
		}
		g := d[groupID]
		if g.Err != nil || g.State != "Stable" || len(g.Members) != 1 {
			return fmt.Errorf("group %s, %d members (%w)", g.State, len(g.Members), g.Err)
		}
		a, _ := g.Members[0].Assigned.AsConsumer()
		if a == nil || len(a.Topics) != 1 || len(a.Topics[0].Partitions) != 6 {
			return fmt.Errorf("classic member assigned %+v", a)
		}
		return nil
	})
	produce(200, 300)
	readAll(300, classic)
}
