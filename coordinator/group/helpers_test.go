package group

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// t0 is the start of every scenario's fake clock.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// harness drives a Coordinator as the broker's driver would: it appends
// every Output's records (always successfully, unless told otherwise),
// collects responses by token and calls Tick at each NextTick while time is
// advanced.
type harness struct {
	t       *testing.T
	cfg     Config
	c       *Coordinator
	now     time.Time
	next    time.Time
	records []Record
	// log is everything appended to the partition in order, transactional
	// batches and markers included, for replay.
	log   []logEntry
	resps map[int]kmsg.Response
	token int
}

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Rand = rand.NewChaCha8([32]byte{1})
	return cfg
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h := &harness{t: t, cfg: cfg, c: c, now: t0, resps: make(map[int]kmsg.Response)}
	h.take(c.Loaded(t0))
	return h
}

// take plays the driver for one Output.
func (h *harness) take(out Output) Output {
	h.records = append(h.records, out.Records...)
	for _, r := range out.Records {
		h.log = append(h.log, logEntry{producerID: -1, rec: r})
	}
	if out.Txn != nil {
		for _, r := range out.Txn.Records {
			h.log = append(h.log, logEntry{producerID: out.Txn.ProducerID, rec: r})
		}
	}
	for _, r := range out.Responses {
		// Every response must encode and decode at its version.
		back := r.Body.RequestKind().ResponseKind()
		back.SetVersion(r.Body.GetVersion())
		if err := back.ReadFrom(r.Body.AppendTo(nil)); err != nil {
			h.t.Fatalf("%T v%d does not round-trip: %v", r.Body, r.Body.GetVersion(), err)
		}
		tok := r.Token.(int)
		if _, dup := h.resps[tok]; dup {
			h.t.Fatalf("token %d answered twice", tok)
		}
		h.resps[tok] = r.Body
	}
	h.next = out.NextTick
	return out
}

// send steps one request and returns its token.
func (h *harness) send(clientID string, req kmsg.Request) int {
	h.t.Helper()
	h.token++
	h.take(h.c.Step(h.now, Input{
		Token:      h.token,
		Version:    req.GetVersion(),
		ClientID:   clientID,
		ClientHost: "/127.0.0.1",
		Request:    req,
	}))
	return h.token
}

// advance moves the clock by d, ticking at every NextTick on the way.
func (h *harness) advance(d time.Duration) {
	target := h.now.Add(d)
	for !h.next.IsZero() && !h.next.After(target) {
		h.now = h.next
		h.take(h.c.Tick(h.now))
	}
	h.now = target
}

// answered reports whether token has a response.
func (h *harness) answered(token int) bool {
	_, ok := h.resps[token]
	return ok
}

func response[T kmsg.Response](h *harness, token int) T {
	h.t.Helper()
	r, ok := h.resps[token]
	if !ok {
		h.t.Fatalf("token %d: no response yet", token)
	}
	typed, ok := r.(T)
	if !ok {
		h.t.Fatalf("token %d: response is %T", token, r)
	}
	return typed
}

func wantCode(t *testing.T, what string, got, want int16) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: error code %d, want %d", what, got, want)
	}
}

// ---- a simulated consumer ----

// consumer is one group member as a client library drives it.
type consumer struct {
	h          *harness
	clientID   string
	group      string
	instance   *string
	topics     []string
	memberID   string
	generation int32
	version    int16 // JoinGroup version
	sessionMs  int32
	rebalance  int32
	protocols  []string // names offered, in preference order
}

func (h *harness) consumer(group, clientID string, topics ...string) *consumer {
	return &consumer{
		h: h, clientID: clientID, group: group, topics: topics, generation: -1,
		version: 9, sessionMs: 10_000, rebalance: 30_000, protocols: []string{"range"},
	}
}

func (cl *consumer) static(instance string) *consumer {
	cl.instance = &instance
	return cl
}

func subscription(topics ...string) []byte {
	m := kmsg.ConsumerMemberMetadata{Version: 3, Topics: topics, Generation: -1}
	return m.AppendTo(nil)
}

func assignment(topic string, partitions ...int32) []byte {
	a := kmsg.ConsumerMemberAssignment{Version: 0, Topics: []kmsg.ConsumerMemberAssignmentTopic{{Topic: topic, Partitions: partitions}}}
	return a.AppendTo(nil)
}

func (cl *consumer) joinRequest() *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = cl.version
	req.Group = cl.group
	req.SessionTimeoutMillis = cl.sessionMs
	req.RebalanceTimeoutMillis = cl.rebalance
	req.MemberID = cl.memberID
	req.InstanceID = cl.instance
	req.ProtocolType = "consumer"
	for _, p := range cl.protocols {
		req.Protocols = append(req.Protocols, kmsg.JoinGroupRequestProtocol{Name: p, Metadata: subscription(cl.topics...)})
	}
	return req
}

// join sends a JoinGroup and returns its token.
func (cl *consumer) join() int { return cl.h.send(cl.clientID, cl.joinRequest()) }

// joined reads the JoinGroup response of token, which must have succeeded,
// and adopts its member id and generation.
func (cl *consumer) joined(token int) *kmsg.JoinGroupResponse {
	cl.h.t.Helper()
	r := response[*kmsg.JoinGroupResponse](cl.h, token)
	wantCode(cl.h.t, cl.clientID+" JoinGroup", r.ErrorCode, errNone)
	cl.memberID, cl.generation = r.MemberID, r.Generation
	return r
}

// joinFully does the KIP-394 dance for a dynamic member: a first JoinGroup
// gets MEMBER_ID_REQUIRED with the id; the second is parked. It returns the
// second's token.
func (cl *consumer) joinFully() int {
	cl.h.t.Helper()
	if cl.memberID == "" && cl.instance == nil && cl.version >= 4 {
		tok := cl.join()
		r := response[*kmsg.JoinGroupResponse](cl.h, tok)
		wantCode(cl.h.t, cl.clientID+" first JoinGroup", r.ErrorCode, errMemberIDRequired)
		cl.memberID = r.MemberID
	}
	return cl.join()
}

func (cl *consumer) syncRequest(assignments map[string][]byte) *kmsg.SyncGroupRequest {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 5
	req.Group = cl.group
	req.Generation = cl.generation
	req.MemberID = cl.memberID
	req.InstanceID = cl.instance
	req.ProtocolType = strPtr("consumer")
	req.Protocol = strPtr(cl.protocols[0])
	for id, a := range assignments {
		req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: a})
	}
	return req
}

func (cl *consumer) sync(assignments map[string][]byte) int {
	return cl.h.send(cl.clientID, cl.syncRequest(assignments))
}

func (cl *consumer) heartbeat() int16 {
	cl.h.t.Helper()
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 4
	req.Group = cl.group
	req.Generation = cl.generation
	req.MemberID = cl.memberID
	req.InstanceID = cl.instance
	return response[*kmsg.HeartbeatResponse](cl.h, cl.h.send(cl.clientID, req)).ErrorCode
}

func (cl *consumer) leave() *kmsg.LeaveGroupResponse {
	cl.h.t.Helper()
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = 5
	req.Group = cl.group
	req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: cl.memberID, InstanceID: cl.instance}}
	return response[*kmsg.LeaveGroupResponse](cl.h, cl.h.send(cl.clientID, req))
}

// commit commits offset to partition 0.. of topic, one partition per offset.
func (cl *consumer) commit(version int16, topic string, offsets ...int64) *kmsg.OffsetCommitResponse {
	cl.h.t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = version
	req.Group = cl.group
	req.Generation = cl.generation
	req.MemberID = cl.memberID
	req.InstanceID = cl.instance
	rt := kmsg.OffsetCommitRequestTopic{Topic: topic}
	for p, o := range offsets {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = int32(p), o
		rp.LeaderEpoch = 5
		rp.Metadata = strPtr(fmt.Sprintf("meta-%d", o))
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
	return response[*kmsg.OffsetCommitResponse](cl.h, cl.h.send(cl.clientID, req))
}

// ---- whole-group helpers ----

// stabilize runs a full eager rebalance of members from scratch (or from
// PreparingRebalance): every member joins, time passes until the join
// phase ends, the leader assigns partition i of topic "t" to member i and
// every member syncs. It returns the leader.
func (h *harness) stabilize(members ...*consumer) *consumer {
	h.t.Helper()
	tokens := make([]int, len(members))
	for i, m := range members {
		tokens[i] = m.joinFully()
	}
	h.waitAnswered(tokens...)
	var leader *consumer
	for i, m := range members {
		r := m.joined(tokens[i])
		if r.LeaderID == m.memberID {
			leader = m
		}
	}
	if leader == nil {
		h.t.Fatalf("no member was told it leads")
	}
	assign := make(map[string][]byte)
	for i, m := range members {
		assign[m.memberID] = assignment("t", int32(i))
	}
	syncs := make([]int, len(members))
	for i, m := range members {
		if m != leader {
			syncs[i] = m.sync(nil)
		}
	}
	for i, m := range members {
		if m == leader {
			syncs[i] = m.sync(assign)
		}
	}
	for i, m := range members {
		r := response[*kmsg.SyncGroupResponse](h, syncs[i])
		wantCode(h.t, m.clientID+" SyncGroup", r.ErrorCode, errNone)
	}
	return leader
}

// waitAnswered advances time, in steps of 100ms up to a minute, until every
// token has a response.
func (h *harness) waitAnswered(tokens ...int) {
	h.t.Helper()
	for i := 0; i < 600; i++ {
		all := true
		for _, tok := range tokens {
			all = all && h.answered(tok)
		}
		if all {
			return
		}
		h.advance(100 * time.Millisecond)
	}
	h.t.Fatalf("tokens %v not all answered after a minute", tokens)
}

func (h *harness) describe(groups ...string) []kmsg.DescribeGroupsResponseGroup {
	h.t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version = 5
	req.Groups = groups
	return response[*kmsg.DescribeGroupsResponse](h, h.send("admin", req)).Groups
}

func (h *harness) state(group string) string {
	h.t.Helper()
	return h.describe(group)[0].State
}

func (h *harness) wantState(group, want string) {
	h.t.Helper()
	if got := h.state(group); got != want {
		h.t.Fatalf("group %s is %s, want %s", group, got, want)
	}
}

// fetchAll fetches every committed offset of groups with OffsetFetch v8.
func (h *harness) fetchAll(groups ...string) []kmsg.OffsetFetchResponseGroup {
	h.t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	for _, g := range groups {
		req.Groups = append(req.Groups, kmsg.OffsetFetchRequestGroup{Group: g})
	}
	return response[*kmsg.OffsetFetchResponse](h, h.send("admin", req)).Groups
}

func deepEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

// fakeTopics is a Topics with fixed topics.
type fakeTopics map[string]struct {
	id         [16]byte
	partitions int32
}

func (f fakeTopics) TopicByName(name string) ([16]byte, int32, bool) {
	t, ok := f[name]
	return t.id, t.partitions, ok
}

func (f fakeTopics) TopicByID(id [16]byte) (string, int32, bool) {
	for n, t := range f {
		if t.id == id {
			return n, t.partitions, true
		}
	}
	return "", 0, false
}
