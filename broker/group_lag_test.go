package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestGroupLagMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	b := startBroker(t, func(c *Config) { c.Registerer = reg })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := newClient(t, b, kgo.DefaultProduceTopic("lagged"))
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "lagged"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		r := &kgo.Record{Value: []byte("v"), Partition: int32(i % 2)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "lagged", Partition: 0, At: 30, LeaderEpoch: -1})
	offsets.Add(kadm.Offset{Topic: "lagged", Partition: 1, At: 50, LeaderEpoch: -1})
	resp, err := adm.CommitOffsets(ctx, "lag-group", offsets)
	if err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	ends, err := adm.ListEndOffsets(ctx, "lagged")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{}
	for p, committed := range map[int32]int64{0: 30, 1: 50} {
		end, _ := ends.Lookup("lagged", p)
		want[fmt.Sprint(p)] = float64(max(end.Offset-committed, 0))
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "gregor_consumer_group_lag" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := labelMap(m)
			if labels["group"] == "lag-group" && labels["topic"] == "lagged" {
				got[labels["partition"]] = m.GetGauge().GetValue()
			}
		}
	}
	for p, w := range want {
		if got[p] != w {
			t.Fatalf("lag of partition %s: got %v, want %v (all: %v)", p, got[p], w, got)
		}
	}
}

func labelMap(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}
