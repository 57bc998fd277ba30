package group

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func commitCodes(r *kmsg.OffsetCommitResponse) []int16 {
	var codes []int16
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			codes = append(codes, p.ErrorCode)
		}
	}
	return codes
}

func TestCommitGenerationChecks(t *testing.T) {
	h := newHarness(t, testConfig())
	a, b := h.consumer("g", "a", "t"), h.consumer("g", "b", "t")
	h.stabilize(a, b)

	deepEqual(t, "current generation", commitCodes(a.commit(9, "t", 10, 20)), []int16{0, 0})
	stale := *a
	stale.generation--
	deepEqual(t, "old generation", commitCodes(stale.commit(9, "t", 11)), []int16{errIllegalGeneration})
	stranger := *a
	stranger.memberID = "nobody"
	deepEqual(t, "unknown member", commitCodes(stranger.commit(9, "t", 11)), []int16{errUnknownMemberID})
	anon := *a
	anon.memberID, anon.generation = "", -1
	deepEqual(t, "generation -1 into a group with members", commitCodes(anon.commit(9, "t", 11)), []int16{errUnknownMemberID})

	// While the group waits for the leader's assignment.
	b.topics = []string{"t", "u"}
	ta, tb := a.join(), b.join()
	a.joined(ta)
	b.joined(tb)
	h.wantState("g", "CompletingRebalance")
	deepEqual(t, "completing rebalance", commitCodes(a.commit(9, "t", 12)), []int16{errRebalanceInProgress})

	// Unknown group with a generation: v9+ GROUP_ID_NOT_FOUND, before
	// ILLEGAL_GENERATION.
	ghost := h.consumer("ghost", "x", "t")
	ghost.memberID, ghost.generation = "x-1", 3
	deepEqual(t, "unknown group v9", commitCodes(ghost.commit(9, "t", 1)), []int16{errGroupIDNotFound})
	deepEqual(t, "unknown group v8", commitCodes(ghost.commit(8, "t", 1)), []int16{errIllegalGeneration})

	// Committed offsets, metadata and leader epochs come back.
	f := h.fetchAll("g")[0]
	if len(f.Topics) != 1 || len(f.Topics[0].Partitions) != 2 {
		t.Fatalf("fetch: %+v", f)
	}
	p1 := f.Topics[0].Partitions[1]
	if p1.Offset != 20 || *p1.Metadata != "meta-20" || p1.LeaderEpoch != 5 || p1.ErrorCode != 0 {
		t.Fatalf("partition 1: %+v", p1)
	}
}

func TestCommitKeepsSession(t *testing.T) {
	h := newHarness(t, testConfig())
	a, b := h.consumer("g", "a", "t"), h.consumer("g", "b", "t")
	h.stabilize(a, b)
	for i := 0; i < 5; i++ {
		h.advance(4 * time.Second)
		wantCode(t, "a heartbeat", a.heartbeat(), errNone)
		deepEqual(t, "b commit", commitCodes(b.commit(9, "t", int64(i))), []int16{0})
	}
	h.wantState("g", "Stable")
}

func TestSimpleConsumerCommits(t *testing.T) {
	h := newHarness(t, testConfig())
	s := h.consumer("simple", "s", "t")
	s.memberID, s.generation = "", -1
	deepEqual(t, "commit", commitCodes(s.commit(7, "t", 100, 200)), []int16{0, 0})
	d := h.describe("simple")[0]
	if d.State != "Empty" || d.ProtocolType != "" {
		t.Fatalf("a simple group is empty without protocol type: %+v", d)
	}
	if len(h.records) != 2 {
		t.Fatalf("a simple commit writes only offsets, got %d records", len(h.records))
	}
	f := h.fetchAll("simple")[0]
	if f.Topics[0].Partitions[0].Offset != 100 || f.Topics[0].Partitions[1].Offset != 200 {
		t.Fatalf("fetch: %+v", f)
	}
	// A member can join the group afterwards; offsets stay.
	m := h.consumer("simple", "m", "t")
	h.stabilize(m)
	if f := h.fetchAll("simple")[0]; f.Topics[0].Partitions[1].Offset != 200 {
		t.Fatal("offsets lost when the group got members")
	}
}

func TestCommitValidation(t *testing.T) {
	cfg := testConfig()
	cfg.OffsetMetadataMaxBytes = 10
	tid := [16]byte{1, 2, 3}
	cfg.Topics = fakeTopics{"t": {id: tid, partitions: 2}}
	h := newHarness(t, cfg)
	s := h.consumer("g", "s", "t")
	s.memberID, s.generation = "", -1

	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 9
	req.Group = "g"
	part := func(p int32, meta string) kmsg.OffsetCommitRequestTopicPartition {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.Metadata = p, 7, &meta
		return rp
	}
	req.Topics = []kmsg.OffsetCommitRequestTopic{
		{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{part(0, "ok"), part(1, strings.Repeat("x", 11)), part(2, "")}},
		{Topic: "missing", Partitions: []kmsg.OffsetCommitRequestTopicPartition{part(0, "")}},
	}
	r := response[*kmsg.OffsetCommitResponse](h, h.send("s", req))
	deepEqual(t, "codes", commitCodes(r), []int16{0, errOffsetMetadataTooLarge, errUnknownTopicOrPartition, errUnknownTopicOrPartition})
	// Java counts UTF-16 code units: 10 of them fit, although 20 bytes.
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{part(1, strings.Repeat("é", 10))}}}
	deepEqual(t, "utf-16 length", commitCodes(response[*kmsg.OffsetCommitResponse](h, h.send("s", req))), []int16{0})

	// v10 names topics by id.
	req.Version = 10
	req.Topics = []kmsg.OffsetCommitRequestTopic{
		{TopicID: tid, Partitions: []kmsg.OffsetCommitRequestTopicPartition{part(0, "by id")}},
		{TopicID: [16]byte{9}, Partitions: []kmsg.OffsetCommitRequestTopicPartition{part(0, "")}},
	}
	r = response[*kmsg.OffsetCommitResponse](h, h.send("s", req))
	deepEqual(t, "v10 codes", commitCodes(r), []int16{0, errUnknownTopicID})
	if r.Topics[0].TopicID != tid {
		t.Fatal("v10 responses name topics by id")
	}
	fr := kmsg.NewPtrOffsetFetchRequest()
	fr.Version = 10
	fr.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g", Topics: []kmsg.OffsetFetchRequestGroupTopic{
		{TopicID: tid, Partitions: []int32{0, 1}},
		{TopicID: [16]byte{9}, Partitions: []int32{0}},
	}}}
	f := response[*kmsg.OffsetFetchResponse](h, h.send("s", fr)).Groups[0]
	if p := f.Topics[0].Partitions[0]; p.Offset != 7 || *p.Metadata != "by id" {
		t.Fatalf("v10 fetch: %+v", p)
	}
	if p := f.Topics[1].Partitions[0]; p.ErrorCode != errUnknownTopicID || p.Offset != -1 {
		t.Fatalf("v10 fetch of an unknown topic id: %+v", p)
	}
	// A commit by name records the topic's id: once "t" is recreated with
	// a new id, v10 fetches no longer see its old offsets (KAFKA-19154).
	req.Version = 9
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{part(1, "by name")}}}
	h.send("s", req)
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(h.records[len(h.records)-1].Value); err != nil || v.Version != 4 || v.TopicID != tid {
		t.Fatalf("record of a commit by name: %+v %v", v, err)
	}
	newID := [16]byte{7}
	h.c.cfg.Topics = fakeTopics{"t": {id: newID, partitions: 2}}
	fr.Groups[0].Topics = []kmsg.OffsetFetchRequestGroupTopic{{TopicID: newID, Partitions: []int32{1}}}
	if p := response[*kmsg.OffsetFetchResponse](h, h.send("s", fr)).Groups[0].Topics[0].Partitions[0]; p.Offset != -1 || p.ErrorCode != 0 {
		t.Fatalf("offset of the deleted topic returned for the new one: %+v", p)
	}
	h.c.cfg.Topics = cfg.Topics

	// Fetching all offsets in v10 reports them by topic id.
	fr.Groups[0].Topics = nil
	f = response[*kmsg.OffsetFetchResponse](h, h.send("s", fr)).Groups[0]
	if len(f.Topics) != 1 || f.Topics[0].TopicID != tid || len(f.Topics[0].Partitions) != 2 {
		t.Fatalf("v10 fetch all: %+v", f)
	}
}

func TestOffsetFetchUnknownGroup(t *testing.T) {
	h := newHarness(t, testConfig())

	// v1: offset -1, no error, for every requested partition.
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 1
	req.Group = "nobody"
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0, 1}}}
	r := response[*kmsg.OffsetFetchResponse](h, h.send("x", req))
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 2 {
		t.Fatalf("v1: %+v", r)
	}
	for _, p := range r.Topics[0].Partitions {
		if p.Offset != -1 || p.ErrorCode != 0 || p.Metadata == nil || *p.Metadata != "" {
			t.Fatalf("v1 partition: %+v", p)
		}
	}

	// v5: the same, with a leader epoch of -1.
	req.Version = 5
	r = response[*kmsg.OffsetFetchResponse](h, h.send("x", req))
	if r.ErrorCode != 0 || r.Topics[0].Partitions[0].LeaderEpoch != -1 || r.Topics[0].Partitions[0].Offset != -1 {
		t.Fatalf("v5: %+v", r)
	}
	// v5 with null topics: no topics.
	req.Topics = nil
	if r = response[*kmsg.OffsetFetchResponse](h, h.send("x", req)); r.ErrorCode != 0 || len(r.Topics) != 0 {
		t.Fatalf("v5 all: %+v", r)
	}

	// v8: several groups, known and unknown.
	s := h.consumer("known", "s", "t")
	s.memberID, s.generation = "", -1
	s.commit(8, "t", 42)
	req = kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	req.Groups = []kmsg.OffsetFetchRequestGroup{
		{Group: "known", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0, 1}}}},
		{Group: "nobody", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}},
		{Group: "nobody-all"},
	}
	r = response[*kmsg.OffsetFetchResponse](h, h.send("x", req))
	if len(r.Groups) != 3 {
		t.Fatalf("v8: %+v", r)
	}
	if p := r.Groups[0].Topics[0].Partitions; p[0].Offset != 42 || *p[0].Metadata != "meta-42" || p[1].Offset != -1 {
		t.Fatalf("v8 known group: %+v", p)
	}
	if p := r.Groups[1].Topics[0].Partitions[0]; p.Offset != -1 || p.ErrorCode != 0 || r.Groups[1].ErrorCode != 0 {
		t.Fatalf("v8 unknown group: %+v", r.Groups[1])
	}
	if r.Groups[2].ErrorCode != 0 || len(r.Groups[2].Topics) != 0 {
		t.Fatalf("v8 unknown group, all topics: %+v", r.Groups[2])
	}
}

func TestOffsetDelete(t *testing.T) {
	h := newHarness(t, testConfig())
	a := h.consumer("g", "a", "t")
	h.stabilize(a)
	a.commit(9, "t", 1)
	a.commit(9, "old", 2, 3)

	del := func(group, topic string, partitions ...int32) *kmsg.OffsetDeleteResponse {
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = group
		rt := kmsg.OffsetDeleteRequestTopic{Topic: topic}
		for _, p := range partitions {
			rt.Partitions = append(rt.Partitions, kmsg.OffsetDeleteRequestTopicPartition{Partition: p})
		}
		req.Topics = []kmsg.OffsetDeleteRequestTopic{rt}
		return response[*kmsg.OffsetDeleteResponse](h, h.send("admin", req))
	}
	r := del("g", "t", 0)
	wantCode(t, "subscribed topic", r.Topics[0].Partitions[0].ErrorCode, errGroupSubscribedToTopic)
	n := len(h.records)
	r = del("g", "old", 0, 1, 7)
	wantCode(t, "group", r.ErrorCode, errNone)
	for _, p := range r.Topics[0].Partitions {
		wantCode(t, "unsubscribed topic", p.ErrorCode, errNone)
	}
	if len(h.records) != n+2 || h.records[n].Value != nil || h.records[n+1].Value != nil {
		t.Fatal("two tombstones for the two committed partitions")
	}
	wantCode(t, "unknown group", del("nobody", "t", 0).ErrorCode, errGroupIDNotFound)
	wantCode(t, "empty group id", del("", "t", 0).ErrorCode, errInvalidGroupID)

	// A non-consumer group with members: its subscriptions are unknown.
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 3
	req.Group = "connect"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10_000, 10_000
	req.ProtocolType = "connect"
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "sessioned", Metadata: []byte{1}}}
	h.send("w", req)
	wantCode(t, "connect group", del("connect", "t", 0).ErrorCode, errNonEmptyGroup)
}

func TestOffsetExpiry(t *testing.T) {
	h := newHarness(t, testConfig())
	week := 7 * 24 * time.Hour

	// A consumer group that becomes empty: its offsets expire a week
	// after it emptied, then the group is deleted.
	a := h.consumer("g", "a", "t")
	h.stabilize(a)
	a.commit(9, "t", 5)
	a.leave()
	emptied := h.now

	// A simple group: its offsets expire a week after each commit.
	s := h.consumer("simple", "s", "t")
	s.memberID, s.generation = "", -1
	s.commit(9, "t", 1)
	h.advance(2 * time.Hour)
	s.commit(9, "u", 2)

	// A stable consumer group: offsets of topics it does not subscribe to
	// expire a week after their commit; subscribed ones never do.
	c := h.consumer("live", "c", "t")
	h.stabilize(c)
	c.commit(9, "t", 7)
	c.commit(9, "gone", 8)

	keepAlive := func(d time.Duration) {
		for end := h.now.Add(d); h.now.Before(end); {
			h.advance(5 * time.Second)
			c.heartbeat()
		}
	}
	keepAlive(emptied.Add(week).Sub(h.now) - time.Minute)
	if f := h.fetchAll("g")[0]; len(f.Topics) != 1 {
		t.Fatal("offsets of g expired early")
	}
	n := len(h.records)
	keepAlive(11 * time.Minute) // a retention check passes the week
	if f := h.fetchAll("g")[0]; len(f.Topics) != 0 {
		t.Fatalf("offsets of g did not expire: %+v", f)
	}
	h.wantState("g", "Dead")
	var tombstones []string
	for _, r := range h.records[n:] {
		if r.Value == nil {
			tombstones = append(tombstones, recordName(t, r.Key))
		}
	}
	// simple/t was committed when g emptied (+0h after leave) and expires
	// in the same check; "gone" in live was committed ~3h later.
	deepEqual(t, "tombstones", tombstones, []string{"offset g/t/0", "group g", "offset simple/t/0"})
	if f := h.fetchAll("simple")[0]; len(f.Topics) != 1 || f.Topics[0].Topic != "u" {
		t.Fatalf("simple/u expires later: %+v", f)
	}
	keepAlive(3 * time.Hour)
	h.wantState("simple", "Dead")
	f := h.fetchAll("live")[0]
	if len(f.Topics) != 1 || f.Topics[0].Topic != "t" {
		t.Fatalf("live keeps only its subscribed topic: %+v", f)
	}
	h.wantState("live", "Stable")
}

// recordName describes a record key for assertions.
func recordName(t *testing.T, key []byte) string {
	t.Helper()
	if key[1] == 2 {
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			t.Fatal(err)
		}
		return "group " + k.Group
	}
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(key); err != nil {
		t.Fatal(err)
	}
	return "offset " + k.Group + "/" + k.Topic + "/" + string(rune('0'+k.Partition))
}

func TestCommitWithRetentionTime(t *testing.T) {
	h := newHarness(t, testConfig())
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 2
	req.Group = "g"
	req.RetentionTimeMillis = int64(time.Hour / time.Millisecond)
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset = 3
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{rp}}}
	h.send("s", req)
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(h.records[0].Value); err != nil || v.Version != 1 || v.ExpireTimestamp != t0.Add(time.Hour).UnixMilli() {
		t.Fatalf("record: %+v %v", v, err)
	}
	h.advance(70 * time.Minute) // the first retention check after an hour
	if f := h.fetchAll("g")[0]; len(f.Topics) != 0 {
		t.Fatal("the commit's own retention did not apply")
	}
}
