package record

import (
	"encoding/binary"
	"fmt"
)

// # Control batches (transaction markers)
//
// A control batch has the control and transactional attribute bits set and
// holds one record, never compressed. Its key and value are, big-endian:
//
//	key:   version int16 (0), type int16 (0 ABORT, 1 COMMIT)
//	value: version int16 (0), coordinatorEpoch int32
//
// A leader appends one to each partition of a transaction when its
// coordinator ends it (WriteTxnMarkers). Key types other than 0 and 1 are
// other control records (none are written by Gregor); readers that track
// transactions ignore them.

// Control record types (the type field of a control record's key).
const (
	ControlAbort  int16 = 0
	ControlCommit int16 = 1
)

// EndTxnMarker is the content of a COMMIT or ABORT control record.
type EndTxnMarker struct {
	Commit           bool
	CoordinatorEpoch int32
}

// BuildEndTxnMarker appends a control batch holding one COMMIT or ABORT
// marker for a producer to dst, at base offset 0, with timestamp ts. Its
// base sequence is -1, as markers carry no sequence.
func BuildEndTxnMarker(dst []byte, producerID int64, producerEpoch int16, m EndTxnMarker, ts int64) []byte {
	typ := ControlAbort
	if m.Commit {
		typ = ControlCommit
	}
	key := binary.BigEndian.AppendUint16(make([]byte, 2, 4), uint16(typ))
	val := binary.BigEndian.AppendUint32(make([]byte, 2, 6), uint32(m.CoordinatorEpoch))
	out, err := Build(dst, BatchHeader{Transactional: true, Control: true, BaseTimestamp: ts,
		ProducerID: producerID, ProducerEpoch: producerEpoch, BaseSequence: NoSequence},
		[]Record{{Key: key, Value: val}})
	if err != nil {
		panic(err) // one well-formed record always builds
	}
	return out
}

// ParseControl reads the first record of a control batch b: its control
// type, and for COMMIT and ABORT the marker. ok is false for other control
// types. A control batch with no record (all of it removed by compaction)
// is reported as an unknown type, -1.
func ParseControl(b Batch) (typ int16, m EndTxnMarker, ok bool, err error) {
	if !b.Control() {
		return 0, m, false, fmt.Errorf("%w: not a control batch", ErrInvalidRecord)
	}
	if b.RecordCount() == 0 {
		return -1, m, false, nil
	}
	if b.Codec() != CodecNone {
		return 0, m, false, fmt.Errorf("%w: compressed control batch", ErrInvalidRecord)
	}
	it := NewRecordIter(b.Records(), 1)
	r := it.Next()
	if r == nil {
		if it.Err() != nil {
			return 0, m, false, it.Err()
		}
		return 0, m, false, errRecord("control batch without record")
	}
	if len(r.Key) < 4 {
		return 0, m, false, errRecord("control record key shorter than 4 bytes")
	}
	typ = int16(binary.BigEndian.Uint16(r.Key[2:]))
	if typ != ControlAbort && typ != ControlCommit {
		return typ, m, false, nil
	}
	if len(r.Value) < 6 {
		return typ, m, false, errRecord("transaction marker value shorter than 6 bytes")
	}
	m.Commit = typ == ControlCommit
	m.CoordinatorEpoch = int32(binary.BigEndian.Uint32(r.Value[2:]))
	return typ, m, true, nil
}
