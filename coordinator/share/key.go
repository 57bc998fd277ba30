package share

import (
	"encoding/base64"
	"math"
	"strconv"
	"unicode/utf16"
)

// String is the key Kafka's share coordinator hashes (SharePartitionKey's
// coordinator key): the group id, the topic id as Kafka prints a Uuid
// (URL-safe base64, no padding) and the partition, joined by colons.
func (k Key) String() string {
	return k.Group + ":" + base64.RawURLEncoding.EncodeToString(k.TopicID[:]) + ":" + strconv.Itoa(int(k.Partition))
}

// CoordinatorPartition is the __share_group_state partition of a share
// coordinator key (Key.String): Java's String.hashCode of it, made
// non-negative, modulo partitions, as Kafka picks it.
func CoordinatorPartition(key string, partitions int32) int32 {
	var h int32 // wraps like Java's int
	for _, u := range utf16.Encode([]rune(key)) {
		h = 31*h + int32(u)
	}
	if h == math.MinInt32 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % partitions
}
