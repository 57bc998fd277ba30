package broker

// ApiVersions advertises exactly the handlers the broker has, at versions
// kmsg can decode and that kafka-apis.md (the shared table of Kafka 4.x's
// client-facing APIs) lists; requests the broker does not serve close only
// their own connection.

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
)

// kafkaAPIs is the min and max version of every API in
// /work/shared/kafka-apis.md (Apache Kafka 4.2's broker listener, min
// versions after KIP-896), by key. A served API must match its row, with
// two adjustments that the doc itself states: Produce is advertised from
// v0 although v0-2 are refused (Kafka 4 does the same for librdkafka,
// KAFKA-18659; "Behaviours" section), and no max is above what kmsg can
// decode (InitProducerId v6, KIP-939, is beyond kmsg v1.15.1).
var kafkaAPIs = map[int16]struct{ min, max int16 }{
	// core
	0: {3, 13}, 1: {4, 18}, 2: {1, 11}, 3: {0, 13}, 18: {0, 4}, 60: {0, 2}, 75: {0, 0}, 23: {2, 4},
	// topic admin & configs
	19: {2, 7}, 20: {1, 6}, 21: {0, 2}, 37: {0, 3}, 32: {1, 4}, 33: {0, 2}, 44: {0, 1}, 74: {0, 1},
	35: {1, 4}, 34: {1, 2}, 43: {0, 2}, 45: {0, 1}, 46: {0, 0}, 57: {0, 2}, 61: {0, 0},
	// classic consumer groups
	8: {2, 10}, 9: {1, 10}, 10: {0, 6}, 11: {0, 9}, 12: {0, 4}, 13: {0, 5}, 14: {0, 5}, 15: {0, 6},
	16: {0, 5}, 42: {0, 2}, 47: {0, 0},
	// new consumer groups & streams groups
	68: {0, 1}, 69: {0, 1}, 88: {0, 0}, 89: {0, 0},
	// share groups
	76: {1, 1}, 77: {1, 1}, 78: {1, 2}, 79: {1, 2}, 90: {0, 1}, 91: {0, 0}, 92: {0, 0},
	// idempotence & transactions
	22: {0, 6}, 24: {0, 5}, 25: {0, 4}, 26: {0, 5}, 27: {1, 2}, 28: {0, 5}, 65: {0, 0}, 66: {0, 2},
	// security
	17: {0, 1}, 36: {0, 2}, 29: {1, 3}, 30: {1, 3}, 31: {1, 3}, 50: {0, 0}, 51: {0, 0},
	38: {1, 3}, 39: {1, 2}, 40: {1, 2}, 41: {1, 3}, 48: {0, 1}, 49: {0, 1},
	// KRaft quorum
	55: {0, 2}, 80: {0, 1}, 81: {0, 0}, 64: {0, 0},
	// client telemetry
	71: {0, 0}, 72: {0, 0},
}

// expectedRange is what the broker should advertise for a key it serves.
func expectedRange(key int16) (protocol.VersionRange, bool) {
	doc, ok := kafkaAPIs[key]
	if !ok {
		return protocol.VersionRange{}, false
	}
	vr := protocol.VersionRange{Key: key, Min: doc.min, Max: min(doc.max, kmsg.RequestForKey(key).MaxVersion())}
	if key == 0 {
		vr.Min = 0
	}
	return vr, true
}

// handlerRanges is the handlers slice as ranges, sorted by key.
func handlerRanges(t *testing.T) []protocol.VersionRange {
	t.Helper()
	var out []protocol.VersionRange
	seen := map[int16]bool{}
	for _, h := range handlers {
		if seen[h.key] {
			t.Errorf("key %d (%s) has two handlers", h.key, kmsg.NameForKey(h.key))
		}
		seen[h.key] = true
		if h.handle == nil {
			t.Errorf("key %d (%s) has no handle function", h.key, kmsg.NameForKey(h.key))
		}
		out = append(out, protocol.VersionRange{Key: h.key, Min: h.min, Max: h.max})
	}
	slices.SortFunc(out, func(a, b protocol.VersionRange) int { return int(a.Key) - int(b.Key) })
	return out
}

func advertisedRanges(resp *kmsg.ApiVersionsResponse) []protocol.VersionRange {
	out := make([]protocol.VersionRange, 0, len(resp.ApiKeys))
	for _, k := range resp.ApiKeys {
		out = append(out, protocol.VersionRange{Key: k.ApiKey, Min: k.MinVersion, Max: k.MaxVersion})
	}
	return out
}

func TestAPIVersionsAdvertisesHandlers(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	want := handlerRanges(t)
	if got := b.apis.Ranges(); !slices.Equal(got, want) {
		t.Errorf("registry ranges %v, handlers %v", got, want)
	}
	for _, h := range handlers {
		if got := b.handlers[h.key]; got == nil || got.min != h.min || got.max != h.max {
			t.Errorf("key %d: broker's handler map has %+v", h.key, got)
		}
	}
	if len(b.handlers) != len(handlers)+len(internalHandlers) {
		t.Errorf("broker's handler map has %d entries, handlers %d and internal %d", len(b.handlers), len(handlers), len(internalHandlers))
	}

	// Each served range is within kmsg's and is the doc's.
	for _, vr := range want {
		req := kmsg.RequestForKey(vr.Key)
		if req == nil {
			t.Errorf("key %d is served but kmsg does not know it", vr.Key)
			continue
		}
		if vr.Min < 0 || vr.Min > vr.Max || vr.Max > req.MaxVersion() {
			t.Errorf("%s (key %d): v%d-%d, kmsg decodes up to v%d", kmsg.NameForKey(vr.Key), vr.Key, vr.Min, vr.Max, req.MaxVersion())
		}
		exp, ok := expectedRange(vr.Key)
		switch {
		case !ok:
			t.Errorf("%s (key %d) is served but is not a client API in kafka-apis.md", kmsg.NameForKey(vr.Key), vr.Key)
		case exp != vr:
			t.Errorf("%s (key %d): serves v%d-%d, kafka-apis.md says v%d-%d", kmsg.NameForKey(vr.Key), vr.Key, vr.Min, vr.Max, exp.Min, exp.Max)
		}
	}

	w := dialWire(t, b)
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(v)
		if v >= 3 {
			req.ClientSoftwareName, req.ClientSoftwareVersion = "gregor-test", "1.2.3"
		}
		resp := w.mustRoundTrip(req).(*kmsg.ApiVersionsResponse)
		if resp.ErrorCode != 0 {
			t.Errorf("ApiVersions v%d: error %d", v, resp.ErrorCode)
		}
		if got := advertisedRanges(resp); !slices.Equal(got, want) {
			t.Errorf("ApiVersions v%d advertises\n %v\nthe handlers are\n %v", v, got, want)
		}
		if v >= 1 && resp.ThrottleMillis != 0 {
			t.Errorf("ApiVersions v%d: throttle %d ms", v, resp.ThrottleMillis)
		}
	}

	// Kafka validates the client software fields (v3+).
	for _, sw := range [][2]string{{"bad name", "1.0"}, {"ok", "1.0!"}, {"", "1.0"}, {"-lead", "1.0"}} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(3)
		req.ClientSoftwareName, req.ClientSoftwareVersion = sw[0], sw[1]
		resp := w.mustRoundTrip(req).(*kmsg.ApiVersionsResponse)
		checkCode(t, fmt.Sprintf("ApiVersions v3 from %q %q", sw[0], sw[1]), resp.ErrorCode, protocol.InvalidRequest)
	}
}

// rawAPIVersions writes an ApiVersions request at version v by hand
// (header v1, or v2 with tagged fields when flexibleHeader) and decodes
// the response body as v0.
func rawAPIVersions(t *testing.T, w *wireConn, v int16, flexibleHeader bool, corr int32) *kmsg.ApiVersionsResponse {
	t.Helper()
	body := []byte{}
	body = binary.BigEndian.AppendUint16(body, 18)
	body = binary.BigEndian.AppendUint16(body, uint16(v))
	body = binary.BigEndian.AppendUint32(body, uint32(corr))
	body = binary.BigEndian.AppendUint16(body, 4)
	body = append(body, "test"...)
	if flexibleHeader {
		body = append(body, 0) // no tagged fields
	}
	// A body in the v3+ shape (compact strings, tags), which must not be
	// read anyway.
	body = append(body, 5, 'g', 'r', 'e', 'g', 1, 0)
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	frame = append(frame, body...)
	if err := w.writeRaw(frame); err != nil {
		t.Fatal(err)
	}
	resp, err := w.readFrame(10 * time.Second)
	if err != nil {
		t.Fatalf("ApiVersions v%d: read response: %v", v, err)
	}
	rest, gotCorr, err := splitResponseHeader(resp, false) // ApiVersions responses use header v0
	if err != nil {
		t.Fatal(err)
	}
	if gotCorr != corr {
		t.Fatalf("ApiVersions v%d: correlation id %d, want %d", v, gotCorr, corr)
	}
	out := kmsg.NewPtrApiVersionsResponse()
	out.SetVersion(0)
	if err := out.ReadFrom(rest); err != nil {
		t.Fatalf("ApiVersions v%d: response is not a v0 body: %v", v, err)
	}
	return out
}

// KIP-511: a version above ours gets a v0 response with
// UNSUPPORTED_VERSION and, as Kafka 4 answers, the range of ApiVersions
// alone, so the client can retry at one we serve.
func TestAPIVersionsAboveMax(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	vr, _ := b.apis.Lookup(protocol.APIVersionsKey)
	want := []protocol.VersionRange{vr}
	w := dialWire(t, b)
	corr := int32(100)
	for _, v := range []int16{vr.Max + 1, 5, 42, 32767} {
		if v <= vr.Max {
			continue
		}
		for _, flex := range []bool{false, true} {
			corr++
			resp := rawAPIVersions(t, w, v, flex, corr)
			checkCode(t, fmt.Sprintf("ApiVersions v%d", v), resp.ErrorCode, protocol.UnsupportedVersion)
			if got := advertisedRanges(resp); !slices.Equal(got, want) {
				t.Errorf("ApiVersions v%d advertises\n %v\nthe handlers are\n %v", v, got, want)
			}
		}
	}
	// The connection goes on, at a version we serve.
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(vr.Max)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "gregor-test", "1"
	if resp := w.mustRoundTrip(req).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Errorf("ApiVersions v%d after the unsupported ones: error %d", vr.Max, resp.ErrorCode)
	}
}

// A request the broker does not serve closes its connection, and only
// that one.
func TestUnsupportedRequestClosesConnection(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(c *Config) { c.SocketRequestMaxBytes = 1 << 20 })
	unserved := int16(-1)
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		if _, ok := b.apis.Lookup(k); !ok && kmsg.RequestForKey(k) != nil {
			unserved = k
			break
		}
	}
	produce, _ := b.apis.Lookup(0)
	fetch, _ := b.apis.Lookup(1)

	header := func(key, version int16) []byte {
		h := binary.BigEndian.AppendUint16(nil, uint16(key))
		h = binary.BigEndian.AppendUint16(h, uint16(version))
		h = binary.BigEndian.AppendUint32(h, 7)
		h = binary.BigEndian.AppendUint16(h, 0) // empty client id
		return append(h, 0)                     // tagged fields (if the header has them)
	}
	frame := func(body []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	}
	cases := []struct {
		what string
		raw  []byte
	}{
		{"unknown API key 999", frame(append(header(999, 0), make([]byte, 16)...))},
		{"unknown API key -1", frame(append(header(-1, 0), make([]byte, 16)...))},
		{fmt.Sprintf("Produce v%d (above our max)", produce.Max+1), frame(append(header(0, produce.Max+1), make([]byte, 16)...))},
		{"Produce v14", frame(append(header(0, 14), make([]byte, 16)...))},
		{fmt.Sprintf("Fetch v%d (below our min)", fetch.Min-1), frame(append(header(1, fetch.Min-1), make([]byte, 16)...))},
		{"a request body that does not decode", frame(header(3, 12))},
		{"a frame shorter than a request header", frame([]byte{0, 3, 0})},
		{"a negative frame size", []byte{0xff, 0xff, 0xff, 0xf0, 0, 0, 0, 0}},
		{"a frame above socket.request.max.bytes", binary.BigEndian.AppendUint32(nil, 2<<20)},
	}
	if unserved >= 0 {
		cases = append(cases, struct {
			what string
			raw  []byte
		}{fmt.Sprintf("%s (key %d, not served)", kmsg.NameForKey(unserved), unserved),
			frame(append(header(unserved, 0), make([]byte, 16)...))})
	}

	bystander := dialWire(t, b)
	for _, tc := range cases {
		w := dialWire(t, b)
		// The connection works before.
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(12)
		w.mustRoundTrip(req)
		if err := w.writeRaw(tc.raw); err != nil {
			t.Fatalf("%s: write: %v", tc.what, err)
		}
		if err := w.expectClosed(10 * time.Second); err != nil {
			t.Errorf("%s: %v", tc.what, err)
		}
		// Other connections, old and new, are served.
		req = kmsg.NewPtrMetadataRequest()
		req.SetVersion(12)
		if _, err := bystander.roundTrip(req); err != nil {
			t.Fatalf("after %s: an open connection failed: %v", tc.what, err)
		}
		fresh := dialWire(t, b)
		av := kmsg.NewPtrApiVersionsRequest()
		av.SetVersion(3)
		av.ClientSoftwareName, av.ClientSoftwareVersion = "gregor-test", "1"
		if resp, err := fresh.roundTrip(av); err != nil || resp.(*kmsg.ApiVersionsResponse).ErrorCode != 0 {
			t.Fatalf("after %s: a new connection failed: %v", tc.what, err)
		}
	}
}
