package share

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func testPartition(start int64) *Partition {
	cfg := DefaultPartitionConfig()
	cfg.LockDuration, cfg.DeliveryCountLimit, cfg.MaxInFlight = 10*time.Second, 3, 100
	return NewPartition(cfg, State{StartOffset: start})
}

func wantRuns(t *testing.T, what string, got []AcquiredRun, want ...AcquiredRun) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s: acquired %+v, want %+v", what, got, want)
	}
}

func acceptAll(t *testing.T, p *Partition, member string, runs []AcquiredRun) {
	t.Helper()
	for _, r := range runs {
		codes, _ := p.Acknowledge(t0, member, []Ack{{First: r.First, Last: r.Last, Types: []int8{AckAccept}}})
		if codes[0] != 0 {
			t.Fatalf("%s accepting %+v: code %d", member, r, codes[0])
		}
	}
}

// Three members share a partition: each acquires what the others do not
// hold, releases come back with delivery count 2, accepts move the start.
func TestPartitionMembersShare(t *testing.T) {
	p := testPartition(0)
	log := []Range{{0, 9}, {10, 19}, {20, 29}}
	a := p.Acquire(t0, "a", log, 10)
	wantRuns(t, "a", a, AcquiredRun{0, 9, 1})
	b := p.Acquire(t0, "b", log[1:], 10)
	wantRuns(t, "b", b, AcquiredRun{10, 19, 1})
	if off, ok := p.FetchOffset(); !ok || off != 20 {
		t.Fatalf("fetch offset %d %v, want 20", off, ok)
	}
	// a releases 5-9 and accepts 0-4.
	codes, changed := p.Acknowledge(t0, "a", []Ack{{First: 0, Last: 9, Types: []int8{1, 1, 1, 1, 1, 2, 2, 2, 2, 2}}})
	if codes[0] != 0 || !changed {
		t.Fatalf("ack: %v %v", codes, changed)
	}
	if p.StartOffset() != 5 {
		t.Fatalf("start offset %d, want 5", p.StartOffset())
	}
	c := p.Acquire(t0, "c", []Range{{5, 9}, {10, 19}, {20, 29}}, 100)
	wantRuns(t, "c", c, AcquiredRun{5, 9, 2}, AcquiredRun{20, 29, 1})
	// The wrong member cannot acknowledge c's records; nothing of that
	// ack is applied.
	codes, _ = p.Acknowledge(t0, "b", []Ack{{First: 18, Last: 21, Types: []int8{AckAccept}}})
	if codes[0] != errInvalidRecordState {
		t.Fatalf("b acking c's records: code %d", codes[0])
	}
	acceptAll(t, p, "b", b)
	acceptAll(t, p, "c", c)
	if p.StartOffset() != 30 || p.EndOffset() != 30 {
		t.Fatalf("start %d end %d, want 30 30", p.StartOffset(), p.EndOffset())
	}
	if st := p.State(); st.StartOffset != 30 || len(st.Batches) != 0 {
		t.Fatalf("state %+v", st)
	}
}

// Locks expire: the records go back with their delivery count, and past
// the limit they are archived.
func TestPartitionLockExpiryAndLimit(t *testing.T) {
	p := testPartition(100)
	now := t0
	for round := int16(1); round <= 3; round++ {
		got := p.Acquire(now, "m", []Range{{100, 104}}, 10)
		wantRuns(t, "round", got, AcquiredRun{100, 104, round})
		if d := p.NextDeadline(); !d.Equal(now.Add(10 * time.Second)) {
			t.Fatalf("deadline %v", d)
		}
		if p.Tick(now.Add(9 * time.Second)) {
			t.Fatal("a lock expired early")
		}
		now = now.Add(10 * time.Second)
		if !p.Tick(now) {
			t.Fatal("no lock expired")
		}
	}
	// Delivered three times (the limit): archived, and the start moved.
	if p.StartOffset() != 105 {
		t.Fatalf("start %d, want 105 after the delivery limit", p.StartOffset())
	}
	if got := p.Acquire(now, "m", []Range{{100, 104}}, 10); len(got) != 0 {
		t.Fatalf("archived records acquired again: %+v", got)
	}
}

// Gaps between batches (control records, compaction) are archived, and
// renew extends a lock; reject archives.
func TestPartitionGapsRejectRenew(t *testing.T) {
	p := testPartition(0)
	got := p.Acquire(t0, "m", []Range{{0, 3}, {5, 7}, {10, 10}}, 100)
	wantRuns(t, "gaps", got, AcquiredRun{0, 3, 1}, AcquiredRun{5, 7, 1}, AcquiredRun{10, 10, 1})
	p.Acknowledge(t0.Add(5*time.Second), "m", []Ack{{First: 0, Last: 3, Types: []int8{AckRenew}}})
	// 5-7 and 10 expire; 0-3 were renewed.
	if !p.Tick(t0.Add(11 * time.Second)) {
		t.Fatal("no lock expired")
	}
	codes, _ := p.Acknowledge(t0, "m", []Ack{{First: 0, Last: 3, Types: []int8{AckReject}}})
	if codes[0] != 0 {
		t.Fatalf("reject of renewed records: %d", codes[0])
	}
	if p.StartOffset() != 5 {
		t.Fatalf("start %d, want 5: 0-3 rejected and 4 a gap", p.StartOffset())
	}
	got = p.Acquire(t0.Add(12*time.Second), "n", []Range{{5, 7}, {10, 12}}, 100)
	wantRuns(t, "after expiry", got, AcquiredRun{5, 7, 2}, AcquiredRun{10, 10, 2}, AcquiredRun{11, 12, 1})
}

func TestPartitionBadAcks(t *testing.T) {
	p := testPartition(0)
	p.Acquire(t0, "m", []Range{{0, 9}}, 100)
	for _, c := range []struct {
		ack  Ack
		code int16
	}{
		{Ack{First: 5, Last: 4, Types: []int8{1}}, errInvalidRequest},
		{Ack{First: 0, Last: 3, Types: []int8{1, 1}}, errInvalidRequest},
		{Ack{First: 0, Last: 3}, errInvalidRequest},
		{Ack{First: 0, Last: 0, Types: []int8{9}}, errInvalidRequest},
		{Ack{First: 0, Last: 1 << 60, Types: []int8{1}}, errInvalidRecordState},
		{Ack{First: -5, Last: 0, Types: []int8{1}}, errInvalidRecordState},
	} {
		if codes, changed := p.Acknowledge(t0, "m", []Ack{c.ack}); codes[0] != c.code || changed {
			t.Errorf("ack %+v: code %d changed %v, want %d", c.ack, codes[0], changed, c.code)
		}
	}
}

// The window holds at most MaxInFlight offsets; FetchOffset says when it
// is full.
func TestPartitionWindow(t *testing.T) {
	p := testPartition(0)
	got := p.Acquire(t0, "m", []Range{{0, 499}}, 1000)
	wantRuns(t, "window", got, AcquiredRun{0, 99, 1})
	if _, ok := p.FetchOffset(); ok {
		t.Fatal("full window still fetchable")
	}
	p.ReleaseMember(t0, "m")
	if off, ok := p.FetchOffset(); !ok || off != 0 {
		t.Fatalf("after release fetch offset %d %v", off, ok)
	}
	p.AdvanceStart(50)
	if p.StartOffset() != 50 {
		t.Fatalf("start %d after AdvanceStart(50)", p.StartOffset())
	}
}

// State and NewPartition round trip: counts and done records survive, the
// acquired ones come back available.
func TestPartitionStateRoundTrip(t *testing.T) {
	p := testPartition(0)
	p.Acquire(t0, "m", []Range{{0, 9}}, 100)
	p.Acknowledge(t0, "m", []Ack{{First: 2, Last: 3, Types: []int8{AckAccept}}, {First: 5, Last: 5, Types: []int8{AckRelease}}})
	st := p.State()
	want := []StateBatch{{0, 1, Available, 1}, {2, 3, Acknowledged, 1}, {4, 9, Available, 1}}
	if st.StartOffset != 0 || !slices.Equal(st.Batches, want) {
		t.Fatalf("state %+v, want batches %+v", st, want)
	}
	q := NewPartition(p.cfg, st)
	got := q.Acquire(t0, "n", []Range{{0, 12}}, 100)
	wantRuns(t, "restored", got, AcquiredRun{0, 1, 2}, AcquiredRun{4, 9, 2}, AcquiredRun{10, 12, 1})
}

// Random operations keep the invariants: the acquired count right, counts
// within the limit, the window bounded, the start never moving back, and
// restoring a State stable.
func TestPartitionRandom(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 7))
		p := testPartition(0)
		now := t0
		var lastStart int64
		members := []string{"a", "b", "c"}
		for range 300 {
			m := members[r.IntN(3)]
			switch r.IntN(5) {
			case 0, 1:
				from, _ := p.FetchOffset()
				var ranges []Range
				off := from
				for range r.IntN(4) {
					off += int64(r.IntN(3))
					n := int64(r.IntN(20))
					ranges = append(ranges, Range{off, off + n})
					off += n + 1
				}
				p.Acquire(now, m, ranges, r.IntN(50))
			case 2:
				first := p.StartOffset() + int64(r.IntN(60))
				p.Acknowledge(now, m, []Ack{{First: first, Last: first + int64(r.IntN(10)), Types: []int8{int8(r.IntN(5))}}})
			case 3:
				now = now.Add(time.Duration(r.IntN(15)) * time.Second)
				p.Tick(now)
			case 4:
				p.ReleaseMember(now, m)
			}
			if p.StartOffset() < lastStart {
				t.Fatalf("seed %d: start moved back", seed)
			}
			lastStart = p.StartOffset()
			acquired := 0
			for _, e := range p.window {
				if e.count > p.cfg.DeliveryCountLimit {
					t.Fatalf("seed %d: delivery count %d", seed, e.count)
				}
				if e.state == Acquired {
					acquired++
				}
			}
			if acquired != p.acquired || len(p.window) > p.cfg.MaxInFlight {
				t.Fatalf("seed %d: %d acquired (counted %d), window %d", seed, acquired, p.acquired, len(p.window))
			}
			// Restoring is stable (an acquired record at its last
			// delivery restores archived: it is never offered again).
			once := NewPartition(p.cfg, p.State()).State()
			if twice := NewPartition(p.cfg, once).State(); twice.StartOffset != once.StartOffset || !slices.Equal(twice.Batches, once.Batches) {
				t.Fatalf("seed %d: state %+v restores to %+v", seed, once, twice)
			}
		}
	}
}

// TestPartitionEvents: every change of delivery state is reported to
// Observe with its record count, archiving at the delivery limit included.
func TestPartitionEvents(t *testing.T) {
	got := map[Event]int{}
	cfg := DefaultPartitionConfig()
	cfg.LockDuration, cfg.DeliveryCountLimit, cfg.MaxInFlight = 10*time.Second, 2, 100
	cfg.Observe = func(e Event, n int) { got[e] += n }
	p := NewPartition(cfg, State{StartOffset: 0})
	log := []Range{{0, 9}}
	p.Acquire(t0, "a", log, 10)
	// 0-2 accepted, 3-4 released, 5 rejected, 6-9 left to expire.
	p.Acknowledge(t0, "a", []Ack{{First: 0, Last: 5, Types: []int8{AckAccept, AckAccept, AckAccept, AckRelease, AckRelease, AckReject}}})
	p.Tick(t0.Add(11 * time.Second))
	// 3-4 and 6-9 again (count 2); b's session closes with 3-4 held:
	// they reached the limit and are archived.
	p.Acquire(t0, "b", []Range{{3, 4}}, 10)
	p.ReleaseMember(t0, "b")
	// 6-9 released by c at count 2: archived too.
	p.Acquire(t0, "c", []Range{{6, 9}}, 10)
	p.Acknowledge(t0, "c", []Ack{{First: 6, Last: 9, Types: []int8{AckRelease}}})
	want := map[Event]int{EventAcquired: 16, EventAccepted: 3, EventReleased: 6, EventRejected: 1,
		EventLockExpired: 4, EventMemberReleased: 2, EventArchived: 6}
	for e := EventAcquired; e <= EventArchived; e++ {
		if got[e] != want[e] {
			t.Fatalf("%s: %d, want %d (all: %v)", e, got[e], want[e], got)
		}
	}
	if p.StartOffset() != 10 {
		t.Fatalf("start offset %d, want 10: everything is done", p.StartOffset())
	}
}
