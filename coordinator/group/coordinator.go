package group

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Coordinator is the group coordinator of one __consumer_offsets partition:
// every classic group whose id hashes to that partition (PartitionFor), and
// the offsets those groups committed.
//
// It is a state machine: it starts no goroutine, reads no clock and does no
// I/O. Every call takes the current time; every result is an Output for the
// driver to act on. It is not safe for concurrent use: one driver goroutine
// owns it. See the package documentation for the driver's rules.
type Coordinator struct {
	cfg    Config
	rand   io.Reader
	phase  phase
	groups map[string]*group
	// shares are the share groups (share.go), by id; an id is in groups
	// or in shares, never both.
	shares map[string]*shareGroup
	timers timers

	// txnGroups indexes the groups with offsets of each producer's open
	// transaction (group.txns), for the transaction's marker.
	txnGroups map[int64]map[string]bool
	// ordinal is the last offset ordinal handed out (nextOrdinal).
	ordinal int64

	now time.Time // the time given to the call in progress
	out Output    // what the call in progress produced so far
}

type phase uint8

const (
	phaseLoading phase = iota // Replay allowed; requests get COORDINATOR_LOAD_IN_PROGRESS
	phaseActive               // after Loaded
	phaseFenced               // after Unload or AppendFailed; requests get NOT_COORDINATOR
)

// Input is one request for the coordinator.
type Input struct {
	// Token is the driver's handle for the request; the Response to it
	// carries the same Token. The coordinator never looks inside.
	Token any

	// Version is the request's API version. Step sets it on Request too,
	// and answers with a response of the same version.
	Version int16

	// ClientID and ClientHost are the request header's client id and the
	// peer's address. Kafka reports hosts as Java's InetAddress.toString,
	// "/10.1.2.3"; pass that form to show the same in DescribeGroups.
	ClientID   string
	ClientHost string

	// Request is the decoded body: a *kmsg.JoinGroupRequest,
	// SyncGroupRequest, HeartbeatRequest, LeaveGroupRequest,
	// OffsetCommitRequest, OffsetFetchRequest, DescribeGroupsRequest,
	// ListGroupsRequest, DeleteGroupsRequest, OffsetDeleteRequest or
	// TxnOffsetCommitRequest.
	// Multi-group requests (DescribeGroups, DeleteGroups, OffsetFetch v8+)
	// must hold only groups of this coordinator's partition; the driver
	// splits them and merges the responses.
	Request kmsg.Request

	// AuthorizedOperations returns the bit field of ACL operations the
	// client may perform on a group, for DescribeGroups v3+ when the
	// request asks for it. Nil means no authorizer: all group operations
	// (READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS).
	AuthorizedOperations func(group string) int32

	// TopicDescribable reports, for a ConsumerGroupHeartbeat, whether the
	// member may describe a topic: the topics its regular expression
	// matches are only those, as Kafka's coordinator resolves them. The
	// member keeps the last one it heartbeated with (in memory only: after
	// a load, all matches count until its next heartbeat). Nil means no
	// authorizer: every topic.
	TopicDescribable func(topic string) bool
}

// Record is a record for the coordinator's __consumer_offsets partition. A
// nil Value is a tombstone. The formats are in the package documentation.
type Record struct {
	Key   []byte
	Value []byte
}

// Response is the answer to the Input that had the same Token. Body's
// version is the request's.
type Response struct {
	Token any
	Body  kmsg.Response
}

// Output is what one call produced.
type Output struct {
	// Records must be appended to the partition, in order, as one batch.
	Records []Record
	// Txn, when set, must be appended after Records as one transactional
	// batch of its producer (see TxnRecords), before any later Output's
	// records and before the next Step: if the partition refuses the
	// producer, TxnAppendFailed reverts it.
	Txn *TxnRecords
	// Responses may be sent once Records, and the Records of every earlier
	// Output, are durable. If the append fails, pass Responses to
	// AppendFailed and send what it returns instead.
	Responses []Response
	// NextTick is when Tick must be called next: the earliest armed timer.
	// The zero time means no timer is armed.
	NextTick time.Time
}

// allGroupOperations is the DescribeGroups bit field Kafka reports without
// an authorizer: READ (3), DELETE (6), DESCRIBE (8), DESCRIBE_CONFIGS (10)
// and ALTER_CONFIGS (11).
const allGroupOperations int32 = 1<<3 | 1<<6 | 1<<8 | 1<<10 | 1<<11

// New returns a coordinator that is loading: feed it the partition's records
// with Replay, then call Loaded. Until then every request is answered with
// COORDINATOR_LOAD_IN_PROGRESS.
func New(cfg Config) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := cfg.Rand
	if r == nil {
		r = rand.Reader
	}
	return &Coordinator{
		cfg:       cfg,
		rand:      r,
		groups:    make(map[string]*group),
		shares:    make(map[string]*shareGroup),
		timers:    newTimers(),
		txnGroups: make(map[int64]map[string]bool),
	}, nil
}

// Loaded ends loading: members loaded from the log get a full session to
// heartbeat from now, groups over group.max.size start a rebalance, and the
// offset expiration timer starts. Requests are served from now on. Calling
// it again does nothing.
func (c *Coordinator) Loaded(now time.Time) Output {
	c.now = now
	if c.phase != phaseLoading {
		return c.flush()
	}
	c.phase = phaseActive
	for _, id := range c.sortedGroupIDs() {
		g := c.groups[id]
		if g.consumer != nil {
			c.startConsumerSessions(g)
			continue
		}
		for _, mid := range g.order {
			c.scheduleHeartbeat(g, mid, millis(g.members[mid].sessionTimeoutMs))
		}
		if len(g.members) > int(c.cfg.MaxSize) {
			// The limit may have been lowered; rebalancing lets the
			// members commit before the extra ones are dropped.
			c.prepareRebalance(g)
		}
	}
	c.timers.schedule(&timer{key: timerKey{kind: timerExpiry}, at: now.Add(c.cfg.OffsetsRetentionCheckInterval)})
	return c.flush()
}

// Step handles one request. Timers that are due at now fire first, as they
// would have in Kafka before the request arrived. The response may be in the
// returned Output or, for a JoinGroup or SyncGroup that must wait for the
// rest of the group, in the Output of a later Step or Tick.
//
// Step panics on a request type the coordinator does not handle (see
// Input.Request); that is a bug in the driver.
func (c *Coordinator) Step(now time.Time, in Input) Output {
	c.now = now
	in.Request.SetVersion(in.Version)
	switch c.phase {
	case phaseLoading:
		code := errCoordinatorLoadInProgress
		if _, ok := in.Request.(*kmsg.HeartbeatRequest); ok {
			// Kafka answers heartbeats blindly while loading: the
			// member's session starts over once the group is loaded.
			code = errNone
		}
		c.respond(in.Token, errorResponse(in.Request, code))
		return c.flush()
	case phaseFenced:
		c.respond(in.Token, errorResponse(in.Request, errNotCoordinator))
		return c.flush()
	}
	c.fireDue()
	if c.shareGroupConflict(in) {
		return c.flush()
	}
	switch req := in.Request.(type) {
	case *kmsg.JoinGroupRequest:
		c.joinGroup(in, req)
	case *kmsg.SyncGroupRequest:
		c.syncGroup(in, req)
	case *kmsg.HeartbeatRequest:
		c.heartbeat(in, req)
	case *kmsg.LeaveGroupRequest:
		c.leaveGroup(in, req)
	case *kmsg.OffsetCommitRequest:
		c.offsetCommit(in, req)
	case *kmsg.OffsetFetchRequest:
		c.offsetFetch(in, req)
	case *kmsg.OffsetDeleteRequest:
		c.offsetDelete(in, req)
	case *kmsg.DescribeGroupsRequest:
		c.describeGroups(in, req)
	case *kmsg.ListGroupsRequest:
		c.listGroups(in, req)
	case *kmsg.DeleteGroupsRequest:
		c.deleteGroups(in, req)
	case *kmsg.TxnOffsetCommitRequest:
		c.txnOffsetCommit(in, req)
	case *kmsg.ConsumerGroupHeartbeatRequest:
		c.consumerGroupHeartbeat(in, req)
	case *kmsg.ConsumerGroupDescribeRequest:
		c.consumerGroupDescribe(in, req)
	case *kmsg.ShareGroupHeartbeatRequest:
		c.shareGroupHeartbeat(in, req)
	case *kmsg.ShareGroupDescribeRequest:
		c.shareGroupDescribe(in, req)
	default:
		panic(fmt.Sprintf("group: Step given unsupported request %T", in.Request))
	}
	return c.flush()
}

// Handles reports whether Step takes requests of this API key.
func Handles(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat, kmsg.LeaveGroup,
		kmsg.OffsetCommit, kmsg.OffsetFetch, kmsg.OffsetDelete,
		kmsg.DescribeGroups, kmsg.ListGroups, kmsg.DeleteGroups,
		kmsg.TxnOffsetCommit, kmsg.ConsumerGroupHeartbeat, kmsg.ConsumerGroupDescribe,
		kmsg.ShareGroupHeartbeat, kmsg.ShareGroupDescribe:
		return true
	}
	return false
}

// Tick fires every timer due at now: session expiry, rebalance and sync
// timeouts, the initial rebalance delay and offset expiration.
func (c *Coordinator) Tick(now time.Time) Output {
	c.now = now
	if c.phase == phaseActive {
		c.fireDue()
	}
	return c.flush()
}

// AppendFailed is called when the Records of an Output could not be made
// durable; code is the Kafka error code of the failed append (0 if there is
// none). It returns what to send instead of that Output's Responses: the
// same responses failed with the code Kafka gives clients for that append
// error (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR or
// UNKNOWN_SERVER_ERROR), followed by NOT_COORDINATOR for every request
// still parked in the coordinator.
//
// The coordinator applied the Output's changes in memory when it produced
// it, so its memory is now ahead of the log. Rather than undo them it fences
// itself, as if unloaded: from now on every request gets NOT_COORDINATOR and
// Tick does nothing. The driver drops it and, if the broker still leads the
// partition, loads a new Coordinator from the log. Responses of later
// Outputs that were not sent yet must be passed through AppendFailed too.
func (c *Coordinator) AppendFailed(failed []Response, code int16) []Response {
	mapped := appendErrorCode(code)
	out := make([]Response, 0, len(failed))
	for _, r := range failed {
		out = append(out, Response{Token: r.Token, Body: failResponse(r.Body, mapped)})
	}
	return append(out, c.Unload()...)
}

// Unload is called when the broker stops leading the partition. It answers
// every parked JoinGroup and SyncGroup with NOT_COORDINATOR, so the clients
// look up the new coordinator, and fences the coordinator: later requests
// get NOT_COORDINATOR.
func (c *Coordinator) Unload() []Response {
	c.phase = phaseFenced
	var out []Response
	for _, id := range c.sortedGroupIDs() {
		g := c.groups[id]
		for _, mid := range g.order {
			m := g.members[mid]
			if w := g.takeJoin(m); w != nil {
				r := joinResponse(w, errNotCoordinator)
				r.MemberID = m.id
				out = append(out, Response{Token: w.token, Body: r})
			}
			if w := m.sync; w != nil {
				m.sync = nil
				out = append(out, Response{Token: w.token, Body: syncResponse(w, errNotCoordinator)})
			}
		}
	}
	c.groups = make(map[string]*group)
	c.shares = make(map[string]*shareGroup)
	c.txnGroups = make(map[int64]map[string]bool)
	c.timers = newTimers()
	return out
}

// DeleteTopicOffsets writes tombstones for every offset committed on the
// given topics, and for the offsets open transactions committed on them,
// for the broker to call when topics are deleted (Kafka's
// onPartitionsDeleted). It does nothing unless the coordinator is loaded.
func (c *Coordinator) DeleteTopicOffsets(now time.Time, topics ...string) Output {
	c.now = now
	if c.phase != phaseActive {
		return c.flush()
	}
	for _, id := range c.sortedGroupIDs() {
		g := c.groups[id]
		for _, t := range topics {
			for _, p := range g.sortedPartitions(t) {
				g.deleteOffset(t, p)
				g.dropPending(t, p)
				c.emit(offsetTombstone(g.id, t, p))
			}
		}
		for _, tp := range g.pendingPartitions(func(t string) bool { return slices.Contains(topics, t) }) {
			g.dropPending(tp.topic, tp.partition)
			c.emit(offsetTombstone(g.id, tp.topic, tp.partition))
		}
	}
	return c.flush()
}

// RangeOffsets calls fn for every committed offset, by group, topic and
// partition, until fn returns false. It is meant for lag metrics, from the
// driver goroutine.
func (c *Coordinator) RangeOffsets(fn func(group, topic string, partition int32, offset int64) bool) {
	for _, id := range c.sortedGroupIDs() {
		g := c.groups[id]
		for _, t := range g.sortedTopics() {
			for _, p := range g.sortedPartitions(t) {
				if !fn(id, t, p, g.offsets[t][p].offset) {
					return
				}
			}
		}
	}
}

// fireDue fires timers due at c.now in deadline order, including timers
// that firing schedules. Every delay is at least a millisecond (see after),
// so this ends.
func (c *Coordinator) fireDue() {
	for {
		t := c.timers.popDue(c.now)
		if t == nil {
			return
		}
		switch t.key.kind {
		case timerHeartbeat:
			c.expireHeartbeat(t.key.group, t.key.member)
		case timerJoin:
			if t.initial {
				c.initialDelayExpired(t.key.group, t.delay, t.remaining)
			} else if g := c.groups[t.key.group]; g != nil {
				c.completeJoin(g)
			}
		case timerSync:
			c.syncExpired(t.key.group, t.generation)
		case timerExpiry:
			c.expireOffsets()
			c.timers.schedule(&timer{key: t.key, at: c.now.Add(c.cfg.OffsetsRetentionCheckInterval)})
		case timerConsumerSession:
			c.consumerSessionExpired(t.key.group, t.key.member)
		case timerConsumerRebalance:
			c.consumerRebalanceExpired(t.key.group, t.key.member, t.generation)
		case timerShareSession:
			c.shareSessionExpired(t.key.group, t.key.member)
		}
	}
}

// after returns the deadline d from now. Delays below a millisecond (a zero
// initial rebalance delay, a zero rebalance timeout) become one, so a timer
// never fires in the same call that armed it and fireDue always ends.
func (c *Coordinator) after(d time.Duration) time.Time {
	if d < time.Millisecond {
		d = time.Millisecond
	}
	return c.now.Add(d)
}

// millis converts a protocol timeout in milliseconds.
func millis(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }

func (c *Coordinator) nowMs() int64 { return c.now.UnixMilli() }

func (c *Coordinator) scheduleHeartbeat(g *group, memberID string, d time.Duration) {
	c.timers.schedule(&timer{
		key: timerKey{kind: timerHeartbeat, group: g.id, member: memberID},
		at:  c.after(d),
	})
}

func (c *Coordinator) cancelHeartbeat(g *group, memberID string) {
	c.timers.cancel(timerKey{kind: timerHeartbeat, group: g.id, member: memberID})
}

// dropGroup removes a group that became Dead, with its timers.
func (c *Coordinator) dropGroup(g *group) {
	g.transition(StateDead, c.nowMs())
	delete(c.groups, g.id)
	c.forgetTxns(g)
	c.timers.cancel(timerKey{kind: timerJoin, group: g.id})
	c.timers.cancel(timerKey{kind: timerSync, group: g.id})
	for _, id := range g.order {
		c.cancelHeartbeat(g, id)
	}
	for id := range g.pending {
		c.cancelHeartbeat(g, id)
	}
	if g.consumer != nil {
		for id := range g.consumer.members {
			c.timers.cancel(timerKey{kind: timerConsumerSession, group: g.id, member: id})
			c.timers.cancel(timerKey{kind: timerConsumerRebalance, group: g.id, member: id})
		}
	}
}

func (c *Coordinator) respond(token any, body kmsg.Response) {
	c.out.Responses = append(c.out.Responses, Response{Token: token, Body: body})
}

func (c *Coordinator) emit(r Record) { c.out.Records = append(c.out.Records, r) }

// flush returns what the call produced and starts a new Output.
func (c *Coordinator) flush() Output {
	out := c.out
	c.out = Output{}
	out.NextTick = c.timers.next()
	return out
}

func (c *Coordinator) sortedGroupIDs() []string {
	ids := make([]string, 0, len(c.groups))
	for id := range c.groups {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// randomUUID returns a random (version 4) UUID.
func (c *Coordinator) randomUUID() [16]byte {
	var u [16]byte
	if _, err := io.ReadFull(c.rand, u[:]); err != nil {
		panic(fmt.Sprintf("group: reading randomness for a member id: %v", err))
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}

// newMemberID returns prefix + "-" + a random (version 4) UUID, the form of
// Kafka's member ids.
func (c *Coordinator) newMemberID(prefix string) string {
	u := c.randomUUID()
	h := hex.EncodeToString(u[:])
	return prefix + "-" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
