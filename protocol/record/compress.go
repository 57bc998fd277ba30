package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Kafka's Java clients frame snappy the way the xerial snappy-java library
// does: a 16-byte header (the magic below, then version 1 and compatible
// version 1 as int32), followed by blocks, each an int32 big-endian length
// and a raw snappy block. Other clients send raw snappy; both are read.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	xerialHeaderLen = 16
	xerialBlockSize = 32 << 10 // the block size snappy-java writes

	// maxZstdWindow is the largest zstd window accepted, the default limit
	// of the zstd library Kafka uses (1<<ZSTD_WINDOWLOG_LIMIT_DEFAULT). The
	// decoder allocates the window a frame declares before it decodes
	// anything, so without a bound a 10-byte frame costs 512 MiB.
	maxZstdWindow = 1 << 27
)

// Pools of (de)compressors: they hold large buffers worth keeping between
// batches. Readers and writers are Reset before each use.
var (
	gzipReaders sync.Pool
	gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}
	lz4Readers  = sync.Pool{New: func() any { return lz4.NewReader(nil) }}
	lz4Writers  = sync.Pool{New: func() any { return lz4.NewWriter(nil) }}
	zstdReaders = sync.Pool{New: func() any {
		// Concurrency 1 decodes synchronously, so a pooled decoder owns no
		// goroutines and needs no Close when the pool drops it.
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(maxZstdWindow))
		if err != nil {
			panic(err) // only bad options fail, and these are constant
		}
		return d
	}}
	zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		if err != nil {
			panic(err) // only bad options fail, and these are constant
		}
		return e
	})
)

// Decompress appends the decompressed form of src, compressed with c, to dst.
// It fails with ErrTooLarge rather than produce more than limit bytes, so a
// small hostile batch cannot make the broker allocate without bound.
func Decompress(dst []byte, c Codec, src []byte, limit int) ([]byte, error) {
	switch c {
	case CodecNone:
		if len(src) > limit {
			return dst, ErrTooLarge
		}
		return append(dst, src...), nil
	case CodecGzip:
		zr, _ := gzipReaders.Get().(*gzip.Reader)
		var err error
		if zr == nil {
			zr, err = gzip.NewReader(bytes.NewReader(src))
		} else {
			err = zr.Reset(bytes.NewReader(src))
		}
		if err != nil {
			return dst, fmt.Errorf("%w: gzip: %w", ErrCorrupt, err)
		}
		defer gzipReaders.Put(zr)
		return readLimited(dst, zr, limit, "gzip")
	case CodecSnappy:
		return decodeSnappy(dst, src, limit)
	case CodecLZ4:
		zr := lz4Readers.Get().(*lz4.Reader)
		defer lz4Readers.Put(zr)
		zr.Reset(bytes.NewReader(src))
		return readLimited(dst, zr, limit, "lz4")
	case CodecZstd:
		zr := zstdReaders.Get().(*zstd.Decoder)
		defer zstdReaders.Put(zr)
		if err := zr.Reset(bytes.NewReader(src)); err != nil {
			return dst, fmt.Errorf("%w: zstd: %w", ErrCorrupt, err)
		}
		return readLimited(dst, zr, limit, "zstd")
	}
	return dst, ErrUnknownCodec
}

// readLimited reads r to its end onto dst, failing once more than limit
// bytes have come.
func readLimited(dst []byte, r io.Reader, limit int, codec string) ([]byte, error) {
	start := len(dst)
	for {
		if len(dst)-start > limit {
			return dst[:start], ErrTooLarge
		}
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if errors.Is(err, io.EOF) {
			if len(dst)-start > limit {
				return dst[:start], ErrTooLarge
			}
			return dst, nil
		}
		if err != nil {
			return dst[:start], fmt.Errorf("%w: %s: %w", ErrCorrupt, codec, err)
		}
	}
}

func decodeSnappy(dst, src []byte, limit int) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialMagic) {
		return snappyBlock(dst, src, limit)
	}
	if len(src) < xerialHeaderLen {
		return dst, fmt.Errorf("%w: snappy: short xerial header", ErrCorrupt)
	}
	start := len(dst)
	src = src[xerialHeaderLen:]
	for len(src) > 0 {
		if len(src) < 4 {
			return dst[:start], fmt.Errorf("%w: snappy: short block length", ErrCorrupt)
		}
		n := binary.BigEndian.Uint32(src)
		src = src[4:]
		if uint64(n) > uint64(len(src)) {
			return dst[:start], fmt.Errorf("%w: snappy: block beyond input", ErrCorrupt)
		}
		var err error
		if dst, err = snappyBlock(dst, src[:n], limit-(len(dst)-start)); err != nil {
			return dst[:start], err
		}
		src = src[n:]
	}
	return dst, nil
}

// snappyBlock appends one raw snappy block, checking its declared length
// against limit before allocating for it.
func snappyBlock(dst, src []byte, limit int) ([]byte, error) {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return dst, fmt.Errorf("%w: snappy: %w", ErrCorrupt, err)
	}
	if n > limit {
		return dst, ErrTooLarge
	}
	start := len(dst)
	dst = grow(dst, n)
	out, err := snappy.Decode(dst[start:start+n], src)
	if err != nil {
		return dst[:start], fmt.Errorf("%w: snappy: %w", ErrCorrupt, err)
	}
	return dst[:start+len(out)], nil
}

// grow returns dst with room for n more bytes past its length, and its length
// extended by n. It grows the capacity as append does, so that a xerial
// stream of many blocks is not copied again for each block.
func grow(dst []byte, n int) []byte {
	return slices.Grow(dst, n)[:len(dst)+n]
}

// Compress appends src compressed with c to dst, framed as Kafka's Java
// clients frame it (xerial for snappy, the LZ4 frame format for lz4).
func Compress(dst []byte, c Codec, src []byte) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	switch c {
	case CodecNone:
		return append(dst, src...), nil
	case CodecGzip:
		zw := gzipWriters.Get().(*gzip.Writer)
		defer gzipWriters.Put(zw)
		zw.Reset(buf)
		if _, err := zw.Write(src); err != nil {
			return dst, err
		}
		if err := zw.Close(); err != nil {
			return dst, err
		}
		return buf.Bytes(), nil
	case CodecSnappy:
		dst = append(dst, xerialMagic...)
		dst = binary.BigEndian.AppendUint32(dst, 1) // version
		dst = binary.BigEndian.AppendUint32(dst, 1) // compatible version
		for len(src) > 0 {
			blk := src[:min(len(src), xerialBlockSize)]
			src = src[len(blk):]
			lenAt := len(dst)
			dst = binary.BigEndian.AppendUint32(dst, 0)
			bound := snappy.MaxEncodedLen(len(blk))
			dst = grow(dst, bound)
			enc := snappy.Encode(dst[len(dst)-bound:], blk)
			dst = dst[:len(dst)-bound+len(enc)]
			binary.BigEndian.PutUint32(dst[lenAt:], uint32(len(enc)))
		}
		return dst, nil
	case CodecLZ4:
		zw := lz4Writers.Get().(*lz4.Writer)
		defer lz4Writers.Put(zw)
		zw.Reset(buf)
		if _, err := zw.Write(src); err != nil {
			return dst, err
		}
		if err := zw.Close(); err != nil {
			return dst, err
		}
		return buf.Bytes(), nil
	case CodecZstd:
		return zstdEncoder().EncodeAll(src, dst), nil
	}
	return dst, ErrUnknownCodec
}
