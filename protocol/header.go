package protocol

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// APIVersionsKey is the API key of ApiVersions, whose requests and responses
// the protocol treats specially: its responses always use header v0, and a
// request at a version the broker does not serve is still answered.
const APIVersionsKey int16 = 18

// controlledShutdownKey is the one API whose v0 requests use header v0,
// which has no client id. Kafka 4 no longer serves it; the header is still
// parsed as Kafka parses it.
const controlledShutdownKey int16 = 7

// requestHeaderPrefixSize is the part common to every request header
// version: API key, API version and correlation id.
const requestHeaderPrefixSize = 8

// RequestHeader is a parsed request header (v0, v1 or v2).
type RequestHeader struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	// ClientID is nil when the client sent a null client id, and for the
	// header v0 of ControlledShutdown v0. Kafka treats a null client id as
	// the empty string; callers that log or quota by client id should too.
	ClientID *string
}

// ParseRequestHeaderPrefix reads only the API key, API version and
// correlation id, the first 8 bytes of every request header, leaving
// ClientID nil. The broker uses it to answer an ApiVersions request at a
// version it does not serve without parsing anything else, and to tell a
// client which correlation id it is rejecting.
func ParseRequestHeaderPrefix(frame []byte) (RequestHeader, error) {
	if len(frame) < requestHeaderPrefixSize {
		return RequestHeader{}, fmt.Errorf("%w: %d bytes, need %d",
			ErrHeaderTruncated, len(frame), requestHeaderPrefixSize)
	}
	return RequestHeader{
		APIKey:        int16(binary.BigEndian.Uint16(frame[0:])),
		APIVersion:    int16(binary.BigEndian.Uint16(frame[2:])),
		CorrelationID: int32(binary.BigEndian.Uint32(frame[4:])),
	}, nil
}

// ParseRequestHeader parses the request header at the start of frame (a
// frame's body, as ReadFrame returns it) and returns it with the request
// body that follows, a sub-slice of frame. The header version is decided by
// the API key and version, as in Kafka: v2 when that request is flexible,
// v0 for ControlledShutdown v0, v1 otherwise.
//
// An API key kmsg does not know gives ErrUnknownAPIKey, with the header's
// first three fields filled in. A header that runs past the frame gives
// ErrHeaderTruncated and a malformed one ErrMalformedHeader; in every error
// case the header holds whatever was parsed and body is nil. The version is
// not checked against what the broker serves: see Registry.Supports.
func ParseRequestHeader(frame []byte) (h RequestHeader, body []byte, err error) {
	h, err = ParseRequestHeaderPrefix(frame)
	if err != nil {
		return h, nil, err
	}
	info, ok := lookupAPI(h.APIKey)
	if !ok {
		return h, nil, fmt.Errorf("%w: %d (version %d)", ErrUnknownAPIKey, h.APIKey, h.APIVersion)
	}
	rest := frame[requestHeaderPrefixSize:]
	if h.APIKey == controlledShutdownKey && h.APIVersion == 0 {
		return h, rest, nil // header v0
	}

	if len(rest) < 2 {
		return h, nil, fmt.Errorf("%w: client id length", ErrHeaderTruncated)
	}
	n := int16(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	if n >= 0 { // a negative length is a null client id
		if int(n) > len(rest) {
			return h, nil, fmt.Errorf("%w: client id of %d bytes, %d left", ErrHeaderTruncated, n, len(rest))
		}
		id := string(rest[:n])
		h.ClientID = &id
		rest = rest[n:]
	}

	if info.flexible(h.APIVersion) {
		if rest, err = skipTaggedFields(rest); err != nil {
			return h, nil, err
		}
	}
	return h, rest, nil
}

// skipTaggedFields skips a tagged-field section and returns what follows.
// Each field takes at least two bytes (tag and size), so a hostile count
// ends the loop as soon as the bytes run out.
func skipTaggedFields(b []byte) ([]byte, error) {
	count, b, err := readUvarint(b, "tagged field count")
	if err != nil {
		return nil, err
	}
	for i := uint32(0); i < count; i++ {
		var tag, size uint32
		if tag, b, err = readUvarint(b, "tag"); err != nil {
			return nil, err
		}
		if size, b, err = readUvarint(b, "tagged field size"); err != nil {
			return nil, err
		}
		if uint64(size) > uint64(len(b)) {
			return nil, fmt.Errorf("%w: tagged field %d of %d bytes, %d left", ErrHeaderTruncated, tag, size, len(b))
		}
		b = b[size:]
	}
	return b, nil
}

// readUvarint reads a uvarint of at most 5 bytes holding a 32-bit value, as
// Kafka's readUnsignedVarint does, and returns it with the bytes after it.
func readUvarint(b []byte, what string) (uint32, []byte, error) {
	var v uint32
	for i := 0; i < 5; i++ {
		if i >= len(b) {
			return 0, nil, fmt.Errorf("%w: %s", ErrHeaderTruncated, what)
		}
		c := b[i]
		if i == 4 && c > 0x0f {
			// Either a sixth byte follows or the value needs more
			// than 32 bits.
			return 0, nil, fmt.Errorf("%w: %s: varint overflows 32 bits", ErrMalformedHeader, what)
		}
		v |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, b[i+1:], nil
		}
	}
	// Not reached: the fifth byte either ends the varint or fails above.
	return 0, nil, fmt.Errorf("%w: %s: varint longer than 5 bytes", ErrMalformedHeader, what)
}

// RequestFlexible reports whether a request at this API key and version is
// flexible (KIP-482), which decides its header version (v2 rather than v1),
// its compact encodings and its response header version. It follows kmsg's
// message definitions, and versions above kmsg's maximum are flexible when
// the API has any flexible version: Kafka only ever adds versions, and every
// one since an API became flexible is flexible. Unknown keys and negative
// versions are not flexible.
func RequestFlexible(key, version int16) bool {
	info, ok := lookupAPI(key)
	return ok && info.flexible(version)
}

// ResponseHeaderFlexible reports whether the response to a request at this
// API key and version uses response header v1 (with tagged fields) rather
// than v0. It is the request's flexibility, except for ApiVersions, whose
// responses always use v0 (KIP-511).
func ResponseHeaderFlexible(key, version int16) bool {
	return key != APIVersionsKey && RequestFlexible(key, version)
}

// AppendResponseHeader appends a response header to dst: the correlation id,
// then, when flexible (see ResponseHeaderFlexible), an empty tagged-field
// section.
func AppendResponseHeader(dst []byte, correlationID int32, flexible bool) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if flexible {
		dst = append(dst, 0)
	}
	return dst
}

// apiInfo is what the header code and the registry need to know about an
// API key, taken from kmsg once.
type apiInfo struct {
	known         bool
	maxVersion    int16 // highest version kmsg can encode and decode
	firstFlexible int16 // -1 when no version is flexible
}

func (a apiInfo) flexible(version int16) bool {
	return a.firstFlexible >= 0 && version >= a.firstFlexible
}

// apiTable is built on first use rather than in init(), so that importing
// the package costs nothing.
var apiTable = sync.OnceValue(func() *[kmsg.MaxKey + 1]apiInfo {
	var t [kmsg.MaxKey + 1]apiInfo
	for key := range t {
		r := kmsg.RequestForKey(int16(key))
		if r == nil {
			continue
		}
		info := apiInfo{known: true, maxVersion: r.MaxVersion(), firstFlexible: -1}
		for v := int16(0); v <= info.maxVersion; v++ {
			r.SetVersion(v)
			if r.IsFlexible() {
				info.firstFlexible = v
				break
			}
		}
		t[key] = info
	}
	return &t
})

func lookupAPI(key int16) (apiInfo, bool) {
	if key < 0 || int(key) > kmsg.MaxKey {
		return apiInfo{}, false
	}
	info := apiTable()[key]
	return info, info.known
}
