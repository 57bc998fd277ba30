package broker

// Helpers shared by the integration, crash, error and ApiVersions tests.
//
// wireConn speaks the Kafka protocol over a plain net.Conn with kmsg
// encoding the request (header included) and decoding the response, so a
// test chooses every byte: the API version, acks, the records. kgo's
// Request would pick the version itself and rewrite acks to its own
// configuration, which is what most of these tests must not happen.

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol/record"
)

// waitFor polls fn until it returns nil or timeout passes, then fails the
// test with fn's last error.
func waitFor(t testing.TB, timeout time.Duration, what string, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	delay := 5 * time.Millisecond
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not done after %s: %v", what, timeout, err)
		}
		time.Sleep(delay)
		delay = min(2*delay, 200*time.Millisecond)
	}
}

// testContext is a context that ends after d or with the test.
func testContext(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// wireConn is one raw client connection.
type wireConn struct {
	t    testing.TB
	nc   net.Conn
	br   *bufio.Reader
	corr int32
	fmt  *kmsg.RequestFormatter
}

// dialWire connects to the broker's first listener.
func dialWire(t testing.TB, b *Broker) *wireConn {
	t.Helper()
	return dialWireAddr(t, b.Addrs()[0])
}

func dialWireAddr(t testing.TB, addr string) *wireConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &wireConn{t: t, nc: nc, br: bufio.NewReader(nc),
		fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("gregor-wire-test"))}
}

// writeRaw writes bytes as they are.
func (w *wireConn) writeRaw(p []byte) error {
	w.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := w.nc.Write(p)
	return err
}

// readFrame reads one response frame (without its size prefix).
func (w *wireConn) readFrame(timeout time.Duration) ([]byte, error) {
	w.nc.SetReadDeadline(time.Now().Add(timeout))
	var size [4]byte
	if _, err := io.ReadFull(w.br, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > 256<<20 {
		return nil, fmt.Errorf("response frame size %d", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(w.br, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// roundTrip sends req at the version set on it (req.SetVersion) and
// decodes the response at the same version.
func (w *wireConn) roundTrip(req kmsg.Request) (kmsg.Response, error) {
	return w.roundTripWithin(req, 60*time.Second)
}

// roundTripWithin is roundTrip failing when the response has not come
// within timeout.
func (w *wireConn) roundTripWithin(req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	w.corr++
	corr := w.corr
	if err := w.writeRaw(w.fmt.AppendRequest(nil, req, corr)); err != nil {
		return nil, fmt.Errorf("write %s v%d: %w", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	frame, err := w.readFrame(timeout)
	if err != nil {
		return nil, fmt.Errorf("read %s v%d response: %w", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	body, gotCorr, err := splitResponseHeader(frame, req.Key() != 18 && req.IsFlexible())
	if err != nil {
		return nil, err
	}
	if gotCorr != corr {
		return nil, fmt.Errorf("correlation id %d, want %d", gotCorr, corr)
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("decode %s v%d response: %w", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp, nil
}

// mustRoundTrip is roundTrip failing the test on error.
func (w *wireConn) mustRoundTrip(req kmsg.Request) kmsg.Response {
	w.t.Helper()
	resp, err := w.roundTrip(req)
	if err != nil {
		w.t.Fatal(err)
	}
	return resp
}

// expectClosed waits for the broker to close the connection without
// sending anything.
func (w *wireConn) expectClosed(timeout time.Duration) error {
	frame, err := w.readFrame(timeout)
	switch {
	case err == nil:
		return fmt.Errorf("got a %d-byte response, want the connection closed", len(frame))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return nil
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("connection still open after %s", timeout)
	}
	return nil // a reset is a close too
}

// splitResponseHeader returns the body after a v0 (correlation id) or v1
// (correlation id, tagged fields) response header.
func splitResponseHeader(frame []byte, flexible bool) (body []byte, corr int32, err error) {
	if len(frame) < 4 {
		return nil, 0, fmt.Errorf("response header: %d bytes", len(frame))
	}
	corr = int32(binary.BigEndian.Uint32(frame))
	rest := frame[4:]
	if !flexible {
		return rest, corr, nil
	}
	n, k := binary.Uvarint(rest)
	if k <= 0 {
		return nil, corr, errors.New("response header: bad tag count")
	}
	rest = rest[k:]
	for range n {
		if _, k = binary.Uvarint(rest); k <= 0 {
			return nil, corr, errors.New("response header: bad tag")
		}
		rest = rest[k:]
		size, k := binary.Uvarint(rest)
		if k <= 0 || uint64(len(rest)-k) < size {
			return nil, corr, errors.New("response header: bad tag size")
		}
		rest = rest[k+int(size):]
	}
	return rest, corr, nil
}

// buildBatch builds a RecordBatch v2 with n records whose values are
// "<prefix>-<i>", timestamps base+i.
func buildBatch(t testing.TB, h record.BatchHeader, prefix string, n int) []byte {
	t.Helper()
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{OffsetDelta: int32(i), TimestampDelta: int64(i),
			Value: fmt.Appendf(nil, "%s-%d", prefix, i)}
	}
	return buildRecords(t, h, recs)
}

func buildRecords(t testing.TB, h record.BatchHeader, recs []record.Record) []byte {
	t.Helper()
	if h.BaseTimestamp == 0 {
		h.BaseTimestamp = time.Now().UnixMilli()
	}
	out, err := record.Build(nil, h, recs)
	if err != nil {
		t.Fatalf("build batch: %v", err)
	}
	return out
}

// plainHeader is the header of a batch without a producer id.
func plainHeader() record.BatchHeader {
	return record.BatchHeader{ProducerID: record.NoProducerID, ProducerEpoch: -1, BaseSequence: record.NoSequence,
		PartitionLeaderEpoch: record.NoPartitionLeaderEpoch}
}

// idempotentHeader is the header of an idempotent producer's batch.
func idempotentHeader(pid int64, epoch int16, seq int32) record.BatchHeader {
	return record.BatchHeader{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq,
		PartitionLeaderEpoch: record.NoPartitionLeaderEpoch}
}

// produceReq is a one-partition produce request at version v.
func produceReq(v int16, acks int16, topic string, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(v)
	req.Acks = acks
	req.TimeoutMillis = 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// producePartition sends a one-partition produce (v11, acks=all unless
// acks says otherwise) and returns that partition's response.
func (w *wireConn) producePartition(acks int16, topic string, partition int32, records []byte) kmsg.ProduceResponseTopicPartition {
	w.t.Helper()
	return w.produceV(11, acks, topic, partition, records)
}

func (w *wireConn) produceV(v, acks int16, topic string, partition int32, records []byte) kmsg.ProduceResponseTopicPartition {
	w.t.Helper()
	resp := w.mustRoundTrip(produceReq(v, acks, topic, partition, records)).(*kmsg.ProduceResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		w.t.Fatalf("produce response has %d topics, want 1 with 1 partition: %+v", len(resp.Topics), resp)
	}
	return resp.Topics[0].Partitions[0]
}

// createTopicWire creates a topic over the wire and fails the test unless
// it succeeds.
func (w *wireConn) createTopic(name string, partitions int32, configs map[string]string) [16]byte {
	w.t.Helper()
	rt := w.createTopicResult(name, partitions, 1, configs)
	if rt.ErrorCode != 0 {
		msg := ""
		if rt.ErrorMessage != nil {
			msg = *rt.ErrorMessage
		}
		w.t.Fatalf("create topic %q: error %d (%s)", name, rt.ErrorCode, msg)
	}
	return rt.TopicID
}

func (w *wireConn) createTopicResult(name string, partitions int32, rf int16, configs map[string]string) kmsg.CreateTopicsResponseTopic {
	w.t.Helper()
	return w.createTopicWith(name, partitions, rf, nil, configs)
}

// createTopicResultAssigned creates a topic with a replica assignment per
// partition.
func (w *wireConn) createTopicResultAssigned(name string, assignments [][]int32, configs map[string]string) kmsg.CreateTopicsResponseTopic {
	w.t.Helper()
	return w.createTopicWith(name, -1, -1, assignments, configs)
}

func (w *wireConn) createTopicWith(name string, partitions int32, rf int16, assignments [][]int32, configs map[string]string) kmsg.CreateTopicsResponseTopic {
	w.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = 30000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, rf
	for p, replicas := range assignments {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), replicas
		t.ReplicaAssignment = append(t.ReplicaAssignment, a)
	}
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		t.Configs = append(t.Configs, c)
	}
	req.Topics = append(req.Topics, t)
	resp := w.mustRoundTrip(req).(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != 1 {
		w.t.Fatalf("create topics response has %d topics, want 1", len(resp.Topics))
	}
	return resp.Topics[0]
}

// initProducerID asks for an idempotent producer id.
func (w *wireConn) initProducerID() (int64, int16) {
	w.t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.SetVersion(4)
	req.TransactionTimeoutMillis = 60000
	req.ProducerID, req.ProducerEpoch = -1, -1
	resp := w.mustRoundTrip(req).(*kmsg.InitProducerIDResponse)
	if resp.ErrorCode != 0 {
		w.t.Fatalf("init producer id: error %d", resp.ErrorCode)
	}
	return resp.ProducerID, resp.ProducerEpoch
}

// handedOut are the ports freePort returned: a test's child broker may be
// down (between a kill and its restart) while another test looks for a
// port, so a port is never handed out twice in one process.
var handedOut struct {
	sync.Mutex
	m map[int]bool
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago,
// for a process that must bind the same port again after a restart. It is
// below the kernel's ephemeral range (ip_local_port_range), so neither a
// listener on port 0 nor an outgoing connection of another test can take
// it in between.
func freePort(t testing.TB) int {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	const first = 10000
	if low <= first+1000 {
		low = 65536 // an unusual range: fall back to any port
	}
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 1000 {
		port := first + rand.IntN(low-first)
		if low == 65536 {
			port = 0
		}
		if handedOut.m[port] {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		port = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if handedOut.m == nil {
			handedOut.m = map[int]bool{}
		}
		handedOut.m[port] = true
		return port
	}
	t.Fatal("no free port found")
	return 0
}
