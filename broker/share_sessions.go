package broker

// Share sessions (KIP-932): a share group member's ShareFetch and
// ShareAcknowledge requests to one broker form a session, keyed by group
// and member id, that remembers the partitions the member fetches. Epoch 0
// opens it (replacing one the member had), each later request carries the
// next epoch (from 1, wrapping to 1 after MaxInt32), and -1 closes it after
// its acknowledgements, releasing the records the member still holds on
// the session's partitions.

import (
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-io/gregor/protocol"
)

type shareSessionKey struct{ group, member string }

// shareTP is a partition in a share session.
type shareTP struct {
	topicID   [16]byte
	partition int32
}

// shareSession is one member's session. One request at a time uses it (mu).
type shareSession struct {
	key      shareSessionKey
	closed   atomic.Bool  // replaced by a new session, or closed with -1
	lastUsed atomic.Int64 // Unix nanoseconds of the last request
	mu       struct {
		sync.Mutex
		epoch int32 // the epoch the next request must carry
		parts []shareTP
		index map[shareTP]bool
	}
}

// session opens, finds or closes the member's share session for a request
// with epoch, and returns it locked (the caller unlocks it). A closing
// request (-1) gets the session, now removed from the broker, to release
// what the member holds. No session lock is taken under the manager's:
// a session may be held for a whole long poll.
func (m *shareManager) session(key shareSessionKey, epoch int32, now time.Time) (*shareSession, protocol.ErrorCode) {
	if epoch == 0 {
		s := &shareSession{key: key}
		s.mu.index = map[shareTP]bool{}
		s.mu.epoch = 1
		s.lastUsed.Store(now.UnixNano())
		m.mu.Lock()
		old := m.mu.sessions[key]
		if old == nil && len(m.mu.sessions) >= maxShareSessions && !m.evictIdleLocked(now) {
			m.mu.Unlock()
			return nil, protocol.ShareSessionLimitReached
		}
		m.mu.sessions[key] = s
		m.mu.Unlock()
		if old != nil {
			old.closed.Store(true)
		}
		s.mu.Lock()
		return s, protocol.None
	}
	m.mu.Lock()
	s := m.mu.sessions[key]
	m.mu.Unlock()
	if s == nil {
		return nil, protocol.ShareSessionNotFound
	}
	s.mu.Lock()
	switch {
	case s.closed.Load():
		s.mu.Unlock()
		return nil, protocol.ShareSessionNotFound
	case epoch == -1:
		s.closed.Store(true)
		m.mu.Lock()
		if m.mu.sessions[key] == s {
			delete(m.mu.sessions, key)
		}
		m.mu.Unlock()
	case epoch != s.mu.epoch:
		s.mu.Unlock()
		return nil, protocol.InvalidShareSessionEpoch
	default:
		if s.mu.epoch == math.MaxInt32 {
			s.mu.epoch = 1
		} else {
			s.mu.epoch++
		}
	}
	s.lastUsed.Store(now.UnixNano())
	return s, protocol.None
}

// evictIdleLocked drops the least recently used session idle for longer
// than a share group member's session timeout: its member is gone from
// its group by now.
func (m *shareManager) evictIdleLocked(now time.Time) bool {
	var oldest *shareSession
	for _, s := range m.mu.sessions {
		if oldest == nil || s.lastUsed.Load() < oldest.lastUsed.Load() {
			oldest = s
		}
	}
	if oldest == nil || now.Sub(time.Unix(0, oldest.lastUsed.Load())) < m.b.cfg.Groups.ShareSessionTimeout {
		return false
	}
	oldest.closed.Store(true)
	delete(m.mu.sessions, oldest.key)
	return true
}

// updateLocked adds the partitions a request names and drops those it
// forgets.
func (s *shareSession) updateLocked(add, forget []shareTP) {
	for _, tp := range add {
		if !s.mu.index[tp] {
			s.mu.index[tp] = true
			s.mu.parts = append(s.mu.parts, tp)
		}
	}
	if len(forget) == 0 {
		return
	}
	for _, tp := range forget {
		delete(s.mu.index, tp)
	}
	kept := s.mu.parts[:0]
	for _, tp := range s.mu.parts {
		if s.mu.index[tp] {
			kept = append(kept, tp)
		}
	}
	s.mu.parts = kept
}

// connClosed closes the share sessions a closed connection opened and
// releases the records their members hold, in the background.
func (m *shareManager) connClosed(sessions map[shareSessionKey]*shareSession) {
	for key, s := range sessions {
		m.mu.Lock()
		current := m.mu.sessions[key] == s
		if current {
			delete(m.mu.sessions, key)
		}
		m.mu.Unlock()
		if !current || s.closed.Swap(true) {
			continue
		}
		s.mu.Lock()
		parts := slices.Clone(s.mu.parts)
		s.mu.Unlock()
		m.b.goTracked(func() {
			ctx, cancel := context.WithTimeout(m.b.ctx, 30*time.Second)
			defer cancel()
			for _, tp := range parts {
				if sp, code := m.b.sharePartFor(ctx, key.group, tp); code == protocol.None {
					m.releaseMember(ctx, sp, key.member)
				}
			}
		})
	}
}
