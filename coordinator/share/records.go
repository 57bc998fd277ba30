package share

// The records of __share_group_state, with Kafka's schemas (its
// share-coordinator ShareSnapshot and ShareUpdate messages).
//
// Key (not flexible): int16 version, 0 for ShareSnapshotKey and 1 for
// ShareUpdateKey; then the group id (int16 length, bytes), the topic id (16
// bytes) and the partition (int32), big-endian.
//
// ShareSnapshotValue, version 0, flexible: int16 version (0); uint16
// SnapshotEpoch; int32 StateEpoch; int32 LeaderEpoch; int64 StartOffset;
// StateBatches as a compact array (uvarint count+1), each int64
// FirstOffset, int64 LastOffset, int8 DeliveryState, int16 DeliveryCount
// and an empty tag section (uvarint 0); then the value's tag section.
// ShareUpdateValue, version 0, is the same without StateEpoch, and a
// StartOffset of -1 leaves the start offset as it was. A nil value on a
// snapshot key is a tombstone: the share partition's state is deleted.
//
// Gregor writes a whole snapshot on every change (the topic is compacted,
// so the last snapshot of each share partition is what stays); it replays
// updates too, merged into the snapshot before them as Kafka merges them.

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrCorruptRecord is returned by Replay for a record it cannot decode.
var ErrCorruptRecord = errors.New("share: corrupt __share_group_state record")

const (
	snapshotKeyVersion int16 = 0
	updateKeyVersion   int16 = 1
)

func snapshotKey(k Key) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(snapshotKeyVersion))
	b = binary.BigEndian.AppendUint16(b, uint16(len(k.Group)))
	b = append(b, k.Group...)
	b = append(b, k.TopicID[:]...)
	return binary.BigEndian.AppendUint32(b, uint32(k.Partition))
}

func snapshotValue(epoch uint16, st *State, _ int64) []byte {
	b := make([]byte, 0, 32+len(st.Batches)*20)
	b = binary.BigEndian.AppendUint16(b, 0) // value version
	b = binary.BigEndian.AppendUint16(b, epoch)
	b = binary.BigEndian.AppendUint32(b, uint32(st.StateEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(st.LeaderEpoch))
	b = binary.BigEndian.AppendUint64(b, uint64(st.StartOffset))
	b = binary.AppendUvarint(b, uint64(len(st.Batches)+1))
	for _, sb := range st.Batches {
		b = binary.BigEndian.AppendUint64(b, uint64(sb.FirstOffset))
		b = binary.BigEndian.AppendUint64(b, uint64(sb.LastOffset))
		b = append(b, byte(sb.DeliveryState))
		b = binary.BigEndian.AppendUint16(b, uint16(sb.DeliveryCount))
		b = append(b, 0) // no tags
	}
	return append(b, 0) // no tags
}

type parsedRecord struct {
	key           Key
	update        bool
	tombstone     bool
	snapshotEpoch uint16
	state         State
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b) < n {
		r.err = fmt.Errorf("%d bytes wanted, %d left", n, len(r.b))
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) u16() uint16 {
	if b := r.take(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if b := r.take(8); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errors.New("bad uvarint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// skipTags skips a tag section.
func (r *reader) skipTags() {
	n := r.uvarint()
	for i := uint64(0); i < n && r.err == nil; i++ {
		r.uvarint()
		r.take(int(min(r.uvarint(), uint64(len(r.b)+1))))
	}
}

func parseRecord(key, value []byte) (parsedRecord, error) {
	var p parsedRecord
	kr := &reader{b: key}
	version := int16(kr.u16())
	if kr.err == nil && version != snapshotKeyVersion && version != updateKeyVersion {
		return p, fmt.Errorf("%w: key version %d", ErrCorruptRecord, version)
	}
	p.update = version == updateKeyVersion
	p.key.Group = string(kr.take(int(kr.u16())))
	copy(p.key.TopicID[:], kr.take(16))
	p.key.Partition = int32(kr.u32())
	if kr.err != nil || len(kr.b) != 0 {
		return p, fmt.Errorf("%w: key: %v", ErrCorruptRecord, errOr(kr.err, "trailing bytes"))
	}
	if value == nil {
		p.tombstone = !p.update
		if p.update {
			return p, fmt.Errorf("%w: update tombstone", ErrCorruptRecord)
		}
		return p, nil
	}
	r := &reader{b: value}
	if v := r.u16(); r.err == nil && v != 0 {
		return p, fmt.Errorf("%w: value version %d", ErrCorruptRecord, v)
	}
	p.snapshotEpoch = r.u16()
	if !p.update {
		p.state.StateEpoch = int32(r.u32())
	}
	p.state.LeaderEpoch = int32(r.u32())
	p.state.StartOffset = int64(r.u64())
	n := r.uvarint()
	if n == 0 || n-1 > uint64(len(r.b))/20 {
		if r.err == nil {
			r.err = fmt.Errorf("bad batch count %d", n)
		}
	} else {
		for i := uint64(0); i < n-1 && r.err == nil; i++ {
			sb := StateBatch{FirstOffset: int64(r.u64()), LastOffset: int64(r.u64())}
			if b := r.take(1); b != nil {
				sb.DeliveryState = int8(b[0])
			}
			sb.DeliveryCount = int16(r.u16())
			r.skipTags()
			p.state.Batches = append(p.state.Batches, sb)
		}
	}
	r.skipTags()
	if r.err != nil {
		return p, fmt.Errorf("%w: value: %w", ErrCorruptRecord, r.err)
	}
	return p, nil
}

func errOr(err error, msg string) string {
	if err != nil {
		return err.Error()
	}
	return msg
}
