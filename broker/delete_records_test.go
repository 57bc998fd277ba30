package broker

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDeleteRecords moves a partition's start offset with DeleteRecords and
// checks what readers see: the earliest offset, a fetch below the start
// (OFFSET_OUT_OF_RANGE, then a consumer resetting to the new earliest), the
// -1 (high watermark) form, and Kafka's errors.
func TestDeleteRecords(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	ctx := configsTestCtx(t)
	cl := newClient(t, b)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"segment.bytes": kadm.StringPtr("1048576")}, "dr"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, "dr-compact"); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		v := make([]byte, 20000)
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		recs = append(recs, &kgo.Record{Topic: "dr", Partition: 0, Key: []byte{byte(i)}, Value: v})
	}
	recs = append(recs, &kgo.Record{Topic: "dr-compact", Partition: 0, Key: []byte("k"), Value: []byte("v")})
	pcl := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := pcl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	segsBefore := drPartition(t, b).log().SegmentCount()

	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "dr", Partition: 0, At: 150})
	res, err := adm.DeleteRecords(ctx, offs)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := res.Lookup("dr", 0)
	if r.Err != nil || r.LowWatermark != 150 {
		t.Fatalf("delete to 150: low watermark %d, err %v; want 150", r.LowWatermark, r.Err)
	}
	// The new start is on disk before the response: a crash now keeps the
	// records deleted.
	ckpt, err := os.ReadFile(filepath.Join(b.cfg.LogDirs[0], "log-start-offset-checkpoint"))
	if err != nil || !strings.Contains(string(ckpt), "\ndr 0 150\n") {
		t.Errorf("log-start-offset-checkpoint after DeleteRecords: %q (%v), want a line \"dr 0 150\"", ckpt, err)
	}
	if segs := drPartition(t, b).log().SegmentCount(); segs >= segsBefore {
		t.Errorf("segments after deleting below 150: %d, before %d; want fewer", segs, segsBefore)
	}
	starts, err := adm.ListStartOffsets(ctx, "dr")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("dr", 0); o.Offset != 150 {
		t.Errorf("earliest after delete = %d, want 150", o.Offset)
	}

	// A consumer at offset 10 is out of range and resets to the new start.
	ccl := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"dr": {0: kgo.NewOffset().At(10)}}),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []int64
	for len(got) < 50 {
		fs := ccl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d records before %v", len(got), err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, r.Offset) })
	}
	if got[0] != 150 || got[len(got)-1] != 199 {
		t.Errorf("consumer after reset read offsets %d..%d, want 150..199", got[0], got[len(got)-1])
	}

	// -1 deletes up to the high watermark; an offset past it and the
	// compacted topic are refused; offsets at or below the start are no-ops.
	cases := []struct {
		topic string
		at    int64
		want  error
		low   int64
	}{
		{"dr", 100, nil, 150},
		{"dr", 201, kerr.OffsetOutOfRange, -1},
		{"dr", -1, nil, 200},
		{"dr-compact", 1, kerr.PolicyViolation, -1},
	}
	for _, c := range cases {
		var o kadm.Offsets
		o.Add(kadm.Offset{Topic: c.topic, Partition: 0, At: c.at})
		res, err := adm.DeleteRecords(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		r, ok := res.Lookup(c.topic, 0)
		if !ok {
			t.Fatalf("%s@%d: no result", c.topic, c.at)
		}
		if !errors.Is(r.Err, c.want) || (c.want == nil && r.LowWatermark != c.low) {
			t.Errorf("%s@%d: low watermark %d, err %v; want %d, %v", c.topic, c.at, r.LowWatermark, r.Err, c.low, c.want)
		}
	}
}

func drPartition(t *testing.T, b *Broker) *partition {
	t.Helper()
	p, code := b.lookupPartition("dr", [16]byte{}, false, 0)
	if p == nil {
		t.Fatalf("partition dr-0: %v", code)
	}
	return p
}
