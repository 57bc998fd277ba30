package broker

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// Fetch sessions (KIP-227): a consumer or follower that fetches the same
// partitions again and again registers them once; later requests name only
// the partitions whose fetch position changed, and responses carry only the
// partitions with something new.
//
// Epochs: 0 opens a session (a full fetch), -1 (FINAL) closes it or asks
// for none, and each incremental request carries the next epoch, from 1,
// wrapping to 1 after MaxInt32.

const (
	sessionEpochInitial = 0
	sessionEpochFinal   = -1
)

// sessionKey names a partition in a session: by topic name before Fetch
// v13, by topic id from v13.
type sessionKey struct {
	topic     string
	topicID   [16]byte
	partition int32
}

// sessionPartition is a partition's entry in a session: its fetch
// parameters as last sent by the client, and what the broker last sent for
// it, so incremental responses can leave out what did not change.
type sessionPartition struct {
	key                sessionKey
	fetchOffset        int64
	maxBytes           int32
	currentLeaderEpoch int32
	lastFetchedEpoch   int32

	sentHW, sentLSO, sentLogStart int64
}

func newSessionPartition(k sessionKey) *sessionPartition {
	return &sessionPartition{key: k, sentHW: -1, sentLSO: -1, sentLogStart: -1}
}

// fetchSession is one client's session. A session is used by one request
// at a time: Kafka clients never overlap fetches of one session, and mu
// makes a misbehaving client's overlap safe rather than right.
type fetchSession struct {
	id int32
	mu struct {
		sync.Mutex
		epoch    int32 // the epoch the next request must carry
		parts    []*sessionPartition
		index    map[sessionKey]*sessionPartition
		lastUsed time.Time
	}
}

// update applies an incremental request: changed or new partitions, then
// the forgotten ones. Callers hold mu.
func (s *fetchSession) updateLocked(changed []*sessionPartition, forgotten []sessionKey) {
	for _, c := range changed {
		if cur, ok := s.mu.index[c.key]; ok {
			cur.fetchOffset, cur.maxBytes = c.fetchOffset, c.maxBytes
			cur.currentLeaderEpoch, cur.lastFetchedEpoch = c.currentLeaderEpoch, c.lastFetchedEpoch
			continue
		}
		s.mu.index[c.key] = c
		s.mu.parts = append(s.mu.parts, c)
	}
	if len(forgotten) == 0 {
		return
	}
	drop := map[sessionKey]bool{}
	for _, k := range forgotten {
		if _, ok := s.mu.index[k]; ok {
			drop[k] = true
			delete(s.mu.index, k)
		}
	}
	kept := s.mu.parts[:0]
	for _, p := range s.mu.parts {
		if !drop[p.key] {
			kept = append(kept, p)
		}
	}
	s.mu.parts = kept
}

// rotateLocked moves the partitions that just returned records to the end
// of the session's order, so that a partition with a steady flow of data
// cannot starve the others of the response's bytes.
func (s *fetchSession) rotateLocked(served map[sessionKey]bool) {
	if len(served) == 0 {
		return
	}
	out := make([]*sessionPartition, 0, len(s.mu.parts))
	for _, p := range s.mu.parts {
		if !served[p.key] {
			out = append(out, p)
		}
	}
	for _, p := range s.mu.parts {
		if served[p.key] {
			out = append(out, p)
		}
	}
	s.mu.parts = out
}

func nextSessionEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}

// fetchSessions is the broker's session cache, bounded like Kafka's
// max.incremental.fetch.session.cache.slots: when full, the least recently
// used session is evicted (its client gets FETCH_SESSION_ID_NOT_FOUND and
// starts over with a full fetch).
type fetchSessions struct {
	max int
	mu  struct {
		sync.Mutex
		byID map[int32]*fetchSession
	}
}

func newFetchSessions(slots int) *fetchSessions {
	fs := &fetchSessions{max: slots}
	fs.mu.byID = map[int32]*fetchSession{}
	return fs
}

// create registers a new session holding parts.
func (fs *fetchSessions) create(parts []*sessionPartition, now time.Time) *fetchSession {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if len(fs.mu.byID) >= fs.max {
		var oldest *fetchSession
		for _, s := range fs.mu.byID {
			s.mu.Lock()
			if oldest == nil || s.mu.lastUsed.Before(oldest.mu.lastUsed) {
				oldest = s
			}
			s.mu.Unlock()
		}
		delete(fs.mu.byID, oldest.id)
	}
	var id int32
	for id == 0 || fs.mu.byID[id] != nil {
		id = rand.Int32N(math.MaxInt32) + 1
	}
	s := &fetchSession{id: id}
	s.mu.epoch = 1
	s.mu.index = make(map[sessionKey]*sessionPartition, len(parts))
	s.mu.parts = parts
	for _, p := range parts {
		s.mu.index[p.key] = p
	}
	s.mu.lastUsed = now
	fs.mu.byID[id] = s
	return s
}

func (fs *fetchSessions) get(id int32) *fetchSession {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.mu.byID[id]
}

func (fs *fetchSessions) remove(id int32) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	delete(fs.mu.byID, id)
}
