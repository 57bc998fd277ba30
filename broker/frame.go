package broker

// Outgoing response frames, and zero-copy fetch responses.
//
// Most responses are encoded into one buffer. A Fetch response's record
// bytes stay in the segment files instead and go to the socket with
// sendfile(2): the handler reads storage.Slices (which hold their segment
// file open) rather than copying, and the frame interleaves the encoded
// parts of the response with those slices. To keep kmsg's encoder as the
// one that lays out every version of the response, each partition's
// RecordBatches is encoded as a marker of 20 bytes (a random nonce of the
// response and the slice's index), which the frame builder finds in the
// encoded bytes and replaces, with its length prefix, by the slice. A
// marker that cannot be found where expected (never seen; 2^-128 odds of a
// false match) falls back to copying the bytes into the response.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"

	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/storage"
)

// outFrame is one response ready to write: pieces in order, each bytes or a
// file slice. release gives the slices back once written (or dropped).
type outFrame struct {
	pieces []framePiece
	reads  []storage.ReadResult
	// later, when set, completes a response still pending (a produce
	// waiting for durability) and returns its frame; the writer calls it
	// in the response's turn. abandon says not to wait.
	later func(abandon bool) *outFrame
}

// ready returns the frame to write: f itself, or its pending response's
// once settled.
func (f *outFrame) ready(abandon bool) *outFrame {
	if f.later == nil {
		return f
	}
	return f.later(abandon)
}

type framePiece struct {
	b []byte
	s *storage.Slice // when non-nil, b is unused
}

func bytesFrame(b []byte) *outFrame { return &outFrame{pieces: []framePiece{{b: b}}} }

// release gives back the file slices of the frame.
func (f *outFrame) release() {
	for i := range f.reads {
		f.reads[i].Release()
	}
	f.reads = nil
}

// len is the frame's size, its 4-byte size field included.
func (f *outFrame) len() int64 {
	var n int64
	for _, p := range f.pieces {
		if p.s != nil {
			n += p.s.Len
		} else {
			n += int64(len(p.b))
		}
	}
	return n
}

// bytes returns the whole frame in memory (tests and fuzzing).
func (f *outFrame) bytes() ([]byte, error) {
	var out []byte
	for _, p := range f.pieces {
		if p.s == nil {
			out = append(out, p.b...)
			continue
		}
		var err error
		if out, err = p.s.AppendTo(out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// fetchResponse is what handleFetch returns: the response with a marker
// in place of each partition's records, and the reads the markers stand
// for, in the order they appear in the response.
type fetchResponse struct {
	*kmsg.FetchResponse
	nonce [16]byte
	reads []storage.ReadResult
	marks []byte // the markers handed out by add, back to back
}

const fetchMarkerLen = 20

func newFetchResponse(resp *kmsg.FetchResponse) *fetchResponse {
	fr := &fetchResponse{FetchResponse: resp}
	binary.LittleEndian.PutUint64(fr.nonce[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(fr.nonce[8:], rand.Uint64())
	return fr
}

// putMarker writes the i-th read's marker into m (fetchMarkerLen bytes).
func (fr *fetchResponse) putMarker(m []byte, i int) {
	copy(m, fr.nonce[:])
	binary.BigEndian.PutUint32(m[16:fetchMarkerLen], uint32(i))
}

// add keeps a read for the response and returns its marker, the records
// field of its partition. The markers are cut from one buffer that grows
// by doubling, not allocated one by one: a fetch of many partitions hands
// out one per partition.
func (fr *fetchResponse) add(rr storage.ReadResult) []byte {
	i := len(fr.reads)
	fr.reads = append(fr.reads, rr)
	n := len(fr.marks)
	if cap(fr.marks)-n < fetchMarkerLen {
		fr.marks, n = make([]byte, 0, fetchMarkerLen*max(4, 2*i)), 0
	}
	fr.marks = fr.marks[:n+fetchMarkerLen]
	m := fr.marks[n : n+fetchMarkerLen : n+fetchMarkerLen]
	fr.putMarker(m, i)
	return m
}

// release gives back the reads of a response that is not sent.
func (fr *fetchResponse) release() {
	for i := range fr.reads {
		fr.reads[i].Release()
	}
	fr.reads = nil
}

// encodeFetchFrame frames a fetch response with its records left in the
// segment files. It owns fr's reads from here on: the frame releases them.
func encodeFetchFrame(hdr protocol.RequestHeader, fr *fetchResponse) *outFrame {
	buf := encodeResponse(hdr, fr.FetchResponse)
	if len(fr.reads) == 0 {
		return bytesFrame(buf)
	}
	flexible := hdr.APIVersion >= 12
	f := &outFrame{reads: fr.reads, pieces: make([]framePiece, 0, 3*len(fr.reads)+1)}
	fr.reads = nil
	// The records' length prefixes, at most 5 bytes each, share a buffer.
	prefixes := make([]byte, 0, 5*len(f.reads))
	var m [fetchMarkerLen]byte
	pos := 0
	for i := range f.reads {
		s := &f.reads[i].Slice
		fr.putMarker(m[:], i)
		j := bytes.Index(buf[pos:], m[:])
		prefixLen := 4
		if flexible {
			prefixLen = 1 // uvarint(20 + 1)
		}
		if j < prefixLen || !markerPrefixOK(buf[pos+j-prefixLen:pos+j], flexible) {
			return copyFetchFrame(hdr, fr, f)
		}
		j += pos
		f.pieces = append(f.pieces, framePiece{b: buf[pos : j-prefixLen]})
		n := len(prefixes)
		if flexible {
			prefixes = binary.AppendUvarint(prefixes, uint64(s.Len)+1)
		} else {
			prefixes = binary.BigEndian.AppendUint32(prefixes, uint32(s.Len))
		}
		f.pieces = append(f.pieces, framePiece{b: prefixes[n:len(prefixes):len(prefixes)]}, framePiece{s: s})
		pos = j + fetchMarkerLen
	}
	f.pieces = append(f.pieces, framePiece{b: buf[pos:]})
	size := f.len() - 4
	if size > math.MaxInt32 {
		return copyFetchFrame(hdr, fr, f)
	}
	binary.BigEndian.PutUint32(buf[:4], uint32(size))
	return f
}

func markerPrefixOK(p []byte, flexible bool) bool {
	if flexible {
		return len(p) == 1 && p[0] == fetchMarkerLen+1
	}
	return len(p) == 4 && binary.BigEndian.Uint32(p) == fetchMarkerLen
}

// copyFetchFrame is the fallback: the records copied into the response.
func copyFetchFrame(hdr protocol.RequestHeader, fr *fetchResponse, f *outFrame) *outFrame {
	defer f.release()
	i := 0
	var m [fetchMarkerLen]byte
	for t := range fr.Topics {
		for p := range fr.Topics[t].Partitions {
			rp := &fr.Topics[t].Partitions[p]
			if i >= len(f.reads) || len(rp.RecordBatches) != fetchMarkerLen {
				continue
			}
			if fr.putMarker(m[:], i); !bytes.Equal(rp.RecordBatches, m[:]) {
				continue
			}
			b, err := f.reads[i].AppendTo(nil)
			if err != nil {
				rp.ErrorCode = int16(protocol.KafkaStorageError)
				b = []byte{}
			}
			rp.RecordBatches = b
			i++
		}
	}
	return bytesFrame(encodeResponse(hdr, fr.FetchResponse))
}

// socket returns the connection under the idle-timeout wrapper and its
// write deadline (zero: none).
func (c *conn) socket() (net.Conn, time.Time) {
	if ic, ok := c.nc.(idleConn); ok {
		return ic.Conn, time.Now().Add(ic.idle)
	}
	return c.nc, time.Time{}
}

// writeFrame writes a frame to the connection: bytes with writev, file
// slices with sendfile when the connection is a socket.
func (c *conn) writeFrame(f *outFrame) error {
	nc, deadline := c.socket()
	if err := nc.SetWriteDeadline(deadline); err != nil {
		return err
	}
	for i := 0; i < len(f.pieces); {
		if f.pieces[i].s != nil {
			if err := sendSlice(nc, f.pieces[i].s); err != nil {
				return err
			}
			i++
			continue
		}
		// Consecutive byte pieces go out in one writev.
		j := i
		var bufs net.Buffers
		for ; j < len(f.pieces) && f.pieces[j].s == nil; j++ {
			bufs = append(bufs, f.pieces[j].b)
		}
		if _, err := bufs.WriteTo(nc); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// sendSlice sends a file slice with sendfile(2), or copies it when the
// connection has no file descriptor (tests over net.Pipe).
func sendSlice(nc net.Conn, s *storage.Slice) error {
	if s.Len == 0 {
		return nil
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		_, err := s.WriteTo(nc)
		return err
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	src := int(s.File().Fd())
	off, remain := s.Pos, s.Len
	var serr error
	err = raw.Write(func(fd uintptr) bool {
		for remain > 0 {
			n, err := unix.Sendfile(int(fd), src, &off, int(min(remain, 1<<30)))
			if n > 0 {
				remain -= int64(n)
			}
			switch {
			case errors.Is(err, unix.EAGAIN):
				return false // wait until the socket is writable
			case errors.Is(err, unix.EINTR):
				continue
			case err != nil:
				serr = err
				return true
			case n == 0:
				serr = fmt.Errorf("sendfile: %w: segment shorter than the slice", io.ErrUnexpectedEOF)
				return true
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	return serr
}
