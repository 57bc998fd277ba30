package compat

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Member is one consumer of a group scenario as the scenario sees it: the
// partitions the group gives it now and the records it has read. The
// client's callbacks update it from their own goroutines.
type Member struct {
	Name string
	mu   struct {
		sync.Mutex
		assigned map[int32]bool
		read     []Record
	}
}

// NewMember returns a member holding nothing.
func NewMember(name string) *Member {
	m := &Member{Name: name}
	m.mu.assigned = make(map[int32]bool)
	return m
}

// Assign adds partitions the group gave the member.
func (m *Member) Assign(ps ...int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range ps {
		m.mu.assigned[p] = true
	}
}

// Revoke removes partitions the group took from the member.
func (m *Member) Revoke(ps ...int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range ps {
		delete(m.mu.assigned, p)
	}
}

// RevokeAll removes every partition, as an eager rebalance does.
func (m *Member) RevokeAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.mu.assigned)
}

// Add records a record the member read.
func (m *Member) Add(r Record) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mu.read = append(m.mu.read, r)
}

// Assigned returns the partitions the member holds now, in order.
func (m *Member) Assigned() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return sortedKeys(m.mu.assigned)
}

// Read returns what the member has read so far, in order.
func (m *Member) Read() []Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.mu.read)
}

// WaitSplit polls until the members hold disjoint, non-empty sets of
// partitions that together are partitions 0..n-1, and returns the sets.
func WaitSplit(ctx context.Context, n int32, members ...*Member) ([][]int32, error) {
	var split [][]int32
	err := Poll(ctx, 100*time.Millisecond, func(context.Context) (bool, string, error) {
		split = split[:0]
		seen := make(map[int32]bool)
		ok := true
		var why []string
		for _, m := range members {
			ps := m.Assigned()
			split = append(split, ps)
			why = append(why, fmt.Sprintf("member %s holds %v", m.Name, ps))
			if len(ps) == 0 {
				ok = false
			}
			for _, p := range ps {
				if seen[p] {
					ok = false
				}
				seen[p] = true
			}
		}
		return ok && len(seen) == int(n), fmt.Sprint(why), nil
	})
	return split, err
}

// WaitRead polls until the members have read n records between them.
func WaitRead(ctx context.Context, n int, members ...*Member) error {
	return Poll(ctx, 100*time.Millisecond, func(context.Context) (bool, string, error) {
		total := 0
		var counts []int
		for _, m := range members {
			c := len(m.Read())
			counts = append(counts, c)
			total += c
		}
		return total >= n, fmt.Sprintf("members read %v of %d records", counts, n), nil
	})
}

// CheckSplitRead checks a group's members after WaitSplit and WaitRead:
// each read only from the partitions it held, still holds them, and
// together they read want exactly (every record once, in order per
// partition, at its offset).
func CheckSplitRead(want []Record, split [][]int32, members ...*Member) (string, error) {
	var all []Record
	var counts []int
	for i, m := range members {
		read := m.Read()
		for _, r := range read {
			if !slices.Contains(split[i], r.Partition) {
				return "", fmt.Errorf("member %s read partition %d offset %d, but holds %v", m.Name, r.Partition, r.Offset, split[i])
			}
		}
		if now := m.Assigned(); !slices.Equal(now, split[i]) {
			return "", fmt.Errorf("member %s's partitions changed from %v to %v while reading", m.Name, split[i], now)
		}
		all = append(all, read...)
		counts = append(counts, len(read))
	}
	if err := Compare(want, all); err != nil {
		return "", err
	}
	return fmt.Sprintf("members held %v, read %v of %d records, each once", split, counts, len(want)), nil
}
