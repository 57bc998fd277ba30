package group

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record versions, as Kafka 4.x writes them. The key version also tells the
// record type apart: 0 and 1 are offset commits, 2 is group metadata.
const (
	offsetCommitKeyVersion    int16 = 1
	groupMetadataKeyVersion   int16 = 2
	groupMetadataValueVersion int16 = 3 // the last non-flexible version
	// offsetCommitValueVersion is what Kafka 4.1+ writes (flexible, with
	// the topic id as tagged field 0); Kafka 4.0 wrote 3. Commits that carry
	// their own expiration time (OffsetCommit v2-v4 with a retention time)
	// are written with version 1, the only one with that field.
	offsetCommitValueVersion       int16 = 4
	offsetCommitValueExpireVersion int16 = 1
)

// groupRecord is the group's metadata record: its generation, protocol,
// leader and members with their subscription and assignment (Kafka's
// newGroupMetadataRecord).
func groupRecord(g *group) Record {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupMetadataValueVersion
	v.ProtocolType = g.protocolType
	v.Generation = g.generation
	if g.hasProtocol {
		v.Protocol = strPtr(g.protocol)
	}
	if g.leader != "" {
		v.Leader = strPtr(g.leader)
	}
	v.CurrentStateTimestamp = g.stateTimestamp
	for _, id := range g.order {
		m := g.members[id]
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID = m.id
		vm.InstanceID = m.instanceID
		vm.ClientID = m.clientID
		vm.ClientHost = m.clientHost
		vm.RebalanceTimeoutMillis = m.rebalanceTimeoutMs
		vm.SessionTimeoutMillis = m.sessionTimeoutMs
		vm.Subscription = nonNil(m.metadata(g.protocol))
		vm.Assignment = nonNil(m.assignment)
		v.Members = append(v.Members, vm)
	}
	return Record{Key: groupKey(g.id), Value: v.AppendTo(nil)}
}

// emptyGroupRecord is the record Kafka writes for a group created by a
// JoinGroup: no protocol type, generation 0, no members.
func emptyGroupRecord(g *group) Record {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupMetadataValueVersion
	v.CurrentStateTimestamp = g.stateTimestamp
	return Record{Key: groupKey(g.id), Value: v.AppendTo(nil)}
}

func groupTombstone(id string) Record { return Record{Key: groupKey(id)} }

func groupKey(id string) []byte {
	k := kmsg.GroupMetadataKey{Version: groupMetadataKeyVersion, Group: id}
	return k.AppendTo(nil)
}

func offsetKey(group, topic string, partition int32) []byte {
	k := kmsg.OffsetCommitKey{Version: offsetCommitKeyVersion, Group: group, Topic: topic, Partition: partition}
	return k.AppendTo(nil)
}

// offsetRecord is the record of one committed offset.
func offsetRecord(group, topic string, partition int32, o *offset) Record {
	v := kmsg.NewOffsetCommitValue()
	v.Version = offsetCommitValueVersion
	v.Offset = o.offset
	v.LeaderEpoch = o.leaderEpoch
	v.Metadata = o.metadata
	v.CommitTimestamp = o.commitMs
	v.TopicID = o.topicID
	if o.expireMs >= 0 {
		v.Version = offsetCommitValueExpireVersion
		v.ExpireTimestamp = o.expireMs
	}
	return Record{Key: offsetKey(group, topic, partition), Value: v.AppendTo(nil)}
}

func offsetTombstone(group, topic string, partition int32) Record {
	return Record{Key: offsetKey(group, topic, partition)}
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// Replay applies one record of a non-transactional batch of the
// partition, in log order, while the coordinator is loading. A nil value is
// a tombstone. Records of types the classic coordinator does not use (key
// versions other than 0, 1 and 2, such as KIP-848 consumer group records)
// are skipped. Records of transactional batches go to ReplayTransactional
// instead, and the COMMIT and ABORT markers of control batches to
// ReplayTxnMarker; other control records are skipped by the driver.
//
// Replay keeps no reference to key or value.
func (c *Coordinator) Replay(key, value []byte) error {
	if c.phase != phaseLoading {
		return ErrLoaded
	}
	return c.replay(key, value, -1)
}

// replay applies a record; producerID is that of its transactional batch,
// -1 for other batches.
func (c *Coordinator) replay(key, value []byte, producerID int64) error {
	if len(key) < 2 {
		return fmt.Errorf("%w: key of %d bytes", ErrCorruptRecord, len(key))
	}
	switch int16(binary.BigEndian.Uint16(key)) {
	case 0, 1:
		return c.replayOffset(key, value, producerID)
	case groupMetadataKeyVersion:
		return c.replayGroup(key, value)
	case shareGroupMetadataKey, shareStatePartitionsKey:
		return c.replayShare(key, value)
	}
	if v := int16(binary.BigEndian.Uint16(key)); isConsumerRecordKey(v) {
		return c.replayConsumer(key, value)
	}
	return nil
}

func (c *Coordinator) replayOffset(key, value []byte, producerID int64) error {
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(key); err != nil {
		return fmt.Errorf("%w: offset commit key: %w", ErrCorruptRecord, err)
	}
	g := c.groups[k.Group]
	if value == nil {
		// A tombstone deletes the committed offset and those of open
		// transactions.
		if g != nil {
			g.deleteOffset(k.Topic, k.Partition)
			g.dropPending(k.Topic, k.Partition)
		}
		return nil
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(value); err != nil {
		return fmt.Errorf("%w: offset commit value of group %q: %w", ErrCorruptRecord, k.Group, err)
	}
	if g == nil {
		// Offsets committed without group membership (generation -1)
		// make a "simple" group: empty, without protocol type.
		g = newGroup(k.Group, -1)
		c.groups[g.id] = g
	}
	o := &offset{
		offset:      v.Offset,
		leaderEpoch: -1,
		metadata:    v.Metadata,
		commitMs:    v.CommitTimestamp,
		expireMs:    -1,
		topicID:     v.TopicID,
	}
	if v.Version >= 3 {
		o.leaderEpoch = v.LeaderEpoch
	}
	if v.Version == 1 {
		o.expireMs = v.ExpireTimestamp
	}
	if producerID >= 0 {
		c.setPending(g, producerID, k.Topic, k.Partition, o)
		return nil
	}
	o.ordinal = c.nextOrdinal()
	g.setOffset(k.Topic, k.Partition, o)
	return nil
}

func (c *Coordinator) replayGroup(key, value []byte) error {
	var k kmsg.GroupMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return fmt.Errorf("%w: group metadata key: %w", ErrCorruptRecord, err)
	}
	old := c.groups[k.Group]
	if value == nil {
		if old != nil && (len(old.offsets) > 0 || len(old.txns) > 0) {
			// The tombstone ends the classic group's metadata only: its
			// committed (and pending) offsets are records of their own
			// and stay until their own tombstones, as in the live
			// coordinator when a classic group becomes a consumer group
			// (the tombstone is then followed by consumer group
			// records). A deleted group's offsets were tombstoned
			// before its metadata.
			g := newGroup(k.Group, -1)
			g.offsets, g.txns = old.offsets, old.txns
			c.groups[k.Group] = g
			return nil
		}
		delete(c.groups, k.Group)
		if old != nil {
			c.forgetTxns(old)
		}
		return nil
	}
	var v kmsg.GroupMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return fmt.Errorf("%w: group metadata value of group %q: %w", ErrCorruptRecord, k.Group, err)
	}
	if len(v.Members) > 0 && v.Protocol == nil {
		return fmt.Errorf("%w: group %q has members but no protocol", ErrCorruptRecord, k.Group)
	}
	// Kafka never writes a member twice or a leader that is not a member;
	// the group's state cannot hold either.
	ids := make(map[string]bool, len(v.Members))
	for _, vm := range v.Members {
		if ids[vm.MemberID] {
			return fmt.Errorf("%w: group %q has member %q twice", ErrCorruptRecord, k.Group, vm.MemberID)
		}
		ids[vm.MemberID] = true
	}
	if v.Leader != nil && !ids[*v.Leader] {
		return fmt.Errorf("%w: group %q has leader %q, not a member", ErrCorruptRecord, k.Group, *v.Leader)
	}
	g := newGroup(k.Group, v.CurrentStateTimestamp)
	if v.Version < 2 {
		g.stateTimestamp = -1
	}
	if old != nil {
		g.offsets = old.offsets // offsets are records of their own
		g.txns = old.txns
	}
	g.generation = v.Generation
	g.protocolType = v.ProtocolType
	if v.Protocol != nil {
		g.protocol, g.hasProtocol = *v.Protocol, true
	}
	for _, vm := range v.Members {
		rebalanceMs := vm.RebalanceTimeoutMillis
		if v.Version < 1 || rebalanceMs == -1 {
			rebalanceMs = vm.SessionTimeoutMillis
		}
		m := &member{
			id:                 vm.MemberID,
			clientID:           vm.ClientID,
			clientHost:         vm.ClientHost,
			rebalanceTimeoutMs: rebalanceMs,
			sessionTimeoutMs:   vm.SessionTimeoutMillis,
			protocolType:       v.ProtocolType,
			protocols:          []kmsg.JoinGroupRequestProtocol{{Name: g.protocol, Metadata: bytes.Clone(vm.Subscription)}},
			assignment:         bytes.Clone(vm.Assignment),
		}
		if vm.InstanceID != nil {
			m.instanceID = strPtr(*vm.InstanceID)
		}
		g.add(m, nil)
	}
	if v.Leader != nil {
		g.leader = *v.Leader
	}
	if len(g.members) > 0 {
		g.state = StateStable
	}
	g.computeSubscriptions()
	c.groups[g.id] = g
	return nil
}
