package record

import (
	"encoding/binary"
	"fmt"
)

// BatchHeader holds the header fields a writer of a batch chooses. The
// derived fields (length, CRC, last offset delta, record count, max
// timestamp) are computed by Build.
type BatchHeader struct {
	BaseOffset           int64
	PartitionLeaderEpoch int32
	Codec                Codec
	LogAppendTime        bool
	Transactional        bool
	Control              bool
	// DeleteHorizon, when set, marks BaseTimestamp as the delete horizon.
	DeleteHorizon bool
	BaseTimestamp int64
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
}

// Build appends a complete batch holding recs to dst. Each record's
// OffsetDelta and TimestampDelta are taken as given, so a compacted batch
// keeps its sparse offsets; the batch's last offset delta is the largest
// offset delta and its max timestamp the largest record timestamp.
func Build(dst []byte, h BatchHeader, recs []Record) ([]byte, error) {
	if len(recs) == 0 {
		return dst, fmt.Errorf("%w: a batch needs at least one record", ErrInvalidRecord)
	}
	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	var raw []byte
	if h.Codec != CodecNone {
		raw = make([]byte, 0, 64*len(recs))
	}
	var lastDelta int32
	maxTS := h.BaseTimestamp + recs[0].TimestampDelta // deltas may all be negative
	for i := range recs {
		r := &recs[i]
		if r.OffsetDelta > lastDelta {
			lastDelta = r.OffsetDelta
		}
		if ts := h.BaseTimestamp + r.TimestampDelta; ts > maxTS {
			maxTS = ts
		}
		if h.Codec == CodecNone {
			dst = AppendRecord(dst, r)
		} else {
			raw = AppendRecord(raw, r)
		}
	}
	if h.Codec != CodecNone {
		var err error
		if dst, err = Compress(dst, h.Codec, raw); err != nil {
			return dst[:start], err
		}
	}
	b := Batch(dst[start:])
	attrs := uint16(h.Codec) & codecMask
	if h.LogAppendTime {
		attrs |= timestampTypeBit
	}
	if h.Transactional {
		attrs |= transactionalBit
	}
	if h.Control {
		attrs |= controlBit
	}
	if h.DeleteHorizon {
		attrs |= deleteHorizonBit
	}
	be := binary.BigEndian
	be.PutUint64(b[offBaseOffset:], uint64(h.BaseOffset))
	be.PutUint32(b[offBatchLength:], uint32(len(b)-LogOverhead))
	be.PutUint32(b[offLeaderEpoch:], uint32(h.PartitionLeaderEpoch))
	b[offMagic] = Magic
	be.PutUint16(b[offAttributes:], attrs)
	be.PutUint32(b[offLastDelta:], uint32(lastDelta))
	be.PutUint64(b[offBaseTimestamp:], uint64(h.BaseTimestamp))
	be.PutUint64(b[offMaxTimestamp:], uint64(maxTS))
	be.PutUint64(b[offProducerID:], uint64(h.ProducerID))
	be.PutUint16(b[offProducerEpoch:], uint16(h.ProducerEpoch))
	be.PutUint32(b[offBaseSequence:], uint32(h.BaseSequence))
	be.PutUint32(b[offRecordCount:], uint32(len(recs)))
	b.UpdateCRC()
	return dst, nil
}
