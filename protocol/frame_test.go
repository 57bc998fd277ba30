package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"runtime"
	"testing"
	"testing/iotest"
)

// frameBytes returns size as 4 big-endian bytes followed by body.
func frameBytes(size int32, body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(size)), body...)
}

// allocatedBytes returns how many bytes of heap fn allocates (the whole
// process's, so callers leave some slack for the test framework's own).
func allocatedBytes(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestReadFrameValid(t *testing.T) {
	const maxSize = 64
	for _, n := range []int{1, 2, 17, maxSize} {
		body := bytes.Repeat([]byte{byte(n)}, n)
		got, err := ReadFrame(bytes.NewReader(frameBytes(int32(n), body)), maxSize, nil)
		if err != nil {
			t.Fatalf("size %d: got error %v, want the body", n, err)
		}
		if !bytes.Equal(got, body) {
			t.Fatalf("size %d: got body %x, want %x", n, got, body)
		}
	}
}

func TestReadFrameSequenceAndCleanEOF(t *testing.T) {
	var stream []byte
	bodies := [][]byte{[]byte("a"), []byte("hello"), bytes.Repeat([]byte("x"), 300), []byte("z")}
	for _, b := range bodies {
		stream = append(stream, frameBytes(int32(len(b)), b)...)
	}
	// One byte at a time, to exercise short reads everywhere.
	r := iotest.OneByteReader(bytes.NewReader(stream))
	var buf []byte
	for i, want := range bodies {
		got, err := ReadFrame(r, 1024, buf)
		if err != nil {
			t.Fatalf("frame %d: got error %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("frame %d: got %q, want %q", i, got, want)
		}
		buf = got
	}
	if _, err := ReadFrame(r, 1024, buf); err != io.EOF { //nolint:errorlint // the contract is io.EOF itself
		t.Fatalf("after the last frame: got %v, want io.EOF itself", err)
	}
}

func TestReadFrameReusesBuffer(t *testing.T) {
	buf := make([]byte, 0, 128)
	got, err := ReadFrame(bytes.NewReader(frameBytes(5, []byte("hello"))), 1024, buf)
	if err != nil {
		t.Fatal(err)
	}
	if &got[0] != &buf[:1][0] {
		t.Fatalf("frame of 5 bytes not read into the 128-byte buffer given")
	}

	// Steady state: a reused buffer means no allocation per frame.
	data := frameBytes(100, bytes.Repeat([]byte{7}, 100))
	rd := bytes.NewReader(data)
	allocs := testing.AllocsPerRun(100, func() {
		rd.Reset(data)
		if _, err := ReadFrame(rd, 1024, buf); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("got %v allocations per frame with a reused buffer, want 0", allocs)
	}
}

func TestReadFrameRejectsSizeBeforeAllocating(t *testing.T) {
	const maxSize = 1 << 20
	for _, tc := range []struct {
		name string
		size int32
	}{
		{"zero", 0},
		{"minus one", -1},
		{"most negative", math.MinInt32},
		{"one over max", maxSize + 1},
		{"int32 max", math.MaxInt32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The body is there, so only the size check can stop
			// ReadFrame from allocating and reading it.
			data := append(frameBytes(tc.size, nil), make([]byte, 64)...)
			var err error
			n := allocatedBytes(func() {
				_, err = ReadFrame(bytes.NewReader(data), maxSize, nil)
			})
			if !errors.Is(err, ErrFrameSize) {
				t.Fatalf("got error %v, want ErrFrameSize", err)
			}
			if n > 64<<10 { // a body allocation would be at least 1 MiB
				t.Fatalf("rejecting size %d allocated %d bytes, want next to nothing", tc.size, n)
			}

			buf := make([]byte, 0, 16)
			// The least of a few measurements: a collection in the middle
			// of one empties fmt's pool of printers, and the next error
			// then allocates a new one.
			allocs := math.Inf(1)
			for range 5 {
				allocs = min(allocs, testing.AllocsPerRun(20, func() {
					if _, err := ReadFrame(bytes.NewReader(data), maxSize, buf); !errors.Is(err, ErrFrameSize) {
						t.Fatalf("got %v, want ErrFrameSize", err)
					}
				}))
			}
			// bytes.NewReader and the wrapped error; nothing sized by the frame.
			if allocs > 6 {
				t.Fatalf("got %v allocations rejecting a frame, want a handful", allocs)
			}
		})
	}
}

func TestReadFrameTruncated(t *testing.T) {
	full := frameBytes(10, []byte("0123456789"))
	for cut := 1; cut < len(full); cut++ {
		_, err := ReadFrame(bytes.NewReader(full[:cut]), 1024, nil)
		if !errors.Is(err, ErrFrameTruncated) || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("cut after %d of %d bytes: got %v, want ErrFrameTruncated and io.ErrUnexpectedEOF", cut, len(full), err)
		}
		if errors.Is(err, io.EOF) {
			t.Fatalf("cut after %d bytes: a truncated frame must not look like a clean EOF", cut)
		}
	}
	if _, err := ReadFrame(bytes.NewReader(nil), 1024, nil); err != io.EOF { //nolint:errorlint // the contract is io.EOF itself
		t.Fatalf("empty stream: got %v, want io.EOF", err)
	}
}

// A peer that announces the largest frame it may send and then stalls must
// not make ReadFrame allocate the whole frame up front.
func TestReadFrameLargeSizeGrowsWithData(t *testing.T) {
	data := append(frameBytes(math.MaxInt32, nil), make([]byte, 10)...)
	var err error
	n := allocatedBytes(func() {
		_, err = ReadFrame(bytes.NewReader(data), math.MaxInt32, nil)
	})
	if !errors.Is(err, ErrFrameTruncated) {
		t.Fatalf("got %v, want ErrFrameTruncated", err)
	}
	// One first chunk, plus slack for the error and the test framework.
	if limit := uint64(eagerFrameSize + 64<<10); n > limit {
		t.Fatalf("a 2 GiB frame with 10 bytes sent allocated %d bytes, want at most %d", n, limit)
	}
}

func TestReadFrameLargeBody(t *testing.T) {
	body := make([]byte, 3*eagerFrameSize+12345)
	for i := range body {
		body[i] = byte(i * 7)
	}
	data := frameBytes(int32(len(body)), body)
	got, err := ReadFrame(iotest.HalfReader(bytes.NewReader(data)), DefaultMaxFrameSize, make([]byte, 0, 100))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, body) {
		t.Fatalf("large body read back differs (len %d, want %d)", len(got), len(body))
	}
	// A body the buffer can hold is read into it, however large.
	got2, err := ReadFrame(bytes.NewReader(data), DefaultMaxFrameSize, got[:0])
	if err != nil || &got2[0] != &got[0] {
		t.Fatalf("got err %v; want the second large frame read into the first's buffer", err)
	}
}

func TestReadFrameReadError(t *testing.T) {
	boom := errors.New("boom")
	full := frameBytes(10, []byte("0123456789"))
	for _, cut := range []int{0, 2, 4, 9} {
		r := io.MultiReader(bytes.NewReader(full[:cut]), iotest.ErrReader(boom))
		_, err := ReadFrame(r, 1024, nil)
		if !errors.Is(err, boom) {
			t.Fatalf("error after %d bytes: got %v, want it to wrap the reader's error", cut, err)
		}
		if errors.Is(err, ErrFrameTruncated) || errors.Is(err, io.EOF) {
			t.Fatalf("error after %d bytes: got %v, which should not look like EOF or truncation", cut, err)
		}
	}
}

func TestFrameWriting(t *testing.T) {
	dst := []byte("prefix")
	dst, start := BeginFrame(dst)
	dst = append(dst, "hello"...)
	if err := FinishFrame(dst, start); err != nil {
		t.Fatal(err)
	}
	dst, err := AppendFrame(dst, []byte("world!"))
	if err != nil {
		t.Fatal(err)
	}
	want := "prefix\x00\x00\x00\x05hello\x00\x00\x00\x06world!"
	if string(dst) != want {
		t.Fatalf("got %q, want %q", dst, want)
	}

	r := bytes.NewReader(dst[len("prefix"):])
	for _, w := range []string{"hello", "world!"} {
		got, err := ReadFrame(r, 100, nil)
		if err != nil || string(got) != w {
			t.Fatalf("read back %q, %v; want %q", got, err, w)
		}
	}

	for _, start := range []int{-1, len(dst) - 3, len(dst) + 1} {
		if err := FinishFrame(dst, start); !errors.Is(err, ErrFrameSize) {
			t.Fatalf("FinishFrame with start %d of %d bytes: got %v, want ErrFrameSize", start, len(dst), err)
		}
	}
}
