package broker

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"

	"github.com/gregor-io/gregor/protocol"
)

// mountFullTmpfs mounts a 1 MiB tmpfs in a temp dir and fills it to the
// last byte with a file, whose path it returns with the dir's. Mounting
// needs root (CAP_SYS_ADMIN); without it the test is skipped.
func mountFullTmpfs(t *testing.T) (dir, filler string) {
	t.Helper()
	dir = t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (needs root): %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir, fillDir(t, dir)
}

// fillDir fills dir's file system to the last byte with a file, and
// returns the file's path.
func fillDir(t *testing.T, dir string) (filler string) {
	t.Helper()
	filler = filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for n := len(buf); n > 0; n /= 2 {
		for {
			if _, err := f.Write(buf[:n]); err != nil {
				break
			}
		}
	}
	return filler
}

// startDirsBroker starts a broker on the given log dirs (etcd's data in
// the first, or the external etcd at endpoints) with an admin listener.
func startDirsBroker(t *testing.T, nodeID int32, endpoints []string, dirs ...string) *Broker {
	t.Helper()
	b, err := tryStartWith(t, nodeID, endpoints, nil, dirs...)
	if err != nil {
		t.Fatalf("start broker on %v: %v", dirs, err)
	}
	return b
}

// readyz returns /readyz's status and body.
func readyz(t *testing.T, b *Broker) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + b.AdminAddr() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestCreateTopicOnFullDir creates a topic while the second of two log
// dirs is full to the last byte but not yet known to be. The partitions
// placed there meet ENOSPC, which takes the dir offline, and are created
// in the other dir: the topic is whole. The broker then starts again with
// the dir still full and once it has room, and serves every partition.
func TestCreateTopicOnFullDir(t *testing.T) {
	t.Parallel()
	full, filler := mountFullTmpfs(t)
	healthy := t.TempDir()
	// The dirs are stamped first (a dir whose stamp cannot be written
	// goes offline at the start); then the dir fills up.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	b := startDirsBroker(t, 1, nil, healthy, full)
	filler = fillDir(t, full)
	w := dialWire(t, b)
	rt := w.createTopicResult("half", 4, 1, nil)
	checkCode(t, "create a topic with a full log dir", rt.ErrorCode, protocol.None)
	for _, d := range w.describeLogDirs().Dirs {
		want, parts := protocol.None, 0
		for _, tp := range d.Topics {
			parts += len(tp.Partitions)
		}
		if filepath.Clean(d.Dir) == filepath.Clean(full) {
			want = protocol.KafkaStorageError
			if parts != 0 {
				t.Errorf("the full dir holds %d partitions, want 0", parts)
			}
		} else if parts != 4 {
			t.Errorf("the healthy dir holds %d partitions, want 4", parts)
		}
		checkCode(t, "DescribeLogDirs of "+d.Dir, d.ErrorCode, want)
	}
	if code, body := readyz(t, b); code != http.StatusServiceUnavailable || !strings.Contains(body, full) {
		t.Errorf("/readyz with a failed dir: %d %q, want 503 naming %s", code, body, full)
	}
	if err := b.Close(); err != nil && !strings.Contains(err.Error(), full) {
		t.Errorf("close broker: %v", err)
	}

	b = startDirsBroker(t, 1, nil, healthy, full) // still full
	if err := b.Close(); err != nil && !strings.Contains(err.Error(), full) {
		t.Errorf("close broker: %v", err) // the full dir's checkpoints may fail
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	b = startDirsBroker(t, 1, nil, healthy, full)
	defer b.Close()
	if code, body := readyz(t, b); code != http.StatusOK {
		t.Errorf("/readyz after the restart: %d %q, want 200", code, body)
	}
	w = dialWire(t, b)
	for p := range int32(4) {
		rp := w.producePartition(-1, "half", p, buildBatch(t, plainHeader(), fmt.Sprint(p), 2))
		checkCode(t, fmt.Sprintf("produce to partition %d after the restarts", p), rp.ErrorCode, protocol.None)
	}
}

// TestCreateTopicNoRoom creates a topic on a broker whose only log dir is
// full: it answers KAFKA_STORAGE_ERROR and the topic does not exist, so
// the broker starts again, and once the dir has room the same create
// succeeds. The broker keeps its registry in a second broker's embedded
// etcd, so that the full dir holds nothing but logs.
func TestCreateTopicNoRoom(t *testing.T) {
	t.Parallel()
	full, filler := mountFullTmpfs(t)
	host := startDirsBroker(t, 1, nil, t.TempDir())
	defer host.Close()
	endpoints := host.cluster.ClientURLs()

	b := startDirsBroker(t, 2, endpoints, full)
	w := dialWire(t, b)
	create := func() int16 {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(7)
		req.TimeoutMillis = 30000
		rqt := kmsg.NewCreateTopicsRequestTopic()
		rqt.Topic, rqt.NumPartitions, rqt.ReplicationFactor = "noroom", -1, -1
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = 0, []int32{2}
		rqt.ReplicaAssignment = append(rqt.ReplicaAssignment, ra)
		req.Topics = append(req.Topics, rqt)
		rt := w.mustRoundTrip(req).(*kmsg.CreateTopicsResponse).Topics[0]
		if rt.ErrorMessage != nil {
			t.Logf("create: error %d: %s", rt.ErrorCode, *rt.ErrorMessage)
		}
		return rt.ErrorCode
	}
	checkCode(t, "create a topic with no room for its log", create(), protocol.KafkaStorageError)
	if mt := w.metadataTopic(strPtr("noroom"), [16]byte{}, false); mt.ErrorCode != int16(protocol.UnknownTopicOrPartition) {
		t.Errorf("metadata of the topic whose create failed: error %d, want UNKNOWN_TOPIC_OR_PARTITION", mt.ErrorCode)
	}
	b.Close() //nolint:errcheck // its one dir is offline

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	b = startDirsBroker(t, 2, endpoints, full)
	defer b.Close()
	w = dialWire(t, b)
	checkCode(t, "create the topic again with room", create(), protocol.None)
}

func strPtr(s string) *string { return &s }
