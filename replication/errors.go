package replication

import "errors"

// ErrCorruptFetch is a leader's fetch answer holding a batch that fails its
// integrity check (length, magic, CRC): the follower appends nothing from it
// on, and fetches again.
var ErrCorruptFetch = errors.New("replication: damaged batch in a fetch answer")
