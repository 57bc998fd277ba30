package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// registration is the broker's live registration: its key is bound to the
// session's lease, so it disappears when the lease is revoked (Close) or
// expires (the process stopped sending keep-alives).
type registration struct {
	info    BrokerInfo
	session *concurrency.Session
}

// Register announces this broker to the cluster: its registration key,
// prefix/brokers/<node id>, is created under a lease of SessionTTL kept alive
// in the background. Creation is create-if-absent, so a node id that another
// live process holds fails with ErrNodeIDInUse (a restarted broker also gets
// it until the lease of its previous run expires, at most SessionTTL,
// unless info.Owner shows the previous run was this broker: then the key is
// taken over at once). On return the broker is in Snapshot.
//
// If the session is lost later (keep-alives failed for SessionTTL, or the
// lease was revoked), SessionLost fires and the registration is re-created
// in the background, retried until it succeeds or Close.
func (c *Cluster) Register(ctx context.Context, info BrokerInfo) error {
	if err := c.checkOpen(); err != nil {
		return err
	}
	if info.NodeID != c.cfg.NodeID {
		return fmt.Errorf("cluster: register node id %d, but this node is configured as %d", info.NodeID, c.cfg.NodeID)
	}
	c.mu.Lock()
	if c.mu.reg != nil {
		c.mu.Unlock()
		return ErrAlreadyRegistered
	}
	// Hold the slot while registering, so a second Register fails fast.
	c.mu.reg = &registration{info: info}
	c.mu.Unlock()

	sess, err := c.registerOnce(ctx, info)
	if err != nil {
		c.mu.Lock()
		c.mu.reg = nil
		c.mu.Unlock()
		return err
	}
	reg := &registration{info: info, session: sess}
	c.mu.Lock()
	started := c.goAttachLocked(func() { c.keepRegistered(reg) })
	if started {
		c.mu.reg = reg
		c.obs.SessionUp(true) // under c.mu, so it comes before Close's false
		c.startCampaignLocked(sess, info.NodeID)
	}
	c.mu.Unlock()
	if !started { // Close began meanwhile and will not see this session
		_ = c.revoke(sess)
		return ErrClosed
	}
	c.log.Info("broker registered", "node_id", info.NodeID, "host", info.Host, "port", info.Port,
		"lease", fmt.Sprintf("%x", int64(sess.Lease())))
	return nil
}

// Registered reports whether this node holds a live registration: true from
// a successful Register until its session is lost, and again after the
// background re-registration succeeds.
func (c *Cluster) Registered() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.reg != nil && c.mu.reg.session != nil
}

// SessionLost returns a channel that is closed the next time the
// registration's session is lost. The package then re-registers by itself;
// call SessionLost again for the loss after that.
func (c *Cluster) SessionLost() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.lost
}

// registerOnce grants a lease, starts its keep-alive and creates the
// registration key under it. On any failure the lease is revoked, so a
// half-made registration never lingers.
func (c *Cluster) registerOnce(ctx context.Context, info BrokerInfo) (*concurrency.Session, error) {
	key := c.keys.broker(info.NodeID)
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	grant, err := c.client.Grant(octx, c.cfg.ttlSeconds())
	if err != nil {
		return nil, fmt.Errorf("register broker %d: grant lease: %w", info.NodeID, err)
	}
	// The session's context is the Cluster's: Close ends the keep-alives,
	// then revokes the lease itself.
	sess, err := concurrency.NewSession(c.client, concurrency.WithLease(grant.ID),
		concurrency.WithTTL(int(c.cfg.ttlSeconds())), concurrency.WithContext(c.ctx))
	if err != nil {
		c.revokeLease(grant.ID)
		return nil, fmt.Errorf("register broker %d: keep lease alive: %w", info.NodeID, err)
	}
	c.mu.Lock()
	info.ShuttingDown = c.mu.shuttingDown
	c.mu.Unlock()
	live := newBrokerRecord(info)
	live.Owner, live.ShuttingDown = info.Owner, info.ShuttingDown
	value := encode(live)
	// The registration that outlives the lease: what a fenced broker is
	// listed with until it returns or is unregistered.
	durable := clientv3.OpPut(c.keys.registered(info.NodeID), encode(newBrokerRecord(info)))
	resp, err := c.client.Txn(octx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, value, clientv3.WithLease(grant.ID)), durable).
		Else(clientv3.OpGet(key)).
		Commit()
	if err == nil && !resp.Succeeded {
		resp, err = c.takeOver(octx, info, key, value, grant.ID, resp, durable)
	}
	if err == nil {
		err = c.awaitVisible(ctx, resp.Header.Revision)
	}
	if err != nil {
		_ = c.revoke(sess)
		return nil, fmt.Errorf("register broker %d: %w", info.NodeID, err)
	}
	return sess, nil
}

// takeOver handles a registration key that already exists: when its owner
// is info.Owner, the key was left by a previous run of this broker that was
// killed before it could revoke its lease, and it is re-bound to lease in
// place (compared on its mod revision, so a concurrent change wins). The
// previous lease is then revoked, which changes nothing but the etcd
// lease table: no other key is bound to it. Any other holder gives
// ErrNodeIDInUse.
func (c *Cluster) takeOver(ctx context.Context, info BrokerInfo, key, value string, lease clientv3.LeaseID,
	held *clientv3.TxnResponse, durable clientv3.Op) (*clientv3.TxnResponse, error) {
	kvs := held.Responses[0].GetResponseRange().Kvs
	var prev brokerRecord
	if info.Owner == "" || len(kvs) == 0 || unmarshal(kvs[0].Value, &prev) != nil || prev.Owner != info.Owner {
		return held, c.heldBy(ctx, info.NodeID, held)
	}
	resp, err := c.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", kvs[0].ModRevision)).
		Then(clientv3.OpPut(key, value, clientv3.WithLease(lease)), durable).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return nil, err
	}
	if !resp.Succeeded {
		return resp, c.heldBy(ctx, info.NodeID, resp)
	}
	old := clientv3.LeaseID(kvs[0].Lease)
	c.log.Info("took over the registration of a previous run of this broker",
		"node_id", info.NodeID, "owner", info.Owner, "previous_lease", fmt.Sprintf("%x", int64(old)))
	if old != clientv3.NoLease && old != lease {
		c.revokeLease(old)
	}
	return resp, nil
}

// heldBy describes who holds a node id's registration, for ErrNodeIDInUse.
func (c *Cluster) heldBy(ctx context.Context, node int32, resp *clientv3.TxnResponse) error {
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		// Gone between the compare and the read: the caller may retry.
		return fmt.Errorf("%w: node %d (registration just expired)", ErrNodeIDInUse, node)
	}
	lease := clientv3.LeaseID(kvs[0].Lease)
	ttl, err := c.client.TimeToLive(ctx, lease)
	if err != nil || ttl.TTL < 0 {
		return fmt.Errorf("%w: node %d held by lease %x (%s)", ErrNodeIDInUse, node, int64(lease), kvs[0].Value)
	}
	return fmt.Errorf("%w: node %d held by lease %x, expires in at most %ds unless kept alive (%s)",
		ErrNodeIDInUse, node, int64(lease), ttl.TTL, kvs[0].Value)
}

// keepRegistered waits for the session's loss and re-creates the
// registration, until Close. One runs per Cluster after Register.
func (c *Cluster) keepRegistered(reg *registration) {
	info := reg.info
	sess := reg.session
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-sess.Done():
		}
		if c.ctx.Err() != nil {
			return // Close ended the keep-alives; it revokes the lease
		}
		c.obs.SessionUp(false)
		lease := sess.Lease()
		c.log.Warn("broker registration session lost; re-registering",
			"node_id", info.NodeID, "lease", fmt.Sprintf("%x", int64(lease)))
		c.mu.Lock()
		c.mu.reg = &registration{info: info} // slot held, no session
		close(c.mu.lost)
		c.mu.lost = make(chan struct{})
		c.mu.Unlock()

		// The keep-alive can give up while the server still has the lease
		// (a partition shorter than the TTL seen from the server's side):
		// revoke it, so the old key goes and the new registration can take
		// its place instead of failing with ErrNodeIDInUse until expiry.
		c.revokeLease(lease)

		backoff := newBackoff(200*time.Millisecond, c.cfg.SessionTTL)
		for {
			s, err := c.registerOnce(c.ctx, info)
			if err == nil {
				sess = s
				break
			}
			if c.ctx.Err() != nil {
				return
			}
			c.log.Warn("broker re-registration failed; retrying", "node_id", info.NodeID, "err", err)
			if !backoff.wait(c.ctx) {
				return
			}
		}
		// Close waits for this goroutine before it revokes c.mu.reg's
		// lease, so the new session is stored before returning either way.
		c.mu.Lock()
		c.mu.reg = &registration{info: info, session: sess}
		c.startCampaignLocked(sess, info.NodeID)
		c.mu.Unlock()
		c.obs.SessionUp(true)
		c.log.Info("broker re-registered", "node_id", info.NodeID, "lease", fmt.Sprintf("%x", int64(sess.Lease())))
	}
}

// revoke stops a session's keep-alives and revokes its lease, deleting the
// keys bound to it. It does not depend on c.ctx, so Close can use it.
func (c *Cluster) revoke(sess *concurrency.Session) error {
	sess.Orphan()
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.RequestTimeout)
	defer cancel()
	_, err := c.client.Revoke(ctx, sess.Lease())
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return nil // expired already: same outcome
	}
	return err
}

// revokeLease revokes a lease, best effort: on failure it expires by itself.
func (c *Cluster) revokeLease(id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.RequestTimeout)
	defer cancel()
	if _, err := c.client.Revoke(ctx, id); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		c.log.Debug("revoke lease failed; it will expire", "lease", fmt.Sprintf("%x", int64(id)), "err", err)
	}
}

// UnregisterBroker forgets a broker's registration (Kafka's
// UnregisterBroker, for a broker taken out of the cluster for good): a
// fenced broker is no longer listed in Metadata.Fenced. Its partitions keep
// it as a replica until they are reassigned. A live broker's registration is
// its lease: unregistering it removes only the record that outlives the
// lease, so it stays listed while it runs and is not listed as fenced once
// it stops, unless it registers again. A node id the registry does not
// hold gives ErrBrokerNotRegistered.
func (c *Cluster) UnregisterBroker(ctx context.Context, node int32) error {
	if err := c.checkOpen(); err != nil {
		return err
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	durable, live := c.keys.registered(node), c.keys.broker(node)
	resp, err := c.client.Txn(octx).
		If(clientv3.Compare(clientv3.CreateRevision(durable), ">", 0)).
		Then(clientv3.OpDelete(durable)).
		Else(clientv3.OpGet(live, clientv3.WithCountOnly())).
		Commit()
	if err != nil {
		return fmt.Errorf("unregister broker %d: %w", node, err)
	}
	if !resp.Succeeded {
		if resp.Responses[0].GetResponseRange().Count > 0 {
			return nil // live, registered before durable records: nothing outlives it
		}
		return fmt.Errorf("%w: broker %d is not currently registered", ErrBrokerNotRegistered, node)
	}
	c.log.Info("unregistered broker", "node_id", node)
	return c.awaitVisible(ctx, resp.Header.Revision)
}
