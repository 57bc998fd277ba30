package storage

import "time"

// Observer receives the storage events the broker turns into metrics. The
// storage layer does not depend on a metrics library; whoever opens the
// Manager implements this with one (the broker uses Prometheus). Calls come
// from the syncer's goroutines, concurrently, so implementations must be
// safe for concurrent use and cheap: they run on the group-commit path.
type Observer interface {
	// Fsynced reports one fdatasync of a segment file and how long it took.
	Fsynced(d time.Duration)
	// GroupCommit reports one group-commit round: how many logs it fsyncs
	// together.
	GroupCommit(logs int)
	// Synced reports one log's completed sync and how many records (offsets)
	// it made durable; together with GroupCommit it shows how many appends
	// an fsync serves.
	Synced(records int64)
}

// nopObserver is the Observer of a Manager configured without one.
type nopObserver struct{}

func (nopObserver) Fsynced(time.Duration) {}
func (nopObserver) GroupCommit(int)       {}
func (nopObserver) Synced(int64)          {}
