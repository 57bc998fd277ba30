package protocol

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The client side of the framing, for a broker that sends requests of its
// own (a follower fetching from its leader).

// AppendRequest appends req as one frame to dst: its size, then a request
// header (v2 when the request is flexible, else v1) with correlationID and
// clientID, then the body at req's version.
func AppendRequest(dst []byte, correlationID int32, clientID string, req kmsg.Request) ([]byte, error) {
	key, version := req.Key(), req.GetVersion()
	dst, start := BeginFrame(dst)
	dst = binary.BigEndian.AppendUint16(dst, uint16(key))
	dst = binary.BigEndian.AppendUint16(dst, uint16(version))
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(clientID)))
	dst = append(dst, clientID...)
	if RequestFlexible(key, version) {
		dst = append(dst, 0) // no tagged fields
	}
	dst = req.AppendTo(dst)
	return dst, FinishFrame(dst, start)
}

// ParseResponseHeader splits a response frame (without its size) to a
// request at key and version into its correlation id and body, skipping the
// header's tagged fields where the header has them.
func ParseResponseHeader(frame []byte, key, version int16) (correlationID int32, body []byte, err error) {
	if len(frame) < 4 {
		return 0, nil, fmt.Errorf("%w: response of %d bytes", ErrHeaderTruncated, len(frame))
	}
	correlationID = int32(binary.BigEndian.Uint32(frame))
	body = frame[4:]
	if ResponseHeaderFlexible(key, version) {
		if body, err = skipTaggedFields(body); err != nil {
			return 0, nil, err
		}
	}
	return correlationID, body, nil
}
