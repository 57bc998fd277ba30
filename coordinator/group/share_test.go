package group

import (
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// shMember is a share group member as a client runs it.
type shMember struct {
	h      *harness
	group  string
	id     string
	epoch  int32
	topics []string
	owned  partitionSet
}

func (h *harness) shMember(group, id string, topics ...string) *shMember {
	return &shMember{h: h, group: group, id: id, topics: topics, owned: partitionSet{}}
}

func (m *shMember) beat() *kmsg.ShareGroupHeartbeatResponse {
	m.h.t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.SetVersion(1)
	req.GroupID, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	if m.epoch == 0 {
		req.SubscribedTopicNames = m.topics
	}
	resp := response[*kmsg.ShareGroupHeartbeatResponse](m.h, m.h.send("client-"+m.id, req))
	if resp.ErrorCode != 0 {
		return resp
	}
	m.epoch = resp.MemberEpoch
	if resp.Assignment != nil {
		m.owned = partitionSet{}
		for _, t := range resp.Assignment.TopicPartitions {
			for _, p := range t.Partitions {
				m.owned.add(t.TopicID, p)
			}
		}
	}
	return resp
}

func (m *shMember) mustBeat() {
	m.h.t.Helper()
	if r := m.beat(); r.ErrorCode != 0 {
		m.h.t.Fatalf("member %s heartbeat: error %d %v", m.id, r.ErrorCode, r.ErrorMessage)
	}
}

func (m *shMember) count() int {
	n := 0
	for _, ps := range m.owned {
		n += len(ps)
	}
	return n
}

func (m *shMember) leave() *kmsg.ShareGroupHeartbeatResponse {
	m.epoch = leaveMemberEpoch
	return m.beat()
}

// Three members on a one-partition topic all get that partition: share
// groups share partitions.
func TestShareGroupMembersSharePartition(t *testing.T) {
	h := cgHarness(t)
	h.c.cfg.Topics = fakeTopics{"one": {id: [16]byte{0x51}, partitions: 1}}
	ms := []*shMember{h.shMember("sg", "a", "one"), h.shMember("sg", "b", "one"), h.shMember("sg", "c", "one")}
	for _, m := range ms {
		m.mustBeat()
	}
	for _, m := range ms {
		m.mustBeat()
		if !m.owned.has([16]byte{0x51}, 0) || m.count() != 1 {
			t.Fatalf("member %s owns %v, want partition 0 of the topic", m.id, m.owned)
		}
		if m.epoch != 3 {
			t.Fatalf("member %s at epoch %d, want the group's 3", m.id, m.epoch)
		}
	}
	// The group is listed as a share group and described.
	lg := response[*kmsg.ListGroupsResponse](h, h.send("admin", func() kmsg.Request {
		r := kmsg.NewPtrListGroupsRequest()
		r.SetVersion(5)
		r.TypesFilter = []string{"share"}
		return r
	}()))
	if len(lg.Groups) != 1 || lg.Groups[0].Group != "sg" || lg.Groups[0].GroupType != "share" || lg.Groups[0].GroupState != "Stable" {
		t.Fatalf("ListGroups(share): %+v", lg.Groups)
	}
	dr := kmsg.NewPtrShareGroupDescribeRequest()
	dr.SetVersion(1)
	dr.GroupIDs = []string{"sg", "nope"}
	d := response[*kmsg.ShareGroupDescribeResponse](h, h.send("admin", dr))
	if len(d.Groups) != 2 || d.Groups[0].ErrorCode != 0 || len(d.Groups[0].Members) != 3 || d.Groups[0].Assignor != "simple" ||
		d.Groups[0].GroupEpoch != 3 || d.Groups[1].ErrorCode != errGroupIDNotFound {
		t.Fatalf("ShareGroupDescribe: %+v", d.Groups)
	}
	if got := d.Groups[0].Members[0].Assignment.TopicPartitions; len(got) != 1 || got[0].Topic != "one" {
		t.Fatalf("described assignment %+v, want topic one", got)
	}
}

// With more partitions than members each partition has one member, spread
// evenly, and a leave hands its partitions to the others.
func TestShareGroupSpreadsPartitions(t *testing.T) {
	h := cgHarness(t) // t: 6 partitions
	a, b := h.shMember("sg", "a", "t"), h.shMember("sg", "b", "t")
	a.mustBeat()
	b.mustBeat()
	a.mustBeat()
	if a.count() != 3 || b.count() != 3 {
		t.Fatalf("a owns %v, b owns %v: want 3 each", a.owned, b.owned)
	}
	for p := range int32(6) {
		if a.owned.has(cgTopic, p) == b.owned.has(cgTopic, p) {
			t.Fatalf("partition %d: a %v, b %v; want exactly one owner", p, a.owned.has(cgTopic, p), b.owned.has(cgTopic, p))
		}
	}
	before := a.owned
	if r := b.leave(); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", r)
	}
	a.mustBeat()
	if a.count() != 6 {
		t.Fatalf("after b left a owns %v, want all 6", a.owned)
	}
	for tp, ps := range before {
		for p := range ps {
			if !a.owned.has(tp, p) {
				t.Fatalf("a lost partition %d it had", p)
			}
		}
	}
}

func TestShareGroupErrors(t *testing.T) {
	h := cgHarness(t)
	a := h.shMember("sg", "a", "t")
	a.mustBeat()
	stale := *a
	a.mustBeat()
	h.shMember("sg", "b", "t").mustBeat() // epoch moves on
	stale.epoch = a.epoch + 5
	wantCode(t, "heartbeat with a wrong epoch", stale.beat().ErrorCode, errFencedMemberEpoch)
	unknown := h.shMember("sg", "zz", "t")
	unknown.epoch = 3
	wantCode(t, "unknown member", unknown.beat().ErrorCode, errUnknownMemberID)
	wantCode(t, "join without topics", h.shMember("sg", "c").beat().ErrorCode, errInvalidRequest)
	wantCode(t, "no member id", h.shMember("sg", "", "t").beat().ErrorCode, errInvalidRequest)

	// A classic group's id is not a share group's, and the other way round.
	h.consumer("classic", "cl", "t").joinFully()
	wantCode(t, "share join on a classic group", h.shMember("classic", "x", "t").beat().ErrorCode, errGroupIDNotFound)
	j := h.consumer("sg", "cl2", "t")
	resp := response[*kmsg.JoinGroupResponse](h, j.join())
	wantCode(t, "classic join on a share group", resp.ErrorCode, errInconsistentGroupProtocol)

	// A group with members cannot be deleted; an empty one can.
	del := func() int16 {
		r := kmsg.NewPtrDeleteGroupsRequest()
		r.SetVersion(2)
		r.Groups = []string{"sg"}
		return response[*kmsg.DeleteGroupsResponse](h, h.send("admin", r)).Groups[0].ErrorCode
	}
	wantCode(t, "delete with members", del(), errNonEmptyGroup)
	h.advance(46 * time.Second) // every session expires
	wantCode(t, "delete when empty", del(), 0)
	if h.c.shares["sg"] != nil {
		t.Fatal("the share group is still there after DeleteGroups")
	}
}

// A reloaded coordinator knows the group and its epoch; members rejoin.
func TestShareGroupReplay(t *testing.T) {
	h := cgHarness(t)
	a, b := h.shMember("sg", "a", "t"), h.shMember("sg", "b", "t")
	a.mustBeat()
	b.mustBeat()
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
	live, loaded := h.c.shares["sg"], c.shares["sg"]
	if loaded == nil || loaded.epoch != live.epoch || !maps.Equal(loaded.consumed, live.consumed) || len(live.consumed) != 1 {
		t.Fatalf("loaded share group %+v, want epoch %d and consumed %v", loaded, live.epoch, live.consumed)
	}
	if topics, members, ok := c.ShareGroup("sg"); !ok || members != 0 || topics["t"] != cgTopic {
		t.Fatalf("ShareGroup after load: %v %d %v", topics, members, ok)
	}
	h.c = c
	wantCode(t, "heartbeat after the move", a.beat().ErrorCode, errUnknownMemberID)
	a.epoch = 0
	a.mustBeat()
	if a.epoch <= live.epoch {
		t.Fatalf("rejoined at epoch %d, not past the old %d", a.epoch, live.epoch)
	}
}

// The simple assignor over random groups: every partition of a subscribed
// topic has a member, each member has something when there are enough
// partitions, and loads differ by at most one.
func TestAssignShareBalance(t *testing.T) {
	for members := 1; members <= 9; members++ {
		for parts := int32(1); parts <= 7; parts++ {
			sg := newShareGroup("g")
			sg.subscription = map[string]subscribedTopic{"t": {id: cgTopic, partitions: parts}}
			for i := range members {
				id := string(rune('a' + i))
				sg.members[id] = &shareMember{id: id, topics: []string{"t"}, assigned: partitionSet{}}
			}
			out := assignShare(sg)
			holders := map[int32]int{}
			minN, maxN := 1<<30, 0
			for _, s := range out {
				n := len(s[cgTopic])
				minN, maxN = min(minN, n), max(maxN, n)
				for p := range s[cgTopic] {
					holders[p]++
				}
			}
			if int32(len(holders)) != parts || maxN-minN > 1 || minN == 0 {
				t.Fatalf("%d members, %d partitions: %v", members, parts, out)
			}
			// Reassigning from the result changes nothing.
			for id, s := range out {
				sg.members[id].assigned = s
			}
			again := assignShare(sg)
			for id := range out {
				if !again[id].equal(out[id]) {
					t.Fatalf("%d members, %d partitions: not sticky: %v then %v", members, parts, out, again)
				}
			}
		}
	}
}
