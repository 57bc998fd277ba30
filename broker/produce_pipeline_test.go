package broker

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/protocol/record"
)

// TestProducePipelined: produces waiting for durability do not hold the
// connection, so a client may send several requests at once; every
// response comes back in request order and whole, its topic names
// included (they alias a request frame the connection reuses meanwhile).
func TestProducePipelined(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	adm := kadm.NewClient(newClient(t, b))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topics := []string{"pipe-a", "pipe-bb-with-a-longer-name"}
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, topics...); err != nil {
		t.Fatal(err)
	}

	w := dialWire(t, b)
	produce := func(topic, prefix string) kmsg.Request {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(9)
		req.Acks = -1
		req.TimeoutMillis = 30000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = buildBatch(t, record.BatchHeader{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, prefix, 3)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}
	// Rounds of requests written at once: two produces to each topic and a
	// Metadata between them, which must wait its turn.
	var next [2]int64
	for round := range 20 {
		reqs := []kmsg.Request{produce(topics[0], "a"), produce(topics[1], "b"), metadataV12(), produce(topics[0], "c"), produce(topics[1], "d")}
		var out []byte
		first := w.corr + 1
		for _, req := range reqs {
			w.corr++
			// (AppendRequest sizes the whole buffer it appends to.)
			out = append(out, w.fmt.AppendRequest(nil, req, w.corr)...)
		}
		if err := w.writeRaw(out); err != nil {
			t.Fatal(err)
		}
		for i, req := range reqs {
			frame, err := w.readFrame(30 * time.Second)
			if err != nil {
				t.Fatalf("round %d response %d: %v", round, i, err)
			}
			body, corr, err := splitResponseHeader(frame, req.IsFlexible())
			if err != nil {
				t.Fatal(err)
			}
			if corr != first+int32(i) {
				t.Fatalf("round %d: response %d has correlation id %d, want %d", round, i, corr, first+int32(i))
			}
			resp := req.ResponseKind()
			resp.SetVersion(req.GetVersion())
			if err := resp.ReadFrom(body); err != nil {
				t.Fatalf("round %d response %d: %v", round, i, err)
			}
			pr, ok := resp.(*kmsg.ProduceResponse)
			if !ok {
				continue
			}
			want := req.(*kmsg.ProduceRequest).Topics[0].Topic
			if len(pr.Topics) != 1 || pr.Topics[0].Topic != want || len(pr.Topics[0].Partitions) != 1 {
				t.Fatalf("round %d: response %d is for %+v, want %s", round, i, pr.Topics, want)
			}
			p := pr.Topics[0].Partitions[0]
			ti := 0
			if want == topics[1] {
				ti = 1
			}
			if p.ErrorCode != 0 || p.BaseOffset != next[ti] {
				t.Fatalf("round %d: %s answered error %d, base offset %d, want 0 and %d", round, want, p.ErrorCode, p.BaseOffset, next[ti])
			}
			next[ti] += 3
		}
	}
}

// TestProduceWideRequest: a produce large enough to be appended on several
// goroutines answers each partition with its own offsets and errors, and a
// request naming one partition twice appends the two batches in request
// order.
func TestProduceWideRequest(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	adm := kadm.NewClient(newClient(t, b))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const parts, perBatch, rounds = 8, 16, 10
	if _, err := adm.CreateTopics(ctx, parts, 1, nil, "wide"); err != nil {
		t.Fatal(err)
	}
	w := dialWire(t, b)
	value := strings.Repeat("v", 1000) // 8 partitions x 16 records: above parallelProduceMin
	produce := func(partitions ...int32) *kmsg.ProduceResponse {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(9)
		req.Acks = -1
		req.TimeoutMillis = 30000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "wide"
		for _, p := range partitions {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = p
			rp.Records = buildBatch(t, plainHeader(), fmt.Sprintf("%d-%s", p, value), perBatch)
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp := w.mustRoundTrip(req).(*kmsg.ProduceResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != len(partitions) {
			t.Fatalf("response %+v for partitions %v", resp.Topics, partitions)
		}
		return resp
	}

	// Every partition once, and partition 99, which does not exist, among them.
	for round := range rounds {
		resp := produce(0, 1, 2, 3, 99, 4, 5, 6, 7)
		for _, p := range resp.Topics[0].Partitions {
			switch {
			case p.Partition == 99:
				if p.ErrorCode != int16(protocol.UnknownTopicOrPartition) || p.BaseOffset != -1 {
					t.Fatalf("round %d: partition 99 answered error %d, base offset %d", round, p.ErrorCode, p.BaseOffset)
				}
			case p.ErrorCode != 0 || p.BaseOffset != int64(round*perBatch):
				t.Fatalf("round %d: partition %d answered error %d, base offset %d, want 0 and %d",
					round, p.Partition, p.ErrorCode, p.BaseOffset, round*perBatch)
			}
		}
	}
	// Partition 0 twice (and others): its two batches keep their order.
	next := int64(rounds * perBatch)
	for round := range rounds {
		ps := produce(0, 1, 2, 3, 4, 5, 6, 7, 0).Topics[0].Partitions
		first, second := ps[0], ps[len(ps)-1]
		if first.ErrorCode != 0 || second.ErrorCode != 0 || first.BaseOffset != next || second.BaseOffset != next+perBatch {
			t.Fatalf("round %d: partition 0's batches answered %d@%d and %d@%d, want 0@%d and 0@%d", round,
				first.ErrorCode, first.BaseOffset, second.ErrorCode, second.BaseOffset, next, next+perBatch)
		}
		next += 2 * perBatch
	}

	// What was stored reads back, each partition its own records.
	ends, err := adm.ListEndOffsets(ctx, "wide")
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(parts) {
		want := int64(2 * rounds * perBatch)
		if p == 0 {
			want += rounds * perBatch
		}
		if o, _ := ends.Lookup("wide", p); o.Offset != want {
			t.Fatalf("partition %d ends at %d, want %d", p, o.Offset, want)
		}
	}
	cl := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"wide": {3: kgo.NewOffset().AtStart()}}))
	got := 0
	for got < 2*rounds*perBatch {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		for _, r := range fs.Records() {
			if want := fmt.Sprintf("3-%s-%d", value, got%perBatch); r.Offset != int64(got) || string(r.Value) != want {
				t.Fatalf("partition 3 offset %d: record %d has %.20q..., want %.20q...", got, r.Offset, r.Value, want)
			}
			got++
		}
	}
}
