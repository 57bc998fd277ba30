package replication

import (
	"slices"
	"time"
)

// Leader is the replication state of a partition this broker leads, for
// one leader epoch: a new epoch (or a new replica set) starts a new Leader.
// It is not safe for concurrent use; the broker holds a lock around it.
type Leader struct {
	self     int32
	replicas []int32
	isr      []int32
	// epochStart is the leader's log end offset when it became leader: a
	// follower joins the ISR only once it has reached it, so that it holds
	// everything of the previous epochs the leader kept.
	epochStart int64
	hw         int64
	followers  map[int32]*follower
	// pending is an ISR proposal of this leader that may be in the
	// registry before the leader knows it: the high watermark counts its
	// members as well as the ISR's (KIP-497's "maximal ISR"), so that a
	// follower joining is never in the registry's ISR, electable, while it
	// lacks records below the high watermark.
	pending []int32
}

// follower is what the leader knows of one follower.
type follower struct {
	// leo is the follower's log end offset, as its last fetch offset said;
	// -1 until it fetches under this epoch.
	leo int64
	// caughtUp is the last time its log end offset reached the leader's.
	caughtUp time.Time
	// lastFetch and leaderEndAtLastFetch are its previous fetch's time and
	// the leader's log end offset then: a fetch that reaches that offset
	// shows the follower was caught up at that time.
	lastFetch            time.Time
	leaderEndAtLastFetch int64
}

// NewLeader starts the state of a leadership taken at now, with the log end
// offset leo and high watermark hw of the leader's log. Every ISR member
// counts as caught up at now, so that none is dropped before it had
// replica.lag.time.max.ms to fetch from the new leader.
func NewLeader(self int32, replicas, isr []int32, leo, hw int64, now time.Time) *Leader {
	l := &Leader{self: self, replicas: slices.Clone(replicas), isr: slices.Clone(isr),
		epochStart: leo, hw: hw, followers: map[int32]*follower{}}
	for _, r := range replicas {
		if r == self {
			continue
		}
		f := &follower{leo: -1, leaderEndAtLastFetch: -1}
		if slices.Contains(isr, r) {
			f.caughtUp = now
		}
		l.followers[r] = f
	}
	return l
}

// SetISR records the ISR the registry holds now (after a proposal of this
// leader was written, or the controller removed a broker).
func (l *Leader) SetISR(isr []int32) { l.isr = slices.Clone(isr) }

// SetPending records an ISR proposal being written, or, with nil, that
// none may be in the registry other than the ISR set by SetISR.
func (l *Leader) SetPending(isr []int32) { l.pending = slices.Clone(isr) }

// Pending returns the proposal SetPending recorded, nil for none.
func (l *Leader) Pending() []int32 { return slices.Clone(l.pending) }

// ISR returns the ISR this leader works with.
func (l *Leader) ISR() []int32 { return slices.Clone(l.isr) }

// IsReplica reports whether id is a follower of this partition.
func (l *Leader) IsReplica(id int32) bool {
	_, ok := l.followers[id]
	return ok
}

// Fetched records a fetch of follower id at fetchOffset, made at now while
// the leader's log ended at leaderEnd. fetchOffset is the follower's log
// end offset: it asks for what follows what it has (and has made durable,
// in durable mode). It reports false for a broker that is not a follower.
func (l *Leader) Fetched(id int32, fetchOffset, leaderEnd int64, now time.Time) bool {
	f, ok := l.followers[id]
	if !ok {
		return false
	}
	f.leo = fetchOffset
	switch {
	case fetchOffset >= leaderEnd:
		f.caughtUp = now
	case fetchOffset >= f.leaderEndAtLastFetch && f.leaderEndAtLastFetch >= 0:
		f.caughtUp = maxTime(f.caughtUp, f.lastFetch)
	}
	f.lastFetch, f.leaderEndAtLastFetch = now, leaderEnd
	return true
}

// HighWatermark returns the high watermark for the leader's own end, the
// offset up to which the leader holds the log as acknowledgements require
// (its durable offset in durable mode, else its log end): the smallest
// log end offset over the ISR and a pending proposal's members. A
// follower that has not fetched under this leadership holds it where it
// is. It never moves back.
func (l *Leader) HighWatermark(leaderEnd int64) int64 {
	if UnsafeHighWatermark {
		l.hw = max(l.hw, leaderEnd)
		return l.hw
	}
	hw := leaderEnd
	for _, r := range slices.Concat(l.isr, l.pending) {
		if r == l.self {
			continue
		}
		f, ok := l.followers[r]
		if !ok || f.leo < 0 {
			return l.hw
		}
		hw = min(hw, f.leo)
	}
	l.hw = max(l.hw, hw)
	return l.hw
}

// ProposeISR returns the ISR this leader wants, or false when it is the
// current one: members whose last catch-up is older than lagMax leave it
// (the leader stays), and replicas whose log end has reached both the high
// watermark and the start of this leader's epoch join it. Order: the
// current members first, as they are, then those that join in replica
// order.
func (l *Leader) ProposeISR(now time.Time, lagMax time.Duration) ([]int32, bool) {
	var next []int32
	changed := false
	for _, r := range l.isr {
		f, ok := l.followers[r]
		if r != l.self && (!ok || now.Sub(f.caughtUp) > lagMax) {
			changed = true
			continue
		}
		next = append(next, r)
	}
	for _, r := range l.replicas {
		f, ok := l.followers[r]
		if !ok || slices.Contains(l.isr, r) {
			continue
		}
		if f.leo >= 0 && f.leo >= l.hw && f.leo >= l.epochStart && now.Sub(f.caughtUp) <= lagMax {
			next = append(next, r)
			changed = true
		}
	}
	return next, changed
}

// Follower returns what the leader knows of follower id: its log end
// offset (-1 before its first fetch under this leadership) and the last
// time it was caught up.
func (l *Leader) Follower(id int32) (leo int64, caughtUp time.Time, ok bool) {
	f, ok := l.followers[id]
	if !ok {
		return -1, time.Time{}, false
	}
	return f.leo, f.caughtUp, true
}

// Lag returns how far each follower's log end is behind leaderEnd, by
// node id, for metrics; a follower that has not fetched counts as all of
// it.
func (l *Leader) Lag(leaderEnd int64) map[int32]int64 {
	out := make(map[int32]int64, len(l.followers))
	for id, f := range l.followers {
		out[id] = max(leaderEnd-max(f.leo, 0), 0)
	}
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
