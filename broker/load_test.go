//go:build !race

package broker

// Connection load on a broker process: TestConnectionLoad holds 10,000
// idle Kafka connections (each has had one ApiVersions answered) while 250
// producers and 250 consumers work at once, then checks that every idle
// connection still answers. The broker runs in a child process
// (TestChildBroker, a re-execution of this test binary, as TestBrokerCrash
// does): 10,000 client and 10,000 server sockets would not fit under one
// process's open-file limit, and the broker's own memory and descriptors
// are read from /proc/<pid> without the test's mixed in.
//
// Not built with -race: the race detector allows 8128 live goroutines per
// process and the broker runs two per connection. `make test` runs these
// tests in a second, race-free go test.

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startChildBroker starts a broker process on a fresh data dir and free
// ports, with an admin server, without connection limits and with the Go
// runtime's metrics, and waits until it serves. It is killed when the test
// ends; its log is shown if the test failed.
func startChildBroker(t *testing.T) *childBroker {
	t.Helper()
	spec := childBrokerSpec{Dir: t.TempDir(), KafkaPort: freePort(t), AdminPort: freePort(t),
		EtcdClientPort: freePort(t), EtcdPeerPort: freePort(t), Unlimited: true, RuntimeMetrics: true}
	logPath := filepath.Join(t.TempDir(), "child.log")
	c, took := startChild(t, spec, logPath)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- child broker log (last lines)\n%s", tail(logPath, 40))
		}
	})
	t.Logf("child broker (pid %d) ready in %s", c.pid, took.Round(time.Millisecond))
	return c
}

// procMem is a process's resident memory, from /proc/<pid>/status.
type procMem struct {
	rss, hwm int64 // VmRSS and VmHWM (the peak of VmRSS), bytes
}

func (m procMem) String() string {
	return fmt.Sprintf("RSS %s (peak so far %s)", mib(m.rss), mib(m.hwm))
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func (c *childBroker) mem() (procMem, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.pid))
	if err != nil {
		return procMem{}, err
	}
	var m procMem
	for line := range strings.Lines(string(raw)) {
		name, val, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		f := strings.Fields(val) // "123456 kB"
		if len(f) != 2 || f[1] != "kB" {
			return procMem{}, fmt.Errorf("/proc/%d/status: %s line %q", c.pid, name, line)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return procMem{}, fmt.Errorf("/proc/%d/status: %s: %w", c.pid, name, err)
		}
		if name == "VmRSS" {
			m.rss = kb << 10
		} else {
			m.hwm = kb << 10
		}
	}
	if m.rss == 0 || m.hwm == 0 {
		return procMem{}, fmt.Errorf("/proc/%d/status has no VmRSS or VmHWM", c.pid)
	}
	return m, nil
}

func (c *childBroker) mustMem(t *testing.T) procMem {
	t.Helper()
	m, err := c.mem()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// fds is the number of the process's open file descriptors.
func (c *childBroker) fds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", c.pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// metric is a gauge from the child's /metrics.
func (c *childBroker) metric(name string) (float64, error) {
	cl := http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", c.spec.AdminPort))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no %s in /metrics", name)
}

// openConnections is the broker's own count of open client connections.
func (c *childBroker) openConnections() (int, error) {
	n, err := c.metric("gregor_connections_open")
	return int(n), err
}

// brokerErrors are the child's log lines at level ERROR, and its panics.
func (c *childBroker) brokerErrors() []string {
	var out []string
	for line := range strings.Lines(readFile(c.logPath)) {
		if strings.Contains(line, "level=ERROR") || strings.HasPrefix(line, "panic:") || strings.HasPrefix(line, "fatal error:") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// errorList collects errors from many goroutines, keeping the first few.
type errorList struct {
	mu struct {
		sync.Mutex
		n     int
		first []string
	}
}

func (e *errorList) add(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.mu.n++
	if len(e.mu.first) < 10 {
		e.mu.first = append(e.mu.first, fmt.Sprintf(format, args...))
	}
}

func (e *errorList) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.mu.n
}

// list returns the number of errors and the first few.
func (e *errorList) list() (int, []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.mu.n, slices.Clone(e.mu.first)
}

// check fails the test with the errors collected, if any.
func (e *errorList) check(t *testing.T, what string) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mu.n == 0 {
		return
	}
	t.Errorf("%s: %d errors; the first:\n  %s", what, e.mu.n, strings.Join(e.mu.first, "\n  "))
}

// apiVersions sends an ApiVersions v3 request with correlation id corr on
// nc and reads its answer, which must be for corr and without error.
func apiVersions(nc net.Conn, corr int32, timeout time.Duration) (*kmsg.ApiVersionsResponse, error) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "gregor-load-test", "1"
	fmtr := kmsg.NewRequestFormatter(kmsg.FormatterClientID("gregor-load-test"))
	nc.SetDeadline(time.Now().Add(timeout))
	defer nc.SetDeadline(time.Time{})
	if _, err := nc.Write(fmtr.AppendRequest(nil, req, corr)); err != nil {
		return nil, fmt.Errorf("write ApiVersions: %w", err)
	}
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		return nil, fmt.Errorf("read ApiVersions response: %w", err)
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 1<<20 {
		return nil, fmt.Errorf("ApiVersions response frame size %d", n)
	}
	frame := make([]byte, n)
	if _, err := io.ReadFull(nc, frame); err != nil {
		return nil, fmt.Errorf("read ApiVersions response: %w", err)
	}
	// ApiVersions responses keep the v0 header (KIP-511): only the
	// correlation id.
	if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
		return nil, fmt.Errorf("ApiVersions response for correlation id %d, want %d", got, corr)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	if err := resp.ReadFrom(frame[4:]); err != nil {
		return nil, fmt.Errorf("decode ApiVersions response: %w", err)
	}
	if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		return nil, fmt.Errorf("ApiVersions response: error %d, %d API keys", resp.ErrorCode, len(resp.ApiKeys))
	}
	return resp, nil
}

// forEach runs fn(i) for i in [0, n) on workers goroutines.
func forEach(n, workers int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		})
	}
	wg.Wait()
}

const (
	loadIdleConns  = 10_000
	loadProducers  = 250
	loadConsumers  = 250
	loadTopics     = 5
	loadPartitions = 4
	loadRounds     = 8 // produce requests per producer
	loadPerRound   = 5 // records per produce request
	loadPause      = 300 * time.Millisecond
	loadValueBytes = 100
)

func loadValue(producer, round, i int) []byte {
	v := fmt.Appendf(nil, "load-p%03d-r%02d-%02d-", producer, round, i)
	for len(v) < loadValueBytes {
		v = append(v, byte('a'+len(v)%26))
	}
	return v
}

func TestConnectionLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 connections and 500 clients against a child broker process: not with -short")
	}
	began := time.Now()
	child := startChildBroker(t)
	ctx := testContext(t, 4*time.Minute)
	addr := child.addr()

	adminCl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(adminCl.Close)
	topics := make([]string, loadTopics)
	for i := range topics {
		topics[i] = fmt.Sprintf("load-%d", i)
	}
	created, err := kadm.NewClient(adminCl).CreateTopics(ctx, loadPartitions, 1, nil, topics...)
	if err != nil {
		t.Fatal(err)
	}
	if err := created.Error(); err != nil {
		t.Fatalf("create topics: %v", err)
	}
	adminCl.Close()
	memBefore, fdsBefore := child.mustMem(t), child.fds(t)
	t.Logf("before the connections: %s, %d fds", memBefore, fdsBefore)

	// The idle connections: each a Kafka connection that has had its
	// ApiVersions answered, as a client's first request.
	idle := make([]net.Conn, loadIdleConns)
	t.Cleanup(func() {
		for _, nc := range idle {
			if nc != nil {
				nc.Close()
			}
		}
	})
	var dialErrs errorList
	dialStart := time.Now()
	forEach(loadIdleConns, 64, func(i int) {
		nc, err := net.DialTimeout("tcp", addr, 30*time.Second)
		if err != nil {
			dialErrs.add("idle connection %d: %v", i, err)
			return
		}
		idle[i] = nc
		if _, err := apiVersions(nc, 1, 30*time.Second); err != nil {
			dialErrs.add("idle connection %d: %v", i, err)
		}
	})
	dialErrs.check(t, "opening the idle connections")
	if t.Failed() {
		t.FailNow()
	}
	dialTook := time.Since(dialStart)
	waitFor(t, 30*time.Second, "the broker to count the idle connections", func() error {
		n, err := child.openConnections()
		if err == nil && n < loadIdleConns {
			err = fmt.Errorf("the broker counts %d open connections, want at least %d", n, loadIdleConns)
		}
		return err
	})
	idleConns, _ := child.openConnections()
	memIdle, fdsIdle := child.mustMem(t), child.fds(t)
	t.Logf("%d idle connections opened, each with an ApiVersions answered, in %s; the broker counts %d connections; %s, %d fds",
		loadIdleConns, dialTook.Round(time.Millisecond), idleConns, memIdle, fdsIdle)

	// The active phase: every producer and consumer client exists and
	// works at the same time. Producer p writes to topic p%loadTopics;
	// consumer c reads topic c%loadTopics from the start until it has
	// every record the producers of that topic write.
	perTopic := loadProducers / loadTopics * loadRounds * loadPerRound
	var (
		errs               errorList
		produced, consumed atomic.Int64
		peakRSS            atomic.Int64
		peakConns          atomic.Int64
		wg                 sync.WaitGroup
		sampling           = make(chan struct{})
		samplerDone        = make(chan struct{})
	)
	go func() {
		defer close(samplerDone)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			if m, err := child.mem(); err == nil && m.rss > peakRSS.Load() {
				peakRSS.Store(m.rss)
			}
			// /metrics less often: serving it allocates in the broker.
			if i%5 == 0 {
				if n, err := child.openConnections(); err == nil && int64(n) > peakConns.Load() {
					peakConns.Store(int64(n))
				}
			}
			select {
			case <-sampling:
				return
			case <-tick.C:
			}
		}
	}()
	var clients []*kgo.Client
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()
	activeStart := time.Now()
	for p := range loadProducers {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topics[p%loadTopics]),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ClientID(fmt.Sprintf("load-producer-%d", p)))
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, cl)
		wg.Go(func() {
			for r := range loadRounds {
				recs := make([]*kgo.Record, loadPerRound)
				for i := range recs {
					recs[i] = &kgo.Record{Value: loadValue(p, r, i)}
				}
				if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
					errs.add("producer %d round %d: %v", p, r, err)
					return
				}
				produced.Add(loadPerRound)
				time.Sleep(loadPause) // spreads each producer's requests over a few seconds
			}
		})
	}
	for c := range loadConsumers {
		topic := topics[c%loadTopics]
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(time.Second),
			kgo.ClientID(fmt.Sprintf("load-consumer-%d", c)))
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, cl)
		wg.Go(func() {
			next := map[int32]int64{}
			got := 0
			for got < perTopic {
				fs := cl.PollFetches(ctx)
				if ctx.Err() != nil {
					errs.add("consumer %d: %d of %d records of %s before the deadline", c, got, perTopic, topic)
					return
				}
				fs.EachError(func(_ string, p int32, err error) {
					errs.add("consumer %d: fetch %s/%d: %v", c, topic, p, err)
				})
				fs.EachRecord(func(r *kgo.Record) {
					if r.Offset != next[r.Partition] {
						errs.add("consumer %d: %s/%d offset %d after %d", c, topic, r.Partition, r.Offset, next[r.Partition]-1)
					}
					next[r.Partition] = r.Offset + 1
					got++
				})
			}
			consumed.Add(int64(got))
			if got != perTopic {
				errs.add("consumer %d: %d records of %s, want %d", c, got, topic, perTopic)
			}
		})
	}
	wg.Wait()
	activeTook := time.Since(activeStart)
	close(sampling)
	<-samplerDone
	errs.check(t, "the active clients")
	for _, cl := range clients {
		cl.Close()
	}
	clients = nil
	memActive := child.mustMem(t)
	t.Logf("%d producers and %d consumers at once: %d records produced (acks=all), %d consumed, in %s; the broker counted up to %d connections, RSS peaked at %s (sampled every 100ms, connections every 500ms; VmHWM %s)",
		loadProducers, loadConsumers, produced.Load(), consumed.Load(), activeTook.Round(time.Millisecond),
		peakConns.Load(), mib(peakRSS.Load()), mib(memActive.hwm))
	if want := int64(loadProducers * loadRounds * loadPerRound); produced.Load() != want {
		t.Errorf("%d records produced, want %d", produced.Load(), want)
	}
	if want := int64(loadConsumers * perTopic); consumed.Load() != want {
		t.Errorf("%d records consumed, want %d", consumed.Load(), want)
	}

	// Every idle connection was kept through the active phase and is
	// still served.
	var idleErrs errorList
	checkStart := time.Now()
	forEach(loadIdleConns, 64, func(i int) {
		if _, err := apiVersions(idle[i], 2, 30*time.Second); err != nil {
			idleErrs.add("idle connection %d after the active phase: %v", i, err)
		}
	})
	idleErrs.check(t, "the idle connections after the active phase")
	t.Logf("%d idle connections answered ApiVersions again after the active phase (in %s); %d failed",
		loadIdleConns, time.Since(checkStart).Round(time.Millisecond), idleErrs.count())

	if errs := child.brokerErrors(); len(errs) > 0 {
		t.Errorf("the broker logged %d errors; the first: %s", len(errs), errs[0])
	}
	if err := child.alive(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the active clients' connections to close", func() error {
		n, err := child.openConnections()
		if err == nil && n != loadIdleConns {
			err = fmt.Errorf("the broker counts %d open connections, want the %d idle ones", n, loadIdleConns)
		}
		return err
	})
	memEnd, fdsEnd := child.mustMem(t), child.fds(t)
	t.Logf("summary: broker RSS %s before the connections, %s with %d idle, peak %s with the %d active clients (VmHWM %s), %s at the end (the clients gone, the idle connections open); fds %d before, %d with the idle connections, %d at the end; wall time %s",
		mib(memBefore.rss), mib(memIdle.rss), loadIdleConns, mib(peakRSS.Load()), loadProducers+loadConsumers,
		mib(memEnd.hwm), mib(memEnd.rss), fdsBefore, fdsIdle, fdsEnd, time.Since(began).Round(time.Millisecond))
}
