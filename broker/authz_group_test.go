package broker

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/protocol"
)

// authzGroupCase is one request of a table and the error it must get.
type authzGroupCase struct {
	what string
	code func() int16
	want protocol.ErrorCode
}

func runAuthzGroupCases(t *testing.T, cases []authzGroupCase) {
	t.Helper()
	for _, c := range cases {
		checkCode(t, c.what, c.code(), c.want)
	}
}

// authzGroupReady waits until w's broker coordinates group (FindCoordinator
// created __consumer_offsets and its coordinator has loaded).
func authzGroupReady(t *testing.T, w *wireConn, group string) {
	t.Helper()
	waitFor(t, 30*time.Second, "group coordinator", func() error {
		if code := authzFindCoordinator(w, 4, coordinatorGroup, group).ErrorCode; code != 0 {
			return errors.New(protocol.ErrorCode(code).String())
		}
		req := kmsg.NewPtrOffsetFetchRequest()
		req.SetVersion(7)
		req.Group = group
		if code := w.mustRoundTrip(req).(*kmsg.OffsetFetchResponse).ErrorCode; code != 0 {
			return errors.New(protocol.ErrorCode(code).String())
		}
		return nil
	})
}

// authzFindCoordinator asks for key's coordinator at version v, the answer
// in the v4+ form whatever v.
func authzFindCoordinator(w *wireConn, v int16, keyType int8, key string) kmsg.FindCoordinatorResponseCoordinator {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.SetVersion(v)
	req.CoordinatorType = keyType
	req.CoordinatorKey, req.CoordinatorKeys = key, []string{key}
	resp := w.mustRoundTrip(req).(*kmsg.FindCoordinatorResponse)
	if v >= 4 {
		if len(resp.Coordinators) != 1 {
			w.t.Fatalf("FindCoordinator v%d: %d coordinators, want 1", v, len(resp.Coordinators))
		}
		return resp.Coordinators[0]
	}
	return kmsg.FindCoordinatorResponseCoordinator{Key: key, NodeID: resp.NodeID, ErrorCode: resp.ErrorCode}
}

// authzCommit commits offset 1 for partition 0 of each topic as a simple
// consumer (generation -1) and returns each topic's error.
func authzCommit(w *wireConn, group string, topics ...string) map[string]int16 {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(8)
	req.Group, req.Generation = group, -1
	for _, name := range topics {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = name
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Offset = 1
		rt.Partitions = append(rt.Partitions, p)
		req.Topics = append(req.Topics, rt)
	}
	out := map[string]int16{}
	for _, rt := range w.mustRoundTrip(req).(*kmsg.OffsetCommitResponse).Topics {
		for _, p := range rt.Partitions {
			out[rt.Topic] = p.ErrorCode
		}
	}
	return out
}

// authzFetchV7 fetches group's offsets with OffsetFetch v7: of partition 0
// of each topic, or of every topic when topics is nil.
func authzFetchV7(w *wireConn, group string, topics []string) *kmsg.OffsetFetchResponse {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(7)
	req.Group = group
	if topics != nil {
		req.Topics = []kmsg.OffsetFetchRequestTopic{}
	}
	for _, name := range topics {
		req.Topics = append(req.Topics, kmsg.OffsetFetchRequestTopic{Topic: name, Partitions: []int32{0}})
	}
	return w.mustRoundTrip(req).(*kmsg.OffsetFetchResponse)
}

// authzFetchV8 is authzFetchV7 with OffsetFetch v8, for several groups.
func authzFetchV8(w *wireConn, groups []string, topics []string) *kmsg.OffsetFetchResponse {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(8)
	for _, g := range groups {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g
		if topics != nil {
			rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
		}
		for _, name := range topics {
			rg.Topics = append(rg.Topics, kmsg.OffsetFetchRequestGroupTopic{Topic: name, Partitions: []int32{0}})
		}
		req.Groups = append(req.Groups, rg)
	}
	return w.mustRoundTrip(req).(*kmsg.OffsetFetchResponse)
}

// authzFetchedV7 is each topic's error (of its last partition) and offset.
func authzFetchedV7(resp *kmsg.OffsetFetchResponse) map[string][2]int64 {
	out := map[string][2]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[t.Topic] = [2]int64{int64(p.ErrorCode), p.Offset}
		}
	}
	return out
}

func authzFetchedV8(g kmsg.OffsetFetchResponseGroup) map[string][2]int64 {
	out := map[string][2]int64{}
	for _, t := range g.Topics {
		for _, p := range t.Partitions {
			out[t.Topic] = [2]int64{int64(p.ErrorCode), p.Offset}
		}
	}
	return out
}

// authzOffsetDelete deletes partition 0 of each topic's offsets and
// returns the group error and each topic's.
func authzOffsetDelete(w *wireConn, group string, topics ...string) (int16, map[string]int16) {
	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Group = group
	for _, name := range topics {
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = name
		rt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
		req.Topics = append(req.Topics, rt)
	}
	resp := w.mustRoundTrip(req).(*kmsg.OffsetDeleteResponse)
	out := map[string]int16{}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			out[rt.Topic] = p.ErrorCode
		}
	}
	return resp.ErrorCode, out
}

func authzDescribeGroups(w *wireConn, groups ...string) []kmsg.DescribeGroupsResponseGroup {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.SetVersion(5)
	req.Groups, req.IncludeAuthorizedOperations = groups, true
	return w.mustRoundTrip(req).(*kmsg.DescribeGroupsResponse).Groups
}

func authzListGroups(w *wireConn) []string {
	req := kmsg.NewPtrListGroupsRequest()
	req.SetVersion(4)
	var out []string
	for _, g := range w.mustRoundTrip(req).(*kmsg.ListGroupsResponse).Groups {
		out = append(out, g.Group)
	}
	slices.Sort(out)
	return out
}

func authzDeleteGroups(w *wireConn, groups ...string) map[string]int16 {
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.SetVersion(2)
	req.Groups = groups
	out := map[string]int16{}
	for _, g := range w.mustRoundTrip(req).(*kmsg.DeleteGroupsResponse).Groups {
		out[g.Group] = g.ErrorCode
	}
	return out
}

// authzJoin joins group as a new member of the classic protocol: the
// JoinGroup answer (after MEMBER_ID_REQUIRED, with the member id given).
func authzJoin(w *wireConn, group, memberID string) *kmsg.JoinGroupResponse {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{"t"}
	req := kmsg.NewPtrJoinGroupRequest()
	req.SetVersion(9)
	req.Group, req.MemberID, req.ProtocolType = group, memberID, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 10000
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: meta.AppendTo(nil)}}
	resp := w.mustRoundTrip(req).(*kmsg.JoinGroupResponse)
	if resp.ErrorCode == int16(protocol.MemberIDRequired) {
		return authzJoin(w, group, resp.MemberID)
	}
	return resp
}

func authzSync(w *wireConn, group, memberID string, gen int32, withProtocol bool) int16 {
	req := kmsg.NewPtrSyncGroupRequest()
	req.SetVersion(5)
	req.Group, req.MemberID, req.Generation = group, memberID, gen
	if withProtocol {
		req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	}
	req.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: memberID, MemberAssignment: []byte{}}}
	return w.mustRoundTrip(req).(*kmsg.SyncGroupResponse).ErrorCode
}

func authzHeartbeat(w *wireConn, group, memberID string, gen int32) int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.SetVersion(4)
	req.Group, req.MemberID, req.Generation = group, memberID, gen
	return w.mustRoundTrip(req).(*kmsg.HeartbeatResponse).ErrorCode
}

func authzLeave(w *wireConn, group, memberID string) int16 {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.SetVersion(5)
	req.Group = group
	req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: memberID}}
	return w.mustRoundTrip(req).(*kmsg.LeaveGroupResponse).ErrorCode
}

// TestAuthzGroupClassic: FindCoordinator, the classic group APIs, the
// offset APIs and the group admin APIs refuse a principal without the ACLs
// Kafka asks for, with Kafka's error at Kafka's level and nothing else,
// and serve it once the ACLs are granted, topic by topic where Kafka
// decides by topic.
func TestAuthzGroupClassic(t *testing.T) {
	t.Parallel()
	b := startAuthzBroker(t, fastGroups)
	admin, alice := dialWireAs(t, b, "admin"), dialWireAs(t, b, "alice")
	tID := admin.createTopic("t", 1, nil)
	secretID := admin.createTopic("secret", 1, nil)
	authzGroupReady(t, admin, "g")
	for _, g := range []string{"g", "other"} {
		for name, code := range authzCommit(admin, g, "t", "secret") {
			checkCode(t, "admin commits "+g+"/"+name, code, protocol.None)
		}
	}

	runAuthzGroupCases(t, []authzGroupCase{
		{"FindCoordinator v3 group", func() int16 { return authzFindCoordinator(alice, 3, coordinatorGroup, "g").ErrorCode },
			protocol.GroupAuthorizationFailed},
		{"FindCoordinator v4 group", func() int16 { return authzFindCoordinator(alice, 4, coordinatorGroup, "g").ErrorCode },
			protocol.GroupAuthorizationFailed},
		{"FindCoordinator v4 transaction", func() int16 { return authzFindCoordinator(alice, 4, coordinatorTransaction, "tx").ErrorCode },
			protocol.TransactionalIDAuthorizationFailed},
		{"FindCoordinator v6 share", func() int16 { return authzFindCoordinator(alice, 6, coordinatorShare, "g:x:0").ErrorCode },
			protocol.ClusterAuthorizationFailed},
		{"JoinGroup", func() int16 {
			resp := authzJoin(alice, "j", "m-1")
			if resp.MemberID != "" {
				t.Errorf("refused JoinGroup names member %q", resp.MemberID)
			}
			return resp.ErrorCode
		}, protocol.GroupAuthorizationFailed},
		{"SyncGroup", func() int16 { return authzSync(alice, "j", "m-1", 1, true) }, protocol.GroupAuthorizationFailed},
		// Refused before it is authorized, as in Kafka.
		{"SyncGroup v5 without protocol", func() int16 { return authzSync(alice, "j", "m-1", 1, false) },
			protocol.InconsistentGroupProtocol},
		{"Heartbeat", func() int16 { return authzHeartbeat(alice, "j", "m-1", 1) }, protocol.GroupAuthorizationFailed},
		{"LeaveGroup", func() int16 { return authzLeave(alice, "j", "m-1") }, protocol.GroupAuthorizationFailed},
		{"OffsetCommit", func() int16 { return authzCommit(alice, "g", "t")["t"] }, protocol.GroupAuthorizationFailed},
		{"OffsetFetch v7", func() int16 {
			resp := authzFetchV7(alice, "g", []string{"t"})
			if len(resp.Topics) != 0 {
				t.Errorf("refused OffsetFetch v7 has %d topics", len(resp.Topics))
			}
			return resp.ErrorCode
		}, protocol.GroupAuthorizationFailed},
		{"OffsetFetch v8", func() int16 {
			g := authzFetchV8(alice, []string{"g"}, nil).Groups[0]
			if len(g.Topics) != 0 {
				t.Errorf("refused OffsetFetch v8 has %d topics", len(g.Topics))
			}
			return g.ErrorCode
		}, protocol.GroupAuthorizationFailed},
		{"OffsetDelete", func() int16 { code, _ := authzOffsetDelete(alice, "g", "t"); return code },
			protocol.GroupAuthorizationFailed},
		{"DescribeGroups", func() int16 {
			g := authzDescribeGroups(alice, "g")[0]
			if g.State != "" || len(g.Members) != 0 || g.AuthorizedOperations != -2147483648 {
				t.Errorf("refused DescribeGroups shows %+v", g)
			}
			return g.ErrorCode
		}, protocol.GroupAuthorizationFailed},
		{"DeleteGroups", func() int16 { return authzDeleteGroups(alice, "g")["g"] }, protocol.GroupAuthorizationFailed},
	})
	if got := authzListGroups(alice); len(got) != 0 {
		t.Errorf("alice lists %v without DESCRIBE on any group", got)
	}

	// READ on the groups (which implies DESCRIBE), not yet on the topics.
	admin.createACLs(allow(acl.ResourceGroup, "g", "User:alice", acl.OpRead),
		allow(acl.ResourceGroup, "j", "User:alice", acl.OpRead))
	checkCode(t, "FindCoordinator with DESCRIBE", authzFindCoordinator(alice, 4, coordinatorGroup, "g").ErrorCode, protocol.None)
	checkCode(t, "OffsetCommit without READ on the topic", authzCommit(alice, "g", "t")["t"], protocol.TopicAuthorizationFailed)
	admin.createACLs(allow(acl.ResourceTopic, "t", "User:alice", acl.OpRead))

	// OffsetCommit: the readable topic is committed, the other refused.
	got := authzCommit(alice, "g", "secret", "t")
	checkCode(t, "OffsetCommit t", got["t"], protocol.None)
	checkCode(t, "OffsetCommit secret", got["secret"], protocol.TopicAuthorizationFailed)

	// v10 names topics by id; they are authorized by name all the same.
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.SetVersion(10)
	commit.Group, commit.Generation = "g", -1
	for _, id := range [][16]byte{secretID, tID} {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.TopicID = id
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Offset = 1
		rt.Partitions = append(rt.Partitions, p)
		commit.Topics = append(commit.Topics, rt)
	}
	for _, rt := range alice.mustRoundTrip(commit).(*kmsg.OffsetCommitResponse).Topics {
		want := protocol.None
		if rt.TopicID == secretID {
			want = protocol.TopicAuthorizationFailed
		}
		checkCode(t, fmt.Sprintf("OffsetCommit v10 %x", rt.TopicID), rt.Partitions[0].ErrorCode, want)
	}

	// OffsetFetch: a named topic without DESCRIBE is refused (offset -1);
	// a fetch of all topics leaves it out.
	v7 := authzFetchedV7(authzFetchV7(alice, "g", []string{"secret", "t"}))
	if v7["t"] != [2]int64{0, 1} || v7["secret"] != [2]int64{int64(protocol.TopicAuthorizationFailed), -1} {
		t.Errorf("OffsetFetch v7 named: %v", v7)
	}
	if all := authzFetchedV7(authzFetchV7(alice, "g", nil)); len(all) != 1 || all["t"] != [2]int64{0, 1} {
		t.Errorf("OffsetFetch v7 all topics: %v, want t alone", all)
	}
	v8 := authzFetchV8(alice, []string{"g", "other"}, []string{"secret", "t"})
	checkCode(t, "OffsetFetch v8 group other", v8.Groups[1].ErrorCode, protocol.GroupAuthorizationFailed)
	if g := authzFetchedV8(v8.Groups[0]); v8.Groups[0].ErrorCode != 0 || g["t"] != [2]int64{0, 1} ||
		g["secret"] != [2]int64{int64(protocol.TopicAuthorizationFailed), -1} {
		t.Errorf("OffsetFetch v8 named: %s %v", protocol.ErrorCode(v8.Groups[0].ErrorCode), g)
	}
	if g := authzFetchedV8(authzFetchV8(alice, []string{"g"}, nil).Groups[0]); len(g) != 1 || g["t"] != [2]int64{0, 1} {
		t.Errorf("OffsetFetch v8 all topics: %v, want t alone", g)
	}

	// The classic protocol, the whole way through.
	join := authzJoin(alice, "j", "")
	checkCode(t, "JoinGroup", join.ErrorCode, protocol.None)
	checkCode(t, "SyncGroup", authzSync(alice, "j", join.MemberID, join.Generation, true), protocol.None)
	checkCode(t, "Heartbeat", authzHeartbeat(alice, "j", join.MemberID, join.Generation), protocol.None)
	checkCode(t, "LeaveGroup", authzLeave(alice, "j", join.MemberID), protocol.None)

	// OffsetDelete needs DELETE on the group, then READ on each topic.
	code, _ := authzOffsetDelete(alice, "g", "t")
	checkCode(t, "OffsetDelete without DELETE", code, protocol.GroupAuthorizationFailed)
	admin.createACLs(allow(acl.ResourceGroup, "g", "User:alice", acl.OpDelete))
	code, topics := authzOffsetDelete(alice, "g", "secret", "t")
	checkCode(t, "OffsetDelete group", code, protocol.None)
	checkCode(t, "OffsetDelete t", topics["t"], protocol.None)
	checkCode(t, "OffsetDelete secret", topics["secret"], protocol.TopicAuthorizationFailed)
	if all := authzFetchedV7(authzFetchV7(admin, "g", nil)); all["secret"] != [2]int64{0, 1} {
		t.Errorf("secret's offset after a refused delete: %v", all)
	}

	// DescribeGroups and ListGroups show the groups alice may describe.
	ds := authzDescribeGroups(alice, "g", "other")
	checkCode(t, "DescribeGroups g", ds[0].ErrorCode, protocol.None)
	checkCode(t, "DescribeGroups other", ds[1].ErrorCode, protocol.GroupAuthorizationFailed)
	if want := int32(1<<acl.OpRead | 1<<acl.OpDelete | 1<<acl.OpDescribe); ds[0].AuthorizedOperations != want {
		t.Errorf("DescribeGroups g: authorized operations %b, want %b", ds[0].AuthorizedOperations, want)
	}
	if got, want := authzListGroups(alice), []string{"g", "j"}; !slices.Equal(got, want) {
		t.Errorf("alice lists %v, want %v", got, want)
	}
	admin.createACLs(allow(acl.ResourceCluster, acl.ClusterName, "User:alice", acl.OpDescribe))
	if got, want := authzListGroups(alice), []string{"g", "j", "other"}; !slices.Equal(got, want) {
		t.Errorf("alice with DESCRIBE on the cluster lists %v, want %v", got, want)
	}

	// DeleteGroups: the group with DELETE goes, the other stays.
	del := authzDeleteGroups(alice, "g", "other")
	checkCode(t, "DeleteGroups g", del["g"], protocol.None)
	checkCode(t, "DeleteGroups other", del["other"], protocol.GroupAuthorizationFailed)
	if all := authzFetchedV7(authzFetchV7(admin, "other", nil)); len(all) != 2 {
		t.Errorf("group other after a refused delete: %v", all)
	}

	admin.createACLs(allow(acl.ResourceTransactionalID, "tx", "User:alice", acl.OpDescribe))
	checkCode(t, "FindCoordinator transaction with DESCRIBE", authzFindCoordinator(alice, 4, coordinatorTransaction, "tx").ErrorCode,
		protocol.None)
}

// authzConsumerHeartbeat joins group as memberID (ConsumerGroupHeartbeat
// v1, epoch 0) subscribed to topics, or heartbeats at epoch.
func authzConsumerHeartbeat(w *wireConn, group, memberID string, epoch int32, topics ...string) *kmsg.ConsumerGroupHeartbeatResponse {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.SetVersion(1)
	req.Group, req.MemberID, req.MemberEpoch = group, memberID, epoch
	if epoch == 0 {
		req.RebalanceTimeoutMillis = 10000
		req.SubscribedTopicNames = topics
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	return w.mustRoundTrip(req).(*kmsg.ConsumerGroupHeartbeatResponse)
}

func authzConsumerDescribe(w *wireConn, group string) kmsg.ConsumerGroupDescribeResponseGroup {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.SetVersion(1)
	req.Groups, req.IncludeAuthorizedOperations = []string{group}, true
	return w.mustRoundTrip(req).(*kmsg.ConsumerGroupDescribeResponse).Groups[0]
}

// TestAuthzGroupConsumer: ConsumerGroupHeartbeat needs READ on the group
// and DESCRIBE on every subscribed topic; ConsumerGroupDescribe needs
// DESCRIBE on the group and hides a group whose assignments hold a topic
// the principal may not describe.
func TestAuthzGroupConsumer(t *testing.T) {
	t.Parallel()
	b := startAuthzBroker(t)
	admin, alice, carol := dialWireAs(t, b, "admin"), dialWireAs(t, b, "alice"), dialWireAs(t, b, "carol")
	admin.createTopic("t", 2, nil)
	admin.createTopic("secret", 1, nil)
	authzGroupReady(t, admin, "cg")

	checkCode(t, "heartbeat without READ on the group",
		authzConsumerHeartbeat(alice, "cg", "m1", 0, "t").ErrorCode, protocol.GroupAuthorizationFailed)
	checkCode(t, "describe without DESCRIBE on the group",
		authzConsumerDescribe(alice, "cg").ErrorCode, protocol.GroupAuthorizationFailed)
	admin.createACLs(allow(acl.ResourceGroup, "cg", "User:alice", acl.OpRead),
		allow(acl.ResourceTopic, "t", "User:alice", acl.OpDescribe))
	resp := authzConsumerHeartbeat(alice, "cg", "m1", 0, "t", "secret")
	checkCode(t, "heartbeat subscribing to secret", resp.ErrorCode, protocol.TopicAuthorizationFailed)
	if resp.MemberEpoch != 0 || resp.Assignment != nil {
		t.Errorf("refused heartbeat: epoch %d, assignment %+v", resp.MemberEpoch, resp.Assignment)
	}
	resp = authzConsumerHeartbeat(alice, "cg", "m1", 0, "t")
	checkCode(t, "heartbeat subscribing to t", resp.ErrorCode, protocol.None)

	// Once t is assigned, alice sees the group with her operations on it;
	// carol, who may describe the group but not t, sees it refused.
	waitFor(t, 10*time.Second, "t assigned", func() error {
		g := authzConsumerDescribe(alice, "cg")
		if g.ErrorCode != 0 || len(g.Members) != 1 || len(g.Members[0].Assignment.TopicPartitions) != 1 {
			authzConsumerHeartbeat(alice, "cg", "m1", resp.MemberEpoch)
			return fmt.Errorf("%s, %+v", protocol.ErrorCode(g.ErrorCode), g.Members)
		}
		if want := int32(1<<acl.OpRead | 1<<acl.OpDescribe); g.AuthorizedOperations != want {
			return fmt.Errorf("authorized operations %b, want %b", g.AuthorizedOperations, want)
		}
		return nil
	})
	admin.createACLs(allow(acl.ResourceGroup, "cg", "User:carol", acl.OpDescribe))
	g := authzConsumerDescribe(carol, "cg")
	checkCode(t, "carol describes", g.ErrorCode, protocol.TopicAuthorizationFailed)
	if len(g.Members) != 0 || g.AuthorizedOperations != -2147483648 || g.State != "" {
		t.Errorf("group refused for its topics shows %+v", g)
	}
	admin.createACLs(allow(acl.ResourceTopic, "t", "User:carol", acl.OpDescribe))
	checkCode(t, "carol describes with DESCRIBE on t", authzConsumerDescribe(carol, "cg").ErrorCode, protocol.None)
}

// TestAuthzGroupConsumerRegex: the topics a member's regular expression
// matches are only those it may describe, as Kafka's coordinator resolves
// them; an ACL granted later adds its topic at a later heartbeat.
func TestAuthzGroupConsumerRegex(t *testing.T) {
	t.Parallel()
	b := startAuthzBroker(t)
	admin, alice := dialWireAs(t, b, "admin"), dialWireAs(t, b, "alice")
	open := admin.createTopic("re-open", 2, nil)
	hidden := admin.createTopic("re-hidden", 1, nil)
	authzGroupReady(t, admin, "rg")
	admin.createACLs(allow(acl.ResourceGroup, "rg", "User:alice", acl.OpRead),
		allow(acl.ResourceTopic, "re-open", "User:alice", acl.OpDescribe))

	heartbeat := func(epoch int32) *kmsg.ConsumerGroupHeartbeatResponse {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.SetVersion(1)
		req.Group, req.MemberID, req.MemberEpoch = "rg", "m1", epoch
		if epoch == 0 {
			req.RebalanceTimeoutMillis = 10000
			req.SubscribedTopicRegex = kmsg.StringPtr("re-.*")
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
		resp := alice.mustRoundTrip(req).(*kmsg.ConsumerGroupHeartbeatResponse)
		checkCode(t, "heartbeat with a regular expression", resp.ErrorCode, protocol.None)
		return resp
	}
	// assigned heartbeats until the member's assignment holds exactly the
	// partitions want gives each topic id.
	assigned := func(epoch int32, want map[[16]byte]int) int32 {
		t.Helper()
		waitFor(t, 15*time.Second, "the assignment", func() error {
			resp := heartbeat(epoch)
			epoch = resp.MemberEpoch
			if resp.Assignment == nil {
				return errors.New("no assignment in the response")
			}
			got := map[[16]byte]int{}
			for _, at := range resp.Assignment.Topics {
				got[at.TopicID] = len(at.Partitions)
			}
			if !maps.Equal(got, want) {
				return fmt.Errorf("assigned %v, want %v", got, want)
			}
			return nil
		})
		return epoch
	}
	epoch := assigned(0, map[[16]byte]int{open: 2})
	admin.createACLs(allow(acl.ResourceTopic, "re-hidden", "User:alice", acl.OpDescribe))
	assigned(epoch, map[[16]byte]int{open: 2, hidden: 1})
}

// TestAuthzGroupOpsOfMissingGroups: a group answered with an error
// carries no authorized operations (the field's default), as in Kafka,
// whose request handler fills them only for groups answered without one.
func TestAuthzGroupOpsOfMissingGroups(t *testing.T) {
	t.Parallel()
	b := startAuthzBroker(t)
	admin, alice := dialWireAs(t, b, "admin"), dialWireAs(t, b, "alice")
	authzGroupReady(t, admin, "nope")
	admin.createACLs(allow(acl.ResourceGroup, "nope", "User:alice", acl.OpDescribe))

	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.SetVersion(6)
	dg.Groups, dg.IncludeAuthorizedOperations = []string{"nope"}, true
	g := alice.mustRoundTrip(dg).(*kmsg.DescribeGroupsResponse).Groups[0]
	checkCode(t, "DescribeGroups v6 of a missing group", g.ErrorCode, protocol.GroupIDNotFound)
	if g.AuthorizedOperations != math.MinInt32 {
		t.Errorf("DescribeGroups v6: operations %d on a missing group", g.AuthorizedOperations)
	}
	dg.SetVersion(5) // Dead, without an error: operations reported
	if g := alice.mustRoundTrip(dg).(*kmsg.DescribeGroupsResponse).Groups[0]; g.ErrorCode != 0 || g.AuthorizedOperations != 1<<acl.OpDescribe {
		t.Errorf("DescribeGroups v5 of a missing group: error %d, operations %b", g.ErrorCode, g.AuthorizedOperations)
	}
	cg := authzConsumerDescribe(alice, "nope")
	checkCode(t, "ConsumerGroupDescribe of a missing group", cg.ErrorCode, protocol.GroupIDNotFound)
	if cg.AuthorizedOperations != math.MinInt32 {
		t.Errorf("ConsumerGroupDescribe: operations %d on a missing group", cg.AuthorizedOperations)
	}
	sg := authzShareDescribe(alice, "nope")
	checkCode(t, "ShareGroupDescribe of a missing group", sg.ErrorCode, protocol.GroupIDNotFound)
	if sg.AuthorizedOperations != math.MinInt32 {
		t.Errorf("ShareGroupDescribe: operations %d on a missing group", sg.AuthorizedOperations)
	}
}

func authzShareHeartbeat(w *wireConn, group, memberID string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.SetVersion(1)
	req.GroupID, req.MemberID, req.MemberEpoch = group, memberID, epoch
	if epoch == 0 {
		req.SubscribedTopicNames = topics
	}
	return w.mustRoundTrip(req).(*kmsg.ShareGroupHeartbeatResponse)
}

func authzShareDescribe(w *wireConn, group string) kmsg.ShareGroupDescribeResponseGroup {
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.SetVersion(1)
	req.GroupIDs, req.IncludeAuthorizedOperations = []string{group}, true
	return w.mustRoundTrip(req).(*kmsg.ShareGroupDescribeResponse).Groups[0]
}

// authzShareFetch opens member's share session (epoch 0) on partition 0 of
// each topic id and fetches without waiting.
func authzShareFetch(w *wireConn, group, member string, ids ...[16]byte) *kmsg.ShareFetchResponse {
	req := kmsg.NewPtrShareFetchRequest()
	req.SetVersion(1)
	req.GroupID, req.MemberID = kmsg.StringPtr(group), kmsg.StringPtr(member)
	req.MaxWaitMillis, req.MaxRecords, req.MaxBytes = 0, 100, 1<<20
	for _, id := range ids {
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = id
		rt.Partitions = []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}}
		req.Topics = append(req.Topics, rt)
	}
	return w.mustRoundTrip(req).(*kmsg.ShareFetchResponse)
}

// authzShareAck accepts offset 0 of partition 0 of topic id in member's
// session (epoch 1) and returns the request's and the partition's error.
func authzShareAck(w *wireConn, group, member string, id [16]byte) (int16, int16) {
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.SetVersion(1)
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr(member), 1
	rt := kmsg.NewShareAcknowledgeRequestTopic()
	rt.TopicID = id
	rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	rp.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{
		{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{1}}}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := w.mustRoundTrip(req).(*kmsg.ShareAcknowledgeResponse)
	part := int16(-100)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			part = p.ErrorCode
		}
	}
	return resp.ErrorCode, part
}

// authzShareOffsets describes group's share offsets of partition 0 of
// each topic (of all topics when topics is nil): the group's error and
// each topic's.
func authzShareOffsets(w *wireConn, group string, topics []string) (int16, map[string]int16) {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	req.SetVersion(1)
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = group
	for _, name := range topics {
		rg.Topics = append(rg.Topics, kmsg.DescribeShareGroupOffsetsRequestGroupTopic{Topic: name, Partitions: []int32{0}})
	}
	req.Groups = append(req.Groups, rg)
	g := w.mustRoundTrip(req).(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0]
	out := map[string]int16{}
	for _, t := range g.Topics {
		for _, p := range t.Partitions {
			out[t.Topic] = p.ErrorCode
		}
	}
	return g.ErrorCode, out
}

// authzShareAlter sets the start offset of partition 0 of each topic.
func authzShareAlter(w *wireConn, group string, topics ...string) (int16, map[string]int16) {
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = group
	for _, name := range topics {
		rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
		rt.Topic = name
		rt.Partitions = []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 0}}
		req.Topics = append(req.Topics, rt)
	}
	resp := w.mustRoundTrip(req).(*kmsg.AlterShareGroupOffsetsResponse)
	out := map[string]int16{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[t.Topic] = p.ErrorCode
		}
	}
	return resp.ErrorCode, out
}

func authzShareDelete(w *wireConn, group string, topics ...string) (int16, map[string]int16) {
	req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	req.GroupID = group
	for _, name := range topics {
		req.Topics = append(req.Topics, kmsg.DeleteShareGroupOffsetsRequestTopic{Topic: name})
	}
	resp := w.mustRoundTrip(req).(*kmsg.DeleteShareGroupOffsetsResponse)
	out := map[string]int16{}
	for _, t := range resp.Topics {
		out[t.Topic] = t.ErrorCode
	}
	return resp.ErrorCode, out
}

// TestAuthzGroupShare: the share group APIs check READ (or DESCRIBE, or
// DELETE) on the group for the whole request and READ or DESCRIBE on each
// topic where Kafka does, and the share state APIs need CLUSTER_ACTION.
func TestAuthzGroupShare(t *testing.T) {
	t.Parallel()
	b := startAuthzBroker(t)
	admin, alice, dave := dialWireAs(t, b, "admin"), dialWireAs(t, b, "alice"), dialWireAs(t, b, "dave")
	tID := admin.createTopic("t", 1, nil)
	secretID := admin.createTopic("secret", 1, nil)
	checkCode(t, "produce to secret", admin.producePartition(-1, "secret", 0, buildBatch(t, plainHeader(), "s", 3)).ErrorCode,
		protocol.None)
	authzGroupReady(t, admin, "sg")
	// admin's member subscribes the group to secret too.
	checkCode(t, "admin joins", authzShareHeartbeat(admin, "sg", "admin-m", 0, "secret").ErrorCode, protocol.None)

	runAuthzGroupCases(t, []authzGroupCase{
		{"ShareGroupHeartbeat", func() int16 { return authzShareHeartbeat(alice, "sg", "m1", 0, "t").ErrorCode },
			protocol.GroupAuthorizationFailed},
		{"ShareGroupDescribe", func() int16 { return authzShareDescribe(alice, "sg").ErrorCode }, protocol.GroupAuthorizationFailed},
		{"ShareFetch", func() int16 {
			resp := authzShareFetch(alice, "sg", "m1", tID)
			if len(resp.Topics) != 0 || resp.AcquisitionLockTimeoutMillis != 0 {
				t.Errorf("refused ShareFetch shows %+v", resp)
			}
			return resp.ErrorCode
		}, protocol.GroupAuthorizationFailed},
		{"ShareAcknowledge", func() int16 { code, _ := authzShareAck(alice, "sg", "m1", tID); return code },
			protocol.GroupAuthorizationFailed},
		{"DescribeShareGroupOffsets", func() int16 { code, _ := authzShareOffsets(alice, "sg", nil); return code },
			protocol.GroupAuthorizationFailed},
		{"AlterShareGroupOffsets", func() int16 { code, _ := authzShareAlter(alice, "sg", "t"); return code },
			protocol.GroupAuthorizationFailed},
		{"DeleteShareGroupOffsets", func() int16 { code, _ := authzShareDelete(alice, "sg", "t"); return code },
			protocol.GroupAuthorizationFailed},
		{"ReadShareGroupState", func() int16 {
			req := kmsg.NewPtrReadShareGroupStateRequest()
			req.GroupID = "sg"
			rt := kmsg.NewReadShareGroupStateRequestTopic()
			rt.TopicID = tID
			rt.Partitions = []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: 0}}
			req.Topics = append(req.Topics, rt)
			return alice.mustRoundTrip(req).(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode
		}, protocol.ClusterAuthorizationFailed},
	})

	// READ on the group, DESCRIBE (by READ) on t only.
	admin.createACLs(allow(acl.ResourceGroup, "sg", "User:alice", acl.OpRead),
		allow(acl.ResourceTopic, "t", "User:alice", acl.OpRead))
	checkCode(t, "heartbeat subscribing to secret", authzShareHeartbeat(alice, "sg", "m1", 0, "t", "secret").ErrorCode,
		protocol.TopicAuthorizationFailed)
	checkCode(t, "heartbeat subscribing to t", authzShareHeartbeat(alice, "sg", "m1", 0, "t").ErrorCode, protocol.None)

	// ShareGroupDescribe: once secret is assigned (to admin's member),
	// alice may not see the group.
	waitFor(t, 10*time.Second, "secret assigned", func() error {
		g := authzShareDescribe(admin, "sg")
		for _, m := range g.Members {
			for _, tp := range m.Assignment.TopicPartitions {
				if tp.Topic == "secret" {
					return nil
				}
			}
		}
		authzShareHeartbeat(admin, "sg", "admin-m", 1)
		return fmt.Errorf("members %+v", g.Members)
	})
	g := authzShareDescribe(alice, "sg")
	checkCode(t, "ShareGroupDescribe with secret assigned", g.ErrorCode, protocol.TopicAuthorizationFailed)
	if len(g.Members) != 0 {
		t.Errorf("group refused for its topics shows %d members", len(g.Members))
	}

	// ShareFetch and ShareAcknowledge: secret's partition is refused, t's
	// is served.
	resp := authzShareFetch(alice, "sg", "m1", tID, secretID)
	checkCode(t, "ShareFetch", resp.ErrorCode, protocol.None)
	refused := false
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			switch rt.TopicID {
			case secretID:
				refused = true
				checkCode(t, "ShareFetch secret", p.ErrorCode, protocol.TopicAuthorizationFailed)
				if len(p.AcquiredRecords) != 0 {
					t.Errorf("ShareFetch acquired %+v of secret", p.AcquiredRecords)
				}
			case tID:
				checkCode(t, "ShareFetch t", p.ErrorCode, protocol.None)
			}
		}
	}
	if !refused {
		t.Errorf("ShareFetch does not answer for secret: %+v", resp.Topics)
	}
	code, part := authzShareAck(alice, "sg", "m1", secretID)
	checkCode(t, "ShareAcknowledge", code, protocol.None)
	checkCode(t, "ShareAcknowledge secret", part, protocol.TopicAuthorizationFailed)

	// DescribeShareGroupOffsets: secret is refused when named, left out
	// when all topics are asked for.
	code, topics := authzShareOffsets(alice, "sg", []string{"t", "secret"})
	checkCode(t, "DescribeShareGroupOffsets", code, protocol.None)
	checkCode(t, "DescribeShareGroupOffsets t", topics["t"], protocol.None)
	checkCode(t, "DescribeShareGroupOffsets secret", topics["secret"], protocol.TopicAuthorizationFailed)
	if _, all := authzShareOffsets(admin, "sg", nil); len(all) != 2 {
		t.Errorf("admin's offsets of all topics: %v, want t and secret", all)
	}
	if code, all := authzShareOffsets(alice, "sg", nil); code != 0 || len(all) != 1 {
		t.Errorf("alice's offsets of all topics: %s %v, want t alone", protocol.ErrorCode(code), all)
	}
	code, _ = authzShareOffsets(dave, "sg", nil)
	checkCode(t, "DescribeShareGroupOffsets dave", code, protocol.GroupAuthorizationFailed)

	// Alter and Delete, on the group once empty: secret is refused.
	checkCode(t, "admin leaves", authzShareHeartbeat(admin, "sg", "admin-m", -1).ErrorCode, protocol.None)
	checkCode(t, "alice leaves", authzShareHeartbeat(alice, "sg", "m1", -1).ErrorCode, protocol.None)
	code, topics = authzShareAlter(alice, "sg", "secret")
	checkCode(t, "AlterShareGroupOffsets secret alone", code, protocol.None)
	checkCode(t, "AlterShareGroupOffsets secret alone: secret", topics["secret"], protocol.TopicAuthorizationFailed)
	code, topics = authzShareAlter(alice, "sg", "t", "secret")
	checkCode(t, "AlterShareGroupOffsets", code, protocol.None)
	checkCode(t, "AlterShareGroupOffsets t", topics["t"], protocol.None)
	checkCode(t, "AlterShareGroupOffsets secret", topics["secret"], protocol.TopicAuthorizationFailed)
	code, _ = authzShareDelete(alice, "sg", "t")
	checkCode(t, "DeleteShareGroupOffsets without DELETE", code, protocol.GroupAuthorizationFailed)
	admin.createACLs(allow(acl.ResourceGroup, "sg", "User:alice", acl.OpDelete))
	code, topics = authzShareDelete(alice, "sg", "t", "secret")
	checkCode(t, "DeleteShareGroupOffsets", code, protocol.None)
	checkCode(t, "DeleteShareGroupOffsets t", topics["t"], protocol.None)
	checkCode(t, "DeleteShareGroupOffsets secret", topics["secret"], protocol.TopicAuthorizationFailed)

	// The share state APIs: a principal with CLUSTER_ACTION is served.
	admin.createACLs(allow(acl.ResourceCluster, acl.ClusterName, "User:alice", acl.OpClusterAction))
	req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	req.GroupID = "sg"
	rt := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	rt.TopicID = tID
	rt.Partitions = []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: 0}}
	req.Topics = append(req.Topics, rt)
	summary := alice.mustRoundTrip(req).(*kmsg.ReadShareGroupStateSummaryResponse)
	if code := summary.Topics[0].Partitions[0].ErrorCode; code == int16(protocol.ClusterAuthorizationFailed) {
		t.Errorf("ReadShareGroupStateSummary with CLUSTER_ACTION: %s", protocol.ErrorCode(code))
	}
}
