package group

// The records of consumer groups (KIP-848) in __consumer_offsets, with
// Kafka's schemas, so that log compaction keeps the last record of each key
// and Kafka's tools read Gregor's. A key is not flexible: int16 version
// (which tells the record type), then the group id and, for member
// records, the member id, as int16-length strings. A value is flexible
// version 0: int16 version, then the fields (compact strings and arrays:
// uvarint length + 1, 0 for null; a uuid is 16 bytes), then tagged fields
// (uvarint count, then per field uvarint tag, uvarint size and the bytes).
// A nil value is a tombstone.
//
//	key 3  ConsumerGroupMetadata: group epoch int32; tag 0 (newer Kafka):
//	       int64 metadata hash
//	key 4  ConsumerGroupPartitionMetadata: []{topic id uuid, topic name
//	       string, partitions int32, []{partition int32, racks []string}}
//	key 5  ConsumerGroupMemberMetadata (+ member id): instance id (nullable),
//	       rack id (nullable), client id, client host, subscribed topic
//	       names []string, subscribed regex (nullable), rebalance timeout
//	       int32, server assignor (nullable); tag 0: classic member
//	       metadata (a member of the classic protocol; read and kept)
//	key 6  ConsumerGroupTargetAssignmentMetadata: assignment epoch int32
//	key 7  ConsumerGroupTargetAssignmentMember (+ member id):
//	       []{topic id uuid, partitions []int32}
//	key 8  ConsumerGroupCurrentMemberAssignment (+ member id): member epoch
//	       int32, previous member epoch int32, state int8, assigned
//	       []{topic id, partitions}, pending revocation []{topic id,
//	       partitions}
//	key 16 ConsumerGroupRegularExpression (+ regex): read and skipped
//	       (Gregor resolves regular expressions at each epoch)

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// Key versions of the consumer group records.
const (
	cgMetadataKey          int16 = 3
	cgPartitionMetadataKey int16 = 4
	cgMemberMetadataKey    int16 = 5
	cgTargetMetadataKey    int16 = 6
	cgTargetMemberKey      int16 = 7
	cgCurrentAssignmentKey int16 = 8
	cgRegexKey             int16 = 16
)

type consumerGroupMetadata struct {
	epoch        int32
	metadataHash int64
	hasHash      bool
}

type consumerMemberMetadata struct {
	instanceID, rackID   *string
	clientID, clientHost string
	subscribedTopicNames []string
	subscribedTopicRegex *string
	rebalanceTimeoutMs   int32
	serverAssignor       *string
	// classic is the classic member metadata (tag 0) of a member that
	// speaks the classic protocol; nil for one of the consumer protocol.
	classic *classicMeta
}

type targetAssignmentMetadata struct{ assignmentEpoch int32 }

type currentMemberAssignment struct {
	memberEpoch, previousMemberEpoch int32
	state                            int8
	assigned, pendingRevocation      partitionSet
}

// partitionMetadata is the subscribed topics' metadata.
type partitionMetadata []partitionMetadataTopic

type partitionMetadataTopic struct {
	id         [16]byte
	name       string
	partitions int32
}

// --- keys

func cgKey(version int16, group string, second *string) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(version))
	b = appendKeyString(b, group)
	if second != nil {
		b = appendKeyString(b, *second)
	}
	return b
}

func appendKeyString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// --- value encoding

type flexWriter struct{ b []byte }

func newFlexValue() *flexWriter { return &flexWriter{b: []byte{0, 0}} } // version 0

func (w *flexWriter) int8(v int8)   { w.b = append(w.b, byte(v)) }
func (w *flexWriter) int32(v int32) { w.b = binary.BigEndian.AppendUint32(w.b, uint32(v)) }
func (w *flexWriter) uvarint(v int) { w.b = binary.AppendUvarint(w.b, uint64(v)) }
func (w *flexWriter) uuid(v [16]byte) {
	w.b = append(w.b, v[:]...)
}

func (w *flexWriter) str(s string) {
	w.uvarint(len(s) + 1)
	w.b = append(w.b, s...)
}

func (w *flexWriter) nullableStr(s *string) {
	if s == nil {
		w.uvarint(0)
		return
	}
	w.str(*s)
}

func (w *flexWriter) arrayLen(n int) { w.uvarint(n + 1) }

func (w *flexWriter) noTags() { w.uvarint(0) }

// tag0 writes a tagged-field section holding tag 0 alone.
func (w *flexWriter) tag0(data []byte) {
	w.uvarint(1)
	w.uvarint(0)
	w.uvarint(len(data))
	w.b = append(w.b, data...)
}

func (w *flexWriter) topicPartitions(s partitionSet) {
	ids := sortedKeys(s)
	n := 0
	for _, t := range ids {
		if len(s[t]) > 0 {
			n++
		}
	}
	w.arrayLen(n)
	for _, t := range ids {
		ps := slices.Sorted(maps.Keys(s[t]))
		if len(ps) == 0 {
			continue
		}
		w.uuid(t)
		w.arrayLen(len(ps))
		for _, p := range ps {
			w.int32(p)
		}
		w.noTags()
	}
}

// --- record builders

func consumerGroupMetadataRecord(group string, v *consumerGroupMetadata) Record {
	r := Record{Key: cgKey(cgMetadataKey, group, nil)}
	if v == nil {
		return r
	}
	w := newFlexValue()
	w.int32(v.epoch)
	if v.hasHash {
		w.tag0(binary.BigEndian.AppendUint64(nil, uint64(v.metadataHash)))
	} else {
		w.noTags()
	}
	r.Value = w.b
	return r
}

func partitionMetadataRecord(group string, v partitionMetadata) Record {
	r := Record{Key: cgKey(cgPartitionMetadataKey, group, nil)}
	if v == nil {
		return r
	}
	w := newFlexValue()
	w.arrayLen(len(v))
	for _, t := range v {
		w.uuid(t.id)
		w.str(t.name)
		w.int32(t.partitions)
		w.arrayLen(0) // partition racks: not used after Kafka 4.0
		w.noTags()
	}
	w.noTags()
	r.Value = w.b
	return r
}

// partitionMetadataOf is the record form of a subscription, by topic name.
func partitionMetadataOf(sub map[string]subscribedTopic) partitionMetadata {
	out := partitionMetadata{}
	for name, t := range sub {
		out = append(out, partitionMetadataTopic{id: t.id, name: name, partitions: t.partitions})
	}
	slices.SortFunc(out, func(a, b partitionMetadataTopic) int { return strings.Compare(a.name, b.name) })
	return out
}

func consumerMemberRecord(group, member string, v *consumerMemberMetadata) Record {
	r := Record{Key: cgKey(cgMemberMetadataKey, group, &member)}
	if v == nil {
		return r
	}
	w := newFlexValue()
	w.nullableStr(v.instanceID)
	w.nullableStr(v.rackID)
	w.str(v.clientID)
	w.str(v.clientHost)
	w.arrayLen(len(v.subscribedTopicNames))
	for _, t := range v.subscribedTopicNames {
		w.str(t)
	}
	w.nullableStr(v.subscribedTopicRegex)
	w.int32(v.rebalanceTimeoutMs)
	w.nullableStr(v.serverAssignor)
	if v.classic != nil {
		w.tag0(v.classic.encode())
	} else {
		w.noTags()
	}
	r.Value = w.b
	return r
}

func targetAssignmentMetadataRecord(group string, v *targetAssignmentMetadata) Record {
	r := Record{Key: cgKey(cgTargetMetadataKey, group, nil)}
	if v == nil {
		return r
	}
	w := newFlexValue()
	w.int32(v.assignmentEpoch)
	w.noTags()
	r.Value = w.b
	return r
}

// targetAssignmentMemberRecord is a member's target assignment; a nil set
// is a tombstone.
func targetAssignmentMemberRecord(group, member string, s partitionSet) Record {
	r := Record{Key: cgKey(cgTargetMemberKey, group, &member)}
	if s == nil {
		return r
	}
	w := newFlexValue()
	w.topicPartitions(s)
	w.noTags()
	r.Value = w.b
	return r
}

func currentAssignmentRecord(group, member string, v *currentMemberAssignment) Record {
	r := Record{Key: cgKey(cgCurrentAssignmentKey, group, &member)}
	if v == nil {
		return r
	}
	w := newFlexValue()
	w.int32(v.memberEpoch)
	w.int32(v.previousMemberEpoch)
	w.int8(v.state)
	w.topicPartitions(v.assigned)
	w.topicPartitions(v.pendingRevocation)
	w.noTags()
	r.Value = w.b
	return r
}

// currentAssignmentOf is the record form of a member's reconciliation
// state.
func currentAssignmentOf(s reconcileState) *currentMemberAssignment {
	return &currentMemberAssignment{memberEpoch: s.epoch, previousMemberEpoch: s.previousEpoch, state: int8(s.state),
		assigned: s.assigned, pendingRevocation: s.pendingRevocation}
}

// --- decoding

var errShort = errors.New("truncated")

type flexReader struct {
	b   []byte
	err error
}

func (r *flexReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *flexReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.fail(errShort)
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *flexReader) int8() int8 {
	if b := r.take(1); b != nil {
		return int8(b[0])
	}
	return 0
}

func (r *flexReader) int16() int16 {
	if b := r.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *flexReader) int32() int32 {
	if b := r.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *flexReader) uvarint() int {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > math.MaxInt32 {
		r.fail(errShort)
		return 0
	}
	r.b = r.b[n:]
	return int(v)
}

func (r *flexReader) uuid() [16]byte {
	var u [16]byte
	copy(u[:], r.take(16))
	return u
}

// nullableStr reads a compact nullable string.
func (r *flexReader) nullableStr() *string {
	n := r.uvarint()
	if r.err != nil || n == 0 {
		return nil
	}
	s := string(r.take(n - 1))
	return &s
}

func (r *flexReader) str() string {
	s := r.nullableStr()
	if s == nil {
		r.fail(errors.New("null string"))
		return ""
	}
	return *s
}

// arrayLen reads a compact array length; each element needs at least min
// bytes, which bounds what a bad length can make the reader allocate.
func (r *flexReader) arrayLen(minBytes int) int {
	n := r.uvarint() - 1
	if r.err != nil {
		return 0
	}
	if n < 0 {
		r.fail(errors.New("null array"))
		return 0
	}
	if n*minBytes > len(r.b) {
		r.fail(errShort)
		return 0
	}
	return n
}

// tags reads the tagged fields, calling fn for each; unknown ones are
// skipped.
func (r *flexReader) tags(fn func(tag int, data []byte)) {
	n := r.uvarint()
	for i := 0; i < n && r.err == nil; i++ {
		tag := r.uvarint()
		size := r.uvarint()
		data := r.take(size)
		if r.err == nil && fn != nil {
			fn(tag, data)
		}
	}
}

func (r *flexReader) topicPartitions() partitionSet {
	s := partitionSet{}
	n := r.arrayLen(18)
	for i := 0; i < n && r.err == nil; i++ {
		t := r.uuid()
		m := r.arrayLen(4)
		for j := 0; j < m && r.err == nil; j++ {
			s.add(t, r.int32())
		}
		if m == 0 && r.err == nil {
			s[t] = map[int32]bool{}
		}
		r.tags(nil)
	}
	return s
}

// parsedConsumerRecord is one decoded consumer group record.
type parsedConsumerRecord struct {
	kind      int16 // the key version
	group     string
	member    string // member records; the regex for cgRegexKey
	tombstone bool

	metadata  consumerGroupMetadata
	partMeta  partitionMetadata
	member5   consumerMemberMetadata
	target    targetAssignmentMetadata
	targetSet partitionSet
	current   currentMemberAssignment
}

// isConsumerRecordKey reports whether a key version is one of the consumer
// group records.
func isConsumerRecordKey(v int16) bool {
	switch v {
	case cgMetadataKey, cgPartitionMetadataKey, cgMemberMetadataKey, cgTargetMetadataKey,
		cgTargetMemberKey, cgCurrentAssignmentKey, cgRegexKey:
		return true
	}
	return false
}

// parseConsumerRecord decodes a consumer group record.
func parseConsumerRecord(key, value []byte) (parsedConsumerRecord, error) {
	var p parsedConsumerRecord
	kr := &flexReader{b: key}
	p.kind = kr.int16()
	keyStr := func() string {
		n := int(kr.int16())
		return string(kr.take(n))
	}
	p.group = keyStr()
	switch p.kind {
	case cgMemberMetadataKey, cgTargetMemberKey, cgCurrentAssignmentKey, cgRegexKey:
		p.member = keyStr()
	}
	if kr.err != nil || len(kr.b) != 0 {
		return p, fmt.Errorf("consumer group record key (version %d): %v", p.kind, errOr(kr.err, "trailing bytes"))
	}
	if value == nil {
		p.tombstone = true
		return p, nil
	}
	r := &flexReader{b: value}
	if v := r.int16(); r.err == nil && v != 0 {
		return p, fmt.Errorf("consumer group record value (key version %d): version %d", p.kind, v)
	}
	switch p.kind {
	case cgMetadataKey:
		p.metadata.epoch = r.int32()
		r.tags(func(tag int, data []byte) {
			if tag == 0 && len(data) == 8 {
				p.metadata.metadataHash, p.metadata.hasHash = int64(binary.BigEndian.Uint64(data)), true
			}
		})
	case cgPartitionMetadataKey:
		n := r.arrayLen(16 + 1 + 4 + 1 + 1)
		p.partMeta = partitionMetadata{}
		for i := 0; i < n && r.err == nil; i++ {
			t := partitionMetadataTopic{id: r.uuid(), name: r.str(), partitions: r.int32()}
			racks := r.arrayLen(4 + 1 + 1)
			for j := 0; j < racks && r.err == nil; j++ {
				r.int32()
				names := r.arrayLen(1)
				for k := 0; k < names && r.err == nil; k++ {
					r.str()
				}
				r.tags(nil)
			}
			r.tags(nil)
			p.partMeta = append(p.partMeta, t)
		}
		r.tags(nil)
	case cgMemberMetadataKey:
		m := &p.member5
		m.instanceID, m.rackID = r.nullableStr(), r.nullableStr()
		m.clientID, m.clientHost = r.str(), r.str()
		n := r.arrayLen(1)
		m.subscribedTopicNames = []string{}
		for i := 0; i < n && r.err == nil; i++ {
			m.subscribedTopicNames = append(m.subscribedTopicNames, r.str())
		}
		m.subscribedTopicRegex = r.nullableStr()
		m.rebalanceTimeoutMs = r.int32()
		m.serverAssignor = r.nullableStr()
		r.tags(func(tag int, data []byte) {
			if tag == 0 {
				cm, err := decodeClassicMeta(data)
				if err != nil {
					r.fail(fmt.Errorf("classic member metadata: %w", err))
				}
				m.classic = cm
			}
		})
	case cgTargetMetadataKey:
		p.target.assignmentEpoch = r.int32()
		r.tags(nil)
	case cgTargetMemberKey:
		p.targetSet = r.topicPartitions()
		r.tags(nil)
	case cgCurrentAssignmentKey:
		c := &p.current
		c.memberEpoch, c.previousMemberEpoch, c.state = r.int32(), r.int32(), r.int8()
		c.assigned = r.topicPartitions()
		c.pendingRevocation = r.topicPartitions()
		r.tags(nil)
	case cgRegexKey:
		// Resolved topics of a regular expression: Gregor resolves them
		// itself; the value is checked for its version only.
		return p, nil
	}
	if r.err != nil {
		return p, fmt.Errorf("consumer group record value (key version %d): %w", p.kind, r.err)
	}
	return p, nil
}

func errOr(err error, msg string) string {
	if err != nil {
		return err.Error()
	}
	return msg
}

// replayConsumer applies a consumer group record at load.
func (c *Coordinator) replayConsumer(key, value []byte) error {
	p, err := parseConsumerRecord(key, value)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCorruptRecord, err)
	}
	if p.kind == cgRegexKey {
		return nil
	}
	g := c.groups[p.group]
	if g == nil {
		if p.tombstone {
			return nil
		}
		g = newGroup(p.group, -1)
		c.groups[p.group] = g
	}
	if g.consumer == nil {
		if p.tombstone {
			return nil
		}
		g.consumer = newConsumerGroup()
	}
	cg := g.consumer
	switch p.kind {
	case cgMetadataKey:
		if p.tombstone {
			// The group's last record: it is no consumer group any more
			// (its offsets, if any, stay).
			g.consumer = nil
			if len(g.offsets) == 0 && len(g.txns) == 0 {
				delete(c.groups, g.id)
			}
			return nil
		}
		applyConsumerGroupEpoch(cg, p.metadata.epoch)
	case cgPartitionMetadataKey:
		sub := map[string]subscribedTopic{}
		for _, t := range p.partMeta {
			sub[t.name] = subscribedTopic{id: t.id, partitions: t.partitions}
		}
		applyConsumerSubscription(cg, sub)
	case cgMemberMetadataKey:
		if p.tombstone {
			applyRemoveConsumerMember(cg, p.member)
			return nil
		}
		applyConsumerMember(cg, p.member, &p.member5)
	case cgTargetMetadataKey:
		if !p.tombstone {
			cg.assignmentEpoch = p.target.assignmentEpoch
		}
	case cgTargetMemberKey:
		if p.tombstone {
			applyTargetMember(cg, p.member, nil)
			return nil
		}
		applyTargetMember(cg, p.member, p.targetSet)
	case cgCurrentAssignmentKey:
		if p.tombstone {
			applyCurrentAssignment(cg, p.member, nil)
			return nil
		}
		s := reconcileState{epoch: p.current.memberEpoch, previousEpoch: p.current.previousMemberEpoch,
			state: memberState(p.current.state), assigned: p.current.assigned, pendingRevocation: p.current.pendingRevocation}
		if s.state != memberStable && s.state != memberUnrevokedPartitions && s.state != memberUnreleasedPartitions {
			s.state = memberUnknown
		}
		applyCurrentAssignment(cg, p.member, &s)
	}
	return nil
}
