package saramasuite

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/gregor-io/gregor/compat-tests/go/internal/compat"
)

// txnConfig is config() for a transactional producer under id: idempotent,
// acks=all, one request in flight per broker, as Sarama requires.
func txnConfig(id string) *sarama.Config {
	c := config()
	c.Producer.Idempotent = true
	c.Producer.Transaction.ID = id
	c.Producer.Transaction.Timeout = 60 * time.Second
	c.Net.MaxOpenRequests = 1
	return c
}

// readCommittedConfig is config() for a read_committed consumer.
func readCommittedConfig() *sarama.Config {
	c := config()
	c.Consumer.IsolationLevel = sarama.ReadCommitted
	return c
}

// txnProducer is a transactional sync producer under id; creating it
// initializes its transactions (InitProducerId).
func txnProducer(t *compat.T, id string) (sarama.SyncProducer, error) {
	p, err := sarama.NewSyncProducer(t.Brokers(), txnConfig(id))
	if err != nil {
		return nil, fmt.Errorf("transactional producer: %w", err)
	}
	return p, nil
}

// sendTxn sends recs with p, inside the transaction p has begun, and stores
// the acknowledged offsets in recs.
func sendTxn(p sarama.SyncProducer, topic string, recs []compat.Record) error {
	msgs := make([]*sarama.ProducerMessage, len(recs))
	for i, r := range recs {
		msgs[i] = fromCompat(topic, r)
	}
	if err := p.SendMessages(msgs); err != nil {
		var pes sarama.ProducerErrors
		if errors.As(err, &pes) && len(pes) > 0 {
			return fmt.Errorf("%d of %d records not acknowledged, first: %w", len(pes), len(recs), pes[0].Err)
		}
		return fmt.Errorf("send: %w", err)
	}
	for i, m := range msgs {
		recs[i].Offset = m.Offset
	}
	return nil
}

// txnCommitReadCommitted writes 300 records over 3 partitions in one
// transaction and commits it; a read_committed consumer reads exactly them.
func txnCommitReadCommitted(ctx context.Context, t *compat.T) (string, error) {
	topic := t.Name("")
	recs := compat.Generate(650, 300, 3, compat.BaseTime())
	_, cancel := t.Step(ctx, "create topic")
	defer cancel()
	if err := createTopic(t, topic, 3); err != nil {
		return "", err
	}
	_, cancel = t.Step(ctx, "produce in a transaction and commit")
	defer cancel()
	p, err := txnProducer(t, t.Name("txn"))
	if err != nil {
		return "", err
	}
	defer p.Close()
	if err := p.BeginTxn(); err != nil {
		return "", fmt.Errorf("begin: %w", err)
	}
	if err := sendTxn(p, topic, recs); err != nil {
		return "", err
	}
	if err := compat.CheckAcked(recs, 0); err != nil {
		return "", err
	}
	if err := p.CommitTxn(); err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	rctx, cancel := t.Step(ctx, "read_committed consumer reads")
	defer cancel()
	got, err := consumeWith(rctx, t, readCommittedConfig(), topic, fromStart(3), compat.Counts(recs), false)
	if err != nil {
		return "", err
	}
	if err := compat.Compare(recs, got); err != nil {
		return "", fmt.Errorf("read_committed: %w", err)
	}
	return fmt.Sprintf("%d records over 3 partitions in one transaction, read exactly by read_committed", len(recs)), nil
}

// txnAbortInvisible aborts a transaction of 90 records and commits one of
// 90 more; a read_committed consumer reads the committed 90 only, a
// read_uncommitted one all 180.
func txnAbortInvisible(ctx context.Context, t *compat.T) (string, error) {
	topic := t.Name("")
	base := compat.BaseTime()
	aborted := compat.Generate(651, 90, 3, base)
	committed := compat.Generate(652, 90, 3, base.Add(90*time.Millisecond))
	_, cancel := t.Step(ctx, "create topic")
	defer cancel()
	if err := createTopic(t, topic, 3); err != nil {
		return "", err
	}
	_, cancel = t.Step(ctx, "a transaction aborted, then one committed")
	defer cancel()
	p, err := txnProducer(t, t.Name("txn"))
	if err != nil {
		return "", err
	}
	defer p.Close()
	if err := p.BeginTxn(); err != nil {
		return "", fmt.Errorf("begin: %w", err)
	}
	if err := sendTxn(p, topic, aborted); err != nil {
		return "", err
	}
	if err := p.AbortTxn(); err != nil {
		return "", fmt.Errorf("abort: %w", err)
	}
	if err := p.BeginTxn(); err != nil {
		return "", fmt.Errorf("begin: %w", err)
	}
	if err := sendTxn(p, topic, committed); err != nil {
		return "", err
	}
	// The abort marker takes the offset after the 30 aborted records of each partition.
	if err := compat.CheckAcked(committed, 31); err != nil {
		return "", err
	}
	if err := p.CommitTxn(); err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	rctx, cancel := t.Step(ctx, "read_committed consumer reads")
	defer cancel()
	got, err := consumeWith(rctx, t, readCommittedConfig(), topic, fromStart(3), compat.Counts(committed), false)
	if err != nil {
		return "", err
	}
	if err := compat.Compare(committed, got); err != nil {
		return "", fmt.Errorf("read_committed: %w", err)
	}
	all := append(append([]compat.Record(nil), aborted...), committed...)
	uctx, cancel := t.Step(ctx, "read_uncommitted consumer reads")
	defer cancel()
	gotAll, err := consumeWith(uctx, t, config(), topic, fromStart(3), compat.Counts(all), false)
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
func transform(m *sarama.ConsumerMessage) compat.Record {
	r := compat.Record{
		Partition: m.Partition,
		Offset:    -1,
		Key:       m.Key,
		Timestamp: m.Timestamp,
	}
	if m.Value != nil {
		r.Value = append([]byte("t:"), m.Value...)
	}
	for _, h := range m.Headers {
		r.Headers = append(r.Headers, compat.Header{Key: string(h.Key), Value: h.Value})
	}
	r.Headers = append(r.Headers, compat.Header{Key: "from", Value: fmt.Appendf(nil, "%d/%d", m.Partition, m.Offset)})
	return r
}

// txnConsumeTransformProduce runs a consumer group member and a
// transactional producer twice over an input topic: each run reads a new
// batch of 60 records (20 a partition), writes each transformed to the
// output topic and the member's offsets (with its generation and member id)
// in one transaction, and commits. After the first run the group's committed
// offsets are 20 a partition, and the second run's member starts there
// (nothing read twice) and leaves them at 40. A read_committed consumer of
// the output reads each input record, transformed, exactly once.
func txnConsumeTransformProduce(ctx context.Context, t *compat.T) (string, error) {
	input, output, group := t.Name("in"), t.Name("out"), t.Name("g")
	const perRun, perPartition = 60, 20
	_, cancel := t.Step(ctx, "create topics")
	defer cancel()
	for _, topic := range []string{input, output} {
		if err := createTopic(t, topic, 3); err != nil {
			return "", err
		}
	}
	adm, err := sarama.NewClusterAdmin(t.Brokers(), config())
	if err != nil {
		return "", fmt.Errorf("admin client: %w", err)
	}
	defer adm.Close()
	var want []compat.Record
	for run := range 2 {
		start, end := int64(run*perPartition), int64((run+1)*perPartition)
		batch := compat.Generate(uint64(660+run), perRun, 3, compat.BaseTime())
		_, cancel := t.Step(ctx, fmt.Sprintf("run %d: produce the input batch", run+1))
		defer cancel()
		if err := produce(t, config(), input, batch); err != nil {
			return "", err
		}
		if err := compat.CheckAcked(batch, start); err != nil {
			return "", err
		}
		out, err := transformRun(ctx, t, run+1, input, output, group, batch, end)
		if err != nil {
			return "", err
		}
		want = append(want, out...)
		octx, cancel := t.Step(ctx, fmt.Sprintf("run %d: the group's committed offsets", run+1))
		defer cancel()
		if err := compat.Eventually(octx, func(context.Context) error {
			resp, err := adm.ListConsumerGroupOffsets(group, map[string][]int32{input: {0, 1, 2}})
			if err != nil {
				return fmt.Errorf("list consumer group offsets: %w", err)
			}
			for p := range int32(3) {
				b := resp.GetBlock(input, p)
				if b == nil || b.Err != sarama.ErrNoError || b.Offset != end {
					return fmt.Errorf("group %s committed %+v on partition %d, want offset %d", group, b, p, end)
				}
			}
			return nil
		}); err != nil {
			return "", err
		}
	}
	rctx, cancel := t.Step(ctx, "read_committed consumer reads the output")
	defer cancel()
	got, err := consumeWith(rctx, t, readCommittedConfig(), output, fromStart(3), compat.Counts(want), false)
	if err != nil {
		return "", err
	}
	if err := compat.Compare(want, got); err != nil {
		return "", fmt.Errorf("output (read_committed): %w", err)
	}
	return fmt.Sprintf("2 runs of %d inputs, each transformed with its offsets in one transaction; committed %d then %d per partition; output holds each input once",
		perRun, perPartition, 2*perPartition), nil
}

// transformRun is one run of txnConsumeTransformProduce: a new member of
// group reads batch (the records of input it must find from the group's
// committed offsets on, up to end), and one transaction writes their
// transforms and the offsets end. It returns the output records as
// acknowledged.
func transformRun(ctx context.Context, t *compat.T, run int, input, output, group string, batch []compat.Record, end int64) ([]compat.Record, error) {
	var (
		mu      sync.Mutex
		session sarama.ConsumerGroupSession
		read    []*sarama.ConsumerMessage
	)
	rctx, cancel := t.Step(ctx, fmt.Sprintf("run %d: a group member reads the batch", run))
	defer cancel()
	member, err := join(ctx, t, config(), group, input, handler{
		setup: func(s sarama.ConsumerGroupSession) {
			mu.Lock()
			defer mu.Unlock()
			session = s
		},
		message: func(_ sarama.ConsumerGroupSession, m *sarama.ConsumerMessage) {
			mu.Lock()
			defer mu.Unlock()
			read = append(read, m)
		},
	})
	if err != nil {
		return nil, err
	}
	defer member.stop()
	if err := compat.Poll(rctx, 50*time.Millisecond, func(context.Context) (bool, string, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(read) >= len(batch), fmt.Sprintf("read %d of %d records (%s)", len(read), len(batch), member.errors()), nil
	}); err != nil {
		return nil, err
	}
	mu.Lock()
	got := make([]compat.Record, len(read))
	out := make([]compat.Record, len(read))
	for i, m := range read {
		got[i] = toCompat(m)
		out[i] = transform(m)
	}
	meta := sarama.NewConsumerGroupMetadataFromSession(session, group, nil)
	mu.Unlock()
	if err := compat.Compare(batch, got); err != nil {
		return nil, fmt.Errorf("run %d: the member read (from the group's committed offsets): %w", run, err)
	}

	_, cancel = t.Step(ctx, fmt.Sprintf("run %d: transform and commit the offsets in one transaction", run))
	defer cancel()
	p, err := txnProducer(t, t.Name("txn"))
	if err != nil {
		return nil, err
	}
	defer p.Close()
	if err := p.BeginTxn(); err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	if err := sendTxn(p, output, out); err != nil {
		return nil, err
	}
	offsets := map[string][]*sarama.PartitionOffsetMetadata{input: {}}
	for pt := range int32(3) {
		offsets[input] = append(offsets[input], &sarama.PartitionOffsetMetadata{Partition: pt, Offset: end})
	}
	if err := p.AddOffsetsToTxnWithGroupMetadata(offsets, meta); err != nil {
		return nil, fmt.Errorf("add offsets to the transaction: %w", err)
	}
	if err := p.CommitTxn(); err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	if err := member.stop(); err != nil {
		return nil, fmt.Errorf("member leaves: %w", err)
	}
	return out, nil
}

// txnFencing has producer A write 30 records in an open transaction, then
// producer B, with the same transactional id, initialize (which fences A and
// aborts its transaction) and commit 30 records of its own. A's commit must
// fail with PRODUCER_FENCED (or INVALID_PRODUCER_EPOCH); a read_committed
// consumer reads B's records only.
func txnFencing(ctx context.Context, t *compat.T) (string, error) {
	topic, id := t.Name(""), t.Name("txn")
	base := compat.BaseTime()
	fromA := compat.Generate(670, 30, 3, base)
	fromB := compat.Generate(671, 30, 3, base.Add(30*time.Millisecond))
	_, cancel := t.Step(ctx, "create topic")
	defer cancel()
	if err := createTopic(t, topic, 3); err != nil {
		return "", err
	}
	_, cancel = t.Step(ctx, "producer A: produce in an open transaction")
	defer cancel()
	a, err := txnProducer(t, id)
	if err != nil {
		return "", fmt.Errorf("producer A: %w", err)
	}
	defer a.Close()
	if err := a.BeginTxn(); err != nil {
		return "", fmt.Errorf("producer A: begin: %w", err)
	}
	if err := sendTxn(a, topic, fromA); err != nil {
		return "", fmt.Errorf("producer A: %w", err)
	}
	_, cancel = t.Step(ctx, "producer B: initialize with the same transactional id, commit a transaction")
	defer cancel()
	b, err := txnProducer(t, id)
	if err != nil {
		return "", fmt.Errorf("producer B: %w", err)
	}
	defer b.Close()
	if err := b.BeginTxn(); err != nil {
		return "", fmt.Errorf("producer B: begin: %w", err)
	}
	if err := sendTxn(b, topic, fromB); err != nil {
		return "", fmt.Errorf("producer B: %w", err)
	}
	// A's aborted transaction left a marker after its 10 records of each partition.
	if err := compat.CheckAcked(fromB, 11); err != nil {
		return "", fmt.Errorf("producer B: %w", err)
	}
	if err := b.CommitTxn(); err != nil {
		return "", fmt.Errorf("producer B: commit: %w", err)
	}
	_, cancel = t.Step(ctx, "producer A: commit after B took over")
	defer cancel()
	fenced := a.CommitTxn()
	switch {
	case fenced == nil:
		return "", errors.New("producer A committed after producer B initialized with its transactional id; want PRODUCER_FENCED")
	case !errors.Is(fenced, sarama.ErrProducerFenced) && !errors.Is(fenced, sarama.ErrInvalidProducerEpoch):
		return "", fmt.Errorf("producer A's commit after B took over: %w; want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", fenced)
	}
	rctx, cancel := t.Step(ctx, "read_committed consumer reads")
	defer cancel()
	got, err := consumeWith(rctx, t, readCommittedConfig(), topic, fromStart(3), compat.Counts(fromB), false)
	if err != nil {
		return "", err
	}
	if err := compat.Compare(fromB, got); err != nil {
		return "", fmt.Errorf("read_committed: %w", err)
	}
	return fmt.Sprintf("A fenced by B (A's commit: %v); read_committed read B's %d records only", fenced, len(got)), nil
}
