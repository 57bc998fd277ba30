package broker

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"

	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/protocol/record"
)

// TestLogDirFull runs a broker with two log dirs, one of them a 2 MiB tmpfs,
// and produces until that one is full. The produce that meets ENOSPC gets
// KAFKA_STORAGE_ERROR and the dir goes offline: produce to and fetch from
// every partition in it answer KAFKA_STORAGE_ERROR, DescribeLogDirs reports
// it with that error, while the partitions of the other dir keep taking
// and serving records, every acknowledged one of them intact. Mounting the
// tmpfs needs root (CAP_SYS_ADMIN); without it the test is skipped.
func TestLogDirFull(t *testing.T) {
	t.Parallel()
	full := t.TempDir()
	if err := unix.Mount("tmpfs", full, "tmpfs", 0, "size=2m"); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (needs root): %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(full, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", full, err)
		}
	})
	healthy := t.TempDir()

	cfg := DefaultConfig()
	cfg.Listeners = []string{"PLAINTEXT://127.0.0.1:0"}
	cfg.LogDirs = []string{healthy, full} // the first holds etcd's data too
	cfg.AdminListener = "127.0.0.1:0"
	reg := prometheus.NewRegistry()
	cfg.Registerer, cfg.Gatherer = reg, reg
	cfg.EtcdClientAddr, cfg.EtcdPeerAddr = "127.0.0.1:0", "127.0.0.1:0"
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(func() {
		// Closing the logs of the offline dir fails; the rest must not.
		if err := b.Close(); err != nil && !strings.Contains(err.Error(), full) {
			t.Errorf("close broker: %v", err)
		}
	})

	w := dialWire(t, b)
	id := w.createTopic("fill", 4, nil)
	dirOf := map[int32]string{}
	for _, d := range w.describeLogDirs().Dirs {
		for _, tp := range d.Topics {
			for _, p := range tp.Partitions {
				dirOf[p.Partition] = d.Dir
			}
		}
	}
	var inFull, inHealthy []int32
	for p := range int32(4) {
		switch filepath.Clean(dirOf[p]) {
		case filepath.Clean(full):
			inFull = append(inFull, p)
		case filepath.Clean(healthy):
			inHealthy = append(inHealthy, p)
		default:
			t.Fatalf("partition %d in dir %q, want one of the two", p, dirOf[p])
		}
	}
	if len(inFull) == 0 || len(inHealthy) == 0 {
		t.Fatalf("partitions %v in the tmpfs and %v in the other dir: want both used", inFull, inHealthy)
	}

	value := strings.Repeat("v", 8<<10)
	acked := map[int32]int64{}
	produce := func(p int32, n int) kmsg.ProduceResponseTopicPartition {
		recs := make([]record.Record, 4)
		for i := range recs {
			recs[i] = record.Record{OffsetDelta: int32(i), Value: fmt.Appendf(nil, "%d-%d-%s", p, acked[p]+int64(i), value[:n])}
		}
		rp := w.producePartition(-1, "fill", p, buildRecords(t, plainHeader(), recs))
		if rp.ErrorCode == 0 {
			if rp.BaseOffset != acked[p] {
				t.Fatalf("partition %d: batch at %d, want %d", p, rp.BaseOffset, acked[p])
			}
			acked[p] += 4
		}
		return rp
	}

	// Fill the tmpfs through its first partition.
	var code int16
	for range 1000 {
		if code = produce(inFull[0], len(value)).ErrorCode; code != 0 {
			break
		}
	}
	checkCode(t, "the produce that filled the dir", code, protocol.KafkaStorageError)
	t.Logf("the tmpfs filled after %d records in partition %d", acked[inFull[0]], inFull[0])

	// Every partition of the full dir is offline; the others carry on.
	for _, p := range inFull {
		waitFor(t, 10*time.Second, fmt.Sprintf("partition %d offline", p), func() error {
			if c := produce(p, 10).ErrorCode; c != int16(protocol.KafkaStorageError) {
				return fmt.Errorf("produce answered %d", c)
			}
			return nil
		})
		_, fp := w.fetchPartition(12, "fill", id, p, 0)
		checkCode(t, fmt.Sprintf("fetch from partition %d in the offline dir", p), fp.ErrorCode, protocol.KafkaStorageError)
	}
	for _, p := range inHealthy {
		for range 50 {
			if rp := produce(p, 1000); rp.ErrorCode != 0 {
				t.Fatalf("partition %d in the healthy dir: produce error %d", p, rp.ErrorCode)
			}
		}
		var next int64
		for next < acked[p] {
			_, fp := w.fetchPartition(12, "fill", id, p, next)
			if fp.ErrorCode != 0 {
				t.Fatalf("fetch %d/%d: error %d", p, next, fp.ErrorCode)
			}
			before := next
			for buf := fp.RecordBatches; len(buf) > 0; {
				bt, rest, err := record.Parse(buf)
				if err != nil {
					break // a partial batch at the end of the response
				}
				buf = rest
				var scratch []byte
				err = record.ForEachRecord(bt, &scratch, func(off, _ int64, r *record.Record) error {
					if off != next {
						return fmt.Errorf("offset %d, want %d", off, next)
					}
					if want := fmt.Sprintf("%d-%d-", p, off); !strings.HasPrefix(string(r.Value), want) {
						return fmt.Errorf("offset %d holds %.20q, want prefix %q", off, r.Value, want)
					}
					next++
					return nil
				})
				if err != nil {
					t.Fatalf("partition %d: %v", p, err)
				}
			}
			if next == before {
				t.Fatalf("partition %d: fetch at %d returned nothing, %d acknowledged", p, next, acked[p])
			}
		}
	}

	// Metadata shows the full dir's replicas offline and leaderless, as
	// Kafka shows replicas in a failed dir; /readyz and the metrics say it.
	mt := w.metadataTopic(strPtr("fill"), [16]byte{}, false)
	for _, mp := range mt.Partitions {
		wantCode, wantLeader, wantOffline := protocol.None, int32(1), "[]"
		if slices.Contains(inFull, mp.Partition) {
			wantCode, wantLeader, wantOffline = protocol.LeaderNotAvailable, -1, "[1]"
		}
		checkCode(t, fmt.Sprintf("metadata of partition %d", mp.Partition), mp.ErrorCode, wantCode)
		if mp.Leader != wantLeader || fmt.Sprint(mp.OfflineReplicas) != wantOffline {
			t.Errorf("metadata of partition %d: leader %d, offline replicas %v; want %d, %s",
				mp.Partition, mp.Leader, mp.OfflineReplicas, wantLeader, wantOffline)
		}
	}
	if code, body := readyz(t, b); code != 503 || !strings.Contains(body, full) {
		t.Errorf("/readyz with a failed dir: %d %q, want 503 naming %s", code, body, full)
	}
	sc := scrapeMetrics(t, b.AdminAddr())
	if got, _ := sc.sum("gregor_log_dir_offline", map[string]string{"dir": full}); got != 1 {
		t.Errorf("gregor_log_dir_offline of the full dir: %v, want 1", got)
	}
	if got, found := sc.sum("gregor_log_dir_offline", map[string]string{"dir": healthy}); got != 0 || !found {
		t.Errorf("gregor_log_dir_offline of the healthy dir: %v (found %v), want 0", got, found)
	}
	if got, _ := sc.sum("gregor_partitions_offline", nil); got != float64(len(inFull)) {
		t.Errorf("gregor_partitions_offline: %v, want %d", got, len(inFull))
	}

	for _, d := range w.describeLogDirs().Dirs {
		want := protocol.None
		if filepath.Clean(d.Dir) == filepath.Clean(full) {
			want = protocol.KafkaStorageError
		}
		checkCode(t, "DescribeLogDirs of "+d.Dir, d.ErrorCode, want)
	}

	// The broker still answers Metadata and creates topics (in the healthy dir).
	if rt := w.createTopicResult("after", 2, 1, nil); rt.ErrorCode != 0 {
		t.Fatalf("create a topic after the dir went offline: error %d", rt.ErrorCode)
	}
	rp := w.producePartition(-1, "after", 0, buildBatch(t, plainHeader(), "after", 3))
	checkCode(t, "produce to a topic created after the dir went offline", rp.ErrorCode, protocol.None)
}

// describeLogDirs asks for every dir and partition.
func (w *wireConn) describeLogDirs() *kmsg.DescribeLogDirsResponse {
	w.t.Helper()
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.SetVersion(4)
	return w.mustRoundTrip(req).(*kmsg.DescribeLogDirsResponse)
}
