package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/klauspost/compress/snappy"
)

var codecs = []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}

// testPayload returns n bytes of text-like, compressible data, the same for
// the same n and seed.
func testPayload(n int, seed uint64) []byte {
	words := []string{"kafka", "record", "batch", "offset", "partition", "leader", "epoch", "{\"id\":", "}", " ", "\n", "0123"}
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]byte, 0, n+16)
	for len(out) < n {
		out = append(out, words[r.IntN(len(words))]...)
	}
	return out[:n]
}

// randomPayload returns n incompressible bytes, the same for the same n.
func randomPayload(n int) []byte {
	r := rand.New(rand.NewPCG(uint64(n), 2))
	out := make([]byte, n)
	for i := range out {
		out[i] = byte(r.Uint32())
	}
	return out
}

func TestCompressRoundTrip(t *testing.T) {
	t.Parallel()
	sizes := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"1 byte", []byte{42}},
		{"100 KiB text", testPayload(100<<10, 1)},
		{"1 MiB random", randomPayload(1 << 20)},
	}
	for _, c := range codecs {
		for _, s := range sizes {
			t.Run(fmt.Sprintf("%v/%s", c, s.name), func(t *testing.T) {
				t.Parallel()
				prefix := []byte("before")
				comp, err := Compress(bytes.Clone(prefix), c, s.data)
				if err != nil {
					t.Fatalf("Compress: %v", err)
				}
				if !bytes.Equal(comp[:len(prefix)], prefix) {
					t.Fatalf("Compress changed the %d bytes before its output", len(prefix))
				}
				comp = comp[len(prefix):]
				out, err := Decompress(bytes.Clone(prefix), c, comp, len(s.data))
				if err != nil {
					t.Fatalf("Decompress with a limit of exactly %d: %v", len(s.data), err)
				}
				if !bytes.Equal(out[:len(prefix)], prefix) || !bytes.Equal(out[len(prefix):], s.data) {
					t.Fatalf("round trip of %d bytes gave %d bytes back (prefix kept: %v)",
						len(s.data), len(out)-len(prefix), bytes.Equal(out[:len(prefix)], prefix))
				}
				if len(s.data) > 0 {
					out, err := Decompress(bytes.Clone(prefix), c, comp, len(s.data)-1)
					if !errors.Is(err, ErrTooLarge) || !bytes.Equal(out, prefix) {
						t.Fatalf("Decompress with a limit one below %d: %d bytes, %v; want the prefix back and %v",
							len(s.data), len(out), err, ErrTooLarge)
					}
				}
			})
		}
	}
}

// TestCompressSnappyXerial: Compress frames snappy as snappy-java does, in
// blocks of 32 KiB of input, and the golden kafka-python batches are framed
// the same way.
func TestCompressSnappyXerial(t *testing.T) {
	t.Parallel()
	check := func(name string, stream []byte, inputSize int) {
		t.Helper()
		wantHeader := append(append([]byte{}, xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1)
		if !bytes.HasPrefix(stream, wantHeader) {
			t.Fatalf("%s: stream starts % x, want the xerial header % x", name, stream[:min(len(stream), 16)], wantHeader)
		}
		blocks, total := 0, 0
		for rest := stream[xerialHeaderLen:]; len(rest) > 0; blocks++ {
			n := int(binary.BigEndian.Uint32(rest))
			dlen, err := snappy.DecodedLen(rest[4 : 4+n])
			if err != nil || dlen > xerialBlockSize {
				t.Fatalf("%s: block %d decodes to %d bytes (err %v), want at most %d", name, blocks, dlen, err, xerialBlockSize)
			}
			total += dlen
			rest = rest[4+n:]
		}
		if want := (inputSize + xerialBlockSize - 1) / xerialBlockSize; blocks != want || total != inputSize {
			t.Fatalf("%s: %d blocks holding %d bytes, want %d blocks holding %d", name, blocks, total, want, inputSize)
		}
	}
	for _, n := range []int{0, 1, xerialBlockSize, xerialBlockSize + 1, 100 << 10} {
		comp, err := Compress(nil, CodecSnappy, testPayload(n, 3))
		if err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("Compress of %d bytes", n), comp, n)
	}
	for _, name := range []string{"batch-snappy", "batch-snappy-large"} {
		b := goldenBatchBytes(t, name)
		out, err := Decompress(nil, CodecSnappy, b.Records(), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		check(name, b.Records(), len(out))
	}
}

// TestDecompressRawSnappy: clients other than Java's (Sarama, some
// librdkafka builds) send raw snappy blocks without the xerial framing.
func TestDecompressRawSnappy(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 100 << 10} {
		data := testPayload(n, 4)
		raw := snappy.Encode(nil, data)
		out, err := Decompress(nil, CodecSnappy, raw, n)
		if err != nil || !bytes.Equal(out, data) {
			t.Fatalf("raw snappy of %d bytes: %d bytes back, err %v; want them all, nil", n, len(out), err)
		}
		if n > 0 {
			if _, err := Decompress(nil, CodecSnappy, raw, n-1); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("raw snappy of %d bytes with limit %d: %v, want %v", n, n-1, err, ErrTooLarge)
			}
		}
	}
}

func TestDecompressXerialMalformed(t *testing.T) {
	t.Parallel()
	hdr := append(append([]byte{}, xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1)
	block := snappy.Encode(nil, []byte("hello hello hello"))
	withBlock := func(n uint32, b []byte) []byte {
		out := binary.BigEndian.AppendUint32(bytes.Clone(hdr), n)
		return append(out, b...)
	}
	cases := []struct {
		name string
		src  []byte
	}{
		{"magic only", xerialMagic},
		{"header cut short", hdr[:12]},
		{"block length cut short", append(bytes.Clone(hdr), 0, 0)},
		{"block beyond input", withBlock(uint32(len(block)+1), block)},
		{"huge block length", withBlock(0xffffffff, block)},
		{"empty block", withBlock(0, nil)},
		{"garbage block", withBlock(4, []byte{0xff, 0xff, 0xff, 0xff})},
		{"good block then garbage", append(withBlock(uint32(len(block)), block), 0, 0, 0, 3, 1, 2, 3)},
		{"raw garbage", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{"raw, no bytes", nil},
	}
	for _, c := range cases {
		out, err := Decompress([]byte("p"), CodecSnappy, c.src, 1<<20)
		if !errors.Is(err, ErrCorrupt) || string(out) != "p" {
			t.Errorf("%s: %q, %v; want the prefix back and %v", c.name, out, err, ErrCorrupt)
		}
	}
	out, err := Decompress(nil, CodecSnappy, hdr, 10)
	if err != nil || len(out) != 0 {
		t.Errorf("xerial header with no blocks: %d bytes, %v; want none, nil", len(out), err)
	}
}

func TestDecompressCorrupt(t *testing.T) {
	t.Parallel()
	data := testPayload(10000, 5)
	for _, c := range []Codec{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		comp, err := Compress(nil, c, data)
		if err != nil {
			t.Fatal(err)
		}
		cases := map[string][]byte{
			"garbage":        bytes.Repeat([]byte{0x5a}, 100),
			"cut in half":    comp[:len(comp)/2],
			"cut by 1":       comp[:len(comp)-1],
			"trailing bytes": append(bytes.Clone(comp), 1, 2, 3),
		}
		for name, src := range cases {
			out, err := Decompress([]byte("p"), c, src, 1<<20)
			if !errors.Is(err, ErrCorrupt) || string(out) != "p" {
				t.Errorf("%v %s: %d bytes, %v; want the prefix back and %v", c, name, len(out), err, ErrCorrupt)
			}
		}
		// A checksummed frame with a flipped byte in its middle fails: gzip
		// and lz4 (as Compress writes it) and zstd carry checksums, snappy
		// blocks a CRC.
		flipped := bytes.Clone(comp)
		flipped[len(flipped)/2] ^= 0x10
		if out, err := Decompress(nil, c, flipped, 1<<20); err == nil && bytes.Equal(out, data) {
			t.Errorf("%v: a flipped byte went unnoticed and gave the original back", c)
		} else if err == nil {
			t.Errorf("%v: a flipped byte decoded to %d different bytes without error", c, len(out))
		}
	}
}

func TestUnknownCodec(t *testing.T) {
	t.Parallel()
	for _, c := range []Codec{5, 6, 7, -1} {
		if out, err := Decompress([]byte("p"), c, []byte("x"), 10); !errors.Is(err, ErrUnknownCodec) || string(out) != "p" {
			t.Errorf("Decompress with codec %d: %q, %v; want the prefix back and %v", c, out, err, ErrUnknownCodec)
		}
		if _, err := Compress(nil, c, []byte("x")); !errors.Is(err, ErrUnknownCodec) {
			t.Errorf("Compress with codec %d: %v, want %v", c, err, ErrUnknownCodec)
		}
	}
}

// bomb is a small input that decompresses to 256 MiB of zeros: 256 copies
// of one frame of 1 MiB (gzip members, lz4 and zstd frames and xerial blocks may
// all follow one another). Building it from one 1 MiB frame keeps the test
// fast under the race detector.
type bomb struct {
	one []byte // the first frame (with the xerial header for snappy)
	all []byte // 256 of them
}

const bombSize = 256 << 20

var bombs = sync.OnceValue(func() map[Codec]bomb {
	const copies = bombSize / (1 << 20)
	zeros := make([]byte, 1<<20)
	out := map[Codec]bomb{}
	for _, c := range []Codec{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		one, err := Compress(nil, c, zeros)
		if err != nil {
			panic(err)
		}
		if c == CodecSnappy {
			// One xerial header, then the blocks over and over.
			out[c] = bomb{one, append(one[:xerialHeaderLen:xerialHeaderLen], bytes.Repeat(one[xerialHeaderLen:], copies)...)}
			continue
		}
		out[c] = bomb{one, bytes.Repeat(one, copies)}
	}
	return out
})

func TestDecompressBombs(t *testing.T) {
	t.Parallel()
	for c, b := range bombs() {
		for _, limit := range []int{0, 1, 64 << 10, 1<<20 + 1} {
			out, err := Decompress([]byte("p"), c, b.all, limit)
			if !errors.Is(err, ErrTooLarge) || string(out) != "p" {
				t.Errorf("%v bomb of %d bytes, limit %d: %d bytes, %v; want the prefix back and %v",
					c, len(b.all), limit, len(out), err, ErrTooLarge)
			}
		}
		// Frames that follow one another are all read: two of them make
		// 2 MiB.
		two := b.all[:2*len(b.one)]
		if c == CodecSnappy {
			two = b.all[:2*len(b.one)-xerialHeaderLen]
		}
		out, err := Decompress(nil, c, two, 2<<20)
		if err != nil || len(out) != 2<<20 {
			t.Errorf("%v: two frames of 1 MiB: %d bytes, %v; want %d, nil", c, len(out), err, 2<<20)
		}
	}
	// A raw snappy block declares its size up front: it is refused before
	// anything is allocated for it.
	raw := snappy.Encode(nil, make([]byte, 4<<20))
	if _, err := Decompress(nil, CodecSnappy, raw, 1<<20); !errors.Is(err, ErrTooLarge) {
		t.Errorf("raw snappy block of 4 MiB with a 1 MiB limit: %v, want %v", err, ErrTooLarge)
	}
}

// TestDecompressBombMemory: refusing a bomb allocates about the limit, not
// the bomb's size. Not parallel, so that the allocation count is its own.
func TestDecompressBombMemory(t *testing.T) {
	// Decoder state (lz4 blocks of 4 MiB, which the race detector's pools
	// do not keep, zstd windows) and the output growing to the limit.
	const budget = 32 << 20
	for c, b := range bombs() {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Decompress(nil, c, b.all, 1<<20)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("%v: %v, want %v", c, err, ErrTooLarge)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > budget {
			t.Errorf("%v: refusing a %d MiB bomb at 1 MiB allocated %d MiB, want at most %d", c, bombSize>>20, got>>20, budget>>20)
		}
	}
}

// TestZstdWindowLimit: a zstd frame declaring a window above Kafka's limit
// (128 MiB, zstd's default) is refused before its window is allocated. Not
// parallel: it counts allocations, and accepting the 128 MiB window
// allocates that much.
func TestZstdWindowLimit(t *testing.T) {
	// Magic, a frame header descriptor with no content size and a window
	// descriptor, then one last RLE block of one byte 'x'.
	frame := func(windowDescriptor byte) []byte {
		return []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, windowDescriptor, 0x0b, 0x00, 0x00, 'x'}
	}
	cases := []struct {
		desc   byte
		window string
		ok     bool
	}{
		{0x00, "1 KiB", true},
		{0x68, "8 MiB", true},
		{0x88, "128 MiB", true},
		{0x89, "144 MiB", false},
		{0x90, "256 MiB", false},
		{0x98, "512 MiB", false},
		{0xf8, "2 TiB", false},
	}
	for _, c := range cases {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		out, err := Decompress(nil, CodecZstd, frame(c.desc), 1<<10)
		runtime.ReadMemStats(&after)
		if c.ok {
			if err != nil || string(out) != "x" {
				t.Errorf("window %s: %q, %v; want \"x\", nil", c.window, out, err)
			}
			continue
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("window %s: %q, %v; want %v", c.window, out, err, ErrCorrupt)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
			t.Errorf("window %s: refusing the frame allocated %d MiB, want under 1", c.window, got>>20)
		}
	}
}

// TestDecompressGolden decompresses every golden compressed batch; the
// records it finds are checked in TestGoldenValidate.
func TestDecompressGolden(t *testing.T) {
	t.Parallel()
	magic := map[Codec][]byte{
		CodecGzip:   {0x1f, 0x8b},
		CodecSnappy: xerialMagic,
		CodecLZ4:    {0x04, 0x22, 0x4d, 0x18},
		CodecZstd:   {0x28, 0xb5, 0x2f, 0xfd},
	}
	seen := map[Codec]bool{}
	for _, g := range goldenFiles(t) {
		it := NewIter(g.data)
		for i := 0; ; i++ {
			b, ok := it.Next()
			if !ok {
				break
			}
			w := g.set.Batches[i]
			c := codecByName(t, w.Codec)
			if b.Codec() != c {
				t.Fatalf("%s batch %d: codec %v, JSON says %v", g.name, i, b.Codec(), c)
			}
			if c == CodecNone {
				continue
			}
			seen[c] = true
			if !bytes.HasPrefix(b.Records(), magic[c]) {
				t.Errorf("%s batch %d: records start % x, want the %v magic % x", g.name, i, b.Records()[:4], c, magic[c])
			}
			out, err := Decompress(nil, c, b.Records(), 1<<20)
			if err != nil {
				t.Fatalf("%s batch %d: Decompress: %v", g.name, i, err)
			}
			it := NewRecordIter(out, b.RecordCount())
			n := 0
			for it.Next() != nil {
				n++
			}
			if it.Err() != nil || n != len(w.Records) {
				t.Fatalf("%s batch %d: %d records in the decompressed bytes, err %v; want %d", g.name, i, n, it.Err(), len(w.Records))
			}
		}
	}
	for _, c := range []Codec{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		if !seen[c] {
			t.Errorf("no golden batch uses %v", c)
		}
	}
}

// TestCodecsConcurrent runs good, corrupt and oversized inputs through the
// pooled decoders from several goroutines: a decoder that failed must come
// back from the pool clean, and the race detector watches the pools.
func TestCodecsConcurrent(t *testing.T) {
	t.Parallel()
	data := testPayload(50<<10, 6)
	comp := map[Codec][]byte{}
	for _, c := range codecs {
		var err error
		if comp[c], err = Compress(nil, c, data); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				c := codecs[(g+i)%len(codecs)]
				src := comp[c]
				switch i % 3 {
				case 0:
					out, err := Decompress(nil, c, src, len(data))
					if err != nil || !bytes.Equal(out, data) {
						errs <- fmt.Errorf("%v: %d bytes, %w; want the %d original bytes", c, len(out), err, len(data))
						return
					}
				case 1:
					if c != CodecNone {
						if _, err := Decompress(nil, c, src[:len(src)/2], len(data)); err == nil {
							errs <- fmt.Errorf("%v: half a stream decoded without error", c)
							return
						}
					}
				case 2:
					if _, err := Decompress(nil, c, src, len(data)/2); !errors.Is(err, ErrTooLarge) {
						errs <- fmt.Errorf("%v: limit of half: %w, want ErrTooLarge", c, err)
						return
					}
				}
				if _, err := Compress(nil, c, data[:1000*i]); err != nil {
					errs <- fmt.Errorf("%v: Compress: %w", c, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
