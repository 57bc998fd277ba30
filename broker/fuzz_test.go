package broker

import (
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
)

// FuzzRequest feeds arbitrary bytes as one request frame (header and body,
// without the size prefix) through the broker's decode and handler path,
// against a running in-process broker. Whatever the bytes, the broker
// answers with a well-formed frame for the request's correlation id, or
// decides to close the connection; it never panics or hangs.
//
// The seed corpus in testdata/fuzz/FuzzRequest holds a valid request for
// every served API key at its lowest and highest version.
//
//	go test -run '^$' -fuzz FuzzRequest -parallel 2 ./broker/
func FuzzRequest(f *testing.F) {
	b := startBroker(f, func(c *Config) {
		c.Groups.InitialRebalanceDelay = 0
		c.Groups.MinSessionTimeout, c.Groups.MaxSessionTimeout = 100*time.Millisecond, time.Second
		c.AutoCreateTopicsEnable = false
	})
	w := dialWire(f, b)
	w.createTopic("fuzz", 2, nil)

	client, server := net.Pipe()
	f.Cleanup(func() { client.Close(); server.Close() })
	c := &conn{b: b, nc: server, listener: "PLAINTEXT", out: make(chan *outFrame, 1), logger: b.logger}

	f.Fuzz(func(t *testing.T, frame []byte) {
		if createsManyPartitions(frame) {
			t.Skip("would write thousands of partition logs")
		}
		// Handlers wait at most this long (long polls, rebalances with a
		// short timeout); a hang beyond it is a finding.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		done := make(chan struct{})
		var out *outFrame
		var err error
		go func() {
			defer close(done)
			out, _, err = c.handle(ctx, frame, time.Now())
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("request %x not handled after 30s", frame)
		}
		if err != nil || out == nil {
			return // the connection would be closed, or acks=0
		}
		out = out.ready(false)
		resp, err := out.bytes()
		out.release()
		if err != nil {
			t.Fatalf("read the response's records: %v", err)
		}
		if len(resp) < 8 || int(binary.BigEndian.Uint32(resp)) != len(resp)-4 {
			t.Fatalf("malformed response frame of %d bytes", len(resp))
		}
		if len(frame) >= 8 && binary.BigEndian.Uint32(resp[4:]) != binary.BigEndian.Uint32(frame[4:]) {
			t.Fatalf("response correlation id %x, request's %x", resp[4:8], frame[4:8])
		}
	})
}

// createsManyPartitions reports whether frame is a CreateTopics or
// CreatePartitions request that would really create more than a handful of
// partitions: legal, but each is a log on disk, which a fuzzer would pile
// up by the thousand.
func createsManyPartitions(frame []byte) bool {
	if len(frame) < 4 {
		return false
	}
	hdr, body, err := protocol.ParseRequestHeader(frame)
	if err != nil || (hdr.APIKey != 19 && hdr.APIKey != 37) {
		return false
	}
	req := kmsg.RequestForKey(hdr.APIKey)
	if hdr.APIVersion < 0 || hdr.APIVersion > req.MaxVersion() {
		return false
	}
	req.SetVersion(hdr.APIVersion)
	if req.ReadFrom(body) != nil {
		return false
	}
	total := 0
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		if r.ValidateOnly {
			return false
		}
		for _, t := range r.Topics {
			total += max(int(t.NumPartitions), len(t.ReplicaAssignment), 1)
		}
	case *kmsg.CreatePartitionsRequest:
		if r.ValidateOnly {
			return false
		}
		for _, t := range r.Topics {
			total += max(int(t.Count), 0)
		}
	}
	return total > 16
}
