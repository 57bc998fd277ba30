package group

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fuzzGroup is a stable consumer group of two members, as a coordinator
// writes it after a rebalance.
func fuzzGroup(id string, subs ...[]byte) *group {
	g := newGroup(id, 1000)
	g.protocolType = consumerProtocolType
	g.protocol, g.hasProtocol = "range", true
	g.generation = 3
	for i, sub := range subs {
		m := &member{
			id:                 id + "-member-" + string(rune('a'+i)),
			clientID:           "client",
			clientHost:         "/127.0.0.1",
			rebalanceTimeoutMs: 30000,
			sessionTimeoutMs:   10000,
			protocolType:       consumerProtocolType,
			protocols:          []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: sub}},
			assignment:         assignment("t", int32(i)),
		}
		if i == 1 {
			m.instanceID = strPtr("static")
		}
		g.add(m, nil)
	}
	g.leader = g.order[0]
	return g
}

// fuzzBaseRecords are what the partition holds before the fuzzed record: a
// consumer group with offsets, and a simple group's offset.
func fuzzBaseRecords() []Record {
	o := &offset{offset: 42, leaderEpoch: 5, metadata: "m", commitMs: 1000, expireMs: -1}
	return []Record{
		groupRecord(fuzzGroup("g", subscription("t"), subscription("t", "u"))),
		offsetRecord("g", "t", 0, o),
		offsetRecord("g", "u", 1, &offset{offset: 7, leaderEpoch: -1, commitMs: 1000, expireMs: 5000}),
		offsetRecord("simple", "t", 0, o),
	}
}

// fuzzLoad replays records into a new coordinator, loads it and serves
// every read and a day of timers: whatever loaded must be servable. check,
// if not nil, looks at the coordinator right after loading.
func fuzzLoad(t *testing.T, records []Record, check func(*Coordinator)) {
	t.Helper()
	c, err := New(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range records {
		if err := c.Replay(r.Key, r.Value); err != nil && !errors.Is(err, ErrCorruptRecord) {
			t.Fatalf("record %d: error %v does not wrap ErrCorruptRecord", i, err)
		}
	}
	c.Loaded(t0)
	if check != nil {
		check(c)
	}
	for _, resp := range snapshot(t, c, t0, c.sortedGroupIDs()) {
		back := resp.RequestKind().ResponseKind()
		back.SetVersion(resp.GetVersion())
		if err := back.ReadFrom(resp.AppendTo(nil)); err != nil {
			t.Fatalf("%T does not round-trip: %v", resp, err)
		}
	}
	c.RangeOffsets(func(string, string, int32, int64) bool { return true })
	c.Tick(t0.Add(24 * time.Hour))
	c.DeleteTopicOffsets(t0.Add(24*time.Hour), "t", "u")
}

// FuzzReplay feeds one arbitrary __consumer_offsets record, after real
// ones, through Replay as the coordinator does while loading its
// partition. The record must be refused with ErrCorruptRecord or applied,
// and what it leaves must load and answer requests. kmsg bounds every
// array it decodes by the bytes left, so no length prefix sizes an
// allocation.
func FuzzReplay(f *testing.F) {
	for _, r := range fuzzBaseRecords() {
		f.Add(r.Key, r.Value, false)
		f.Add(r.Key, r.Value, true)
	}
	f.Add(groupKey("g"), emptyGroupRecord(newGroup("g", 5)).Value, false)
	f.Add(groupKey("new"), groupRecord(fuzzGroup("new", subscription("x"))).Value, false)
	old := kmsg.GroupMetadataValue{Version: 0, ProtocolType: "consumer", Generation: 1, Protocol: strPtr("range"), Leader: strPtr("m"),
		Members: []kmsg.GroupMetadataValueMember{{MemberID: "m", SessionTimeoutMillis: 10, Subscription: []byte{0, 0, 0, 0, 0, 0}}}}
	f.Add(groupKey("g"), old.AppendTo(nil), false)
	// Regressions: a leader that is not a member, twice the same member.
	old.Leader = strPtr("x")
	f.Add(groupKey("g"), old.AppendTo(nil), false)
	old.Leader = strPtr("m")
	old.Members = append(old.Members, old.Members[0])
	f.Add(groupKey("g"), old.AppendTo(nil), false)
	v0 := kmsg.OffsetCommitValue{Version: 0, Offset: 8, Metadata: "m", CommitTimestamp: 2}
	f.Add(offsetKey("g", "t", 1), v0.AppendTo(nil), false)
	f.Add([]byte{0, 3, 0, 1, 'g'}, []byte{0, 0, 0, 0, 0, 1}, false) // KIP-848 record: skipped
	f.Add([]byte{0}, []byte{}, false)
	f.Fuzz(func(t *testing.T, key, value []byte, tombstone bool) {
		if tombstone {
			value = nil
		}
		records := append(fuzzBaseRecords(), Record{Key: key, Value: value})
		// An offset of the fuzzed record's group, if it names one.
		if len(key) >= 2 {
			var k kmsg.GroupMetadataKey
			if k.ReadFrom(key) == nil {
				records = append(records, offsetRecord(k.Group, "t", 9, &offset{offset: 1, leaderEpoch: -1, expireMs: -1}))
			}
		}
		fuzzLoad(t, records, nil)
	})
}

// FuzzConsumerSubscription puts arbitrary bytes where a member's consumer
// protocol subscription goes, in a group record that is otherwise valid.
// The subscription is read (its version 0 prefix) to know which topics the
// group consumes; bytes that do not parse leave that unknown, and must not
// fail the load.
func FuzzConsumerSubscription(f *testing.F) {
	f.Add(subscription("t"))
	f.Add(subscription())
	f.Add(subscription("t", "u", "v"))
	f.Add((&kmsg.ConsumerMemberMetadata{Version: 0, Topics: []string{"t"}, UserData: []byte("x")}).AppendTo(nil))
	f.Add((&kmsg.ConsumerMemberMetadata{Version: 1, Topics: []string{"t"}, OwnedPartitions: []kmsg.ConsumerMemberMetadataOwnedPartition{{Topic: "t", Partitions: []int32{0, 1}}}}).AppendTo(nil))
	f.Add([]byte{0, 9, 0, 0, 0, 1, 0, 1, 't'}) // a future version: its v0 prefix still reads
	f.Add([]byte{0})
	f.Add([]byte{0, 0, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, sub []byte) {
		g := fuzzGroup("g", subscription("t"), sub)
		records := []Record{groupRecord(g), offsetRecord("g", "t", 0, &offset{offset: 1, leaderEpoch: -1, expireMs: -1})}
		fuzzLoad(t, records, func(c *Coordinator) {
			if c.groups["g"] == nil {
				t.Fatal("a valid group record with any subscription bytes did not load")
			}
			loaded := c.groups["g"].members[g.order[1]]
			if loaded == nil || !bytes.Equal(loaded.metadata("range"), sub) {
				t.Fatalf("subscription loaded as %x, want %x", loaded.metadata("range"), sub)
			}
		})
	})
}

// FuzzConsumerRecords: a consumer group record of any bytes decodes or is
// refused, never panics, and what decodes writes back to bytes that decode
// to the same thing; replaying it into a coordinator never panics either.
func FuzzConsumerRecords(f *testing.F) {
	member := "m"
	set := partitionSet{}
	set.add(cgTopic, 0)
	set.add(cgTopic, 3)
	for _, r := range []Record{
		consumerGroupMetadataRecord("g", &consumerGroupMetadata{epoch: 4}),
		consumerGroupMetadataRecord("g", &consumerGroupMetadata{epoch: 4, metadataHash: 99, hasHash: true}),
		partitionMetadataRecord("g", partitionMetadata{{id: cgTopic, name: "t", partitions: 6}}),
		consumerMemberRecord("g", member, &consumerMemberMetadata{instanceID: strPtr("i"), clientID: "c", clientHost: "/h",
			subscribedTopicNames: []string{"t"}, subscribedTopicRegex: strPtr("t.*"), rebalanceTimeoutMs: 30000, serverAssignor: strPtr("uniform")}),
		targetAssignmentMetadataRecord("g", &targetAssignmentMetadata{assignmentEpoch: 4}),
		targetAssignmentMemberRecord("g", member, set),
		currentAssignmentRecord("g", member, &currentMemberAssignment{memberEpoch: 4, previousMemberEpoch: 3, state: 1, assigned: set, pendingRevocation: partitionSet{}}),
		currentAssignmentRecord("g", member, nil),
	} {
		f.Add(r.Key, r.Value)
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		if len(key) < 2 || !isConsumerRecordKey(int16(uint16(key[0])<<8|uint16(key[1]))) {
			return
		}
		p, err := parseConsumerRecord(key, value)
		if err == nil && !p.tombstone && p.kind != cgRegexKey {
			again := reencode(p)
			q, err := parseConsumerRecord(again.Key, again.Value)
			if err != nil {
				t.Fatalf("re-encoded record does not decode: %v", err)
			}
			if again2 := reencode(q); !bytes.Equal(again2.Value, again.Value) || !bytes.Equal(again2.Key, again.Key) {
				t.Fatalf("record does not round-trip:\n%x\n%x", again.Value, again2.Value)
			}
		}
		c, cerr := New(testConfig())
		if cerr != nil {
			t.Fatal(cerr)
		}
		if err := c.Replay(key, value); err != nil && !errors.Is(err, ErrCorruptRecord) {
			t.Fatalf("replay: %v", err)
		}
		c.Loaded(time.Unix(0, 0))
	})
}

// reencode writes a parsed record again.
func reencode(p parsedConsumerRecord) Record {
	switch p.kind {
	case cgMetadataKey:
		return consumerGroupMetadataRecord(p.group, &p.metadata)
	case cgPartitionMetadataKey:
		return partitionMetadataRecord(p.group, p.partMeta)
	case cgMemberMetadataKey:
		return consumerMemberRecord(p.group, p.member, &p.member5)
	case cgTargetMetadataKey:
		return targetAssignmentMetadataRecord(p.group, &p.target)
	case cgTargetMemberKey:
		return targetAssignmentMemberRecord(p.group, p.member, p.targetSet)
	}
	return currentAssignmentRecord(p.group, p.member, &p.current)
}
