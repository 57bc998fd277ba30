package record

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func TestBuildRoundTrip(t *testing.T) {
	t.Parallel()
	recs := []Record{
		{TimestampDelta: 0, OffsetDelta: 0, Key: []byte("a"), Value: []byte("first")},
		{TimestampDelta: -30, OffsetDelta: 1, Key: nil, Value: []byte("older, null key")},
		{TimestampDelta: 90, OffsetDelta: 2, Key: []byte("c"), Value: nil, Headers: []Header{{Key: []byte("h"), Value: []byte("v")}}},
		{TimestampDelta: 10, OffsetDelta: 3, Key: []byte{}, Value: bytes.Repeat([]byte("xyz"), 5000)},
	}
	for c := CodecNone; c <= CodecZstd; c++ {
		for _, h := range []BatchHeader{
			{BaseOffset: 0, PartitionLeaderEpoch: NoPartitionLeaderEpoch, BaseTimestamp: 1000, ProducerID: NoProducerID, ProducerEpoch: -1, BaseSequence: NoSequence},
			{BaseOffset: 1 << 33, PartitionLeaderEpoch: 12, BaseTimestamp: 5, ProducerID: 1 << 40, ProducerEpoch: 300, BaseSequence: 1<<31 - 4, Transactional: true},
			{BaseOffset: 7, BaseTimestamp: 2000, ProducerID: -1, BaseSequence: -1, DeleteHorizon: true},
		} {
			name := fmt.Sprintf("%v/%+v", c, h)
			h.Codec = c
			prefix := []byte("log bytes before")
			out, err := Build(bytes.Clone(prefix), h, recs)
			if err != nil {
				t.Fatalf("%s: Build: %v", name, err)
			}
			if !bytes.Equal(out[:len(prefix)], prefix) {
				t.Fatalf("%s: Build changed the bytes before the batch", name)
			}
			b := Batch(out[len(prefix):])
			got := []struct {
				field     string
				got, want any
			}{
				{"BaseOffset", b.BaseOffset(), h.BaseOffset},
				{"Length", int(b.Length()), len(b) - LogOverhead},
				{"PartitionLeaderEpoch", b.PartitionLeaderEpoch(), h.PartitionLeaderEpoch},
				{"Magic", b.Magic(), int8(Magic)},
				{"Codec", b.Codec(), c},
				{"Transactional", b.Transactional(), h.Transactional},
				{"HasDeleteHorizon", b.HasDeleteHorizon(), h.DeleteHorizon},
				{"Control", b.Control(), false},
				{"LogAppendTime", b.LogAppendTime(), false},
				{"LastOffsetDelta", b.LastOffsetDelta(), int32(3)},
				{"BaseTimestamp", b.BaseTimestamp(), h.BaseTimestamp},
				{"MaxTimestamp", b.MaxTimestamp(), h.BaseTimestamp + 90},
				{"ProducerID", b.ProducerID(), h.ProducerID},
				{"ProducerEpoch", b.ProducerEpoch(), h.ProducerEpoch},
				{"BaseSequence", b.BaseSequence(), h.BaseSequence},
				{"RecordCount", b.RecordCount(), int32(4)},
			}
			for _, f := range got {
				if f.got != f.want {
					t.Errorf("%s: %s = %v, want %v", name, f.field, f.got, f.want)
				}
			}
			if _, err := Validate(b, ValidateOptions{Records: true}); err != nil {
				t.Fatalf("%s: Validate of a built batch: %v, want nil", name, err)
			}
			dec := decodeAll(t, b)
			if len(dec) != len(recs) {
				t.Fatalf("%s: decoded %d records, want %d", name, len(dec), len(recs))
			}
			for i, r := range dec {
				w := recs[i]
				if r.offset != h.BaseOffset+int64(w.OffsetDelta) || r.timestamp != h.BaseTimestamp+w.TimestampDelta ||
					!sameNullable(r.rec.Key, w.Key) || !sameNullable(r.rec.Value, w.Value) || len(r.rec.Headers) != len(w.Headers) {
					t.Errorf("%s: record %d at %d/%d key %q value %q with %d headers, want %d/%d %q %q %d", name, i,
						r.offset, r.timestamp, showNullable(r.rec.Key), showNullable(r.rec.Value), len(r.rec.Headers),
						h.BaseOffset+int64(w.OffsetDelta), h.BaseTimestamp+w.TimestampDelta,
						showNullable(w.Key), showNullable(w.Value), len(w.Headers))
				}
			}
		}
	}
}

// TestBuildMaxTimestamp: the max timestamp is the largest record timestamp,
// even when every record is older than the base timestamp, as with a delete
// horizon (KIP-534) in the base timestamp.
func TestBuildMaxTimestamp(t *testing.T) {
	t.Parallel()
	cases := []struct {
		deltas []int64
		want   int64
	}{
		{[]int64{0}, 1000},
		{[]int64{0, 5, 3}, 1005},
		{[]int64{-50, -20, -70}, 980},
		{[]int64{-5}, 995},
	}
	for _, c := range cases {
		recs := make([]Record, len(c.deltas))
		for i, d := range c.deltas {
			recs[i] = Record{OffsetDelta: int32(i), TimestampDelta: d, Key: []byte("k")}
		}
		b, err := Build(nil, BatchHeader{BaseTimestamp: 1000, DeleteHorizon: true, ProducerID: -1, BaseSequence: -1}, recs)
		if err != nil {
			t.Fatal(err)
		}
		if got := Batch(b).MaxTimestamp(); got != c.want {
			t.Errorf("deltas %v from 1000: max timestamp %d, want %d", c.deltas, got, c.want)
		}
		info, err := Validate(Batch(b), ValidateOptions{Records: true})
		if err != nil || info.MaxTimestamp != c.want {
			t.Errorf("deltas %v: Validate found max %d (err %v), want %d", c.deltas, info.MaxTimestamp, err, c.want)
		}
	}
}

func TestBuildErrors(t *testing.T) {
	t.Parallel()
	prefix := []byte("prefix")
	out, err := Build(bytes.Clone(prefix), BatchHeader{}, nil)
	if !errors.Is(err, ErrInvalidRecord) || !bytes.Equal(out, prefix) {
		t.Errorf("Build of no records: %q, %v; want the prefix back and %v", out, err, ErrInvalidRecord)
	}
	for _, c := range []Codec{5, 6, 7} {
		out, err := Build(bytes.Clone(prefix), BatchHeader{Codec: c}, []Record{{Key: []byte("k")}})
		if !errors.Is(err, ErrUnknownCodec) || !bytes.Equal(out, prefix) {
			t.Errorf("Build with codec %d: %q, %v; want the prefix back and %v", c, out, err, ErrUnknownCodec)
		}
	}
}

func TestBuildControlAndLogAppendTime(t *testing.T) {
	t.Parallel()
	b, err := Build(nil, BatchHeader{Control: true, LogAppendTime: true, Transactional: true, ProducerID: 3, BaseSequence: -1},
		[]Record{{Key: []byte{0, 0, 0, 0}, Value: []byte{0, 0, 0, 0, 0, 0}}})
	if err != nil {
		t.Fatal(err)
	}
	bb := Batch(b)
	if !bb.Control() || !bb.LogAppendTime() || !bb.Transactional() || bb.HasDeleteHorizon() {
		t.Fatalf("control %v log append time %v transactional %v delete horizon %v; want true true true false",
			bb.Control(), bb.LogAppendTime(), bb.Transactional(), bb.HasDeleteHorizon())
	}
	if got, want := bb.Attributes(), int16(controlBit|timestampTypeBit|transactionalBit); got != want {
		t.Fatalf("attributes %#x, want %#x", got, want)
	}
}
