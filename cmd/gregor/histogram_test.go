package main

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestHistogramBuckets(t *testing.T) {
	// Every value lies in a bucket whose upper bound is at most 1/64 above
	// it, and buckets are in value order.
	prev := -1
	for _, v := range []int64{0, 1, 127, 128, 129, 255, 256, 1000, 1 << 20, 123456789, 1<<62 + 12345, 1<<63 - 1} {
		i := histBucket(v)
		if i < prev || i >= histBuckets {
			t.Fatalf("bucket(%d) = %d after %d (of %d)", v, i, prev, histBuckets)
		}
		prev = i
		up := histUpper(i)
		if up < v || float64(up-v) > float64(v)/histSub {
			t.Errorf("value %d: bucket %d upper bound %d, want within 1/%d above", v, i, up, histSub)
		}
		if i > 0 && histUpper(i-1) >= v {
			t.Errorf("value %d: the previous bucket's upper bound %d covers it", v, histUpper(i-1))
		}
	}
}

func TestHistogramQuantiles(t *testing.T) {
	var h histogram
	if h.quantile(0.99) != 0 || h.mean() != 0 {
		t.Error("an empty histogram reports values")
	}
	r := rand.New(rand.NewPCG(1, 2))
	var vals []int64
	for range 10000 {
		v := r.Int64N(int64(50 * time.Millisecond))
		vals = append(vals, v)
		h.record(time.Duration(v))
	}
	slices.Sort(vals)
	for _, q := range []float64{0.5, 0.99, 0.999, 1} {
		exact := vals[int(q*float64(len(vals)))-1]
		got := int64(h.quantile(q))
		if got < exact || float64(got-exact) > float64(exact)/histSub+1 {
			t.Errorf("quantile(%v) = %d, exact %d", q, got, exact)
		}
	}
	if h.quantile(1) != time.Duration(vals[len(vals)-1]) || h.count() != 10000 {
		t.Errorf("max %v, count %d; want %v and 10000", h.quantile(1), h.count(), time.Duration(vals[len(vals)-1]))
	}
	h = histogram{}
	h.record(3 * time.Millisecond)
	if h.quantile(0.5) != 3*time.Millisecond || h.quantile(0) != 3*time.Millisecond || h.mean() != 3*time.Millisecond {
		t.Errorf("one value of 3ms: p50 %v p0 %v mean %v", h.quantile(0.5), h.quantile(0), h.mean())
	}
}
