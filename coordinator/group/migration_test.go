package group

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// classicAssignment decodes a SyncGroup answer's partitions of topic t.
func classicAssignment(t *testing.T, r *kmsg.SyncGroupResponse) []int32 {
	t.Helper()
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(r.MemberAssignment); err != nil {
		t.Fatalf("assignment: %v", err)
	}
	var out []int32
	for _, tp := range a.Topics {
		if tp.Topic == "t" {
			out = append(out, tp.Partitions...)
		}
	}
	slices.Sort(out)
	return out
}

// classicRejoin runs a classic member through JoinGroup and SyncGroup in
// a consumer group, which answers both at once, and returns what it got.
func classicRejoin(t *testing.T, cl *consumer) []int32 {
	t.Helper()
	cl.joined(cl.joinFully())
	r := response[*kmsg.SyncGroupResponse](cl.h, cl.sync(nil))
	wantCode(t, cl.clientID+" SyncGroup", r.ErrorCode, errNone)
	return classicAssignment(t, r)
}

// TestMigrationUpgradeAndDowngrade: a classic group with two members
// becomes a consumer group when a member of the consumer protocol joins;
// the classic members keep their partitions, are told to rejoin, and get
// their share through JoinGroup and SyncGroup; every partition ends with
// one owner. The state replays. When the consumer-protocol member leaves,
// the group is classic again, at generation = group epoch, rebalancing.
func TestMigrationUpgradeAndDowngrade(t *testing.T) {
	h := cgHarness(t)
	c1, c2 := h.consumer("g", "c1", "t"), h.consumer("g", "c2", "t")
	h.stabilize(c1, c2)
	gen := c1.generation
	wantCode(t, "c1 offsets commit in the classic group", c1.commit(8, "t", 10, 20, 30).Topics[0].Partitions[0].ErrorCode, errNone)

	n := h.cgMember("g", "member-n", "t")
	mustBeat(t, n)
	g := h.c.groups["g"]
	if g.consumer == nil {
		t.Fatal("the classic group was not upgraded")
	}
	cg := g.consumer
	if len(cg.members) != 3 {
		t.Fatalf("%d members after the upgrade, want 3", len(cg.members))
	}
	for _, cl := range []*consumer{c1, c2} {
		m := cg.members[cl.memberID]
		if m == nil || m.classic == nil || m.classic.sessionTimeoutMs != cl.sessionMs || len(m.classic.protocols) != 1 {
			t.Fatalf("classic member %s after the upgrade: %+v", cl.clientID, m)
		}
	}
	if cg.epoch <= gen {
		t.Fatalf("group epoch %d after the upgrade and a join, want above generation %d", cg.epoch, gen)
	}
	if o := g.offsets["t"][0]; o == nil || o.offset != 10 {
		t.Fatalf("offset after the upgrade: %+v", o)
	}

	// The classic members' sessions go on; they must rejoin.
	wantCode(t, "c1 heartbeat after the upgrade", c1.heartbeat(), errRebalanceInProgress)
	wantCode(t, "c1 heartbeat at a wrong generation", func() int16 { cl := *c1; cl.generation = 99; return cl.heartbeat() }(), errIllegalGeneration)
	wantCode(t, "a classic commit at its generation", c2.commit(8, "t", 11).Topics[0].Partitions[0].ErrorCode, errNone)

	// Rounds of heartbeats and rejoins until the group is stable.
	got := map[*consumer][]int32{}
	for range 10 {
		mustBeat(t, n)
		for _, cl := range []*consumer{c1, c2} {
			if _, ok := got[cl]; !ok || cl.heartbeat() == errRebalanceInProgress {
				got[cl] = classicRejoin(t, cl)
			}
		}
		if cgState(h, "g") == "Stable" {
			break
		}
	}
	if s := cgState(h, "g"); s != "Stable" {
		t.Fatalf("group state %s after 10 rounds", s)
	}
	mustBeat(t, n)
	seen := map[int32]string{}
	for who, ps := range map[string][]int32{"c1": got[c1], "c2": got[c2], "n": n.partitions()} {
		if len(ps) != 2 {
			t.Fatalf("%s owns %v, want 2 of 6 partitions", who, ps)
		}
		for _, p := range ps {
			if other, dup := seen[p]; dup {
				t.Fatalf("partition %d owned by %s and %s", p, other, who)
			}
			seen[p] = who
		}
	}
	wantCode(t, "c1 heartbeat when stable", c1.heartbeat(), errNone)
	wantCode(t, "c1 commit at its generation", c1.commit(8, "t", 12).Topics[0].Partitions[0].ErrorCode, errNone)
	old := *c1
	old.generation--
	wantCode(t, "commit at a generation before the member epoch", old.commit(8, "t", 12).Topics[0].Partitions[0].ErrorCode, errIllegalGeneration)

	// The mixed group replays with its classic members.
	c, err := New(h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range h.records {
		if err := c.Replay(r.Key, r.Value); err != nil {
			t.Fatalf("replay: %v", err)
		}
	}
	loaded := c.groups["g"]
	if loaded == nil || loaded.consumer == nil || len(loaded.consumer.members) != 3 || loaded.offsets["t"][2] == nil || loaded.offsets["t"][2].offset != 30 {
		t.Fatalf("replayed group: %+v", loaded)
	}
	for id, m := range cg.members {
		lm := loaded.consumer.members[id]
		if lm == nil || !sameClassicMeta(m.classic, lm.classic) || lm.epoch != m.epoch || !lm.assigned.equal(m.assigned) {
			t.Fatalf("member %s replayed as %+v, live %+v", id, lm, m)
		}
	}

	// The last member of the consumer protocol leaves: classic again.
	epoch := cg.epoch
	leave := n.request()
	leave.MemberEpoch = leaveMemberEpoch
	if r := n.send(leave); r.ErrorCode != 0 {
		t.Fatalf("leave: %d", r.ErrorCode)
	}
	if g.consumer != nil {
		t.Fatal("the group was not downgraded")
	}
	if g.state != StatePreparingRebalance || g.generation != epoch || len(g.members) != 2 || g.protocol != "range" {
		t.Fatalf("downgraded group: state %v generation %d (want %d) members %d protocol %q", g.state, g.generation, epoch, len(g.members), g.protocol)
	}
	wantCode(t, "c1 heartbeat after the downgrade", c1.heartbeat(), errRebalanceInProgress)
	h.stabilize(c1, c2)
	h.wantState("g", "Stable")
	if o := g.offsets["t"][0]; o == nil || o.offset != 12 {
		t.Fatalf("offset after the downgrade: %+v", o)
	}

	// The whole history replays to the classic group with its offsets.
	c, err = New(h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range h.records {
		if err := c.Replay(r.Key, r.Value); err != nil {
			t.Fatalf("replay: %v", err)
		}
	}
	loaded = c.groups["g"]
	if loaded == nil || loaded.consumer != nil || len(loaded.members) != 2 || loaded.generation != g.generation ||
		loaded.offsets["t"][0] == nil || loaded.offsets["t"][0].offset != 12 || loaded.offsets["t"][2] == nil {
		t.Fatalf("replayed after the downgrade: %+v", loaded)
	}
}

// TestMigrationPolicy: with upgrades disabled a consumer heartbeat to a
// classic group with members is refused; with downgrades disabled the
// group stays a consumer group of classic members.
func TestMigrationPolicy(t *testing.T) {
	cfg := testConfig()
	cfg.Topics = fakeTopics{"t": {id: cgTopic, partitions: 6}}
	cfg.MigrationPolicy = MigrationDowngrade
	h := newHarness(t, cfg)
	h.stabilize(h.consumer("g", "c1", "t"))
	if r := h.cgMember("g", "member-n", "t").beat(); r.ErrorCode != errGroupIDNotFound {
		t.Fatalf("heartbeat to a classic group, upgrades disabled: %d, want GROUP_ID_NOT_FOUND", r.ErrorCode)
	}

	cfg.MigrationPolicy = MigrationUpgrade
	h = newHarness(t, cfg)
	c1 := h.consumer("g", "c1", "t")
	h.stabilize(c1)
	n := h.cgMember("g", "member-n", "t")
	mustBeat(t, n)
	leave := n.request()
	leave.MemberEpoch = leaveMemberEpoch
	n.send(leave)
	if g := h.c.groups["g"]; g.consumer == nil || len(g.consumer.members) != 1 {
		t.Fatalf("downgrades disabled: the group should stay a consumer group of c1")
	}
	if got := classicRejoin(t, c1); len(got) != 6 {
		t.Fatalf("c1 alone in the consumer group got %v, want all 6", got)
	}
}

// TestClassicMetaRoundTrip: the classic member metadata encodes as the
// tagged field holds it and decodes back; bad bytes are refused.
func TestClassicMetaRoundTrip(t *testing.T) {
	m := &classicMeta{sessionTimeoutMs: 45000, protocols: []kmsg.JoinGroupRequestProtocol{
		{Name: "range", Metadata: subscription("t")}, {Name: "cooperative-sticky", Metadata: []byte{}}}}
	back, err := decodeClassicMeta(m.encode())
	if err != nil || !sameClassicMeta(m, back) {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	b := m.encode()
	for i := range len(b) {
		if _, err := decodeClassicMeta(b[:i]); err == nil {
			t.Fatalf("%d of %d bytes decoded", i, len(b))
		}
	}
}
