package broker

// Client quota enforcement, as Kafka's ClientQuotaManager and
// ClientRequestQuotaManager do it (broker/quota has the resolution and the
// rates; the quotas come from the registry, see 49_alter_client_quotas.go).
//
//   - producer_byte_rate: every produce request's size (the whole frame,
//     as Kafka's request.sizeInBytes) is recorded against the (user,
//     client id) once the handler has appended it, acks=0 included.
//   - consumer_byte_rate: a consumer fetch's record bytes are recorded
//     before the response is built (01_fetch.go); when that puts the
//     client over its quota the bytes are taken back and the response
//     carries no records, only the throttle time, as Kafka answers. A
//     consumer's fetch max_bytes is capped to what its quota allows in one
//     measurement (bound x (quota.window.num-1) x window), so a fetch is
//     never bound to be throttled. Follower fetches are never counted.
//   - request_percentage: the time the handler took (a long poll's or
//     durability wait's parked time left out) counts as percent of one
//     handler per second; the throttle is capped at one window, as
//     Kafka's. Follower fetches, WriteTxnMarkers and the share state
//     requests between brokers are exempt, as Kafka exempts cluster
//     actions, and so is an acks=0 produce.
//   - controller_mutation_rate (KIP-599): CreateTopics, CreatePartitions
//     and DeleteTopics count the partitions each topic creates or deletes,
//     topic by topic, once the topic has passed every other check, in a
//     token bucket of the quota times controller.quota.window.num windows
//     (quota.Mutations). From CreateTopics v6, CreatePartitions v3 and
//     DeleteTopics v5 the quota is strict: a topic met with the bucket
//     below zero fails with THROTTLING_QUOTA_EXCEEDED and is not created
//     or deleted, and the response's throttle time is the time the bucket
//     takes to refill to zero; older versions are let through and
//     throttled, as Kafka's controller does. CreateTopics validate_only
//     counts as well, as in Kafka 4 (its controller takes the quota while
//     validating and drops only the records).
//   - connection_creation_rate (ip entities, an address's own or else the
//     default ip's): a connection accepted beyond the rate is held for
//     the throttle time (at most one window) and closed unserved, as
//     Kafka's acceptor delays closing it (KIP-612); it is not counted in
//     the rate, nor in the broker's and listener's connection creation
//     rates (max.connection.creation.rate, conn_rates.go), which are
//     checked before it and delay accepting instead.
//
// When a request puts its client over a quota, the response carries
// throttle_time_ms (the largest of the quotas' throttle times) and goes
// out at once; the connection then reads no further request for that time
// (KIP-219: Kafka mutes the channel once the response is sent). Gregor
// mutes older request versions the same way, where Kafka delays their
// response instead; a client with one request in flight sees no
// difference. The throttle applies to the connection, not to the client
// id: another connection of the same client is throttled once one of its
// own requests goes over.

import (
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/broker/quota"
	"github.com/gregor-io/gregor/protocol"
)

// clientQuotas is the broker's client quota manager and its metrics.
type clientQuotas struct {
	mgr *quota.Manager
	// throttle observes the throttle times given, by the quota that set
	// them.
	throttle [quota.NumKinds]prometheus.Observer
}

func newClientQuotas(reg prometheus.Registerer, cfg quota.Config) clientQuotas {
	hist := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gregor_client_quota_throttle_seconds",
		Help:    "Throttle times given to clients over a client quota, by the quota that set them (produce: producer_byte_rate, fetch: consumer_byte_rate, request: request_percentage; the connection reads nothing for that long) controller_mutation: controller_mutation_rate, likewise; or connection: connection_creation_rate (a new connection held that long, then closed unserved).",
		Buckets: []float64{0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
	}, []string{"type"})
	cq := clientQuotas{mgr: quota.NewManager(cfg)}
	for _, k := range []quota.Kind{quota.Produce, quota.Fetch, quota.Request, quota.Connection, quota.ControllerMutation} {
		cq.throttle[k] = hist.WithLabelValues(k.String())
	}
	if reg != nil {
		reg.MustRegister(hist)
	}
	return cq
}

// applyClientQuotas records a handled request against the produce and
// request quotas of the connection's user and client id, and throttles
// the connection (and says so in resp) for the longest time any quota,
// the fetch and controller mutation quotas checked by the handler
// (c.fetchThrottle, c.mutationThrottle) included, asks
// for. size is the request frame's, local the handler's own time.
func (c *conn) applyClientQuotas(hdr protocol.RequestHeader, req kmsg.Request, resp kmsg.Response, size int, local time.Duration) {
	cq := &c.b.clientQuotas
	worst, kind := c.fetchThrottle, quota.Fetch
	if c.mutationThrottle > worst {
		worst, kind = c.mutationThrottle, quota.ControllerMutation
	}
	c.fetchThrottle, c.mutationThrottle = 0, 0
	produce, request := cq.mgr.Enabled(quota.Produce) && hdr.APIKey == produceAPI.key, cq.mgr.Enabled(quota.Request)
	if !produce && !request && worst == 0 {
		return
	}
	now := time.Now()
	user := quota.UserOf(c.principal)
	if produce {
		if d := cq.mgr.Record(quota.Produce, user, c.clientID, float64(size), now); d > worst {
			worst, kind = d, quota.Produce
		}
	}
	if request && !requestQuotaExempt(c, hdr, req) {
		pct := float64(max(local, 0).Nanoseconds()) * 100 / float64(time.Second)
		if d := cq.mgr.Record(quota.Request, user, c.clientID, pct, now); d > worst {
			worst, kind = d, quota.Request
		}
	}
	if worst <= 0 {
		return
	}
	cq.throttle[kind].Observe(worst.Seconds())
	if p, ok := resp.(*pendingResponse); ok {
		resp = p.Response
	}
	if tr, ok := resp.(interface{ SetThrottle(int32) }); ok {
		tr.SetThrottle(int32(worst.Milliseconds()))
	}
	c.throttledUntil = now.Add(worst)
}

// mutationQuota returns the controller_mutation_rate quota of a request
// from c, nil when none applies: strict from version strictSince, which
// can carry THROTTLING_QUOTA_EXCEEDED, permissive before, as Kafka's
// ControllerMutationQuotaManager.newQuotaFor.
func (c *conn) mutationQuota(hdr protocol.RequestHeader, strictSince int16) *quota.Mutations {
	return c.b.clientQuotas.mgr.Mutations(quota.UserOf(c.principal), c.clientID, hdr.APIVersion >= strictSince)
}

// endMutations hands the throttle q gave the request to applyClientQuotas.
func (c *conn) endMutations(q *quota.Mutations) {
	c.mutationThrottle = q.Throttle(time.Now())
}

// errMutationQuota is a topic's error when the controller mutation quota
// refuses it, with Kafka's message.
func errMutationQuota() error {
	return newTopicError(protocol.ThrottlingQuotaExceeded, "The throttling quota has been exceeded.")
}

// requestQuotaExempt reports whether a request is left out of the request
// quota: what brokers send each other, and acks=0 produce.
func requestQuotaExempt(c *conn, hdr protocol.RequestHeader, req kmsg.Request) bool {
	switch r := req.(type) {
	case *kmsg.FetchRequest:
		id := r.ReplicaID
		if hdr.APIVersion >= 15 {
			id = r.ReplicaState.ID
		}
		return id >= 0
	case *kmsg.ProduceRequest:
		return r.Acks == 0
	case *kmsg.WriteTxnMarkersRequest:
		return true
	}
	return !c.b.apis.Supports(hdr.APIKey, hdr.APIVersion)
}

// throttleConnection reports whether a connection just accepted from ip
// is over its address's connection_creation_rate; if so it is closed
// after the throttle time, its connection slot held until then, and the
// caller drops it. exempt is the listener's exemption from
// max.connections (limits.go), for giving the slot back.
func (b *Broker) throttleConnection(nc net.Conn, ip string, exempt bool) bool {
	d := b.clientQuotas.mgr.RecordConnection(ip, time.Now())
	if d <= 0 {
		return false
	}
	b.clientQuotas.throttle[quota.Connection].Observe(d.Seconds())
	b.goTracked(func() {
		defer b.quotas.release(ip, true, exempt)
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-b.ctx.Done():
		}
		nc.Close()
	})
	return true
}

// awaitThrottle holds the read loop while the connection is throttled
// (its last response has gone; KIP-219 mutes the channel after it). It
// returns false when the broker is closing.
func (c *conn) awaitThrottle() bool {
	d := time.Until(c.throttledUntil)
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.b.ctx.Done():
		return false
	}
}
