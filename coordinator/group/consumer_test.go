package group

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var cgTopic = [16]byte{0xc0, 1}

// cgHarness is a harness whose coordinator knows topic "t" (6 partitions)
// and "u" (2).
func cgHarness(t *testing.T) *harness {
	cfg := testConfig()
	cfg.Topics = fakeTopics{"t": {id: cgTopic, partitions: 6}, "u": {id: [16]byte{0xc0, 2}, partitions: 2}}
	return newHarness(t, cfg)
}

// cgMember is a KIP-848 consumer as a client runs it: it heartbeats with
// its epoch and reports what it owns, which is what the coordinator last
// assigned it (it revokes at once).
type cgMember struct {
	h        *harness
	group    string
	id       string
	epoch    int32
	topics   []string
	instance *string
	owned    partitionSet
}

func (h *harness) cgMember(group, id string, topics ...string) *cgMember {
	return &cgMember{h: h, group: group, id: id, topics: topics, owned: partitionSet{}}
}

// request is the member's next heartbeat: full when joining.
func (m *cgMember) request() *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.SetVersion(1)
	req.Group, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	req.InstanceID = m.instance
	req.RebalanceTimeoutMillis = -1
	if m.epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		req.SubscribedTopicNames = m.topics
	}
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, t := range sortedKeys(m.owned) {
		req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: t, Partitions: slices.Sorted(maps.Keys(m.owned[t]))})
	}
	if m.epoch == 0 {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	return req
}

// beat sends a heartbeat and applies the answer; it returns the answer.
func (m *cgMember) beat() *kmsg.ConsumerGroupHeartbeatResponse {
	m.h.t.Helper()
	return m.send(m.request())
}

func (m *cgMember) send(req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	m.h.t.Helper()
	resp := response[*kmsg.ConsumerGroupHeartbeatResponse](m.h, m.h.send("client-"+m.id, req))
	if resp.ErrorCode != 0 {
		return resp
	}
	if resp.MemberID != nil {
		m.id = *resp.MemberID
	}
	m.epoch = resp.MemberEpoch
	if resp.Assignment != nil {
		m.owned = partitionSet{}
		for _, t := range resp.Assignment.Topics {
			for _, p := range t.Partitions {
				m.owned.add(t.TopicID, p)
			}
		}
	}
	return resp
}

// partitions lists what the member owns of topic t.
func (m *cgMember) partitions() []int32 { return slices.Sorted(maps.Keys(m.owned[cgTopic])) }

func mustBeat(t *testing.T, m *cgMember) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	resp := m.beat()
	if resp.ErrorCode != 0 {
		t.Fatalf("heartbeat of %s: error %d %v", m.id, resp.ErrorCode, resp.ErrorMessage)
	}
	return resp
}

func cgState(h *harness, group string) string {
	g := h.c.groups[group]
	if g == nil || g.consumer == nil {
		return "none"
	}
	return g.consumer.state().String()
}

// settle lets the members heartbeat in turn until the group is stable.
func settle(t *testing.T, h *harness, ms ...*cgMember) {
	t.Helper()
	for range 10 {
		for _, m := range ms {
			mustBeat(t, m)
		}
		if cgState(h, ms[0].group) == "Stable" {
			return
		}
	}
	t.Fatalf("group %s not stable after 10 rounds: %s", ms[0].group, cgState(h, ms[0].group))
}

// checkDisjoint fails when two members own the same partition, or some
// partition of t is owned by nobody in a stable group.
func checkDisjoint(t *testing.T, ms ...*cgMember) {
	t.Helper()
	seen := map[int32]string{}
	for _, m := range ms {
		for _, p := range m.partitions() {
			if other, dup := seen[p]; dup {
				t.Fatalf("partition %d owned by %s and %s", p, other, m.id)
			}
			seen[p] = m.id
		}
	}
	if len(seen) != 6 {
		t.Fatalf("%d of 6 partitions owned: %v", len(seen), seen)
	}
}

// TestConsumerGroupJoinShareLeave: the first member gets every
// partition; a second one gets half once the first has revoked them;
// when it leaves, the first gets them all back.
func TestConsumerGroupJoinShareLeave(t *testing.T) {
	h := cgHarness(t)
	a, b := h.cgMember("g", "member-a", "t"), h.cgMember("g", "member-b", "t")

	resp := mustBeat(t, a)
	if a.epoch != 1 || len(a.partitions()) != 6 || resp.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("first member: epoch %d, partitions %v, interval %d", a.epoch, a.partitions(), resp.HeartbeatIntervalMillis)
	}
	if s := cgState(h, "g"); s != "Stable" {
		t.Fatalf("state %s after the first member", s)
	}

	mustBeat(t, b)
	if b.epoch != 2 || len(b.partitions()) != 0 {
		t.Fatalf("second member before the first revoked: epoch %d, partitions %v", b.epoch, b.partitions())
	}
	if s := cgState(h, "g"); s != "Reconciling" {
		t.Fatalf("state %s while the first member must revoke", s)
	}
	// The first member is told to give up three partitions at its epoch.
	mustBeat(t, a)
	if a.epoch != 1 || len(a.partitions()) != 3 {
		t.Fatalf("first member asked to revoke: epoch %d, partitions %v", a.epoch, a.partitions())
	}
	settle(t, h, a, b)
	checkDisjoint(t, a, b)
	if a.epoch != 2 || b.epoch != 2 || len(a.partitions()) != 3 || len(b.partitions()) != 3 {
		t.Fatalf("stable: a epoch %d %v, b epoch %d %v", a.epoch, a.partitions(), b.epoch, b.partitions())
	}

	// b leaves: the group epoch moves on and a gets everything.
	leave := b.request()
	leave.MemberEpoch = leaveMemberEpoch
	if r := b.send(leave); r.ErrorCode != 0 || r.MemberEpoch != leaveMemberEpoch {
		t.Fatalf("leave: %+v", r)
	}
	settle(t, h, a)
	if a.epoch != 3 || len(a.partitions()) != 6 {
		t.Fatalf("after the leave: epoch %d, partitions %v", a.epoch, a.partitions())
	}
}

// TestConsumerGroupFencing: heartbeats with an epoch the coordinator does
// not know, or from unknown members, are refused.
func TestConsumerGroupFencing(t *testing.T) {
	h := cgHarness(t)
	a := h.cgMember("g", "member-a", "t")
	mustBeat(t, a)
	req := a.request()
	req.MemberEpoch = a.epoch + 1
	wantCode(t, "epoch ahead", a.send(req).ErrorCode, errFencedMemberEpoch)
	b := h.cgMember("g", "member-b", "t")
	settle(t, h, a, b)
	// The previous epoch is accepted when what the member owns is within
	// its assignment (its answer with the new epoch was lost), else not.
	req = a.request()
	req.MemberEpoch = a.epoch - 1
	if r := a.send(req); r.ErrorCode != 0 {
		t.Fatalf("previous epoch owning a subset: %d", r.ErrorCode)
	}
	req = a.request()
	req.MemberEpoch = a.epoch - 1
	req.Topics = ownedRequest(cgTopic, 0, 1, 2, 3, 4, 5)
	wantCode(t, "previous epoch owning more", a.send(req).ErrorCode, errFencedMemberEpoch)
	unknown := h.cgMember("g", "nobody", "t")
	unknown.epoch = 1
	wantCode(t, "unknown member", unknown.beat().ErrorCode, errUnknownMemberID)
	other := h.cgMember("other-group", "x", "t")
	other.epoch = 3
	wantCode(t, "unknown group", other.beat().ErrorCode, errGroupIDNotFound)

	for what, mutate := range map[string]func(*kmsg.ConsumerGroupHeartbeatRequest){
		"no group":              func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "" },
		"no member id (v1)":     func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" },
		"join without timeout":  func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 },
		"join owning":           func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Topics = ownedRequest(cgTopic, 0) },
		"join subscribing none": func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = nil },
		"bad epoch":             func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -3 },
	} {
		req := h.cgMember("g2", "m", "t").request()
		mutate(req)
		wantCode(t, what, h.cgMember("g2", "m", "t").send(req).ErrorCode, errInvalidRequest)
	}
	req = h.cgMember("g2", "m", "t").request()
	req.ServerAssignor = kmsg.StringPtr("sticky")
	wantCode(t, "unknown assignor", h.cgMember("g2", "m", "t").send(req).ErrorCode, errUnsupportedAssignor)
	req = h.cgMember("g2", "m", "t").request()
	req.SubscribedTopicRegex = kmsg.StringPtr("t(")
	wantCode(t, "bad regex", h.cgMember("g2", "m", "t").send(req).ErrorCode, errInvalidRegularExpression)
}

func ownedRequest(topic [16]byte, ps ...int32) []kmsg.ConsumerGroupHeartbeatRequestTopic {
	return []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: topic, Partitions: ps}}
}

// TestConsumerGroupSessionAndRebalanceTimeouts: a member that stops
// heartbeating is fenced after the session timeout; one that does not
// revoke within its rebalance timeout is fenced too.
func TestConsumerGroupSessionAndRebalanceTimeouts(t *testing.T) {
	h := cgHarness(t)
	a, b := h.cgMember("g", "member-a", "t"), h.cgMember("g", "member-b", "t")
	settle(t, h, a)
	mustBeat(t, b)
	// a never revokes (its heartbeats keep reporting all six partitions).
	req := a.request()
	h.advance(20 * time.Second)
	mustBeat(t, b)
	a.send(req)
	h.advance(20 * time.Second)
	mustBeat(t, b)
	a.send(req)
	if _, in := h.c.groups["g"].consumer.members[a.id]; !in {
		t.Fatal("a fenced before its rebalance timeout")
	}
	h.advance(11 * time.Second) // past a's 30 s rebalance timeout
	if _, in := h.c.groups["g"].consumer.members[a.id]; in {
		t.Fatal("a not fenced after its rebalance timeout")
	}
	wantCode(t, "heartbeat of the fenced member", a.send(req).ErrorCode, errUnknownMemberID)
	settle(t, h, b)
	if len(b.partitions()) != 6 {
		t.Fatalf("b after a was fenced: %v", b.partitions())
	}
	h.advance(46 * time.Second)
	if s := cgState(h, "g"); s != "Empty" {
		t.Fatalf("after b's session timed out: %s", s)
	}
}

// TestConsumerGroupReplay: a coordinator loaded from the records the live
// one wrote holds the same group.
func TestConsumerGroupReplay(t *testing.T) {
	h := cgHarness(t)
	a, b := h.cgMember("g", "member-a", "t"), h.cgMember("g", "member-b", "t", "u")
	settle(t, h, a, b)
	mustBeat(t, b) // b mid-way through nothing: stable
	c, err := New(h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range h.records {
		if err := c.Replay(r.Key, r.Value); err != nil {
			t.Fatalf("replay: %v", err)
		}
	}
	c.Loaded(h.now)
	live, loaded := h.c.groups["g"].consumer, c.groups["g"].consumer
	if loaded == nil {
		t.Fatal("the consumer group was not replayed")
	}
	if live.epoch != loaded.epoch || live.assignmentEpoch != loaded.assignmentEpoch || !maps.Equal(live.subscription, loaded.subscription) {
		t.Fatalf("group: live epoch %d/%d %v, loaded %d/%d %v", live.epoch, live.assignmentEpoch, live.subscription,
			loaded.epoch, loaded.assignmentEpoch, loaded.subscription)
	}
	for _, id := range live.sortedMemberIDs() {
		lm, rm := live.members[id], loaded.members[id]
		if rm == nil || fmt.Sprint(lm.topics) != fmt.Sprint(rm.topics) || lm.epoch != rm.epoch || lm.previousEpoch != rm.previousEpoch ||
			lm.state != rm.state || !lm.assigned.equal(rm.assigned) || !lm.pendingRevocation.equal(rm.pendingRevocation) ||
			!live.target[id].equal(loaded.target[id]) || lm.clientID != rm.clientID || lm.rebalanceTimeoutMs != rm.rebalanceTimeoutMs {
			t.Fatalf("member %s: live %+v target %v, loaded %+v target %v", id, lm, live.target[id], rm, loaded.target[id])
		}
	}
	if len(live.members) != len(loaded.members) {
		t.Fatalf("%d members live, %d loaded", len(live.members), len(loaded.members))
	}
}

// TestConsumerGroupOffsets: OffsetCommit v9+ and OffsetFetch v9+ check the
// member and its epoch; an admin commit is refused while the group has
// members; classic requests are kept out.
func TestConsumerGroupOffsets(t *testing.T) {
	h := cgHarness(t)
	a := h.cgMember("g", "member-a", "t")
	settle(t, h, a)
	commit := func(version int16, member string, epoch int32) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.SetVersion(version)
		req.Group, req.MemberID, req.Generation = "g", member, epoch
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5, LeaderEpoch: -1}}}}
		return response[*kmsg.OffsetCommitResponse](h, h.send("c", req)).Topics[0].Partitions[0].ErrorCode
	}
	wantCode(t, "commit at the member's epoch", commit(9, a.id, a.epoch), errNone)
	wantCode(t, "commit at an old epoch", commit(9, a.id, a.epoch-1), errStaleMemberEpoch)
	wantCode(t, "commit by an unknown member", commit(9, "x", a.epoch), errUnknownMemberID)
	wantCode(t, "commit without a member while the group has one", commit(9, "", -1), errUnknownMemberID)
	wantCode(t, "commit below v9", commit(8, a.id, a.epoch), errUnsupportedVersion)

	fetch := func(member *string, epoch int32) int16 {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.SetVersion(9)
		req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g", MemberID: member, MemberEpoch: epoch}}
		return response[*kmsg.OffsetFetchResponse](h, h.send("c", req)).Groups[0].ErrorCode
	}
	wantCode(t, "fetch by the member", fetch(&a.id, a.epoch), errNone)
	wantCode(t, "fetch at an old epoch", fetch(&a.id, a.epoch-1), errStaleMemberEpoch)
	wantCode(t, "fetch without a member", fetch(nil, -1), errNone)

	join := h.consumer("g", "classic", "t").joinRequest()
	join.ProtocolType = "connect"
	wantCode(t, "classic join of another protocol type", response[*kmsg.JoinGroupResponse](h, h.send("c", join)).ErrorCode, errInconsistentGroupProtocol)
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.SetVersion(6)
	dg.Groups = []string{"g"}
	wantCode(t, "DescribeGroups", response[*kmsg.DescribeGroupsResponse](h, h.send("c", dg)).Groups[0].ErrorCode, errGroupIDNotFound)

	lg := kmsg.NewPtrListGroupsRequest()
	lg.SetVersion(5)
	lg.TypesFilter = []string{"consumer"}
	groups := response[*kmsg.ListGroupsResponse](h, h.send("c", lg)).Groups
	if len(groups) != 1 || groups[0].GroupType != "consumer" || groups[0].GroupState != "Stable" || groups[0].ProtocolType != "consumer" {
		t.Fatalf("ListGroups of type consumer: %+v", groups)
	}
	lg.TypesFilter = []string{"classic"}
	if groups := response[*kmsg.ListGroupsResponse](h, h.send("c", lg)).Groups; len(groups) != 0 {
		t.Fatalf("ListGroups of type classic: %+v", groups)
	}

	cd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cd.Groups = []string{"g", "missing"}
	described := response[*kmsg.ConsumerGroupDescribeResponse](h, h.send("c", cd)).Groups
	if described[0].ErrorCode != 0 || described[0].State != "Stable" || len(described[0].Members) != 1 ||
		len(described[0].Members[0].Assignment.TopicPartitions) != 1 || described[0].Members[0].Assignment.TopicPartitions[0].Topic != "t" ||
		!slices.Equal(described[0].Members[0].Assignment.TopicPartitions[0].Partitions, []int32{0, 1, 2, 3, 4, 5}) {
		t.Fatalf("ConsumerGroupDescribe: %+v", described[0])
	}
	wantCode(t, "describe of a missing group", described[1].ErrorCode, errGroupIDNotFound)
}

// TestConsumerGroupStaticMember: a static member that leaves for now
// (epoch -2) keeps its partitions for its return under a new member id;
// another member with the same instance id is refused meanwhile.
func TestConsumerGroupStaticMember(t *testing.T) {
	h := cgHarness(t)
	a, b := h.cgMember("g", "member-a", "t"), h.cgMember("g", "member-b", "t")
	a.instance = kmsg.StringPtr("instance-a")
	settle(t, h, a, b)
	aParts := a.partitions()
	taken := h.cgMember("g", "member-c", "t")
	taken.instance = kmsg.StringPtr("instance-a")
	wantCode(t, "instance in use", taken.beat().ErrorCode, errUnreleasedInstanceID)

	leave := a.request()
	leave.MemberEpoch = staticLeaveMemberEpoch
	if r := a.send(leave); r.ErrorCode != 0 {
		t.Fatalf("static leave: %d", r.ErrorCode)
	}
	back := h.cgMember("g", "member-a2", "t")
	back.instance = kmsg.StringPtr("instance-a")
	mustBeat(t, back)
	settle(t, h, back, b)
	if !slices.Equal(back.partitions(), aParts) {
		t.Fatalf("returning static member got %v, had %v", back.partitions(), aParts)
	}
	if _, old := h.c.groups["g"].consumer.members["member-a"]; old {
		t.Fatal("the old member id is still in the group")
	}
}

// TestConsumerGroupTakesOverEmptyClassicGroup: a group of committed
// offsets only becomes a consumer group, offsets kept; an empty consumer
// group becomes classic again for a classic member.
func TestConsumerGroupTakesOverEmptyClassicGroup(t *testing.T) {
	h := cgHarness(t)
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(8)
	req.Group, req.Generation = "g", -1
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 1, Offset: 7, LeaderEpoch: -1}}}}
	wantCode(t, "simple commit", response[*kmsg.OffsetCommitResponse](h, h.send("c", req)).Topics[0].Partitions[0].ErrorCode, errNone)
	a := h.cgMember("g", "member-a", "t")
	settle(t, h, a)
	if o := h.c.groups["g"].offsets["t"][1]; o == nil || o.offset != 7 {
		t.Fatalf("offset after the takeover: %+v", o)
	}
	// And so does a coordinator that loads the log (the classic group's
	// tombstone is not the offsets').
	loaded, err := New(h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range h.records {
		if err := loaded.Replay(r.Key, r.Value); err != nil {
			t.Fatalf("replay: %v", err)
		}
	}
	if g := loaded.groups["g"]; g == nil || g.consumer == nil || g.offsets["t"][1] == nil || g.offsets["t"][1].offset != 7 {
		t.Fatalf("loaded group after the takeover: %+v", g)
	}
	leave := a.request()
	leave.MemberEpoch = leaveMemberEpoch
	a.send(leave)
	cl := h.consumer("g", "classic", "t")
	cl.joinFully()
	if g := h.c.groups["g"]; g.consumer != nil || g.offsets["t"][1].offset != 7 {
		t.Fatalf("classic member in an empty consumer group: consumer %v, offsets %v", g.consumer != nil, g.offsets)
	}
}

// TestConsumerGroupOverridesPerGroup: a group's own session timeout and
// heartbeat interval (Config.Overrides, its group configs) replace the
// defaults for it only; a zero field keeps the default.
func TestConsumerGroupOverridesPerGroup(t *testing.T) {
	cfg := testConfig()
	cfg.Topics = fakeTopics{"t": {id: cgTopic, partitions: 6}}
	cfg.Overrides = func(groupID string) Overrides {
		if groupID == "slow" {
			return Overrides{ConsumerSessionTimeout: 55 * time.Second, ConsumerHeartbeatInterval: 7 * time.Second}
		}
		return Overrides{ShareSessionTimeout: time.Minute}
	}
	h := newHarness(t, cfg)
	slow, plain := h.cgMember("slow", "member-a", "t"), h.cgMember("plain", "member-b", "t")
	if resp := mustBeat(t, slow); resp.HeartbeatIntervalMillis != 7000 {
		t.Fatalf("slow group: interval %d, want 7000", resp.HeartbeatIntervalMillis)
	}
	if resp := mustBeat(t, plain); resp.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("plain group: interval %d, want 5000", resp.HeartbeatIntervalMillis)
	}
	h.advance(50 * time.Second)
	// Past the default session (45 s) but within the slow group's (55 s).
	mustBeat(t, slow)
	if r := plain.beat(); r.ErrorCode == 0 {
		t.Fatalf("plain group member alive after 50 s without a heartbeat")
	}
}
