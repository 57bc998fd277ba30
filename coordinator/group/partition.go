package group

import (
	"math"
	"unicode/utf16"
)

// PartitionFor returns the __consumer_offsets partition of a group id, by
// Kafka's formula: Utils.abs(groupId.hashCode()) % partitions. The hash is
// Java's String.hashCode over the UTF-16 code units of the id (h = 31*h + c
// in 32-bit two's complement), and Utils.abs maps MinInt32 to 0 rather than
// to itself. Every broker must agree on this for FindCoordinator, and it
// must match Kafka's for offsets migrated from a Kafka cluster.
func PartitionFor(groupID string, partitions int32) int32 {
	var h int32 // wraps on overflow, like Java's int
	for _, u := range utf16.Encode([]rune(groupID)) {
		h = 31*h + int32(u)
	}
	if h == math.MinInt32 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % partitions
}
