package group

import (
	"errors"
	"testing"
)

var topicA, topicB = [16]byte{1}, [16]byte{2}

// parts builds a partitionSet from topic, partition pairs.
func parts(pairs ...any) partitionSet {
	s := partitionSet{}
	for i := 0; i < len(pairs); i += 2 {
		s.add(pairs[i].([16]byte), int32(pairs[i+1].(int)))
	}
	return s
}

func noOwners([16]byte, int32) int32 { return -1 }

func ownersOf(held partitionSet, epoch int32) func([16]byte, int32) int32 {
	return func(t [16]byte, p int32) int32 {
		if held.has(t, p) {
			return epoch
		}
		return -1
	}
}

func wantState(t *testing.T, what string, got reconcileState, epoch, prev int32, state memberState, assigned, revoking partitionSet) {
	t.Helper()
	if got.epoch != epoch || got.previousEpoch != prev || got.state != state ||
		!got.assigned.equal(assigned) || !got.pendingRevocation.equal(revoking) {
		t.Fatalf("%s: epoch %d (previous %d) %s, assigned %v, revoking %v; want epoch %d (previous %d) %s, assigned %v, revoking %v",
			what, got.epoch, got.previousEpoch, got.state, got.assigned, got.pendingRevocation,
			epoch, prev, state, assigned, revoking)
	}
}

// TestReconcileRevokeBeforeAssign: a member whose target moves one of its
// partitions away first revokes it at its own epoch, and moves to the
// target epoch with its new partitions only once its heartbeat shows the
// revoked one gone.
func TestReconcileRevokeBeforeAssign(t *testing.T) {
	m := reconcileState{epoch: 1, previousEpoch: 0, state: memberStable, assigned: parts(topicA, 0, topicA, 1), pendingRevocation: partitionSet{}}
	in := reconcileInput{targetEpoch: 2, target: parts(topicA, 0, topicB, 0), ownerEpoch: noOwners, owned: parts(topicA, 0, topicA, 1)}

	m, err := reconcile(m, in)
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, "new target", m, 1, 1, memberUnrevokedPartitions, parts(topicA, 0), parts(topicA, 1))

	// The heartbeat still reports the revoked partition: no progress.
	same, _ := reconcile(m, in)
	wantState(t, "still owned", same, 1, 1, memberUnrevokedPartitions, parts(topicA, 0), parts(topicA, 1))
	// Nor when it does not say what it owns.
	in.owned = nil
	same, _ = reconcile(m, in)
	wantState(t, "owned not reported", same, 1, 1, memberUnrevokedPartitions, parts(topicA, 0), parts(topicA, 1))

	in.owned = parts(topicA, 0)
	m, _ = reconcile(m, in)
	wantState(t, "revoked", m, 2, 1, memberStable, parts(topicA, 0, topicB, 0), partitionSet{})

	// Reconciled: nothing changes.
	same, _ = reconcile(m, in)
	wantState(t, "reconciled", same, 2, 1, memberStable, parts(topicA, 0, topicB, 0), partitionSet{})
}

// TestReconcileRevokedAlready: partitions to revoke that the member's
// heartbeat no longer lists are not waited for.
func TestReconcileRevokedAlready(t *testing.T) {
	m := reconcileState{epoch: 3, state: memberStable, assigned: parts(topicA, 0, topicA, 1), pendingRevocation: partitionSet{}}
	in := reconcileInput{targetEpoch: 4, target: parts(topicA, 0), ownerEpoch: noOwners, owned: parts(topicA, 0)}
	m, _ = reconcile(m, in)
	wantState(t, "revoked before asked", m, 4, 3, memberStable, parts(topicA, 0), partitionSet{})
}

// TestReconcileUnreleased: a target partition another member still holds
// is not handed out; the member moves to the target epoch with the rest
// and gets it once it is free.
func TestReconcileUnreleased(t *testing.T) {
	held := parts(topicA, 2)
	m := reconcileState{epoch: 5, state: memberStable, assigned: parts(topicA, 1), pendingRevocation: partitionSet{}}
	in := reconcileInput{targetEpoch: 6, target: parts(topicA, 1, topicA, 2, topicA, 3), ownerEpoch: ownersOf(held, 5), owned: parts(topicA, 1)}
	m, _ = reconcile(m, in)
	wantState(t, "one held elsewhere", m, 6, 5, memberUnreleasedPartitions, parts(topicA, 1, topicA, 3), partitionSet{})

	m, _ = reconcile(m, in)
	wantState(t, "still held", m, 6, 6, memberUnreleasedPartitions, parts(topicA, 1, topicA, 3), partitionSet{})

	in.ownerEpoch = noOwners
	m, _ = reconcile(m, in)
	wantState(t, "released", m, 6, 6, memberStable, parts(topicA, 1, topicA, 2, topicA, 3), partitionSet{})
}

// TestReconcileJoin: a new member (epoch 0, nothing owned) goes straight
// to the target epoch with its free partitions.
func TestReconcileJoin(t *testing.T) {
	m := reconcileState{epoch: 0, state: memberStable, assigned: partitionSet{}, pendingRevocation: partitionSet{}}
	in := reconcileInput{targetEpoch: 1, target: parts(topicA, 0, topicA, 1), ownerEpoch: noOwners, owned: partitionSet{}}
	m, _ = reconcile(m, in)
	wantState(t, "joined", m, 1, 0, memberStable, parts(topicA, 0, topicA, 1), partitionSet{})
}

// TestReconcileUnknownState: a member in a state this version does not
// know is fenced unless it owns nothing, and then starts over.
func TestReconcileUnknownState(t *testing.T) {
	m := reconcileState{epoch: 4, state: memberUnknown, assigned: parts(topicA, 0), pendingRevocation: partitionSet{}}
	in := reconcileInput{targetEpoch: 5, target: parts(topicA, 0), ownerEpoch: noOwners, owned: parts(topicA, 0)}
	if _, err := reconcile(m, in); !errors.As(err, new(errFencedUnknownState)) {
		t.Fatalf("unknown state owning partitions: %v, want fenced", err)
	}
	in.owned = nil
	if _, err := reconcile(m, in); err == nil {
		t.Fatal("unknown state not saying what it owns: not fenced")
	}
	in.owned = partitionSet{}
	m, err := reconcile(m, in)
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, "unknown, owning nothing", m, 5, 4, memberStable, parts(topicA, 0), partitionSet{})
}

// TestReconcileNeverDoubleAssigns: stepping two members through a swap of
// their partitions in any heartbeat order never has a partition held by
// both (assigned or pending revocation) at once.
func TestReconcileNeverDoubleAssigns(t *testing.T) {
	for _, order := range [][]int{{0, 1, 0, 1, 0, 1}, {1, 0, 1, 0, 1, 0}, {0, 0, 0, 1, 1, 1}, {1, 1, 1, 0, 0, 0}} {
		ms := []reconcileState{
			{epoch: 1, state: memberStable, assigned: parts(topicA, 0, topicA, 1), pendingRevocation: partitionSet{}},
			{epoch: 1, state: memberStable, assigned: parts(topicA, 2, topicA, 3), pendingRevocation: partitionSet{}},
		}
		targets := []partitionSet{parts(topicA, 2, topicA, 3), parts(topicA, 0, topicA, 1)}
		for step := 0; step < 30; step++ {
			i := order[step%len(order)]
			other := ms[1-i]
			in := reconcileInput{
				targetEpoch: 2, target: targets[i],
				ownerEpoch: func(t [16]byte, p int32) int32 {
					if other.assigned.has(t, p) || other.pendingRevocation.has(t, p) {
						return other.epoch
					}
					return -1
				},
				// The member's heartbeat reports what it was assigned
				// (a client revokes as soon as it is told to).
				owned: ms[i].assigned,
			}
			next, err := reconcile(ms[i], in)
			if err != nil {
				t.Fatal(err)
			}
			ms[i] = next
			for _, t0 := range []int32{0, 1, 2, 3} {
				holders := 0
				for _, m := range ms {
					if m.assigned.has(topicA, t0) || m.pendingRevocation.has(topicA, t0) {
						holders++
					}
				}
				if holders > 1 {
					t.Fatalf("order %v: partition %d held by %d members: %+v", order, t0, holders, ms)
				}
			}
		}
		wantState(t, "member 0 at the end", ms[0], 2, ms[0].previousEpoch, memberStable, targets[0], partitionSet{})
		wantState(t, "member 1 at the end", ms[1], 2, ms[1].previousEpoch, memberStable, targets[1], partitionSet{})
	}
}
