package cluster

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	good := DefaultConfig()
	good.DataDir = "/tmp/x"
	if err := good.Validate(); err != nil {
		t.Fatalf("default config with a data dir: %v", err)
	}
	external := DefaultConfig()
	external.Endpoints = []string{"http://127.0.0.1:2379"}
	external.ClientListenAddr = "" // unused with endpoints
	if err := external.Validate(); err != nil {
		t.Fatalf("external config: %v", err)
	}

	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"no data dir", func(c *Config) { c.DataDir = "" }, "data dir"},
		{"bad client addr", func(c *Config) { c.ClientListenAddr = "nope" }, "client listen address"},
		{"bad peer addr", func(c *Config) { c.PeerListenAddr = "" }, "peer listen address"},
		{"prefix without slash", func(c *Config) { c.Prefix = "gregor" }, "prefix"},
		{"prefix trailing slash", func(c *Config) { c.Prefix = "/gregor/" }, "prefix"},
		{"prefix root", func(c *Config) { c.Prefix = "/" }, "prefix"},
		{"negative node", func(c *Config) { c.NodeID = -1 }, "node id"},
		{"short ttl", func(c *Config) { c.SessionTTL = 500 * time.Millisecond }, "session ttl"},
		{"no dial timeout", func(c *Config) { c.DialTimeout = 0 }, "dial timeout"},
		{"no request timeout", func(c *Config) { c.RequestTimeout = -1 }, "request timeout"},
		{"no start timeout", func(c *Config) { c.StartTimeout = 0 }, "start timeout"},
		{"bad log level", func(c *Config) { c.EtcdLogLevel = "loud" }, "log level"},
		{"empty endpoint", func(c *Config) { c.Endpoints = []string{" "} }, "empty etcd endpoint"},
		{"initial cluster with endpoints", func(c *Config) {
			c.Endpoints = []string{"http://127.0.0.1:2379"}
			c.InitialCluster = "gregor-0=http://127.0.0.1:2380"
		}, "with etcd endpoints give none"},
		{"initial cluster without this node", func(c *Config) { c.InitialCluster = "gregor-1=http://127.0.0.1:2380" }, "no member gregor-0"},
		{"initial cluster at another peer address", func(c *Config) { c.InitialCluster = "gregor-0=http://127.0.0.1:2390" }, "listens on 127.0.0.1:2380"},
		{"initial cluster at a name, listening on one address", func(c *Config) { c.InitialCluster = "gregor-0=http://broker-0.gregor:2380" }, "listens on 127.0.0.1:2380"},
		{"initial cluster at a name on another port, listening on all", func(c *Config) {
			c.PeerListenAddr = "0.0.0.0:2380"
			c.InitialCluster = "gregor-0=http://broker-0.gregor:2390"
		}, "listens on 0.0.0.0:2380"},
		{"initial cluster entry without url", func(c *Config) { c.InitialCluster = "gregor-0=http://127.0.0.1:2380,gregor-1" }, "not name=peer-url"},
		{"initial cluster bad url", func(c *Config) { c.InitialCluster = "gregor-0=127.0.0.1:2380" }, "not http://host:port"},
		{"initial cluster names this node twice", func(c *Config) {
			c.InitialCluster = "gregor-0=http://127.0.0.1:2380,gregor-0=http://127.0.0.1:2380"
		}, "twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			tc.change(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}

	three := good
	three.InitialCluster = "gregor-0=http://127.0.0.1:2380,gregor-1=http://10.0.0.2:2380,gregor-2=https://h3:2380"
	if err := three.Validate(); err != nil {
		t.Errorf("an initial cluster of three: %v", err)
	}

	// Listening on every interface, the member is advertised at the name
	// the initial cluster gives it (its client URL too when the client
	// listen address is unspecified), and at its listen addresses otherwise.
	for _, tc := range []struct {
		peer, client, initial, wantPeer, wantClient string
	}{
		{"0.0.0.0:2380", "0.0.0.0:2379", "gregor-0=http://gregor-0.gregor.ns.svc:2380,gregor-1=http://gregor-1.gregor.ns.svc:2380",
			"http://gregor-0.gregor.ns.svc:2380", "http://gregor-0.gregor.ns.svc:2379"},
		{"[::]:2380", "127.0.0.1:2379", "gregor-0=http://b0:2380", "http://b0:2380", "http://127.0.0.1:2379"},
		{":2380", ":2379", "gregor-0=http://10.1.2.3:2380", "http://10.1.2.3:2380", "http://10.1.2.3:2379"},
		{"127.0.0.1:2380", "127.0.0.1:2379", "gregor-0=http://127.0.0.1:2380", "http://127.0.0.1:2380", "http://127.0.0.1:2379"},
		{"0.0.0.0:2380", "0.0.0.0:2379", "", "http://0.0.0.0:2380", "http://0.0.0.0:2379"},
	} {
		cfg := good
		cfg.PeerListenAddr, cfg.ClientListenAddr, cfg.InitialCluster = tc.peer, tc.client, tc.initial
		if err := cfg.Validate(); err != nil {
			t.Errorf("listening on %s with initial cluster %q: %v", tc.peer, tc.initial, err)
		}
		peer, client := cfg.advertisedURLs()
		if peer.String() != tc.wantPeer || client.String() != tc.wantClient {
			t.Errorf("listening on %s and %s with initial cluster %q: advertised %s and %s, want %s and %s",
				tc.peer, tc.client, tc.initial, peer.String(), client.String(), tc.wantPeer, tc.wantClient)
		}
	}

	cfg := good
	cfg.SessionTTL = 2500 * time.Millisecond
	if got := cfg.ttlSeconds(); got != 3 {
		t.Errorf("ttlSeconds of 2.5s = %d, want 3 (rounded up)", got)
	}
}

func TestKeyspaceParse(t *testing.T) {
	k := newKeyspace("/g")
	id := TopicID{1, 2, 3}
	for _, tc := range []struct {
		key  string
		want parsedKey
	}{
		{k.clusterID(), parsedKey{kind: kindClusterID}},
		{k.producerIDBlock(), parsedKey{kind: kindProducerIDBlock}},
		{k.broker(7), parsedKey{kind: kindBroker, node: 7}},
		{k.topic("a.b-c_d"), parsedKey{kind: kindTopic, topic: "a.b-c_d"}},
		{k.topicID(id), parsedKey{kind: kindTopicID}},
		{k.partition("t", 12), parsedKey{kind: kindPartition, topic: "t", partition: 12}},
		{k.topicConfig("t"), parsedKey{kind: kindTopicConfig, topic: "t"}},
		{k.brokerConfig(3), parsedKey{kind: kindBrokerConfig, node: 3}},
		{k.brokerConfig(-1), parsedKey{kind: kindBrokerConfig, node: -1}},
		{"/g/brokers/007", parsedKey{}},
		{"/g/brokers/-1", parsedKey{}},
		{"/g/partitions/t/x", parsedKey{}},
		{"/g/partitions/t", parsedKey{}},
		{"/g/topics/a/b", parsedKey{}},
		{"/g/whatever/else", parsedKey{}},
		{"/gx/topics/t", parsedKey{}},
		{"/g/configs/other/x", parsedKey{}},
	} {
		if got := k.parse(tc.key); got != tc.want {
			t.Errorf("parse(%q) = %+v, want %+v", tc.key, got, tc.want)
		}
	}
}

func TestTopicID(t *testing.T) {
	seen := map[TopicID]bool{}
	for range 1000 {
		id := randomID()
		s := id.String()
		if len(s) != 22 || strings.HasPrefix(s, "-") || strings.ContainsAny(s, "=+/") {
			t.Fatalf("randomID().String() = %q, want 22 base64url characters not starting with '-'", s)
		}
		if id.reserved() || id[6]>>4 != 4 || id[8]>>6 != 2 {
			t.Fatalf("randomID() = %x: reserved or not a version 4 UUID", id[:])
		}
		back, err := ParseTopicID(s)
		if err != nil || back != id {
			t.Fatalf("ParseTopicID(%q) = %x, %v; want %x", s, back, err, id[:])
		}
		if seen[id] {
			t.Fatalf("randomID repeated %s", s)
		}
		seen[id] = true
	}
	// Kafka prints Uuid(0, 1), the metadata topic id, as AAAAAAAAAAAAAAAAAAAAAQ.
	if got := (TopicID{15: 1}).String(); got != "AAAAAAAAAAAAAAAAAAAAAQ" {
		t.Errorf("Uuid(0,1) = %q, want Kafka's AAAAAAAAAAAAAAAAAAAAAQ", got)
	}
	for _, bad := range []string{"", "AAAA", "AAAAAAAAAAAAAAAAAAAAAQ==", "!AAAAAAAAAAAAAAAAAAAAA"} {
		if _, err := ParseTopicID(bad); err == nil {
			t.Errorf("ParseTopicID(%q) succeeded, want an error", bad)
		}
	}
}

// TestStateApply drives the cache's state without etcd: values in, Metadata
// out.
func TestStateApply(t *testing.T) {
	k := newKeyspace("/g")
	var warnings []string
	st := newState(k, func(msg string, _ ...any) { warnings = append(warnings, msg) })
	id1, id2 := randomID(), randomID()
	put := func(key string, v any) { st.apply(key, []byte(encode(v)), keyRevs{1, 1}, false) }
	del := func(key string) { st.apply(key, nil, keyRevs{}, true) }

	put(k.clusterID(), clusterIDRecord{ID: "cid"})
	put(k.broker(2), brokerRecord{Host: "h2", Port: 9092})
	rack := "r1"
	put(k.broker(1), brokerRecord{Host: "h1", Port: 9093, Rack: &rack})
	put(k.topic("a"), topicRecord{ID: id1.String(), Partitions: 2})
	put(k.partition("a", 0), partitionRecord{Leader: 1, ISR: []int32{1, 2}, Replicas: []int32{1, 2}})
	put(k.partition("a", 1), partitionRecord{Leader: 2, LeaderEpoch: 3, ISR: []int32{2}, PartitionEpoch: 4, Replicas: []int32{2, 1}})
	put(k.topicConfig("a"), configRecord{Config: map[string]string{"cleanup.policy": "compact"}})
	put(k.topic("b"), topicRecord{ID: id2.String(), Partitions: 1})
	put(k.partition("b", 0), partitionRecord{Leader: 1, ISR: []int32{1}, Replicas: []int32{1}})
	put(k.brokerConfig(-1), configRecord{Config: map[string]string{"log.retention.ms": "1"}})
	m1 := st.snapshot(10)

	if m1.ClusterID != "cid" || m1.Revision != 10 {
		t.Errorf("cluster id, revision = %q, %d; want cid, 10", m1.ClusterID, m1.Revision)
	}
	if got := brokerIDs(m1); !slices.Equal(got, []int32{1, 2}) || m1.ControllerID != 1 {
		t.Errorf("brokers %v, controller %d; want [1 2], 1", got, m1.ControllerID)
	}
	if m1.Controller.NodeID != -1 {
		t.Errorf("elected controller %+v with no candidate", m1.Controller)
	}
	// An elected controller that is a live broker is the one clients are
	// told; one that is not live is not.
	for _, c := range []struct {
		node, want int32
	}{{2, 2}, {9, 1}} {
		cst := newState(k, func(string, ...any) {})
		cst.apply(k.broker(1), []byte(encode(brokerRecord{Host: "h1", Port: 1})), keyRevs{1, 1}, false)
		cst.apply(k.broker(2), []byte(encode(brokerRecord{Host: "h2", Port: 2})), keyRevs{2, 2}, false)
		cst.apply(k.controllerPrefix()+"/1f", []byte(encode(controllerRecord{Node: c.node})), keyRevs{5, 5}, false)
		if m := cst.snapshot(5); m.Controller != (ControllerInfo{NodeID: c.node, Epoch: 5}) || m.ControllerID != c.want {
			t.Errorf("candidate %d: elected %+v, controller id %d; want %d at epoch 5, id %d", c.node, m.Controller, m.ControllerID, c.node, c.want)
		}
	}
	if b, ok := m1.Broker(1); !ok || b.Rack == nil || *b.Rack != "r1" || b.Port != 9093 {
		t.Errorf("Broker(1) = %+v, %v", b, ok)
	}
	if _, ok := m1.Broker(3); ok {
		t.Errorf("Broker(3) found, want absent")
	}
	a := m1.Topics["a"]
	if a == nil || a.ID != id1 || len(a.Partitions) != 2 || m1.TopicsByID[id1] != a {
		t.Fatalf("topic a = %+v, by id %+v", a, m1.TopicsByID[id1])
	}
	if p := a.Partitions[1]; p.Leader != 2 || p.LeaderEpoch != 3 || p.PartitionEpoch != 4 ||
		!slices.Equal(p.ISR, []int32{2}) || !slices.Equal(p.Replicas, []int32{2, 1}) {
		t.Errorf("a-1 = %+v", p)
	}
	if a.Configs["cleanup.policy"] != "compact" || m1.BrokerConfigs[-1]["log.retention.ms"] != "1" {
		t.Errorf("configs: topic %v, broker %v", a.Configs, m1.BrokerConfigs)
	}

	// A change to topic b leaves topic a's value shared, and the old
	// Metadata untouched.
	put(k.partition("b", 0), partitionRecord{Leader: -1, LeaderEpoch: 1, ISR: []int32{}, PartitionEpoch: 1, Replicas: []int32{1}})
	m2 := st.snapshot(11)
	if m2.Topics["a"] != a {
		t.Errorf("unchanged topic a was rebuilt")
	}
	if m1.Topics["b"].Partitions[0].Leader != 1 || m2.Topics["b"].Partitions[0].Leader != -1 {
		t.Errorf("b-0 leader: old view %d (want 1), new view %d (want -1)",
			m1.Topics["b"].Partitions[0].Leader, m2.Topics["b"].Partitions[0].Leader)
	}
	if &m2.Brokers[0] != &m1.Brokers[0] {
		t.Errorf("unchanged brokers were rebuilt")
	}

	// Deletes, and a value that does not decode.
	del(k.topic("a"))
	del(k.partition("a", 0))
	del(k.partition("a", 1))
	del(k.topicConfig("a"))
	del(k.broker(1))
	st.apply(k.topic("c"), []byte("{not json"), keyRevs{1, 1}, false)
	m3 := st.snapshot(12)
	if _, ok := m3.Topics["a"]; ok || m3.TopicsByID[id1] != nil || m3.Topics["c"] != nil {
		t.Errorf("topics after delete: %v", m3.Topics)
	}
	if got := brokerIDs(m3); !slices.Equal(got, []int32{2}) || m3.ControllerID != 2 {
		t.Errorf("brokers %v, controller %d; want [2], 2", got, m3.ControllerID)
	}
	if st.decodeFailure != 1 || len(warnings) != 1 {
		t.Errorf("decode failures %d, warnings %q; want 1 each", st.decodeFailure, warnings)
	}
	if m1.Topics["a"] == nil || len(m1.Brokers) != 2 {
		t.Errorf("an older Metadata changed")
	}
}

func TestValidateTopicName(t *testing.T) {
	for _, ok := range []string{"a", "A-b_c.1", strings.Repeat("x", 249)} {
		if err := validateTopicName(ok); err != nil {
			t.Errorf("validateTopicName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", strings.Repeat("x", 250), "a/b", "a b", "ä"} {
		if err := validateTopicName(bad); err == nil {
			t.Errorf("validateTopicName(%q) = nil, want ErrInvalidTopic", bad)
		}
	}
}

// TestBrokerEndpoints: a registration lists the endpoints of its listeners
// and answers for those only; one written before endpoints existed (host
// and port alone) answers with them for any listener. The durable record a
// fenced broker is listed with keeps the endpoints too.
func TestBrokerEndpoints(t *testing.T) {
	k := newKeyspace("/g")
	st := newState(k, func(string, ...any) {})
	info := BrokerInfo{NodeID: 1, Host: "in", Port: 9092, Endpoints: []Endpoint{
		{Listener: "INTERNAL", Host: "in", Port: 9092, SecurityProtocol: "PLAINTEXT"},
		{Listener: "EXTERNAL", Host: "ex", Port: 19092, SecurityProtocol: "PLAINTEXT"},
	}}
	st.apply(k.broker(1), []byte(encode(newBrokerRecord(info))), keyRevs{1, 1}, false)
	st.apply(k.registered(3), []byte(encode(newBrokerRecord(BrokerInfo{NodeID: 3, Host: "f", Port: 3, Endpoints: []Endpoint{
		{Listener: "INTERNAL", Host: "f", Port: 3, SecurityProtocol: "PLAINTEXT"}}}))), keyRevs{2, 2}, false)
	// As an older Gregor writes it.
	st.apply(k.broker(2), []byte(`{"host":"old","port":9093}`), keyRevs{3, 3}, false)
	m := st.snapshot(3)

	for _, c := range []struct {
		node     int32
		listener string
		host     string
		port     int32
		ok       bool
	}{
		{1, "INTERNAL", "in", 9092, true},
		{1, "EXTERNAL", "ex", 19092, true},
		{1, "OTHER", "", 0, false},
		{2, "INTERNAL", "old", 9093, true},
		{2, "EXTERNAL", "old", 9093, true},
	} {
		b, live := m.Broker(c.node)
		if !live {
			t.Fatalf("broker %d not live", c.node)
		}
		if host, port, ok := b.Endpoint(c.listener); host != c.host || port != c.port || ok != c.ok {
			t.Errorf("broker %d on %s: %s:%d, %v; want %s:%d, %v", c.node, c.listener, host, port, ok, c.host, c.port, c.ok)
		}
	}
	if b, _ := m.Broker(1); b.Host != "in" || b.Port != 9092 || !slices.Equal(b.Endpoints, info.Endpoints) {
		t.Errorf("broker 1 = %+v; want host in:9092 and endpoints %+v", b, info.Endpoints)
	}
	if len(m.Fenced) != 1 || m.Fenced[0].NodeID != 3 || len(m.Fenced[0].Endpoints) != 1 {
		t.Fatalf("fenced = %+v; want broker 3 with its endpoint", m.Fenced)
	}
	if _, _, ok := m.Fenced[0].Endpoint("EXTERNAL"); ok {
		t.Errorf("fenced broker 3 has an EXTERNAL endpoint; it registered INTERNAL only")
	}
}
