//go:build !race

package broker

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestSASLFloodRSS floods a broker process's SASL_PLAINTEXT listener with
// connections that never authenticate: wrong passwords, unknown
// mechanisms, requests before authentication, frames over
// sasl.server.max.receive.size, and thousands held open after ApiVersions.
// Each is answered with Kafka's error or closed, failures are logged at
// most once a second, and the broker's resident memory comes back to
// where it was, with a bounded peak. Not built with -race, whose shadow
// memory would be measured with the broker's.
func TestSASLFloodRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("a connection flood against a child broker process: not with -short")
	}
	spec := childBrokerSpec{Dir: t.TempDir(), KafkaPort: freePort(t), AdminPort: freePort(t), SASLPort: freePort(t),
		EtcdClientPort: freePort(t), EtcdPeerPort: freePort(t), Unlimited: true, RuntimeMetrics: true}
	logPath := filepath.Join(t.TempDir(), "child.log")
	child, _ := startChild(t, spec, logPath)
	addr := fmt.Sprintf("127.0.0.1:%d", spec.SASLPort)
	fmtr := kmsg.NewRequestFormatter(kmsg.FormatterClientID("flood"))
	frame := func(req kmsg.Request, v int16) []byte {
		req.SetVersion(v)
		return fmtr.AppendRequest(nil, req, 1)
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "PLAIN"
	handshake := frame(hs, 1)
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.SASLAuthBytes = []byte("\x00alice\x00wrong")
	wrongPassword := append(append([]byte{}, handshake...), frame(au, 2)...)
	gs := kmsg.NewPtrSASLHandshakeRequest()
	gs.Mechanism = "GSSAPI"
	oversized := make([]byte, 4, 4+600<<10)
	binary.BigEndian.PutUint32(oversized, 600<<10)
	oversized = append(oversized, make([]byte, 600<<10)...)
	attacks := [][]byte{wrongPassword, frame(gs, 1), frame(metadataReq(), 12), oversized}

	heapBefore, err := child.metric("go_memstats_heap_inuse_bytes")
	if err != nil {
		t.Fatal(err)
	}
	before := child.mustMem(t)
	var refused, closed, held atomic.Int64
	// Each attack is sent on a connection of its own and must end with the
	// broker closing it (after its answer, if it has one).
	attack := func(msg []byte) error {
		nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			return err
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := nc.Write(msg); err != nil && !strings.Contains(err.Error(), "reset") && !strings.Contains(err.Error(), "broken pipe") {
			return err
		}
		n, err := io.Copy(io.Discard, nc)
		if err != nil && !strings.Contains(err.Error(), "reset") {
			return fmt.Errorf("connection not closed by the broker: %w", err)
		}
		if n > 0 {
			refused.Add(1)
		}
		closed.Add(1)
		return nil
	}
	const nAttacks, hold = 8000, 3000
	var errs sync.Map
	start := time.Now()
	// Connections held open after ApiVersions, waiting to authenticate.
	var conns []net.Conn
	av := frame(kmsg.NewPtrApiVersionsRequest(), 3)
	for range hold {
		nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, nc)
		if _, err := nc.Write(av); err != nil {
			t.Fatal(err)
		}
		held.Add(1)
	}
	forEach(nAttacks, 16, func(i int) {
		if err := attack(attacks[i%len(attacks)]); err != nil {
			errs.Store(i%len(attacks), err)
		}
	})
	peak := child.mustMem(t)
	for _, nc := range conns {
		nc.Close()
	}
	took := time.Since(start)
	errs.Range(func(k, v any) bool {
		t.Errorf("attack %d: %v", k, v)
		return true
	})
	waitFor(t, 30*time.Second, "the connections to close", func() error {
		n, err := child.openConnections()
		if err == nil && n != 0 {
			err = fmt.Errorf("%d connections open", n)
		}
		return err
	})
	if err := child.alive(); err != nil {
		t.Fatal(err)
	}
	var heapAfter float64
	// The heap the flood left: what is still in use once the broker's
	// collector has run (RSS would also count what the runtime freed but
	// has not yet given back to the system).
	waitFor(t, 30*time.Second, "the heap to come back", func() error {
		var err error
		if heapAfter, err = child.metric("go_memstats_heap_inuse_bytes"); err == nil && heapAfter > heapBefore+16<<20 {
			err = fmt.Errorf("heap in use %s, %s before the flood", mib(int64(heapAfter)), mib(int64(heapBefore)))
		}
		return err
	})
	after := child.mustMem(t)
	logLines := strings.Count(readFile(logPath), "SASL authentication failed")
	t.Logf("%d attacks (%d answered before the close) and %d connections held after ApiVersions in %s; RSS before %s, with them held %s, after %s; heap in use before %s, after %s; %d failure log lines",
		closed.Load(), refused.Load(), held.Load(), took.Round(time.Millisecond), mib(before.rss), mib(peak.rss), mib(after.rss),
		mib(int64(heapBefore)), mib(int64(heapAfter)), logLines)
	if closed.Load() != nAttacks {
		t.Errorf("%d attacks ended with a close, want %d", closed.Load(), nAttacks)
	}
	if limit := int(took/time.Second) + 3; logLines > limit {
		t.Errorf("%d failure log lines in %s, want at most one a second (%d)", logLines, took, limit)
	}
	// A connection waiting to authenticate holds its goroutines' stacks
	// and a 4 KiB read buffer, not the 64 KiB one of an authenticated
	// connection.
	if per := (peak.rss - before.rss) / hold; per > 32<<10 {
		t.Errorf("each connection waiting to authenticate holds %d KiB (RSS %s with %d of them)", per>>10, mib(peak.rss), hold)
	}
}
