package broker

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/protocol"
)

// twoListeners gives a broker the listeners INTERNAL, for brokers, and
// EXTERNAL, advertised as external.example:19092.
func twoListeners(c *Config) {
	c.Listeners = []string{"INTERNAL://127.0.0.1:0", "EXTERNAL://127.0.0.1:0"}
	c.ListenerSecurityProtocolMap = "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT"
	c.InterBrokerListenerName = "INTERNAL"
	c.AdvertisedListeners = []string{"EXTERNAL://external.example:19092"}
}

// endpoint is host:port.
type endpoint struct {
	host string
	port int32
}

func (e endpoint) String() string { return net.JoinHostPort(e.host, strconv.Itoa(int(e.port))) }

// boundEndpoint is the address listener i of b is bound to.
func boundEndpoint(t *testing.T, b *Broker, i int) endpoint {
	t.Helper()
	host, port, err := net.SplitHostPort(b.Addrs()[i])
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	return endpoint{host, int32(p)}
}

// metadataOn asks for topics (all when nil) through w at version v,
// creating those missing.
func metadataOn(w *wireConn, v int16, topics ...string) *kmsg.MetadataResponse {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(v)
	req.AllowAutoTopicCreation = true
	if topics != nil || v == 0 {
		req.Topics = []kmsg.MetadataRequestTopic{}
	}
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	return w.mustRoundTrip(req).(*kmsg.MetadataResponse)
}

// metadataBrokers lists the brokers of a Metadata response as id=host:port.
func metadataBrokers(resp *kmsg.MetadataResponse) string {
	var out []string
	for _, b := range resp.Brokers {
		out = append(out, fmt.Sprintf("%d=%s", b.NodeID, endpoint{b.Host, b.Port}))
	}
	return strings.Join(out, ",")
}

// TestListenersAdvertisePerListener: a broker with an INTERNAL and an
// EXTERNAL listener registers both endpoints, INTERNAL as the one brokers
// dial, and Metadata, FindCoordinator and DescribeCluster each answer with
// the endpoint of the listener the request came in on.
func TestListenersAdvertisePerListener(t *testing.T) {
	t.Parallel()
	b := startBroker(t, twoListeners)
	internal := boundEndpoint(t, b, 0)
	external := endpoint{"external.example", 19092}

	me, _ := b.cluster.Snapshot().Broker(1)
	if (endpoint{me.Host, me.Port}) != internal || len(me.Endpoints) != 2 {
		t.Fatalf("registration %+v; want host and port %s (INTERNAL) and two endpoints", me, internal)
	}

	for i, want := range []endpoint{internal, external} {
		name := []string{"INTERNAL", "EXTERNAL"}[i]
		w := dialWireAddr(t, b.Addrs()[i])
		md := metadataOn(w, 12, "orders")
		if got, want := metadataBrokers(md), "1="+want.String(); got != want {
			t.Errorf("%s: Metadata brokers %s, want %s", name, got, want)
		}
		if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 1 {
			t.Fatalf("%s: Metadata topics %+v, want orders with one partition", name, md.Topics)
		}
		p := md.Topics[0].Partitions[0]
		checkCode(t, name+": orders-0", p.ErrorCode, protocol.None)
		if p.Leader != 1 || len(p.OfflineReplicas) != 0 {
			t.Errorf("%s: orders-0 leader %d, offline %v; want 1, none", name, p.Leader, p.OfflineReplicas)
		}

		waitFor(t, 30*time.Second, name+": FindCoordinator answers", func() error {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.SetVersion(4)
			req.CoordinatorKeys = []string{"billing"}
			resp := w.mustRoundTrip(req).(*kmsg.FindCoordinatorResponse)
			if len(resp.Coordinators) != 1 {
				return fmt.Errorf("%d coordinators", len(resp.Coordinators))
			}
			co := resp.Coordinators[0]
			if code := protocol.ErrorCode(co.ErrorCode); code != protocol.None {
				return fmt.Errorf("error %s", code)
			}
			if co.NodeID != 1 || (endpoint{co.Host, co.Port}) != want {
				t.Errorf("%s: coordinator %d at %s, want 1 at %s", name, co.NodeID, endpoint{co.Host, co.Port}, want)
			}
			return nil
		})

		req := kmsg.NewPtrDescribeClusterRequest()
		req.SetVersion(2)
		req.EndpointType = endpointTypeBrokers
		req.IncludeFencedBrokers = true
		dc := w.mustRoundTrip(req).(*kmsg.DescribeClusterResponse)
		if len(dc.Brokers) != 1 || (endpoint{dc.Brokers[0].Host, dc.Brokers[0].Port}) != want {
			t.Errorf("%s: DescribeCluster brokers %+v, want broker 1 at %s", name, dc.Brokers, want)
		}
	}
}

// TestListenersMissingOnBroker: brokers that lack a listener are left out
// of what clients on it are told. Broker 2 is registered as an older
// Gregor writes registrations (one host and port, no endpoints) and is
// listed on every listener; broker 3 has INTERNAL only, and its partition
// has no leader for clients on EXTERNAL: LISTENER_NOT_FOUND from Metadata
// v6, LEADER_NOT_AVAILABLE before, its replica counted offline.
func TestListenersMissingOnBroker(t *testing.T) {
	t.Parallel()
	b := startBroker(t, twoListeners)
	register := func(info cluster.BrokerInfo) {
		ccfg := cluster.DefaultConfig()
		ccfg.Endpoints = b.cluster.ClientURLs()
		ccfg.NodeID = info.NodeID
		reg, err := cluster.Open(testContext(t, time.Minute), ccfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { reg.Close() })
		if err := reg.Register(testContext(t, time.Minute), info); err != nil {
			t.Fatal(err)
		}
	}
	register(cluster.BrokerInfo{NodeID: 2, Host: "old.example", Port: 9999})
	register(cluster.BrokerInfo{NodeID: 3, Host: "three.example", Port: 9093, Endpoints: []cluster.Endpoint{
		{Listener: "INTERNAL", Host: "three.example", Port: 9093, SecurityProtocol: ProtocolPlaintext}}})
	waitFor(t, 20*time.Second, "three brokers live", func() error {
		if n := len(b.cluster.Snapshot().Brokers); n != 3 {
			return fmt.Errorf("%d live", n)
		}
		return nil
	})

	internal, external := dialWireAddr(t, b.Addrs()[0]), dialWireAddr(t, b.Addrs()[1])
	rt := internal.createTopicResultAssigned("on-three", [][]int32{{3}}, nil)
	checkCode(t, "create on-three", rt.ErrorCode, protocol.None)

	wantInternal := fmt.Sprintf("1=%s,2=old.example:9999,3=three.example:9093", boundEndpoint(t, b, 0))
	if got := metadataBrokers(metadataOn(internal, 12)); got != wantInternal {
		t.Errorf("INTERNAL: Metadata brokers %s, want %s", got, wantInternal)
	}
	if got, want := metadataBrokers(metadataOn(external, 12)), "1=external.example:19092,2=old.example:9999"; got != want {
		t.Errorf("EXTERNAL: Metadata brokers %s, want %s", got, want)
	}

	for _, c := range []struct {
		w       *wireConn
		name    string
		version int16
		code    protocol.ErrorCode
		leader  int32
		offline string
	}{
		{internal, "INTERNAL", 12, protocol.None, 3, "[]"},
		{external, "EXTERNAL", 12, protocol.ListenerNotFound, -1, "[3]"},
		{external, "EXTERNAL", 6, protocol.ListenerNotFound, -1, "[3]"},
		{external, "EXTERNAL", 5, protocol.LeaderNotAvailable, -1, "[3]"},
	} {
		md := metadataOn(c.w, c.version, "on-three")
		if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 1 {
			t.Fatalf("%s v%d: topics %+v", c.name, c.version, md.Topics)
		}
		p := md.Topics[0].Partitions[0]
		what := fmt.Sprintf("%s v%d: on-three-0", c.name, c.version)
		checkCode(t, what, p.ErrorCode, c.code)
		if p.Leader != c.leader || fmt.Sprint(p.Replicas) != "[3]" || fmt.Sprint(p.ISR) != "[3]" ||
			(c.version >= 5 && fmt.Sprint(p.OfflineReplicas) != c.offline) {
			t.Errorf("%s: leader %d, replicas %v, ISR %v, offline %v; want leader %d, replicas and ISR [3], offline %s",
				what, p.Leader, p.Replicas, p.ISR, p.OfflineReplicas, c.leader, c.offline)
		}
	}

	req := kmsg.NewPtrDescribeClusterRequest()
	req.EndpointType = endpointTypeBrokers
	dc := external.mustRoundTrip(req).(*kmsg.DescribeClusterResponse)
	var ids []int32
	for _, br := range dc.Brokers {
		ids = append(ids, br.NodeID)
	}
	if fmt.Sprint(ids) != "[1 2]" {
		t.Errorf("EXTERNAL: DescribeCluster brokers %v, want [1 2]", ids)
	}
}

// TestListenersReplicateOnInterBrokerListener: two brokers that share only
// their inter-broker listener (INTERNAL; the other is EXTERNAL on broker 1,
// EDGE on broker 2) replicate over it: acks=all produces succeed with both
// in the ISR.
func TestListenersReplicateOnInterBrokerListener(t *testing.T) {
	t.Parallel()
	b1 := startBroker(t, twoListeners)
	b2 := startBroker(t, func(c *Config) {
		c.NodeID = 2
		c.EtcdEndpoints = b1.cluster.ClientURLs()
		c.Listeners = []string{"EDGE://127.0.0.1:0", "INTERNAL://127.0.0.1:0"}
		c.ListenerSecurityProtocolMap = "INTERNAL:PLAINTEXT,EDGE:PLAINTEXT"
		c.InterBrokerListenerName = "INTERNAL"
	})
	waitFor(t, 20*time.Second, "two brokers live", func() error {
		if n := len(b1.cluster.Snapshot().Brokers); n != 2 {
			return fmt.Errorf("%d live", n)
		}
		return nil
	})
	if me, _ := b1.cluster.Snapshot().Broker(2); (endpoint{me.Host, me.Port}) != boundEndpoint(t, b2, 1) {
		t.Fatalf("broker 2 registered at %s, want its INTERNAL listener %s", endpoint{me.Host, me.Port}, boundEndpoint(t, b2, 1))
	}

	w1 := dialWireAddr(t, b1.Addrs()[0])
	w2 := dialWireAddr(t, b2.Addrs()[1])
	rt := w1.createTopicResultAssigned("shared", [][]int32{{1, 2}, {2, 1}}, map[string]string{"min.insync.replicas": "2"})
	checkCode(t, "create shared", rt.ErrorCode, protocol.None)
	waitISR(t, b1, "shared", 0, "[1 2]")
	waitISR(t, b1, "shared", 1, "[1 2]")
	for i := 0; i < 5; i++ {
		rp := w1.producePartition(-1, "shared", 0, buildBatch(t, plainHeader(), fmt.Sprint("a-", i), 5))
		checkCode(t, "produce shared-0 at broker 1", rp.ErrorCode, protocol.None)
		rp = w2.producePartition(-1, "shared", 1, buildBatch(t, plainHeader(), fmt.Sprint("b-", i), 5))
		checkCode(t, "produce shared-1 at broker 2", rp.ErrorCode, protocol.None)
	}
	waitISR(t, b1, "shared", 0, "[1 2]")
	waitISR(t, b1, "shared", 1, "[1 2]")

	// A client on EXTERNAL is not told of broker 2, which lacks it.
	if got, want := metadataBrokers(metadataOn(dialWireAddr(t, b1.Addrs()[1]), 12)), "1=external.example:19092"; got != want {
		t.Errorf("EXTERNAL: Metadata brokers %s, want %s", got, want)
	}
}

// TestListenerConfig: listener settings are checked together at start.
func TestListenerConfig(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		mutate func(*Config)
		want   string // in the error; empty: valid
	}{
		{"default", func(*Config) {}, ""},
		{"two listeners", twoListeners, ""},
		{"advertised by position, same names", func(c *Config) {
			c.Listeners = []string{"PLAINTEXT://127.0.0.1:9092", "SECOND://127.0.0.1:9093"}
			c.ListenerSecurityProtocolMap = "PLAINTEXT:PLAINTEXT,SECOND:PLAINTEXT"
			c.AdvertisedListeners = []string{"PLAINTEXT://a:1", "SECOND://b:2"}
		}, ""},
		{"lower case names", func(c *Config) {
			c.Listeners = []string{"internal://127.0.0.1:9092"}
			c.ListenerSecurityProtocolMap = "Internal:plaintext"
			c.InterBrokerListenerName = "internal"
		}, ""},
		{"unknown protocol", func(c *Config) { c.ListenerSecurityProtocolMap = "PLAINTEXT:PLAIN" }, `unknown security protocol "PLAIN"`},
		{"not NAME:PROTOCOL", func(c *Config) { c.ListenerSecurityProtocolMap = "PLAINTEXT" }, "is not NAME:PROTOCOL"},
		{"listener without protocol", func(c *Config) {
			c.Listeners = []string{"PLAINTEXT://127.0.0.1:9092", "OTHER://127.0.0.1:9093"}
		}, "listener OTHER has no security protocol"},
		{"SSL without a key", func(c *Config) { c.Listeners = []string{"SSL://127.0.0.1:9093"} }, "TLS of listener SSL: no key and certificate"},
		{"SASL_SSL without a key store", func(c *Config) {
			c.Listeners = []string{"CLIENTS://127.0.0.1:9093"}
			c.ListenerSecurityProtocolMap = "CLIENTS:SASL_SSL"
		}, "TLS of listener CLIENTS: no key and certificate"},
		{"SASL with Kafka's default mechanism refused", func(c *Config) {
			c.Listeners = []string{"CLIENTS://127.0.0.1:9093"}
			c.ListenerSecurityProtocolMap = "CLIENTS:SASL_PLAINTEXT"
		}, "SASL listener CLIENTS enables mechanism GSSAPI"},
		{"inter-broker not a listener", func(c *Config) { c.InterBrokerListenerName = "INTERNAL" },
			"inter.broker.listener.name INTERNAL is not the name of a listener"},
		{"advertised not a listener", func(c *Config) { c.AdvertisedListeners = []string{"EXTERNAL://x:1"} },
			"advertised.listeners: EXTERNAL is not the name of a listener"},
		{"listener name twice", func(c *Config) {
			c.Listeners = []string{"PLAINTEXT://127.0.0.1:9092", "PLAINTEXT://127.0.0.1:9093"}
		}, "listener name PLAINTEXT used twice"},
	} {
		cfg := DefaultConfig()
		c.mutate(&cfg)
		err := cfg.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want valid", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrInvalidConfig)):
			t.Errorf("%s: error %v, want ErrInvalidConfig with %q", c.name, err, c.want)
		}
	}

	// The inter-broker listener: as named, else PLAINTEXT, else the first.
	for _, c := range []struct {
		listeners []string
		named     string
		want      string
	}{
		{[]string{"A://h:1", "PLAINTEXT://h:2"}, "", "PLAINTEXT"},
		{[]string{"A://h:1", "B://h:2"}, "", "A"},
		{[]string{"A://h:1", "B://h:2"}, "b", "B"},
	} {
		cfg := DefaultConfig()
		cfg.Listeners, cfg.InterBrokerListenerName = c.listeners, c.named
		cfg.ListenerSecurityProtocolMap = "A:PLAINTEXT,B:PLAINTEXT,PLAINTEXT:PLAINTEXT"
		ls, err := cfg.resolveListeners()
		if err != nil || ls.interBroker != c.want {
			t.Errorf("listeners %v, inter.broker.listener.name %q: inter-broker %q, %v; want %q",
				c.listeners, c.named, ls.interBroker, err, c.want)
		}
	}
}
