package cluster

import (
	"errors"
	"fmt"
	"testing"
)

// TestFencedAndUnregistered: a broker that stops stays registered, listed
// as fenced with its last endpoint, until it returns or is unregistered;
// unregistering an unknown id fails, a live one leaves it live.
func TestFencedAndUnregistered(t *testing.T) {
	t.Parallel()
	etcd := open(t, embeddedConfig(t.TempDir(), 0))
	one, two := open(t, externalConfig(etcd, 1)), open(t, externalConfig(etcd, 2))
	for _, n := range []struct {
		c  *Cluster
		id int32
	}{{one, 1}, {two, 2}} {
		if err := n.c.Register(testCtx(t), BrokerInfo{NodeID: n.id, Host: fmt.Sprint("h", n.id), Port: 9090 + n.id}); err != nil {
			t.Fatal(err)
		}
	}
	fenced := func() string {
		var s []string
		for _, b := range one.Snapshot().Fenced {
			s = append(s, fmt.Sprintf("%d@%s:%d", b.NodeID, b.Host, b.Port))
		}
		return fmt.Sprint(s)
	}
	eventually(t, func() string {
		if got := brokerIDs(one.Snapshot()); fmt.Sprint(got) != "[1 2]" || fenced() != "[]" {
			return fmt.Sprintf("live %v, fenced %s; want [1 2] and none", got, fenced())
		}
		return ""
	})
	if err := two.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() string {
		if got := brokerIDs(one.Snapshot()); fmt.Sprint(got) != "[1]" || fenced() != "[2@h2:9092]" {
			return fmt.Sprintf("live %v, fenced %s; want [1] and [2@h2:9092]", got, fenced())
		}
		return ""
	})

	if err := one.UnregisterBroker(testCtx(t), 2); err != nil {
		t.Fatalf("unregister the fenced broker: %v", err)
	}
	if got := fenced(); got != "[]" {
		t.Errorf("after unregistering broker 2, fenced %s, want none", got)
	}
	for _, id := range []int32{2, 7} {
		if err := one.UnregisterBroker(testCtx(t), id); !errors.Is(err, ErrBrokerNotRegistered) {
			t.Errorf("unregister broker %d: %v, want ErrBrokerNotRegistered", id, err)
		}
	}
	if err := one.UnregisterBroker(testCtx(t), 1); err != nil {
		t.Errorf("unregister the live broker 1: %v", err)
	}
	if got := brokerIDs(one.Snapshot()); fmt.Sprint(got) != "[1]" {
		t.Errorf("after unregistering live broker 1, live %v, want [1]", got)
	}

	// Broker 2 comes back: live, and registered again.
	back := open(t, externalConfig(etcd, 2))
	if err := back.Register(testCtx(t), BrokerInfo{NodeID: 2, Host: "h2b", Port: 9192}); err != nil {
		t.Fatal(err)
	}
	if err := back.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() string {
		if got := fenced(); got != "[2@h2b:9192]" {
			return fmt.Sprintf("after broker 2 came back and stopped, fenced %s, want [2@h2b:9192]", got)
		}
		return ""
	})
}
