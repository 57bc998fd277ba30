package configs

import (
	"errors"
	"slices"
	"testing"
)

func TestParseThrottledReplicas(t *testing.T) {
	const leader = "leader.replication.throttled.replicas"
	for _, c := range []struct {
		value  string
		broker int32
		all    bool
		parts  []int32
		err    string
	}{
		{value: "", broker: 1},
		{value: "*", broker: 1, all: true},
		{value: " * ", broker: 7, all: true},
		{value: "0:1,1:2,2:1", broker: 1, parts: []int32{0, 2}},
		{value: "0:1,1:2,2:1", broker: 2, parts: []int32{1}},
		{value: "0:1,1:2,2:1", broker: 3},
		{value: "0:1 , 3:1", broker: 1, parts: []int32{0, 3}},
		{value: "0:1,,1:1", broker: 1, parts: []int32{0, 1}},
		{value: "0:1,0:1", broker: 1, parts: []int32{0, 0}},
		{value: "9999999999:1,4:1", broker: 1, parts: []int32{4}},
		{value: "0:9999999999", broker: 1},
		{value: "0:1,*", broker: 1, err: "Invalid value [0:1, *] for configuration " + leader +
			": " + leader + " must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."},
		{value: "a:1", broker: 1, err: "Invalid value [a:1] for configuration " + leader +
			": " + leader + " must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."},
		{value: "-1:1", broker: 1, err: "Invalid value [-1:1] for configuration " + leader +
			": " + leader + " must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."},
	} {
		got, err := ParseThrottledReplicas(leader, c.value, c.broker)
		if c.err != "" {
			if err == nil || err.Error() != c.err || !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("%q on broker %d: error %v, want %q (ErrInvalidConfig)", c.value, c.broker, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q on broker %d: %v", c.value, c.broker, err)
			continue
		}
		if got.All != c.all || !slices.Equal(got.Partitions, c.parts) {
			t.Errorf("%q on broker %d: all=%v partitions %v, want all=%v %v", c.value, c.broker, got.All, got.Partitions, c.all, c.parts)
		}
	}
	if _, err := ParseThrottledReplicas("retention.ms", "0:1", 1); err == nil {
		t.Error("retention.ms read as a throttled-replicas list")
	}
}

func TestThrottledReplicasHas(t *testing.T) {
	var none ThrottledReplicas
	if none.Has(0) || !none.Empty() {
		t.Error("the zero value throttles something")
	}
	all := ThrottledReplicas{All: true}
	if !all.Has(0) || !all.Has(12345) || all.Empty() {
		t.Error("* does not throttle every partition")
	}
	some := ThrottledReplicas{Partitions: []int32{2, 5}}
	for p, want := range map[int32]bool{0: false, 2: true, 5: true, 6: false} {
		if some.Has(p) != want {
			t.Errorf("[2 5].Has(%d) = %v", p, !want)
		}
	}
}

func TestDynamicBrokerRate(t *testing.T) {
	const name = "follower.replication.throttled.rate"
	for _, c := range []struct {
		what          string
		broker, deflt map[string]string
		want          int64
		ok            bool
	}{
		{"unset", nil, nil, Unthrottled, true},
		{"cluster default", nil, map[string]string{name: "1000"}, 1000, true},
		{"broker beats default", map[string]string{name: "10"}, map[string]string{name: "1000"}, 10, true},
		{"zero", map[string]string{name: "0"}, nil, 0, true},
		{"other names ignored", map[string]string{"leader.replication.throttled.rate": "5"}, nil, Unthrottled, true},
		{"bad value", map[string]string{name: "x"}, map[string]string{name: "1000"}, Unthrottled, false},
		{"negative", map[string]string{name: "-1"}, nil, Unthrottled, false},
	} {
		got, ok := DynamicBrokerRate(name, c.broker, c.deflt)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: %d, %v; want %d, %v", c.what, got, ok, c.want, c.ok)
		}
	}
}

// TestThrottleRateConfigs: the replication rates are Kafka's dynamic-only
// broker quota configs: LONG, at least 0, settable per broker and as the
// cluster default, refused with Kafka's message when invalid.
func TestThrottleRateConfigs(t *testing.T) {
	for _, name := range []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate",
		"replica.alter.log.dirs.io.max.bytes.per.second"} {
		d, ok := Broker(name)
		if !ok {
			t.Fatalf("%s not in the broker catalogue", name)
		}
		if d.Type != TypeLong || d.Default != "9223372036854775807" || d.Valid != "[0,...]" ||
			d.Update != UpdateClusterWide || !d.DynamicOnly || d.Unused {
			t.Errorf("%s: %+v", name, d)
		}
		for _, scope := range []Scope{ScopePerBroker, ScopeClusterDefault} {
			if err := ValidateBroker(map[string]string{name: "1048576"}, scope); err != nil {
				t.Errorf("%s=1048576 at scope %d: %v", name, scope, err)
			}
			err := ValidateBroker(map[string]string{name: "-1"}, scope)
			if want := "Invalid value -1 for configuration " + name + ": Value must be at least 0"; err == nil || err.Error() != want {
				t.Errorf("%s=-1 at scope %d: %v, want %q", name, scope, err, want)
			}
			err = ValidateBroker(map[string]string{name: "fast"}, scope)
			if want := "Invalid value fast for configuration " + name + ": Not a number of type LONG"; err == nil || err.Error() != want {
				t.Errorf("%s=fast at scope %d: %v, want %q", name, scope, err, want)
			}
		}
		// Set, the value has no DEFAULT_CONFIG synonym; unset, there is
		// nothing to report but the (unlisted) default.
		v, null, src, syns := ResolveBroker(name, true, map[string]string{name: "100"}, map[string]string{name: "200"}, nil)
		want := []Synonym{{name, "100", SourceDynamicBroker}, {name, "200", SourceDynamicDefaultBroker}}
		if v != "100" || null || src != SourceDynamicBroker || !slices.Equal(syns, want) {
			t.Errorf("%s resolved per broker: %q null=%v %s %v, want 100 from DYNAMIC_BROKER_CONFIG, synonyms %v", name, v, null, src, syns, want)
		}
		v, _, src, syns = ResolveBroker(name, false, map[string]string{name: "100"}, map[string]string{name: "200"}, nil)
		if want := want[1:]; v != "200" || src != SourceDynamicDefaultBroker || !slices.Equal(syns, want) {
			t.Errorf("%s resolved as the cluster default: %q %s %v, want 200 from DYNAMIC_DEFAULT_BROKER_CONFIG, %v", name, v, src, syns, want)
		}
	}
	next, err := IncrementalAlterBroker(map[string]string{"leader.replication.throttled.rate": "5"},
		[]Op{{"leader.replication.throttled.rate", OpDelete, nil}, {"follower.replication.throttled.rate", OpSet, str("7")}}, ScopePerBroker)
	if err != nil || len(next) != 1 || next["follower.replication.throttled.rate"] != "7" {
		t.Errorf("delete one rate, set the other: %v, %v", next, err)
	}
}
