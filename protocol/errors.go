package protocol

import "errors"

// Errors returned by this package. All of them mean the connection cannot
// continue: Kafka closes the connection on a frame it cannot read or a header
// it cannot parse, and so does Gregor. They are Go errors, not Kafka error
// codes; codes are in codes.go.
var (
	// ErrFrameSize is a frame size at or below zero, or above the limit
	// (socket.request.max.bytes). It is returned before anything is
	// allocated for the frame.
	ErrFrameSize = errors.New("protocol: invalid frame size")
	// ErrFrameTruncated is a connection that ended inside a frame: after
	// part of the size, or before the whole body. It also matches
	// io.ErrUnexpectedEOF. A connection that ends cleanly between frames
	// gives io.EOF instead.
	ErrFrameTruncated = errors.New("protocol: frame truncated")
	// ErrHeaderTruncated is a request header that runs past the end of its
	// frame.
	ErrHeaderTruncated = errors.New("protocol: request header truncated")
	// ErrMalformedHeader is a request header that is complete but not
	// well formed, such as a varint longer than 5 bytes.
	ErrMalformedHeader = errors.New("protocol: malformed request header")
	// ErrUnknownAPIKey is a request whose API key kmsg does not know, so
	// its header version cannot be decided.
	ErrUnknownAPIKey = errors.New("protocol: unknown API key")
)
