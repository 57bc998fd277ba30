// Package replication holds the decisions of Kafka's ISR replication for one
// partition, as state machines with no clock, no goroutines and no I/O: the
// broker feeds them what happened (a follower fetched, time passed, the
// registry changed the partition) and carries out what they return (move the
// high watermark, propose an ISR to the registry, truncate a follower's log).
//
// A leader (Leader) tracks each follower's log end offset, as the fetch
// offsets of its fetches tell it, and when it was last caught up. The high
// watermark is the smallest log end offset over the ISR, the leader's own
// counted as the offset up to which its log is durable when appends are
// fsynced before they are acknowledged; it never moves back. An ISR member
// that has not caught up for replica.lag.time.max.ms is proposed out, a
// replica that has reached the high watermark and the start of the
// leader's epoch is proposed in. Proposals go to the registry as a
// compare-and-swap on the partition's state, so a stale leader's fails.
//
// A follower truncates its log where it diverges from the leader's
// (KIP-101, KIP-279, KIP-320): the leader answers a fetch whose last
// fetched epoch it does not have up to that offset with the end of that
// epoch in its own log, and Diverged says where the follower's log has to
// be cut.
package replication
