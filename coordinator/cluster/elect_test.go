package cluster

import (
	"errors"
	"slices"
	"testing"
)

func TestElectPreferred(t *testing.T) {
	ps := func(leader int32, isr, replicas []int32) PartitionState {
		return PartitionState{Leader: leader, LeaderEpoch: 3, PartitionEpoch: 5, ISR: isr, Replicas: replicas}
	}
	for _, c := range []struct {
		what       string
		live       []int32
		in         PartitionState
		wantLeader int32
		wantErr    error
	}{
		{"preferred in sync elected", []int32{1, 2, 3}, ps(2, []int32{1, 2, 3}, []int32{1, 2, 3}), 1, nil},
		{"preferred leads already", []int32{1, 2, 3}, ps(1, []int32{1, 2, 3}, []int32{1, 2, 3}), 0, ErrElectionNotNeeded},
		{"preferred out of sync", []int32{1, 2, 3}, ps(2, []int32{2, 3}, []int32{1, 2, 3}), 0, ErrPreferredNotAvailable},
		{"preferred dead", []int32{2, 3}, ps(2, []int32{1, 2, 3}, []int32{1, 2, 3}), 0, ErrPreferredNotAvailable},
		{"preferred shutting down", []int32{-1, 2, 3}, ps(2, []int32{1, 2, 3}, []int32{1, 2, 3}), 0, ErrPreferredNotAvailable},
	} {
		next, err := electPreferred(mdWith(c.live, c.in), "t", 0, c.in)
		if !errors.Is(err, c.wantErr) {
			t.Errorf("%s: error %v, want %v", c.what, err, c.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if next.Leader != c.wantLeader || next.LeaderEpoch != 4 || next.PartitionEpoch != 6 || !slices.Equal(next.ISR, c.in.ISR) {
			t.Errorf("%s: got %+v, want leader %d at epochs 4/6 with the ISR kept", c.what, next, c.wantLeader)
		}
	}
}

func TestElectUnclean(t *testing.T) {
	ps := func(leader int32, isr, replicas, adding []int32) PartitionState {
		return PartitionState{Leader: leader, LeaderEpoch: 3, PartitionEpoch: 5, ISR: isr, Replicas: replicas, AddingReplicas: adding}
	}
	for _, c := range []struct {
		what        string
		live        []int32
		in          PartitionState
		wantLeader  int32
		wantISR     []int32
		wantOutside bool
		wantErr     error
	}{
		{"live leader", []int32{1, 2}, ps(1, []int32{1}, []int32{1, 2}, nil), 0, nil, false, ErrElectionNotNeeded},
		{"no leader, an ISR member live", []int32{2, 3}, ps(-1, []int32{1, 3}, []int32{1, 2, 3}, nil), 3, []int32{3}, false, nil},
		{"no leader, ISR dead: a live replica alone", []int32{2, 3}, ps(-1, []int32{1}, []int32{1, 2, 3}, nil), 2, []int32{2}, true, nil},
		{"dead leader, ISR dead", []int32{3}, ps(1, []int32{1}, []int32{1, 2, 3}, nil), 3, []int32{3}, true, nil},
		{"an adding replica never leads uncleanly", []int32{4}, ps(-1, []int32{1}, []int32{4, 1}, []int32{4}), 0, nil, false, ErrEligibleNotAvailable},
		{"nothing live", nil, ps(-1, []int32{1}, []int32{1, 2}, nil), 0, nil, false, ErrEligibleNotAvailable},
	} {
		next, outside, err := electUnclean(mdWith(c.live, c.in), "t", 0, c.in)
		if !errors.Is(err, c.wantErr) {
			t.Errorf("%s: error %v, want %v", c.what, err, c.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if next.Leader != c.wantLeader || !slices.Equal(next.ISR, c.wantISR) || outside != c.wantOutside || next.LeaderEpoch != 4 || next.PartitionEpoch != 6 {
			t.Errorf("%s: got %+v (outside the ISR %v), want leader %d, ISR %v, outside %v", c.what, next, outside, c.wantLeader, c.wantISR, c.wantOutside)
		}
	}
}
