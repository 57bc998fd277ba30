// Package share is Gregor's share-group state (KIP-932): the records a
// share group has in flight on each partition, and their durable form.
//
// Two state machines live here, both with no clock, no goroutines and no
// I/O, driven by the broker as the group coordinator is:
//
//   - Partition (partition.go) is the share-partition state a partition's
//     leader keeps for one share group: which records are acquired, by
//     which member and until when, how often each was delivered, which are
//     acknowledged or archived, and the share-partition start offset
//     (SPSO) below which every record is done.
//   - Coordinator (coordinator.go) is the share coordinator of one
//     __share_group_state partition: it keeps each share partition's
//     durable State as records in that partition and answers
//     InitializeShareGroupState, ReadShareGroupState,
//     WriteShareGroupState, DeleteShareGroupState and
//     ReadShareGroupStateSummary (APIs 83-87).
//
// The leader reads a share partition's State from its coordinator when it
// first serves it, and writes it back whenever records are acknowledged,
// released or archived, before answering the acknowledgement. Acquisition
// is not written: after a leader change, records that were acquired but not
// acknowledged are available again.
package share
