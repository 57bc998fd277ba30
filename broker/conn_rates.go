package broker

// Connection creation rates (KIP-612), as Kafka's ConnectionQuotas:
//
//   - max.connection.creation.rate bounds the connections per second the
//     broker accepts over all its listeners but the inter-broker one
//     (which, as in Kafka, is left out only when the broker has more than
//     one listener, so that brokers can always reach each other);
//   - listener.name.<listener>.max.connection.creation.rate bounds one
//     listener; a listener without it has the broker-wide value as its own
//     bound, as Kafka's listener quotas read their configs with the
//     listener prefix overriding the plain name.
//
// Every accepted connection is recorded in the broker-wide rate (but on
// the inter-broker listener) and in its listener's, measured as the client
// quotas are (quota.window.num windows of quota.window.size.seconds, the
// span at least quota.window.num-1 windows). When that takes a rate over
// its bound, the listener's accept loop waits the longest of the two
// throttle times, at most one window, before serving the connection and
// accepting the next, as Kafka's acceptor blocks: connections are delayed,
// not refused (the kernel's accept backlog holds the ones behind). A
// connection then closed for its address's connection_creation_rate
// (client_quotas.go) is taken back out of both rates. Both bounds change
// with dynamic broker configs, per broker or cluster-wide.

import (
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gregor-io/gregor/broker/configs"
	"github.com/gregor-io/gregor/broker/quota"
	"github.com/gregor-io/gregor/coordinator/cluster"
)

// connRates measures the broker's and each listener's connection creation
// rates against their bounds.
type connRates struct {
	samples int
	window  time.Duration
	// protected is the listener left out of the broker-wide rate
	// (listenerSetup.protected).
	protected string
	limits    atomic.Pointer[connRateLimits]
	mu        struct {
		sync.Mutex
		broker    quota.Rate
		listeners map[string]*quota.Rate
	}
	// throttled counts the accepts delayed and throttledSeconds the
	// delays, by listener.
	throttled        map[string]prometheus.Counter
	throttledSeconds map[string]prometheus.Counter
}

// connRateLimits are the bounds in force, in connections per second.
type connRateLimits struct {
	broker    float64
	listeners map[string]float64
}

func newConnRates(reg prometheus.Registerer, cfg Config, listeners []string, protected string) *connRates {
	r := &connRates{samples: int(cfg.QuotaWindowNum), window: cfg.QuotaWindowSize, protected: protected}
	r.mu.broker = quota.NewRate(r.samples, r.window)
	r.mu.listeners = map[string]*quota.Rate{}
	throttled := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gregor_connection_accept_throttled_total",
		Help: "Connections whose accepting a listener delayed for max.connection.creation.rate or listener.name.<listener>.max.connection.creation.rate (KIP-612), by listener.",
	}, []string{"listener"})
	seconds := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gregor_connection_accept_throttle_seconds_total",
		Help: "Time listeners' accepting was delayed for the connection creation rates, by listener (Kafka's connection-accept-throttle-time, summed).",
	}, []string{"listener"})
	r.throttled, r.throttledSeconds = map[string]prometheus.Counter{}, map[string]prometheus.Counter{}
	for _, l := range listeners {
		rate := quota.NewRate(r.samples, r.window)
		r.mu.listeners[l] = &rate
		r.throttled[l], r.throttledSeconds[l] = throttled.WithLabelValues(l), seconds.WithLabelValues(l)
	}
	if reg != nil {
		reg.MustRegister(throttled, seconds)
	}
	r.limits.Store(connRateLimitsFrom(cfg, listeners, nil, nil))
	return r
}

// connRateLimitsFrom resolves the bounds: a listener's own key beats the
// broker-wide one at any level, and at each a broker's dynamic config
// beats the cluster default, which beats the static config, as Kafka's
// listener-prefixed overrides do.
func connRateLimitsFrom(cfg Config, listeners []string, dynamic, clusterDefault map[string]string) *connRateLimits {
	lookup := func(key, static string, hasStatic bool) (float64, bool) {
		for _, level := range []map[string]string{dynamic, clusterDefault} {
			if v, ok := level[key]; ok {
				if n, err := strconv.ParseInt(v, 10, 32); err == nil && n >= 0 {
					return float64(n), true
				}
			}
		}
		if hasStatic {
			if n, err := strconv.ParseInt(static, 10, 32); err == nil && n >= 0 {
				return float64(n), true
			}
		}
		return 0, false
	}
	brokerWide, _ := lookup("max.connection.creation.rate", strconv.Itoa(int(cfg.MaxConnectionCreationRate)), true)
	lim := &connRateLimits{broker: brokerWide, listeners: map[string]float64{}}
	for _, l := range listeners {
		key := configs.ListenerConnectionCreationRate(l)
		static, ok := cfg.ListenerConfigs[key]
		if v, ok := lookup(key, static, ok); ok {
			lim.listeners[l] = v
		} else {
			lim.listeners[l] = brokerWide
		}
	}
	return lim
}

// update puts in force the bounds of md's dynamic broker configs.
func (r *connRates) update(cfg Config, listeners []string, md *cluster.Metadata) {
	r.limits.Store(connRateLimitsFrom(cfg, listeners, md.BrokerConfigs[cfg.NodeID], md.BrokerConfigs[-1]))
}

// record counts a connection accepted on listener at now and returns how
// long the listener is to wait before serving it: 0 while the rates are
// within their bounds.
func (r *connRates) record(listener string, now time.Time) time.Duration {
	lim := r.limits.Load()
	nowMs := now.UnixMilli()
	r.mu.Lock()
	defer r.mu.Unlock()
	var d time.Duration
	if listener != r.protected {
		r.mu.broker.Record(1, nowMs)
		d = r.throttleLocked(&r.mu.broker, lim.broker, nowMs)
	}
	if lr := r.mu.listeners[listener]; lr != nil {
		lr.Record(1, nowMs)
		d = max(d, r.throttleLocked(lr, lim.listeners[listener], nowMs))
	}
	return d
}

// unrecord takes a connection of listener back out of the rates, as
// Kafka does for one closed for its address's rate.
func (r *connRates) unrecord(listener string, now time.Time) {
	nowMs := now.UnixMilli()
	r.mu.Lock()
	defer r.mu.Unlock()
	if listener != r.protected {
		r.mu.broker.Record(-1, nowMs)
	}
	if lr := r.mu.listeners[listener]; lr != nil {
		lr.Record(-1, nowMs)
	}
}

// throttleLocked is the wait a rate over bound asks for, at most one
// window (Kafka's boundedThrottleTime); a bound of 0 takes the window.
func (r *connRates) throttleLocked(rate *quota.Rate, bound float64, nowMs int64) time.Duration {
	if bound >= math.MaxInt32 {
		return 0
	}
	v, span := rate.Measure(nowMs)
	switch {
	case v <= bound:
		return 0
	case bound <= 0:
		return r.window
	}
	return min(quota.ThrottleTime(v, bound, span), r.window)
}

// delayAccept records a connection accepted on listener and, when that is
// over a connection creation rate, waits the throttle time. It returns
// false when the broker closes meanwhile.
func (b *Broker) delayAccept(listener string) bool {
	d := b.connRates.record(listener, time.Now())
	if d <= 0 {
		return true
	}
	b.connRates.throttled[listener].Inc()
	b.connRates.throttledSeconds[listener].Add(d.Seconds())
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-b.ctx.Done():
		return false
	}
}

// listenerNames are the names of the broker's listeners.
func (b *Broker) listenerNames() []string {
	names := make([]string, 0, len(b.lis.listeners))
	for _, l := range b.lis.listeners {
		names = append(names, l.Name)
	}
	return names
}
