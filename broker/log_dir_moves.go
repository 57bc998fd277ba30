package broker

import (
	"errors"
	"path/filepath"
	"sync"
	"time"

	"github.com/gregor-io/gregor/broker/configs"
	"github.com/gregor-io/gregor/storage"
)

// Moves of replicas between this broker's log dirs (AlterReplicaLogDirs):
// one goroutine per move copies the log into its future log, at most
// replica.alter.log.dirs.io.max.bytes.per.second, and once the copy has
// caught up puts it in place under the partition's role lock, so that no
// follower fetch writes to the log meanwhile; produce and coordinator
// writes that find the old log closed try again on the new one
// (partition.appendAsLeader).

// logDirCopyChunk is the most one copy step reads and writes.
const logDirCopyChunk = 1 << 20

// absDir is path made absolute (as Kafka compares log dirs), or path.
func absDir(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

func sameDir(a, b string) bool { return absDir(a) == absDir(b) }

// startLogDirMove runs tp's move unless it runs already.
func (b *Broker) startLogDirMove(tp storage.TopicPartition) {
	b.dirMoves.Lock()
	if b.dirMoves.running == nil {
		b.dirMoves.running = map[storage.TopicPartition]bool{}
	}
	if b.dirMoves.running[tp] || b.ctx.Err() != nil {
		b.dirMoves.Unlock()
		return
	}
	b.dirMoves.running[tp] = true
	b.dirMoves.Unlock()
	b.metrics.logDirMoves.Inc()
	b.goTracked(func() {
		defer func() {
			b.dirMoves.Lock()
			delete(b.dirMoves.running, tp)
			b.dirMoves.Unlock()
			b.metrics.logDirMoves.Dec()
		}()
		b.runLogDirMove(tp)
	})
}

// resumeLogDirMoves starts the moves a restart interrupted (the storage
// reopened their future logs).
func (b *Broker) resumeLogDirMoves() {
	for _, tp := range b.logs.Futures() {
		b.startLogDirMove(tp)
	}
}

// runLogDirMove copies tp's log to its future log until the move is done,
// cancelled (the future log is gone: ErrUnknownPartition), or the broker
// closes.
func (b *Broker) runLogDirMove(tp storage.TopicPartition) {
	logger := b.loggerFor("storage")
	for b.ctx.Err() == nil {
		rate := b.alterLogDirsRate.Load()
		n, lag, err := b.logs.CopyToFuture(tp, min(logDirCopyChunk, max(rate, 1)))
		if errors.Is(err, storage.ErrUnknownPartition) {
			return
		}
		if errors.Is(err, storage.ErrLogFailed) {
			// A log dir of the move went offline: the move is given up,
			// as Kafka drops a future replica in a failed dir.
			logger.Error("giving up a move between log dirs: a log dir failed", "partition", tp.String(), "err", err)
			if cerr := b.logs.CancelMove(tp); cerr != nil {
				logger.Error("removing the future log of a move given up; the next start resumes or removes it", "partition", tp.String(), "err", cerr)
			}
			return
		}
		if err != nil {
			logger.Error("copying a log to its future log; trying again", "partition", tp.String(), "err", err)
			b.sleep(time.Second)
			continue
		}
		if n > 0 {
			b.metrics.logDirMoveBytes.Add(float64(n))
			if rate < configs.Unthrottled {
				b.sleep(b.dirMoves.pace.delay(n, rate, time.Now()))
			}
		}
		if lag > 0 {
			if n == 0 {
				b.sleep(50 * time.Millisecond)
			}
			continue
		}
		done, err := b.finishLogDirMove(tp)
		switch {
		case done || errors.Is(err, storage.ErrUnknownPartition):
			return
		case err != nil:
			logger.Error("putting a moved log in place; trying again", "partition", tp.String(), "err", err)
			b.sleep(time.Second)
		default:
			// The partition is not in the table (yet): wait for it.
			b.sleep(100 * time.Millisecond)
		}
	}
}

// finishLogDirMove puts tp's future log in place and hands tp's partition
// the new log, under the metadata lock (no config or role change applies
// to the old log meanwhile) and the partition's role lock (no follower
// fetch writes to it).
func (b *Broker) finishLogDirMove(tp storage.TopicPartition) (bool, error) {
	b.syncMu.Lock()
	defer b.syncMu.Unlock()
	var p *partition
	if ps := b.parts.Load().byName[tp.Topic]; int(tp.Partition) < len(ps) {
		p = ps[tp.Partition]
	}
	cur, ok := b.logs.Get(tp)
	if p == nil || !ok || p.log() != cur {
		return false, nil
	}
	p.role.Lock()
	nl, err := b.logs.FinishMove(tp)
	if err == nil {
		p.logp.Store(nl)
	}
	p.role.Unlock()
	if err != nil {
		return false, err
	}
	if p.internal {
		// The coordinators held the old log: they load from the new one.
		t := b.parts.Load()
		b.groups.sync(t)
		b.txns.sync(t)
		b.shareCoords.sync(t)
	}
	return true, nil
}

// pacer spreads the bytes of every move over time at the throttle's
// rate: one budget for the broker, as Kafka's quota is.
type pacer struct {
	mu sync.Mutex
	at time.Time // when the bytes paced so far have all passed
}

// delay counts n bytes at rate bytes per second and returns how long the
// caller waits for them to pass.
func (p *pacer) delay(n, rate int64, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.at.Before(now) {
		p.at = now
	}
	p.at = p.at.Add(time.Duration(float64(n) / float64(max(rate, 1)) * float64(time.Second)))
	return p.at.Sub(now)
}

// sleep waits d, or less if the broker closes.
func (b *Broker) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-b.ctx.Done():
	}
}

// logAfterMove returns the partition's log once a move to another log dir
// that is putting its new log in place has done so (it holds the role lock
// meanwhile). Not for callers holding the role lock.
func (p *partition) logAfterMove() *storage.Log {
	p.role.Lock()
	defer p.role.Unlock()
	return p.log()
}

// movedLog returns the log that replaced l when err (from reading l) says l
// was shut under the read by a move to another log dir: the new log holds
// the same records, so the read may be made again there. Nil otherwise.
// Not for callers holding the role lock.
func (p *partition) movedLog(l *storage.Log, err error) *storage.Log {
	if !errors.Is(err, storage.ErrClosed) || !l.Shut() {
		return nil
	}
	if nl := p.logAfterMove(); nl != l {
		return nl
	}
	return nil
}
