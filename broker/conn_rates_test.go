package broker

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// openServed opens n connections to addr at once and has each answer an
// ApiVersions, generously timed: accepting is delayed, not refused.
func openServed(t *testing.T, addr string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
			if err != nil {
				errs <- err
				return
			}
			w := &wireConn{t: t, nc: nc, br: bufio.NewReader(nc), fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("rate"))}
			defer nc.Close()
			if _, err := w.roundTripWithin(kmsg.NewPtrApiVersionsRequest(), 60*time.Second); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("connection not served: %v", err)
	}
}

// TestConnectionCreationRate: a listener's
// listener.name.<l>.max.connection.creation.rate delays accepting once
// it is over, and the connections are served all the same; the
// broker-wide max.connection.creation.rate, set with
// IncrementalAlterConfigs, bounds the other listeners but not the
// inter-broker one. Rates are measured over at least one window here
// (quota.window.num 2), so about 5 connections at once go undelayed: the
// checks are on the counters of delayed accepts, not on wall time.
func TestConnectionCreationRate(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(c *Config) {
		c.Listeners = []string{"INTERNAL://127.0.0.1:0", "CLIENT://127.0.0.1:0"}
		c.ListenerSecurityProtocolMap = "INTERNAL:PLAINTEXT,CLIENT:PLAINTEXT"
		c.InterBrokerListenerName = "INTERNAL"
		c.QuotaWindowNum = 2
		c.ListenerConfigs = map[string]string{"listener.name.client.max.connection.creation.rate": "5"}
	})
	internal, client := b.Addrs()[0], b.Addrs()[1]
	delayed := func(l string) float64 { return counterValue(t, b.connRates.throttled[l]) }

	start := time.Now()
	openServed(t, client, 20)
	t.Logf("20 connections on CLIENT at 5/s: %v accepts delayed, all served in %v", delayed("CLIENT"), time.Since(start))
	if n := delayed("CLIENT"); n < 5 {
		t.Errorf("20 connections at once on a listener at 5/s: %v accepts delayed, want most of the 15 over", n)
	}
	if n := delayed("INTERNAL"); n != 0 {
		t.Errorf("INTERNAL, unbounded, delayed %v accepts", n)
	}

	// The broker-wide bound, cluster-wide, with the listeners' own bounds
	// lifted (a listener without one would take the broker-wide value).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(newClient(t, b))
	five, lifted := "5", "1000"
	if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Name: "max.connection.creation.rate", Value: &five},
		{Name: "listener.name.client.max.connection.creation.rate", Value: &lifted},
		{Name: "listener.name.internal.max.connection.creation.rate", Value: &lifted},
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the dynamic bounds in force", func() error {
		if l := b.connRates.limits.Load(); l.broker != 5 || l.listeners["CLIENT"] != 1000 || l.listeners["INTERNAL"] != 1000 {
			return fmt.Errorf("bounds %+v", *l)
		}
		return nil
	})
	rc, err := adm.DescribeBrokerConfigs(ctx, b.cfg.NodeID)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rc {
		for _, c := range r.Configs {
			if c.Key == "max.connection.creation.rate" && (c.Value == nil || *c.Value != "5" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig) {
				t.Errorf("described as %v from %v, want 5 from the cluster default", c.Value, c.Source)
			}
		}
	}

	before := delayed("CLIENT")
	openServed(t, internal, 20)
	if n := delayed("INTERNAL"); n != 0 {
		t.Errorf("20 connections on the inter-broker listener with the broker at 5/s: %v accepts delayed, want none", n)
	}
	start = time.Now()
	openServed(t, client, 20)
	t.Logf("20 more on CLIENT with the broker at 5/s: %v accepts delayed, all served in %v", delayed("CLIENT")-before, time.Since(start))
	if n := delayed("CLIENT") - before; n < 5 {
		t.Errorf("20 connections on CLIENT with the broker at 5/s: %v accepts delayed, want most of the 15 over", n)
	}

	// A listener's bound is above 0, as Kafka checks it.
	zero := "0"
	res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "listener.name.client.max.connection.creation.rate", Value: &zero}})
	if err == nil && len(res) > 0 {
		err = res[0].Err
	}
	if err == nil {
		t.Error("listener.name.client.max.connection.creation.rate=0 accepted")
	}
}

// TestConnRateLimits: a listener's own bound beats the broker-wide one at
// any level; at each, a broker's dynamic config beats the cluster
// default, which beats the static config; a listener without its own
// bound has the broker-wide one.
func TestConnRateLimits(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxConnectionCreationRate = 100
	cfg.ListenerConfigs = map[string]string{"listener.name.a.max.connection.creation.rate": "7"}
	ls := []string{"A", "B"}
	for _, c := range []struct {
		name                 string
		dynamic, clusterDflt map[string]string
		broker, a, b         float64
	}{
		{"static", nil, nil, 100, 7, 100},
		{"cluster default", nil, map[string]string{"max.connection.creation.rate": "50"}, 50, 7, 50},
		{"broker over cluster default",
			map[string]string{"max.connection.creation.rate": "20"},
			map[string]string{"max.connection.creation.rate": "50", "listener.name.b.max.connection.creation.rate": "9"}, 20, 7, 9},
		{"dynamic listener bound over static",
			map[string]string{"listener.name.a.max.connection.creation.rate": "3"}, nil, 100, 3, 100},
	} {
		l := connRateLimitsFrom(cfg, ls, c.dynamic, c.clusterDflt)
		if l.broker != c.broker || l.listeners["A"] != c.a || l.listeners["B"] != c.b {
			t.Errorf("%s: broker %v, A %v, B %v; want %v, %v, %v", c.name, l.broker, l.listeners["A"], l.listeners["B"], c.broker, c.a, c.b)
		}
	}
	bad := DefaultConfig()
	bad.MaxConnectionCreationRate = -1
	if err := bad.Validate(); err == nil {
		t.Error("max.connection.creation.rate -1 valid")
	}
	bad = DefaultConfig()
	bad.ControllerQuotaWindowNum = 0
	if err := bad.Validate(); err == nil {
		t.Error("controller.quota.window.num 0 valid")
	}
	bad = DefaultConfig()
	bad.ControllerQuotaWindowSize = 1500 * time.Millisecond
	if err := bad.Validate(); err == nil {
		t.Error("controller.quota.window.size.seconds 1.5 valid")
	}
}
