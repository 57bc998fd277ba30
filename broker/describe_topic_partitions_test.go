package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// dtpSetup starts a broker with topics a, b and c of 5 partitions each.
func dtpSetup(t *testing.T) (context.Context, *Broker, *kgo.Client) {
	t.Helper()
	b := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cl := newClient(t, b)
	rs, err := kadm.NewClient(cl).CreateTopics(ctx, 5, 1, nil, "c", "a", "b")
	if err == nil {
		err = rs.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	return ctx, b, cl
}

func dtpRequest(ctx context.Context, t *testing.T, b *Broker, cl *kgo.Client, topics []string, limit int32,
	cursor *kmsg.DescribeTopicPartitionsResponseNextCursor) *kmsg.DescribeTopicPartitionsResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	for _, name := range topics {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = name
		req.Topics = append(req.Topics, rt)
	}
	req.ResponsePartitionLimit = limit
	if cursor != nil {
		req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: cursor.Topic, Partition: cursor.Partition}
	}
	resp, err := cl.Broker(int(b.cfg.NodeID)).Request(ctx, req)
	if err != nil {
		t.Fatalf("DescribeTopicPartitions: %v", err)
	}
	return resp.(*kmsg.DescribeTopicPartitionsResponse)
}

// dtpPages pages through topics (all when nil) with limit and returns every
// page as "topic-partition" strings, keeping only the topics in keep.
func dtpPages(ctx context.Context, t *testing.T, b *Broker, cl *kgo.Client, topics []string, limit int32, keep func(string) bool) [][]string {
	t.Helper()
	var pages [][]string
	var cursor *kmsg.DescribeTopicPartitionsResponseNextCursor
	for range 100 {
		resp := dtpRequest(ctx, t, b, cl, topics, limit, cursor)
		var page []string
		n := 0
		for _, rt := range resp.Topics {
			if rt.ErrorCode != 0 {
				t.Fatalf("topic %s: %v", *rt.Topic, kerr.ErrorForCode(rt.ErrorCode))
			}
			n += len(rt.Partitions)
			if !keep(*rt.Topic) {
				continue
			}
			for _, p := range rt.Partitions {
				page = append(page, fmt.Sprintf("%s-%d", *rt.Topic, p.Partition))
			}
		}
		if n > int(limit) {
			t.Errorf("page of %d partitions over the limit of %d", n, limit)
		}
		pages = append(pages, page)
		if resp.NextCursor == nil {
			return pages
		}
		cursor = resp.NextCursor
	}
	t.Fatal("no end after 100 pages")
	return nil
}

func TestDescribeTopicPartitionsPaging(t *testing.T) {
	t.Parallel()
	ctx, b, cl := dtpSetup(t)
	all := func(string) bool { return true }

	pages := dtpPages(ctx, t, b, cl, []string{"c", "a", "b", "a"}, 4, all)
	want := [][]string{
		{"a-0", "a-1", "a-2", "a-3"},
		{"a-4", "b-0", "b-1", "b-2"},
		{"b-3", "b-4", "c-0", "c-1"},
		{"c-2", "c-3", "c-4"},
	}
	if fmt.Sprint(pages) != fmt.Sprint(want) {
		t.Errorf("pages with limit 4:\n got %v\nwant %v", pages, want)
	}

	// A limit reached at the end of a topic points the cursor at the next
	// topic's first partition.
	resp := dtpRequest(ctx, t, b, cl, []string{"a", "b"}, 5, nil)
	if len(resp.Topics) != 1 || *resp.Topics[0].Topic != "a" || len(resp.Topics[0].Partitions) != 5 ||
		resp.NextCursor == nil || resp.NextCursor.Topic != "b" || resp.NextCursor.Partition != 0 {
		t.Errorf("limit 5 over a and b: %d topics, cursor %+v; want a whole, cursor b-0", len(resp.Topics), resp.NextCursor)
	}

	// An empty list means every topic, paged the same way.
	keep := func(name string) bool { return slices.Contains([]string{"a", "b", "c"}, name) }
	var got []string
	for _, page := range dtpPages(ctx, t, b, cl, nil, 4, keep) {
		got = append(got, page...)
	}
	var flat []string
	for _, page := range want {
		flat = append(flat, page...)
	}
	if !slices.Equal(got, flat) {
		t.Errorf("all topics with limit 4: got %v, want %v", got, flat)
	}
}

func TestDescribeTopicPartitionsDetails(t *testing.T) {
	t.Parallel()
	ctx, b, cl := dtpSetup(t)
	md := b.cluster.Snapshot()

	resp := dtpRequest(ctx, t, b, cl, []string{"zz-missing", "a", "bad/name"}, 2000, nil)
	if resp.NextCursor != nil {
		t.Errorf("cursor %+v with everything returned", resp.NextCursor)
	}
	if len(resp.Topics) != 3 {
		t.Fatalf("%d topics, want 3", len(resp.Topics))
	}
	byName := map[string]kmsg.DescribeTopicPartitionsResponseTopic{}
	var order []string
	for _, rt := range resp.Topics {
		byName[*rt.Topic] = rt
		order = append(order, *rt.Topic)
	}
	if !slices.Equal(order, []string{"a", "bad/name", "zz-missing"}) {
		t.Errorf("topics in order %v, want sorted by name", order)
	}
	if rt := byName["zz-missing"]; !errors.Is(kerr.ErrorForCode(rt.ErrorCode), kerr.UnknownTopicOrPartition) || len(rt.Partitions) != 0 {
		t.Errorf("unknown topic: %v, %d partitions", kerr.ErrorForCode(rt.ErrorCode), len(rt.Partitions))
	}
	if rt := byName["bad/name"]; !errors.Is(kerr.ErrorForCode(rt.ErrorCode), kerr.InvalidTopicException) {
		t.Errorf("illegal topic name: %v", kerr.ErrorForCode(rt.ErrorCode))
	}
	a := byName["a"]
	// With no authorizer, every topic operation: READ, WRITE, CREATE,
	// DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS and ALTER_CONFIGS.
	const allTopicOps = 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<10 | 1<<11
	if a.ErrorCode != 0 || a.TopicID != md.Topics["a"].ID || a.IsInternal || a.AuthorizedOperations != allTopicOps {
		t.Errorf("topic a: error %v id %x internal %v ops %d", kerr.ErrorForCode(a.ErrorCode), a.TopicID, a.IsInternal, a.AuthorizedOperations)
	}
	for i, p := range a.Partitions {
		st := md.Topics["a"].Partitions[i]
		if p.Partition != int32(i) || p.LeaderID != b.cfg.NodeID || p.LeaderEpoch != st.LeaderEpoch ||
			!slices.Equal(p.Replicas, []int32{b.cfg.NodeID}) || !slices.Equal(p.ISR, []int32{b.cfg.NodeID}) ||
			len(p.OfflineReplicas) != 0 || len(p.EligibleLeaderReplicas) != 0 || len(p.LastKnownELR) != 0 || p.ErrorCode != 0 {
			t.Errorf("partition a-%d: %+v", i, p)
		}
	}

	// A cursor on a topic that is not in the list fails the request.
	resp = dtpRequest(ctx, t, b, cl, []string{"a", "b"}, 10, &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: "c"})
	if len(resp.Topics) != 2 {
		t.Fatalf("cursor outside the list: %d topics, want both with an error", len(resp.Topics))
	}
	for _, rt := range resp.Topics {
		if !errors.Is(kerr.ErrorForCode(rt.ErrorCode), kerr.InvalidRequest) || len(rt.Partitions) != 0 {
			t.Errorf("cursor outside the list: topic %s %v", *rt.Topic, kerr.ErrorForCode(rt.ErrorCode))
		}
	}
	resp = dtpRequest(ctx, t, b, cl, []string{"a"}, 10, &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: "a", Partition: -1})
	if len(resp.Topics) != 1 || !errors.Is(kerr.ErrorForCode(resp.Topics[0].ErrorCode), kerr.InvalidRequest) {
		t.Errorf("negative cursor partition: %+v", resp.Topics)
	}

	// Topics before the cursor's are skipped; a limit below 1 counts as 1.
	resp = dtpRequest(ctx, t, b, cl, []string{"a", "b", "c"}, 0, &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: "b", Partition: 4})
	if len(resp.Topics) != 1 || *resp.Topics[0].Topic != "b" || len(resp.Topics[0].Partitions) != 1 ||
		resp.Topics[0].Partitions[0].Partition != 4 || resp.NextCursor == nil || resp.NextCursor.Topic != "c" {
		t.Errorf("cursor b-4 with limit 0: %+v cursor %+v", resp.Topics, resp.NextCursor)
	}
}
