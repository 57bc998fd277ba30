package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDescribeLogDirs checks the per-partition sizes DescribeLogDirs
// reports against the logs, for all topics and for one asked by name.
func TestDescribeLogDirs(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	ctx := configsTestCtx(t)
	cl := newClient(t, b)
	adm := kadm.NewClient(cl)
	for _, name := range []string{"ld-a", "ld-b"} {
		if _, err := adm.CreateTopic(ctx, 2, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "ld-a", Value: make([]byte, 1000)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	all, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	seen := 0
	all.Each(func(d kadm.DescribedLogDir) {
		if d.Err != nil {
			t.Errorf("dir %s: %v", d.Dir, d.Err)
		}
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			lp, code := b.lookupPartition(p.Topic, [16]byte{}, false, p.Partition)
			if lp == nil {
				t.Fatalf("%s-%d: %v", p.Topic, p.Partition, code)
			}
			if p.Size != lp.log().Size() {
				t.Errorf("%s-%d size %d, log says %d", p.Topic, p.Partition, p.Size, lp.log().Size())
			}
			if p.Topic == "ld-a" || p.Topic == "ld-b" {
				seen++
				total += p.Size
			}
		})
	})
	if seen != 4 || total == 0 {
		t.Errorf("saw %d partitions of ld-a/ld-b with %d bytes; want 4 partitions, some bytes", seen, total)
	}
	var only kadm.TopicsSet
	only.Add("ld-b", 1)
	one, err := adm.DescribeAllLogDirs(ctx, only)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	one.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			n++
			if p.Topic != "ld-b" || p.Partition != 1 {
				t.Errorf("asked for ld-b-1, got %s-%d", p.Topic, p.Partition)
			}
		})
	})
	if n != 1 {
		t.Errorf("asked for one partition, got %d", n)
	}
}
