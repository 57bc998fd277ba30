package storage

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzTxnIndex decodes arbitrary bytes as a segment's .txnindex: it fails
// only with ErrCorruptIndex, and what it accepts encodes back to the same
// bytes and satisfies the checks the rest of the package relies on.
//
//	go test -run='^$' -fuzz=FuzzTxnIndex -fuzztime=60s ./storage/
func FuzzTxnIndex(f *testing.F) {
	var seed []byte
	for _, a := range []AbortedTxn{{1, 0, 7, 3}, {2, 3, 9, 10}, {1, 8, 12, 13}} {
		e := txnEntry(a)
		seed = append(seed, e[:]...)
	}
	f.Add(seed, int64(0))
	f.Add(seed[:txnEntrySize], int64(7))
	f.Add(seed[:txnEntrySize+5], int64(0))
	f.Add([]byte{}, int64(100))
	f.Fuzz(func(t *testing.T, data []byte, base int64) {
		got, err := decodeTxnIndex(data, base)
		if err != nil {
			if !errors.Is(err, ErrCorruptIndex) {
				t.Fatalf("error %v does not wrap ErrCorruptIndex", err)
			}
			return
		}
		var back []byte
		prev := int64(-1)
		for _, a := range got {
			if a.LastOffset < base || a.LastOffset <= prev || a.FirstOffset < 0 || a.FirstOffset > a.LastOffset {
				t.Fatalf("accepted entry %+v (base %d, previous marker %d)", a, base, prev)
			}
			prev = a.LastOffset
			e := txnEntry(a)
			back = append(back, e[:]...)
		}
		if !bytes.Equal(back, data) {
			t.Fatalf("decoded entries encode to other bytes")
		}
		if len(got) > 0 {
			cut := got[len(got)/2].LastOffset
			if n := len(txnEntriesBelow(data, cut)) / txnEntrySize; n != len(got)/2 {
				t.Fatalf("%d entries below %d, want %d", n, cut, len(got)/2)
			}
		}
	})
}
