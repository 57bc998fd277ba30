package main

import (
	"testing"
	"time"

	"github.com/gregor-io/gregor/compat-tests/go/internal/lab"
)

func TestUnavailability(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(p int32, ms int) lab.Ack {
		return lab.Ack{Partition: p, At: t0.Add(time.Duration(ms) * time.Millisecond)}
	}
	s := func(ms int) time.Duration { return time.Duration(ms) * time.Millisecond }
	for _, tc := range []struct {
		name      string
		acks      []lab.Ack
		from, to  int
		worst     time.Duration
		worstPart int32
		anyGap    time.Duration
	}{
		{"steady", []lab.Ack{at(0, 0), at(1, 50), at(0, 100), at(1, 150), at(0, 200), at(1, 200)}, 0, 200, s(100), 0, s(50)},
		{"one partition stalls", []lab.Ack{at(0, 100), at(1, 100), at(1, 200), at(1, 300), at(0, 900), at(1, 1000)}, 0, 1000, s(800), 0, s(600)},
		{"acks outside the window ignored", []lab.Ack{at(0, -500), at(1, 100), at(0, 150), at(1, 1500)}, 0, 1000, s(900), 1, s(850)},
		{"nothing in the window", []lab.Ack{at(0, 2000)}, 0, 1000, s(1000), 0, s(1000)},
	} {
		worst, part, anyGap := unavailability(tc.acks, 2, t0.Add(s(tc.from)), t0.Add(s(tc.to)))
		if worst != tc.worst || part != tc.worstPart || anyGap != tc.anyGap {
			t.Errorf("%s: got worst %v (partition %d), any %v; want %v (partition %d), %v", tc.name, worst, part, anyGap, tc.worst, tc.worstPart, tc.anyGap)
		}
	}
}
