package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// seedRequests are real request frames, as franz-go frames them, with their
// 4-byte size stripped.
func seedRequests() [][]byte {
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("kgo"))
	var out [][]byte
	add := func(r kmsg.Request, v int16) {
		r.SetVersion(v)
		out = append(out, f.AppendRequest(nil, r, 17)[4:])
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: ptr("orders")}}
	add(md, 4)
	add(md, 12)
	add(kmsg.NewPtrApiVersionsRequest(), 0)
	add(kmsg.NewPtrApiVersionsRequest(), 3)
	add(kmsg.NewPtrApiVersionsRequest(), 4)
	add(kmsg.NewPtrProduceRequest(), 7)
	add(kmsg.NewPtrProduceRequest(), 11)
	add(kmsg.NewPtrFetchRequest(), 11)
	add(kmsg.NewPtrFetchRequest(), 16)
	add(kmsg.NewPtrFindCoordinatorRequest(), 4)
	add(kmsg.NewPtrSASLHandshakeRequest(), 1)
	add(kmsg.NewPtrControlledShutdownRequest(), 1)
	// A flexible header carrying tags, and a null client id.
	out = append(out, encodeRequest(newRequest(3, 12), 1, nil, []byte("a"), []byte("bc")))
	return out
}

func FuzzRequestHeader(f *testing.F) {
	for _, s := range seedRequests() {
		f.Add(s)
	}
	f.Add([]byte{})
	f.Add([]byte{0, 3, 0, 12, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, body, err := ParseRequestHeader(frame)
		p, perr := ParseRequestHeaderPrefix(frame)
		if (perr != nil) != (len(frame) < 8) {
			t.Fatalf("prefix of %d bytes: got error %v", len(frame), perr)
		}
		if err != nil {
			if body != nil {
				t.Fatalf("error %v came with a body", err)
			}
			if !errors.Is(err, ErrHeaderTruncated) && !errors.Is(err, ErrMalformedHeader) && !errors.Is(err, ErrUnknownAPIKey) {
				t.Fatalf("error %v is none of the package's header errors", err)
			}
			return
		}
		// Accepted: the body is what follows the header in frame.
		if len(body) > len(frame)-8 {
			t.Fatalf("body of %d bytes from a %d-byte frame", len(body), len(frame))
		}
		if len(body) > 0 && &body[len(body)-1] != &frame[len(frame)-1] {
			t.Fatalf("body is not a suffix of the frame")
		}
		if p.APIKey != h.APIKey || p.APIVersion != h.APIVersion || p.CorrelationID != h.CorrelationID {
			t.Fatalf("prefix %+v disagrees with header %+v", p, h)
		}
		// Writing the header back out in its canonical form (tags
		// dropped) and parsing again gives the same header.
		re := binary.BigEndian.AppendUint16(nil, uint16(h.APIKey))
		re = binary.BigEndian.AppendUint16(re, uint16(h.APIVersion))
		re = binary.BigEndian.AppendUint32(re, uint32(h.CorrelationID))
		if h.APIKey != 7 || h.APIVersion != 0 {
			if h.ClientID == nil {
				re = append(re, 0xff, 0xff)
			} else {
				re = binary.BigEndian.AppendUint16(re, uint16(len(*h.ClientID)))
				re = append(re, *h.ClientID...)
			}
			if RequestFlexible(h.APIKey, h.APIVersion) {
				re = append(re, 0)
			}
		}
		re = append(re, body...)
		h2, body2, err := ParseRequestHeader(re)
		if err != nil || h2.CorrelationID != h.CorrelationID || clientIDString(h2.ClientID) != clientIDString(h.ClientID) || !bytes.Equal(body2, body) {
			t.Fatalf("re-encoded header parsed as %+v, %x, %v; want %+v, %x", h2, body2, err, h, body)
		}
	})
}

func FuzzReadFrame(f *testing.F) {
	fr := kmsg.NewRequestFormatter(kmsg.FormatterClientID("kgo"))
	var stream []byte
	for _, s := range seedRequests() {
		stream, _ = AppendFrame(stream, s)
	}
	f.Add(stream, uint32(1<<20))
	f.Add(fr.AppendRequest(nil, kmsg.NewPtrApiVersionsRequest(), 1), uint32(100))
	f.Add([]byte{0, 0, 0, 0}, uint32(100))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1}, uint32(100))
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff, 1, 2, 3}, uint32(0x7fffffff))
	f.Add([]byte{0, 0, 0, 5, 1, 2}, uint32(100))
	f.Fuzz(func(t *testing.T, data []byte, limit uint32) {
		// Frame limits up to 4 MiB take both the eager and the growing
		// read paths without making each run slow.
		maxSize := int32(limit % (4 << 20))
		r := bytes.NewReader(data)
		var buf []byte
		pos := 0
		for {
			frame, err := ReadFrame(r, maxSize, buf)
			if err != nil {
				if frame != nil {
					t.Fatalf("error %v came with a frame", err)
				}
				rest := len(data) - pos
				switch {
				case errors.Is(err, io.EOF):
					if rest != 0 {
						t.Fatalf("io.EOF with %d bytes left", rest)
					}
				case errors.Is(err, ErrFrameTruncated):
					if rest == 0 {
						t.Fatalf("truncation reported at a frame boundary")
					}
				case errors.Is(err, ErrFrameSize):
					size := int32(binary.BigEndian.Uint32(data[pos:]))
					if size > 0 && size <= maxSize {
						t.Fatalf("size %d rejected under limit %d", size, maxSize)
					}
				default:
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			size := int(binary.BigEndian.Uint32(data[pos:]))
			if len(frame) != size || size < 1 || size > int(maxSize) {
				t.Fatalf("got a %d-byte frame for size %d, limit %d", len(frame), size, maxSize)
			}
			if !bytes.Equal(frame, data[pos+4:pos+4+size]) {
				t.Fatalf("frame at %d differs from the input", pos)
			}
			pos += 4 + size
			buf = frame
		}
	})
}
