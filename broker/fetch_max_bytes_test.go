package broker

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol/record"
)

// TestFetchMaxBytesCap asks for max_bytes of 2 GiB over two partitions
// holding 1 MiB each: the response carries at most fetch.max.bytes (64 KiB
// here; Kafka's and Gregor's default is 55 MiB), as Kafka caps it, and
// consecutive fetches still read every batch.
func TestFetchMaxBytesCap(t *testing.T) {
	t.Parallel()
	const capBytes = 64 << 10
	b := startBroker(t, func(c *Config) { c.FetchMaxBytes = capBytes })
	w := dialWire(t, b)
	id := w.createTopic("capped", 2, nil)
	value := strings.Repeat("x", 1000)
	batches := 0
	for p := range int32(2) {
		for i := range 64 {
			recs := make([]record.Record, 16)
			for j := range recs {
				recs[j] = record.Record{OffsetDelta: int32(j), Value: fmt.Appendf(nil, "%d-%d-%d-%s", p, i, j, value)}
			}
			rp := w.producePartition(-1, "capped", p, buildRecords(t, plainHeader(), recs))
			checkCode(t, "produce", rp.ErrorCode, 0)
			batches++
		}
	}

	fetch := func(offsets [2]int64) (*kmsg.FetchResponse, int) {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(12)
		req.ReplicaID, req.ReplicaState.ID = -1, -1
		req.MaxBytes = math.MaxInt32
		req.SessionEpoch = -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "capped", id
		for p := range int32(2) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, offsets[p], math.MaxInt32
			rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = -1, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp := w.mustRoundTrip(req).(*kmsg.FetchResponse)
		n := 0
		for _, p := range resp.Topics[0].Partitions {
			n += len(p.RecordBatches)
		}
		return resp, n
	}

	var offsets [2]int64
	seen := 0
	for round := 0; seen < batches; round++ {
		if round > 100 {
			t.Fatalf("read %d of %d batches in 100 fetches", seen, batches)
		}
		resp, n := fetch(offsets)
		// The first batch goes whole even past the cap (KIP-74); one
		// batch here is about 16 KiB.
		if n > capBytes+20<<10 {
			t.Fatalf("a fetch asking for 2 GiB returned %d bytes, want at most fetch.max.bytes %d (plus one batch)", n, capBytes)
		}
		for _, p := range resp.Topics[0].Partitions {
			checkCode(t, "fetch", p.ErrorCode, 0)
			for buf := p.RecordBatches; len(buf) > 0; {
				bt, rest, err := record.Parse(buf)
				if err != nil {
					break // a partial last batch
				}
				buf = rest
				offsets[p.Partition] = bt.LastOffset() + 1
				seen++
			}
		}
	}
}
