package cluster

import (
	"context"
	"fmt"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ControlledShutdown announces that this broker is about to stop: its
// registration is rewritten with ShuttingDown set, and the controller
// (which may be this broker) then moves each leadership it holds to
// another live in-sync replica and takes it out of the ISRs it shares
// with others. ControlledShutdown returns once the view shows that done,
// or with ctx's error when ctx ends first. The broker keeps serving
// meanwhile: a client that asks it for a partition it no longer leads is
// told the new leader. Partitions it leads alone stay led by it until it
// stops; they are then offline until it returns, as after a crash.
//
// There is no way back short of Close: the flag stays on every later
// re-registration of this Cluster.
func (c *Cluster) ControlledShutdown(ctx context.Context) error {
	if err := c.checkOpen(); err != nil {
		return err
	}
	c.mu.Lock()
	reg := c.mu.reg
	c.mu.shuttingDown = true
	c.mu.Unlock()
	if reg == nil || reg.session == nil {
		return fmt.Errorf("controlled shutdown: %w", ErrNotRegistered)
	}
	info := reg.info
	key := c.keys.broker(info.NodeID)
	live := newBrokerRecord(info)
	live.Owner, live.ShuttingDown = info.Owner, true
	value := encode(live)
	octx, cancel := c.opCtx(ctx)
	resp, err := c.client.Txn(octx).
		If(clientv3.Compare(clientv3.LeaseValue(key), "=", reg.session.Lease())).
		Then(clientv3.OpPut(key, value, clientv3.WithLease(reg.session.Lease()))).
		Commit()
	cancel()
	switch {
	case err != nil:
		return fmt.Errorf("controlled shutdown: mark broker %d: %w", info.NodeID, err)
	case !resp.Succeeded:
		// The session was lost in between; its re-registration carries the
		// flag.
		c.log.Info("controlled shutdown: registration being renewed; it will carry the flag", "node_id", info.NodeID)
	}
	c.log.Info("controlled shutdown: waiting for the controller to move leaderships", "node_id", info.NodeID)
	for {
		changed := c.Changed()
		md := c.Snapshot()
		if n := shutdownPending(md, info.NodeID); n == 0 {
			c.log.Info("controlled shutdown: leaderships moved", "node_id", info.NodeID)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("controlled shutdown: %d partitions still wait for the controller: %w",
				shutdownPending(c.Snapshot(), info.NodeID), ctx.Err())
		case <-changed:
		}
	}
}

// shutdownPending counts the partitions the controller still has to change
// for node's controlled shutdown: node leads them or is in their ISR while
// another live broker not shutting down is in the ISR too. A view that does
// not show node shutting down yet counts every such partition.
func shutdownPending(md *Metadata, node int32) int {
	n := 0
	for _, t := range md.Topics {
		for _, st := range t.Partitions {
			if !slices.Contains(st.ISR, node) && st.Leader != node {
				continue
			}
			for _, r := range st.ISR {
				if r != node && md.eligible(r) {
					n++
					break
				}
			}
		}
	}
	return n
}

// eligible reports whether a broker may lead or stay in an ISR: it is live
// and not in controlled shutdown.
func (m *Metadata) eligible(id int32) bool {
	b, ok := m.Broker(id)
	return ok && !b.ShuttingDown
}
