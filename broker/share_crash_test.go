package broker

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareGroupCrash: a share group's acknowledgements survive kill -9.
// A member accepts records in rounds, each answered (so durable at the
// share coordinator), holds more without acknowledging them, and sends
// one more acceptance the broker may or may not have made durable when it
// is killed. After the restart the group reads on: no record whose
// acceptance was answered is delivered again, and every other record is
// (none lost); the share state came back from __share_group_state's log.
func TestShareGroupCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 of a child broker process: not with -short")
	}
	t.Parallel()
	spec, start := crashHarness(t)
	child := start()
	w := dialWireAddr(t, spec.addr())
	topicID := w.createTopic("queue", 1, nil)
	const n = 200
	for i := range n / 20 {
		rp := w.producePartition(-1, "queue", 0, buildBatch(t, plainHeader(), fmt.Sprintf("r%d", i), 20))
		if rp.ErrorCode != 0 {
			t.Fatalf("produce: error %d", rp.ErrorCode)
		}
	}
	cfg := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "g"
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	res.Configs = append(res.Configs, c)
	cfg.Resources = append(cfg.Resources, res)
	if r := w.mustRoundTrip(cfg).(*kmsg.IncrementalAlterConfigsResponse); r.Resources[0].ErrorCode != 0 {
		t.Fatalf("group config: error %d", r.Resources[0].ErrorCode)
	}

	fetch := func(w *wireConn, epoch int32, maxRecords int32) []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord {
		t.Helper()
		req := kmsg.NewPtrShareFetchRequest()
		req.SetVersion(1)
		req.GroupID, req.MemberID = kmsg.StringPtr("g"), kmsg.StringPtr("m")
		req.ShareSessionEpoch, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords = epoch, 500, 1, 1<<20, maxRecords
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = topicID
		rt.Partitions = append(rt.Partitions, kmsg.NewShareFetchRequestTopicPartition())
		req.Topics = append(req.Topics, rt)
		r := w.mustRoundTrip(req).(*kmsg.ShareFetchResponse)
		if r.ErrorCode != 0 {
			t.Fatalf("share fetch: error %d", r.ErrorCode)
		}
		if len(r.Topics) == 0 {
			return nil
		}
		return r.Topics[0].Partitions[0].AcquiredRecords
	}
	ackReq := func(epoch int32, first, last int64) *kmsg.ShareAcknowledgeRequest {
		req := kmsg.NewPtrShareAcknowledgeRequest()
		req.SetVersion(1)
		req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr("g"), kmsg.StringPtr("m"), epoch
		rt := kmsg.NewShareAcknowledgeRequestTopic()
		rt.TopicID = topicID
		rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
		ab := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes = first, last, []int8{1}
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, ab)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}
	accept := func(epoch int32, first, last int64) {
		t.Helper()
		r := w.mustRoundTrip(ackReq(epoch, first, last)).(*kmsg.ShareAcknowledgeResponse)
		if r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("accept %d-%d: %+v", first, last, r)
		}
	}
	// Epochs: 0 fetch, 1 accept, 2 fetch, 3 accept, 4 accept (in flight).
	if a := fetch(w, 0, 60); len(a) != 1 || a[0].FirstOffset != 0 || a[0].LastOffset != 59 {
		t.Fatalf("first fetch acquired %+v", a)
	}
	accept(1, 0, 59)
	if a := fetch(w, 2, 60); len(a) != 1 || a[0].FirstOffset != 60 || a[0].LastOffset != 119 {
		t.Fatalf("second fetch acquired %+v", a)
	}
	accept(3, 60, 89)
	// 90-119 are held; 90-99 accepted as the broker dies.
	if err := w.writeRaw(w.fmt.AppendRequest(nil, ackReq(4, 90, 99), 99)); err != nil {
		t.Fatal(err)
	}
	child.kill()

	start()
	w = dialWireAddr(t, spec.addr())
	got := map[int64]int{}
	epoch := int32(0)
	for {
		a := fetch(w, epoch, 500)
		epoch++
		if len(a) == 0 {
			break
		}
		for _, r := range a {
			for off := r.FirstOffset; off <= r.LastOffset; off++ {
				got[off]++
			}
			accept(epoch, r.FirstOffset, r.LastOffset)
			epoch++
		}
	}
	for off := range int64(90) {
		if got[off] > 0 {
			t.Errorf("offset %d, whose acceptance was answered before the kill, delivered again", off)
		}
	}
	for off := int64(100); off < n; off++ {
		if got[off] != 1 {
			t.Errorf("offset %d delivered %d times after the restart, want once", off, got[off])
		}
	}
	inFlight := 0
	for off := int64(90); off < 100; off++ {
		inFlight += got[off]
	}
	t.Logf("after kill -9: %d records delivered; of the 10 accepted in flight, %d delivered again", len(got), inFlight)
}
