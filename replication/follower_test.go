package replication

import (
	"errors"
	"testing"

	"github.com/gregor-io/gregor/protocol/record"
)

func batch(t testing.TB, base int64, n int) []byte {
	t.Helper()
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{OffsetDelta: int32(i), Value: []byte("v")}
	}
	b, err := record.Build(nil, record.BatchHeader{BaseOffset: base, ProducerID: -1, BaseSequence: -1, ProducerEpoch: -1}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWholeBatches(t *testing.T) {
	a, b := batch(t, 0, 3), batch(t, 3, 2)
	set := append(append([]byte(nil), a...), b...)
	for cut := 0; cut <= len(set); cut++ {
		got, err := WholeBatches(set[:cut])
		want := 0
		switch {
		case cut == len(set):
			want = len(set)
		case cut >= len(a):
			want = len(a)
		}
		if err != nil || len(got) != want {
			t.Fatalf("cut at %d: %d bytes, %v; want %d", cut, len(got), err, want)
		}
	}
	bad := append([]byte(nil), set...)
	bad[len(a)+record.HeaderSize] ^= 1 // a record byte of the second batch
	got, err := WholeBatches(bad)
	if !errors.Is(err, ErrCorruptFetch) || len(got) != len(a) {
		t.Fatalf("damaged second batch: %d bytes, %v; want the first batch and ErrCorruptFetch", len(got), err)
	}
}

// FuzzWholeBatches: whatever the bytes, the prefix returned is whole
// batches that pass the integrity check; never a panic.
func FuzzWholeBatches(f *testing.F) {
	f.Add(batch(f, 0, 2))
	f.Add(append(batch(f, 0, 1), batch(f, 1, 4)[:30]...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		got, _ := WholeBatches(in)
		it := record.NewIter(got)
		n := 0
		for b, ok := it.Next(); ok; b, ok = it.Next() {
			if err := record.CheckIntegrity(b); err != nil {
				t.Fatalf("returned a batch that fails: %v", err)
			}
			n += len(b)
		}
		if it.Err() != nil || n != len(got) {
			t.Fatalf("returned %d bytes, %d of whole batches (%v)", len(got), n, it.Err())
		}
	})
}
