// Package quota enforces Kafka's client quotas (KIP-13, KIP-55, KIP-124):
// bounds on the bytes a (user, client id) produces and fetches per second,
// and on the share of request handling time it takes, as the quotas
// stored in the registry (AlterClientQuotas) set them.
//
// # Resolution
//
// A request from user U (the connection's principal name, ANONYMOUS on an
// unauthenticated listener) with client id C is measured against the
// first of these entities that has a quota of the kind, Kafka's order:
//
//  1. user U, client-id C
//  2. user U, client-id <default>
//  3. user U
//  4. user <default>, client-id C
//  5. user <default>, client-id <default>
//  6. user <default>
//  7. client-id C
//  8. client-id <default>
//
// Each kind resolves on its own, as Kafka keeps one quota manager per
// kind: an entity counts only for the kinds it has a quota for. The entity
// found decides which requests share one measured rate: at levels 1, 2, 4
// and 5 the pair (U, C); at 3 and 6 all of U's client ids; at 7 and 8 all
// users of C. As in Kafka, an empty client id never matches a client-id
// entity (a user's <default> client-id quota then falls back to the user
// levels).
//
// # Measurement and throttling
//
// producer_byte_rate and consumer_byte_rate are held with a token bucket
// (TokenBucket) per measured rate: it holds up to the bound times samples
// (quota.window.num, 11) windows (quota.window.size.seconds, 1 s) of
// bytes, refills at the bound, and a new one holds one window. A produce
// request's bytes are taken out whatever the bucket holds (they have
// arrived), and a bucket below zero throttles its client for the time the
// refill takes to bring it back to zero, rounded to milliseconds. A
// consumer fetch asks for no more than the bucket holds, at least one
// window's worth and at most samples-1 windows' (Kafka's cap); when its
// records would take the bucket below zero they are neither sent nor
// taken out, as Kafka sends a throttled fetch no records, and the client
// is throttled for the time the bucket takes to refill to them.
//
// Kafka measures these bytes with the windowed rate below, which lets a
// client that always has more to send alternate between a burst of about
// samples-1 windows of quota and a near stop, a cycle about samples
// windows long: a burst holds the measured rate above the bound until its
// sample leaves the span, and the next burst comes when it has (the
// weakness KIP-599 gave controller mutations a token bucket for). Over
// 30 s such a producer gets from about 0.75 to 1.15 times its quota; the
// bucket holds it at the quota from its first window. What the client
// sees, throttle_time_ms and a muted connection, is Kafka's.
//
// The other rates are measured as Kafka's quota sensors measure them (a
// Rate over a WindowedSum): samples of window, the rate being the sum of
// the retained samples over the time since the oldest began, counted as
// at least samples-1 whole windows. A request is recorded first and
// checked after: when the rate O is then above the bound T, the client is
// throttled for the time that brings the rate back to the bound if
// nothing more came, (O-T)/T times the measured span, rounded to
// milliseconds. Request time throttles are capped at one window, as Kafka
// caps them.
//
// The package has no clock and starts no goroutine: the caller passes the
// time.
//
// # Controller mutations
//
// controller_mutation_rate (KIP-599) is measured as Kafka's
// ControllerMutationQuotaManager measures it: a TokenBucket of
// (controller.quota.window.num, 11) x (controller.quota.window.size.seconds,
// 1 s) x the bound tokens, one taken per partition created or deleted.
// Mutations checks a request's topics one by one (see Mutations).
package quota

import (
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-io/gregor/coordinator/cluster"
)

// Kind is a quota enforced per (user, client id).
type Kind int

// The kinds of quota enforced.
const (
	Produce            Kind = iota // producer_byte_rate: bytes of produce requests per second
	Fetch                          // consumer_byte_rate: bytes of consumer fetch responses per second
	Request                        // request_percentage: percent of one handler's time, per second
	Connection                     // connection_creation_rate: connections accepted per second, per IP address
	ControllerMutation             // controller_mutation_rate: partitions created or deleted per second
	numKinds
)

// NumKinds is the number of Kinds.
const NumKinds = int(numKinds)

// Kafka's quota config keys.
const (
	ProducerByteRate       = "producer_byte_rate"
	ConsumerByteRate       = "consumer_byte_rate"
	RequestPercentage      = "request_percentage"
	ControllerMutationRate = "controller_mutation_rate"
	ConnectionCreationRate = "connection_creation_rate"
)

// Key returns the quota config key of k.
func (k Kind) Key() string {
	switch k {
	case Produce:
		return ProducerByteRate
	case Fetch:
		return ConsumerByteRate
	case Request:
		return RequestPercentage
	case Connection:
		return ConnectionCreationRate
	case ControllerMutation:
		return ControllerMutationRate
	}
	return ""
}

// String returns k's name, lower case, as the metrics label it.
func (k Kind) String() string {
	switch k {
	case Produce:
		return "produce"
	case Fetch:
		return "fetch"
	case Request:
		return "request"
	case Connection:
		return "connection"
	case ControllerMutation:
		return "controller_mutation"
	}
	return "unknown"
}

// bucketed reports whether k is held with a token bucket (see the package
// doc) rather than measured with a windowed rate.
func (k Kind) bucketed() bool { return k == Produce || k == Fetch || k == ControllerMutation }

// Config is how rates are measured.
type Config struct {
	// Samples is how many windows a rate is measured over
	// (quota.window.num); Window the length of each
	// (quota.window.size.seconds).
	Samples int
	Window  time.Duration
	// MutationSamples and MutationWindow size the controller mutation
	// token bucket (controller.quota.window.num,
	// controller.quota.window.size.seconds): it holds the bound times
	// MutationSamples windows of tokens.
	MutationSamples int
	MutationWindow  time.Duration
}

// DefaultConfig is Kafka's: 11 windows of 1 s, for both.
func DefaultConfig() Config {
	return Config{Samples: 11, Window: time.Second, MutationSamples: 11, MutationWindow: time.Second}
}

// Quotas are the stored quotas, by entity and key, as the registry holds
// them.
type Quotas = map[cluster.QuotaEntity]map[string]float64

// ID names one measured rate: the user and client id tags Kafka's sensors
// carry, either of which is "" when the rate is shared across it.
type ID struct {
	User, ClientID string
}

// Resolve returns the rate a request of user and clientID is measured
// against, and the bound of quota kind on it; ok is false when no quota of
// the kind applies (the rate is then not measured).
func Resolve(q Quotas, k Kind, user, clientID string) (id ID, bound float64, ok bool) {
	id = resolveID(q, k, user, clientID)
	bound, ok = limit(q, k, id)
	return id, bound, ok
}

// resolveID is the precedence walk of the package doc.
func resolveID(q Quotas, k Kind, user, clientID string) ID {
	key := k.Key()
	has := func(e cluster.QuotaEntity) bool {
		_, ok := q[e][key]
		return ok
	}
	u, c := cluster.Named(user), cluster.Named(clientID)
	du, dc := cluster.DefaultName(), cluster.DefaultName()
	switch {
	case has(cluster.QuotaEntity{User: u, ClientID: c}), has(cluster.QuotaEntity{User: u, ClientID: dc}):
		return ID{user, clientID}
	case has(cluster.QuotaEntity{User: u}):
		return ID{User: user}
	case has(cluster.QuotaEntity{User: du, ClientID: c}), has(cluster.QuotaEntity{User: du, ClientID: dc}):
		return ID{user, clientID}
	case has(cluster.QuotaEntity{User: du}):
		return ID{User: user}
	}
	return ID{ClientID: clientID}
}

// limit is the bound of kind k on the rate id, Kafka's quotaLimit.
func limit(q Quotas, k Kind, id ID) (float64, bool) {
	key := k.Key()
	try := func(es ...cluster.QuotaEntity) (float64, bool) {
		for _, e := range es {
			if v, ok := q[e][key]; ok {
				return v, true
			}
		}
		return 0, false
	}
	u, c := cluster.Named(id.User), cluster.Named(id.ClientID)
	du, dc := cluster.DefaultName(), cluster.DefaultName()
	switch {
	case id.User != "" && id.ClientID != "":
		return try(cluster.QuotaEntity{User: u, ClientID: c}, cluster.QuotaEntity{User: u, ClientID: dc},
			cluster.QuotaEntity{User: du, ClientID: c}, cluster.QuotaEntity{User: du, ClientID: dc})
	case id.User != "":
		return try(cluster.QuotaEntity{User: u}, cluster.QuotaEntity{User: du})
	case id.ClientID != "":
		return try(cluster.QuotaEntity{ClientID: c}, cluster.QuotaEntity{ClientID: dc})
	}
	return 0, false
}

// UserOf returns the user name of a principal ("User:alice" -> "alice").
func UserOf(principal string) string {
	if _, name, ok := strings.Cut(principal, ":"); ok {
		return name
	}
	return principal
}

// sensorKey names one measured rate of one kind.
type sensorKey struct {
	kind Kind
	id   ID
}

// sensor is one measured rate.
type sensor struct {
	rate     Rate
	bucket   TokenBucket // Produce's, Fetch's and ControllerMutation's
	lastUsed int64       // ms
}

// idleSensorMs is how long a rate nothing was recorded in is kept
// (Kafka's InactiveSensorExpirationTimeSeconds).
const idleSensorMs = 3600 * 1000

// Manager measures the rates of one broker's clients against the stored
// quotas. It is safe for concurrent use.
type Manager struct {
	cfg    Config
	quotas atomic.Pointer[table]
	mu     struct {
		sync.Mutex
		sensors   map[sensorKey]*sensor
		lastSweep int64
	}
}

// table is the quotas in force and which kinds any entity sets.
type table struct {
	q       Quotas
	enabled [numKinds]bool
}

// NewManager makes a manager with no quotas.
func NewManager(cfg Config) *Manager {
	m := &Manager{cfg: cfg}
	m.quotas.Store(&table{})
	m.mu.sensors = map[sensorKey]*sensor{}
	return m
}

// Update puts q in force; q must not be modified afterwards.
func (m *Manager) Update(q Quotas) {
	t := &table{q: q}
	for _, vals := range q {
		for k := range numKinds {
			if _, ok := vals[k.Key()]; ok {
				t.enabled[k] = true
			}
		}
	}
	m.quotas.Store(t)
}

// Enabled reports whether any entity has a quota of kind k: when none has,
// nothing needs recording (a lock-free check for the hot paths).
func (m *Manager) Enabled(k Kind) bool { return m.quotas.Load().enabled[k] }

// Quotas returns the quotas in force.
func (m *Manager) Quotas() Quotas { return m.quotas.Load().q }

// Record counts value (bytes, or percent-seconds of handler time for
// Request) of kind k for user and clientID at now and returns how long the
// client is to be throttled: 0 while its rate is within its bound, or no
// quota applies.
func (m *Manager) Record(k Kind, user, clientID string, value float64, now time.Time) time.Duration {
	t := m.quotas.Load()
	if !t.enabled[k] {
		return 0
	}
	id, bound, ok := Resolve(t.q, k, user, clientID)
	if !ok {
		return 0
	}
	nowMs := now.UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sensorLocked(sensorKey{k, id}, nowMs)
	if k.bucketed() {
		s.bucket.Record(value, bound, nowMs)
		return BucketThrottleTime(s.bucket.Tokens(bound, nowMs), bound)
	}
	s.rate.Record(value, nowMs)
	rate, span := s.rate.Measure(nowMs)
	if rate <= bound {
		return 0
	}
	d := ThrottleTime(rate, bound, span)
	if k == Request {
		d = min(d, m.cfg.Window)
	}
	return d
}

// Unrecord takes back value recorded by Record, without a check (a fetch
// that is throttled returns no records, and its bytes do not count).
func (m *Manager) Unrecord(k Kind, user, clientID string, value float64, now time.Time) {
	t := m.quotas.Load()
	if !t.enabled[k] {
		return
	}
	id, bound, ok := Resolve(t.q, k, user, clientID)
	if !ok {
		return
	}
	nowMs := now.UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sensorLocked(sensorKey{k, id}, nowMs)
	if k.bucketed() {
		s.bucket.Record(-value, bound, nowMs)
		return
	}
	s.rate.Record(-value, nowMs)
}

// RecordConnection counts a connection accepted from ip at now against
// the connection_creation_rate of ip (else of the default ip entity) and
// returns how long to hold it before closing it unserved, as Kafka's
// connection quotas do (KIP-612): 0 when it is within the rate. A
// throttled connection is taken back out of the rate, and the throttle is
// at most one window.
func (m *Manager) RecordConnection(ip string, now time.Time) time.Duration {
	t := m.quotas.Load()
	if !t.enabled[Connection] {
		return 0
	}
	bound, ok := t.q[cluster.QuotaEntity{IP: cluster.Named(ip)}][ConnectionCreationRate]
	if !ok {
		if bound, ok = t.q[cluster.QuotaEntity{IP: cluster.DefaultName()}][ConnectionCreationRate]; !ok {
			return 0
		}
	}
	nowMs := now.UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sensorLocked(sensorKey{Connection, ID{ClientID: ip}}, nowMs)
	s.rate.Record(1, nowMs)
	rate, span := s.rate.Measure(nowMs)
	if rate <= bound {
		return 0
	}
	s.rate.Record(-1, nowMs)
	return min(ThrottleTime(rate, bound, span), m.cfg.Window)
}

// Mutations is one request's controller mutation quota, as Kafka's
// ControllerMutationQuota: each topic's partitions created or deleted are
// recorded with Record as the request handles the topic. A strict quota
// (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+, which can
// carry THROTTLING_QUOTA_EXCEEDED) refuses a topic while the bucket is
// below zero, and otherwise takes all of its partitions, however many: a
// request never gets a throttle for mutations it was allowed. A permissive
// quota (older versions) takes every topic and throttles once the bucket
// goes below zero. The nil Mutations, which Manager.Mutations returns when no quota
// applies, allows everything.
type Mutations struct {
	m      *Manager
	key    sensorKey
	bound  float64
	strict bool
	// throttleMs is the last throttle given, at atMs.
	throttleMs, atMs int64
}

// Mutations returns the controller mutation quota of a request of user and
// clientID, nil when none applies.
func (m *Manager) Mutations(user, clientID string, strict bool) *Mutations {
	t := m.quotas.Load()
	if !t.enabled[ControllerMutation] {
		return nil
	}
	id, bound, ok := Resolve(t.q, ControllerMutation, user, clientID)
	if !ok {
		return nil
	}
	return &Mutations{m: m, key: sensorKey{ControllerMutation, id}, bound: bound, strict: strict}
}

// Record counts n partitions of one topic at now and reports whether the
// topic may go ahead; false (strict quotas only) is Kafka's
// THROTTLING_QUOTA_EXCEEDED, with Throttle the time to wait.
func (q *Mutations) Record(n int, now time.Time) bool {
	if q == nil {
		return true
	}
	nowMs := now.UnixMilli()
	q.m.mu.Lock()
	defer q.m.mu.Unlock()
	s := q.m.sensorLocked(q.key, nowMs)
	if q.strict {
		if tokens := s.bucket.Tokens(q.bound, nowMs); tokens < 0 {
			q.throttleMs, q.atMs = BucketThrottleTime(tokens, q.bound).Milliseconds(), nowMs
			return false
		}
		s.bucket.Record(float64(n), q.bound, nowMs)
		return true
	}
	s.bucket.Record(float64(n), q.bound, nowMs)
	if tokens := s.bucket.Tokens(q.bound, nowMs); tokens < 0 {
		q.throttleMs, q.atMs = BucketThrottleTime(tokens, q.bound).Milliseconds(), nowMs
	}
	return true
}

// Throttle is the request's throttle time at now: the last one Record gave
// less the time since, as Kafka's throttleTime (a request may answer
// well after its last topic was counted).
func (q *Mutations) Throttle(now time.Time) time.Duration {
	if q == nil || q.throttleMs == 0 {
		return 0
	}
	return time.Duration(max(q.throttleMs-(now.UnixMilli()-q.atMs), 0)) * time.Millisecond
}

// MaxFetch is the most a consumer fetch of user and clientID may carry at
// now, what its consumer_byte_rate bucket holds, but at least one window
// of the quota and at most samples-1 windows (Kafka's cap), so that a
// fetch is neither bound to be throttled nor cut to a trickle while the
// bucket refills. ok is false when no quota applies.
func (m *Manager) MaxFetch(user, clientID string, now time.Time) (float64, bool) {
	t := m.quotas.Load()
	if !t.enabled[Fetch] {
		return 0, false
	}
	id, bound, ok := Resolve(t.q, Fetch, user, clientID)
	if !ok {
		return 0, false
	}
	nowMs := now.UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	tokens := m.sensorLocked(sensorKey{Fetch, id}, nowMs).bucket.Tokens(bound, nowMs)
	window := bound * m.cfg.Window.Seconds()
	return min(max(tokens, window), window*float64(max(m.cfg.Samples-1, 1))), true
}

// sensorLocked returns the sensor of key, made on first use, and drops
// those idle for an hour (checked once a minute).
func (m *Manager) sensorLocked(key sensorKey, nowMs int64) *sensor {
	if nowMs-m.mu.lastSweep > 60*1000 {
		m.mu.lastSweep = nowMs
		for k, s := range m.mu.sensors {
			if nowMs-s.lastUsed > idleSensorMs {
				delete(m.mu.sensors, k)
			}
		}
	}
	s := m.mu.sensors[key]
	if s == nil {
		s = &sensor{rate: NewRate(m.cfg.Samples, m.cfg.Window)}
		switch key.kind {
		case Produce, Fetch:
			s.rate, s.bucket = Rate{}, NewTokenBucketHolding(m.cfg.Samples, m.cfg.Window, 1)
		case ControllerMutation:
			s.rate, s.bucket = Rate{}, NewTokenBucket(m.cfg.MutationSamples, m.cfg.MutationWindow)
		}
		m.mu.sensors[key] = s
	}
	s.lastUsed = nowMs
	return s
}

// ThrottleTime is Kafka's throttle for a measured rate above its bound:
// the delay X that brings rate O, measured over span W, down to bound T,
// O*W/(W+X) = T, so X = (O-T)/T*W, rounded to milliseconds.
func ThrottleTime(rate, bound float64, span time.Duration) time.Duration {
	if rate <= bound || bound <= 0 {
		return 0
	}
	ms := math.Round((rate - bound) / bound * float64(span.Milliseconds()))
	return time.Duration(min(ms, math.MaxInt32)) * time.Millisecond
}
