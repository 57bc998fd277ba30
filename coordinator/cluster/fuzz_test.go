package cluster

import (
	"strings"
	"testing"

	"github.com/gregor-io/gregor/coordinator/acl"
)

// fuzzBase are the keys of a small cluster, as the writers here store them.
func fuzzBase(k keyspace) map[string]string {
	rack := "r1"
	id := TopicID{1, 2, 3}
	return map[string]string{
		k.clusterID():       encode(clusterIDRecord{ID: "c"}),
		k.producerIDBlock(): encode(producerIDBlockRecord{Broker: 1, First: 0, Count: 1000}),
		k.broker(1): encode(brokerRecord{Host: "h1", Port: 9092, Rack: &rack, Owner: "o", Endpoints: []endpointRecord{
			{Listener: "INTERNAL", Host: "h1", Port: 9092, SecurityProtocol: "PLAINTEXT"},
			{Listener: "EXTERNAL", Host: "x1", Port: 19092, SecurityProtocol: "PLAINTEXT"}}}),
		k.broker(2):           encode(brokerRecord{Host: "h2", Port: 9092}),
		k.registered(1):       encode(brokerRecord{Host: "h1", Port: 9092, Rack: &rack}),
		k.registered(3):       encode(brokerRecord{Host: "h3", Port: 9092}),
		k.topic("t"):          encode(topicRecord{ID: id.String(), Partitions: 2}),
		k.topicID(id):         encode(topicIDRecord{Name: "t"}),
		k.partition("t", 0):   encode(partitionRecord{Leader: 1, LeaderEpoch: 0, ISR: []int32{1, 2}, Replicas: []int32{1, 2}}),
		k.partition("t", 1):   encode(partitionRecord{Leader: -1, LeaderEpoch: 3, ISR: []int32{}, PartitionEpoch: 4, Replicas: []int32{2}}),
		k.topicConfig("t"):    encode(configRecord{Config: map[string]string{"retention.ms": "1000"}}),
		k.brokerConfig(-1):    encode(configRecord{Config: map[string]string{"log.retention.hours": "1"}}),
		k.brokerConfig(1):     encode(configRecord{Config: map[string]string{"a": "b"}}),
		k.root + "future/key": "{}",
		k.controllerPrefix() + "/694d8c3a10ab2f04": encode(controllerRecord{Node: 2}),
	}
}

// FuzzApply applies an arbitrary key and value, as a load or a watch event
// delivers them, to the cache of a small cluster, then builds its Metadata
// as a watch response does. A key the cache does not know is skipped, a
// value that does not decode counts as absent; nothing panics or sizes an
// allocation from a number in a value. Keys that parse are the keys the
// keyspace builds for what they name.
func FuzzApply(f *testing.F) {
	k := newKeyspace("/g")
	for key, value := range fuzzBase(k) {
		f.Add(key, []byte(value), false)
		f.Add(key, []byte(value), true)
	}
	id := TopicID{1, 2, 3}.String()
	f.Add(k.topic("u"), []byte(`{"id":"`+id+`","partitions":3}`), false)
	f.Add(k.topic("t"), []byte(`{"id":"`+id+`","partitions":-5}`), false)
	f.Add(k.topic("t"), []byte(`{"id":"`+id+`","partitions":2147483647}`), false)
	f.Add(k.topic("t"), []byte(`{"id":"AAAAAAAAAAAAAAAAAAAAAA==","partitions":1}`), false)
	f.Add(k.partition("t", 5), []byte(`{"leader":9,"isr":null}`), false)
	f.Add(k.brokerConfig(-1), []byte(`{"config":{}}`), false)
	f.Add(k.broker(3), []byte(`null`), false)
	f.Add(k.broker(3), []byte(`{"host":"h","port":1,"endpoints":[{"listener":"A","port":-1},null,{}]}`), false)
	f.Add(k.registered(2), []byte(`{"host":"h","port":1,"endpoints":{}}`), false)
	f.Add("/g/brokers/007", []byte(`{}`), false)
	f.Add("/g/partitions/t/", []byte(`{}`), false)
	f.Add("/g/configs/brokers/default/x", []byte(`{}`), false)
	f.Add(k.clusterID(), []byte(`{"id":`), false)
	f.Add(k.acl(acl.Binding{ResourceType: acl.ResourceTopic, Name: "a/b", PatternType: acl.PatternPrefixed,
		Principal: "User:x", Host: "*", Operation: acl.OpRead, Permission: acl.PermissionAllow}), []byte(`{}`), false)
	f.Add("/g/acls/2/3/%61/User:x/*/3/3", []byte(`{}`), false)
	f.Add(k.groupConfig("g/x"), []byte(`{"config":{"a":"b"}}`), false)
	f.Add(k.quota(QuotaEntity{User: Named("a/b"), ClientID: DefaultName()}), []byte(`{"quotas":{"producer_byte_rate":1024}}`), false)
	f.Add(k.quota(QuotaEntity{IP: Named("::1")}), []byte(`{"quotas":{}}`), false)
	f.Add("/g/quotas/users/%3Cdefault%3E/clients/<default>", []byte(`{"quotas":{"x":"y"}}`), false)
	f.Add("/g/quotas/clients/<default>/users/x", []byte(`{"quotas":{"x":1}}`), false)
	f.Fuzz(func(t *testing.T, key string, value []byte, deleted bool) {
		checkKey(t, k, key)
		st := newState(k, func(string, ...any) {})
		for key, value := range fuzzBase(k) {
			st.apply(key, []byte(value), keyRevs{1, 1}, false)
		}
		before := st.snapshot(1)
		st.apply(key, value, keyRevs{2, 2}, deleted)
		m := st.snapshot(2)
		checkMetadata(t, m)
		// The key again, deleted, as a later event would: the previous
		// view is reused where untouched, and stays as it was.
		st.apply(key, nil, keyRevs{}, true)
		checkMetadata(t, st.snapshot(3))
		if before.ClusterID != "c" || len(before.Brokers) != 2 || before.Topics["t"] == nil || before.Controller.NodeID != 2 {
			t.Fatalf("an earlier view changed: %+v", before)
		}
	})
}

// checkKey checks that a key that parses is the one keyspace builds.
func checkKey(t *testing.T, k keyspace, key string) {
	t.Helper()
	pk := k.parse(key)
	var want string
	switch pk.kind {
	case kindUnknown, kindTopicID:
		return
	case kindController:
		if !strings.HasPrefix(key, k.controllerPrefix()+"/") || strings.Contains(key[len(k.controllerPrefix())+1:], "/") {
			t.Fatalf("key %q parses as a controller candidate", key)
		}
		return
	case kindClusterID:
		want = k.clusterID()
	case kindProducerIDBlock:
		want = k.producerIDBlock()
	case kindBroker:
		want = k.broker(pk.node)
	case kindRegistered:
		want = k.registered(pk.node)
	case kindTopic:
		want = k.topic(pk.topic)
	case kindPartition:
		want = k.partition(pk.topic, pk.partition)
	case kindTopicConfig:
		want = k.topicConfig(pk.topic)
	case kindBrokerConfig:
		want = k.brokerConfig(pk.node)
	case kindGroupConfig:
		want = k.groupConfig(pk.topic)
	case kindACL:
		want = k.acl(pk.acl)
	case kindScram:
		want = k.scram(pk.scram)
	case kindQuota:
		want = k.quota(pk.quota)
	}
	if want != key {
		t.Fatalf("key %q parses as %+v, which is key %q", key, pk, want)
	}
}

// checkMetadata checks what every reader of a Metadata relies on.
func checkMetadata(t *testing.T, m *Metadata) {
	t.Helper()
	for e, vals := range m.ClientQuotas {
		if !e.valid() || len(vals) == 0 {
			t.Fatalf("client quota entity %+v with %v", e, vals)
		}
	}
	for i, b := range m.Brokers {
		if b.NodeID < 0 || (i > 0 && b.NodeID <= m.Brokers[i-1].NodeID) {
			t.Fatalf("brokers not sorted by node id: %+v", m.Brokers)
		}
		if got, ok := m.Broker(b.NodeID); !ok || got.NodeID != b.NodeID {
			t.Fatalf("Broker(%d) = %+v, %v", b.NodeID, got, ok)
		}
		for _, e := range b.Endpoints {
			if _, _, ok := b.Endpoint(e.Listener); !ok {
				t.Fatalf("broker %d has endpoint %+v but no endpoint on listener %q", b.NodeID, e, e.Listener)
			}
		}
	}
	_, electedLive := m.Broker(m.Controller.NodeID)
	switch {
	case electedLive && m.ControllerID != m.Controller.NodeID,
		!electedLive && len(m.Brokers) > 0 && m.ControllerID != m.Brokers[0].NodeID,
		len(m.Brokers) == 0 && m.ControllerID != -1:
		t.Fatalf("controller id %d with elected %+v and brokers %+v", m.ControllerID, m.Controller, m.Brokers)
	}
	if (m.Controller.NodeID == -1) != (m.Controller.Epoch == 0) {
		t.Fatalf("elected controller %+v", m.Controller)
	}
	for name, tp := range m.Topics {
		if tp == nil || tp.Name != name {
			t.Fatalf("topic %q is %+v", name, tp)
		}
		if m.TopicsByID[tp.ID] == nil {
			t.Fatalf("topic %q missing from TopicsByID", name)
		}
	}
}
