package main

import (
	"math"
	"math/bits"
	"time"
)

// histogram counts durations in log-linear buckets, as HdrHistogram does:
// values below 2*histSub nanoseconds have a bucket each; above, every power
// of two is split into histSub buckets. A value's bucket is therefore
// within 1/histSub (1.6%) of it, from nanoseconds to centuries, in a fixed
// 30 KB. The zero value is empty and ready to use; it is not safe for
// concurrent use.
type histogram struct {
	counts   [histBuckets]uint64
	n        uint64
	sum      float64 // nanoseconds, for the mean
	min, max int64
}

const (
	histSubBits = 6
	histSub     = 1 << histSubBits // buckets per power of two
	// A non-negative int64 has at most 63 bits: shifts up to 63-histSubBits-1.
	histBuckets = (63-histSubBits)*histSub + histSub
)

// bucket returns the index of v's bucket; v >= 0.
func histBucket(v int64) int {
	if v < 2*histSub {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - histSubBits - 1 // >= 1
	return shift*histSub + int(v>>shift)
}

// histUpper is the largest value in bucket i.
func histUpper(i int) int64 {
	if i < 2*histSub {
		return int64(i)
	}
	shift := i/histSub - 1
	sub := int64(i - shift*histSub)
	return (sub+1)<<shift - 1
}

// record adds d; negative durations count as 0.
func (h *histogram) record(d time.Duration) {
	v := max(int64(d), 0)
	h.counts[histBucket(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	h.max = max(h.max, v)
	h.n++
	h.sum += float64(v)
}

// count is the number of values recorded.
func (h *histogram) count() uint64 { return h.n }

// quantile returns the smallest bucket bound at or above which a fraction
// q of the values lie (q in [0, 1]); never more than the largest value.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(min(max(histUpper(i), h.min), h.max))
		}
	}
	return time.Duration(h.max)
}

// mean is the average value.
func (h *histogram) mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.n))
}
