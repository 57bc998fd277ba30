package franzsuite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-io/gregor/compat-tests/go/internal/compat"
)

// txnOpts are the options of a transactional producer under id that writes
// each record to the partition it names. franz-go's transactional producer
// is idempotent and acks=all by default.
func txnOpts(id string) []kgo.Opt {
	return []kgo.Opt{
		kgo.TransactionalID(id),
		kgo.TransactionTimeout(60 * time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}
}

// readCommitted is the consumer option of a read_committed consumer;
// franz-go reads uncommitted by default.
var readCommitted = kgo.FetchIsolationLevel(kgo.ReadCommitted())

// checkOffsets checks that a list of offsets (end offsets or last stable
// offsets) of topic's partitions is want.
func checkOffsets(what, topic string, lo kadm.ListedOffsets, want map[int32]int64) error {
	for p, w := range want {
		got, ok := lo.Lookup(topic, p)
		switch {
		case !ok:
			return fmt.Errorf("%s: no answer for partition %d", what, p)
		case got.Err != nil:
			return fmt.Errorf("%s: partition %d: %w", what, p, got.Err)
		case got.Offset != w:
			return fmt.Errorf("%s: partition %d at %d, want %d", what, p, got.Offset, w)
		}
	}
	return nil
}

// perPartition returns n(p) for partitions 0..2.
func perPartition(n func(p int32) int64) map[int32]int64 {
	m := make(map[int32]int64)
	for p := range int32(3) {
		m[p] = n(p)
	}
	return m
}

// txnCommitReadCommitted writes 300 records over 3 partitions in one
// transaction. While it is open the records are written (the high
// watermark is past them) but not stable (the last stable offset stays at
// 0); after the commit a read_committed consumer reads exactly them, and
// the last stable offset is one past them (the commit marker).
func (s *suite) txnCommitReadCommitted(ctx context.Context, t *compat.T) (string, error) {
	topic := t.Name("")
	recs := compat.Generate(600, 300, 3, compat.BaseTime())
	counts := compat.Counts(recs)
	cl, err := s.client(t, txnOpts(t.Name("txn"))...)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	sctx, cancel := t.Step(ctx, "create topic")
	defer cancel()
	if err := createTopic(sctx, adm, topic, 3, nil); err != nil {
		return "", err
	}
	pctx, cancel := t.Step(ctx, "produce in a transaction")
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		return "", fmt.Errorf("begin transaction: %w", err)
	}
	if err := produce(pctx, cl, topic, recs); err != nil {
		return "", err
	}
	if err := compat.CheckAcked(recs, 0); err != nil {
		return "", err
	}
	octx, cancel := t.Step(ctx, "offsets while the transaction is open")
	defer cancel()
	hw, err := adm.ListEndOffsets(octx, topic)
	if err == nil {
		err = checkOffsets("open transaction: end offsets (high watermark)", topic, hw, perPartition(func(p int32) int64 { return int64(counts[p]) }))
	}
	if err != nil {
		return "", err
	}
	lso, err := adm.ListCommittedOffsets(octx, topic)
	if err == nil {
		err = checkOffsets("open transaction: last stable offsets", topic, lso, perPartition(func(int32) int64 { return 0 }))
	}
	if err != nil {
		return "", err
	}
	cctx, cancel := t.Step(ctx, "commit")
	defer cancel()
	if err := cl.EndTransaction(cctx, kgo.TryCommit); err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	rctx, cancel := t.Step(ctx, "read_committed consumer reads")
	defer cancel()
	got, _, err := s.consume(rctx, t, topic, fromStart(3), counts, readCommitted)
	if err != nil {
		return "", err
	}
	if err := compat.Compare(recs, got); err != nil {
		return "", fmt.Errorf("read_committed: %w", err)
	}
	actx, cancel := t.Step(ctx, "last stable offsets after the commit")
	defer cancel()
	lso, err = adm.ListCommittedOffsets(actx, topic)
	if err == nil {
		err = checkOffsets("after the commit: last stable offsets (records and marker)", topic, lso, perPartition(func(p int32) int64 { return int64(counts[p]) + 1 }))
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d records in one transaction: not stable while open, read exactly by read_committed after the commit, marker after them", len(recs)), nil
}

// txnAbortInvisible aborts a transaction of 90 records and commits one of
// 90 more; a read_committed consumer reads the committed 90 only, a
// read_uncommitted one all 180.
func (s *suite) txnAbortInvisible(ctx context.Context, t *compat.T) (string, error) {
	topic := t.Name("")
	base := compat.BaseTime()
	aborted := compat.Generate(601, 90, 3, base)
	committed := compat.Generate(602, 90, 3, base.Add(90*time.Millisecond))
	cl, err := s.client(t, txnOpts(t.Name("txn"))...)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	sctx, cancel := t.Step(ctx, "create topic")
	defer cancel()
	if err := createTopic(sctx, kadm.NewClient(cl), topic, 3, nil); err != nil {
		return "", err
	}
	for _, txn := range []struct {
		recs  []compat.Record
		first int64
		end   kgo.TransactionEndTry
		name  string
	}{
		{aborted, 0, kgo.TryAbort, "abort"},
		// The abort marker takes the offset after the 30 aborted records of each partition.
		{committed, 31, kgo.TryCommit, "commit"},
	} {
		pctx, cancel := t.Step(ctx, "produce a transaction to "+txn.name)
		defer cancel()
		if err := cl.BeginTransaction(); err != nil {
			return "", fmt.Errorf("begin transaction: %w", err)
		}
		if err := produce(pctx, cl, topic, txn.recs); err != nil {
			return "", err
		}
		if err := compat.CheckAcked(txn.recs, txn.first); err != nil {
			return "", err
		}
		if err := cl.EndTransaction(pctx, txn.end); err != nil {
			return "", fmt.Errorf("%s: %w", txn.name, err)
		}
	}
	rctx, cancel := t.Step(ctx, "read_committed consumer reads")
	defer cancel()
	got, _, err := s.consume(rctx, t, topic, fromStart(3), compat.Counts(committed), readCommitted)
	if err != nil {
		return "", err
	}
	if err := compat.Compare(committed, got); err != nil {
		return "", fmt.Errorf("read_committed: %w", err)
	}
	all := append(append([]compat.Record(nil), aborted...), committed...)
	uctx, cancel := t.Step(ctx, "read_uncommitted consumer reads")
	defer cancel()
	gotAll, _, err := s.consume(uctx, t, topic, fromStart(3), compat.Counts(all))
	if err != nil {
		return "", err
	}
	if err := compat.Compare(all, gotAll); err != nil {
		return "", fmt.Errorf("read_uncommitted: %w", err)
	}
	return fmt.Sprintf("aborted %d, committed %d: read_committed read the %d committed, read_uncommitted all %d",
		len(aborted), len(committed), len(got), len(gotAll)), nil
}

// transform is the consume-transform-produce scenario's transform: the
// value prefixed with "t:" (a null value stays null) and a header naming
// the input record, to the same partition of the output topic.
func transform(output string, in *kgo.Record) *kgo.Record {
	out := &kgo.Record{
		Topic:     output,
		Partition: in.Partition,
		Key:       in.Key,
		Timestamp: in.Timestamp,
		Headers:   append(append([]kgo.RecordHeader(nil), in.Headers...), kgo.RecordHeader{Key: "from", Value: fmt.Appendf(nil, "%d/%d", in.Partition, in.Offset)}),
	}
	if in.Value != nil {
		out.Value = append([]byte("t:"), in.Value...)
	}
	return out
}

// txnConsumeTransformProduce runs a GroupTransactSession twice over an
// input topic: each run reads a new batch of 60 records (20 a partition)
// as a member of one group, writes each transformed to the output topic and
// commits the consumed offsets in the same transactions. After the first run
// the group's committed offsets are 20 a partition, and the second run
// starts there (nothing read twice) and leaves them at 40. A read_committed
// consumer of the output reads each input record, transformed, exactly
// once, at the offsets the transactional produce was acknowledged at.
func (s *suite) txnConsumeTransformProduce(ctx context.Context, t *compat.T) (string, error) {
	input, output, group := t.Name("in"), t.Name("out"), t.Name("g")
	const perRun, perPartition = 60, 20
	plain, err := s.producer(t)
	if err != nil {
		return "", err
	}
	defer plain.Close()
	adm := kadm.NewClient(plain)
	sctx, cancel := t.Step(ctx, "create topics")
	defer cancel()
	for _, topic := range []string{input, output} {
		if err := createTopic(sctx, adm, topic, 3, nil); err != nil {
			return "", err
		}
	}
	var want []compat.Record
	transactions := 0
	for run := range 2 {
		start, end := int64(run*perPartition), int64((run+1)*perPartition)
		batch := compat.Generate(uint64(610+run), perRun, 3, compat.BaseTime())
		pctx, cancel := t.Step(ctx, fmt.Sprintf("run %d: produce the input batch", run+1))
		defer cancel()
		if err := produce(pctx, plain, input, batch); err != nil {
			return "", err
		}
		if err := compat.CheckAcked(batch, start); err != nil {
			return "", err
		}
		out, n, err := s.transformRun(ctx, t, run+1, input, output, group, start, end)
		if err != nil {
			return "", err
		}
		want = append(want, out...)
		transactions += n
		octx, cancel := t.Step(ctx, fmt.Sprintf("run %d: the group's committed offsets", run+1))
		defer cancel()
		if err := compat.Eventually(octx, func(ctx context.Context) error {
			offs, err := adm.FetchOffsets(ctx, group)
			if err == nil {
				err = offs.Error()
			}
			if err != nil {
				return fmt.Errorf("fetch offsets: %w", err)
			}
			for p := range int32(3) {
				if o, ok := offs.Lookup(input, p); !ok || o.At != end {
					return fmt.Errorf("group %s committed %d on partition %d (present %v), want %d", group, o.At, p, ok, end)
				}
			}
			return nil
		}); err != nil {
			return "", err
		}
	}
	rctx, cancel := t.Step(ctx, "read_committed consumer reads the output")
	defer cancel()
	got, _, err := s.consume(rctx, t, output, fromStart(3), compat.Counts(want), readCommitted)
	if err != nil {
		return "", err
	}
	if err := compat.Compare(want, got); err != nil {
		return "", fmt.Errorf("output (read_committed): %w", err)
	}
	return fmt.Sprintf("2 runs of %d inputs in %d transactions with their offsets; committed %d then %d per partition; output holds each input once",
		perRun, transactions, perPartition, 2*perPartition), nil
}

// transformRun is one run of txnConsumeTransformProduce: a new session joins
// the group, reads every partition of input from start (the group's
// committed offset) to end, transforming what each poll returns in a
// transaction of its own, and leaves. It returns the output records as
// acknowledged and the number of transactions.
func (s *suite) transformRun(ctx context.Context, t *compat.T, run int, input, output, group string, start, end int64) ([]compat.Record, int, error) {
	opts := append(s.baseOpts(t), txnOpts(t.Name("txn"))...)
	opts = append(opts,
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(input),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		readCommitted,
	)
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		return nil, 0, err
	}
	defer sess.Close()
	next := perPartition(func(int32) int64 { return start })
	var out []compat.Record
	transactions := 0
	rctx, cancel := t.Step(ctx, fmt.Sprintf("run %d: transform in transactions", run))
	defer cancel()
	err = compat.Poll(rctx, 0, func(ctx context.Context) (bool, string, error) {
		fs := sess.PollFetches(ctx)
		if err := fetchErr(fs); err != nil {
			return false, "", err
		}
		var in []*kgo.Record
		var bad error
		fs.EachRecord(func(kr *kgo.Record) {
			if bad == nil && kr.Offset != next[kr.Partition] {
				bad = fmt.Errorf("run %d: read partition %d offset %d, want %d (the group's committed offset was %d)", run, kr.Partition, kr.Offset, next[kr.Partition], start)
			}
			next[kr.Partition] = kr.Offset + 1
			in = append(in, kr)
		})
		if bad != nil {
			return false, "", bad
		}
		if len(in) > 0 {
			if err := sess.Begin(); err != nil {
				return false, "", fmt.Errorf("begin: %w", err)
			}
			recs := make([]*kgo.Record, len(in))
			for i, kr := range in {
				recs[i] = transform(output, kr)
			}
			if err := sess.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				return false, "", fmt.Errorf("produce the transformed records: %w", err)
			}
			committed, err := sess.End(ctx, kgo.TryCommit)
			if err != nil {
				return false, "", fmt.Errorf("end transaction: %w", err)
			}
			if !committed {
				return false, "", errors.New("the session aborted the transaction (the group rebalanced while it was open)")
			}
			transactions++
			for _, kr := range recs {
				out = append(out, toCompat(kr))
			}
		}
		for _, n := range next {
			if n < end {
				return false, fmt.Sprintf("run %d: read up to %v, want %d in every partition", run, next, end), nil
			}
		}
		return true, "", nil
	})
	return out, transactions, err
}

// txnFencing has producer A write 30 records in an open transaction, then
// producer B, with the same transactional id, initialize (which fences A and
// aborts its transaction) and commit 30 records of its own. A's commit must
// fail with PRODUCER_FENCED (or INVALID_PRODUCER_EPOCH); a read_committed
// consumer reads B's records only.
func (s *suite) txnFencing(ctx context.Context, t *compat.T) (string, error) {
	topic, id := t.Name(""), t.Name("txn")
	base := compat.BaseTime()
	fromA := compat.Generate(620, 30, 3, base)
	fromB := compat.Generate(621, 30, 3, base.Add(30*time.Millisecond))
	a, err := s.client(t, txnOpts(id)...)
	if err != nil {
		return "", err
	}
	defer a.Close()
	sctx, cancel := t.Step(ctx, "create topic")
	defer cancel()
	if err := createTopic(sctx, kadm.NewClient(a), topic, 3, nil); err != nil {
		return "", err
	}
	actx, cancel := t.Step(ctx, "producer A: produce in an open transaction")
	defer cancel()
	if err := a.BeginTransaction(); err != nil {
		return "", fmt.Errorf("producer A: begin transaction: %w", err)
	}
	if err := produce(actx, a, topic, fromA); err != nil {
		return "", fmt.Errorf("producer A: %w", err)
	}
	b, err := s.client(t, txnOpts(id)...)
	if err != nil {
		return "", err
	}
	defer b.Close()
	bctx, cancel := t.Step(ctx, "producer B: initialize with the same transactional id, commit a transaction")
	defer cancel()
	if err := b.BeginTransaction(); err != nil {
		return "", fmt.Errorf("producer B: begin transaction: %w", err)
	}
	if err := produce(bctx, b, topic, fromB); err != nil {
		return "", fmt.Errorf("producer B: %w", err)
	}
	// A's aborted transaction left a marker after its 10 records of each partition.
	if err := compat.CheckAcked(fromB, 11); err != nil {
		return "", fmt.Errorf("producer B: %w", err)
	}
	if err := b.EndTransaction(bctx, kgo.TryCommit); err != nil {
		return "", fmt.Errorf("producer B: commit: %w", err)
	}
	fctx, cancel := t.Step(ctx, "producer A: commit after B took over")
	defer cancel()
	err = a.EndTransaction(fctx, kgo.TryCommit)
	switch {
	case err == nil:
		return "", errors.New("producer A committed after producer B initialized with its transactional id; want PRODUCER_FENCED")
	case !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch):
		return "", fmt.Errorf("producer A's commit after B took over: %w; want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
	}
	fenced := err
	rctx, cancel := t.Step(ctx, "read_committed consumer reads")
	defer cancel()
	got, _, err := s.consume(rctx, t, topic, fromStart(3), compat.Counts(fromB), readCommitted)
	if err != nil {
		return "", err
	}
	if err := compat.Compare(fromB, got); err != nil {
		return "", fmt.Errorf("read_committed: %w", err)
	}
	return fmt.Sprintf("A fenced by B (A's commit: %v); read_committed read B's %d records only", fenced, len(got)), nil
}
