package broker

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
)

// createTopicsReq is a CreateTopics request at version v for topics of
// the given partition counts, by name.
func createTopicsReq(v int16, validateOnly bool, topics ...any) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(v)
	req.ValidateOnly, req.TimeoutMillis = validateOnly, 10000
	for i := 0; i+1 < len(topics); i += 2 {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topics[i].(string), int32(topics[i+1].(int)), 1
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// createTopicsCodes returns each topic's error code, as "name:code".
func createTopicsCodes(r *kmsg.CreateTopicsResponse) []string {
	var out []string
	for _, t := range r.Topics {
		out = append(out, fmt.Sprintf("%s:%d", t.Topic, t.ErrorCode))
	}
	return out
}

// TestControllerMutationQuota: controller_mutation_rate on a client id
// (KIP-599). Its bucket holds the rate x controller.quota.window.num (11)
// partitions; a strict request (CreateTopics v6+, CreatePartitions v3+,
// DeleteTopics v5+) takes a topic while the bucket is not negative and
// refuses the next with THROTTLING_QUOTA_EXCEEDED and the time to refill;
// an older version is let through and throttled; validate_only counts, as
// in Kafka 4; a client id without the quota is not limited.
func TestControllerMutationQuota(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	// Rates low enough that the buckets do not refill noticeably while
	// the test runs, on a loaded machine too: 0.1/s holds 1.1 tokens.
	for _, e := range []string{"client-id=mut", "client-id=mutd", "client-id=mutp", "client-id=mutk"} {
		if got := w.alterQuotas(1, false, quotaEntry([]string{e}, "controller_mutation_rate=0.1")); got[0] != e+":0" {
			t.Fatalf("alter: %v", got)
		}
	}
	if got := w.alterQuotas(1, false, quotaEntry([]string{"client-id=mutold"}, "controller_mutation_rate=2")); got[0] != "client-id=mutold:0" {
		t.Fatalf("alter: %v", got)
	}
	wireAs := func(clientID string) *wireConn {
		c := dialWire(t, b)
		c.fmt = kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))
		return c
	}

	// Strict, v7, 1.1 tokens: validate_only of one partition takes one;
	// m1 (1) goes with 0.1 left, and m2 (1) meets -0.9: refused, with the
	// 9 s that 0.9 tokens at 0.1/s take to refill. Had validate_only not
	// counted, both would have gone.
	mut := wireAs("mut")
	r := mut.mustRoundTrip(createTopicsReq(7, true, "v1", 1)).(*kmsg.CreateTopicsResponse)
	if got := createTopicsCodes(r); got[0] != "v1:0" || r.ThrottleMillis != 0 {
		t.Fatalf("validate_only of 1 partition with 1.1 tokens: %v, throttle %d ms; want accepted, no throttle", got, r.ThrottleMillis)
	}
	r = mut.mustRoundTrip(createTopicsReq(7, false, "m1", 1, "m2", 1)).(*kmsg.CreateTopicsResponse)
	want := []string{"m1:0", fmt.Sprintf("m2:%d", protocol.ThrottlingQuotaExceeded)}
	if got := createTopicsCodes(r); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("m1 (1) and m2 (1) with 0.1 token left: %v, want %v", got, want)
	}
	t.Logf("strict CreateTopics v7 at 0.1/s: %v, throttle %d ms", createTopicsCodes(r), r.ThrottleMillis)
	if r.ThrottleMillis <= 0 || r.ThrottleMillis > 9000 {
		t.Errorf("throttle %d ms, want (0, 9000]", r.ThrottleMillis)
	}
	if msg := r.Topics[1].ErrorMessage; msg == nil || *msg != "The throttling quota has been exceeded." {
		t.Errorf("refused topic's message: %v", msg)
	}
	md := b.cluster.Snapshot()
	if md.Topics["m1"] == nil || md.Topics["m2"] != nil || md.Topics["v1"] != nil {
		t.Fatalf("topics after: m1 %v, m2 %v, v1 %v; want only m1", md.Topics["m1"] != nil, md.Topics["m2"] != nil, md.Topics["v1"] != nil)
	}

	// Another client id creates 60 partitions at once, unthrottled.
	free := wireAs("free")
	r = free.mustRoundTrip(createTopicsReq(7, false, "f1", 30, "f2", 30)).(*kmsg.CreateTopicsResponse)
	if got := createTopicsCodes(r); fmt.Sprint(got) != "[f1:0 f2:0]" || r.ThrottleMillis != 0 {
		t.Fatalf("client without the quota: %v, throttle %d ms", got, r.ThrottleMillis)
	}

	// Permissive, v5, 2/s (22 tokens): 30 partitions go, and throttle the
	// 4 s that the 8 tokens below zero take.
	old := wireAs("mutold")
	r = old.mustRoundTrip(createTopicsReq(5, false, "o1", 30)).(*kmsg.CreateTopicsResponse)
	t.Logf("permissive CreateTopics v5, 30 partitions at 2/s: %v, throttle %d ms", createTopicsCodes(r), r.ThrottleMillis)
	if got := createTopicsCodes(r); got[0] != "o1:0" || r.ThrottleMillis <= 0 || r.ThrottleMillis > 4000 {
		t.Errorf("v5, 30 partitions at 2/s: %v, throttle %d ms; want accepted, throttle (0, 4000]", got, r.ThrottleMillis)
	}

	// DeleteTopics v6: f2's 30 partitions go with 1.1 tokens; o1 then
	// meets the bucket below zero and stays.
	del := func(topic string) *kmsg.DeleteTopicsResponse {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.SetVersion(6)
		req.TimeoutMillis = 10000
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		return wireAs("mutd").mustRoundTrip(req).(*kmsg.DeleteTopicsResponse)
	}
	if d := del("f2"); d.Topics[0].ErrorCode != 0 || d.ThrottleMillis != 0 {
		t.Errorf("delete f2 with 1.1 tokens: error %d, throttle %d ms; want it deleted, unthrottled", d.Topics[0].ErrorCode, d.ThrottleMillis)
	}
	if d := del("o1"); d.Topics[0].ErrorCode != int16(protocol.ThrottlingQuotaExceeded) || d.ThrottleMillis <= 0 {
		t.Errorf("delete o1 with the bucket below zero: error %d, throttle %d ms; want %d and a throttle",
			d.Topics[0].ErrorCode, d.ThrottleMillis, protocol.ThrottlingQuotaExceeded)
	}
	if md := b.cluster.Snapshot(); md.Topics["o1"] == nil {
		t.Error("o1 deleted by a refused delete")
	}

	// CreatePartitions v3: f1 from 30 to 35 takes 5 of 1.1 tokens (the
	// bucket was not negative); one more then meets -3.9 and is refused.
	grow := func(topic string, count int32) *kmsg.CreatePartitionsResponse {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.SetVersion(3)
		req.TimeoutMillis = 10000
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = topic, count
		req.Topics = append(req.Topics, rt)
		return wireAs("mutp").mustRoundTrip(req).(*kmsg.CreatePartitionsResponse)
	}
	if p := grow("f1", 35); p.Topics[0].ErrorCode != 0 || p.ThrottleMillis != 0 {
		t.Fatalf("f1 30 -> 35 with 1.1 tokens: error %d, throttle %d ms; want it taken, unthrottled", p.Topics[0].ErrorCode, p.ThrottleMillis)
	}
	if p := grow("f1", 36); p.Topics[0].ErrorCode != int16(protocol.ThrottlingQuotaExceeded) || p.ThrottleMillis <= 0 {
		t.Errorf("f1 35 -> 36 with the bucket at -3.9: error %d, throttle %d ms; want %d and a throttle",
			p.Topics[0].ErrorCode, p.ThrottleMillis, protocol.ThrottlingQuotaExceeded)
	}
	if n := len(b.cluster.Snapshot().Topics["f1"].Partitions); n != 35 {
		t.Errorf("f1 has %d partitions, want 35", n)
	}

	// franz-go's admin client sees the error on the refused topic.
	adm := kadm.NewClient(newClient(t, b, kgo.ClientID("mutk")))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := adm.CreateTopics(ctx, 3, 1, nil, "k1")
	if err != nil || res["k1"].Err != nil {
		t.Fatalf("kadm: k1 of 3 partitions with 1.1 tokens: %v %v", err, res["k1"].Err)
	}
	res, err = adm.CreateTopics(ctx, 1, 1, nil, "k2")
	if err != nil || !errors.Is(res["k2"].Err, kerr.ThrottlingQuotaExceeded) {
		t.Fatalf("kadm: k2 with the bucket at -1.9: %v %v, want THROTTLING_QUOTA_EXCEEDED", err, res["k2"].Err)
	}
}
