package broker

// Hostile input against a running broker: each case on a fresh connection,
// expecting Kafka's error code or a closed connection, and after each the
// broker still answers a new client. Cases already in errors_test.go (bad
// CRCs, magic, record count mismatch, acks, unknown partitions, invalid
// topic names in CreateTopics and Metadata) and apiversions_test.go
// (negative, oversized and short frames, unknown keys) are not repeated.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/protocol/record"
)

// requestHeader builds a request header as clients write it for key and
// version, client id "hostile".
func requestHeader(key, version int16, corr int32) []byte {
	h := binary.BigEndian.AppendUint16(nil, uint16(key))
	h = binary.BigEndian.AppendUint16(h, uint16(version))
	h = binary.BigEndian.AppendUint32(h, uint32(corr))
	h = binary.BigEndian.AppendUint16(h, 7)
	h = append(h, "hostile"...)
	if protocol.RequestFlexible(key, version) {
		h = append(h, 0)
	}
	return h
}

func sizeFramed(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// checkServes fails the test unless a new connection gets an ApiVersions
// answer.
func checkServes(t *testing.T, b *Broker, after string) {
	t.Helper()
	w := dialWire(t, b)
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "gregor-test", "1"
	resp, err := w.roundTrip(av)
	if err != nil {
		t.Fatalf("after %s: a new connection is not served: %v", after, err)
	}
	if code := resp.(*kmsg.ApiVersionsResponse).ErrorCode; code != 0 {
		t.Fatalf("after %s: ApiVersions error %d", after, code)
	}
	w.nc.Close()
}

// answeredOrClosed reads what the broker does with a request: a response
// with the request's correlation id, or a close. It fails on a response
// to something else and on silence.
func answeredOrClosed(w *wireConn, corr int32, timeout time.Duration) (answered bool, err error) {
	frame, err := w.readFrame(timeout)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return false, fmt.Errorf("neither answered nor closed after %s", timeout)
		}
		return false, nil // EOF or reset: closed
	}
	if len(frame) < 4 || int32(binary.BigEndian.Uint32(frame)) != corr {
		return true, fmt.Errorf("a %d-byte response that is not for correlation id %d", len(frame), corr)
	}
	return true, nil
}

// Frames cut short, then the connection closed by the client, and empty
// frames: the broker drops the connection and holds nothing for it.
func TestHostileFrames(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	full := sizeFramed(append(requestHeader(3, 12, 1), 0, 0, 0, 0, 0, 0))
	cases := []struct {
		what  string
		raw   []byte
		close bool // the client closes after writing; else the broker must
	}{
		{"a frame of size 0", []byte{0, 0, 0, 0}, false},
		{"a frame of size 0 followed by a request", append([]byte{0, 0, 0, 0}, full...), false},
		{"size -1", []byte{0xff, 0xff, 0xff, 0xff}, false},
		{"size math.MinInt32", []byte{0x80, 0, 0, 0}, false},
		{"size math.MaxInt32 and a few bytes", []byte{0x7f, 0xff, 0xff, 0xff, 1, 2, 3}, false},
		{"half a size prefix", []byte{0, 0}, true},
		{"truncated mid-header", full[:4+5], true},
		{"truncated mid-body", full[:len(full)-3], true},
		{"a 1 MiB frame truncated after 10 bytes", append(binary.BigEndian.AppendUint32(nil, 1<<20), make([]byte, 10)...), true},
		{"a 64 MiB frame truncated after 10 bytes", append(binary.BigEndian.AppendUint32(nil, 64<<20), make([]byte, 10)...), true},
	}
	for _, tc := range cases {
		w := dialWire(t, b)
		if err := w.writeRaw(tc.raw); err != nil {
			t.Fatalf("%s: write: %v", tc.what, err)
		}
		if tc.close {
			w.nc.(*net.TCPConn).CloseWrite()
		}
		if err := w.expectClosed(10 * time.Second); err != nil {
			t.Errorf("%s: %v", tc.what, err)
		}
		checkServes(t, b, tc.what)
	}
}

// Every served API at a version below and above its range closes the
// connection, as Kafka does, except ApiVersions: a v0 answer with
// UNSUPPORTED_VERSION and the ranges.
func TestHostileUnsupportedVersions(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	for _, vr := range b.apis.Ranges() {
		versions := []int16{vr.Max + 1, math.MaxInt16}
		if vr.Key != protocol.APIVersionsKey {
			versions = append(versions, -1)
		}
		if vr.Min > 0 {
			versions = append(versions, vr.Min-1)
		}
		for _, v := range versions {
			what := fmt.Sprintf("%s v%d", kmsg.NameForKey(vr.Key), v)
			w := dialWire(t, b)
			if err := w.writeRaw(sizeFramed(append(requestHeader(vr.Key, v, 5), make([]byte, 8)...))); err != nil {
				t.Fatalf("%s: write: %v", what, err)
			}
			if vr.Key != protocol.APIVersionsKey {
				if err := w.expectClosed(10 * time.Second); err != nil {
					t.Errorf("%s: %v", what, err)
				}
				continue
			}
			frame, err := w.readFrame(10 * time.Second)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.SetVersion(0)
			if err := resp.ReadFrom(frame[4:]); err != nil {
				t.Fatalf("%s: decode v0 response: %v", what, err)
			}
			checkCode(t, what, resp.ErrorCode, protocol.UnsupportedVersion)
			// As Kafka answers: the range of ApiVersions alone.
			if len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != protocol.APIVersionsKey {
				t.Errorf("%s: the answer lists %+v, want ApiVersions' range alone", what, resp.ApiKeys)
			}
		}
		checkServes(t, b, kmsg.NameForKey(vr.Key)+" at unsupported versions")
	}
}

// Random bytes after a valid header, for every served API key and version
// and several seeds: an answer or a closed connection, never a hang or a
// crash.
func TestHostileGarbageBodies(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	setup := dialWire(t, b)
	setup.createTopic("victim", 2, nil)
	answered, closed := 0, 0
	for _, vr := range b.apis.Ranges() {
		for seed := uint64(1); seed <= 3; seed++ {
			rng := rand.New(rand.NewPCG(seed, uint64(vr.Key)))
			for v := vr.Min; v <= vr.Max; v++ {
				body := make([]byte, rng.IntN(200))
				for i := range body {
					body[i] = byte(rng.Uint32())
				}
				what := fmt.Sprintf("%s v%d, %d random bytes (seed %d)", kmsg.NameForKey(vr.Key), v, len(body), seed)
				w := dialWire(t, b)
				corr := int32(rng.Uint32() >> 1)
				if err := w.writeRaw(sizeFramed(append(requestHeader(vr.Key, v, corr), body...))); err != nil {
					t.Fatalf("%s: write: %v", what, err)
				}
				ok, err := answeredOrClosed(w, corr, 20*time.Second)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if ok {
					answered++
				} else {
					closed++
				}
				w.nc.Close()
			}
			checkServes(t, b, fmt.Sprintf("garbage %s bodies (seed %d)", kmsg.NameForKey(vr.Key), seed))
		}
	}
	t.Logf("garbage bodies: %d answered, %d closed the connection", answered, closed)
}

// Produce requests whose batches lie about themselves. Every one is
// refused with Kafka's code and nothing is appended.
func TestHostileProduceBatches(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	w.createTopic("hostile", 1, map[string]string{
		"message.timestamp.before.max.ms": "3600000",
		"message.timestamp.after.max.ms":  "3600000",
	})
	now := time.Now().UnixMilli()
	good := func() []byte { return buildBatch(t, plainHeader(), "v", 3) }
	withCRC := func(bt []byte) []byte { record.Batch(bt).UpdateCRC(); return bt }
	stamped := func(ts int64) []byte {
		h := plainHeader()
		h.BaseTimestamp = ts
		return buildBatch(t, h, "ts", 2)
	}
	codes := func(cs ...protocol.ErrorCode) []protocol.ErrorCode { return cs }
	corrupt := codes(protocol.CorruptMessage, protocol.InvalidRecord)

	cases := []struct {
		what  string
		batch []byte
		want  []protocol.ErrorCode
	}{
		{"a negative batch length", func() []byte {
			bt := good()
			binary.BigEndian.PutUint32(bt[8:], 0xffffffff)
			return bt
		}(), codes(protocol.CorruptMessage)},
		{"a batch length of math.MaxInt32", func() []byte {
			bt := good()
			binary.BigEndian.PutUint32(bt[8:], math.MaxInt32)
			return bt
		}(), codes(protocol.CorruptMessage)},
		{"a negative record length", func() []byte {
			bt := good()
			bt[record.HeaderSize] = 0x01 // zigzag varint -1
			return withCRC(bt)
		}(), corrupt},
		{"a record length past the batch", func() []byte {
			bt := good()
			bt[record.HeaderSize] = 0x7e // zigzag 63, far more than the record
			return withCRC(bt)
		}(), corrupt},
		{"a record count of math.MaxInt32", func() []byte {
			bt := good()
			binary.BigEndian.PutUint32(bt[57:], math.MaxInt32)
			return withCRC(bt)
		}(), corrupt},
		{"a negative record count", func() []byte {
			bt := good()
			binary.BigEndian.PutUint32(bt[57:], 0xfffffff0)
			return withCRC(bt)
		}(), corrupt},
		{"magic 0", func() []byte { bt := good(); bt[16] = 0; return bt }(), corrupt},
		{"magic 3", func() []byte { bt := good(); bt[16] = 3; return bt }(), corrupt},
		{"a timestamp two hours old, before.max.ms one hour", stamped(now - 2*3600*1000), codes(protocol.InvalidTimestamp)},
		{"a timestamp two hours ahead, after.max.ms one hour", stamped(now + 2*3600*1000), codes(protocol.InvalidTimestamp)},
	}
	for _, codec := range []record.Codec{record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd} {
		h := plainHeader()
		h.Codec = codec
		bt := buildBatch(t, h, "compressed", 5)
		rng := rand.New(rand.NewPCG(uint64(codec), 9))
		for i := record.HeaderSize; i < len(bt); i++ {
			bt[i] = byte(rng.Uint32())
		}
		cases = append(cases, struct {
			what  string
			batch []byte
			want  []protocol.ErrorCode
		}{fmt.Sprintf("codec %d with random bytes for its payload", codec), withCRC(bt), corrupt})
	}
	for _, tc := range cases {
		c := dialWire(t, b)
		rp := c.producePartition(-1, "hostile", 0, tc.batch)
		found := false
		for _, want := range tc.want {
			found = found || rp.ErrorCode == int16(want)
		}
		if !found {
			t.Errorf("%s: error code %d, want one of %v", tc.what, rp.ErrorCode, tc.want)
		}
		checkServes(t, b, tc.what)
	}
	if end := w.logEnd("hostile", 0); end != 0 {
		t.Errorf("log end %d after refused batches only, want 0", end)
	}
	rp := w.producePartition(-1, "hostile", 0, good())
	checkCode(t, "an intact batch afterwards", rp.ErrorCode, protocol.None)
}

// Produce to a topic whose name is not legal: Kafka looks the name up and
// answers UNKNOWN_TOPIC_OR_PARTITION; nothing is created.
func TestHostileProduceTopicNames(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	for _, name := range []string{"", ".", "..", strings.Repeat("a", 250), "bad/name", "with space", "a\x00b"} {
		rp := w.producePartition(-1, name, 0, buildBatch(t, plainHeader(), "v", 1))
		checkCode(t, fmt.Sprintf("produce to %q", name), rp.ErrorCode, protocol.UnknownTopicOrPartition)
	}
	if names := w.topicNames(); len(names) != 0 {
		t.Errorf("topics after produces to illegal names: %q", names)
	}
	checkServes(t, b, "produce to illegal topic names")
}

// A partition count near math.MaxInt32 would size the assignment: Kafka's
// controller refuses more than 10000 new partitions per request with
// POLICY_VIOLATION, and so does Gregor, before allocating anything.
func TestHostilePartitionCounts(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	rt := w.createTopicResult("huge", math.MaxInt32, 1, nil)
	checkCode(t, "CreateTopics with math.MaxInt32 partitions", rt.ErrorCode, protocol.PolicyViolation)

	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	for i := range 3 {
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = fmt.Sprintf("split-%d", i), 4000, 1
		req.Topics = append(req.Topics, ct)
	}
	req.ValidateOnly = true
	resp := w.mustRoundTrip(req).(*kmsg.CreateTopicsResponse)
	for _, t2 := range resp.Topics {
		checkCode(t, "CreateTopics of 3 x 4000 partitions: "+t2.Topic, t2.ErrorCode, protocol.PolicyViolation)
	}

	w.createTopic("grow", 1, nil)
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.SetVersion(3)
	cpt := kmsg.NewCreatePartitionsRequestTopic()
	cpt.Topic, cpt.Count = "grow", math.MaxInt32
	cp.Topics = append(cp.Topics, cpt)
	cpr := w.mustRoundTrip(cp).(*kmsg.CreatePartitionsResponse)
	checkCode(t, "CreatePartitions to math.MaxInt32", cpr.Topics[0].ErrorCode, protocol.PolicyViolation)
	if mt := w.metadataTopic(kmsg.StringPtr("grow"), [16]byte{}, false); len(mt.Partitions) != 1 {
		t.Errorf("topic grow has %d partitions, want 1", len(mt.Partitions))
	}
	checkServes(t, b, "huge partition counts")
}

// A connection beyond max.connections.per.ip is closed at once; one beyond
// max.connections waits until a slot frees.
func TestLimitConnections(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(c *Config) { c.MaxConnectionsPerIP = 2 })
	a1, a2 := dialWire(t, b), dialWire(t, b)
	for _, w := range []*wireConn{a1, a2} {
		w.mustRoundTrip(metadataV12())
	}
	third := dialWire(t, b)
	if err := third.expectClosed(10 * time.Second); err != nil {
		t.Errorf("a third connection from one IP with max.connections.per.ip 2: %v", err)
	}
	a1.nc.Close()
	waitFor(t, 10*time.Second, "a connection after one closed", func() error {
		w := dialWireAddr(t, b.Addrs()[0])
		defer w.nc.Close()
		_, err := w.roundTrip(metadataV12())
		return err
	})

	// Clients on EXTERNAL; INTERNAL, the inter-broker listener, is exempt
	// from max.connections, as in Kafka.
	b2 := startBroker(t, twoListeners, func(c *Config) {
		c.MaxConnections = 1
		c.MaxConnectionsPerIPOverrides = map[string]int32{"127.0.0.1": 5}
	})
	first := dialWireAddr(t, b2.Addrs()[1])
	first.mustRoundTrip(metadataV12())
	waiting := dialWireAddr(t, b2.Addrs()[1])
	if err := waiting.writeRaw(waiting.fmt.AppendRequest(nil, metadataV12(), 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := waiting.readFrame(300 * time.Millisecond); err == nil {
		t.Fatal("a second connection with max.connections 1 was served while the first is open")
	}
	if _, err := dialWireAddr(t, b2.Addrs()[0]).roundTripWithin(metadataV12(), 10*time.Second); err != nil {
		t.Fatalf("the inter-broker listener at max.connections: %v", err)
	}
	first.nc.Close()
	if _, err := waiting.readFrame(10 * time.Second); err != nil {
		t.Fatalf("the waiting connection once the first closed: %v", err)
	}

	// A single listener is not protected, though it is the inter-broker
	// one: its connections count, as in Kafka.
	b3 := startBroker(t, func(c *Config) {
		c.MaxConnections = 1
		c.MaxConnectionsPerIPOverrides = map[string]int32{"127.0.0.1": 5}
	})
	dialWire(t, b3).mustRoundTrip(metadataV12())
	second := dialWire(t, b3)
	if err := second.writeRaw(second.fmt.AppendRequest(nil, metadataV12(), 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := second.readFrame(300 * time.Millisecond); err == nil {
		t.Fatal("a second connection to a single listener with max.connections 1 was served while the first is open")
	}
}

// connections.max.idle.ms closes a silent connection; one that keeps
// talking stays.
func TestLimitIdleConnections(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(c *Config) { c.ConnectionsMaxIdle = 400 * time.Millisecond })
	idle, busy := dialWire(t, b), dialWire(t, b)
	idle.mustRoundTrip(metadataV12())
	start := time.Now()
	for time.Since(start) < time.Second {
		busy.mustRoundTrip(metadataV12())
		time.Sleep(100 * time.Millisecond)
	}
	if err := idle.expectClosed(10 * time.Second); err != nil {
		t.Errorf("idle connection: %v", err)
	}
	busy.mustRoundTrip(metadataV12())
}

// queued.max.requests: while every slot is taken, connections read nothing
// more; a request parked in a fetch long poll gives its slot back.
func TestLimitQueuedMaxRequests(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(c *Config) { c.QueuedMaxRequests = 1 })
	w := dialWire(t, b)
	w.createTopic("polled", 1, nil)

	b.slots <- struct{}{} // hold the only slot
	if err := w.writeRaw(w.fmt.AppendRequest(nil, metadataV12(), 100)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.readFrame(300 * time.Millisecond); err == nil {
		t.Fatal("a request was handled while queued.max.requests was reached")
	}
	<-b.slots
	if _, err := w.readFrame(10 * time.Second); err != nil {
		t.Fatalf("the request once a slot freed: %v", err)
	}

	// A long poll on an empty partition does not hold the slot.
	poller := dialWire(t, b)
	f := kmsg.NewPtrFetchRequest()
	f.SetVersion(12)
	f.MaxWaitMillis, f.MinBytes, f.MaxBytes = 60_000, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "polled"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	f.Topics = append(f.Topics, ft)
	if err := poller.writeRaw(poller.fmt.AppendRequest(nil, f, 1)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let the poll park; a late one only weakens the check
	// Answered while the poll is still parked: a poll holding the only
	// slot would let the metadata request through only at its minute's end.
	other := dialWire(t, b)
	other.mustRoundTrip(metadataV12())
	if _, err := poller.readFrame(10 * time.Millisecond); err == nil {
		t.Fatal("the long poll was answered before the metadata request; want it still parked")
	} else if ne := net.Error(nil); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("waiting on the long poll: %v", err)
	}
	if p := other.producePartition(-1, "polled", 0, buildBatch(t, plainHeader(), "wake", 1)); p.ErrorCode != 0 {
		t.Fatalf("produce to the polled partition: error code %d", p.ErrorCode)
	}
	if _, err := poller.readFrame(30 * time.Second); err != nil {
		t.Fatalf("the long poll's answer once a record came: %v", err)
	}
}

func metadataV12() *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	return req
}

// hostileFrames are requests the broker answers with an error and keeps
// the connection for; closers end a connection.
func hostileFrames(t *testing.T) (answered func(rng *rand.Rand, corr int32) []byte, closers [][]byte) {
	badCRC := buildBatch(t, plainHeader(), "v", 2)
	badCRC[len(badCRC)-1] ^= 0xff
	oldTS := func() []byte {
		h := plainHeader()
		h.BaseTimestamp = 1000
		return buildBatch(t, h, "old", 1)
	}()
	fmtr := kmsg.NewRequestFormatter(kmsg.FormatterClientID("hostile"))
	answered = func(rng *rand.Rand, corr int32) []byte {
		var req kmsg.Request
		switch rng.IntN(6) {
		case 0:
			req = produceReq(11, -1, "mem", 0, badCRC)
		case 1:
			req = produceReq(11, 7, "mem", 0, badCRC) // acks 7
		case 2:
			req = produceReq(11, -1, "mem", 0, oldTS)
		case 3:
			req = produceReq(11, 1, strings.Repeat("x", 250), 3, badCRC)
		case 4:
			ct := kmsg.NewPtrCreateTopicsRequest()
			ct.SetVersion(7)
			topic := kmsg.NewCreateTopicsRequestTopic()
			topic.Topic, topic.NumPartitions, topic.ReplicationFactor = "..", math.MaxInt32, 1
			ct.Topics = append(ct.Topics, topic)
			req = ct
		default:
			md := metadataV12()
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = kmsg.StringPtr("bad/name")
			md.Topics = append(md.Topics, mt)
			md.AllowAutoTopicCreation = true
			req = md
		}
		return fmtr.AppendRequest(nil, req, corr)
	}
	closers = [][]byte{
		{0, 0, 0, 0},
		{0xff, 0xff, 0xff, 0xff},
		binary.BigEndian.AppendUint32(nil, 200<<20),
		sizeFramed(append(requestHeader(0, 99, 1), 1, 2, 3)),
		sizeFramed(append(requestHeader(3, 12, 1), 0xff, 0xff, 0xff)),
		sizeFramed([]byte{0, 3}),
	}
	return answered, closers
}

// 100,000 hostile frames over a few hundred connections leave the
// broker's heap where it was, give or take 64 MiB.
func TestHostileMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 100,000 frames")
	}
	// Not parallel: the heap is measured for the whole process.
	b := startBroker(t)
	setup := dialWire(t, b)
	setup.createTopic("mem", 1, map[string]string{"message.timestamp.before.max.ms": "3600000"})
	checkServes(t, b, "setup")

	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	before := heap()

	const (
		conns    = 250
		perConn  = 400 // 399 answered frames, then a closing one
		workers  = 8
		maxDrift = 64 << 20
	)
	answeredFrame, closers := hostileFrames(t)
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	next := make(chan int, conns)
	for i := range conns {
		next <- i
	}
	close(next)
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := hostileConn(b.Addrs()[0], uint64(i), perConn, answeredFrame, closers); err != nil {
					errs <- fmt.Errorf("connection %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	elapsed := time.Since(start)
	checkServes(t, b, "100,000 hostile frames")
	// Connections the broker closed are gone from its books once their
	// goroutines end; wait for that before measuring.
	waitFor(t, 10*time.Second, "hostile connections to end", func() error {
		b.conns.Lock()
		n := len(b.conns.m)
		b.conns.Unlock()
		if n > 1 {
			return fmt.Errorf("%d connections still open", n)
		}
		return nil
	})
	after := heap()
	t.Logf("%d frames over %d connections in %s; heap in use before %.1f MiB, after %.1f MiB",
		conns*perConn, conns, elapsed.Round(time.Millisecond), float64(before)/(1<<20), float64(after)/(1<<20))
	if after > before+maxDrift {
		t.Errorf("heap in use grew from %d to %d bytes, more than %d", before, after, maxDrift)
	}
}

// hostileConn sends n-1 answered hostile requests pipelined, reads their
// answers, then sends a frame that closes the connection and checks that
// it is closed.
func hostileConn(addr string, seed uint64, n int, answered func(*rand.Rand, int32) []byte, closers [][]byte) error {
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(60 * time.Second))
	rng := rand.New(rand.NewPCG(seed, 42))
	writeErr := make(chan error, 1)
	go func() {
		var buf []byte
		for i := range n - 1 {
			buf = append(buf, answered(rng, int32(i))...)
			if len(buf) > 32<<10 || i == n-2 {
				if _, err := nc.Write(buf); err != nil {
					writeErr <- err
					return
				}
				buf = buf[:0]
			}
		}
		writeErr <- nil
	}()
	var size [4]byte
	body := make([]byte, 0, 4096)
	for i := range n - 1 {
		if _, err := io.ReadFull(nc, size[:]); err != nil {
			return fmt.Errorf("answer %d: %w", i, err)
		}
		m := int(binary.BigEndian.Uint32(size[:]))
		if m < 4 || m > 1<<20 {
			return fmt.Errorf("answer %d: frame size %d", i, m)
		}
		body = body[:m]
		if _, err := io.ReadFull(nc, body); err != nil {
			return fmt.Errorf("answer %d: %w", i, err)
		}
		if corr := int32(binary.BigEndian.Uint32(body)); corr != int32(i) {
			return fmt.Errorf("answer %d has correlation id %d", i, corr)
		}
	}
	if err := <-writeErr; err != nil {
		return err
	}
	if _, err := nc.Write(closers[int(seed)%len(closers)]); err != nil {
		return err
	}
	if _, err := io.ReadFull(nc, size[:]); err == nil {
		return fmt.Errorf("a response to closing frame %d", int(seed)%len(closers))
	}
	return nil
}
