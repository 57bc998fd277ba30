package broker

// Replication throttles, with Apache Kafka's semantics (its
// ReplicationQuotaManager): so that a partition move, or a replica catching
// up after a restart, does not take all of a broker's bandwidth from
// producers and consumers.
//
// Each broker has two quotas, in bytes per second: leader.replication.throttled.rate
// for what it sends as leader, follower.replication.throttled.rate for what
// it fetches as follower. Both are dynamic broker configs (this broker's,
// else the cluster default; unset, Long.MAX_VALUE: no limit). They apply
// only to throttled replicas, which topics list in
// leader.replication.throttled.replicas and follower.replication.throttled.replicas
// as partition:broker pairs (or "*"): a partition P this broker B leads is
// leader-throttled when P:B is listed, one it follows follower-throttled
// when P:B is listed.
//
//   - Every byte of a throttled partition's records that a leader sends to
//     a follower (in sync or not) counts against the leader quota, and every
//     byte a follower fetches for a throttled partition against the follower
//     quota, as Kafka counts them: the throttle bounds all replication
//     traffic of those partitions.
//   - While the measured rate is above the quota, the leader leaves the
//     throttled partitions of out-of-sync followers out of its fetch
//     responses (they get no records, and do not count toward min_bytes, so
//     a follower's fetch of nothing else long-polls), and the follower
//     leaves its throttled partitions out of its fetch requests while it is
//     not in sync with them. An in-sync replica is never held back: acks=all
//     produce waits for the ISR, and throttling it would slow producers and
//     shrink the ISR. On the leader, in sync means in the partition's ISR; on
//     the follower, as in Kafka's fetcher, that its last fetch of the
//     partition reached the leader's high watermark (unknown after a start,
//     or a new leader or epoch, is not in sync), or, unlike Kafka's, that
//     the follower is in the ISR: after a leader change Kafka's fetcher
//     throttles an ISR member whose lag it does not know yet, and acks=all
//     produce waits for it.
//
// The rate is measured as Kafka's replication quota sensor measures it (a
// SimpleRate over a WindowedSum): replication.quota.window.num samples
// (default 11) of replication.quota.window.size.seconds (default 1 s) each,
// static broker settings; the rate is the sum of the samples over the time
// since the oldest one started, at least one window.
//
// Kafka counts the size of a throttled partition's whole response entry on
// the leader; Gregor counts its records' bytes, as the follower does in both.
//
// With no throttle configured (no throttled replicas listed for a partition)
// the fetch paths take no lock and allocate nothing for this.

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gregor-io/gregor/broker/configs"
	"github.com/gregor-io/gregor/broker/quota"
	"github.com/gregor-io/gregor/coordinator/cluster"
)

// replicationQuota is one side's throttle on this broker: the configured
// bound and the measured rate of throttled bytes.
type replicationQuota struct {
	// bound is the quota in bytes per second; configs.Unthrottled for none.
	bound atomic.Int64
	mu    struct {
		sync.Mutex
		rate quota.Rate // measured with MeasureSimple, as Kafka's SimpleRate
	}
	// bytes counts what record was given; heldBack the partitions left out
	// of a fetch; heldSeconds the time fetches held partitions back.
	bytes, heldBack, heldSeconds prometheus.Counter
}

func newReplicationQuota(samples int, window time.Duration) *replicationQuota {
	q := &replicationQuota{}
	q.bound.Store(configs.Unthrottled)
	q.mu.rate = quota.NewRate(samples, window)
	return q
}

// exceeded reports whether the measured rate is above the bound, as Kafka's
// isQuotaExceeded: without a bound it is never, and costs no lock.
func (q *replicationQuota) exceeded(now time.Time) bool {
	bound := q.bound.Load()
	if bound == configs.Unthrottled {
		return false
	}
	q.mu.Lock()
	rate := q.mu.rate.MeasureSimple(now.UnixMilli())
	q.mu.Unlock()
	return rate > float64(bound)
}

// record counts n bytes of throttled partitions, whether or not the quota
// is exceeded (Kafka records without checking).
func (q *replicationQuota) record(n int64, now time.Time) {
	if n <= 0 {
		return
	}
	q.mu.Lock()
	q.mu.rate.Record(float64(n), now.UnixMilli())
	q.mu.Unlock()
	q.bytes.Add(float64(n))
}

// rate is the measured rate now, in bytes per second.
func (q *replicationQuota) rate(now time.Time) float64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.mu.rate.MeasureSimple(now.UnixMilli())
}

// held counts n partitions held back by a fetch (request or response) that
// took d.
func (q *replicationQuota) held(n int, d time.Duration) {
	if n > 0 {
		q.heldBack.Add(float64(n))
		q.heldSeconds.Add(d.Seconds())
	}
}

// replicationQuotas are the leader's and the follower's throttles.
type replicationQuotas struct {
	leader, follower *replicationQuota
}

// Throttle sides, the metrics' side label.
const (
	throttleLeader   = "leader"
	throttleFollower = "follower"
)

// newReplicationQuotas makes the two quotas, unbounded, measuring their
// rates over samples windows of window each, and registers their metrics
// with reg (nil: none).
func newReplicationQuotas(reg prometheus.Registerer, samples int, window time.Duration) replicationQuotas {
	side := []string{"side"}
	bytes := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gregor_replication_throttled_bytes_total",
		Help: "Record bytes of throttled replicas (leader.replication.throttled.replicas, follower.replication.throttled.replicas) replicated, in sync or not, counted against this broker's replication throttle, by side: leader (sent) or follower (fetched).",
	}, side)
	held := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gregor_replication_throttled_partitions_total",
		Help: "Partitions held back by the replication throttle, by side: left out of a fetch response to an out-of-sync follower (leader) or out of this broker's fetch request (follower), once per fetch.",
	}, side)
	heldTime := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gregor_replication_throttled_seconds_total",
		Help: "Time fetches held partitions back for the replication throttle, by side: on the leader the handling time (long poll included) of follower fetches answered without some throttled partitions, on the follower the fetch rounds (pauses included) that left some out.",
	}, side)
	qs := replicationQuotas{leader: newReplicationQuota(samples, window), follower: newReplicationQuota(samples, window)}
	for name, q := range map[string]*replicationQuota{throttleLeader: qs.leader, throttleFollower: qs.follower} {
		q.bytes, q.heldBack, q.heldSeconds = bytes.WithLabelValues(name), held.WithLabelValues(name), heldTime.WithLabelValues(name)
	}
	if reg != nil {
		rate := func(name string, q *replicationQuota) prometheus.Collector {
			return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name:        "gregor_replication_throttle_byte_rate",
				Help:        "Measured rate, in bytes per second, of the replication traffic of throttled replicas (Kafka's LeaderReplication / FollowerReplication byte-rate), over replication.quota.window.num windows of replication.quota.window.size.seconds, by side.",
				ConstLabels: prometheus.Labels{"side": name},
			}, func() float64 { return q.rate(time.Now()) })
		}
		limit := func(name string, q *replicationQuota) prometheus.Collector {
			return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name:        "gregor_replication_throttle_limit_bytes_per_second",
				Help:        "The replication throttle in force, by side: leader.replication.throttled.rate or follower.replication.throttled.rate, 9223372036854775807 (Kafka's default) when unset.",
				ConstLabels: prometheus.Labels{"side": name},
			}, func() float64 { return float64(q.bound.Load()) })
		}
		reg.MustRegister(bytes, held, heldTime,
			rate(throttleLeader, qs.leader), rate(throttleFollower, qs.follower),
			limit(throttleLeader, qs.leader), limit(throttleFollower, qs.follower))
	}
	return qs
}

// updateReplicationQuotas sets the quotas from the dynamic broker configs
// in md, as Kafka's BrokerConfigHandler does on every broker config change.
func (b *Broker) updateReplicationQuotas(md *cluster.Metadata) {
	dynamic, clusterDefault := md.BrokerConfigs[b.cfg.NodeID], md.BrokerConfigs[-1]
	const alterDirs = "replica.alter.log.dirs.io.max.bytes.per.second"
	rate, ok := configs.DynamicBrokerRate(alterDirs, dynamic, clusterDefault)
	if !ok {
		b.logger.Warn("log dir move throttle does not parse; not throttling", "config", alterDirs)
	}
	if old := b.alterLogDirsRate.Swap(rate); old != rate {
		b.loggerFor("storage").Info("log dir move throttle changed", "config", alterDirs,
			"bytes_per_second", rate, "unthrottled", rate == configs.Unthrottled)
	}
	for name, q := range map[string]*replicationQuota{
		"leader.replication.throttled.rate":   b.replQuotas.leader,
		"follower.replication.throttled.rate": b.replQuotas.follower,
	} {
		rate, ok := configs.DynamicBrokerRate(name, dynamic, clusterDefault)
		if !ok {
			b.logger.Warn("replication throttle rate does not parse; not throttling", "config", name)
		}
		if old := q.bound.Swap(rate); old != rate {
			b.loggerFor("replication").Info("replication throttle changed", "config", name,
				"bytes_per_second", rate, "unthrottled", rate == configs.Unthrottled)
		}
	}
}
