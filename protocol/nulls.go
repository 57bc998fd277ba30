package protocol

import (
	"encoding/binary"
	"errors"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrNullNotAllowed is a request that sends null (length -1) for an array
// or bytes field its schema says is never null. Kafka fails to parse such a
// request and closes the connection; kmsg reads the null as empty, so
// CheckNulls finds it.
var ErrNullNotAllowed = errors.New("protocol: null in a field that cannot be null")

// CheckNulls reports ErrNullNotAllowed when body, the request req was
// decoded from, holds a null where req's schema has none at its version.
//
// kmsg writes a non-nullable field as empty whatever it read, and a
// nullable one as it read it, so encoding req again gives body back except
// where a null became empty: -1 became 0 (an int32 length) or, in flexible
// versions, 0 became 1 (a compact length), at the same place and with the
// same length. Any other difference (unknown tags reordered, a varint not
// written in its shortest form) changes no null and is let through, as is
// an encoding of another length. Strings need no check: kmsg already fails
// a null in a string that cannot be null.
//
// Produce requests, whose records are most of the bytes, are walked instead
// of encoded again.
func CheckNulls(req kmsg.Request, body []byte) error {
	if p, ok := req.(*kmsg.ProduceRequest); ok {
		return produceNulls(body, p.Version)
	}
	bp := encodePool.Get().(*[]byte)
	enc := req.AppendTo((*bp)[:0])
	err := nullsBecameEmpty(body, enc, req.IsFlexible())
	if cap(enc) <= 64<<10 {
		*bp = enc
		encodePool.Put(bp)
	}
	return err
}

var encodePool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// nullsBecameEmpty compares a request as sent with kmsg's encoding of it.
func nullsBecameEmpty(sent, enc []byte, flexible bool) error {
	if len(sent) != len(enc) {
		return nil
	}
	for i := 0; i < len(sent); i++ {
		if sent[i] == enc[i] {
			continue
		}
		if flexible {
			if sent[i] == 0 && enc[i] == 1 {
				return ErrNullNotAllowed
			}
			continue
		}
		if sent[i]&0x80 != 0 && i+4 <= len(enc) && binary.BigEndian.Uint32(enc[i:]) == 0 {
			return ErrNullNotAllowed
		}
	}
	return nil
}

// produceNulls walks a Produce request (v3 and later) for a null topics or
// partitions array, the two that cannot be null; records can. A body that
// does not walk was read by kmsg already, so it is not this check's to
// fail.
func produceNulls(b []byte, version int16) error {
	if version < 3 {
		return nil
	}
	w := walker{b: b, flexible: version >= 9, ok: true}
	w.lengthed(false) // transactional id
	w.skip(2 + 4)     // acks, timeout
	topics := w.arrayLen()
	if topics < 0 && w.ok {
		return ErrNullNotAllowed
	}
	for t := 0; t < topics && w.ok; t++ {
		if version >= 13 {
			w.skip(16) // topic id
		} else {
			w.lengthed(false)
		}
		parts := w.arrayLen()
		if parts < 0 && w.ok {
			return ErrNullNotAllowed
		}
		for p := 0; p < parts && w.ok; p++ {
			w.skip(4)        // partition
			w.lengthed(true) // records
			w.tags()
		}
		w.tags()
	}
	return nil
}

// walker steps over the fields of a request without keeping them; ok turns
// false at the first field that runs past the end.
type walker struct {
	b        []byte
	flexible bool
	ok       bool
}

func (w *walker) skip(n int) {
	if !w.ok || n < 0 || n > len(w.b) {
		w.ok, w.b = false, nil
		return
	}
	w.b = w.b[n:]
}

// length reads a length: int32 (wide) or int16, or a compact uvarint less
// one in flexible versions; -1 is null.
func (w *walker) length(wide bool) int {
	if !w.flexible {
		n := 2
		if wide {
			n = 4
		}
		if !w.ok || len(w.b) < n {
			w.ok, w.b = false, nil
			return 0
		}
		var v int
		if wide {
			v = int(int32(binary.BigEndian.Uint32(w.b)))
		} else {
			v = int(int16(binary.BigEndian.Uint16(w.b)))
		}
		w.b = w.b[n:]
		return v
	}
	if !w.ok {
		return 0
	}
	u, rest, err := readUvarint(w.b, "length")
	if err != nil {
		w.ok, w.b = false, nil
		return 0
	}
	w.b = rest
	return int(u) - 1
}

// lengthed skips a string (wide false) or bytes (wide true), null or not.
func (w *walker) lengthed(wide bool) {
	if n := w.length(wide); n > 0 {
		w.skip(n)
	}
}

// arrayLen reads an array's length; -1 is null.
func (w *walker) arrayLen() int {
	return w.length(true)
}

// tags skips a tagged-field section in flexible versions.
func (w *walker) tags() {
	if !w.flexible || !w.ok {
		return
	}
	rest, err := skipTaggedFields(w.b)
	if err != nil {
		w.ok, w.b = false, nil
		return
	}
	w.b = rest
}
