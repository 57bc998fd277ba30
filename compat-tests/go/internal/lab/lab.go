// Package lab is what the fault harnesses (cmd/failover, cmd/chaos) share:
// a cluster of real `gregor serve` processes that can be killed, paused
// and restarted with the same flags and data, idempotent acks=all writers
// (franz-go in process, kafka-clients in a JVM) whose every
// acknowledgement is logged as it comes, the metadata questions the
// harnesses ask between faults, and the checker that holds the log read
// back at the end against the acknowledgements.
//
// Every record a writer sends is unique (value <writer>-<seq, 12 digits>),
// so the checker can say of each acknowledged record whether it is in the
// log exactly once, at its acknowledged partition and offset, and in its
// writer's order.
package lab

import (
	"context"
	"slices"
	"time"
)

// Poll calls f every interval until it reports done, ctx ends or timeout
// passes (then it returns false).
func Poll(ctx context.Context, timeout, interval time.Duration, f func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if f() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(interval):
		}
	}
}

// MedianMax returns the median (the upper one of an even count) and the
// largest of ds, zeros for none.
func MedianMax(ds []time.Duration) (median, maximum time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)-1]
}
