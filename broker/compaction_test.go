package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCompaction: a compacted topic with 1 MiB segments, written with
// many versions of a few keys and then with records of unique keys (so the
// latest versions lie in sealed segments), is compacted by a cleaning
// pass: a consumer from the start sees each key once, with its latest
// value. A record without a key is refused with INVALID_RECORD.
func TestCompaction(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	ctx := configsTestCtx(t)
	cl := newClient(t, b)
	adm := kadm.NewClient(cl)
	const topic = "compacted"
	cfg := map[string]*string{
		"cleanup.policy":            kadm.StringPtr("compact"),
		"segment.bytes":             kadm.StringPtr("1048576"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
		"file.delete.delay.ms":      kadm.StringPtr("0"),
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, cfg, topic); err != nil {
		t.Fatal(err)
	}

	rng := rand.New(rand.NewPCG(5, 6))
	value := func() []byte {
		v := make([]byte, 8000+rng.IntN(4000))
		for i := range v {
			v[i] = byte(rng.Uint32())
		}
		return v
	}
	latest := map[string][]byte{}
	var recs []*kgo.Record
	for i := 0; i < 600; i++ {
		k := fmt.Sprintf("key-%d", rng.IntN(30))
		v := value()
		latest[k] = v
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(k), Value: v})
	}
	for i := 0; i < 150; i++ {
		k := fmt.Sprintf("unique-%d", i)
		v := value()
		latest[k] = v
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(k), Value: v})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// A record without a key is refused, as Kafka refuses it.
	err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("no key")}).FirstErr()
	if !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("keyless record to a compacted topic: %v, want INVALID_RECORD", err)
	}

	// Sealed segments become cleanable once fsynced in the background:
	// clean until the consumer sees only the latest values.
	waitFor(t, 30*time.Second, "a cleaning leaves the latest value of each key", func() error {
		if _, err := b.logs.CleanNow(ctx); err != nil {
			return err
		}
		got, err := consumeAll(ctx, t, b, topic)
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, r := range got {
			k := string(r.Key)
			if seen[k] {
				return fmt.Errorf("key %s read twice", k)
			}
			seen[k] = true
			if !bytes.Equal(r.Value, latest[k]) {
				return fmt.Errorf("key %s at offset %d: not its latest value", k, r.Offset)
			}
		}
		if len(seen) != len(latest) {
			return fmt.Errorf("%d keys read, want %d", len(seen), len(latest))
		}
		return nil
	})
}

// consumeAll reads the topic's partition 0 from the start to its end.
func consumeAll(ctx context.Context, t *testing.T, b *Broker, topic string) ([]*kgo.Record, error) {
	cl := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	end, _ := ends.Lookup(topic, 0)
	var out []*kgo.Record
	for {
		if len(out) > 0 && out[len(out)-1].Offset >= end.Offset-1 {
			return out, nil
		}
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		fs := cl.PollFetches(fctx)
		cancel()
		if err := fs.Err(); err != nil {
			return nil, err
		}
		out = append(out, fs.Records()...)
	}
}
