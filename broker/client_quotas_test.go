package broker

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/protocol/record"
)

// quotaEntry is an AlterClientQuotas entry: entity parts as "type=name"
// ("type" alone for the default), ops as "key=value" or "-key" (remove).
func quotaEntry(entity []string, ops ...string) kmsg.AlterClientQuotasRequestEntry {
	e := kmsg.NewAlterClientQuotasRequestEntry()
	for _, p := range entity {
		x := kmsg.NewAlterClientQuotasRequestEntryEntity()
		typ, name, named := strings.Cut(p, "=")
		x.Type = typ
		if named {
			x.Name = kmsg.StringPtr(name)
		}
		e.Entity = append(e.Entity, x)
	}
	for _, o := range ops {
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		if k, ok := strings.CutPrefix(o, "-"); ok {
			op.Key, op.Remove = k, true
		} else {
			k, v, _ := strings.Cut(o, "=")
			op.Key = k
			fmt.Sscan(v, &op.Value)
		}
		e.Ops = append(e.Ops, op)
	}
	return e
}

// alterQuotas sends entries at version v and returns "entity:code" per
// response entry.
func (w *wireConn) alterQuotas(v int16, validateOnly bool, entries ...kmsg.AlterClientQuotasRequestEntry) []string {
	w.t.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.SetVersion(v)
	req.ValidateOnly, req.Entries = validateOnly, entries
	var out []string
	for _, e := range w.mustRoundTrip(req).(*kmsg.AlterClientQuotasResponse).Entries {
		var parts []string
		for _, x := range e.Entity {
			if x.Name == nil {
				parts = append(parts, x.Type)
			} else {
				parts = append(parts, x.Type+"="+*x.Name)
			}
		}
		if e.ErrorCode != 0 && (e.ErrorMessage == nil || *e.ErrorMessage == "") {
			w.t.Errorf("entry %v: error %d without a message", parts, e.ErrorCode)
		}
		out = append(out, fmt.Sprintf("%s:%d", strings.Join(parts, ","), e.ErrorCode))
	}
	return out
}

// describeQuotas sends a filter ("type=name" exact, "type" default,
// "type=*" any) and returns each entry as "entity{key=value,...}".
func (w *wireConn) describeQuotas(v int16, strict bool, filter ...string) (protocol.ErrorCode, []string) {
	w.t.Helper()
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.SetVersion(v)
	req.Strict = strict
	for _, f := range filter {
		c := kmsg.NewDescribeClientQuotasRequestComponent()
		typ, name, named := strings.Cut(f, "=")
		c.EntityType = typ
		switch {
		case !named:
			c.MatchType = quotaMatchDefault
		case name == "*":
			c.MatchType = quotaMatchAny
		default:
			c.MatchType, c.Match = quotaMatchExact, kmsg.StringPtr(name)
		}
		req.Components = append(req.Components, c)
	}
	resp := w.mustRoundTrip(req).(*kmsg.DescribeClientQuotasResponse)
	var out []string
	for _, e := range resp.Entries {
		var parts, vals []string
		for _, x := range e.Entity {
			if x.Name == nil {
				parts = append(parts, x.Type)
			} else {
				parts = append(parts, x.Type+"="+*x.Name)
			}
		}
		for _, v := range e.Values {
			vals = append(vals, fmt.Sprintf("%s=%v", v.Key, v.Value))
		}
		out = append(out, strings.Join(parts, ",")+"{"+strings.Join(vals, ",")+"}")
	}
	return protocol.ErrorCode(resp.ErrorCode), out
}

// TestClientQuotaAlterDescribe: quotas are set, described by every kind
// of filter, removed; validate_only writes nothing; Kafka's checks refuse
// bad entities and values, each for its entity alone.
func TestClientQuotaAlterDescribe(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	for _, v := range []int16{0, 1} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			w.t = t
			got := w.alterQuotas(v, true, quotaEntry([]string{"client-id=c1"}, "producer_byte_rate=1048576"))
			if !slices.Equal(got, []string{"client-id=c1:0"}) {
				t.Fatalf("validate_only: %v", got)
			}
			if _, d := w.describeQuotas(v, false); len(d) != 0 {
				t.Fatalf("validate_only stored %v", d)
			}
			got = w.alterQuotas(v, false,
				quotaEntry([]string{"client-id=c1"}, "producer_byte_rate=1048576", "request_percentage=25.5"),
				quotaEntry([]string{"client-id"}, "consumer_byte_rate=2048"),
				quotaEntry([]string{"user=alice", "client-id"}, "controller_mutation_rate=3.5"),
				quotaEntry([]string{"user"}, "producer_byte_rate=100"),
				quotaEntry([]string{"ip=127.0.0.1"}, "connection_creation_rate=10"),
				quotaEntry([]string{"ip"}, "connection_creation_rate=20"),
				// Refused, each alone:
				quotaEntry([]string{"client-id=bad"}, "producer_byte_rate=1.5"),
				quotaEntry([]string{"client-id=c2"}, "nonsense=1"),
				quotaEntry([]string{"client-id=c3"}, "connection_creation_rate=1"),
				quotaEntry([]string{"ip=127.0.0.2"}, "producer_byte_rate=1"),
				quotaEntry([]string{"ip=127.0.0.3", "user=u"}, "connection_creation_rate=1"),
				quotaEntry([]string{"ip=no such host.invalid"}, "connection_creation_rate=1"),
				quotaEntry([]string{"user=zero"}, "producer_byte_rate=0"),
				quotaEntry([]string{"user=neg"}, "request_percentage=-1"),
				quotaEntry([]string{"user="}, "producer_byte_rate=1"),
				quotaEntry([]string{"team=x"}, "producer_byte_rate=1"),
				quotaEntry(nil, "producer_byte_rate=1"),
				quotaEntry([]string{"user=dupkey"}, "producer_byte_rate=1", "producer_byte_rate=2"),
				quotaEntry([]string{"user=twice"}, "producer_byte_rate=1"),
				quotaEntry([]string{"user=twice"}, "consumer_byte_rate=1"),
				quotaEntry([]string{"ip=127.0.0.4"}, "connection_creation_rate=3000000000"),
			)
			want := []string{"client-id=c1:0", "client-id:0", "client-id,user=alice:0", "user:0", "ip=127.0.0.1:0", "ip:0",
				"client-id=bad:42", "client-id=c2:42", "client-id=c3:42", "ip=127.0.0.2:42", "ip=127.0.0.3,user=u:42",
				"ip=no such host.invalid:42", "user=zero:42", "user=neg:42", "user=:42", "team=x:42", ":42", "user=dupkey:42",
				"user=twice:42", "ip=127.0.0.4:42"}
			if !slices.Equal(got, want) {
				t.Fatalf("alter results\n got %v\nwant %v", got, want)
			}
			all := []string{
				"client-id{consumer_byte_rate=2048}",
				"client-id,user=alice{controller_mutation_rate=3.5}",
				"client-id=c1{producer_byte_rate=1.048576e+06,request_percentage=25.5}",
				"ip{connection_creation_rate=20}",
				"ip=127.0.0.1{connection_creation_rate=10}",
				"user{producer_byte_rate=100}",
			}
			for _, c := range []struct {
				strict bool
				filter []string
				want   []string
			}{
				{false, nil, all},
				{true, nil, nil},
				{false, []string{"client-id=*"}, all[:3]},
				{true, []string{"client-id=*"}, []string{all[0], all[2]}},
				{false, []string{"client-id"}, all[:2]},
				{true, []string{"client-id"}, all[:1]},
				{false, []string{"client-id=c1"}, all[2:3]},
				{false, []string{"user=alice"}, all[1:2]},
				{false, []string{"user=alice", "client-id"}, all[1:2]},
				{false, []string{"user"}, all[5:]},
				{false, []string{"ip=*"}, all[3:5]},
				{false, []string{"ip"}, all[3:4]},
				{false, []string{"user=nobody"}, nil},
			} {
				code, got := w.describeQuotas(v, c.strict, c.filter...)
				if code != protocol.None || !slices.Equal(got, c.want) {
					t.Errorf("describe %v strict=%v: code %d\n got %v\nwant %v", c.filter, c.strict, code, got, c.want)
				}
			}
			// Removal: keys go, and the entity with its last one; removing
			// a key that is not set is no error.
			got = w.alterQuotas(v, false,
				quotaEntry([]string{"client-id=c1"}, "-request_percentage", "-nonsense"),
				quotaEntry([]string{"client-id"}, "-consumer_byte_rate"),
				quotaEntry([]string{"user=alice", "client-id"}, "-controller_mutation_rate"),
				quotaEntry([]string{"user"}, "-producer_byte_rate"),
				quotaEntry([]string{"ip=127.0.0.1"}, "-connection_creation_rate"),
				quotaEntry([]string{"ip"}, "-connection_creation_rate"),
				quotaEntry([]string{"client-id=never"}, "-producer_byte_rate"),
			)
			if len(got) != 7 || slices.ContainsFunc(got, func(s string) bool { return !strings.HasSuffix(s, ":0") }) {
				t.Fatalf("removals: %v", got)
			}
			if _, d := w.describeQuotas(v, false); !slices.Equal(d, []string{"client-id=c1{producer_byte_rate=1.048576e+06}"}) {
				t.Fatalf("after removals: %v", d)
			}
			w.alterQuotas(v, false, quotaEntry([]string{"client-id=c1"}, "-producer_byte_rate"))
		})
	}
}

// TestClientQuotaProduceThrottle: a client id over producer_byte_rate
// gets the throttle_time_ms its bucket takes to refill and its connection
// muted; a franz-go producer with the quota produces no more than its
// bucket's first window and the quota's rate over a few seconds while
// another client id produces unthrottled.
func TestClientQuotaProduceThrottle(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	w.createTopic("q", 1, nil)
	const quota = 64 << 10
	if got := w.alterQuotas(1, false, quotaEntry([]string{"client-id=slow"}, fmt.Sprintf("producer_byte_rate=%d", quota))); got[0] != "client-id=slow:0" {
		t.Fatalf("alter: %v", got)
	}

	// Wire: 200 kB in one request is over the 64 KiB a new client's
	// bucket holds: the rest, about 135 kB, takes about 2 s to refill.
	slow := dialWire(t, b)
	slow.fmt = kmsg.NewRequestFormatter(kmsg.FormatterClientID("slow"))
	recs := []byte(strings.Repeat("x", 100000))
	batch := buildRecords(t, plainHeader(), []record.Record{{Value: recs}, {OffsetDelta: 1, Value: recs}})
	resp := slow.mustRoundTrip(produceReq(11, -1, "q", 0, batch)).(*kmsg.ProduceResponse)
	if resp.ThrottleMillis < 1900 || resp.ThrottleMillis > 2200 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("200 kB over a 64 KiB/s quota: throttle %d ms, want about 2 s; error %d", resp.ThrottleMillis, resp.Topics[0].Partitions[0].ErrorCode)
	}
	// The connection is muted: a metadata request waits out the throttle.
	start := time.Now()
	slow.mustRoundTrip(kmsg.NewPtrMetadataRequest())
	if waited := time.Since(start); waited < time.Duration(resp.ThrottleMillis)*time.Millisecond/2 {
		t.Errorf("muted connection answered after %v, throttle was %d ms", waited, resp.ThrottleMillis)
	}
	// Another client id is not throttled.
	fast := dialWire(t, b)
	fast.fmt = kmsg.NewRequestFormatter(kmsg.FormatterClientID("fast"))
	if r := fast.mustRoundTrip(produceReq(11, -1, "q", 0, batch)).(*kmsg.ProduceResponse); r.ThrottleMillis != 0 {
		t.Errorf("client without quota throttled %d ms", r.ThrottleMillis)
	}

	// franz-go producers side by side for 3 s, one with the quota: it
	// gets the first window its bucket holds, 3 s of quota and one
	// request (8 KiB) beyond, about 4.1 s of quota; the bound leaves a
	// window for a slow run's last acknowledgements (the windowed rate
	// Kafka measures with would allow 10 s of quota at once).
	if got := w.alterQuotas(1, false, quotaEntry([]string{"client-id=slow-kgo"}, fmt.Sprintf("producer_byte_rate=%d", quota))); got[0] != "client-id=slow-kgo:0" {
		t.Fatalf("alter: %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	produced := func(clientID string) int64 {
		cl := newClient(t, b, kgo.ClientID(clientID), kgo.DefaultProduceTopic("q"), kgo.ProducerLinger(0))
		var n int64
		value := make([]byte, 8<<10) // random: compression must not shrink it
		_, _ = rand.Read(value)
		for ctx.Err() == nil {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err == nil {
				n += int64(len(value))
			}
		}
		return n
	}
	var fastBytes atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		fastBytes.Store(produced("fast-kgo"))
	}()
	slowBytes := produced("slow-kgo")
	<-done
	t.Logf("in 3 s: quota'd client %d bytes (quota %d B/s), unthrottled client %d bytes", slowBytes, quota, fastBytes.Load())
	if slowBytes > 5*quota {
		t.Errorf("client at %d B/s quota produced %d bytes in 3 s", quota, slowBytes)
	}
}

// TestClientQuotaFetchThrottle: a consumer's max_bytes is capped to what
// its consumer_byte_rate bucket holds; a fetch over it gets an empty
// response carrying the throttle time; another client id reading the
// same partition is not throttled.
func TestClientQuotaFetchThrottle(t *testing.T) {
	t.Parallel()
	// Windows of 5 s: a new bucket holds 5 s of quota, and the throttled
	// second fetch below stays throttled for seconds, however slow the
	// machine is between the two.
	b := startBroker(t, func(c *Config) { c.QuotaWindowSize = 5 * time.Second })
	w := dialWire(t, b)
	id := w.createTopic("fq", 1, nil)
	for i := range 4 {
		value := make([]byte, 200000)
		_, _ = rand.Read(value)
		rp := w.producePartition(-1, "fq", 0, buildRecords(t, plainHeader(), []record.Record{{Value: value}}))
		if rp.ErrorCode != 0 || rp.BaseOffset != int64(i) {
			t.Fatalf("produce %d: error %d, base offset %d", i, rp.ErrorCode, rp.BaseOffset)
		}
	}
	const quota = 40 << 10 // a new bucket holds one window: 200 KiB
	if got := w.alterQuotas(1, false, quotaEntry([]string{"client-id=slowc"}, fmt.Sprintf("consumer_byte_rate=%d", quota))); got[0] != "client-id=slowc:0" {
		t.Fatalf("alter: %v", got)
	}
	fetch := func(w *wireConn, offset int64) *kmsg.FetchResponse {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(13)
		req.ReplicaID, req.ReplicaState.ID = -1, -1
		req.MaxBytes, req.SessionEpoch = 50<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, offset, 50<<20
		rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = -1, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return w.mustRoundTrip(req).(*kmsg.FetchResponse)
	}
	slow := dialWire(t, b)
	slow.fmt = kmsg.NewRequestFormatter(kmsg.FormatterClientID("slowc"))
	// First fetch: capped at 200 KiB, within the quota, and ended on a
	// batch boundary: the first batch alone, not part of the next.
	r := fetch(slow, 0)
	if r.ThrottleMillis != 0 || len(r.Topics) != 1 {
		t.Fatalf("first fetch: throttle %d, %d topics", r.ThrottleMillis, len(r.Topics))
	}
	if n := len(r.Topics[0].Partitions[0].RecordBatches); n < 200000 || n > 201000 {
		t.Fatalf("first fetch carried %d bytes, want the first batch alone (about 200 kB)", n)
	}
	// Second: a window's cap again, but the bucket holds about 5 kB and
	// the next batch is 200 kB, 4.8 s of refill.
	r = fetch(slow, 1)
	if r.ThrottleMillis <= 0 || len(r.Topics) != 0 {
		t.Fatalf("second fetch: throttle %d ms, %d topics; want a throttle and no partitions", r.ThrottleMillis, len(r.Topics))
	}
	// (That its bytes are taken back is TestManagerRecord's, in
	// broker/quota: a third fetch here would wait out the mute.)
	// Another client id reads everything at once.
	if r := fetch(w, 0); r.ThrottleMillis != 0 || len(r.Topics[0].Partitions[0].RecordBatches) < 800000 {
		t.Errorf("unquota'd fetch: throttle %d ms, %d bytes", r.ThrottleMillis, len(r.Topics[0].Partitions[0].RecordBatches))
	}

	// On a PLAINTEXT listener every client is User:ANONYMOUS, and a quota
	// on that user applies to all of them, over their client-id quotas.
	if got := w.alterQuotas(1, false, quotaEntry([]string{"user=ANONYMOUS"}, "producer_byte_rate=10")); got[0] != "user=ANONYMOUS:0" {
		t.Fatalf("alter: %v", got)
	}
	anon := dialWire(t, b)
	anon.fmt = kmsg.NewRequestFormatter(kmsg.FormatterClientID("anyone"))
	if r := anon.mustRoundTrip(produceReq(11, -1, "fq", 0, buildBatch(t, plainHeader(), "a", 10))).(*kmsg.ProduceResponse); r.ThrottleMillis <= 0 {
		t.Errorf("produce by User:ANONYMOUS over its 10 B/s quota: throttle %d ms", r.ThrottleMillis)
	}
}

// TestClientQuotaConnectionRate: connections from an address beyond its
// connection_creation_rate are closed unserved (after at most a window);
// those within it are served.
func TestClientQuotaConnectionRate(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	// 1 per second, counted over at least 10 windows: 10 at once fit.
	if got := w.alterQuotas(1, false, quotaEntry([]string{"ip=127.0.0.1"}, "connection_creation_rate=1")); got[0] != "ip=127.0.0.1:0" {
		t.Fatalf("alter: %v", got)
	}
	served, refused := 0, 0
	for range 14 {
		c := dialWire(t, b)
		if _, err := c.roundTripWithin(kmsg.NewPtrApiVersionsRequest(), 5*time.Second); err != nil {
			refused++
		} else {
			served++
		}
	}
	// 10 and 4, unless the machine takes seconds to dial.
	if served < 10 || refused == 0 {
		t.Errorf("14 connections at 1/s: %d served, %d closed; want 10 and 4", served, refused)
	}
	// The connection made before the quota still serves.
	if _, err := w.roundTripWithin(kmsg.NewPtrApiVersionsRequest(), 5*time.Second); err != nil {
		t.Errorf("earlier connection: %v", err)
	}
}

// TestClientQuotaWindowConfig: quota.window.num and
// quota.window.size.seconds are validated as Kafka's (at least 1, whole
// seconds).
func TestClientQuotaWindowConfig(t *testing.T) {
	base := DefaultConfig()
	if base.QuotaWindowNum != 11 || base.QuotaWindowSize != time.Second {
		t.Fatalf("defaults %d x %s, want 11 x 1s", base.QuotaWindowNum, base.QuotaWindowSize)
	}
	for _, c := range []struct {
		num  int32
		size time.Duration
		ok   bool
	}{{1, time.Second, true}, {30, 5 * time.Second, true}, {0, time.Second, false},
		{11, 0, false}, {11, 1500 * time.Millisecond, false}} {
		cfg := base
		cfg.QuotaWindowNum, cfg.QuotaWindowSize = c.num, c.size
		if err := cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("window num %d size %s: Validate %v, want ok=%v", c.num, c.size, err, c.ok)
		}
	}
}

// TestClientQuotaRequestPercentage: handler time counts against
// request_percentage, and its throttle is at most one window.
func TestClientQuotaRequestPercentage(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	if got := w.alterQuotas(1, false, quotaEntry([]string{"client-id=busy"}, "request_percentage=0.0000001")); got[0] != "client-id=busy:0" {
		t.Fatalf("alter: %v", got)
	}
	busy := dialWire(t, b)
	busy.fmt = kmsg.NewRequestFormatter(kmsg.FormatterClientID("busy"))
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(12) // throttle_time_ms from v3
	r := busy.mustRoundTrip(meta).(*kmsg.MetadataResponse)
	if r.ThrottleMillis <= 0 || r.ThrottleMillis > 1000 {
		t.Errorf("metadata over a tiny request_percentage: throttle %d ms, want 1..1000", r.ThrottleMillis)
	}
	if r := w.mustRoundTrip(meta).(*kmsg.MetadataResponse); r.ThrottleMillis != 0 {
		t.Errorf("another client id throttled %d ms", r.ThrottleMillis)
	}
}
