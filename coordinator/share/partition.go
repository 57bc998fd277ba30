package share

// Partition is the share-partition state (KIP-932) a partition leader keeps
// for one share group: the in-flight window of records from the start
// offset (SPSO) to the end offset (SPEO), each Available, Acquired (by a
// member, until a deadline), Acknowledged or Archived, with its delivery
// count. Records at or after SPEO were never acquired; records before SPSO
// are done. The window is a slice with one entry per offset, so every
// operation costs the offsets it touches (plus, for the lock deadline, one
// pass over the window, bounded by MaxInFlight).

import (
	"errors"
	"fmt"
	"time"
)

// Kafka error codes Acknowledge answers with.
const (
	errInvalidRequest     int16 = 42
	errInvalidRecordState int16 = 121
)

// PartitionConfig are a share partition's limits.
type PartitionConfig struct {
	// LockDuration is how long a member holds records it acquired
	// (share.record.lock.duration.ms, 30s).
	LockDuration time.Duration
	// DeliveryCountLimit is how often a record is delivered before it is
	// archived instead of offered again (group.share.delivery.count.limit,
	// 5).
	DeliveryCountLimit int16
	// MaxInFlight bounds the window from SPSO to SPEO
	// (group.share.partition.max.record.locks, 2000): no record beyond it
	// is acquired until the records at its start are done.
	MaxInFlight int
	// Observe, when set, is told of each change of records' delivery
	// state as it is made (for metrics); it must not call back into the
	// partition.
	Observe func(e Event, records int)
}

// Event is a kind of change of records' delivery state a partition reports
// to PartitionConfig.Observe.
type Event int8

// The events.
const (
	// EventAcquired: records acquired by a member.
	EventAcquired Event = iota
	// EventAccepted, EventReleased, EventRejected: records a member
	// acknowledged with that type.
	EventAccepted
	EventReleased
	EventRejected
	// EventLockExpired: acquired records whose lock expired.
	EventLockExpired
	// EventMemberReleased: acquired records released because their
	// member's share session closed.
	EventMemberReleased
	// EventArchived: records archived because they reached the delivery
	// count limit.
	EventArchived
)

// String names the event, as a metric label.
func (e Event) String() string {
	switch e {
	case EventAcquired:
		return "acquired"
	case EventAccepted:
		return "accepted"
	case EventReleased:
		return "released"
	case EventRejected:
		return "rejected"
	case EventLockExpired:
		return "lock_expired"
	case EventMemberReleased:
		return "member_released"
	case EventArchived:
		return "archived"
	}
	return "unknown"
}

func (p *Partition) observe(e Event, n int) {
	if n > 0 && p.cfg.Observe != nil {
		p.cfg.Observe(e, n)
	}
}

// DefaultPartitionConfig returns Kafka's defaults.
func DefaultPartitionConfig() PartitionConfig {
	return PartitionConfig{LockDuration: 30 * time.Second, DeliveryCountLimit: 5, MaxInFlight: 2000}
}

// ErrInvalidConfig is returned by Validate.
var ErrInvalidConfig = errors.New("share: invalid config")

// Validate reports a setting out of range.
func (c PartitionConfig) Validate() error {
	switch {
	case c.LockDuration <= 0:
		return fmt.Errorf("%w: lock duration %v", ErrInvalidConfig, c.LockDuration)
	case c.DeliveryCountLimit < 1:
		return fmt.Errorf("%w: delivery count limit %d", ErrInvalidConfig, c.DeliveryCountLimit)
	case c.MaxInFlight < 1 || c.MaxInFlight > maxWindow:
		return fmt.Errorf("%w: max in-flight records %d outside 1-%d", ErrInvalidConfig, c.MaxInFlight, maxWindow)
	}
	return nil
}

// maxWindow bounds the window a restored State may spread over: batches
// beyond it are dropped (their records are delivered again).
const maxWindow = 1 << 20

// Range is a run of offsets, inclusive.
type Range struct{ First, Last int64 }

// AcquiredRun is a run of offsets acquired with one delivery count.
type AcquiredRun struct {
	First, Last   int64
	DeliveryCount int16
}

// Ack acknowledges offsets First to Last: Types holds one type for the
// whole run, or one per offset.
type Ack struct {
	First, Last int64
	Types       []int8
}

type entry struct {
	state    int8
	count    int16
	member   string // while Acquired
	deadline int64  // Unix nanoseconds, while Acquired
}

// Partition is one share group's state on one partition. It is a state
// machine: no clock, no goroutines, no I/O, and not safe for concurrent use.
type Partition struct {
	cfg         PartitionConfig
	stateEpoch  int32
	leaderEpoch int32
	start       int64   // SPSO
	window      []entry // window[i] is offset start+i; SPEO is start+len(window)
	acquired    int
}

// NewPartition restores a share partition from its durable state; st.StartOffset
// must not be negative.
func NewPartition(cfg PartitionConfig, st State) *Partition {
	p := &Partition{cfg: cfg, stateEpoch: st.StateEpoch, leaderEpoch: st.LeaderEpoch, start: max(st.StartOffset, 0)}
	for _, b := range st.Batches {
		first, last := max(b.FirstOffset, p.start), b.LastOffset
		if last < first || last-p.start >= maxWindow {
			continue
		}
		state := b.DeliveryState
		if state != Acknowledged && state != Archived {
			state = Available
		}
		if state == Available && b.DeliveryCount >= cfg.DeliveryCountLimit {
			state = Archived
		}
		p.grow(last + 1)
		for off := first; off <= last; off++ {
			p.window[off-p.start] = entry{state: state, count: max(b.DeliveryCount, 0)}
		}
	}
	p.advance()
	return p
}

// grow extends the window to end (exclusive) with never-delivered records.
func (p *Partition) grow(end int64) {
	for p.end() < end {
		p.window = append(p.window, entry{state: Available})
	}
}

func (p *Partition) end() int64 { return p.start + int64(len(p.window)) }

// StartOffset is the share-partition start offset (SPSO).
func (p *Partition) StartOffset() int64 { return p.start }

// EndOffset is the share-partition end offset (SPEO): the first offset
// never acquired.
func (p *Partition) EndOffset() int64 { return p.end() }

// InFlight returns how many records are acquired now and how many offsets
// the window holds.
func (p *Partition) InFlight() (acquired, window int) { return p.acquired, len(p.window) }

// FetchOffset is where the leader must read the log to find acquirable
// records: the first Available offset of the window, else SPEO. ok is
// false when nothing can be acquired: no Available record in the window,
// and the window is full.
func (p *Partition) FetchOffset() (int64, bool) {
	for i := range p.window {
		if p.window[i].state == Available {
			return p.start + int64(i), true
		}
	}
	return p.end(), len(p.window) < p.cfg.MaxInFlight
}

// Acquire acquires for member up to maxRecords Available records among
// ranges: the offsets of the data records the leader read from the log
// starting at FetchOffset, ascending. Offsets from FetchOffset up to the
// last range's end that no range covers hold no data record (control
// batches, compacted records): they are archived as the ranges are walked.
// It returns the acquired runs, locked until now plus LockDuration.
func (p *Partition) Acquire(now time.Time, member string, ranges []Range, maxRecords int) []AcquiredRun {
	from, ok := p.FetchOffset()
	if !ok || maxRecords <= 0 {
		return nil
	}
	deadline := now.Add(p.cfg.LockDuration).UnixNano()
	var out []AcquiredRun
	n, archived := 0, 0
	cur := from
	limit := p.start + int64(p.cfg.MaxInFlight) // no new record at or past it
walk:
	for _, r := range ranges {
		if r.Last < cur || r.Last < r.First {
			continue
		}
		first := max(r.First, cur)
		// Offsets between the last range and this one hold no record.
		for off := cur; off < first && off < p.end(); off++ {
			if e := &p.window[off-p.start]; e.state == Available {
				e.state = Archived
			}
		}
		if old := p.end(); first > old && first < limit {
			p.grow(first)
			for off := max(cur, old); off < first; off++ {
				p.window[off-p.start].state = Archived
			}
		}
		for off := first; off <= r.Last; off++ {
			if n >= maxRecords {
				break walk
			}
			if off >= p.end() {
				if off >= limit {
					break walk
				}
				p.grow(off + 1)
			}
			e := &p.window[off-p.start]
			if e.state != Available {
				continue
			}
			if e.count >= p.cfg.DeliveryCountLimit {
				e.state = Archived
				archived++
				continue
			}
			e.state, e.count, e.member, e.deadline = Acquired, e.count+1, member, deadline
			p.acquired++
			n++
			if k := len(out) - 1; k >= 0 && out[k].Last == off-1 && out[k].DeliveryCount == e.count {
				out[k].Last = off
			} else {
				out = append(out, AcquiredRun{First: off, Last: off, DeliveryCount: e.count})
			}
		}
		cur = r.Last + 1
	}
	p.advance()
	p.observe(EventAcquired, n)
	p.observe(EventArchived, archived)
	return out
}

// Acknowledge applies member's acknowledgements. Each Ack gets a code: 0;
// INVALID_REQUEST (42) when its types are malformed; INVALID_RECORD_STATE
// (121) when some offset of it is not Acquired by member (none of that Ack
// is applied then). changed reports whether the durable state changed.
func (p *Partition) Acknowledge(now time.Time, member string, acks []Ack) (codes []int16, changed bool) {
	codes = make([]int16, len(acks))
	var accepted, released, rejected, archived int
	defer func() {
		p.observe(EventAccepted, accepted)
		p.observe(EventReleased, released)
		p.observe(EventRejected, rejected)
		p.observe(EventArchived, archived)
	}()
	for i, a := range acks {
		if code := p.checkAck(member, a); code != 0 {
			codes[i] = code
			continue
		}
		for off := a.First; off <= a.Last; off++ {
			typ := a.Types[0]
			if len(a.Types) > 1 {
				typ = a.Types[off-a.First]
			}
			e := &p.window[off-p.start]
			switch typ {
			case AckRenew:
				e.deadline = now.Add(p.cfg.LockDuration).UnixNano()
				continue
			case AckAccept:
				e.state = Acknowledged
				accepted++
			case AckRelease:
				e.state = Available
				released++
				if e.count >= p.cfg.DeliveryCountLimit {
					e.state = Archived
					archived++
				}
			case AckReject:
				e.state = Archived
				rejected++
			case AckGap:
				e.state = Archived
			}
			e.member, e.deadline = "", 0
			p.acquired--
			changed = true
		}
	}
	p.advance()
	return codes, changed
}

func (p *Partition) checkAck(member string, a Ack) int16 {
	if a.Last < a.First || len(a.Types) == 0 {
		return errInvalidRequest
	}
	if len(a.Types) > 1 && int64(len(a.Types)) != a.Last-a.First+1 {
		return errInvalidRequest
	}
	for _, t := range a.Types {
		if t < AckGap || t > AckRenew {
			return errInvalidRequest
		}
	}
	if a.First < p.start || a.Last >= p.end() {
		return errInvalidRecordState
	}
	for off := a.First; off <= a.Last; off++ {
		if e := p.window[off-p.start]; e.state != Acquired || e.member != member {
			return errInvalidRecordState
		}
	}
	return 0
}

// releaseEntry makes an acquired record Available again, or Archived when
// it reached the delivery limit.
func (p *Partition) releaseEntry(e *entry) {
	e.state = Available
	if e.count >= p.cfg.DeliveryCountLimit {
		e.state = Archived
		p.observe(EventArchived, 1)
	}
	e.member, e.deadline = "", 0
	p.acquired--
}

// ReleaseMember releases every record member holds (it left, or its share
// session closed).
func (p *Partition) ReleaseMember(_ time.Time, member string) (changed bool) {
	if p.acquired == 0 {
		return false
	}
	n := 0
	for i := range p.window {
		if e := &p.window[i]; e.state == Acquired && e.member == member {
			p.releaseEntry(e)
			n++
		}
	}
	p.advance()
	p.observe(EventMemberReleased, n)
	return n > 0
}

// Tick releases the records whose lock expired at now.
func (p *Partition) Tick(now time.Time) (changed bool) {
	if p.acquired == 0 {
		return false
	}
	t := now.UnixNano()
	n := 0
	for i := range p.window {
		if e := &p.window[i]; e.state == Acquired && e.deadline <= t {
			p.releaseEntry(e)
			n++
		}
	}
	p.advance()
	p.observe(EventLockExpired, n)
	return n > 0
}

// NextDeadline is the earliest lock deadline; zero when nothing is
// acquired.
func (p *Partition) NextDeadline() time.Time {
	if p.acquired == 0 {
		return time.Time{}
	}
	var next int64
	for i := range p.window {
		if e := p.window[i]; e.state == Acquired && (next == 0 || e.deadline < next) {
			next = e.deadline
		}
	}
	return time.Unix(0, next)
}

// AdvanceStart moves SPSO to at least offset: the records below it are gone
// from the log (retention, DeleteRecords).
func (p *Partition) AdvanceStart(offset int64) {
	if offset <= p.start {
		return
	}
	drop := min(offset-p.start, int64(len(p.window)))
	for i := range drop {
		if p.window[i].state == Acquired {
			p.acquired--
		}
	}
	p.window = p.window[drop:]
	p.start = offset
	if len(p.window) == 0 {
		p.window = nil
	}
}

// advance moves SPSO past the leading records that are done.
func (p *Partition) advance() {
	i := 0
	for i < len(p.window) && (p.window[i].state == Acknowledged || p.window[i].state == Archived) {
		i++
	}
	if i == 0 {
		return
	}
	p.start += int64(i)
	p.window = p.window[i:]
	if len(p.window) == 0 {
		p.window = nil
	} else if cap(p.window) > 2*len(p.window)+64 {
		p.window = append([]entry(nil), p.window...)
	}
}

// State is the durable state to write: SPSO and the window's records,
// acquired ones as Available with their delivery count, runs of one state
// and count merged, never-delivered Available records left out.
func (p *Partition) State() State {
	st := State{StateEpoch: p.stateEpoch, LeaderEpoch: p.leaderEpoch, StartOffset: p.start}
	for i, e := range p.window {
		state := e.state
		if state == Acquired {
			state = Available
		}
		if state == Available && e.count == 0 {
			continue
		}
		off := p.start + int64(i)
		if k := len(st.Batches) - 1; k >= 0 && st.Batches[k].LastOffset == off-1 &&
			st.Batches[k].DeliveryState == state && st.Batches[k].DeliveryCount == e.count {
			st.Batches[k].LastOffset = off
			continue
		}
		st.Batches = append(st.Batches, StateBatch{FirstOffset: off, LastOffset: off, DeliveryState: state, DeliveryCount: e.count})
	}
	return st
}
