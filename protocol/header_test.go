package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// encodeRequest writes a request header the way the protocol specifies it,
// independently of the parser, followed by the request's body. tags, when
// the request is flexible, are written as (tag, value) pairs in order.
func encodeRequest(req kmsg.Request, correlationID int32, clientID *string, tags ...[]byte) []byte {
	key, version := req.Key(), req.GetVersion()
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(correlationID))
	if key == 7 && version == 0 { // ControlledShutdown v0: header v0
		return req.AppendTo(b)
	}
	if clientID == nil {
		b = binary.BigEndian.AppendUint16(b, 0xffff)
	} else {
		b = binary.BigEndian.AppendUint16(b, uint16(len(*clientID)))
		b = append(b, *clientID...)
	}
	if req.IsFlexible() {
		b = binary.AppendUvarint(b, uint64(len(tags)))
		for i, v := range tags {
			b = binary.AppendUvarint(b, uint64(i*3))
			b = binary.AppendUvarint(b, uint64(len(v)))
			b = append(b, v...)
		}
	}
	return req.AppendTo(b)
}

func newRequest(key, version int16) kmsg.Request {
	r := kmsg.RequestForKey(key)
	r.SetVersion(version)
	return r
}

func ptr(s string) *string { return &s }

func clientIDString(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}

func TestParseRequestHeaderV1(t *testing.T) {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(4)
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: ptr("orders")}}
	body := req.AppendTo(nil)

	for _, id := range []*string{ptr("my-client"), ptr(""), nil} {
		frame := encodeRequest(req, 77, id)
		h, gotBody, err := ParseRequestHeader(frame)
		if err != nil {
			t.Fatalf("client id %s: %v", clientIDString(id), err)
		}
		want := RequestHeader{APIKey: 3, APIVersion: 4, CorrelationID: 77}
		if h.APIKey != want.APIKey || h.APIVersion != want.APIVersion || h.CorrelationID != want.CorrelationID {
			t.Fatalf("got header %+v, want %+v", h, want)
		}
		if clientIDString(h.ClientID) != clientIDString(id) {
			t.Fatalf("got client id %s, want %s", clientIDString(h.ClientID), clientIDString(id))
		}
		if !bytes.Equal(gotBody, body) {
			t.Fatalf("client id %s: got body %x, want %x", clientIDString(id), gotBody, body)
		}
	}
}

// Kafka reads any negative length of a nullable string as null.
func TestParseRequestHeaderNegativeClientIDLength(t *testing.T) {
	frame := []byte{0, 3, 0, 4, 0, 0, 0, 1, 0x80, 0x00, 'b', 'o', 'd', 'y'}
	h, body, err := ParseRequestHeader(frame)
	if err != nil || h.ClientID != nil || string(body) != "body" {
		t.Fatalf("got %+v, body %q, err %v; want a null client id and body \"body\"", h, body, err)
	}
}

func TestParseRequestHeaderV2TaggedFields(t *testing.T) {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: ptr("orders")}}
	body := req.AppendTo(nil)

	for _, tags := range [][][]byte{nil, {[]byte("x")}, {{}, bytes.Repeat([]byte("t"), 300), []byte("last")}} {
		frame := encodeRequest(req, -5, ptr("c"), tags...)
		h, gotBody, err := ParseRequestHeader(frame)
		if err != nil {
			t.Fatalf("%d tags: %v", len(tags), err)
		}
		if h.APIKey != 3 || h.APIVersion != 12 || h.CorrelationID != -5 || clientIDString(h.ClientID) != "c" {
			t.Fatalf("%d tags: got header %+v", len(tags), h)
		}
		if !bytes.Equal(gotBody, body) {
			t.Fatalf("%d tags: got body %x, want %x", len(tags), gotBody, body)
		}
	}
}

func TestParseRequestHeaderControlledShutdownV0(t *testing.T) {
	req := kmsg.NewPtrControlledShutdownRequest()
	req.SetVersion(0)
	req.BrokerID = 3
	frame := encodeRequest(req, 9, ptr("ignored"))
	h, body, err := ParseRequestHeader(frame)
	if err != nil || h.ClientID != nil || !bytes.Equal(body, req.AppendTo(nil)) {
		t.Fatalf("got %+v, body %x, err %v; want header v0 and the body after 8 bytes", h, body, err)
	}
}

func TestParseRequestHeaderUnknownKey(t *testing.T) {
	for _, key := range []int16{-1, kmsg.MaxKey + 1, 1000, -32768} {
		frame := binary.BigEndian.AppendUint16(nil, uint16(key))
		frame = append(frame, 0, 1, 0, 0, 0, 42, 0, 0)
		h, body, err := ParseRequestHeader(frame)
		if !errors.Is(err, ErrUnknownAPIKey) {
			t.Fatalf("key %d: got %v, want ErrUnknownAPIKey", key, err)
		}
		if h.APIKey != key || h.APIVersion != 1 || h.CorrelationID != 42 || body != nil {
			t.Fatalf("key %d: got %+v and body %x; want the first three fields and no body", key, h, body)
		}
	}
}

func TestParseRequestHeaderVersionAboveKmsgMax(t *testing.T) {
	// Metadata at a version kmsg does not know yet: still flexible, so
	// the header is v2 and its tags are skipped.
	v := kmsg.NewPtrMetadataRequest().MaxVersion() + 5
	frame := []byte{0, 3, byte(v >> 8), byte(v), 0, 0, 0, 1, 0, 1, 'c', 1, 0, 2, 'h', 'i', 'B'}
	h, body, err := ParseRequestHeader(frame)
	if err != nil || h.APIVersion != v || string(body) != "B" {
		t.Fatalf("got %+v, body %q, err %v; want version %d and body \"B\"", h, body, err, v)
	}
}

// Every header cut short, at every byte, is an error and never a panic.
func TestParseRequestHeaderTruncatedEverywhere(t *testing.T) {
	cases := []struct {
		frame     []byte
		headerLen int
	}{
		{encodeRequest(newRequest(3, 4), 1, ptr("client-1")), 8 + 2 + 8},
		{encodeRequest(newRequest(3, 4), 1, nil), 8 + 2},
		{encodeRequest(newRequest(3, 12), 1, ptr("client-1"), []byte("v1"), bytes.Repeat([]byte{1}, 200)), 8 + 2 + 8 + 1 + (2 + 2) + (1 + 2 + 200)},
		{encodeRequest(newRequest(18, 3), 1, ptr("k")), 8 + 2 + 1 + 1},
	}
	for i, tc := range cases {
		if _, body, err := ParseRequestHeader(tc.frame); err != nil || len(body) != len(tc.frame)-tc.headerLen {
			t.Fatalf("case %d: whole frame: body of %d bytes, err %v; want %d-byte header", i, len(body), err, tc.headerLen)
		}
		for cut := 0; cut < tc.headerLen; cut++ {
			h, body, err := ParseRequestHeader(tc.frame[:cut])
			if !errors.Is(err, ErrHeaderTruncated) {
				t.Fatalf("case %d cut at %d: got %v, want ErrHeaderTruncated", i, cut, err)
			}
			if body != nil {
				t.Fatalf("case %d cut at %d: got body %x with an error", i, cut, body)
			}
			if cut >= 8 && h.CorrelationID != 1 {
				t.Fatalf("case %d cut at %d: lost the correlation id: %+v", i, cut, h)
			}
		}
	}
}

func TestParseRequestHeaderMalformedVarint(t *testing.T) {
	prefix := []byte{0, 3, 0, 12, 0, 0, 0, 1, 0xff, 0xff}
	for _, tags := range [][]byte{
		{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, // six bytes
		{0xff, 0xff, 0xff, 0xff, 0x1f},       // 35 bits
		{1, 0x80, 0x80, 0x80, 0x80, 0x10, 0}, // tag overflows
		{1, 0, 0x80, 0x80, 0x80, 0x80, 0x7f}, // size overflows
	} {
		_, _, err := ParseRequestHeader(append(append([]byte{}, prefix...), tags...))
		if !errors.Is(err, ErrMalformedHeader) {
			t.Fatalf("tags %x: got %v, want ErrMalformedHeader", tags, err)
		}
	}
	// The largest 5-byte values are fine, and a count that large just
	// runs out of bytes.
	_, _, err := ParseRequestHeader(append(append([]byte{}, prefix...), 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0))
	if !errors.Is(err, ErrHeaderTruncated) {
		t.Fatalf("count 2^32-1 with one field: got %v, want ErrHeaderTruncated", err)
	}
}

func TestParseRequestHeaderPrefix(t *testing.T) {
	frame := encodeRequest(newRequest(18, 9), 1234, ptr("x")) // a version nobody serves
	h, err := ParseRequestHeaderPrefix(frame)
	if err != nil || h != (RequestHeader{APIKey: 18, APIVersion: 9, CorrelationID: 1234}) {
		t.Fatalf("got %+v, %v", h, err)
	}
	for cut := range 8 {
		if _, err := ParseRequestHeaderPrefix(frame[:cut]); !errors.Is(err, ErrHeaderTruncated) {
			t.Fatalf("cut at %d: got %v, want ErrHeaderTruncated", cut, err)
		}
	}
}

// Every request kmsg knows, at every version, framed as franz-go frames it
// and as the spec says independently, parses back to the same header and a
// body kmsg decodes.
func TestParseRequestHeaderRoundTripKmsg(t *testing.T) {
	formatter := kmsg.NewRequestFormatter(kmsg.FormatterClientID("franz"))
	for key := int16(0); key <= kmsg.MaxKey; key++ {
		proto := kmsg.RequestForKey(key)
		if proto == nil {
			continue
		}
		for v := int16(0); v <= proto.MaxVersion(); v++ {
			req := newRequest(key, v)
			corr := int32(key)<<16 | int32(v)
			wantBody := req.AppendTo(nil)
			wantID := "franz"
			if key == 7 && v == 0 {
				wantID = "<null>"
			}

			frames := [][]byte{encodeRequest(req, corr, ptr("franz"), []byte("tag"))}
			// kmsg's RequestFormatter returns early for
			// ControlledShutdown v0, without the body or the size
			// (kmsg v1.15.1), so that one is only encoded by hand.
			if key != 7 || v != 0 {
				framed := formatter.AppendRequest(nil, req, corr)
				frame, err := ReadFrame(bytes.NewReader(framed), DefaultMaxFrameSize, nil)
				if err != nil {
					t.Fatalf("%s v%d: ReadFrame of kmsg's framing: %v", kmsg.NameForKey(key), v, err)
				}
				frames = append(frames, frame)
			}
			for _, f := range frames {
				h, body, err := ParseRequestHeader(f)
				if err != nil {
					t.Fatalf("%s v%d: %v", kmsg.NameForKey(key), v, err)
				}
				if h.APIKey != key || h.APIVersion != v || h.CorrelationID != corr || clientIDString(h.ClientID) != wantID {
					t.Fatalf("%s v%d: got header %+v (client id %s)", kmsg.NameForKey(key), v, h, clientIDString(h.ClientID))
				}
				if !bytes.Equal(body, wantBody) {
					t.Fatalf("%s v%d: got body %x, want %x", kmsg.NameForKey(key), v, body, wantBody)
				}
				back := newRequest(key, v)
				if err := back.ReadFrom(body); err != nil {
					t.Fatalf("%s v%d: kmsg cannot decode the body: %v", kmsg.NameForKey(key), v, err)
				}
			}
		}
	}
}

// The flexibility table must agree with kmsg for every key and version kmsg
// knows, and for versions past kmsg's maximum, where kmsg's IsFlexible still
// answers from its first flexible version.
func TestRequestFlexibleMatchesKmsg(t *testing.T) {
	for key := int16(-2); key <= kmsg.MaxKey+2; key++ {
		r := kmsg.RequestForKey(key)
		if r == nil {
			for v := int16(-1); v < 20; v++ {
				if RequestFlexible(key, v) {
					t.Fatalf("unknown key %d v%d reported flexible", key, v)
				}
			}
			continue
		}
		for v := int16(0); v <= r.MaxVersion()+3; v++ {
			r.SetVersion(v)
			if got, want := RequestFlexible(key, v), r.IsFlexible(); got != want {
				t.Fatalf("%s v%d (kmsg max %d): got flexible %v, kmsg says %v",
					kmsg.NameForKey(key), v, r.MaxVersion(), got, want)
			}
		}
		if RequestFlexible(key, -1) {
			t.Fatalf("%s v-1 reported flexible", kmsg.NameForKey(key))
		}
	}
	// A few facts from kafka-apis.md, checked by hand.
	for _, c := range []struct {
		key, version int16
		want         bool
	}{
		{0, 8, false}, {0, 9, true}, {1, 11, false}, {1, 12, true}, {3, 8, false}, {3, 9, true},
		{18, 2, false}, {18, 3, true}, {17, 1, false}, {47, 0, false}, {60, 0, true},
		{3, 32767, true}, {17, 32767, false},
	} {
		if got := RequestFlexible(c.key, c.version); got != c.want {
			t.Fatalf("%s v%d: got flexible %v, want %v", kmsg.NameForKey(c.key), c.version, got, c.want)
		}
	}
}

func TestResponseHeader(t *testing.T) {
	for _, c := range []struct {
		key, version int16
		want         bool
	}{
		{18, 0, false}, {18, 3, false}, {18, 4, false}, {18, 99, false},
		{3, 8, false}, {3, 12, true}, {0, 9, true}, {1, 4, false}, {-1, 0, false}, {1000, 5, false},
	} {
		if got := ResponseHeaderFlexible(c.key, c.version); got != c.want {
			t.Fatalf("key %d v%d: got response header flexible %v, want %v", c.key, c.version, got, c.want)
		}
	}

	if got := AppendResponseHeader([]byte{9}, 0x01020304, false); !bytes.Equal(got, []byte{9, 1, 2, 3, 4}) {
		t.Fatalf("v0: got %x", got)
	}
	if got := AppendResponseHeader(nil, -1, true); !bytes.Equal(got, []byte{0xff, 0xff, 0xff, 0xff, 0}) {
		t.Fatalf("v1: got %x", got)
	}

	// A flexible response framed with our header reads back the way a
	// client reads it: correlation id, the tag section, then a body kmsg
	// decodes.
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(12)
	resp.Topics = []kmsg.MetadataResponseTopic{{Topic: ptr("t")}}
	dst, start := BeginFrame(nil)
	dst = AppendResponseHeader(dst, 55, ResponseHeaderFlexible(3, 12))
	dst = resp.AppendTo(dst)
	if err := FinishFrame(dst, start); err != nil {
		t.Fatal(err)
	}
	frame, err := ReadFrame(bytes.NewReader(dst), 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	if corr := int32(binary.BigEndian.Uint32(frame)); corr != 55 || frame[4] != 0 {
		t.Fatalf("got correlation id %d and tag count %d, want 55 and 0", corr, frame[4])
	}
	back := kmsg.NewPtrMetadataResponse()
	back.SetVersion(12)
	if err := back.ReadFrom(frame[5:]); err != nil || len(back.Topics) != 1 || *back.Topics[0].Topic != "t" {
		t.Fatalf("client-side decode: %v, %+v", err, back.Topics)
	}
}

func BenchmarkParseRequestHeader(b *testing.B) {
	frame := encodeRequest(newRequest(1, 16), 1, ptr("consumer-group-1"))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ParseRequestHeader(frame); err != nil {
			b.Fatal(err)
		}
	}
}
