package broker

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// scrape is one read of the admin server's /metrics, in the text format.
type scrape []scrapedSample

type scrapedSample struct {
	name   string
	labels map[string]string
	value  float64
}

// scrapeMetrics fetches and parses /metrics. The parser knows just the
// text format's sample lines, which is all the broker's metrics need.
func scrapeMetrics(t *testing.T, addr string) scrape {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: status %d", resp.StatusCode)
	}
	var out scrape
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		var s scrapedSample
		var rest string
		if i := strings.IndexAny(line, "{ "); i >= 0 && line[i] == '{' {
			s.name = line[:i]
			j := strings.Index(line, "}")
			s.labels = map[string]string{}
			for _, kv := range strings.Split(line[i+1:j], ",") {
				k, v, _ := strings.Cut(kv, "=")
				s.labels[k] = strings.Trim(v, `"`)
			}
			rest = line[j+1:]
		} else {
			s.name, rest, _ = strings.Cut(line, " ")
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			t.Fatalf("scrape: no value in %q", line)
		}
		if s.value, err = strconv.ParseFloat(fields[0], 64); err != nil {
			t.Fatalf("scrape: value in %q: %v", line, err)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scrape: %v", err)
	}
	return out
}

// sum adds the samples named name whose labels include want; found is
// whether there was any.
func (s scrape) sum(name string, want map[string]string) (total float64, found bool) {
next:
	for _, m := range s {
		if m.name != name {
			continue
		}
		for k, v := range want {
			if m.labels[k] != v {
				continue next
			}
		}
		total += m.value
		found = true
	}
	return total, found
}

func getStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestMetricsWorkload runs produce, consume and a consumer group against a
// broker with its own registry and checks the numbers its admin server
// exports over HTTP.
func TestMetricsWorkload(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	b := startBroker(t, func(c *Config) {
		c.Registerer, c.Gatherer = reg, reg
		c.AdminListener = "127.0.0.1:0"
	})
	admin := b.AdminAddr()
	if got := getStatus(t, "http://"+admin+"/readyz"); got != http.StatusOK {
		t.Fatalf("/readyz after Start: status %d, want 200", got)
	}
	if got := getStatus(t, "http://"+admin+"/healthz"); got != http.StatusOK {
		t.Fatalf("/healthz: status %d, want 200", got)
	}

	ctx := testContext(t, time.Minute)
	const topic, partitions, perPartition = "metered", 3, 50
	cl := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < partitions*perPartition; i++ {
		r := &kgo.Record{Value: []byte(fmt.Sprintf("value-%d", i)), Partition: int32(i % partitions)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	cons := newClient(t, b, kgo.ConsumeTopics(topic), kgo.ConsumerGroup("metered-group"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	for got := 0; got < partitions*perPartition; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll after %d records: %v", got, err)
		}
		got += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}

	// A produce to a topic that does not exist answers
	// UNKNOWN_TOPIC_OR_PARTITION (3) for its partition.
	w := dialWire(t, b)
	preq := kmsg.NewPtrProduceRequest()
	preq.SetVersion(9)
	preq.Acks, preq.TimeoutMillis = -1, 1000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "no-such-topic"
	pt.Partitions = append(pt.Partitions, kmsg.NewProduceRequestTopicPartition())
	preq.Topics = append(preq.Topics, pt)
	if resp := w.mustRoundTrip(preq).(*kmsg.ProduceResponse); resp.Topics[0].Partitions[0].ErrorCode != 3 {
		t.Fatalf("produce to a missing topic: code %d, want 3", resp.Topics[0].Partitions[0].ErrorCode)
	}

	tl := map[string]string{"topic": topic}
	waitFor(t, 30*time.Second, "metrics after the workload", func() error {
		s := scrapeMetrics(t, admin)
		if got, _ := s.sum("gregor_topic_records_in_total", tl); got != partitions*perPartition {
			return fmt.Errorf("records in: got %v, want %d", got, partitions*perPartition)
		}
		if got, _ := s.sum("gregor_topic_bytes_in_total", tl); got <= 0 {
			return fmt.Errorf("bytes in: got %v, want > 0", got)
		}
		if got, _ := s.sum("gregor_topic_bytes_out_total", tl); got <= 0 {
			return fmt.Errorf("bytes out: got %v, want > 0", got)
		}
		for p := 0; p < partitions; p++ {
			pl := map[string]string{"topic": topic, "partition": strconv.Itoa(p)}
			for _, name := range []string{"gregor_log_end_offset", "gregor_log_high_watermark"} {
				if got, _ := s.sum(name, pl); got != perPartition {
					return fmt.Errorf("%s of partition %d: got %v, want %d", name, p, got, perPartition)
				}
			}
			if got, found := s.sum("gregor_log_last_stable_offset_lag", pl); !found || got != 0 {
				return fmt.Errorf("last stable offset lag of partition %d: got %v (exported: %v), want 0", p, got, found)
			}
			if got, _ := s.sum("gregor_log_size_bytes", pl); got <= 0 {
				return fmt.Errorf("log size of partition %d: got %v, want > 0", p, got)
			}
			if got, _ := s.sum("gregor_log_segments", pl); got < 1 {
				return fmt.Errorf("segments of partition %d: got %v, want >= 1", p, got)
			}
			gl := map[string]string{"group": "metered-group", "topic": topic, "partition": strconv.Itoa(p)}
			if got, found := s.sum("gregor_consumer_group_lag", gl); !found || got != 0 {
				return fmt.Errorf("lag of partition %d: got %v (exported: %v), want 0", p, got, found)
			}
		}
		if got, _ := s.sum("gregor_connections_created_total", map[string]string{"listener": "PLAINTEXT"}); got < 1 {
			return fmt.Errorf("connections created: got %v, want >= 1", got)
		}
		if got, _ := s.sum("gregor_request_errors_total", map[string]string{"api": "Produce", "code": "3"}); got != 1 {
			return fmt.Errorf("Produce errors with code 3: got %v, want 1", got)
		}
		if _, found := s.sum("gregor_storage_fsync_duration_seconds_count", nil); !found {
			return fmt.Errorf("no fsync latency histogram")
		}
		if got, _ := s.sum("gregor_storage_group_commit_logs_count", nil); got < 1 {
			return fmt.Errorf("group commits: got %v, want >= 1", got)
		}
		if err := checkRequestTimes(s, "Produce", partitions*perPartition); err != nil {
			return err
		}
		if got, _ := s.sum("gregor_fetch_wait_seconds_count", nil); got < 1 {
			return fmt.Errorf("fetch waits observed: got %v, want >= 1", got)
		}
		// kgo produces with acks=all, and every produce here waits for its fsync.
		if got, _ := s.sum("gregor_produce_wait_seconds_count", nil); got < partitions*perPartition {
			return fmt.Errorf("produce waits observed: got %v, want >= %d", got, partitions*perPartition)
		}
		if got, _ := s.sum("gregor_produce_wait_seconds_sum", nil); got <= 0 {
			return fmt.Errorf("produce wait sum: got %v, want > 0", got)
		}
		// Registering and creating the topic took etcd transactions.
		if got, _ := s.sum("gregor_etcd_request_duration_seconds_count", map[string]string{"op": "txn"}); got < 1 {
			return fmt.Errorf("etcd txn requests: got %v, want >= 1", got)
		}
		if got, found := s.sum("gregor_etcd_session_up", nil); !found || got != 1 {
			return fmt.Errorf("etcd session up: got %v (exported: %v), want 1", got, found)
		}
		// The log dir's file system: its size and what is left of it.
		dl := map[string]string{"dir": b.cfg.LogDirs[0]}
		total, found := s.sum("gregor_log_dir_total_bytes", dl)
		if !found || total <= 0 {
			return fmt.Errorf("log dir total bytes: got %v (exported: %v), want > 0", total, found)
		}
		if usable, found := s.sum("gregor_log_dir_usable_bytes", dl); !found || usable <= 0 || usable > total {
			return fmt.Errorf("log dir usable bytes: got %v (exported: %v), want in (0, %v]", usable, found, total)
		}
		// A single broker is its cluster's controller.
		if got, found := s.sum("gregor_controller_active", nil); !found || got != 1 {
			return fmt.Errorf("controller active: got %v (exported: %v), want 1", got, found)
		}
		return nil
	})

	w.nc.Close()
	waitFor(t, 10*time.Second, "a closed connection counted", func() error {
		s := scrapeMetrics(t, admin)
		if got, _ := s.sum("gregor_connections_closed_total", map[string]string{"listener": "PLAINTEXT"}); got < 1 {
			return fmt.Errorf("connections closed: got %v, want >= 1", got)
		}
		return nil
	})
}

// checkRequestTimes checks an API's queue, local and total time histograms:
// at least minCount samples each, and queue and local time summing to no
// more than the total, which contains both.
func checkRequestTimes(s scrape, api string, minCount int) error {
	al := map[string]string{"api": api}
	sums := map[string]float64{}
	for _, name := range []string{"gregor_request_queue_seconds", "gregor_request_local_seconds", "gregor_request_duration_seconds"} {
		if got, _ := s.sum(name+"_count", al); got < float64(minCount) {
			return fmt.Errorf("%s{api=%q} samples: got %v, want >= %d", name, api, got, minCount)
		}
		sum, _ := s.sum(name+"_sum", al)
		if sum < 0 {
			return fmt.Errorf("%s{api=%q} sum: got %v, want >= 0", name, api, sum)
		}
		sums[name] = sum
	}
	total := sums["gregor_request_duration_seconds"]
	if total <= 0 {
		return fmt.Errorf("gregor_request_duration_seconds{api=%q} sum: got %v, want > 0", api, total)
	}
	for _, part := range []string{"gregor_request_queue_seconds", "gregor_request_local_seconds"} {
		if sums[part] > total {
			return fmt.Errorf("%s{api=%q} sum %v exceeds the total time %v", part, api, sums[part], total)
		}
	}
	return nil
}

// TestReadyz checks that readiness follows Start and Close.
func TestReadyz(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.Listeners = []string{"PLAINTEXT://127.0.0.1:0"}
	cfg.LogDirs = []string{t.TempDir()}
	cfg.AdminListener = "127.0.0.1:0"
	cfg.EtcdClientAddr, cfg.EtcdPeerAddr = "127.0.0.1:0", "127.0.0.1:0"
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if b.Ready() {
		t.Fatal("ready before Start")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if !b.Ready() {
		t.Fatal("not ready after Start")
	}
	if got := getStatus(t, "http://"+b.AdminAddr()+"/readyz"); got != http.StatusOK {
		t.Fatalf("/readyz after Start: status %d, want 200", got)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if b.Ready() {
		t.Fatal("ready after Close")
	}
}

// TestReadyzDuringStart checks that the admin server answers while Start
// still waits (here on an etcd that is not there): /healthz 200, /readyz
// 503.
func TestReadyzDuringStart(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	adminAddr := ln.Addr().String()
	ln.Close()
	cfg := DefaultConfig()
	cfg.Listeners = []string{"PLAINTEXT://127.0.0.1:0"}
	cfg.LogDirs = []string{t.TempDir()}
	cfg.AdminListener = adminAddr
	cfg.EtcdEndpoints = []string{"127.0.0.1:1"} // nothing listens there
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan error, 1)
	go func() { started <- b.Start(ctx) }()
	waitFor(t, 10*time.Second, "/readyz answering 503 while Start waits", func() error {
		for _, c := range []struct {
			path string
			want int
		}{{"/readyz", http.StatusServiceUnavailable}, {"/healthz", http.StatusOK}} {
			resp, err := http.Get("http://" + adminAddr + c.path)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != c.want {
				return fmt.Errorf("%s: status %d, want %d", c.path, resp.StatusCode, c.want)
			}
		}
		return nil
	})
	cancel()
	if err := <-started; err == nil {
		t.Fatal("Start succeeded without etcd")
	}
}
