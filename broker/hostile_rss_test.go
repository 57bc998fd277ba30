//go:build !race

package broker

// The broker's resident memory under hostile input, measured from outside:
// TestHostileRSS sends 100,000 hostile frames to a broker process
// (TestChildBroker, see load_test.go) and reads its VmRSS from
// /proc/<pid>/status before and after. TestHostileMemory measures the heap
// of an in-process broker; RSS also counts what the heap freed but the
// runtime kept, goroutine stacks and buffers outside the heap.
//
// Not built with -race: the race detector's shadow memory would be
// measured with the broker's own.
//
// One frame in 1,000 is a decompression bomb, a compressed batch of a few
// KiB that decompresses to 8 to 160 MiB of zeros. record.Validate reads
// compressed records as a stream and refuses these at their first record
// (a zero length), with a buffer of 16 KiB beside the decoder's window.
// It used to decompress a whole batch into one buffer of up to
// max(socket.request.max.bytes, 64 MiB) first, which took RSS to 0.6 to
// 1 GiB and left it 100 to 380 MiB above its start: garbage an idle broker
// did not collect before the runtime's two-minute forced collection.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol/record"
)

const (
	hostileRSSFrames  = 100_000
	hostileRSSWorkers = 16
	hostileRSSMaxGrow = 64 << 20
	hostileRSSTopic   = "mem"
	// hostileRSSWait bounds the wait for an answer or a close. A garbage
	// body can decode into a valid long poll (a Fetch with a large
	// MaxWaitMillis), which Kafka too holds for as long as it asks; such
	// connections are counted and dropped.
	hostileRSSWait = 5 * time.Second
	// hostileRSSAnswerWait bounds the wait for the answers to refused
	// requests, decompression bombs among them.
	hostileRSSAnswerWait = 60 * time.Second
)

// hostileTerminal is a frame after which the connection may end.
type hostileTerminal struct {
	what       string
	raw        []byte
	mustClose  bool // else the broker may answer or close
	closeWrite bool // the client half-closes after it: a truncated frame
}

// hostileKit makes the frames of TestHostileRSS.
type hostileKit struct {
	// answered are produce, create and metadata requests the broker
	// refuses with an error code and keeps the connection for, as
	// functions of the correlation id.
	answered []func(corr int32) []byte
	// bombs are produce requests whose batches decompress to tens of MiB
	// of zeros, sent rarely.
	bombs []func(corr int32) []byte
	// closers end the connection.
	closers []hostileTerminal
	// served are the API keys and versions the broker serves, each sent
	// in turn with random bytes for a body (garbage).
	served [][2]int16
}

// withPayload replaces bt's records with payload, declares codec c and
// fixes the length and CRC: a batch the broker must decompress to judge.
func withPayload(bt []byte, c record.Codec, payload []byte) []byte {
	bt = append(bt[:record.HeaderSize:record.HeaderSize], payload...)
	attrs := binary.BigEndian.Uint16(bt[21:])
	binary.BigEndian.PutUint16(bt[21:], attrs&^7|uint16(c))
	binary.BigEndian.PutUint32(bt[8:], uint32(len(bt)-12))
	record.Batch(bt).UpdateCRC()
	return bt
}

func newHostileKit(t *testing.T, av *kmsg.ApiVersionsResponse) *hostileKit {
	t.Helper()
	k := &hostileKit{}
	fmtr := kmsg.NewRequestFormatter(kmsg.FormatterClientID("hostile"))
	good := func() []byte { return buildBatch(t, plainHeader(), "v", 3) }
	withCRC := func(bt []byte) []byte { record.Batch(bt).UpdateCRC(); return bt }
	put32 := func(off int, v uint32) func([]byte) []byte {
		return func(bt []byte) []byte { binary.BigEndian.PutUint32(bt[off:], v); return bt }
	}
	batches := map[string][]byte{
		"bad CRC":                         func() []byte { bt := good(); bt[len(bt)-1] ^= 0xff; return bt }(),
		"magic 0":                         func() []byte { bt := good(); bt[16] = 0; return bt }(),
		"magic 3":                         func() []byte { bt := good(); bt[16] = 3; return withCRC(bt) }(),
		"a negative batch length":         put32(8, 0xffffffff)(good()),
		"a batch length of math.MaxInt32": put32(8, math.MaxInt32)(good()),
		"a record count of math.MaxInt32": withCRC(put32(57, math.MaxInt32)(good())),
		"a negative record count":         withCRC(put32(57, 0xfffffff0)(good())),
		"a negative record length": func() []byte {
			bt := good()
			bt[record.HeaderSize] = 0x01 // zigzag varint -1
			return withCRC(bt)
		}(),
		"a record length past the batch": func() []byte {
			bt := good()
			bt[record.HeaderSize] = 0x7e // zigzag 63
			return withCRC(bt)
		}(),
		"a timestamp in 1970": func() []byte {
			h := plainHeader()
			h.BaseTimestamp = 1000
			return buildBatch(t, h, "old", 1)
		}(),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []record.Codec{record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd} {
		garbage := make([]byte, 64+rng.IntN(2000))
		for i := range garbage {
			garbage[i] = byte(rng.Uint32())
		}
		batches[fmt.Sprintf("%s with garbage for its payload", c)] = withPayload(good(), c, garbage)
		huge := withPayload(good(), c, garbage)
		binary.BigEndian.PutUint32(huge[57:], math.MaxInt32)
		batches[fmt.Sprintf("%s garbage declaring math.MaxInt32 records", c)] = withCRC(huge)
		// Compressed records whose first record is cut short.
		comp, err := record.Compress(nil, c, append([]byte{0x7e}, make([]byte, 20)...))
		if err != nil {
			t.Fatal(err)
		}
		batches[fmt.Sprintf("%s compressed, truncated records", c)] = withPayload(good(), c, comp)
	}
	names := make([]string, 0, len(batches))
	for name := range batches {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		bt := batches[name]
		k.answered = append(k.answered, func(corr int32) []byte {
			return fmtr.AppendRequest(nil, produceReq(11, -1, hostileRSSTopic, 0, bt), corr)
		})
	}
	k.answered = append(k.answered,
		func(corr int32) []byte { // acks 7
			return fmtr.AppendRequest(nil, produceReq(11, 7, hostileRSSTopic, 0, good()), corr)
		},
		func(corr int32) []byte { // an illegal topic name
			return fmtr.AppendRequest(nil, produceReq(11, 1, strings.Repeat("x", 250), 3, good()), corr)
		},
		func(corr int32) []byte { // an unknown partition
			return fmtr.AppendRequest(nil, produceReq(11, 1, hostileRSSTopic, 1<<30, good()), corr)
		},
		func(corr int32) []byte { // math.MaxInt32 partitions for an illegal name
			ct := kmsg.NewPtrCreateTopicsRequest()
			ct.SetVersion(7)
			topic := kmsg.NewCreateTopicsRequestTopic()
			topic.Topic, topic.NumPartitions, topic.ReplicationFactor = "..", math.MaxInt32, 1
			ct.Topics = append(ct.Topics, topic)
			return fmtr.AppendRequest(nil, ct, corr)
		},
		func(corr int32) []byte { // auto-creating an illegal name
			md := metadataV12()
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = kmsg.StringPtr("bad/name")
			md.Topics = append(md.Topics, mt)
			md.AllowAutoTopicCreation = true
			return fmtr.AppendRequest(nil, md, corr)
		},
		func(corr int32) []byte { // ApiVersions above the served range: a v0 answer
			return sizeFramed(append(requestHeader(18, math.MaxInt16, corr), 1, 2, 3, 4))
		},
	)

	// Bombs: a few KiB on the wire, tens of MiB decompressed, below and
	// above the broker's limit on a batch's decompressed size.
	type bomb struct {
		c    record.Codec
		size int
	}
	specs := []bomb{{record.CodecZstd, 48 << 20}, {record.CodecZstd, 160 << 20}, {record.CodecLZ4, 32 << 20}, {record.CodecGzip, 8 << 20}}
	for _, b := range specs {
		comp, err := record.Compress(nil, b.c, make([]byte, b.size))
		if err != nil {
			t.Fatal(err)
		}
		bt := withPayload(good(), b.c, comp)
		k.bombs = append(k.bombs, func(corr int32) []byte {
			return fmtr.AppendRequest(nil, produceReq(11, -1, hostileRSSTopic, 0, bt), corr)
		})
	}

	full := sizeFramed(append(requestHeader(3, 12, 1), 0, 0, 0, 0, 0, 0))
	closer := func(what string, raw []byte) {
		k.closers = append(k.closers, hostileTerminal{what: what, raw: raw, mustClose: true})
	}
	truncated := func(what string, raw []byte) {
		k.closers = append(k.closers, hostileTerminal{what: what, raw: raw, mustClose: true, closeWrite: true})
	}
	closer("a frame of size 0", []byte{0, 0, 0, 0})
	closer("size -1", []byte{0xff, 0xff, 0xff, 0xff})
	closer("size math.MinInt32", []byte{0x80, 0, 0, 0})
	closer("size math.MaxInt32", []byte{0x7f, 0xff, 0xff, 0xff, 1, 2, 3})
	closer("200 MiB, above socket.request.max.bytes", binary.BigEndian.AppendUint32(nil, 200<<20))
	closer("a 2-byte header", sizeFramed([]byte{0, 3}))
	closer("a client id longer than the frame", sizeFramed(binary.BigEndian.AppendUint16(requestHeader(3, 12, 1)[:8], 30000)))
	closer("a metadata body cut short", sizeFramed(append(requestHeader(3, 12, 1), 0xff, 0xff, 0xff)))
	truncated("half a size prefix", []byte{0, 0})
	truncated("truncated mid-header", full[:4+5])
	truncated("truncated mid-body", full[:len(full)-3])
	truncated("a 1 MiB frame truncated after 10 bytes", append(binary.BigEndian.AppendUint32(nil, 1<<20), make([]byte, 10)...))
	truncated("a 64 MiB frame truncated after 10 bytes", append(binary.BigEndian.AppendUint32(nil, 64<<20), make([]byte, 10)...))
	truncated("a 100 MiB frame truncated after 64 KiB", append(binary.BigEndian.AppendUint32(nil, 100<<20), make([]byte, 64<<10)...))

	served := map[int16]bool{}
	for _, r := range av.ApiKeys {
		served[r.ApiKey] = true
		for v := r.MinVersion; v <= r.MaxVersion; v++ {
			k.served = append(k.served, [2]int16{r.ApiKey, v})
		}
		if r.ApiKey == 18 {
			continue // answered at any version
		}
		bad := []int16{r.MaxVersion + 1, math.MaxInt16, -1}
		if r.MinVersion > 0 {
			bad = append(bad, r.MinVersion-1)
		}
		for _, v := range bad {
			closer(fmt.Sprintf("%s v%d", kmsg.NameForKey(r.ApiKey), v),
				sizeFramed(append(requestHeader(r.ApiKey, v, 1), make([]byte, 8)...)))
		}
	}
	for _, key := range []int16{4, 5, 6, 7, 99, 1000, math.MaxInt16, -1} {
		if !served[key] {
			closer(fmt.Sprintf("unknown API key %d", key), sizeFramed(append(requestHeader(key, 0, 1), make([]byte, 8)...)))
		}
	}
	return k
}

// garbage is a served key and version with up to 300 random bytes for a
// body.
func (k *hostileKit) garbage(rng *rand.Rand, i int, corr int32) hostileTerminal {
	kv := k.served[i%len(k.served)]
	body := make([]byte, rng.IntN(300))
	for j := range body {
		body[j] = byte(rng.Uint32())
	}
	return hostileTerminal{what: fmt.Sprintf("%s v%d with %d random bytes", kmsg.NameForKey(kv[0]), kv[1], len(body)),
		raw: sizeFramed(append(requestHeader(kv[0], kv[1], corr), body...))}
}

// hostileStats are TestHostileRSS's counts, over all workers.
type hostileStats struct {
	frames, conns, brokerClosed    atomic.Int64
	garbageAnswered, garbageSilent atomic.Int64
	bombs                          atomic.Int64
	parked                         errorList // what the waiting connections were sent
	errs                           errorList
}

// hostileWorker sends quota frames over as many connections as it takes:
// on each, a few refused requests pipelined, then a terminal frame (a
// closer, or garbage followed by an ApiVersions probe); it reconnects when
// the broker closes the connection.
func hostileWorker(addr string, seed uint64, quota int, k *hostileKit, st *hostileStats, garbageSeq *atomic.Int64) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	sent := 0
	for sent < quota {
		nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			st.errs.add("dial: %v", err)
			return
		}
		st.conns.Add(1)
		sent += hostileConnRun(nc, rng, quota-sent, k, st, garbageSeq)
		nc.Close()
	}
}

// hostileConnRun drives one connection until it ends and returns the
// frames sent on it.
func hostileConnRun(nc net.Conn, rng *rand.Rand, quota int, k *hostileKit, st *hostileStats, garbageSeq *atomic.Int64) int {
	br := bufio.NewReader(nc)
	sent := 0
	var corr int32
	for sent < quota {
		n := min(1+rng.IntN(24), quota-sent)
		var buf []byte
		first := corr + 1
		for range n {
			corr++
			if len(k.bombs) > 0 && rng.IntN(1000) == 0 {
				buf = append(buf, k.bombs[rng.IntN(len(k.bombs))](corr)...)
				st.bombs.Add(1)
			} else {
				buf = append(buf, k.answered[rng.IntN(len(k.answered))](corr)...)
			}
		}
		nc.SetDeadline(time.Now().Add(hostileRSSAnswerWait))
		if _, err := nc.Write(buf); err != nil {
			st.errs.add("write %d refused requests: %v", n, err)
			return sent + n
		}
		sent += n
		st.frames.Add(int64(n))
		for want := first; want <= corr; want++ {
			got, err := readCorr(br)
			if err != nil {
				st.errs.add("the answer to refused request %d of %d: %v", want-first+1, n, err)
				return sent
			}
			if got != want {
				st.errs.add("an answer for correlation id %d, want %d", got, want)
				return sent
			}
		}
		if sent >= quota {
			return sent
		}

		// The terminal frame.
		corr++
		var term hostileTerminal
		if rng.IntN(2) == 0 {
			term = k.closers[rng.IntN(len(k.closers))]
		} else {
			term = k.garbage(rng, int(garbageSeq.Add(1)), corr)
		}
		raw := term.raw
		probe := corr + 1
		if !term.closeWrite {
			// An ApiVersions after it tells an unanswered request (a
			// garbage Produce with acks 0) from a silent broker.
			raw = append(slices.Clip(raw), sizeFramed(append(requestHeader(18, 0, probe), 0, 0))...)
		}
		nc.SetDeadline(time.Now().Add(hostileRSSWait))
		_, err := nc.Write(raw)
		sent++
		st.frames.Add(1)
		if err != nil {
			st.brokerClosed.Add(1) // it closed before reading everything
			return sent
		}
		if term.closeWrite {
			nc.(*net.TCPConn).CloseWrite()
		}
		answered := false
		for {
			got, err := readCorr(br)
			var ne net.Error
			switch {
			case errors.As(err, &ne) && ne.Timeout():
				st.parked.add("%s", term.what)
				return sent
			case err != nil:
				st.brokerClosed.Add(1)
				if !term.mustClose && !answered {
					st.garbageSilent.Add(1)
				}
				return sent
			case term.mustClose:
				st.errs.add("%s: answered (correlation id %d), want the connection closed", term.what, got)
				return sent
			case got == corr && !answered:
				answered = true
				st.garbageAnswered.Add(1)
				continue
			case got != probe:
				st.errs.add("%s: an answer for correlation id %d, want %d or %d", term.what, got, corr, probe)
				return sent
			}
			break
		}
		corr = probe
	}
	return sent
}

// readCorr reads a response frame and returns its correlation id.
func readCorr(br *bufio.Reader) (int32, error) {
	var size [4]byte
	if _, err := io.ReadFull(br, size[:]); err != nil {
		return 0, err
	}
	n := int64(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > 1<<20 {
		return 0, fmt.Errorf("response frame size %d", n)
	}
	var corr [4]byte
	if _, err := io.ReadFull(br, corr[:]); err != nil {
		return 0, err
	}
	if _, err := br.Discard(int(n - 4)); err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(corr[:])), nil
}

func TestHostileRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 hostile frames against a child broker process: not with -short")
	}
	began := time.Now()
	child := startChildBroker(t)
	addr := child.addr()
	ctx := testContext(t, 3*time.Minute)

	setup := dialWireAddr(t, addr)
	setup.createTopic(hostileRSSTopic, 1, map[string]string{"message.timestamp.before.max.ms": "3600000"})
	av, err := apiVersions(setup.nc, 1000, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	kit := newHostileKit(t, av)
	setup.nc.Close()
	waitFor(t, 30*time.Second, "the setup connection to close", func() error {
		n, err := child.openConnections()
		if err == nil && n != 0 {
			err = fmt.Errorf("%d connections open", n)
		}
		return err
	})
	heapBefore, err := child.metric("go_memstats_heap_inuse_bytes")
	if err != nil {
		t.Fatal(err)
	}
	before := child.mustMem(t)
	t.Logf("before: %s, %d fds; %d refused requests, %d bombs, %d closing frames, %d API versions for garbage",
		before, child.fds(t), len(kit.answered), len(kit.bombs), len(kit.closers), len(kit.served))

	var (
		st         hostileStats
		garbageSeq atomic.Int64
		peak       atomic.Int64
		stop       = make(chan struct{})
		sampled    = make(chan struct{})
	)
	go func() {
		defer close(sampled)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if m, err := child.mem(); err == nil && m.rss > peak.Load() {
				peak.Store(m.rss)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	start := time.Now()
	forEach(hostileRSSWorkers, hostileRSSWorkers, func(i int) {
		hostileWorker(addr, uint64(i), hostileRSSFrames/hostileRSSWorkers, kit, &st, &garbageSeq)
	})
	took := time.Since(start)
	close(stop)
	<-sampled
	st.errs.check(t, "hostile frames")
	if err := child.alive(); err != nil {
		t.Fatal(err)
	}
	parked, parkedWhat := st.parked.list()
	t.Logf("%d frames over %d connections in %s: the broker closed %d connections; of the garbage bodies %d were answered and %d closed the connection; %d decompression bombs",
		st.frames.Load(), st.conns.Load(), took.Round(time.Millisecond), st.brokerClosed.Load(),
		st.garbageAnswered.Load(), st.garbageSilent.Load(), st.bombs.Load())
	if st.frames.Load() != hostileRSSFrames {
		t.Errorf("%d frames sent, want %d", st.frames.Load(), hostileRSSFrames)
	}

	// A garbage body can decode into a valid request that parks, a Fetch
	// with a huge MaxWaitMillis; the test drops such a connection after
	// hostileRSSWait, but the broker, whose read loop waits for the
	// handler, only notices when the wait ends.
	if parked > 0 {
		t.Logf("%d connections got neither an answer nor a close within %s and were closed by the test; the first were sent: %s",
			parked, hostileRSSWait, strings.Join(parkedWhat, "; "))
	}
	waitFor(t, 30*time.Second, "the hostile connections to close", func() error {
		n, err := child.openConnections()
		if err == nil && n > parked {
			err = fmt.Errorf("%d connections open, %d of them parked requests", n, parked)
		}
		return err
	})
	if n, err := child.openConnections(); err == nil && n > 0 {
		t.Logf("the broker still holds %d connections the test closed: their requests are parked", n)
	}
	after := child.mustMem(t)
	heapAfter, err := child.metric("go_memstats_heap_inuse_bytes")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("RSS before %s, after %s (%+.1f MiB), peak during the frames %s (sampled every 100ms; VmHWM %s); Go heap in use before %s, after %s; %d fds after",
		mib(before.rss), mib(after.rss), float64(after.rss-before.rss)/(1<<20), mib(peak.Load()), mib(after.hwm),
		mib(int64(heapBefore)), mib(int64(heapAfter)), child.fds(t))
	if after.rss > before.rss+hostileRSSMaxGrow {
		t.Errorf("RSS grew from %s to %s, more than %s", mib(before.rss), mib(after.rss), mib(hostileRSSMaxGrow))
	}

	// A normal client is still served, and the topic holds its records
	// and none of the refused batches.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(hostileRSSTopic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ConsumeTopics(hostileRSSTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const n = 100
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Value: fmt.Appendf(nil, "after-%d", i)}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce after the hostile frames: %v", err)
	}
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before the deadline", len(got), n)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("fetch partition %d: %v", p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(len(got)) {
				t.Errorf("record %q at offset %d, want %d", r.Value, r.Offset, len(got))
			}
			got = append(got, string(r.Value))
		})
	}
	for i, v := range got {
		if want := fmt.Sprintf("after-%d", i); v != want {
			t.Errorf("record %d is %q, want %q", i, v, want)
		}
	}
	if errs := child.brokerErrors(); len(errs) > 0 {
		t.Errorf("the broker logged %d errors; the first: %s", len(errs), errs[0])
	}
	t.Logf("a franz-go client produced and consumed %d records afterwards; wall time %s", n, time.Since(began).Round(time.Millisecond))
}
