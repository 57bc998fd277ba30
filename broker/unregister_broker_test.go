package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
)

// TestUnregisterBroker: a stopped broker is fenced, listed by DescribeCluster
// v2 only when fenced brokers are asked for, until UnregisterBroker forgets
// it; an id the registry does not hold gets BROKER_ID_NOT_REGISTERED.
func TestUnregisterBroker(t *testing.T) {
	t.Parallel()
	b1 := startBroker(t)
	b2 := startBroker(t, func(c *Config) {
		c.NodeID = 2
		c.EtcdEndpoints = b1.cluster.ClientURLs()
	})
	w := dialWire(t, b1)
	describe := func(fenced bool) string {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.SetVersion(2)
		req.EndpointType, req.IncludeFencedBrokers = 1, fenced
		resp := w.mustRoundTrip(req).(*kmsg.DescribeClusterResponse)
		var s []string
		for _, br := range resp.Brokers {
			s = append(s, fmt.Sprintf("%d:%v", br.NodeID, br.IsFenced))
		}
		return fmt.Sprint(s)
	}
	waitFor(t, 20*time.Second, "broker 1 sees broker 2", func() error {
		if got := describe(true); got != "[1:false 2:false]" {
			return fmt.Errorf("brokers %s", got)
		}
		return nil
	})
	if err := b2.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "broker 2 fenced", func() error {
		if got := describe(true); got != "[1:false 2:true]" {
			return fmt.Errorf("brokers with fenced %s", got)
		}
		return nil
	})
	if got := describe(false); got != "[1:false]" {
		t.Errorf("brokers without fenced: %s, want [1:false]", got)
	}

	unregister := func(id int32) *kmsg.UnregisterBrokerResponse {
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = id
		return w.mustRoundTrip(req).(*kmsg.UnregisterBrokerResponse)
	}
	checkCode(t, "unregister fenced broker 2", unregister(2).ErrorCode, protocol.None)
	if got := describe(true); got != "[1:false]" {
		t.Errorf("brokers with fenced after unregistering 2: %s, want [1:false]", got)
	}
	for _, id := range []int32{2, 9, -1} {
		resp := unregister(id)
		checkCode(t, fmt.Sprint("unregister broker ", id), resp.ErrorCode, protocol.BrokerIDNotRegistered)
		if resp.ErrorMessage == nil {
			t.Errorf("unregister broker %d: no error message", id)
		}
	}
}
