package cluster

import (
	"fmt"
	"maps"
	"testing"
)

// TestClientQuotas: quotas are stored per entity, default entities and
// names with "/" included, seen by another node; a removal takes keys
// away and the entity with its last one; invalid entities are refused.
func TestClientQuotas(t *testing.T) {
	t.Parallel()
	a := open(t, embeddedConfig(t.TempDir(), 1))
	b := open(t, externalConfig(a, 2))
	ctx := testCtx(t)
	alice := QuotaEntity{User: Named("alice")}
	aliceC1 := QuotaEntity{User: Named("alice"), ClientID: Named("c/1 <default>")}
	defClient := QuotaEntity{ClientID: DefaultName()}
	defBoth := QuotaEntity{User: DefaultName(), ClientID: DefaultName()}
	ip := QuotaEntity{IP: Named("10.0.0.1")}
	err := a.AlterClientQuotas(ctx, []QuotaChange{
		{Entity: alice, Set: map[string]float64{"producer_byte_rate": 1024, "request_percentage": 12.5}},
		{Entity: aliceC1, Set: map[string]float64{"consumer_byte_rate": 2048}},
		{Entity: defClient, Set: map[string]float64{"producer_byte_rate": 10}},
		{Entity: defBoth, Set: map[string]float64{"producer_byte_rate": 20}},
		{Entity: ip, Set: map[string]float64{"connection_creation_rate": 5}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[QuotaEntity]map[string]float64{
		alice:     {"producer_byte_rate": 1024, "request_percentage": 12.5},
		aliceC1:   {"consumer_byte_rate": 2048},
		defClient: {"producer_byte_rate": 10},
		defBoth:   {"producer_byte_rate": 20},
		ip:        {"connection_creation_rate": 5},
	}
	same := func(got map[QuotaEntity]map[string]float64) bool {
		return maps.EqualFunc(got, want, func(x, y map[string]float64) bool { return maps.Equal(x, y) })
	}
	if got := a.Snapshot().ClientQuotas; !same(got) {
		t.Fatalf("node 1 sees %v right after the write, want %v", got, want)
	}
	eventually(t, func() string {
		if got := b.Snapshot().ClientQuotas; !same(got) {
			return fmt.Sprintf("node 2 sees %v", got)
		}
		return ""
	})

	err = b.AlterClientQuotas(ctx, []QuotaChange{
		{Entity: alice, Set: map[string]float64{"producer_byte_rate": 4096}, Remove: []string{"request_percentage", "nope"}},
		{Entity: defClient, Remove: []string{"producer_byte_rate"}},
		{Entity: QuotaEntity{User: Named("nobody")}, Remove: []string{"producer_byte_rate"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want[alice] = map[string]float64{"producer_byte_rate": 4096}
	delete(want, defClient)
	if got := b.Snapshot().ClientQuotas; !same(got) {
		t.Fatalf("node 2 sees %v after the second alteration, want %v", got, want)
	}
	prev := b.Snapshot().ClientQuotas
	if _, err := b.CreateTopic(ctx, TopicSpec{Name: "t", Assignments: [][]int32{{1}}}); err != nil {
		t.Fatal(err)
	}
	if m := b.Snapshot(); fmt.Sprintf("%p", m.ClientQuotas) != fmt.Sprintf("%p", prev) {
		t.Error("a topic change rebuilt the quota map")
	}

	for _, bad := range []QuotaEntity{
		{},
		{IP: Named("1.2.3.4"), User: Named("x")},
		{User: QuotaName{Set: true}},
		{User: QuotaName{Set: true, Default: true, Name: "x"}},
	} {
		if err := a.AlterClientQuotas(ctx, []QuotaChange{{Entity: bad, Remove: []string{"k"}}}); err == nil {
			t.Errorf("altering %+v was accepted", bad)
		}
	}
	if err := a.AlterClientQuotas(ctx, []QuotaChange{{Entity: alice}, {Entity: alice}}); err == nil {
		t.Error("an entity named twice was accepted")
	}
}

// TestQuotaKeys: every entity shape round-trips through its key, and
// keys this version does not write are not taken for quotas.
func TestQuotaKeys(t *testing.T) {
	k := newKeyspace("/p")
	for _, e := range []QuotaEntity{
		{User: Named("a/b%")}, {User: DefaultName()}, {ClientID: Named("<default>")}, {ClientID: DefaultName()},
		{User: Named("u"), ClientID: DefaultName()}, {User: DefaultName(), ClientID: Named("c")}, {IP: Named("::1")}, {IP: DefaultName()},
	} {
		key := k.quota(e)
		if pk := k.parse(key); pk.kind != kindQuota || pk.quota != e {
			t.Errorf("key %s of %v parses as %+v", key, e, pk)
		}
	}
	for _, key := range []string{"/p/quotas/users/", "/p/quotas/users/a/b", "/p/quotas/clients/a%2", "/p/quotas/ips/x/clients/y",
		"/p/quotas/users/a/clients/", "/p/quotas/users/%61", "/p/quotas/other/x"} {
		if pk := k.parse(key); pk.kind != kindUnknown {
			t.Errorf("key %s parses as %+v, want unknown", key, pk)
		}
	}
}
