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
