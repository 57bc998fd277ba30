package group

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestJoinOneMember(t *testing.T) {
	h := newHarness(t, testConfig())
	a := h.consumer("g", "client-a", "t")

	// First JoinGroup (v9): the member id is handed out, nothing else.
	tok := a.join()
	r := response[*kmsg.JoinGroupResponse](h, tok)
	wantCode(t, "first join", r.ErrorCode, errMemberIDRequired)
	if !strings.HasPrefix(r.MemberID, "client-a-") || len(r.MemberID) != len("client-a-")+36 {
		t.Fatalf("member id %q is not client id + \"-\" + uuid", r.MemberID)
	}
	if len(h.records) != 1 || h.records[0].Value == nil {
		t.Fatalf("a new group writes its empty metadata record, got %d records", len(h.records))
	}
	a.memberID = r.MemberID

	// Second JoinGroup: parked for the initial rebalance delay.
	tok = a.join()
	h.advance(2999 * time.Millisecond)
	if h.answered(tok) {
		t.Fatal("join answered before the initial rebalance delay")
	}
	h.wantState("g", "PreparingRebalance")
	h.advance(time.Millisecond)
	jr := a.joined(tok)
	if jr.Generation != 1 || jr.LeaderID != a.memberID || len(jr.Members) != 1 || *jr.Protocol != "range" || *jr.ProtocolType != "consumer" {
		t.Fatalf("join response: %+v", jr)
	}
	if !bytes.Equal(jr.Members[0].ProtocolMetadata, subscription("t")) {
		t.Fatal("leader did not get the member metadata")
	}
	h.wantState("g", "CompletingRebalance")

	n := len(h.records)
	st := a.sync(map[string][]byte{a.memberID: assignment("t", 0, 1)})
	sr := response[*kmsg.SyncGroupResponse](h, st)
	wantCode(t, "sync", sr.ErrorCode, errNone)
	if !bytes.Equal(sr.MemberAssignment, assignment("t", 0, 1)) || *sr.Protocol != "range" {
		t.Fatalf("sync response: %+v", sr)
	}
	if len(h.records) != n+1 {
		t.Fatalf("the leader's sync writes the group record; %d new records", len(h.records)-n)
	}
	d := h.describe("g")[0]
	if d.State != "Stable" || d.Protocol != "range" || len(d.Members) != 1 ||
		!bytes.Equal(d.Members[0].MemberAssignment, assignment("t", 0, 1)) ||
		d.Members[0].ClientID != "client-a" || d.Members[0].ClientHost != "/127.0.0.1" {
		t.Fatalf("describe: %+v", d)
	}
	wantCode(t, "heartbeat", a.heartbeat(), errNone)
}

func TestJoinThreeMembers(t *testing.T) {
	h := newHarness(t, testConfig())
	a := h.consumer("g", "a", "t")
	b := h.consumer("g", "b", "t")
	c := h.consumer("g", "c", "t")
	ta := a.joinFully()
	h.advance(time.Second)
	tb := b.joinFully()
	h.advance(time.Second)
	tc := c.joinFully()
	h.waitAnswered(ta, tb, tc)

	ra, rb, rc := a.joined(ta), b.joined(tb), c.joined(tc)
	if ra.LeaderID != a.memberID || rb.LeaderID != a.memberID || rc.LeaderID != a.memberID {
		t.Fatalf("the first member leads; leaders %q %q %q", ra.LeaderID, rb.LeaderID, rc.LeaderID)
	}
	if len(ra.Members) != 3 || len(rb.Members) != 0 || len(rc.Members) != 0 {
		t.Fatal("only the leader gets the member list")
	}
	for i, m := range []*consumer{a, b, c} {
		if ra.Members[i].MemberID != m.memberID {
			t.Fatalf("member list is not in join order: %+v", ra.Members)
		}
	}
	if ra.Generation != 1 || rb.Generation != 1 || rc.Generation != 1 {
		t.Fatal("all members are in generation 1")
	}

	// Followers sync first and wait for the leader.
	sb, sc := b.sync(nil), c.sync(nil)
	if h.answered(sb) || h.answered(sc) {
		t.Fatal("followers answered before the leader's SyncGroup")
	}
	sa := a.sync(map[string][]byte{
		a.memberID: assignment("t", 0),
		b.memberID: assignment("t", 1),
		// c is left out: it gets a valid empty consumer assignment.
	})
	for _, tc := range []struct {
		tok  int
		want []byte
	}{{sa, assignment("t", 0)}, {sb, assignment("t", 1)}, {sc, emptyConsumerAssignment}} {
		r := response[*kmsg.SyncGroupResponse](h, tc.tok)
		wantCode(t, "sync", r.ErrorCode, errNone)
		if !bytes.Equal(r.MemberAssignment, tc.want) {
			t.Fatalf("assignment %x, want %x", r.MemberAssignment, tc.want)
		}
	}
	if hex.EncodeToString(emptyConsumerAssignment) != "000000000000ffffffff" {
		t.Fatalf("empty consumer assignment %x", emptyConsumerAssignment)
	}
	var empty kmsg.ConsumerMemberAssignment
	if err := empty.ReadFrom(emptyConsumerAssignment); err != nil || len(empty.Topics) != 0 {
		t.Fatalf("the empty assignment must decode as one with no topics: %v", err)
	}
	h.wantState("g", "Stable")
}

func TestMemberIDRequired(t *testing.T) {
	h := newHarness(t, testConfig())
	a := h.consumer("g", "a", "t")
	tok := a.join()
	r := response[*kmsg.JoinGroupResponse](h, tok)
	wantCode(t, "join", r.ErrorCode, errMemberIDRequired)
	if r.Generation != -1 || r.LeaderID != "" {
		t.Fatalf("MEMBER_ID_REQUIRED carries only the id: %+v", r)
	}
	// The id is pending for one session timeout; unused, it lapses.
	h.advance(10 * time.Second)
	a.memberID = r.MemberID
	wantCode(t, "join with a lapsed id", response[*kmsg.JoinGroupResponse](h, a.join()).ErrorCode, errUnknownMemberID)

	// A JoinGroup v3 joins at once, without the dance.
	b := h.consumer("g2", "b", "t")
	b.version = 3
	tok = b.join()
	h.waitAnswered(tok)
	if r := b.joined(tok); r.Generation != 1 || r.LeaderID != b.memberID {
		t.Fatalf("v3 join: %+v", r)
	}

	// A second consumer joining an existing group gets MEMBER_ID_REQUIRED,
	// never UNKNOWN_MEMBER_ID.
	c := h.consumer("g2", "c", "t")
	r = response[*kmsg.JoinGroupResponse](h, c.join())
	wantCode(t, "second consumer", r.ErrorCode, errMemberIDRequired)
}

func TestRejoinDuringStableRebalances(t *testing.T) {
	h := newHarness(t, testConfig())
	a, b := h.consumer("g", "a", "t"), h.consumer("g", "b", "t")
	h.stabilize(a, b)
	gen := a.generation

	// A follower rejoining with the same metadata gets the current
	// generation back, without a rebalance.
	tb := b.join()
	if r := b.joined(tb); r.Generation != gen || len(r.Members) != 0 {
		t.Fatalf("unchanged follower rejoin: %+v", r)
	}
	h.wantState("g", "Stable")

	// A follower rejoining with new metadata starts a rebalance.
	b.topics = []string{"t", "u"}
	tb = b.join()
	h.wantState("g", "PreparingRebalance")
	wantCode(t, "heartbeat during rebalance", a.heartbeat(), errRebalanceInProgress)
	ta := a.join()
	a.joined(ta)
	b.joined(tb)
	if a.generation != gen+1 {
		t.Fatalf("generation %d, want %d", a.generation, gen+1)
	}
	h.wantState("g", "CompletingRebalance")
}

func TestLeaderRejoinRebalances(t *testing.T) {
	h := newHarness(t, testConfig())
	a, b := h.consumer("g", "a", "t"), h.consumer("g", "b", "t")
	leader := h.stabilize(a, b)
	gen := leader.generation
	follower := b
	if leader == b {
		follower = a
	}
	tl := leader.join()
	h.wantState("g", "PreparingRebalance")
	tf := follower.join()
	leader.joined(tl)
	follower.joined(tf)
	if leader.generation != gen+1 {
		t.Fatal("the leader's rejoin must start a new generation")
	}
}

func TestSessionExpiry(t *testing.T) {
	h := newHarness(t, testConfig())
	a, b := h.consumer("g", "a", "t"), h.consumer("g", "b", "t")
	h.stabilize(a, b)
	gen := a.generation

	// a heartbeats every 3s; b goes silent.
	for i := 0; i < 3; i++ {
		h.advance(3 * time.Second)
		wantCode(t, "a heartbeat", a.heartbeat(), errNone)
	}
	h.advance(1500 * time.Millisecond) // b's 10s session ran out
	wantCode(t, "a heartbeat after b expired", a.heartbeat(), errRebalanceInProgress)
	ta := a.join()
	r := a.joined(ta) // b is gone: a alone completes the join at once
	if r.Generation != gen+1 || len(r.Members) != 1 {
		t.Fatalf("join after expiry: %+v", r)
	}
	wantCode(t, "expired member heartbeat", b.heartbeat(), errUnknownMemberID)
}

func TestRebalanceTimeoutRemovesMember(t *testing.T) {
	h := newHarness(t, testConfig())
	a, b := h.consumer("g", "a", "t"), h.consumer("g", "b", "t")
	a.rebalance, b.rebalance = 20_000, 20_000
	leader := h.stabilize(a, b)
	other := b
	if leader == b {
		other = a
	}
	tl := leader.join() // starts a rebalance; other keeps heartbeating but never rejoins
	for i := 0; i < 6; i++ {
		h.advance(3 * time.Second)
		wantCode(t, "heartbeat while not rejoining", other.heartbeat(), errRebalanceInProgress)
	}
	if h.answered(tl) {
		t.Fatal("join completed before the rebalance timeout")
	}
	h.advance(2 * time.Second) // 20s after the rebalance started
	r := leader.joined(tl)
	if len(r.Members) != 1 || r.Members[0].MemberID != leader.memberID {
		t.Fatalf("the member that did not rejoin must be removed: %+v", r.Members)
	}
	wantCode(t, "removed member heartbeat", other.heartbeat(), errUnknownMemberID)
}

func TestInitialRebalanceDelay(t *testing.T) {
	t.Run("extended while members join", func(t *testing.T) {
		h := newHarness(t, testConfig())
		a, b := h.consumer("g", "a", "t"), h.consumer("g", "b", "t")
		ta := a.joinFully()
		h.advance(2 * time.Second)
		tb := b.joinFully() // joins during the delay: it starts over at 3s
		h.advance(time.Second)
		if h.answered(ta) {
			t.Fatal("completed at 3s although a member joined during the delay")
		}
		h.advance(2999 * time.Millisecond)
		if h.answered(ta) {
			t.Fatal("completed before 6s")
		}
		h.advance(time.Millisecond)
		if !h.answered(ta) || !h.answered(tb) {
			t.Fatal("not completed at 6s")
		}
	})
	t.Run("bounded by the rebalance timeout", func(t *testing.T) {
		h := newHarness(t, testConfig())
		var tokens []int
		for i := 0; i < 8; i++ {
			m := h.consumer("g", string(rune('a'+i)), "t")
			m.rebalance = 5000
			tokens = append(tokens, m.joinFully())
			h.advance(time.Second - time.Millisecond)
			if h.answered(tokens[0]) {
				if elapsed := h.now.Sub(t0); elapsed < 5*time.Second || elapsed > 5*time.Second+time.Second {
					t.Fatalf("initial rebalance completed after %v, want 5s", elapsed)
				}
				return
			}
		}
		t.Fatal("members kept the initial rebalance open past its rebalance timeout")
	})
	t.Run("not before the delay even when all joined", func(t *testing.T) {
		h := newHarness(t, testConfig())
		a := h.consumer("g", "a", "t")
		ta := a.joinFully()
		h.advance(time.Second)
		if h.answered(ta) {
			t.Fatal("the initial rebalance completed before its delay")
		}
	})
}

func TestStaticMemberRestart(t *testing.T) {
	h := newHarness(t, testConfig())
	a := h.consumer("g", "a", "t").static("instance-a")
	b := h.consumer("g", "b", "t").static("instance-b")
	c := h.consumer("g", "c", "t").static("instance-c")
	leader := h.stabilize(a, b, c)
	if leader != a {
		t.Fatal("a joined first and leads")
	}
	gen := b.generation
	oldB := b.memberID
	d := h.describe("g")[0]
	var oldAssignment []byte
	for _, m := range d.Members {
		if m.MemberID == oldB {
			oldAssignment = m.MemberAssignment
		}
	}

	// b restarts within its session: a JoinGroup with its instance id and
	// no member id.
	h.advance(2 * time.Second)
	restarted := h.consumer("g", "b", "t").static("instance-b")
	n := len(h.records)
	tok := restarted.join()
	r := restarted.joined(tok)
	if r.MemberID == oldB || r.Generation != gen || r.LeaderID != a.memberID || len(r.Members) != 0 || r.SkipAssignment {
		t.Fatalf("restarted static member: %+v", r)
	}
	if len(h.records) != n+1 {
		t.Fatal("the new member id must be written to the log")
	}
	h.wantState("g", "Stable")
	sr := response[*kmsg.SyncGroupResponse](h, restarted.sync(nil))
	wantCode(t, "sync after restart", sr.ErrorCode, errNone)
	if !bytes.Equal(sr.MemberAssignment, oldAssignment) {
		t.Fatal("the restarted member must get its old assignment")
	}
	// The others see no rebalance; the old member id is fenced.
	wantCode(t, "a heartbeat", a.heartbeat(), errNone)
	wantCode(t, "c heartbeat", c.heartbeat(), errNone)
	wantCode(t, "old b heartbeat", b.heartbeat(), errFencedInstanceID)
	if a.generation != gen {
		t.Fatal("generation changed")
	}

	// A restarted leader on JoinGroup v9 learns it leads and skips the
	// assignment; on v5 it is told the old leader id and acts as follower.
	la := h.consumer("g", "a", "t").static("instance-a")
	r = la.joined(la.join())
	if r.LeaderID != la.memberID || !r.SkipAssignment || len(r.Members) != 3 {
		t.Fatalf("restarted leader v9: %+v", r)
	}
	lv5 := h.consumer("g", "a", "t").static("instance-a")
	lv5.version = 5
	r = lv5.joined(lv5.join())
	if r.LeaderID != la.memberID || r.LeaderID == lv5.memberID || len(r.Members) != 0 {
		t.Fatalf("restarted leader v5: %+v", r)
	}
	h.wantState("g", "Stable")

	// A static member restarting without any protocol the others support
	// is refused, as a new member would be.
	cc := h.consumer("g", "c", "t").static("instance-c")
	cc.protocols = []string{"roundrobin"}
	wantCode(t, "restart with no common protocol", response[*kmsg.JoinGroupResponse](h, cc.join()).ErrorCode, errInconsistentGroupProtocol)

	// A static member whose restart changes the selected protocol
	// triggers a rebalance instead.
	solo := h.consumer("solo", "s", "t").static("instance-s")
	h.stabilize(solo)
	again := h.consumer("solo", "s", "t").static("instance-s")
	again.protocols = []string{"roundrobin", "range"}
	tok = again.join() // it is the only member: the rebalance ends at once
	if r := again.joined(tok); *r.Protocol != "roundrobin" || r.Generation != solo.generation+1 {
		t.Fatalf("rebalanced join: %+v", r)
	}
}

func TestStaticMemberFencing(t *testing.T) {
	h := newHarness(t, testConfig())
	a := h.consumer("g", "a", "t").static("ia")
	h.stabilize(a)
	// A member id that does not belong to the instance id is fenced.
	imposter := h.consumer("g", "x", "t").static("ia")
	imposter.memberID, imposter.generation = "x-1", a.generation
	wantCode(t, "heartbeat", imposter.heartbeat(), errFencedInstanceID)
	wantCode(t, "join", response[*kmsg.JoinGroupResponse](h, imposter.join()).ErrorCode, errFencedInstanceID)
	// An unknown instance id with a member id is unknown.
	stranger := h.consumer("g", "y", "t").static("iy")
	stranger.memberID, stranger.generation = a.memberID, a.generation
	wantCode(t, "stranger heartbeat", stranger.heartbeat(), errUnknownMemberID)
}

func TestLeaveGroup(t *testing.T) {
	h := newHarness(t, testConfig())
	a, b := h.consumer("g", "a", "t"), h.consumer("g", "b", "t")
	c := h.consumer("g", "c", "t").static("ic")
	h.stabilize(a, b, c)

	// v3+: a batch by member id and by instance id, with one unknown.
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = 3
	req.Group = "g"
	req.Members = []kmsg.LeaveGroupRequestMember{
		{MemberID: b.memberID},
		{InstanceID: strPtr("ic")},
		{MemberID: "nobody"},
	}
	r := response[*kmsg.LeaveGroupResponse](h, h.send("admin", req))
	wantCode(t, "leave", r.ErrorCode, errNone)
	if len(r.Members) != 3 || r.Members[0].ErrorCode != errNone || r.Members[1].ErrorCode != errNone ||
		r.Members[2].ErrorCode != errUnknownMemberID {
		t.Fatalf("leave members: %+v", r.Members)
	}
	h.wantState("g", "PreparingRebalance")
	ta := a.join()
	if jr := a.joined(ta); len(jr.Members) != 1 {
		t.Fatalf("after the leaves only a is left: %+v", jr.Members)
	}
	a.sync(map[string][]byte{a.memberID: assignment("t", 0)})

	// The last member leaving empties the group, which is written.
	n := len(h.records)
	if lr := a.leave(); lr.ErrorCode != errNone || lr.Members[0].ErrorCode != errNone {
		t.Fatalf("leave: %+v", lr)
	}
	h.wantState("g", "Empty")
	if len(h.records) != n+1 {
		t.Fatal("the empty group must be written")
	}
	var v kmsg.GroupMetadataValue
	if err := v.ReadFrom(h.records[n].Value); err != nil || len(v.Members) != 0 || v.ProtocolType != "consumer" || v.Protocol != nil {
		t.Fatalf("empty group record: %+v %v", v, err)
	}

	// v0-v2: one member, its error at the top level.
	old := kmsg.NewPtrLeaveGroupRequest()
	old.Version = 1
	old.Group = "g"
	old.MemberID = "nobody"
	wantCode(t, "leave v1", response[*kmsg.LeaveGroupResponse](h, h.send("x", old)).ErrorCode, errUnknownMemberID)
	old.Group = "no-such-group"
	wantCode(t, "leave v1 unknown group", response[*kmsg.LeaveGroupResponse](h, h.send("x", old)).ErrorCode, errUnknownMemberID)
}

func TestHeartbeatErrors(t *testing.T) {
	h := newHarness(t, testConfig())
	a, b := h.consumer("g", "a", "t"), h.consumer("g", "b", "t")
	h.stabilize(a, b)

	good := *a
	wantCode(t, "good", good.heartbeat(), errNone)
	wrongGen := *a
	wrongGen.generation++
	wantCode(t, "wrong generation", wrongGen.heartbeat(), errIllegalGeneration)
	unknown := *a
	unknown.memberID = "a-nobody"
	wantCode(t, "unknown member", unknown.heartbeat(), errUnknownMemberID)
	noGroup := *a
	noGroup.group = "other"
	wantCode(t, "unknown group", noGroup.heartbeat(), errUnknownMemberID)
	noID := *a
	noID.group = ""
	wantCode(t, "empty group id", noID.heartbeat(), errInvalidGroupID)

	b.topics = []string{"t", "u"}
	b.join() // new metadata: a rebalance
	wantCode(t, "during rebalance", a.heartbeat(), errRebalanceInProgress)
}

func TestSyncGroupErrors(t *testing.T) {
	h := newHarness(t, testConfig())
	a := h.consumer("g", "a", "t")

	noGroup := a.sync(nil)
	wantCode(t, "unknown group", response[*kmsg.SyncGroupResponse](h, noGroup).ErrorCode, errUnknownMemberID)

	ta := a.joinFully()
	// Before the join phase completes: the group is in generation 0.
	a.generation = 3
	wantCode(t, "sync before join completes, other generation", response[*kmsg.SyncGroupResponse](h, a.sync(nil)).ErrorCode, errIllegalGeneration)
	a.generation = 0
	wantCode(t, "sync before join completes", response[*kmsg.SyncGroupResponse](h, a.sync(nil)).ErrorCode, errRebalanceInProgress)
	h.waitAnswered(ta)
	a.joined(ta)

	bad := a.syncRequest(nil)
	bad.Protocol = strPtr("roundrobin")
	wantCode(t, "protocol mismatch", response[*kmsg.SyncGroupResponse](h, h.send("a", bad)).ErrorCode, errInconsistentGroupProtocol)
	bad = a.syncRequest(nil)
	bad.ProtocolType = strPtr("connect")
	wantCode(t, "protocol type mismatch", response[*kmsg.SyncGroupResponse](h, h.send("a", bad)).ErrorCode, errInconsistentGroupProtocol)
	// From v5 both are mandatory, and their absence is the first thing
	// checked, before the group id.
	for _, noType := range []bool{true, false} {
		bad = a.syncRequest(nil)
		bad.Group = ""
		if noType {
			bad.ProtocolType = nil
		} else {
			bad.Protocol = nil
		}
		wantCode(t, fmt.Sprintf("v5, protocol type missing %v", noType), response[*kmsg.SyncGroupResponse](h, h.send("a", bad)).ErrorCode, errInconsistentGroupProtocol)
	}

	// A sync sent during a new rebalance, with the current generation.
	a.sync(map[string][]byte{a.memberID: assignment("t", 0)})
	b := h.consumer("g", "b", "t")
	tb := b.joinFully()
	h.wantState("g", "PreparingRebalance")
	wantCode(t, "sync while preparing", response[*kmsg.SyncGroupResponse](h, a.sync(nil)).ErrorCode, errRebalanceInProgress)
	ta = a.join()
	a.joined(ta)
	b.joined(tb)

	// A follower waiting in SyncGroup is sent back to rejoin when a new
	// rebalance starts.
	follower := b
	if b.memberID == response[*kmsg.JoinGroupResponse](h, ta).LeaderID {
		follower = a
	}
	st := follower.sync(nil)
	h.consumer("g", "c", "t").joinFully()
	r := response[*kmsg.SyncGroupResponse](h, st)
	wantCode(t, "parked sync on a new rebalance", r.ErrorCode, errRebalanceInProgress)
}

func TestSyncTimeoutRemovesMembers(t *testing.T) {
	h := newHarness(t, testConfig())
	a, b := h.consumer("g", "a", "t"), h.consumer("g", "b", "t")
	a.rebalance, b.rebalance = 10_000, 10_000
	ta, tb := a.joinFully(), b.joinFully()
	h.waitAnswered(ta, tb)
	a.joined(ta)
	b.joined(tb)
	leader, lazy := a, b
	if response[*kmsg.JoinGroupResponse](h, ta).LeaderID == b.memberID {
		leader, lazy = b, a
	}
	leader.sync(map[string][]byte{a.memberID: assignment("t", 0), b.memberID: assignment("t", 1)})
	h.wantState("g", "Stable")
	// The other member heartbeats but never sends SyncGroup: at the
	// rebalance timeout it is removed and the group rebalances.
	for i := 0; i < 3; i++ {
		h.advance(3 * time.Second)
		wantCode(t, "leader heartbeat", leader.heartbeat(), errNone)
		wantCode(t, "lazy heartbeat", lazy.heartbeat(), errNone)
	}
	h.advance(1500 * time.Millisecond)
	wantCode(t, "leader heartbeat after the sync timeout", leader.heartbeat(), errRebalanceInProgress)
	wantCode(t, "lazy heartbeat after the sync timeout", lazy.heartbeat(), errUnknownMemberID)
}

func TestLeaderNotRejoiningIsReplaced(t *testing.T) {
	h := newHarness(t, testConfig())
	a, b := h.consumer("g", "a", "t"), h.consumer("g", "b", "t")
	a.rebalance, b.rebalance = 10_000, 10_000
	if h.stabilize(a, b) != a {
		t.Fatal("a leads")
	}
	b.topics = []string{"t", "u"}
	tb := b.join() // a heartbeats but never rejoins
	for i := 0; i < 3; i++ {
		h.advance(3 * time.Second)
		a.heartbeat()
	}
	h.advance(time.Second)
	r := b.joined(tb)
	if r.LeaderID != b.memberID || len(r.Members) != 1 {
		t.Fatalf("b must lead alone: %+v", r)
	}

	// A static leader that does not rejoin stays a member (until its
	// session expires), but a member that rejoined leads.
	h2 := newHarness(t, testConfig())
	s := h2.consumer("g", "s", "t").static("is")
	d := h2.consumer("g", "d", "t")
	s.rebalance, d.rebalance = 10_000, 10_000
	if h2.stabilize(s, d) != s {
		t.Fatal("s leads")
	}
	d.topics = []string{"t", "u"}
	td := d.join()
	for i := 0; i < 3; i++ {
		h2.advance(3 * time.Second)
		s.heartbeat()
	}
	h2.advance(time.Second)
	r = d.joined(td)
	if r.LeaderID != d.memberID || len(r.Members) != 2 {
		t.Fatalf("d must lead, s stays: %+v", r)
	}
}

func TestGroupMaxSize(t *testing.T) {
	cfg := testConfig()
	cfg.MaxSize = 2
	h := newHarness(t, cfg)
	a, b, c := h.consumer("g", "a", "t"), h.consumer("g", "b", "t"), h.consumer("g", "c", "t")
	h.stabilize(a, b)
	r := response[*kmsg.JoinGroupResponse](h, c.join())
	wantCode(t, "third member", r.ErrorCode, errGroupMaxSizeReached)
	h.wantState("g", "Stable")
	// A member of the group may still rejoin.
	a.topics = []string{"t", "u"}
	ta, tb := a.join(), b.join()
	h.waitAnswered(ta, tb)
	a.joined(ta)
}

func TestJoinValidation(t *testing.T) {
	h := newHarness(t, testConfig())
	a := h.consumer("g", "a", "t")
	a.sessionMs = 5999
	wantCode(t, "session too short", response[*kmsg.JoinGroupResponse](h, a.join()).ErrorCode, errInvalidSessionTimeout)
	a.sessionMs = 1_800_001
	wantCode(t, "session too long", response[*kmsg.JoinGroupResponse](h, a.join()).ErrorCode, errInvalidSessionTimeout)
	a.sessionMs = 10_000
	a.group = ""
	wantCode(t, "empty group id", response[*kmsg.JoinGroupResponse](h, a.join()).ErrorCode, errInvalidGroupID)
	a.group = "g"
	a.memberID = "made-up"
	wantCode(t, "unknown member of a new group", response[*kmsg.JoinGroupResponse](h, a.join()).ErrorCode, errUnknownMemberID)
	a.memberID = ""

	h.stabilize(a)
	other := h.consumer("g", "b", "t")
	req := other.joinRequest()
	req.ProtocolType = "connect"
	wantCode(t, "protocol type mismatch", response[*kmsg.JoinGroupResponse](h, h.send("b", req)).ErrorCode, errInconsistentGroupProtocol)
	other.protocols = []string{"roundrobin"}
	wantCode(t, "no common protocol", response[*kmsg.JoinGroupResponse](h, other.join()).ErrorCode, errInconsistentGroupProtocol)
}

func TestProtocolSelection(t *testing.T) {
	h := newHarness(t, testConfig())
	a, b, c := h.consumer("g", "a", "t"), h.consumer("g", "b", "t"), h.consumer("g", "c", "t")
	// All support range and cooperative-sticky; two prefer the latter;
	// roundrobin is not supported by everyone.
	a.protocols = []string{"range", "cooperative-sticky", "roundrobin"}
	b.protocols = []string{"cooperative-sticky", "range"}
	c.protocols = []string{"roundrobin", "cooperative-sticky", "range"}
	ta, tb, tc := a.joinFully(), b.joinFully(), c.joinFully()
	h.waitAnswered(ta, tb, tc)
	if p := *a.joined(ta).Protocol; p != "cooperative-sticky" {
		t.Fatalf("selected %q, want cooperative-sticky", p)
	}
}

func TestParkedRequestsReplaced(t *testing.T) {
	h := newHarness(t, testConfig())
	a := h.consumer("g", "a", "t").static("ia")
	b := h.consumer("g", "b", "t")
	c := h.consumer("g", "c", "t")
	h.stabilize(a, b, c)

	// b starts a rebalance; a's JoinGroup is parked (c has not rejoined),
	// then a restarts: the parked request of the old member id is fenced.
	b.topics = []string{"u"}
	tb := b.join()
	ta := a.join()
	if h.answered(ta) {
		t.Fatal("a's join should wait for the rebalance")
	}
	restarted := h.consumer("g", "a", "t").static("ia")
	tr := restarted.join()
	r := response[*kmsg.JoinGroupResponse](h, ta)
	wantCode(t, "old member id", r.ErrorCode, errFencedInstanceID)
	if h.answered(tr) {
		t.Fatal("the restarted member waits for the rebalance too")
	}
	tc := c.join()
	restarted.joined(tr)
	b.joined(tb)
	c.joined(tc)

	// A JoinGroup sent again while the first is parked replaces it; the
	// first is answered so that nothing stays parked.
	b.topics = []string{"v"}
	first := b.join()
	second := b.join()
	wantCode(t, "superseded join", response[*kmsg.JoinGroupResponse](h, first).ErrorCode, errRebalanceInProgress)
	if h.answered(second) {
		t.Fatal("the newer join must wait for the rebalance")
	}
}

func TestNewMemberJoinTimeout(t *testing.T) {
	h := newHarness(t, testConfig())
	a := h.consumer("g", "a", "t")
	a.rebalance = 600_000 // ten minutes
	h.stabilize(a)
	// b joins; a keeps heartbeating but never rejoins, so the rebalance
	// lasts until a's rebalance timeout. b's parked JoinGroup gives up
	// after five minutes.
	b := h.consumer("g", "b", "t")
	tb := b.joinFully()
	for i := 0; i < 100 && !h.answered(tb); i++ {
		h.advance(5 * time.Second)
		a.heartbeat()
	}
	r := response[*kmsg.JoinGroupResponse](h, tb)
	wantCode(t, "new member after 5 minutes", r.ErrorCode, errUnknownMemberID)
	if elapsed := h.now.Sub(t0); elapsed < 5*time.Minute || elapsed > 5*time.Minute+10*time.Second {
		t.Fatalf("answered after %v", elapsed)
	}
}

func TestLoadedOverMaxSize(t *testing.T) {
	h := newHarness(t, testConfig())
	a, b := h.consumer("g", "a", "t"), h.consumer("g", "b", "t")
	h.stabilize(a, b)
	cfg := testConfig()
	cfg.MaxSize = 1
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range h.records {
		if err := c.Replay(r.Key, r.Value); err != nil {
			t.Fatal(err)
		}
	}
	h.c = c
	h.take(c.Loaded(h.now))
	wantCode(t, "heartbeat after load", a.heartbeat(), errRebalanceInProgress)
	ta := a.join()
	tb := b.join()
	wantCode(t, "over the limit", response[*kmsg.JoinGroupResponse](h, tb).ErrorCode, errGroupMaxSizeReached)
	h.waitAnswered(ta)
	if r := a.joined(ta); len(r.Members) != 1 {
		t.Fatalf("after the rebalance: %+v", r.Members)
	}
}
