package group

// Reconciliation of a consumer group member (KIP-848): moving a member's
// current assignment towards its target assignment one safe step at a
// time, as Kafka's consumer group coordinator does.
//
// A member owns partitions at its member epoch. When the group's target
// assignment changes (a new assignment epoch), the member first gives up
// what it no longer has in its target: it stays at its epoch with those
// partitions pending revocation until a heartbeat reports it no longer
// owns them. Only then does it move to the target epoch and get the new
// partitions, and of those only the ones no other member still holds
// (assigned, or pending revocation); the rest wait (unreleased) and are
// handed over by a later heartbeat once their owner let them go.

// memberState is a member's reconciliation state, with Kafka's values (the
// State field of the current member assignment record).
type memberState int8

const (
	// memberStable: the member has its target assignment, or all of it
	// that it can have at its epoch.
	memberStable memberState = 0
	// memberUnrevokedPartitions: the member must revoke the partitions
	// pending revocation before it moves on.
	memberUnrevokedPartitions memberState = 1
	// memberUnreleasedPartitions: the member is at the target epoch, but
	// some of its target partitions are still held by other members.
	memberUnreleasedPartitions memberState = 2
	// memberUnknown: a state this version does not know (written by a
	// newer one); the member must rejoin.
	memberUnknown memberState = 127
)

func (s memberState) String() string {
	switch s {
	case memberStable:
		return "STABLE"
	case memberUnrevokedPartitions:
		return "UNREVOKED_PARTITIONS"
	case memberUnreleasedPartitions:
		return "UNRELEASED_PARTITIONS"
	}
	return "UNKNOWN"
}

// partitionSet is a set of partitions by topic id.
type partitionSet map[[16]byte]map[int32]bool

func (s partitionSet) has(topic [16]byte, p int32) bool { return s[topic][p] }

func (s partitionSet) add(topic [16]byte, p int32) {
	if s[topic] == nil {
		s[topic] = map[int32]bool{}
	}
	s[topic][p] = true
}

// empty reports whether the set holds no partition.
func (s partitionSet) empty() bool {
	for _, ps := range s {
		if len(ps) > 0 {
			return false
		}
	}
	return true
}

// equal reports whether both sets hold the same partitions.
func (s partitionSet) equal(o partitionSet) bool {
	n := 0
	for t, ps := range s {
		for p := range ps {
			if !o.has(t, p) {
				return false
			}
			n++
		}
	}
	m := 0
	for _, ps := range o {
		m += len(ps)
	}
	return n == m
}

// reconcileState is what reconciliation works on: a member's epochs, state
// and partitions.
type reconcileState struct {
	epoch, previousEpoch int32
	state                memberState
	assigned             partitionSet
	pendingRevocation    partitionSet
}

// reconcileInput is what a reconciliation step knows besides the member.
type reconcileInput struct {
	// targetEpoch and target are the group's assignment epoch and the
	// member's target assignment at it.
	targetEpoch int32
	target      partitionSet
	// ownerEpoch returns the epoch of the member that holds a partition
	// (assigned or pending revocation), -1 when none does. The member
	// being reconciled must not count as a holder of its own partitions.
	ownerEpoch func(topic [16]byte, p int32) int32
	// owned is what the member's heartbeat says it owns; nil when the
	// heartbeat did not say (the member then still owns its partitions
	// pending revocation).
	owned partitionSet
}

// errFencedUnknownState is returned for a member in a state this version
// does not know whose heartbeat does not show it owning nothing: it must
// rejoin.
type errFencedUnknownState struct{}

func (errFencedUnknownState) Error() string {
	return "the consumer group member is in an unknown state; it must abandon all its partitions and rejoin"
}

// reconcile returns the member's next state: one step towards its target
// assignment, or the same state when it cannot move yet. It follows
// Kafka's reconciliation (CurrentAssignmentBuilder).
func reconcile(m reconcileState, in reconcileInput) (reconcileState, error) {
	switch m.state {
	case memberStable:
		if m.epoch == in.targetEpoch {
			return m, nil
		}
		return nextAssignment(m, in, m.epoch), nil
	case memberUnrevokedPartitions:
		if ownsAny(in.owned, m.pendingRevocation) {
			return m, nil
		}
		return nextAssignment(m, in, m.epoch+1), nil
	case memberUnreleasedPartitions:
		return nextAssignment(m, in, m.epoch), nil
	}
	if in.owned == nil || !in.owned.empty() {
		return m, errFencedUnknownState{}
	}
	return nextAssignment(m, in, in.targetEpoch), nil
}

// ownsAny reports whether owned holds any partition of set; a nil owned
// (not reported) counts as holding them all.
func ownsAny(owned, set partitionSet) bool {
	if owned == nil {
		return !set.empty()
	}
	for t, ps := range owned {
		for p := range ps {
			if set.has(t, p) {
				return true
			}
		}
	}
	return false
}

// nextAssignment computes the member's next state from its assigned
// partitions, at epoch when it must first revoke some.
func nextAssignment(m reconcileState, in reconcileInput, epoch int32) reconcileState {
	keep, revoke, gain := partitionSet{}, partitionSet{}, partitionSet{}
	unreleased := false
	for t, ps := range m.assigned {
		for p := range ps {
			if in.target.has(t, p) {
				keep.add(t, p)
			} else {
				revoke.add(t, p)
			}
		}
	}
	for t, ps := range in.target {
		for p := range ps {
			switch {
			case keep.has(t, p):
			case in.ownerEpoch(t, p) != -1:
				unreleased = true
			default:
				gain.add(t, p)
			}
		}
	}
	next := m
	switch {
	case !revoke.empty() && ownsAny(in.owned, revoke):
		// Give up what is no longer the member's before anything else:
		// it stays at its epoch until it reports them revoked.
		next.state = memberUnrevokedPartitions
		next.setEpoch(epoch)
		next.assigned, next.pendingRevocation = keep, revoke
	default:
		for t, ps := range gain {
			for p := range ps {
				keep.add(t, p)
			}
		}
		next.state = memberStable
		if unreleased {
			next.state = memberUnreleasedPartitions
		}
		next.setEpoch(in.targetEpoch)
		next.assigned, next.pendingRevocation = keep, partitionSet{}
	}
	return next
}

// setEpoch moves the member to epoch, remembering the one it was at (the
// same one when it stays), as Kafka does: a member whose answer with the
// new epoch was lost may come back with the previous one.
func (m *reconcileState) setEpoch(epoch int32) {
	m.previousEpoch, m.epoch = m.epoch, epoch
}
