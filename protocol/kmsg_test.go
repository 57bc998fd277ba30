package protocol

// These tests check the decoder we rely on for every request body: that
// kmsg's ReadFrom checks array, string and byte lengths against the bytes
// that remain before allocating for them (the lesson of CVE-2022-34917,
// where Kafka itself allocated from an unchecked length). They pin the
// behaviour of the kmsg version in go.mod; if one fails after a kmsg upgrade,
// the upgrade reintroduced the problem.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A body that declares 2^31-1 topics in 10 bytes must fail at once.
func TestKmsgReadFromRejectsHugeArrayLength(t *testing.T) {
	for _, c := range []struct {
		version int16
		body    []byte
		null    bool // the length decodes as negative: a null array, no error
	}{
		// int32 array length, then padding.
		{0, []byte{0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0}, false},
		{4, []byte{0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0}, false},
		// Compact array: uvarint 2^31 means 2^31-1 elements.
		{9, []byte{0x80, 0x80, 0x80, 0x80, 0x08, 0, 0, 0, 0, 0}, false},
		{12, []byte{0x80, 0x80, 0x80, 0x80, 0x08, 0, 0, 0, 0, 0}, false},
		// uvarint 2^32-1 is 2^32-2 elements, which as an int32 is -2:
		// like Kafka, kmsg reads any negative length as null (for
		// Metadata, "all topics") and allocates nothing.
		{12, []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0, 0, 0, 0}, true},
	} {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(c.version)
		var err error
		n := allocatedBytes(func() { err = req.ReadFrom(c.body) })
		if c.null && (err != nil || req.Topics != nil) {
			t.Errorf("Metadata v%d body %x: got %v and %d topics, want a null topic array", c.version, c.body, err, len(req.Topics))
		}
		if !c.null && err == nil {
			t.Errorf("Metadata v%d body %x: ReadFrom accepted it (%d topics)", c.version, c.body, len(req.Topics))
		}
		if n > 64<<10 {
			t.Errorf("Metadata v%d body %x: ReadFrom allocated %d bytes before failing", c.version, c.body, n)
		}
	}
}

// Every request kmsg knows, at every version, fed small bodies with a huge
// length (int32, int16 or uvarint) at every position, must not allocate
// more than a small bound.
func TestKmsgReadFromHostileLengthsEveryAPI(t *testing.T) {
	const bodyLen = 48
	patterns := [][]byte{
		{0x7f, 0xff, 0xff, 0xff},       // int32 max
		{0x7f, 0xff},                   // int16 max
		{0xff, 0xff, 0xff, 0xff, 0x07}, // uvarint 2^31-1
		{0x80, 0x80, 0x80, 0x80, 0x08}, // uvarint 2^31
	}
	var bodies [][]byte
	for _, fill := range []byte{0x00, 0x01, 0x7f} {
		for _, p := range patterns {
			for pos := 0; pos+len(p) <= bodyLen; pos++ {
				b := bytes.Repeat([]byte{fill}, bodyLen)
				copy(b[pos:], p)
				bodies = append(bodies, b)
			}
		}
	}

	var worst uint64
	var worstName string
	for key := int16(0); key <= kmsg.MaxKey; key++ {
		proto := kmsg.RequestForKey(key)
		if proto == nil {
			continue
		}
		for v := int16(0); v <= proto.MaxVersion(); v++ {
			n := allocatedBytes(func() {
				for _, b := range bodies {
					r := kmsg.RequestForKey(key)
					r.SetVersion(v)
					_ = r.ReadFrom(b)
				}
			})
			perBody := n / uint64(len(bodies))
			if perBody > worst {
				worst, worstName = perBody, fmt.Sprintf("%s v%d", kmsg.NameForKey(key), v)
			}
			if n > 16<<20 {
				t.Errorf("%s v%d: %d hostile %d-byte bodies allocated %d bytes", kmsg.NameForKey(key), v, len(bodies), bodyLen, n)
			}
		}
	}
	t.Logf("worst average allocation per hostile %d-byte body: %d bytes (%s)", bodyLen, worst, worstName)
}

// The guard is "no more elements than bytes left" (or than bytes left over
// the element's minimum wire size), so what kmsg allocates still grows with
// the body, by the ratio of an element's size in memory to its size on the
// wire. This measures that ratio for two arrays of the smallest elements a
// request can hold; the frame size limit is what bounds it in absolute terms.
func TestKmsgReadFromAllocationIsLinear(t *testing.T) {
	const n = 1 << 16
	measure := func(name string, req kmsg.Request, body []byte, count func() int) {
		t.Helper()
		var err error
		alloc := allocatedBytes(func() { err = req.ReadFrom(body) })
		if err != nil {
			t.Fatalf("%s: ReadFrom: %v", name, err)
		}
		if got := count(); got != n {
			t.Fatalf("%s: decoded %d elements, want %d", name, got, n)
		}
		ratio := float64(alloc) / float64(len(body))
		t.Logf("%s: %d-byte body, %d allocated, %.1f bytes per body byte", name, len(body), alloc, ratio)
		if ratio > 64 {
			t.Errorf("%s: %.1f bytes allocated per body byte, want a small constant", name, ratio)
		}
	}

	// Metadata v4: int32 count, then n empty topic names (2 bytes each),
	// then allow_auto_topic_creation.
	body := binary.BigEndian.AppendUint32(nil, n)
	body = append(body, make([]byte, 2*n)...)
	body = append(body, 1)
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(4)
	measure("Metadata v4, empty topic names", md, body, func() int { return len(md.Topics) })

	// FindCoordinator v4 (flexible): key as a compact array of n empty
	// compact strings (1 byte each) after the key type.
	body = []byte{0} // key type
	body = binary.AppendUvarint(body, n+1)
	body = append(body, bytes.Repeat([]byte{1}, n)...)
	body = append(body, 0) // tags
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(4)
	measure("FindCoordinator v4, empty keys", fc, body, func() int { return len(fc.CoordinatorKeys) })
}
