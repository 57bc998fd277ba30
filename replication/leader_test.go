package replication

import (
	"fmt"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

const lagMax = 30 * time.Second

// A leader with two followers in sync: the high watermark waits for both,
// follows the slower one, and never moves back.
func TestHighWatermarkFollowsTheISR(t *testing.T) {
	l := NewLeader(1, []int32{1, 2, 3}, []int32{1, 2, 3}, 100, 90, t0)
	if hw := l.HighWatermark(100); hw != 90 {
		t.Fatalf("before any follower fetched: hw %d, want 90 (kept)", hw)
	}
	l.Fetched(2, 100, 120, at(1))
	if hw := l.HighWatermark(120); hw != 90 {
		t.Fatalf("follower 3 not fetched yet: hw %d, want 90", hw)
	}
	l.Fetched(3, 95, 120, at(1))
	if hw := l.HighWatermark(120); hw != 95 {
		t.Fatalf("followers at 100 and 95, leader at 120: hw %d, want 95", hw)
	}
	l.Fetched(3, 120, 120, at(2))
	l.Fetched(2, 120, 120, at(2))
	if hw := l.HighWatermark(110); hw != 110 {
		t.Fatalf("followers at 120, the leader durable to 110: hw %d, want 110", hw)
	}
	// A follower that truncated (a new fetch offset below) does not move
	// the high watermark back.
	l.Fetched(2, 100, 120, at(3))
	if hw := l.HighWatermark(120); hw != 110 {
		t.Fatalf("after a lower fetch offset: hw %d, want 110 (never back)", hw)
	}
	// A follower outside the ISR does not hold it.
	l.SetISR([]int32{1, 3})
	if hw := l.HighWatermark(120); hw != 120 {
		t.Fatalf("ISR [1 3], both at 120: hw %d, want 120", hw)
	}
}

func TestLeaderAloneInISR(t *testing.T) {
	l := NewLeader(1, []int32{1, 2}, []int32{1}, 50, 40, t0)
	if hw := l.HighWatermark(50); hw != 50 {
		t.Fatalf("alone in the ISR: hw %d, want the leader's end 50", hw)
	}
	if l.Fetched(9, 10, 50, at(1)) {
		t.Fatal("a fetch from a broker that is no replica was taken")
	}
}

// The scenario of a follower that stops, falls out, comes back and joins.
func TestISRShrinkAndExpand(t *testing.T) {
	l := NewLeader(1, []int32{1, 2, 3}, []int32{1, 2, 3}, 0, 0, t0)
	step := func(what string, now float64, want string) {
		t.Helper()
		isr, changed := l.ProposeISR(at(now), lagMax)
		got := "no change"
		if changed {
			got = fmt.Sprint(isr)
			l.SetISR(isr)
		}
		if got != want {
			t.Fatalf("%s (t=%gs): %s, want %s", what, now, got, want)
		}
	}
	step("new leadership", 0, "no change")
	// Follower 2 keeps up; follower 3 never fetches.
	for s := 1.0; s <= 30; s++ {
		l.Fetched(2, int64(s*10), int64(s*10), at(s))
	}
	step("30 s without follower 3", 30, "no change")
	l.Fetched(2, 310, 310, at(31))
	step("follower 3 silent past replica.lag.time.max.ms", 31, "[1 2]")
	if hw := l.HighWatermark(310); hw != 310 {
		t.Fatalf("after the shrink: hw %d, want 310", hw)
	}

	// Follower 2 fetches but falls behind: each fetch reaches the leader's
	// end of its previous fetch, so it still counts as caught up then.
	l.Fetched(2, 310, 400, at(40))
	l.Fetched(2, 400, 500, at(50))
	l.Fetched(2, 500, 600, at(60))
	step("a follower always one fetch behind", 65, "no change")
	// Then it stalls below the leader's end for longer than the lag.
	l.Fetched(2, 550, 700, at(70))
	l.Fetched(2, 560, 800, at(85))
	step("a follower last caught up at t=50", 79, "no change")
	step("a follower last caught up at t=50", 81, "[1]")

	// Follower 3 comes back, fetches from below and catches up.
	l.Fetched(3, 0, 800, at(100))
	step("follower 3 far behind", 100, "no change")
	l.Fetched(3, 800, 800, at(101))
	step("follower 3 reached the leader's end", 101, "[1 3]")
	l.Fetched(2, 800, 800, at(102))
	step("follower 2 caught up", 102, "[1 3 2]")
}

// A replica joins only once it has reached the start of the leader's
// epoch: below that offset the new leader may have records the follower
// must not be counted for.
func TestExpandWaitsForTheEpochStart(t *testing.T) {
	l := NewLeader(1, []int32{1, 2}, []int32{1}, 500, 300, t0)
	l.Fetched(2, 400, 500, at(1))
	if isr, changed := l.ProposeISR(at(1), lagMax); changed {
		t.Fatalf("follower at 400, epoch start 500: proposed %v", isr)
	}
	l.Fetched(2, 500, 520, at(2))
	if isr, changed := l.ProposeISR(at(2), lagMax); !changed || fmt.Sprint(isr) != "[1 2]" {
		t.Fatalf("follower at the epoch start: %v %v, want [1 2]", isr, changed)
	}
}

func TestLag(t *testing.T) {
	l := NewLeader(1, []int32{1, 2, 3}, []int32{1, 2, 3}, 0, 0, t0)
	l.Fetched(2, 70, 100, at(1))
	if got := fmt.Sprint(l.Lag(100)); got != "map[2:30 3:100]" {
		t.Fatalf("lag %s", got)
	}
}

func TestDiverged(t *testing.T) {
	// The follower's epoch history: epoch 1 from 0, 3 from 100, 4 from 150;
	// log end 180.
	local := func(e int32) (int32, int64) {
		switch {
		case e >= 4:
			return 4, 180
		case e == 3:
			return 3, 150
		case e >= 1:
			return 1, 100
		}
		return -1, -1
	}
	for _, c := range []struct {
		epoch int32
		end   int64
		want  Truncation
	}{
		{3, 120, Truncation{Offset: 120, Done: true}}, // both have 3: the smaller end
		{3, 160, Truncation{Offset: 150, Done: true}}, // the follower's end of 3 is smaller
		{2, 130, Truncation{Offset: 100, Done: false}},
		{0, 10, Truncation{Offset: 5, Done: true}}, // nothing at or below: the log start
		{4, 200, Truncation{Offset: 180, Done: true}},
	} {
		if got := Diverged(c.epoch, c.end, local, 180, 5); got != c.want {
			t.Errorf("leader's epoch %d ends at %d: %+v, want %+v", c.epoch, c.end, got, c.want)
		}
	}
}

// While a proposal that adds a follower is being written, the high
// watermark waits for that follower too: the registry may already list it
// in the ISR (and elect it) before the leader hears back. Once the
// proposal is settled either way, only the ISR counts.
func TestHighWatermarkCountsAPendingJoin(t *testing.T) {
	l := NewLeader(1, []int32{1, 2, 3}, []int32{1, 2}, 100, 100, t0)
	l.Fetched(2, 100, 100, at(1))
	l.Fetched(3, 100, 100, at(1)) // caught up: it may join
	isr, changed := l.ProposeISR(at(1), lagMax)
	if !changed || fmt.Sprint(isr) != "[1 2 3]" {
		t.Fatalf("proposal %v (changed %v), want [1 2 3]", isr, changed)
	}
	l.SetPending(isr)
	// The leader appends 10 more; follower 2 has them, follower 3 not yet.
	l.Fetched(2, 110, 110, at(2))
	if hw := l.HighWatermark(110); hw != 100 {
		t.Fatalf("follower 3 joining and at 100: hw %d, want 100", hw)
	}
	// The proposal failed and nothing was written: follower 3 no longer
	// holds the high watermark back.
	l.SetPending(nil)
	if hw := l.HighWatermark(110); hw != 110 {
		t.Fatalf("proposal settled without follower 3: hw %d, want 110", hw)
	}
}
