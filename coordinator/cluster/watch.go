package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// loadPageSize is how many keys one range request of a load reads. Pages
// after the first read at the first page's revision, so the load is one
// consistent view however large the metadata is.
const loadPageSize = 1000

// load reads every key under the prefix, at one revision, into a new state
// and builds its Metadata (state.last). A compaction between pages (the
// revision of the first page is gone) restarts the load.
func (c *Cluster) load(ctx context.Context) (*state, error) {
	for {
		st, err := c.loadOnce(ctx)
		if errors.Is(err, rpctypes.ErrCompacted) {
			continue
		}
		return st, err
	}
}

func (c *Cluster) loadOnce(ctx context.Context) (*state, error) {
	st := newState(c.keys, func(msg string, args ...any) { c.log.Warn(msg, args...) })
	end := clientv3.GetPrefixRangeEnd(c.keys.root)
	from := c.keys.root
	var rev int64
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(loadPageSize)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		octx, cancel := c.opCtx(ctx)
		resp, err := c.client.Get(octx, from, opts...)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("load cluster metadata: %w", err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			st.apply(string(kv.Key), kv.Value, keyRevs{kv.CreateRevision, kv.ModRevision}, false)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	st.snapshot(rev)
	return st, nil
}

// watchLoop keeps the cache current until Close. It watches from the
// revision after the one st reflects, so no change falls between the load and
// the watch. When the watch ends for any reason but Close (history compacted
// past it, leader lost, stream broken), the cache is reloaded whole and
// watched again from the new revision.
func (c *Cluster) watchLoop(st *state) {
	backoff := newBackoff(100*time.Millisecond, 5*time.Second)
	for {
		err := c.watch(st)
		if c.ctx.Err() != nil {
			return
		}
		c.log.Warn("cluster metadata watch ended; reloading", "revision", st.last.Revision, "err", err)
		for {
			fresh, err := c.load(c.ctx)
			if err == nil {
				st = fresh
				c.publish(st.last)
				backoff.reset()
				break
			}
			if c.ctx.Err() != nil {
				return
			}
			c.log.Warn("cluster metadata reload failed; retrying", "err", err)
			if !backoff.wait(c.ctx) {
				return
			}
		}
	}
}

// errWatchClosed: the watch channel closed without a response saying why.
var errWatchClosed = errors.New("watch channel closed")

// watch applies watch responses to st, publishing a new Metadata after
// each, until the watch ends. etcd delivers all events of one revision (one
// transaction) in one response, so every published Metadata shows whole
// transactions.
func (c *Cluster) watch(st *state) error {
	// WithRequireLeader: a member cut off from its leader ends the watch
	// instead of letting the cache go stale in silence.
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(c.ctx))
	defer cancel()
	rev := st.last.Revision
	wch := c.client.Watch(wctx, c.keys.root, clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	for resp := range wch {
		if err := resp.Err(); err != nil {
			return err // includes compaction and cancellation
		}
		if resp.Canceled {
			return errors.New("watch canceled")
		}
		if resp.IsProgressNotify() {
			// Every event up to the header revision has been delivered.
			if resp.Header.Revision > rev {
				rev = resp.Header.Revision
				c.publish(st.snapshot(rev))
			}
			continue
		}
		if len(resp.Events) == 0 {
			continue
		}
		for _, ev := range resp.Events {
			st.apply(string(ev.Kv.Key), ev.Kv.Value, keyRevs{ev.Kv.CreateRevision, ev.Kv.ModRevision}, ev.Type == clientv3.EventTypeDelete)
			rev = max(rev, ev.Kv.ModRevision)
		}
		c.publish(st.snapshot(rev))
	}
	return errWatchClosed
}

// progressEvery is how often WaitForRevision asks etcd for a watch progress
// notification while it waits.
const progressEvery = 250 * time.Millisecond

// WaitForRevision blocks until Snapshot reflects etcd revision rev or a
// later one, or ctx ends. rev is normally the revision of a write under the
// cluster prefix (every write method here already waits for its own). For
// other revisions it asks etcd for watch progress notifications, which
// advance the cache's revision when nothing under the prefix changes.
func (c *Cluster) WaitForRevision(ctx context.Context, rev int64) error {
	var tick *time.Ticker
	var tickC <-chan time.Time
	defer func() {
		if tick != nil {
			tick.Stop()
		}
	}()
	for {
		v := c.view.Load()
		if v.m.Revision >= rev {
			return nil
		}
		if tick == nil {
			tick = time.NewTicker(progressEvery)
			tickC = tick.C
		}
		select {
		case <-v.changed:
		case <-tickC:
			// The watch stream is keyed by the context's metadata, so the
			// request must carry WithRequireLeader as the watch does.
			pctx, cancel := c.opCtx(clientv3.WithRequireLeader(ctx))
			err := c.client.RequestProgress(pctx)
			cancel()
			if err != nil && ctx.Err() == nil && c.ctx.Err() == nil {
				c.log.Debug("watch progress request failed", "err", err)
			}
		case <-ctx.Done():
			return ctx.Err()
		case <-c.ctx.Done():
			return ErrClosed
		}
	}
}

// awaitVisible waits, at most RequestTimeout, until the cache shows the write
// committed at rev.
func (c *Cluster) awaitVisible(ctx context.Context, rev int64) error {
	wctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	if err := c.WaitForRevision(wctx, rev); err != nil {
		if errors.Is(err, ErrClosed) {
			return err
		}
		return fmt.Errorf("%w (revision %d): %w", ErrNotVisible, rev, err)
	}
	return nil
}

// backoff is a capped exponential wait, for retry loops.
type backoff struct {
	min, max, next time.Duration
}

func newBackoff(lo, hi time.Duration) *backoff { return &backoff{min: lo, max: hi, next: lo} }

func (b *backoff) reset() { b.next = b.min }

// wait sleeps for the current interval, doubling the next one; false when
// ctx ended first.
func (b *backoff) wait(ctx context.Context) bool {
	t := time.NewTimer(b.next)
	defer t.Stop()
	b.next = min(2*b.next, b.max)
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
