package main

import (
	"time"

	"github.com/gregor-io/gregor/compat-tests/go/internal/lab"
)

// unavailability measures a fault window [from, to] in the
// acknowledgements (sorted by the time the harness learnt of them):
// worst is the longest time any one partition went without an
// acknowledged write within the window (and which partition that was),
// anyGap the longest time the whole topic went without one. The window's
// edges count as acknowledgements, so a partition with none in the window
// was unavailable for all of it.
func unavailability(acks []lab.Ack, partitions int32, from, to time.Time) (worst time.Duration, worstPart int32, anyGap time.Duration) {
	last := make([]time.Time, partitions)
	for p := range last {
		last[p] = from
	}
	lastAny := from
	gap := func(p int32, at time.Time) {
		if d := at.Sub(last[p]); d > worst {
			worst, worstPart = d, p
		}
		last[p] = at
	}
	for _, a := range acks {
		if a.At.Before(from) || a.At.After(to) || a.Partition < 0 || a.Partition >= partitions {
			continue
		}
		gap(a.Partition, a.At)
		if d := a.At.Sub(lastAny); d > anyGap {
			anyGap = d
		}
		lastAny = a.At
	}
	for p := range partitions {
		gap(p, to)
	}
	if d := to.Sub(lastAny); d > anyGap {
		anyGap = d
	}
	return worst, worstPart, anyGap
}
