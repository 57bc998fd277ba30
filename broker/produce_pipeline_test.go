package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

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
