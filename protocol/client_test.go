package protocol

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A request framed by AppendRequest parses back with the server's header
// parser, and a response framed as the server frames it parses back with
// ParseResponseHeader.
func TestClientFraming(t *testing.T) {
	for _, version := range []int16{4, 11, 12, 16} {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(version)
		req.ReplicaID, req.ReplicaState.ID, req.MaxWaitMillis = 2, 2, 500
		frame, err := AppendRequest(nil, 77, "gregor-replica-2", req)
		if err != nil {
			t.Fatal(err)
		}
		if int(binary.BigEndian.Uint32(frame)) != len(frame)-4 {
			t.Fatalf("v%d: size %d for %d bytes", version, binary.BigEndian.Uint32(frame), len(frame)-4)
		}
		hdr, body, err := ParseRequestHeader(frame[4:])
		if err != nil {
			t.Fatalf("v%d: %v", version, err)
		}
		if hdr.APIKey != 1 || hdr.APIVersion != version || hdr.CorrelationID != 77 || hdr.ClientID == nil || *hdr.ClientID != "gregor-replica-2" {
			t.Fatalf("v%d: header %+v", version, hdr)
		}
		back := kmsg.NewPtrFetchRequest()
		back.SetVersion(version)
		err = back.ReadFrom(body)
		replica := back.ReplicaID
		if version >= 15 {
			replica = back.ReplicaState.ID // the field moved in v15
		}
		if err != nil || replica != 2 || back.MaxWaitMillis != 500 {
			t.Fatalf("v%d: body %+v, %v", version, back, err)
		}

		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(version)
		resp.ThrottleMillis = 9
		out := AppendResponseHeader(nil, 77, ResponseHeaderFlexible(1, version))
		out = resp.AppendTo(out)
		id, rbody, err := ParseResponseHeader(out, 1, version)
		if err != nil || id != 77 {
			t.Fatalf("v%d: response header %d, %v", version, id, err)
		}
		got := kmsg.NewPtrFetchResponse()
		got.SetVersion(version)
		if err := got.ReadFrom(rbody); err != nil || got.ThrottleMillis != 9 {
			t.Fatalf("v%d: response body %+v, %v", version, got, err)
		}
	}
}

// FuzzParseResponseHeader: any bytes give a header and body within the
// input, or an error; never a panic.
func FuzzParseResponseHeader(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0}, int16(1), int16(12))
	f.Add([]byte{0, 0, 0, 1, 1, 5, 2, 0, 0}, int16(1), int16(16))
	f.Add([]byte{0, 0, 0, 1}, int16(18), int16(3))
	f.Fuzz(func(t *testing.T, frame []byte, key, version int16) {
		_, body, err := ParseResponseHeader(frame, key, version)
		if err == nil && len(body) > len(frame) {
			t.Fatalf("body of %d bytes from a frame of %d", len(body), len(frame))
		}
	})
}
