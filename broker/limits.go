package broker

// Resource limits on client connections, with Kafka's names:
//
//   - max.connections: the listeners stop accepting while the broker holds
//     that many connections, as Kafka's acceptor waits for a free slot. New
//     connections wait in the kernel's accept backlog (and may be refused by
//     it once the backlog is full). With more than one listener, the
//     inter-broker listener's connections are not counted, as Kafka
//     protects that listener (listenerSetup.protected); Kafka also closes
//     the least recently used connection of another listener to make room
//     for one of them, which Gregor does not need to.
//   - max.connections.per.ip and max.connections.per.ip.overrides: a
//     connection beyond its address's limit is closed as soon as it is
//     accepted, without a response, as Kafka does.
//   - connections.max.idle.ms: a connection that sends nothing (or takes
//     none of its responses) for that long is closed. Kafka's selector
//     counts any read or write on the socket as activity; so does Gregor,
//     through a deadline renewed on every read and write.
//   - queued.max.requests: see requestSlots.
//   - socket.request.max.bytes: protocol.ReadFrame refuses a larger (or
//     non-positive) size before allocating for the body.

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"
)

// connQuotas counts open connections, in all and by remote IP address.
type connQuotas struct {
	max       int
	perIP     int
	overrides map[string]int // by IP address as net.IP.String writes it

	mu struct {
		sync.Mutex
		total int
		byIP  map[string]int
		// freed is closed and replaced whenever a connection ends, to wake
		// the listeners waiting for a slot.
		freed chan struct{}
	}
}

// newConnQuotas resolves the override host names; an unknown host is an
// error, as Kafka's config check makes it.
func newConnQuotas(cfg Config) (*connQuotas, error) {
	q := &connQuotas{max: int(cfg.MaxConnections), perIP: int(cfg.MaxConnectionsPerIP), overrides: map[string]int{}}
	for host, n := range cfg.MaxConnectionsPerIPOverrides {
		if ip := net.ParseIP(host); ip != nil {
			q.overrides[ip.String()] = int(n)
			continue
		}
		addrs, err := net.LookupHost(host)
		if err != nil {
			return nil, fmt.Errorf("%w: max.connections.per.ip.overrides: %w", ErrInvalidConfig, err)
		}
		for _, a := range addrs {
			if ip := net.ParseIP(a); ip != nil {
				q.overrides[ip.String()] = int(n)
			}
		}
	}
	q.mu.byIP = map[string]int{}
	q.mu.freed = make(chan struct{})
	return q, nil
}

// reserve takes a broker-wide connection slot, waiting while there is
// none. It returns false when ctx ends first. The protected listener
// (exempt) takes none: as in Kafka, max.connections does not stop
// brokers from reaching each other.
func (q *connQuotas) reserve(ctx context.Context, exempt bool) bool {
	if exempt {
		return ctx.Err() == nil
	}
	for {
		q.mu.Lock()
		if q.mu.total < q.max {
			q.mu.total++
			q.mu.Unlock()
			return true
		}
		freed := q.mu.freed
		q.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return false
		}
	}
}

// admit counts a connection from ip against its address's limit, which
// the caller already holds a broker-wide slot for. It returns false, and
// counts nothing, when the address is at its limit.
func (q *connQuotas) admit(ip string) bool {
	limit, ok := q.overrides[ip]
	if !ok {
		limit = q.perIP
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.mu.byIP[ip] >= limit {
		return false
	}
	q.mu.byIP[ip]++
	return true
}

// release gives back a broker-wide slot (none for an exempt listener's
// connection) and, when admitted, the address's count.
func (q *connQuotas) release(ip string, admitted, exempt bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !exempt {
		q.mu.total--
	}
	if admitted {
		if q.mu.byIP[ip]--; q.mu.byIP[ip] <= 0 {
			delete(q.mu.byIP, ip)
		}
	}
	close(q.mu.freed)
	q.mu.freed = make(chan struct{})
}

// remoteIP is the address a connection is counted under.
func remoteIP(nc net.Conn) string {
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return nc.RemoteAddr().String()
}

// requestSlots bound the requests the broker has read but not finished
// handling (queued.max.requests). A connection takes a slot after reading
// a request and gives it back when the handler returns; while no slot is
// free it waits, reading nothing more from its socket, which is the
// backpressure Kafka gets from its bounded request queue.
//
// Kafka counts only requests waiting for a handler thread; Gregor has no
// such queue (each connection handles its own request), so a slot covers
// the handling too. A request that parks to wait for something outside
// the broker's control (a fetch long poll, a group rebalance) gives its
// slot back first, as a Kafka request parked in a purgatory no longer
// occupies the queue. Each connection has at most one request in handling,
// so a connection holds at most one slot.
type requestSlots chan struct{}

// acquireSlot takes a request slot for c's current request; false when the
// broker is closing.
func (c *conn) acquireSlot() bool {
	select {
	case c.b.slots <- struct{}{}:
		c.slotHeld.Store(true)
		return true
	case <-c.b.ctx.Done():
		return false
	}
}

// releaseSlot gives back c's request slot, if it holds one. Handlers call
// it before parking; it is safe from any goroutine and on a nil conn (a
// request the broker makes itself).
func (c *conn) releaseSlot() {
	if c != nil && c.slotHeld.CompareAndSwap(true, false) {
		<-c.b.slots
	}
}

// idleConn renews a deadline before every read and write, so a connection
// is closed once it has moved no bytes for connections.max.idle.ms.
type idleConn struct {
	net.Conn
	idle time.Duration
}

func (ic idleConn) Read(p []byte) (int, error) {
	if err := ic.SetReadDeadline(time.Now().Add(ic.idle)); err != nil {
		return 0, err
	}
	return ic.Conn.Read(p)
}

func (ic idleConn) Write(p []byte) (int, error) {
	if err := ic.SetWriteDeadline(time.Now().Add(ic.idle)); err != nil {
		return 0, err
	}
	return ic.Conn.Write(p)
}
