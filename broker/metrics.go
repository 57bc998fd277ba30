package broker

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// metrics are the broker's request and connection metrics. The full set
// comes with the operator issue; these show the wiring: registered through
// the Registerer the broker is given, never globally.
type metrics struct {
	requests    *prometheus.CounterVec
	errors      *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	connections prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gregor_requests_total",
			Help: "Requests handled, by API and version.",
		}, []string{"api", "version"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gregor_request_failures_total",
			Help: "Requests that closed their connection instead of getting a response, by API.",
		}, []string{"api"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gregor_request_duration_seconds",
			Help:    "Time from a request's arrival to its response being queued, by API.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
		}, []string{"api"}),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gregor_connections_open",
			Help: "Client connections open.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.errors, m.latency, m.connections)
	}
	return m
}

// apiMetrics are one API's request metrics, resolved from their label
// values once, so a request costs no label hashing or formatting.
type apiMetrics struct {
	requests []prometheus.Counter // by version - min
	min      int16
	latency  prometheus.Observer
	errors   prometheus.Counter
}

// forAPI resolves the metrics of an API's served versions.
func (m *metrics) forAPI(key, minVersion, maxVersion int16) *apiMetrics {
	name := apiName(key)
	am := &apiMetrics{min: minVersion, latency: m.latency.WithLabelValues(name), errors: m.errors.WithLabelValues(name)}
	for v := minVersion; v <= maxVersion; v++ {
		am.requests = append(am.requests, m.requests.WithLabelValues(name, strconv.Itoa(int(v))))
	}
	return am
}

func apiName(key int16) string {
	if n := kmsg.NameForKey(key); n != "" {
		return n
	}
	return strconv.Itoa(int(key))
}
