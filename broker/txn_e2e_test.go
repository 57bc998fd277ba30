package broker

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTxnConsumeTransformProduce: franz-go's GroupTransactSession reads
// an input topic in a group, writes each record transformed to an output
// topic and commits the consumed offsets in the same transaction. Aborted
// rounds leave neither output nor offsets behind; committed ones leave
// both, so the output holds each input exactly once and the group's
// offsets sit at the input's end.
func TestTxnConsumeTransformProduce(t *testing.T) {
	t.Parallel()
	b := startBroker(t, smallTxnTopic)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const in, out, group, n = "ctp-in", "ctp-out", "ctp-group", 200
	adm := kadm.NewClient(newClient(t, b))
	for _, topic := range []string{in, out} {
		if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	prod := newClient(t, b, kgo.DefaultProduceTopic(in))
	for i := range n {
		if err := prod.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(b.Addrs()...), kgo.TransactionalID("ctp"),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(in), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.DefaultProduceTopic(out), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	consumed, round := 0, 0
	for consumed < n {
		fs := sess.PollRecords(ctx, 25)
		if err := ctx.Err(); err != nil {
			t.Fatalf("after %d records: %v", consumed, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		if fs.NumRecords() == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		// Every third round is aborted: its records come again.
		round++
		commit := round%3 != 0
		fs.EachRecord(func(r *kgo.Record) {
			sess.Produce(ctx, kgo.StringRecord("out-"+string(r.Value)), func(_ *kgo.Record, err error) {
				if err != nil && commit {
					t.Errorf("produce: %v", err)
				}
			})
		})
		committed, err := sess.End(ctx, kgo.TransactionEndTry(commit))
		if err != nil {
			t.Fatalf("end of round %d: %v", round, err)
		}
		if committed {
			consumed += fs.NumRecords()
		}
	}
	if round < 3 {
		t.Fatalf("only %d rounds: no abort was tried", round)
	}

	// The output, read_committed: each input once.
	rd := newClient(t, b, kgo.ConsumeTopics(out), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < n {
		fs := rd.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d output records: %v", len(got), n, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	var want []string
	for i := range n {
		want = append(want, fmt.Sprint("out-", i))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("output holds %d records, not each input once: %v", len(got), got)
	}
	// EndTxn answers once the commit is decided; the markers that make
	// the last transaction's offsets visible follow. Until they land, a
	// require_stable fetch answers UNSTABLE_OFFSET_COMMIT, which a client
	// retries; once every offset is stable they add up to the input.
	waitFor(t, 10*time.Second, "stable committed offsets adding up to the input", func() error {
		offs, err := adm.FetchOffsets(kadm.RequireStable(ctx), group)
		if err != nil {
			return err
		}
		var sum int64
		var perr error
		offs.Each(func(o kadm.OffsetResponse) {
			sum += o.At
			if o.Err != nil {
				perr = o.Err
			}
		})
		switch {
		case perr != nil:
			return perr
		case sum != n:
			t.Fatalf("the group's stable committed offsets add up to %d, want %d", sum, n)
		}
		return nil
	})
}
