package cluster

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// recordingObserver keeps what an Observer was told.
type recordingObserver struct {
	mu       sync.Mutex
	requests map[string]int // by op
	failed   map[string]int // by op
	up       []bool
	active   []bool
}

func (o *recordingObserver) EtcdRequest(op string, d time.Duration, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if d < 0 {
		panic(fmt.Sprintf("negative duration %s for %s", d, op))
	}
	o.requests[op]++
	if err != nil {
		o.failed[op]++
	}
}

func (o *recordingObserver) SessionUp(up bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.up = append(o.up, up)
}

func (o *recordingObserver) ActiveController(active bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.active = append(o.active, active)
}

func (o *recordingObserver) controllerStates() []bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.active)
}

func (o *recordingObserver) sessionStates() []bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.up)
}

// TestObserver checks that a node's etcd requests, its registration
// session's ups and downs and its terms as controller reach the configured
// Observer.
func TestObserver(t *testing.T) {
	m := open(t, embeddedConfig(t.TempDir(), 0))
	obs := &recordingObserver{requests: map[string]int{}, failed: map[string]int{}}
	cfg := externalConfig(m, 1)
	cfg.SessionTTL = 3 * time.Second // keep-alives every second notice the revoke soon
	cfg.Observer = obs
	c, err := Open(testCtx(t), cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := obs.sessionStates(); len(got) != 0 {
		t.Errorf("session states before Register = %v, want none", got)
	}
	if err := c.Register(testCtx(t), BrokerInfo{NodeID: 1, Host: "h", Port: 9092}); err != nil {
		t.Fatal(err)
	}
	if got := obs.sessionStates(); !slices.Equal(got, []bool{true}) {
		t.Errorf("session states after Register = %v, want [true]", got)
	}
	obs.mu.Lock()
	for _, op := range []string{OpGrant, OpTxn} {
		if obs.requests[op] < 1 || obs.failed[op] != 0 {
			t.Errorf("%s requests: %d (%d failed), want >= 1 and none failed", op, obs.requests[op], obs.failed[op])
		}
	}
	obs.mu.Unlock()

	// Alone, the node is elected controller.
	eventually(t, func() string {
		if got := obs.controllerStates(); !slices.Equal(got, []bool{true}) {
			return fmt.Sprintf("controller states after Register = %v, want [true]", got)
		}
		return ""
	})

	// The lease revoked behind the node's back: down, then up again once
	// the node has registered anew.
	c.mu.Lock()
	lease := c.mu.reg.session.Lease()
	c.mu.Unlock()
	if _, err := m.client.Revoke(testCtx(t), lease); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() string {
		if got := obs.sessionStates(); !slices.Equal(got, []bool{true, false, true}) {
			return fmt.Sprintf("session states after the revoke = %v, want [true false true]", got)
		}
		// And elected again with its new session.
		if got := obs.controllerStates(); !slices.Equal(got, []bool{true, false, true}) {
			return fmt.Sprintf("controller states after the revoke = %v, want [true false true]", got)
		}
		return ""
	})

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if got := obs.sessionStates(); !slices.Equal(got, []bool{true, false, true, false}) {
		t.Errorf("session states after Close = %v, want [true false true false]", got)
	}
	if got := obs.controllerStates(); !slices.Equal(got, []bool{true, false, true, false}) {
		t.Errorf("controller states after Close = %v, want [true false true false]", got)
	}
	obs.mu.Lock()
	if obs.requests[OpRevoke] < 1 {
		t.Errorf("revoke requests: %d, want >= 1", obs.requests[OpRevoke])
	}
	obs.mu.Unlock()
}
