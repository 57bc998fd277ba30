package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/gregor-io/gregor/protocol/record"
)

// makeBatch builds a producer batch of n records of valueSize bytes, with
// timestamps ts, ts+1, ... and offset deltas 0..n-1. The value of record i
// starts with tag and i, so reads can be checked against what was written.
func makeBatch(t testing.TB, n, valueSize int, ts int64, tag uint64, codec record.Codec) []byte {
	t.Helper()
	return buildBatch(t, n, ts, codec, func(i int) []byte {
		v := make([]byte, max(valueSize, 16))
		binary.BigEndian.PutUint64(v, tag)
		binary.BigEndian.PutUint64(v[8:], uint64(i))
		return v
	})
}

// buildBatch builds a producer batch of n records with the values value(i),
// keys k0, k1, ..., timestamps ts, ts+1, ... and offset deltas 0..n-1.
func buildBatch(t testing.TB, n int, ts int64, codec record.Codec, value func(i int) []byte) []byte {
	t.Helper()
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{
			OffsetDelta:    int32(i),
			TimestampDelta: int64(i),
			Key:            []byte(fmt.Sprintf("k%d", i)),
			Value:          value(i),
		}
	}
	b, err := record.Build(nil, record.BatchHeader{
		Codec: codec, BaseTimestamp: ts, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
	}, recs)
	if err != nil {
		t.Fatalf("build batch: %v", err)
	}
	return b
}

// testConfig is a config with small segments and a dense index, so that
// tests cross segment boundaries and index entries often.
func testConfig() Config {
	c := DefaultConfig()
	c.SegmentBytes = 16 << 10
	c.IndexIntervalBytes = 256
	return c
}

func openTestLog(t testing.TB, dir string, cfg Config, st OpenState) *Log {
	t.Helper()
	l, err := Open(dir, TopicPartition{Topic: "t", Partition: 0}, cfg, st, nil)
	if err != nil {
		t.Fatalf("open log: %v", err)
	}
	return l
}

// appended is what a test appended: each batch's bytes (with offsets
// assigned) in order.
type appended struct {
	batches []record.Batch
}

func (a *appended) add(t testing.TB, l *Log, set []byte) AppendResult {
	t.Helper()
	res, err := l.Append(set, AppendOptions{AssignOffsets: true, LeaderEpoch: 0})
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	it := record.NewIter(set)
	for b, ok := it.Next(); ok; b, ok = it.Next() {
		a.batches = append(a.batches, append(record.Batch(nil), b...))
	}
	return res
}

// batchFor returns the appended batch holding offset.
func (a *appended) batchFor(offset int64) (record.Batch, bool) {
	for _, b := range a.batches {
		if b.BaseOffset() <= offset && offset <= b.LastOffset() {
			return b, true
		}
	}
	return nil, false
}

// readAll reads the log from offset to its end (bounded by maxOffset when
// positive) and returns the concatenated batches.
func readAll(t testing.TB, l *Log, offset, maxOffset int64) []record.Batch {
	t.Helper()
	var out []record.Batch
	for {
		res, err := l.Read(ReadOptions{Offset: offset, MaxBytes: 1 << 20, MaxOffset: maxOffset, MinOneBatch: true})
		if err != nil {
			t.Fatalf("read at %d: %v", offset, err)
		}
		if res.Len == 0 {
			res.Release()
			return out
		}
		buf, err := res.AppendTo(nil)
		res.Release()
		if err != nil {
			t.Fatalf("read bytes: %v", err)
		}
		it := record.NewIter(buf)
		n := 0
		for b, ok := it.Next(); ok; b, ok = it.Next() {
			if err := record.CheckIntegrity(b); err != nil {
				t.Fatalf("batch at %d: %v", b.BaseOffset(), err)
			}
			out = append(out, b)
			offset = b.NextOffset()
			n++
		}
		if n == 0 {
			t.Fatalf("read at %d returned %d bytes with no whole batch", offset, len(buf))
		}
	}
}

func equalBatches(t testing.TB, got, want []record.Batch) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d batches, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("batch %d (offset %d) differs from what was appended (offset %d)",
				i, got[i].BaseOffset(), want[i].BaseOffset())
		}
	}
}

func randomBatches(t testing.TB, rng *rand.Rand, count int) [][]byte {
	var out [][]byte
	codecs := []record.Codec{record.CodecNone, record.CodecNone, record.CodecLZ4, record.CodecZstd}
	for i := 0; i < count; i++ {
		n := 1 + rng.IntN(20)
		size := 16 + rng.IntN(400)
		out = append(out, makeBatch(t, n, size, 1_000_000+int64(i)*10, uint64(i), codecs[rng.IntN(len(codecs))]))
	}
	return out
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}
