package replication

import (
	"errors"
	"fmt"

	"github.com/gregor-io/gregor/protocol/record"
)

// Truncation is where a follower cuts its log after the leader reported a
// diverging epoch, and whether that settles the divergence.
type Truncation struct {
	// Offset is the first offset to remove (storage.Log.TruncateTo).
	Offset int64
	// Done is false when the follower's log holds a different epoch than
	// the leader's at the cut: the next fetch, from the shorter log and
	// with an older last fetched epoch, may diverge again, further back.
	Done bool
}

// Diverged decides the truncation for a leader's diverging epoch answer:
// epoch is the largest epoch of the leader's log at most the follower's
// last fetched epoch and end the first offset after it there. local is the
// follower's own answer for epoch (storage.Log.EndOffsetForEpoch: its
// largest epoch at most epoch and the offset after it, or -1, -1), leo and
// logStart its log end and start offsets.
//
// When both logs have epoch, they agree up to the smaller of their ends
// for it, and the follower cuts there. When the follower's largest epoch
// below is older, its records past that epoch's end were never the
// leader's; it cuts there and asks again. With no epoch at or below, no
// record of the follower's log is known to be the leader's: it cuts down
// to its log start.
func Diverged(epoch int32, end int64, local func(epoch int32) (int32, int64), leo, logStart int64) Truncation {
	localEpoch, localEnd := local(epoch)
	switch {
	case localEpoch < 0 || localEnd < 0:
		return Truncation{Offset: logStart, Done: true}
	case localEpoch == epoch:
		return Truncation{Offset: min(end, localEnd, leo), Done: true}
	default:
		return Truncation{Offset: min(localEnd, leo), Done: false}
	}
}

// WholeBatches returns the prefix of records, a leader's fetch answer, made
// of whole batches that pass record.CheckIntegrity, ready to append with
// their offsets. A leader's answer may end inside a batch (it cuts at its
// byte limits); that partial batch is left out, to be fetched whole next
// time. A damaged whole batch is an error: nothing of it or after it may
// be appended.
func WholeBatches(records []byte) ([]byte, error) {
	it := record.NewIter(records)
	end := 0
	for b, ok := it.Next(); ok; b, ok = it.Next() {
		if err := record.CheckIntegrity(b); err != nil {
			return records[:end], fmt.Errorf("%w: batch at byte %d: %w", ErrCorruptFetch, end, err)
		}
		end = it.Pos()
	}
	if err := it.Err(); err != nil && !errors.Is(err, record.ErrTruncated) {
		return records[:end], fmt.Errorf("%w: batch at byte %d: %w", ErrCorruptFetch, end, err)
	}
	return records[:end], nil
}
