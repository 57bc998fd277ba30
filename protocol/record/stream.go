package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Validate reads the records of a compressed batch as a stream, the way
// Kafka does: the codec's reader decompresses into one small buffer, each
// record is parsed from it as it comes (its length, then its fields; keys,
// values and header values are skipped, never held), and the walk stops at
// the first bad record. A bomb of a few KiB that decompresses to 100 MiB of
// zeros is refused after its first byte, a zero record length. Memory is
// the buffer plus the decoder's own state (its window), whatever the size
// of the batch or of its records; the bytes streamed are still counted
// against the limit on the decompressed size.

// streamBufSize is the size of the buffer decompressed records are read
// through. Records larger than it are parsed across refills.
const streamBufSize = 16 << 10

// maxPooledSnappyBlock bounds the decoded snappy block a pooled reader
// keeps: xerial blocks are 32 KiB, a raw block can be much larger.
const maxPooledSnappyBlock = 1 << 20

// streamState is what reading one compressed batch needs beside the codec's
// pooled reader; it is pooled itself so that validation does not allocate.
type streamState struct {
	src    bytes.Reader
	snappy snappyReader
}

var streamStates = sync.Pool{New: func() any { return new(streamState) }}

// codecReader is a pooled decompressing reader over a batch's records.
type codecReader struct {
	r    io.Reader
	c    Codec
	gz   *gzip.Reader
	lz   *lz4.Reader
	zs   *zstd.Decoder
	name string
}

// open starts decompressing src, held by st.src, with c. Snappy needs the
// limit to refuse a block before decoding it.
func (cr *codecReader) open(st *streamState, c Codec, src []byte, limit int) error {
	cr.c = c
	st.src.Reset(src)
	switch c {
	case CodecGzip:
		cr.name = "gzip"
		zr, _ := gzipReaders.Get().(*gzip.Reader)
		var err error
		if zr == nil {
			zr, err = gzip.NewReader(&st.src)
		} else {
			err = zr.Reset(&st.src)
		}
		if err != nil {
			if zr != nil {
				gzipReaders.Put(zr)
			}
			return fmt.Errorf("%w: gzip: %w", ErrCorrupt, err)
		}
		cr.gz, cr.r = zr, zr
	case CodecSnappy:
		cr.name = "snappy"
		if err := st.snappy.reset(src, limit); err != nil {
			return err
		}
		cr.r = &st.snappy
	case CodecLZ4:
		cr.name = "lz4"
		cr.lz = lz4Readers.Get().(*lz4.Reader)
		cr.lz.Reset(&st.src)
		cr.r = cr.lz
	case CodecZstd:
		cr.name = "zstd"
		cr.zs = zstdReaders.Get().(*zstd.Decoder)
		if err := cr.zs.Reset(&st.src); err != nil {
			cr.close(st, false)
			return fmt.Errorf("%w: zstd: %w", ErrCorrupt, err)
		}
		cr.r = cr.zs
	default:
		return ErrUnknownCodec
	}
	return nil
}

// close returns the codec's reader to its pool, letting go of the batch.
// A zstd decoder is dropped instead after a batch that failed (keep
// false): its window is what the frame declared, up to maxZstdWindow, so a
// hostile frame could leave a pooled decoder holding 128 MiB until two
// garbage collections clear the pool, while dropped it goes with the next.
// The other codecs' buffers are bounded by the codec (lz4: two 4 MiB
// blocks), so their readers are kept for the next batch either way.
func (cr *codecReader) close(st *streamState, keep bool) {
	switch {
	case cr.zs != nil && !keep:
	case cr.gz != nil:
		gzipReaders.Put(cr.gz)
	case cr.lz != nil:
		cr.lz.Reset(nil)
		lz4Readers.Put(cr.lz)
	case cr.zs != nil:
		_ = cr.zs.Reset(nil) // only fails on a closed decoder
		zstdReaders.Put(cr.zs)
	}
	st.src.Reset(nil)
	st.snappy.src = nil
	if cap(st.snappy.blk) > maxPooledSnappyBlock {
		st.snappy.blk = nil
	}
	*cr = codecReader{}
}

// validateStream walks the records of compressed batch b through buf
// (whose capacity, at least binary.MaxVarintLen64, is the most it holds),
// feeding each to ck. It returns buf for reuse.
func validateStream(b Batch, ck *recordChecker, limit int, buf []byte) (_ []byte, err error) {
	st := streamStates.Get().(*streamState)
	defer streamStates.Put(st)
	var cr codecReader
	if err := cr.open(st, b.Codec(), b.Records(), limit); err != nil {
		return buf, err
	}
	defer func() { cr.close(st, err == nil) }()
	s := recordStream{r: cr.r, codec: cr.name, buf: buf[:0], limit: int64(limit)}
	var h recordHead
	for n := b.RecordCount(); ck.next < n; {
		if err := s.next(&h); err != nil {
			return s.buf, err
		}
		if err := ck.check(h.offsetDelta, h.timestampDelta, h.nullKey); err != nil {
			return s.buf, err
		}
	}
	// Read to the end: the trailing bytes a producer must not send, and
	// the codec's checksum, which only its end verifies.
	if s.fill(1) {
		return s.buf, fmt.Errorf("%w: bytes after the declared records", ErrInvalidRecord)
	}
	return s.buf, s.failure()
}

// recordHead is what validation needs of a record: not its key, value or
// headers, only whether the key is null.
type recordHead struct {
	timestampDelta int64
	offsetDelta    int32
	nullKey        bool
}

// recordStream parses records from a decompressing reader through buf.
type recordStream struct {
	r     io.Reader
	codec string
	buf   []byte // buf[pos:] is read but not parsed
	pos   int
	total int64 // bytes read from r, at most limit
	limit int64
	err   error // why r gave no more: io.EOF at its end
}

// fill reads until n bytes (n <= cap(buf)) are buffered and reports whether
// they are; if not, err says why.
func (s *recordStream) fill(n int) bool {
	for empty := 0; len(s.buf)-s.pos < n; {
		if s.err != nil {
			return false
		}
		if s.pos > 0 {
			s.buf = s.buf[:copy(s.buf, s.buf[s.pos:])]
			s.pos = 0
		}
		m, err := s.r.Read(s.buf[len(s.buf):cap(s.buf)])
		s.buf = s.buf[:len(s.buf)+m]
		s.total += int64(m)
		switch {
		case s.total > s.limit:
			s.err = ErrTooLarge
		case err != nil:
			s.err = err
		case m == 0:
			if empty++; empty == 100 {
				s.err = io.ErrNoProgress
			}
		}
	}
	return true
}

// failure is the error that stopped the stream, nil at its end.
func (s *recordStream) failure() error {
	switch {
	case s.err == nil, errors.Is(s.err, io.EOF):
		return nil
	case errors.Is(s.err, ErrTooLarge), errors.Is(s.err, ErrCorrupt):
		return s.err
	}
	return fmt.Errorf("%w: %s: %w", ErrCorrupt, s.codec, s.err)
}

// short is the error for bytes a record needs that the stream lacks.
func (s *recordStream) short() error {
	if err := s.failure(); err != nil {
		return err
	}
	return errRecord("record length beyond batch")
}

// skip consumes n bytes, which need not fit the buffer.
func (s *recordStream) skip(n int64) bool {
	for {
		avail := int64(len(s.buf) - s.pos)
		if n <= avail {
			s.pos += int(n)
			return true
		}
		n -= avail
		s.pos = len(s.buf)
		if !s.fill(1) {
			return false
		}
	}
}

// varlong reads a varint among the left bytes of a record, which must hold
// it; what names the field for the error.
func (s *recordStream) varlong(left *int64, what string) (int64, error) {
	want := int(min(*left, binary.MaxVarintLen64))
	if !s.fill(want) {
		return 0, s.short()
	}
	v, n := binary.Varint(s.buf[s.pos : s.pos+want])
	if n <= 0 {
		return 0, errRecord(what)
	}
	s.pos += n
	*left -= int64(n)
	return v, nil
}

// nullable skips a varint length and that many bytes, and reports whether
// the length was -1 (null).
func (s *recordStream) nullable(left *int64, what string) (bool, error) {
	n, err := s.varlong(left, what)
	if err != nil {
		return false, err
	}
	if n < -1 || n > *left {
		return false, errRecord(what)
	}
	if n == -1 {
		return true, nil
	}
	if !s.skip(n) {
		return false, s.short()
	}
	*left -= n
	return false, nil
}

// next parses one record into h. It checks what decodeRecord checks, with
// the same errors, but holds none of the record.
func (s *recordStream) next(h *recordHead) error {
	// The length: the last record may be shorter than a whole varint.
	s.fill(binary.MaxVarintLen64)
	length, n := binary.Varint(s.buf[s.pos:])
	if n <= 0 {
		if err := s.failure(); n == 0 && err != nil {
			return err // the stream broke in the varint
		}
		return errRecord("bad record length")
	}
	s.pos += n
	if length < 0 {
		return errRecord("record length beyond batch")
	}
	if length == 0 {
		return errRecord("empty record")
	}
	left := length
	if !s.fill(1) {
		return s.short()
	}
	s.pos++ // attributes
	left--
	var err error
	if h.timestampDelta, err = s.varlong(&left, "bad timestamp delta"); err != nil {
		return err
	}
	od, err := s.varlong(&left, "bad offset delta")
	if err != nil {
		return err
	}
	if od < math.MinInt32 || od > math.MaxInt32 {
		return errRecord("bad offset delta")
	}
	h.offsetDelta = int32(od)
	if h.nullKey, err = s.nullable(&left, "bad key"); err != nil {
		return err
	}
	if _, err = s.nullable(&left, "bad value"); err != nil {
		return err
	}
	nh, err := s.varlong(&left, "bad header count")
	if err != nil {
		return err
	}
	if nh < 0 {
		return errRecord("bad header count")
	}
	if nh > left/2 {
		return errRecord("header count beyond record")
	}
	for range nh {
		null, err := s.nullable(&left, "bad header key")
		if err != nil {
			return err
		}
		if null {
			return errRecord("bad header key")
		}
		if _, err := s.nullable(&left, "bad header value"); err != nil {
			return err
		}
	}
	if left != 0 {
		return errRecord("bytes left in record")
	}
	return nil
}

// snappyReader reads snappy as Kafka's clients send it, xerial-framed or
// one raw block, decoding a block at a time: a xerial stream of many
// blocks never needs more than one of them decoded.
type snappyReader struct {
	src    []byte // the blocks not yet decoded
	xerial bool
	done   bool   // the raw block is decoded
	blk    []byte // the decoded block; blk[pos:] is unread
	pos    int
	limit  int // decoded bytes still allowed
}

func (z *snappyReader) reset(src []byte, limit int) error {
	z.blk, z.pos, z.limit, z.done = z.blk[:0], 0, limit, false
	z.xerial = bytes.HasPrefix(src, xerialMagic)
	if !z.xerial {
		z.src = src
		return nil
	}
	if len(src) < xerialHeaderLen {
		return fmt.Errorf("%w: snappy: short xerial header", ErrCorrupt)
	}
	z.src = src[xerialHeaderLen:]
	return nil
}

func (z *snappyReader) Read(p []byte) (int, error) {
	for z.pos == len(z.blk) {
		if err := z.nextBlock(); err != nil {
			return 0, err
		}
	}
	n := copy(p, z.blk[z.pos:])
	z.pos += n
	return n, nil
}

func (z *snappyReader) nextBlock() error {
	if !z.xerial {
		if z.done {
			return io.EOF
		}
		z.done = true
		return z.decode(z.src)
	}
	if len(z.src) == 0 {
		return io.EOF
	}
	if len(z.src) < 4 {
		return fmt.Errorf("%w: snappy: short block length", ErrCorrupt)
	}
	n := binary.BigEndian.Uint32(z.src)
	z.src = z.src[4:]
	if uint64(n) > uint64(len(z.src)) {
		return fmt.Errorf("%w: snappy: block beyond input", ErrCorrupt)
	}
	blk := z.src[:n]
	z.src = z.src[n:]
	return z.decode(blk)
}

// decode decodes one raw block, checking its declared length against the
// limit before allocating for it.
func (z *snappyReader) decode(src []byte) error {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return fmt.Errorf("%w: snappy: %w", ErrCorrupt, err)
	}
	if n > z.limit {
		return ErrTooLarge
	}
	z.blk = slices.Grow(z.blk[:0], n)[:n]
	out, err := snappy.Decode(z.blk, src)
	if err != nil {
		return fmt.Errorf("%w: snappy: %w", ErrCorrupt, err)
	}
	z.blk, z.pos = out, 0
	z.limit -= len(out)
	return nil
}
