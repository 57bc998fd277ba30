package broker

import (
	"testing"
	"time"

	"github.com/gregor-io/gregor/broker/configs"
)

func quotaAt(ms int64) time.Time { return time.UnixMilli(1_700_000_000_000 + ms) }

// TestReplicationQuotaExceeded: the quota is exceeded while the measured
// rate is above the bound (equal is within it), never without a bound; the
// bytes recorded count whatever the state.
func TestReplicationQuotaExceeded(t *testing.T) {
	qs := newReplicationQuotas(nil, 11, time.Second)
	q := qs.leader
	q.record(3000, quotaAt(0))
	if q.exceeded(quotaAt(0)) {
		t.Fatal("exceeded without a bound")
	}
	q.bound.Store(1000)
	for _, c := range []struct {
		ms   int64
		want bool
	}{{0, true}, {2000, true}, {2999, true}, {3000, false}, {5000, false}} {
		if got := q.exceeded(quotaAt(c.ms)); got != c.want {
			t.Errorf("3000 bytes at 0 against 1000 B/s: exceeded at %d ms = %v, want %v", c.ms, got, c.want)
		}
	}
	q.bound.Store(0)
	if !q.exceeded(quotaAt(5000)) {
		t.Error("a rate of 0 is not exceeded by 3000 bytes")
	}
	q.bound.Store(configs.Unthrottled)
	q.record(1<<40, quotaAt(5000))
	if q.exceeded(quotaAt(5000)) {
		t.Error("exceeded after the bound was removed")
	}
}

// TestReplicationQuotaHoldsCatchUp simulates a follower catching up under
// the throttle, as the fetcher runs it: every round it fetches one
// partition's max bytes unless the quota is exceeded, and records what it
// fetched. With fetches no larger than a second's worth of the rate (Kafka
// advises rates above 1 MB/s, replica.fetch.max.bytes being 1 MiB), what
// it fetched stays, at every point, within the rate times the time since
// the start (at least a window) plus the one fetch that takes the measured
// rate over the bound, and over two minutes it gets within 5% of the rate.
// A fetch far above the rate (1 MiB against 100 KiB/s) is held for about
// ten seconds each, and sample expiry lets some through early: the rate
// holds only roughly (below twice the bound), as it does in Kafka.
func TestReplicationQuotaHoldsCatchUp(t *testing.T) {
	for _, c := range []struct {
		rate, fetch, roundMs int64
		tight                bool
	}{
		{rate: 1 << 20, fetch: 64 << 10, roundMs: 10, tight: true},
		{rate: 1 << 20, fetch: 1 << 20, roundMs: 100, tight: true},
		{rate: 10 << 20, fetch: 1 << 20, roundMs: 50, tight: true},
		{rate: 100 << 10, fetch: 1 << 20, roundMs: 250},
	} {
		q := newReplicationQuotas(nil, 11, time.Second).follower
		q.bound.Store(c.rate)
		var fetched int64
		held := 0
		const spanMs = 120_000
		for ms := int64(0); ms <= spanMs; ms += c.roundMs {
			now := quotaAt(ms)
			if q.exceeded(now) {
				held++
			} else {
				q.record(c.fetch, now)
				fetched += c.fetch
			}
			elapsed := float64(max(ms, 1000)) / 1000
			if limit := float64(c.rate)*elapsed + float64(c.fetch); c.tight && float64(fetched) > limit {
				t.Fatalf("rate %d, fetches of %d: %d bytes fetched after %d ms, above %g", c.rate, c.fetch, fetched, ms, limit)
			}
		}
		ratio := float64(fetched) / (float64(c.rate) * spanMs / 1000)
		if c.tight && (ratio < 0.95 || ratio > 1.05) || !c.tight && (ratio < 0.95 || ratio > 2) {
			t.Errorf("rate %d, fetches of %d: %d bytes in %d s, %.3f of the rate", c.rate, c.fetch, fetched, spanMs/1000, ratio)
		}
		if got := counterValue(t, q.bytes); got != float64(fetched) {
			t.Errorf("rate %d, fetches of %d: %g bytes counted, %d fetched", c.rate, c.fetch, got, fetched)
		}
		if held == 0 {
			t.Errorf("rate %d, fetches of %d: never held back", c.rate, c.fetch)
		}
	}
}

// TestReplicationQuotaAllocs: the throttle's checks on the fetch paths
// allocate nothing, without a throttle (no bound, no throttled partition
// in a response) and with one.
func TestReplicationQuotaAllocs(t *testing.T) {
	b := &Broker{replQuotas: newReplicationQuotas(nil, 11, time.Second)}
	results := make([]fetchResult, 8)
	now := quotaAt(0)
	if n := testing.AllocsPerRun(100, func() {
		b.recordLeaderThrottle(results, now)
		_ = b.replQuotas.follower.exceeded(now)
	}); n != 0 {
		t.Errorf("unthrottled checks: %g allocations per fetch", n)
	}
	q := b.replQuotas.leader
	q.bound.Store(1 << 20)
	ms := int64(0)
	if n := testing.AllocsPerRun(1000, func() {
		ms += 100 // through every sample of the ring and around it
		q.record(4096, quotaAt(ms))
		_ = q.exceeded(quotaAt(ms))
	}); n != 0 {
		t.Errorf("throttled accounting: %g allocations per fetch", n)
	}
}

// TestReplicationQuotaWindowConfig: replication.quota.window.num and
// replication.quota.window.size.seconds are validated and shape the rate.
func TestReplicationQuotaWindowConfig(t *testing.T) {
	base := DefaultConfig()
	if err := base.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		num  int32
		size time.Duration
		ok   bool
	}{{1, time.Second, true}, {30, 5 * time.Second, true}, {0, time.Second, false},
		{11, 0, false}, {11, 1500 * time.Millisecond, false}, {11, 500 * time.Millisecond, false}} {
		cfg := base
		cfg.ReplicationQuotaWindowNum, cfg.ReplicationQuotaWindowSize = c.num, c.size
		if err := cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("window num %d size %s: Validate %v, want ok=%v", c.num, c.size, err, c.ok)
		}
	}
	q := newReplicationQuotas(nil, 2, 5*time.Second).leader
	q.bound.Store(100)
	q.record(1000, quotaAt(0))
	// Over one window of 5 s: 200 B/s; over two: 100 B/s; the sample
	// expires after two windows.
	for _, c := range []struct {
		ms       int64
		exceeded bool
	}{{0, true}, {5000, true}, {9999, true}, {10000, false}} {
		if got := q.exceeded(quotaAt(c.ms)); got != c.exceeded {
			t.Errorf("2 windows of 5 s, 1000 bytes at 0 against 100 B/s: exceeded at %d ms = %v, want %v", c.ms, got, c.exceeded)
		}
	}
}
