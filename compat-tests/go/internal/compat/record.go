// Package compat holds what the Go client scenarios share: the records they
// write, the exact comparison of what they read back, the polling helper, and
// the runner that turns each scenario into one result line of the suite
// contract (compat-tests/README.md).
//
// Each client package (franzsuite, saramasuite, kafkagosuite) converts its
// library's records to and from Record, so that all three are held to the
// same checks.
package compat

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"time"
)

// Record is one Kafka record in a client-neutral form. Key and Value keep the
// difference between nil (null on the wire) and empty; Timestamp is kept to
// the millisecond, the wire's resolution.
type Record struct {
	Partition int32
	// Offset is the record's offset in its partition, -1 while unknown
	// (before the producer's acknowledgement).
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []Header
	Timestamp time.Time
}

// Header is one record header. Header keys are strings on the wire; values
// are bytes and may be empty.
type Header struct {
	Key   string
	Value []byte
}

// BaseTime is the timestamp of the first generated record: a whole
// millisecond ten minutes in the past, so that a broker's
// message.timestamp.after.max.ms (an hour by default in Kafka 4) never
// rejects it and the records' own timestamps, not append times, are what a
// consumer must see.
func BaseTime() time.Time {
	return time.UnixMilli(time.Now().Add(-10 * time.Minute).UnixMilli())
}

// Generate returns n records spread round-robin over partitions (record i
// goes to partition i % partitions), with timestamps base+i ms, so that
// timestamps grow within each partition.
//
// The records cover what a broker must carry unchanged: text and binary keys
// and values of several sizes (some compress well, some do not), an empty
// value and a null value (the tombstone), headers with binary values, an
// empty and a null header value, a repeated header key whose order matters,
// and records without headers. The content is a pure function of (seed, i), so a
// mismatch reported for a record can be reproduced.
func Generate(seed uint64, n int, partitions int32, base time.Time) []Record {
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	recs := make([]Record, n)
	for i := range recs {
		r := Record{
			Partition: int32(i) % partitions,
			Offset:    -1,
			Key:       fmt.Appendf(nil, "key-%05d", i),
			Timestamp: base.Add(time.Duration(i) * time.Millisecond),
		}
		if i%19 == 2 {
			r.Key = []byte{0x00, 0xff, byte(i), byte(i >> 8), 0x80}
		}
		switch {
		case i%23 == 5:
			r.Value = nil // tombstone
		case i%29 == 7:
			r.Value = []byte{}
		case i%5 < 2:
			// Compressible text, in every partition of the 3 or 4 a
			// scenario uses.
			r.Value = bytes.Repeat(fmt.Appendf(nil, "value %d of the compat suite; ", i), 1+i%40)
		default:
			// Incompressible bytes, 1 to 2048 long.
			r.Value = make([]byte, 1+rng.IntN(2048))
			for j := range r.Value {
				r.Value[j] = byte(rng.UintN(256))
			}
		}
		if i%11 != 3 {
			r.Headers = []Header{
				{Key: "seq", Value: fmt.Appendf(nil, "%d", i)},
				{Key: "bin", Value: []byte{0x00, 0xff, 0x80, byte(i)}},
				{Key: "empty", Value: []byte{}},
			}
			if i%7 == 1 {
				r.Headers = append(r.Headers,
					Header{Key: "dup", Value: []byte("first")},
					Header{Key: "null", Value: nil},
					Header{Key: "dup", Value: []byte("second")})
			}
		}
		recs[i] = r
	}
	return recs
}

// ByPartition groups records by partition, keeping their order.
func ByPartition(recs []Record) map[int32][]Record {
	m := make(map[int32][]Record)
	for _, r := range recs {
		m[r.Partition] = append(m[r.Partition], r)
	}
	return m
}

// Counts returns the number of records per partition.
func Counts(recs []Record) map[int32]int {
	m := make(map[int32]int)
	for _, r := range recs {
		m[r.Partition]++
	}
	return m
}

// AssignDense sets the offsets that records produced in order by a single
// producer to fresh partitions must get: start, start+1, ... per partition,
// in the order of recs. It is for clients whose producer does not report
// offsets; the consumer side then checks them.
func AssignDense(recs []Record, start int64) {
	next := make(map[int32]int64)
	for i := range recs {
		p := recs[i].Partition
		if _, ok := next[p]; !ok {
			next[p] = start
		}
		recs[i].Offset = next[p]
		next[p]++
	}
}

// CheckAcked checks the offsets a producer reported: in every partition they
// must run start, start+1, ... in the order the records were produced (no
// gap, no duplicate, no reordering).
func CheckAcked(recs []Record, start int64) error {
	next := make(map[int32]int64)
	for i, r := range recs {
		want, ok := next[r.Partition]
		if !ok {
			want = start
		}
		if r.Offset != want {
			return fmt.Errorf("acknowledged offsets: record %d (partition %d) got offset %d, want %d (dense in produce order from %d)",
				i, r.Partition, r.Offset, want, start)
		}
		next[r.Partition] = want + 1
	}
	return nil
}

// EmptyAsNull returns a copy of recs with every empty key, value and header
// value replaced by null. It is for clients whose reader cannot tell the
// two apart (they decode a zero length as nil); the rest of the comparison
// stays exact for them.
func EmptyAsNull(recs []Record) []Record {
	out := make([]Record, len(recs))
	for i, r := range recs {
		if len(r.Key) == 0 {
			r.Key = nil
		}
		if len(r.Value) == 0 {
			r.Value = nil
		}
		if r.Headers != nil {
			hs := make([]Header, len(r.Headers))
			for j, h := range r.Headers {
				if len(h.Value) == 0 {
					h.Value = nil
				}
				hs[j] = h
			}
			r.Headers = hs
		}
		out[i] = r
	}
	return out
}
