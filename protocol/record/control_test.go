package record

import (
	"errors"
	"testing"
)

func TestEndTxnMarkerRoundTrip(t *testing.T) {
	t.Parallel()
	for _, m := range []EndTxnMarker{{Commit: true, CoordinatorEpoch: 7}, {Commit: false, CoordinatorEpoch: -1}} {
		b := Batch(BuildEndTxnMarker(nil, 42, 3, m, 1700000000000))
		if err := CheckIntegrity(b); err != nil {
			t.Fatalf("marker batch fails its integrity check: %v", err)
		}
		if !b.Control() || !b.Transactional() || b.ProducerID() != 42 || b.ProducerEpoch() != 3 || b.BaseSequence() != NoSequence {
			t.Fatalf("marker header: control %v txn %v pid %d epoch %d seq %d", b.Control(), b.Transactional(),
				b.ProducerID(), b.ProducerEpoch(), b.BaseSequence())
		}
		typ, got, ok, err := ParseControl(b)
		if err != nil || !ok || got != m {
			t.Fatalf("ParseControl = %d %+v %v %v, want %+v", typ, got, ok, err, m)
		}
	}
}

func TestParseControlRejectsDataBatch(t *testing.T) {
	t.Parallel()
	b, err := Build(nil, BatchHeader{ProducerID: -1, BaseSequence: -1}, []Record{{Key: []byte("k")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := ParseControl(b); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("ParseControl of a data batch: %v, want ErrInvalidRecord", err)
	}
}

// FuzzParseControl: ParseControl never panics, and fails only with the
// package's errors.
func FuzzParseControl(f *testing.F) {
	f.Add(BuildEndTxnMarker(nil, 1, 0, EndTxnMarker{Commit: true, CoordinatorEpoch: 5}, 0))
	f.Add(BuildEndTxnMarker(nil, 9, 2, EndTxnMarker{}, 1))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, _, err := Parse(data)
		if err != nil || !b.Control() {
			return
		}
		if _, _, _, err := ParseControl(b); err != nil && !isSentinel(err) {
			t.Fatalf("error %v wraps no package error", err)
		}
	})
}
