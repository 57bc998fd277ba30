package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// DefaultMaxFrameSize is Kafka's default socket.request.max.bytes, 100 MiB.
const DefaultMaxFrameSize int32 = 100 << 20

// eagerFrameSize is the largest frame body ReadFrame allocates in one go.
// Above it the body buffer grows as bytes arrive, so a peer that announces a
// large frame and then stalls holds only as much memory as it has sent
// (plus at most as much again from doubling).
const eagerFrameSize = 1 << 20

// ReadFrame reads one frame from r: a 4-byte big-endian size, then that many
// bytes, which it returns. The size must be in 1..maxSize; otherwise
// ReadFrame returns ErrFrameSize having allocated nothing for the body.
//
// The body is read into buf when buf has the capacity, so the returned slice
// may alias buf, and buf's old contents are overwritten either way; pass the
// previous result back in as buf to reuse it. kmsg's
// ReadFrom keeps byte fields (a Produce request's records, for one) as
// sub-slices of its input, so a frame's buffer must not be reused until its
// request has been handled.
//
// A connection that ends before the first byte of the size gives io.EOF: the
// peer closed between requests. One that ends anywhere later gives an error
// matching both ErrFrameTruncated and io.ErrUnexpectedEOF. Other read errors
// (deadlines, resets) come back wrapped, so errors.Is and errors.As still see
// them. On any error the returned slice is nil.
func ReadFrame(r io.Reader, maxSize int32, buf []byte) ([]byte, error) {
	// The size is read into buf when it can hold it: a local array would
	// escape to the heap through the io.Reader call and cost an allocation
	// on every frame.
	var head []byte
	if cap(buf) >= 4 {
		head = buf[:4]
	} else {
		head = make([]byte, 4)
	}
	if n, err := io.ReadFull(r, head); err != nil {
		switch {
		case n == 0 && errors.Is(err, io.EOF):
			return nil, io.EOF
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, truncated("size", n, 4)
		default:
			return nil, fmt.Errorf("protocol: read frame size: %w", err)
		}
	}
	size := int32(binary.BigEndian.Uint32(head))
	if size <= 0 || size > maxSize {
		return nil, fmt.Errorf("%w: %d (limit %d)", ErrFrameSize, size, maxSize)
	}

	n := int(size)
	var body []byte
	switch {
	case n <= cap(buf):
		body = buf[:n]
	case n <= eagerFrameSize:
		body = make([]byte, n)
	default:
		return readLargeFrame(r, n, buf[:0])
	}
	if got, err := io.ReadFull(r, body); err != nil {
		return nil, bodyError(err, got, n)
	}
	return body, nil
}

// readLargeFrame reads an n-byte body that buf cannot hold, growing the
// buffer as data arrives rather than allocating all n bytes up front.
func readLargeFrame(r io.Reader, n int, buf []byte) ([]byte, error) {
	body := buf
	for len(body) < n {
		chunk := max(len(body), eagerFrameSize)
		chunk = min(chunk, n-len(body))
		if cap(body)-len(body) < chunk {
			grown := make([]byte, len(body), len(body)+chunk)
			copy(grown, body)
			body = grown
		}
		got, err := io.ReadFull(r, body[len(body):len(body)+chunk])
		body = body[:len(body)+got]
		if err != nil {
			return nil, bodyError(err, len(body), n)
		}
	}
	return body, nil
}

func bodyError(err error, got, want int) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return truncated("body", got, want)
	}
	return fmt.Errorf("protocol: read frame body: %w", err)
}

func truncated(part string, got, want int) error {
	return fmt.Errorf("%w: %s ended after %d of %d bytes: %w",
		ErrFrameTruncated, part, got, want, io.ErrUnexpectedEOF)
}

// BeginFrame starts a frame at the end of dst by appending a 4-byte
// placeholder for its size. It returns the extended slice and the offset the
// frame starts at, which FinishFrame needs once the body has been appended:
//
//	dst, start := protocol.BeginFrame(dst)
//	dst = protocol.AppendResponseHeader(dst, correlationID, flexible)
//	dst = resp.AppendTo(dst)
//	if err := protocol.FinishFrame(dst, start); err != nil { ... }
func BeginFrame(dst []byte) (buf []byte, start int) {
	return append(dst, 0, 0, 0, 0), len(dst)
}

// FinishFrame writes the size of the frame that BeginFrame started at start,
// everything appended to buf after the placeholder. It fails with
// ErrFrameSize when that does not fit Kafka's int32 size, or when start does
// not leave room for the placeholder.
func FinishFrame(buf []byte, start int) error {
	if start < 0 || start > len(buf)-4 {
		return fmt.Errorf("%w: frame start %d outside %d bytes", ErrFrameSize, start, len(buf))
	}
	size := len(buf) - start - 4
	if size > math.MaxInt32 {
		return fmt.Errorf("%w: %d bytes does not fit an int32", ErrFrameSize, size)
	}
	binary.BigEndian.PutUint32(buf[start:], uint32(size))
	return nil
}

// AppendFrame appends body to dst as one frame: its size, then its bytes.
func AppendFrame(dst, body []byte) ([]byte, error) {
	if len(body) > math.MaxInt32 {
		return dst, fmt.Errorf("%w: %d bytes does not fit an int32", ErrFrameSize, len(body))
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(body)))
	return append(dst, body...), nil
}
