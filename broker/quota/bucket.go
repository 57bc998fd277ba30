package quota

import (
	"math"
	"time"
)

// TokenBucket measures controller mutations as Kafka's TokenBucket stat
// does (KIP-599), and client byte rates: a bucket of up to burst tokens,
// burst being the bound times samples windows, refilled at the bound per
// second and emptied by what is recorded. It may go below zero: a
// mutation is let through while the bucket is not negative, whatever its
// size. A new bucket is full, or holds the windows NewTokenBucketHolding
// says. It has no clock: the caller passes the time, in milliseconds, and
// the bound in force, which may change between calls.
type TokenBucket struct {
	samples  int
	windowMs int64
	start    int // windows of tokens a new bucket holds
	tokens   float64
	lastMs   int64
	started  bool
}

// NewTokenBucket returns a full bucket of samples windows of window each.
func NewTokenBucket(samples int, window time.Duration) TokenBucket {
	return NewTokenBucketHolding(samples, window, samples)
}

// NewTokenBucketHolding returns a bucket of samples windows of window
// each that holds start windows of tokens at first (at most samples).
func NewTokenBucketHolding(samples int, window time.Duration, start int) TokenBucket {
	return TokenBucket{samples: samples, windowMs: window.Milliseconds(), start: min(start, samples)}
}

// Tokens refills the bucket to nowMs at bound per second and returns the
// tokens it holds.
func (tb *TokenBucket) Tokens(bound float64, nowMs int64) float64 {
	tb.refill(bound, nowMs)
	return tb.tokens
}

// Record refills the bucket to nowMs and takes v out of it.
func (tb *TokenBucket) Record(v, bound float64, nowMs int64) {
	tb.refill(bound, nowMs)
	tb.tokens = min(tb.burst(bound), tb.tokens-v)
}

func (tb *TokenBucket) burst(bound float64) float64 {
	return float64(tb.samples) * float64(tb.windowMs) / 1000 * bound
}

func (tb *TokenBucket) refill(bound float64, nowMs int64) {
	burst := tb.burst(bound)
	if !tb.started {
		tb.started, tb.tokens, tb.lastMs = true, float64(tb.start)*float64(tb.windowMs)/1000*bound, nowMs
		return
	}
	tb.tokens = min(burst, tb.tokens+bound*float64(nowMs-tb.lastMs)/1000)
	tb.lastMs = nowMs
}

// BucketThrottleTime is Kafka's throttle for a bucket holding tokens below
// zero: the time the refill at bound takes to bring it back to zero,
// rounded to milliseconds.
func BucketThrottleTime(tokens, bound float64) time.Duration {
	if tokens >= 0 || bound <= 0 {
		return 0
	}
	ms := math.Round(-tokens / bound * 1000)
	return time.Duration(min(ms, math.MaxInt32)) * time.Millisecond
}
