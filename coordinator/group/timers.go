package group

import (
	"container/heap"
	"time"
)

// timerKind says what a timer does when it fires.
type timerKind uint8

const (
	// timerHeartbeat expires a member (or a pending member) whose session
	// timed out. Keyed by group and member.
	timerHeartbeat timerKind = iota
	// timerJoin ends the join phase of a rebalance: either the initial
	// rebalance delay of a group leaving Empty, or the rebalance timeout.
	// Keyed by group.
	timerJoin
	// timerSync removes members that got a JoinGroup response but did not
	// send SyncGroup within the rebalance timeout. Keyed by group.
	timerSync
	// timerExpiry looks for expired offsets and dead groups. One for the
	// whole coordinator.
	timerExpiry
	// timerConsumerSession fences a consumer group member whose session
	// timed out (group.consumer.session.timeout.ms). Keyed by group and
	// member.
	timerConsumerSession
	// timerConsumerRebalance fences a consumer group member that did not
	// revoke its partitions within its rebalance timeout. Keyed by group
	// and member; generation holds the member epoch it was set at.
	timerConsumerRebalance
	// timerShareSession removes a share group member whose session timed
	// out (group.share.session.timeout.ms). Keyed by group and member.
	timerShareSession
)

// timerKey names a timer; scheduling a key that is already scheduled
// replaces it, as Kafka's coordinator timer does.
type timerKey struct {
	kind   timerKind
	group  string
	member string
}

// timer is one scheduled callback. The payload fields are those of its kind.
type timer struct {
	key   timerKey
	at    time.Time
	seq   uint64 // scheduling order: ties on at fire in this order
	index int    // position in the heap

	// timerJoin: initial is set during the initial rebalance delay, which
	// has delay and remaining to compute its extensions.
	initial          bool
	delay, remaining time.Duration
	// timerSync: the generation the sync phase belongs to.
	generation int32
}

// timers is a priority queue of timers by deadline, with lookup by key.
// Nothing here reads a clock: the coordinator pops what is due at the time
// it is given.
type timers struct {
	byKey map[timerKey]*timer
	queue timerQueue
	seq   uint64
}

func newTimers() timers {
	return timers{byKey: make(map[timerKey]*timer)}
}

// schedule arms t (replacing any timer of the same key) to fire at t.at.
func (ts *timers) schedule(t *timer) {
	ts.cancel(t.key)
	ts.seq++
	t.seq = ts.seq
	ts.byKey[t.key] = t
	heap.Push(&ts.queue, t)
}

// cancel disarms the timer of key, if any.
func (ts *timers) cancel(key timerKey) {
	t, ok := ts.byKey[key]
	if !ok {
		return
	}
	delete(ts.byKey, key)
	heap.Remove(&ts.queue, t.index)
}

// popDue removes and returns the earliest timer due at now, or nil.
func (ts *timers) popDue(now time.Time) *timer {
	if len(ts.queue) == 0 || ts.queue[0].at.After(now) {
		return nil
	}
	t := heap.Pop(&ts.queue).(*timer)
	delete(ts.byKey, t.key)
	return t
}

// next returns the earliest deadline, or the zero time when nothing is armed.
func (ts *timers) next() time.Time {
	if len(ts.queue) == 0 {
		return time.Time{}
	}
	return ts.queue[0].at
}

// timerQueue implements heap.Interface ordered by (at, seq).
type timerQueue []*timer

func (q timerQueue) Len() int { return len(q) }

func (q timerQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}

func (q timerQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index = i
	q[j].index = j
}

func (q *timerQueue) Push(x any) {
	t := x.(*timer)
	t.index = len(*q)
	*q = append(*q, t)
}

func (q *timerQueue) Pop() any {
	old := *q
	n := len(old)
	t := old[n-1]
	old[n-1] = nil
	t.index = -1
	*q = old[:n-1]
	return t
}
