package broker

import (
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol/record"
)

// TestShareFetchConsumerByteRate: ShareFetch record bytes count against
// consumer_byte_rate, as in Kafka 4. max_bytes is capped to what the
// quota's bucket holds; a fetch that goes over it carries no
// records and the throttle time, and its records are released at once
// (another member acquires them, delivered a second time); a client id
// without the quota is not throttled.
func TestShareFetchConsumerByteRate(t *testing.T) {
	t.Parallel()
	// Windows of 5 s: the throttled second fetch below stays throttled
	// for seconds, however slow the machine is between the two.
	b := startBroker(t, func(c *Config) { c.QuotaWindowSize = 5 * time.Second })
	w := dialWire(t, b)
	id := w.createTopic("sq", 1, nil)
	const quota = 40 << 10 // a new bucket holds one window: 200 KiB
	if got := w.alterQuotas(1, false, quotaEntry([]string{"client-id=shq"}, fmt.Sprintf("consumer_byte_rate=%d", quota))); got[0] != "client-id=shq:0" {
		t.Fatalf("alter: %v", got)
	}
	fetch := func(w *wireConn, member string, epoch int32) *kmsg.ShareFetchResponse {
		t.Helper()
		req := kmsg.NewPtrShareFetchRequest()
		req.SetVersion(1)
		req.GroupID, req.MemberID = kmsg.StringPtr("sg"), kmsg.StringPtr(member)
		req.ShareSessionEpoch, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords = epoch, 10, 1, 50<<20, 100
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = id
		rt.Partitions = append(rt.Partitions, kmsg.NewShareFetchRequestTopicPartition())
		req.Topics = append(req.Topics, rt)
		return w.mustRoundTrip(req).(*kmsg.ShareFetchResponse)
	}
	acquired := func(r *kmsg.ShareFetchResponse) (n int, runs []string) {
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				n += len(p.Records)
				for _, a := range p.AcquiredRecords {
					runs = append(runs, fmt.Sprintf("%d-%d/%d", a.FirstOffset, a.LastOffset, a.DeliveryCount))
				}
			}
		}
		return n, runs
	}
	slow := dialWire(t, b)
	slow.fmt = kmsg.NewRequestFormatter(kmsg.FormatterClientID("shq"))
	// The first fetch starts the share partition at the log end.
	if r := fetch(slow, "m1", 0); r.ErrorCode != 0 {
		t.Fatalf("opening fetch: error %d", r.ErrorCode)
	}
	for i := range 4 {
		value := make([]byte, 200000)
		_, _ = rand.Read(value)
		if rp := w.producePartition(-1, "sq", 0, buildRecords(t, plainHeader(), []record.Record{{Value: value}})); rp.ErrorCode != 0 || rp.BaseOffset != int64(i) {
			t.Fatalf("produce %d: error %d, base offset %d", i, rp.ErrorCode, rp.BaseOffset)
		}
	}
	// Capped at 200 KiB: the first batch, within the quota.
	r := fetch(slow, "m1", 1)
	if n, runs := acquired(r); r.ThrottleMillis != 0 || fmt.Sprint(runs) != "[0-0/1]" || n < 200000 {
		t.Fatalf("first fetch: throttle %d ms, %d bytes, acquired %v; want offset 0 alone, unthrottled", r.ThrottleMillis, n, runs)
	}
	// The second: the bucket holds about 5 kB, the next batch is 200 kB
	// (4.8 s of refill): throttled, no records.
	r = fetch(slow, "m1", 2)
	if n, runs := acquired(r); r.ThrottleMillis <= 0 || n != 0 || len(runs) != 0 || r.ErrorCode != 0 {
		t.Fatalf("second fetch: throttle %d ms, %d bytes, acquired %v, error %d; want a throttle and nothing", r.ThrottleMillis, n, runs, r.ErrorCode)
	}
	// What it had acquired is offered again at once: another member,
	// without the quota, gets offset 1 on its second delivery.
	r = fetch(w, "m2", 0)
	n, runs := acquired(r)
	if r.ThrottleMillis != 0 || len(runs) == 0 || runs[0] != "1-1/2" {
		t.Fatalf("other member: throttle %d ms, %d bytes, acquired %v; want offset 1 (delivery 2) first, unthrottled", r.ThrottleMillis, n, runs)
	}
}
