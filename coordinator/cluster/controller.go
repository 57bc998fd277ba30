package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// ErrNotController is a controller write refused because this broker is not
// the elected controller, or no longer the one whose epoch the write
// carries: another broker has been elected since, or this one's session
// was lost.
var ErrNotController = errors.New("cluster: not the controller")

// ErrStaleState is a controller write whose epoch held but whose other
// compares did not: the state it was decided on has changed since.
var ErrStaleState = errors.New("cluster: the state a controller decision read has changed")

// controllerRole is this broker's term as controller.
type controllerRole struct {
	key   string // its candidate key
	epoch int64  // the key's create revision
}

// campaign stands this broker for controller for as long as sess lives:
// it puts a candidate key bound to the session's lease and waits until
// every older candidate key is gone, as etcd's concurrency.Election does
// (its Campaign is not used: on cancellation it resigns with a request that
// no context bounds, which would hold Close up while etcd is unreachable).
// Elected, it holds the role until the session ends (lost, or revoked by
// Close): its key goes with the lease, and the next candidate is elected.
// One runs per registration session.
func (c *Cluster) campaign(sess *concurrency.Session, node int32) {
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	go func() {
		select {
		case <-sess.Done():
		case <-ctx.Done():
		}
		cancel()
	}()
	var role *controllerRole
	backoff := newBackoff(200*time.Millisecond, 5*time.Second)
	for {
		var err error
		if role, err = c.standFor(ctx, sess.Lease(), node); err == nil {
			break
		}
		if ctx.Err() != nil {
			return // the session ended: the next one stands again
		}
		c.log.Warn("controller campaign failed; standing again", "node_id", node, "err", err)
		if !backoff.wait(ctx) {
			return
		}
	}
	c.mu.Lock()
	c.mu.controller = role
	c.obs.ActiveController(true)
	c.mu.Unlock()
	c.log.Info("elected controller", "node_id", node, "epoch", role.epoch)
	select {
	case c.electedKick <- struct{}{}:
	default: // a kick is pending already
	}
	<-ctx.Done()
	c.mu.Lock()
	if c.mu.controller == role {
		c.mu.controller = nil
		c.obs.ActiveController(false)
	}
	c.mu.Unlock()
	if c.ctx.Err() == nil {
		c.log.Warn("controller term ended: registration session lost", "node_id", node, "epoch", role.epoch)
	}
}

// standFor puts this broker's candidate key under lease and returns once
// it is the oldest candidate, or with ctx's error.
func (c *Cluster) standFor(ctx context.Context, lease clientv3.LeaseID, node int32) (*controllerRole, error) {
	prefix := c.keys.controllerPrefix() + "/"
	key := fmt.Sprintf("%s%x", prefix, int64(lease))
	octx, cancel := c.opCtx(ctx)
	resp, err := c.client.Txn(octx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, encode(controllerRecord{Node: node}), clientv3.WithLease(lease))).
		Else(clientv3.OpGet(key)).
		Commit()
	cancel()
	if err != nil {
		return nil, fmt.Errorf("put controller candidate: %w", err)
	}
	rev := resp.Header.Revision
	if !resp.Succeeded {
		// Ours already, from this lease: one campaign runs per session,
		// so only a retried request gets here.
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			return nil, errors.New("controller candidate key vanished")
		}
		rev = kvs[0].CreateRevision
	}
	for {
		// The newest candidate older than ours: wait for its deletion.
		octx, cancel := c.opCtx(ctx)
		opts := append([]clientv3.OpOption{clientv3.WithMaxCreateRev(rev - 1)}, clientv3.WithLastCreate()...)
		older, err := c.client.Get(octx, prefix, append(opts, clientv3.WithPrefix())...)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("read controller candidates: %w", err)
		}
		if len(older.Kvs) == 0 {
			return &controllerRole{key: key, epoch: rev}, nil
		}
		if err := c.awaitDeletion(ctx, string(older.Kvs[0].Key), older.Header.Revision); err != nil {
			return nil, err
		}
	}
}

// awaitDeletion returns once key is deleted after revision rev, or with
// ctx's error.
func (c *Cluster) awaitDeletion(ctx context.Context, key string, rev int64) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for resp := range c.client.Watch(wctx, key, clientv3.WithRev(rev+1), clientv3.WithFilterPut()) {
		if err := resp.Err(); err != nil {
			return fmt.Errorf("watch controller candidate: %w", err)
		}
		for _, ev := range resp.Events {
			if ev.Type == clientv3.EventTypeDelete {
				return nil
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.New("watch of controller candidate closed")
}

// startCampaignLocked runs campaign for a new registration session, unless
// Close has begun. c.mu must be held.
func (c *Cluster) startCampaignLocked(sess *concurrency.Session, node int32) {
	c.goAttachLocked(func() { c.campaign(sess, node) })
}

// ControllerEpoch returns this broker's epoch as controller, and false when
// it is not the elected controller (as far as it knows: a write with the
// epoch is what proves it).
func (c *Cluster) ControllerEpoch() (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.controller == nil {
		return 0, false
	}
	return c.mu.controller.epoch, true
}

// controllerWrite applies ops in one transaction fenced by the controller
// epoch: it commits only while this broker's candidate key exists with the
// create revision it was elected with, and also only while each of extra
// holds. It returns ErrNotController when this broker is not the
// controller or the fence failed, and ErrStaleState when the fence held but
// one of extra did not; on success it waits until the cache shows the
// write.
func (c *Cluster) controllerWrite(ctx context.Context, extra []clientv3.Cmp, ops ...clientv3.Op) error {
	c.mu.Lock()
	role := c.mu.controller
	c.mu.Unlock()
	if role == nil {
		return ErrNotController
	}
	fence := clientv3.Compare(clientv3.CreateRevision(role.key), "=", role.epoch)
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	resp, err := c.client.Txn(octx).
		If(append([]clientv3.Cmp{fence}, extra...)...).
		Then(ops...).
		Else(clientv3.OpTxn([]clientv3.Cmp{fence}, nil, nil)).
		Commit()
	if err != nil {
		return fmt.Errorf("controller write: %w", err)
	}
	if !resp.Succeeded {
		if !resp.Responses[0].GetResponseTxn().Succeeded {
			return fmt.Errorf("%w: epoch %d is fenced off", ErrNotController, role.epoch)
		}
		return ErrStaleState
	}
	return c.awaitVisible(ctx, resp.Header.Revision)
}
