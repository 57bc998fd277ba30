package broker

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/group"
	"github.com/gregor-io/gregor/coordinator/txn"
	"github.com/gregor-io/gregor/protocol"
)

// conn is one client connection. A read goroutine reads a request, handles
// it and queues the response; a write goroutine writes responses in order.
// Like Kafka, a connection handles one request at a time, so responses
// leave in request order; unlike Kafka, a produce waiting for durability
// does not hold the connection: its response is queued pending
// (pendingResponse) and the next request is read and handled meanwhile.
type conn struct {
	b        *Broker
	nc       net.Conn
	listener string
	logger   *slog.Logger
	out      chan *outFrame // framed responses, in request order
	clientID string         // of the last request; read and written by the read loop only
	// principal is who the connection acts as, host the client's address,
	// for the authorizer (authz.go).
	principal, host string
	// auth authenticates a connection to a SASL listener (sasl_conn.go);
	// nil on other listeners. Read loop only.
	auth *connAuth
	// slotHeld is whether the current request holds a request slot
	// (queued.max.requests); see requestSlots.
	slotHeld atomic.Bool
	// parked is how long the current request's handler has waited parked
	// (long poll, durability wait, group coordinator), kept out of
	// gregor_request_local_seconds. Read loop (where handlers run) only.
	parked time.Duration
	// shareSessions are the share sessions this connection opened: they
	// close with it, releasing the records their members hold (Kafka ties
	// a share session to its connection). Read loop only.
	shareSessions map[shareSessionKey]*shareSession
	// throttledUntil is when the client quota throttle of the connection
	// ends: no request is read before (client_quotas.go). fetchThrottle is
	// the consumer_byte_rate throttle the current fetch's handler gave,
	// mutationThrottle the controller_mutation_rate one of the current
	// CreateTopics, CreatePartitions or DeleteTopics. Read loop only.
	throttledUntil   time.Time
	fetchThrottle    time.Duration
	mutationThrottle time.Duration

	closeOnce sync.Once
}

// serve accepts connections on ln until it is closed, within the limits
// limits.go describes.
func (b *Broker) serve(ln net.Listener, name string) {
	created, closed := b.metrics.connCreated.WithLabelValues(name), b.metrics.connClosed.WithLabelValues(name)
	exempt := name == b.lis.protected
	for {
		if !b.quotas.reserve(b.ctx, exempt) {
			return
		}
		nc, err := ln.Accept()
		if err != nil {
			b.quotas.release("", false, exempt)
			if !errors.Is(err, net.ErrClosed) {
				b.logger.Error("accept failed", "listener", name, "err", err)
			}
			return
		}
		if !b.delayAccept(name) { // max.connection.creation.rate (conn_rates.go)
			b.quotas.release("", false, exempt)
			nc.Close()
			return
		}
		ip := remoteIP(nc)
		if !b.quotas.admit(ip) {
			b.quotas.release(ip, false, exempt)
			b.logger.Info("closing connection: max.connections.per.ip reached", "listener", name, "ip", ip)
			nc.Close()
			continue
		}
		if b.throttleConnection(nc, ip, exempt) {
			b.connRates.unrecord(name, time.Now())
			continue // connection_creation_rate (client_quotas.go)
		}
		lt := b.lis.tls[name] // SSL listener: the handshake is in the connection's goroutine
		if lt != nil {
			nc = tls.Server(nc, lt.server)
		}
		c := &conn{b: b, nc: idleConn{Conn: nc, idle: b.cfg.ConnectionsMaxIdle}, listener: name, out: make(chan *outFrame, 8),
			principal: anonymous, host: ip,
			logger: b.loggerFor("network").With("remote", nc.RemoteAddr().String())}
		if sl := b.lis.sasl[name]; sl != nil {
			c.auth = &connAuth{listener: sl}
		}
		if !b.trackConn(c, true) {
			b.quotas.release(ip, true, exempt)
			nc.Close()
			return
		}
		created.Inc()
		b.goTracked(func() {
			defer closed.Inc()
			defer b.quotas.release(ip, true, exempt)
			defer b.trackConn(c, false)
			if lt != nil && !c.handshake(lt) {
				c.close()
				return
			}
			c.run()
		})
	}
}

// run serves the connection until the client or the broker closes it.
func (c *conn) run() {
	c.b.metrics.connections.Inc()
	defer c.b.metrics.connections.Dec()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.writeLoop()
	}()
	c.readLoop()
	close(c.out)
	<-done
	c.close()
	if len(c.shareSessions) > 0 {
		c.b.shares.connClosed(c.shareSessions)
	}
}

func (c *conn) close() {
	c.closeOnce.Do(func() { c.nc.Close() })
}

// readBufferSize is a connection's read buffer. A connection still to
// authenticate reads through a small one, so that many connections
// waiting to authenticate hold little memory; it is replaced once the
// connection has authenticated.
const (
	readBufferSize          = 64 << 10
	readBufferSizeNoAuthYet = 4 << 10
)

func (c *conn) readLoop() {
	size := readBufferSize
	if c.auth != nil {
		size = readBufferSizeNoAuthYet
	}
	br := bufio.NewReaderSize(c.nc, size)
	var buf []byte
	for {
		if !c.awaitThrottle() {
			return
		}
		frame, err := protocol.ReadFrame(br, c.maxFrame(), buf)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				c.logger.Debug("closing connection", "err", err)
			}
			return
		}
		arrived := time.Now()
		if c.auth != nil {
			handled, err := c.authenticate(frame, arrived)
			if err != nil {
				c.logger.Debug("closing connection", "err", err)
				return
			}
			if size < readBufferSize && c.auth.state == authDone {
				// Bytes the small buffer holds already come first.
				ahead, _ := br.Peek(br.Buffered())
				size, br = readBufferSize, bufio.NewReaderSize(io.MultiReader(bytes.NewReader(bytes.Clone(ahead)), c.nc), readBufferSize)
			}
			if handled {
				buf = frame[:0]
				continue
			}
		}
		if !c.acquireSlot() {
			return
		}
		resp, am, err := c.handle(c.b.ctx, frame, arrived)
		c.releaseSlot()
		if err != nil {
			if am != nil {
				am.latency.Observe(time.Since(arrived).Seconds())
			}
			c.logger.Debug("closing connection", "err", err)
			return
		}
		if resp != nil && resp.later != nil {
			// The request is done when its response is settled.
			later := resp.later
			resp.later = func(abandon bool) *outFrame {
				f := later(abandon)
				am.latency.Observe(time.Since(arrived).Seconds())
				return f
			}
			c.out <- resp
			buf = frame[:0]
			continue
		}
		if resp != nil {
			c.out <- resp
		}
		if am != nil {
			am.latency.Observe(time.Since(arrived).Seconds())
		}
		// Handlers decode without copying, so the frame is reused only
		// now that the request is done with.
		buf = frame[:0]
	}
}

func (c *conn) writeLoop() {
	failed := false
	for resp := range c.out {
		resp = resp.ready(failed)
		if !failed {
			if err := c.writeFrame(resp); err != nil {
				failed = true
				c.close() // unblocks the reader
			}
		}
		resp.release()
	}
}

// errCloseConn makes the read loop close the connection without a reply.
var errCloseConn = errors.New("broker: close connection")

// addParked adds a parked wait of the current request's handler; a no-op
// for the broker's own requests (nil conn).
func (c *conn) addParked(d time.Duration) {
	if c != nil {
		c.parked += d
	}
}

// handle decodes one request frame, runs its handler and returns the framed
// response, or nil when the request gets none (acks=0). An error closes the
// connection, as Kafka does for requests it cannot serve. The handler runs
// under ctx. arrived is when the frame was read; am, the API's metrics, is
// nil for a request that never reached a handler, and the caller observes
// the total time with it.
func (c *conn) handle(ctx context.Context, frame []byte, arrived time.Time) (*outFrame, *apiMetrics, error) {
	start := time.Now()
	prefix, err := protocol.ParseRequestHeaderPrefix(frame)
	if err != nil {
		return nil, nil, err
	}
	if !c.b.apis.Supports(prefix.APIKey, prefix.APIVersion) && !c.b.internalAPIs.Supports(prefix.APIKey, prefix.APIVersion) {
		if prefix.APIKey == protocol.APIVersionsKey {
			// KIP-511: an ApiVersions version above ours gets a v0 reply
			// with UNSUPPORTED_VERSION and, as Kafka answers, the range of
			// ApiVersions alone, so the client can pick a version and ask
			// again; the body is not read.
			resp := kmsg.NewPtrApiVersionsResponse()
			for _, k := range c.b.apiVersionsResponse().ApiKeys {
				if k.ApiKey == protocol.APIVersionsKey {
					resp.ApiKeys = append(resp.ApiKeys, k)
				}
			}
			resp.SetVersion(0)
			resp.ErrorCode = int16(protocol.UnsupportedVersion)
			return bytesFrame(encodeResponse(prefix, resp)), nil, nil
		}
		return nil, nil, fmt.Errorf("%w: api %d version %d not served", errCloseConn, prefix.APIKey, prefix.APIVersion)
	}
	hdr, body, err := protocol.ParseRequestHeader(frame)
	if err != nil {
		return nil, nil, err
	}
	if hdr.ClientID != nil {
		c.clientID = *hdr.ClientID
	}
	if f := c.b.testPrincipal.Load(); f != nil {
		c.principal = (*f)(c.clientID)
	}
	a := c.b.handlers[hdr.APIKey]
	req := kmsg.RequestForKey(hdr.APIKey)
	req.SetVersion(hdr.APIVersion)
	// Group and transaction requests are kept by their coordinators past
	// this request, so they are decoded into their own memory; the others
	// alias the frame, which is reused only once they are done.
	if u, ok := req.(interface{ UnsafeReadFrom([]byte) error }); ok && !group.Handles(hdr.APIKey) && !txn.Handles(hdr.APIKey) {
		err = u.UnsafeReadFrom(body)
	} else {
		err = req.ReadFrom(body)
	}
	if err == nil {
		err = protocol.CheckNulls(req, body)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("decode api %d v%d: %w", hdr.APIKey, hdr.APIVersion, err)
	}
	am := c.b.apiMetrics[hdr.APIKey]
	am.requests[hdr.APIVersion-am.min].Inc()
	am.queue.Observe(start.Sub(arrived).Seconds())
	c.parked = 0
	resp, err := a.handle(c.b, ctx, c, hdr, req)
	local := time.Since(start) - c.parked
	am.local.Observe(local.Seconds())
	fr, zeroCopy := resp.(*fetchResponse)
	if err != nil {
		if zeroCopy {
			fr.release()
		}
		am.failures.Inc()
		return nil, am, err
	}
	c.applyClientQuotas(hdr, req, resp, len(frame), local)
	if resp == nil {
		return nil, am, nil
	}
	if p, ok := resp.(*pendingResponse); ok {
		hdr.ClientID = nil // aliases the frame, which is reused before the settling
		return &outFrame{later: func(abandon bool) *outFrame {
			p.settle(abandon)
			p.SetVersion(hdr.APIVersion)
			am.countResponseErrors(p.Response)
			return bytesFrame(encodeResponse(hdr, p.Response))
		}}, am, nil
	}
	resp.SetVersion(hdr.APIVersion)
	if zeroCopy {
		am.countResponseErrors(fr.FetchResponse)
		return encodeFetchFrame(hdr, fr), am, nil
	}
	am.countResponseErrors(resp)
	return bytesFrame(encodeResponse(hdr, resp)), am, nil
}

// encodeResponse frames a response: size, response header, body.
func encodeResponse(hdr protocol.RequestHeader, resp kmsg.Response) []byte {
	buf, start := protocol.BeginFrame(make([]byte, 0, 256))
	buf = protocol.AppendResponseHeader(buf, hdr.CorrelationID, protocol.ResponseHeaderFlexible(hdr.APIKey, hdr.APIVersion))
	buf = resp.AppendTo(buf)
	if err := protocol.FinishFrame(buf, start); err != nil {
		// Only a response over 2 GiB fails, which no handler builds.
		panic(err)
	}
	return buf
}

// handler is one API's entry in the broker's registry: the versions it
// serves and the function serving them. Each API's file defines one.
type handler struct {
	key      int16
	min, max int16
	handle   func(b *Broker, ctx context.Context, c *conn, hdr protocol.RequestHeader, req kmsg.Request) (kmsg.Response, error)
}
