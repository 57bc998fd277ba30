package group

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// snapshot is what a coordinator answers about its groups: DescribeGroups of
// every listed group, ListGroups and every committed offset.
func snapshot(t *testing.T, c *Coordinator, now time.Time, groups []string) []kmsg.Response {
	t.Helper()
	step := func(req kmsg.Request) kmsg.Response {
		out := c.Step(now, Input{Token: 0, Version: req.GetVersion(), Request: req})
		if len(out.Responses) != 1 || len(out.Records) != 0 {
			t.Fatalf("a read wrote %d records, answered %d times", len(out.Records), len(out.Responses))
		}
		return out.Responses[0].Body
	}
	d := kmsg.NewPtrDescribeGroupsRequest()
	d.Version = 5
	d.Groups = groups
	l := kmsg.NewPtrListGroupsRequest()
	l.Version = 5
	f := kmsg.NewPtrOffsetFetchRequest()
	f.Version = 9
	for _, g := range groups {
		f.Groups = append(f.Groups, kmsg.OffsetFetchRequestGroup{Group: g})
	}
	return []kmsg.Response{step(d), step(l), step(f)}
}

// TestReplayReproducesState runs scenarios, then loads every record they
// wrote into a fresh coordinator and compares what both answer.
func TestReplayReproducesState(t *testing.T) {
	h := newHarness(t, testConfig())

	// A stable group of three with a static member that restarted.
	a := h.consumer("stable", "a", "t")
	b := h.consumer("stable", "b", "t").static("ib")
	c := h.consumer("stable", "c", "t", "u")
	h.stabilize(a, b, c)
	a.commit(9, "t", 10, 20, 30)
	c.commit(9, "u", 5)
	restarted := h.consumer("stable", "b", "t").static("ib")
	restarted.joined(restarted.join())
	restarted.sync(nil)
	a.commit(9, "t", 11)

	// A group whose members all left: Empty, protocol type kept.
	e := h.consumer("emptied", "e", "t")
	h.stabilize(e)
	e.commit(9, "t", 99)
	e.leave()

	// A simple group, and a deleted one.
	s := h.consumer("simple", "s", "t")
	s.memberID, s.generation = "", -1
	s.commit(7, "t", 1, 2)
	s.commit(7, "t", 3)
	x := h.consumer("deleted", "x", "t")
	x.memberID, x.generation = "", -1
	x.commit(9, "t", 4)
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"deleted"}
	h.send("admin", del)

	// A group created by a JoinGroup whose member never came back.
	ghost := h.consumer("abandoned", "g", "t")
	ghost.join()
	for i := 0; i < 4; i++ { // its pending member id lapses
		h.advance(3 * time.Second)
		for _, m := range []*consumer{a, restarted, c} {
			wantCode(t, "heartbeat", m.heartbeat(), errNone)
		}
	}

	groups := []string{"stable", "emptied", "simple", "deleted", "abandoned"}
	want := snapshot(t, h.c, h.now, groups)

	// Load the records into a new coordinator.
	cfg := testConfig()
	loaded, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range h.records {
		if err := loaded.Replay(bytes.Clone(r.Key), bytes.Clone(r.Value)); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	out := loaded.Loaded(h.now)
	if len(out.Records) != 0 || len(out.Responses) != 0 {
		t.Fatalf("loading wrote %+v", out)
	}
	got := snapshot(t, loaded, h.now, groups)
	deepEqual(t, "DescribeGroups after replay", got[0], want[0])
	deepEqual(t, "ListGroups after replay", got[1], want[1])
	deepEqual(t, "OffsetFetch after replay", got[2], want[2])

	// The loaded coordinator carries on: members keep their session,
	// the restarted static member syncs its assignment again.
	h.c = loaded
	h.take(out)
	wantCode(t, "heartbeat after load", a.heartbeat(), errNone)
	sr := response[*kmsg.SyncGroupResponse](h, restarted.sync(nil))
	if !bytes.Equal(sr.MemberAssignment, assignment("t", 1)) {
		t.Fatalf("assignment after load: %x", sr.MemberAssignment)
	}
	h.advance(11 * time.Second) // nobody heartbeats: all expire
	wantCode(t, "heartbeat after expiry", c.heartbeat(), errUnknownMemberID)
}

func TestReplayEdgeCases(t *testing.T) {
	c, err := New(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	// Records of kinds the coordinator does not use (share groups) are
	// skipped; consumer group records are applied, and refused when they
	// do not decode.
	if err := c.Replay([]byte{0, 11, 0, 1, 's'}, []byte{0, 0, 0, 0, 0, 1, 0}); err != nil {
		t.Fatalf("share group record: %v", err)
	}
	if err := c.Replay([]byte{0, 3, 0, 2, 'c', 'g'}, []byte{0, 0, 0, 0, 0, 1, 0}); err != nil {
		t.Fatalf("consumer group record: %v", err)
	}
	if g := c.groups["cg"]; g == nil || g.consumer == nil || g.consumer.epoch != 1 {
		t.Fatalf("consumer group record not applied: %+v", g)
	}
	if err := c.Replay([]byte{0, 3, 0, 2, 'c', 'g'}, []byte{0, 0, 0, 0, 0, 1}); !errors.Is(err, ErrCorruptRecord) {
		t.Fatalf("truncated consumer group record: %v", err)
	}
	if err := c.Replay([]byte{0}, nil); !errors.Is(err, ErrCorruptRecord) {
		t.Fatalf("short key: %v", err)
	}
	if err := c.Replay(groupKey("g"), []byte{0, 3, 0}); !errors.Is(err, ErrCorruptRecord) {
		t.Fatalf("short value: %v", err)
	}
	// An offset tombstone of an unknown group is fine; an offset makes a
	// simple group; a group record keeps the offsets.
	if err := c.Replay(offsetKey("g", "t", 0), nil); err != nil {
		t.Fatal(err)
	}
	o := &offset{offset: 7, leaderEpoch: -1, commitMs: 1, expireMs: -1}
	if err := c.Replay(offsetRecord("g", "t", 0, o).Key, offsetRecord("g", "t", 0, o).Value); err != nil {
		t.Fatal(err)
	}
	if err := c.Replay(emptyGroupRecord(newGroup("g", 5)).Key, emptyGroupRecord(newGroup("g", 5)).Value); err != nil {
		t.Fatal(err)
	}
	if c.groups["g"].offsets["t"][0].offset != 7 {
		t.Fatal("group record dropped the group's offsets")
	}
	// A version 0 offset value (no leader epoch) and a version 1 one.
	v0 := kmsg.OffsetCommitValue{Version: 0, Offset: 8, Metadata: "m", CommitTimestamp: 2}
	if err := c.Replay(offsetKey("g", "t", 1), v0.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	if got := c.groups["g"].offsets["t"][1]; got.offset != 8 || got.leaderEpoch != -1 || got.expireMs != -1 {
		t.Fatalf("v0 offset: %+v", got)
	}
	// A group tombstone ends the group's metadata, not its offsets (a
	// classic group that became a consumer group); once the offsets
	// are tombstoned too, nothing is left.
	if err := c.Replay(groupKey("g"), nil); err != nil || c.groups["g"] == nil || c.groups["g"].offsets["t"][0].offset != 7 {
		t.Fatalf("group tombstone: %v; the offsets should stay", err)
	}
	for p := int32(0); p < 2; p++ {
		if err := c.Replay(offsetTombstone("g", "t", p).Key, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Replay(groupKey("g"), nil); err != nil || c.groups["g"] != nil {
		t.Fatalf("group tombstone without offsets: %v, group %v", err, c.groups["g"])
	}
	c.Loaded(t0)
	if err := c.Replay(groupKey("g"), nil); !errors.Is(err, ErrLoaded) {
		t.Fatalf("replay after load: %v", err)
	}
}

// TestRecordBytes pins the record formats documented in doc.go.
func TestRecordBytes(t *testing.T) {
	hexOf := func(parts ...string) string { return strings.Join(parts, "") }

	r := offsetRecord("g", "t", 3, &offset{offset: 42, leaderEpoch: 5, metadata: "m", commitMs: 1000, expireMs: -1})
	wantKey := hexOf("0001", "0001", "67", "0001", "74", "00000003")
	wantValue := hexOf("0004", "000000000000002a", "00000005", "02", "6d", "00000000000003e8", "00")
	if hex.EncodeToString(r.Key) != wantKey || hex.EncodeToString(r.Value) != wantValue {
		t.Fatalf("offset record\n key %x want %s\n value %x want %s", r.Key, wantKey, r.Value, wantValue)
	}
	r = offsetRecord("g", "t", 3, &offset{offset: 42, leaderEpoch: -1, commitMs: 1000, expireMs: 2000, topicID: [16]byte{0xff}})
	wantValue = hexOf("0001", "000000000000002a", "0000", "00000000000003e8", "00000000000007d0")
	if hex.EncodeToString(r.Value) != wantValue {
		t.Fatalf("offset record with expiry: %x want %s", r.Value, wantValue)
	}
	r = offsetRecord("g", "t", 3, &offset{offset: 1, leaderEpoch: -1, commitMs: 0, expireMs: -1, topicID: [16]byte{0xab}})
	wantValue = hexOf("0004", "0000000000000001", "ffffffff", "01", "0000000000000000",
		"01", "00", "10", "ab000000000000000000000000000000")
	if hex.EncodeToString(r.Value) != wantValue {
		t.Fatalf("offset record with topic id: %x want %s", r.Value, wantValue)
	}

	g := newGroup("g", 7)
	g.protocolType, g.generation, g.protocol, g.hasProtocol = "consumer", 2, "range", true
	g.add(&member{
		id: "m", clientID: "c", clientHost: "/h", rebalanceTimeoutMs: 300, sessionTimeoutMs: 100,
		protocolType: "consumer", protocols: []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0xaa}}},
		assignment: []byte{0xbb, 0xcc},
	}, nil)
	r = groupRecord(g)
	wantKey = hexOf("0002", "0001", "67")
	wantValue = hexOf("0003", "0008", hex.EncodeToString([]byte("consumer")), "00000002",
		"0005", hex.EncodeToString([]byte("range")), "0001", "6d", "0000000000000007",
		"00000001", "0001", "6d", "ffff", "0001", "63", "0002", "2f68", "0000012c", "00000064",
		"00000001", "aa", "00000002", "bbcc")
	if hex.EncodeToString(r.Key) != wantKey || hex.EncodeToString(r.Value) != wantValue {
		t.Fatalf("group record\n key %x want %s\n value %x want %s", r.Key, wantKey, r.Value, wantValue)
	}
	if r := groupTombstone("g"); r.Value != nil || hex.EncodeToString(r.Key) != wantKey {
		t.Fatal("group tombstone")
	}
}
