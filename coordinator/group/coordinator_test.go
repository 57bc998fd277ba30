package group

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestLoading(t *testing.T) {
	c, err := New(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group = 4, "g"
	out := c.Step(t0, Input{Token: 1, Version: 4, Request: hb})
	wantCode(t, "heartbeat while loading", out.Responses[0].Body.(*kmsg.HeartbeatResponse).ErrorCode, errNone)

	of := kmsg.NewPtrOffsetFetchRequest()
	of.Version, of.Group = 1, "g"
	of.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	out = c.Step(t0, Input{Token: 2, Version: 1, Request: of})
	r := out.Responses[0].Body.(*kmsg.OffsetFetchResponse)
	wantCode(t, "v1 fetch while loading", r.Topics[0].Partitions[0].ErrorCode, errCoordinatorLoadInProgress)

	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Version, oc.Group = 9, "g"
	oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0}, {Partition: 1}}}}
	out = c.Step(t0, Input{Token: 3, Version: 9, Request: oc})
	deepEqual(t, "commit while loading", commitCodes(out.Responses[0].Body.(*kmsg.OffsetCommitResponse)),
		[]int16{errCoordinatorLoadInProgress, errCoordinatorLoadInProgress})
	if len(out.Records) != 0 {
		t.Fatal("nothing is written while loading")
	}
	if out := c.Tick(t0.Add(time.Hour)); len(out.Records)+len(out.Responses) != 0 || !out.NextTick.IsZero() {
		t.Fatal("no timers run while loading")
	}
	if out := c.Loaded(t0); out.NextTick != t0.Add(10*time.Minute) {
		t.Fatalf("the expiration timer is armed at load: %v", out.NextTick)
	}
}

func TestAppendFailed(t *testing.T) {
	h := newHarness(t, testConfig())
	a, b := h.consumer("g", "a", "t"), h.consumer("g", "b", "t")
	ta, tb := a.joinFully(), b.joinFully()
	h.waitAnswered(ta, tb)
	a.joined(ta)
	b.joined(tb)
	tbSync := b.sync(nil) // parked: a leads
	other := h.consumer("other", "o", "t")
	tOther := other.joinFully() // parked in the initial delay

	// The leader's SyncGroup: its record fails to append.
	h.token++
	out := h.c.Step(h.now, Input{Token: h.token, Version: 5, ClientID: "a", Request: a.syncRequest(map[string][]byte{
		a.memberID: assignment("t", 0), b.memberID: assignment("t", 1),
	})})
	if len(out.Records) != 1 || len(out.Responses) != 2 {
		t.Fatalf("leader sync: %d records, %d responses", len(out.Records), len(out.Responses))
	}
	failed := h.c.AppendFailed(out.Responses, errNotLeaderOrFollower)
	codes := map[int]int16{}
	for _, r := range failed {
		switch body := r.Body.(type) {
		case *kmsg.SyncGroupResponse:
			codes[r.Token.(int)] = body.ErrorCode
			if len(body.MemberAssignment) != 0 {
				t.Fatal("a failed sync carries no assignment")
			}
		case *kmsg.JoinGroupResponse:
			codes[r.Token.(int)] = body.ErrorCode
		}
	}
	deepEqual(t, "failed responses", codes, map[int]int16{
		h.token: errNotCoordinator, tbSync: errNotCoordinator, tOther: errNotCoordinator,
	})

	// Fenced: everything gets NOT_COORDINATOR until the driver reloads.
	wantCode(t, "heartbeat after failure", a.heartbeat(), errNotCoordinator)
	if out := h.c.Tick(h.now.Add(time.Hour)); len(out.Responses)+len(out.Records) != 0 {
		t.Fatal("a fenced coordinator does nothing on Tick")
	}

	// Mapping of append errors.
	for in, want := range map[int16]int16{
		errRequestTimedOut: errCoordinatorNotAvailable, errNotEnoughReplicas: errCoordinatorNotAvailable,
		errKafkaStorageError: errNotCoordinator, errMessageTooLarge: errUnknownServerError, errNone: errCoordinatorNotAvailable,
	} {
		if got := appendErrorCode(in); got != want {
			t.Fatalf("append error %d maps to %d, want %d", in, got, want)
		}
	}
	oc := kmsg.NewOffsetCommitResponse()
	oc.Version = 8
	oc.Topics = []kmsg.OffsetCommitResponseTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitResponseTopicPartition{{Partition: 0}, {Partition: 1}}}}
	f := h.c.AppendFailed([]Response{{Token: 1, Body: &oc}}, errRequestTimedOut)
	deepEqual(t, "failed commit", commitCodes(f[0].Body.(*kmsg.OffsetCommitResponse)), []int16{errCoordinatorNotAvailable, errCoordinatorNotAvailable})
}

func TestUnload(t *testing.T) {
	h := newHarness(t, testConfig())
	a := h.consumer("g", "a", "t")
	tok := a.joinFully()
	rs := h.c.Unload()
	if len(rs) != 1 || rs[0].Token != tok {
		t.Fatalf("unload answers the parked join: %+v", rs)
	}
	r := rs[0].Body.(*kmsg.JoinGroupResponse)
	if r.ErrorCode != errNotCoordinator || r.MemberID != a.memberID {
		t.Fatalf("unload response: %+v", r)
	}
	wantCode(t, "join after unload", response[*kmsg.JoinGroupResponse](h, a.join()).ErrorCode, errNotCoordinator)
}

func TestDeleteTopicOffsets(t *testing.T) {
	h := newHarness(t, testConfig())
	s := h.consumer("g", "s", "t")
	s.memberID, s.generation = "", -1
	s.commit(9, "t", 1, 2)
	s.commit(9, "keep", 3)
	out := h.take(h.c.DeleteTopicOffsets(h.now, "t"))
	if len(out.Records) != 2 {
		t.Fatalf("%d tombstones, want 2", len(out.Records))
	}
	f := h.fetchAll("g")[0]
	if len(f.Topics) != 1 || f.Topics[0].Topic != "keep" {
		t.Fatalf("fetch after topic deletion: %+v", f)
	}
	var seen []string
	h.c.RangeOffsets(func(g, t string, p int32, o int64) bool {
		seen = append(seen, g+"/"+t)
		return true
	})
	deepEqual(t, "RangeOffsets", seen, []string{"g/keep"})
}

func TestStepPanicsOnUnsupportedRequest(t *testing.T) {
	h := newHarness(t, testConfig())
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	h.c.Step(h.now, Input{Request: kmsg.NewPtrMetadataRequest()})
}

func TestHandles(t *testing.T) {
	for _, k := range []kmsg.Key{kmsg.JoinGroup, kmsg.OffsetFetch, kmsg.DeleteGroups, kmsg.OffsetDelete, kmsg.TxnOffsetCommit} {
		if !Handles(int16(k)) {
			t.Fatalf("Handles(%v) = false", k)
		}
	}
	if Handles(int16(kmsg.FindCoordinator)) || Handles(int16(kmsg.EndTxn)) {
		t.Fatal("FindCoordinator and EndTxn are not the coordinator's")
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	for name, mut := range map[string]func(*Config){
		"min session":      func(c *Config) { c.MinSessionTimeout = 0 },
		"max below min":    func(c *Config) { c.MaxSessionTimeout = time.Second },
		"negative delay":   func(c *Config) { c.InitialRebalanceDelay = -1 },
		"max size":         func(c *Config) { c.MaxSize = 0 },
		"retention":        func(c *Config) { c.OffsetsRetention = time.Second },
		"check interval":   func(c *Config) { c.OffsetsRetentionCheckInterval = 0 },
		"metadata size":    func(c *Config) { c.OffsetMetadataMaxBytes = -1 },
		"new member limit": func(c *Config) { c.NewMemberJoinTimeout = 0 },
	} {
		cfg := DefaultConfig()
		mut(&cfg)
		if err := cfg.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := New(cfg); err == nil {
			t.Fatalf("%s: New accepted it", name)
		}
	}
}

func TestPartitionFor(t *testing.T) {
	// Expected values by Java's String.hashCode, by hand: for "ab",
	// 97*31 + 98 = 3105; for "group-1" (g r o u p - 1 = 103 114 111 117 112
	// 45 49) the 32-bit sum of c*31^(n-1-i) is 293427299.
	for _, tc := range []struct {
		id         string
		partitions int32
		want       int32
	}{
		{"", 50, 0},
		{"a", 50, 97 % 50},
		{"ab", 50, 3105 % 50},
		{"group-1", 50, 293427299 % 50},   // 49
		{"my-group", 50, 1906497762 % 50}, // hashCode -1906497762
		{"polygenelubricants", 50, 0},     // hashCode MinInt32: Utils.abs gives 0
		{"grüppe", 50, 1233264812 % 50},   // hashCode -1233264812; ü is one UTF-16 unit
		{"g\U0001F600", 50, 1871882 % 50}, // a surrogate pair counts as two units
		{"console-consumer-12345", 3, 158455506 % 3},
	} {
		if got := PartitionFor(tc.id, tc.partitions); got != tc.want {
			t.Fatalf("PartitionFor(%q, %d) = %d, want %d", tc.id, tc.partitions, got, tc.want)
		}
	}
}

func TestFailResponseShapes(t *testing.T) {
	c, _ := New(testConfig())
	resps := []kmsg.Response{
		&kmsg.JoinGroupResponse{Version: 9, MemberID: "m", Generation: 3},
		&kmsg.SyncGroupResponse{Version: 5, MemberAssignment: []byte{1}},
		&kmsg.HeartbeatResponse{Version: 4},
		&kmsg.LeaveGroupResponse{Version: 5, Members: []kmsg.LeaveGroupResponseMember{{MemberID: "m"}}},
		&kmsg.OffsetDeleteResponse{Topics: []kmsg.OffsetDeleteResponseTopic{{Topic: "t"}}},
		&kmsg.DeleteGroupsResponse{Version: 2, Groups: []kmsg.DeleteGroupsResponseGroup{{Group: "g"}, {Group: "h"}}},
		&kmsg.OffsetFetchResponse{Version: 8, Groups: []kmsg.OffsetFetchResponseGroup{{Group: "g"}}},
		&kmsg.OffsetFetchResponse{Version: 5, Topics: []kmsg.OffsetFetchResponseTopic{{Topic: "t"}}},
		&kmsg.DescribeGroupsResponse{Version: 5, Groups: []kmsg.DescribeGroupsResponseGroup{{Group: "g", State: "Stable"}}},
		&kmsg.ListGroupsResponse{Version: 5, Groups: []kmsg.ListGroupsResponseGroup{{Group: "g"}}},
	}
	var in []Response
	for i, r := range resps {
		in = append(in, Response{Token: i, Body: r})
	}
	out := c.AppendFailed(in, errNotLeaderOrFollower)
	if len(out) != len(resps) {
		t.Fatalf("%d responses, want %d", len(out), len(resps))
	}
	for i, r := range out {
		if r.Token != i || r.Body.GetVersion() != resps[i].GetVersion() {
			t.Fatalf("response %d: token %v version %d", i, r.Token, r.Body.GetVersion())
		}
		var codes []int16
		switch b := r.Body.(type) {
		case *kmsg.JoinGroupResponse:
			codes = append(codes, b.ErrorCode)
			if b.MemberID != "" || b.Generation != -1 {
				t.Fatalf("failed join keeps nothing: %+v", b)
			}
		case *kmsg.SyncGroupResponse:
			codes = append(codes, b.ErrorCode)
		case *kmsg.HeartbeatResponse:
			codes = append(codes, b.ErrorCode)
		case *kmsg.LeaveGroupResponse:
			codes = append(codes, b.ErrorCode)
		case *kmsg.OffsetDeleteResponse:
			codes = append(codes, b.ErrorCode)
		case *kmsg.DeleteGroupsResponse:
			for _, g := range b.Groups {
				codes = append(codes, g.ErrorCode)
			}
		case *kmsg.OffsetFetchResponse:
			codes = append(codes, b.ErrorCode)
			for _, g := range b.Groups {
				codes = append(codes, g.ErrorCode)
			}
			codes = codes[len(codes)-1:]
		case *kmsg.DescribeGroupsResponse:
			codes = append(codes, b.Groups[0].ErrorCode)
		case *kmsg.ListGroupsResponse:
			codes = append(codes, b.ErrorCode)
		}
		for _, code := range codes {
			wantCode(t, "failed response", code, errNotCoordinator)
		}
		if len(codes) == 0 {
			t.Fatalf("response %d: no error code", i)
		}
	}
}

func TestErrorResponseShapes(t *testing.T) {
	c, _ := New(testConfig())
	c.Unload()
	reqs := []kmsg.Request{
		&kmsg.JoinGroupRequest{Version: 9, Group: "g", MemberID: "m"},
		&kmsg.SyncGroupRequest{Version: 5, Group: "g"},
		&kmsg.LeaveGroupRequest{Version: 5, Group: "g"},
		&kmsg.OffsetFetchRequest{Version: 8, Groups: []kmsg.OffsetFetchRequestGroup{{Group: "g"}, {Group: "h"}}},
		&kmsg.OffsetFetchRequest{Version: 5, Group: "g"},
		&kmsg.OffsetDeleteRequest{Group: "g"},
		&kmsg.DescribeGroupsRequest{Version: 5, Groups: []string{"g", "h"}},
		&kmsg.ListGroupsRequest{Version: 5},
		&kmsg.DeleteGroupsRequest{Version: 2, Groups: []string{"g"}},
	}
	for _, req := range reqs {
		out := c.Step(t0, Input{Token: 1, Version: req.GetVersion(), Request: req})
		body := out.Responses[0].Body
		back := body.RequestKind().ResponseKind()
		back.SetVersion(body.GetVersion())
		if err := back.ReadFrom(body.AppendTo(nil)); err != nil {
			t.Fatalf("%T: %v", body, err)
		}
		switch b := body.(type) {
		case *kmsg.JoinGroupResponse:
			if b.ErrorCode != errNotCoordinator || b.MemberID != "m" {
				t.Fatalf("join: %+v", b)
			}
		case *kmsg.OffsetFetchResponse:
			if b.Version >= 8 && (len(b.Groups) != 2 || b.Groups[1].ErrorCode != errNotCoordinator) {
				t.Fatalf("fetch v8: %+v", b)
			}
			if b.Version < 8 && b.ErrorCode != errNotCoordinator {
				t.Fatalf("fetch v5: %+v", b)
			}
		case *kmsg.DescribeGroupsResponse:
			if len(b.Groups) != 2 || b.Groups[1].ErrorCode != errNotCoordinator {
				t.Fatalf("describe: %+v", b)
			}
		case *kmsg.DeleteGroupsResponse:
			if b.Groups[0].ErrorCode != errNotCoordinator {
				t.Fatalf("delete: %+v", b)
			}
		}
	}
}
