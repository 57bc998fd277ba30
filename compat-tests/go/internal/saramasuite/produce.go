package saramasuite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/gregor-io/gregor/compat-tests/go/internal/compat"
)

type codec struct {
	name string
	c    sarama.CompressionCodec
	seed uint64
}

var codecs = []codec{
	{"none", sarama.CompressionNone, 110},
	{"gzip", sarama.CompressionGZIP, 111},
	{"snappy", sarama.CompressionSnappy, 112},
	{"lz4", sarama.CompressionLZ4, 113},
	{"zstd", sarama.CompressionZSTD, 114},
}

// produceConsume writes records with the codec in one SendMessages call and
// reads them back from the start of every partition.
func produceConsume(c codec) func(context.Context, *compat.T) (string, error) {
	return func(ctx context.Context, t *compat.T) (string, error) {
		topic := t.Name("")
		recs := compat.Generate(c.seed, 300, 3, compat.BaseTime())
		_, cancel := t.Step(ctx, "create topic")
		defer cancel()
		if err := createTopic(t, topic, 3); err != nil {
			return "", err
		}
		_, cancel = t.Step(ctx, "produce")
		defer cancel()
		cfg := config()
		cfg.Producer.Compression = c.c
		if err := produce(t, cfg, topic, recs); err != nil {
			return "", err
		}
		if err := compat.CheckAcked(recs, 0); err != nil {
			return "", err
		}
		cctx, cancel := t.Step(ctx, "consume")
		defer cancel()
		got, err := consume(cctx, t, topic, fromStart(3), compat.Counts(recs))
		if err != nil {
			return "", err
		}
		if err := compat.Compare(recs, got); err != nil {
			return "", err
		}
		return fmt.Sprintf("%d records in 3 partitions, %s, read back equal", len(recs), c.name), nil
	}
}

// idempotentProducer writes with Idempotent=true (acks=all, one request in
// flight) in two rounds, the second continuing the first's sequence numbers,
// and checks that every record landed once, in order, at dense offsets.
func idempotentProducer(ctx context.Context, t *compat.T) (string, error) {
	topic := t.Name("")
	recs := compat.Generate(210, 900, 3, compat.BaseTime())
	_, cancel := t.Step(ctx, "create topic")
	defer cancel()
	if err := createTopic(t, topic, 3); err != nil {
		return "", err
	}
	_, cancel = t.Step(ctx, "produce")
	defer cancel()
	cfg := config()
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Retry.Max = 5
	if err := produce(t, cfg, topic, recs[:450], recs[450:]); err != nil {
		return "", err
	}
	if err := compat.CheckAcked(recs, 0); err != nil {
		return "", err
	}
	cctx, cancel := t.Step(ctx, "consume")
	defer cancel()
	got, err := consume(cctx, t, topic, fromStart(3), compat.Counts(recs))
	if err != nil {
		return "", err
	}
	if err := compat.Compare(recs, got); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d records in 2 rounds, each once and in order", len(recs)), nil
}

// listOffsets checks Client.GetOffset for the earliest and latest offsets
// and for timestamps (before all, exact, between two records, the last,
// after all, which Kafka answers with -1).
func listOffsets(ctx context.Context, t *compat.T) (string, error) {
	topic := t.Name("")
	base := compat.BaseTime()
	recs := compat.Generate(310, 150, 3, base)
	if err := setup(ctx, t, topic, 3, recs); err != nil {
		return "", err
	}
	_, cancel := t.Step(ctx, "list offsets")
	defer cancel()
	cl, err := sarama.NewClient(t.Brokers(), config())
	if err != nil {
		return "", fmt.Errorf("client: %w", err)
	}
	defer cl.Close()
	byP := compat.ByPartition(recs)
	firstAtOrAfter := func(ms int64) func(int32) int64 {
		return func(p int32) int64 {
			for _, r := range byP[p] {
				if r.Timestamp.UnixMilli() >= ms {
					return r.Offset
				}
			}
			return -1
		}
	}
	probes := []struct {
		what string
		at   int64
		want func(p int32) int64
	}{
		{"earliest", sarama.OffsetOldest, func(int32) int64 { return 0 }},
		{"latest", sarama.OffsetNewest, func(p int32) int64 { return int64(len(byP[p])) }},
	}
	for _, tp := range []struct {
		what string
		ms   int64
	}{
		{"timestamp before all", base.Add(-time.Hour).UnixMilli()},
		{"timestamp of record 60", recs[60].Timestamp.UnixMilli()},
		{"timestamp between records", recs[91].Timestamp.UnixMilli() + 1},
		{"timestamp of the last record", recs[149].Timestamp.UnixMilli()},
		{"timestamp after all", recs[149].Timestamp.UnixMilli() + 1},
	} {
		probes = append(probes, struct {
			what string
			at   int64
			want func(p int32) int64
		}{fmt.Sprintf("%s (%d)", tp.what, tp.ms), tp.ms, firstAtOrAfter(tp.ms)})
	}
	for _, pr := range probes {
		for p := range int32(3) {
			got, err := cl.GetOffset(topic, p, pr.at)
			if err != nil {
				return "", fmt.Errorf("%s: partition %d: %w", pr.what, p, err)
			}
			if want := pr.want(p); got != want {
				return "", fmt.Errorf("%s: partition %d offset %d, want %d", pr.what, p, got, want)
			}
		}
	}
	return fmt.Sprintf("%d lookups on 3 partitions agree", len(probes)), nil
}

// consumeFromOffset consumes each partition from a different explicit
// offset (the first, a middle one, the last) and checks that reading starts
// exactly there.
func consumeFromOffset(ctx context.Context, t *compat.T) (string, error) {
	topic := t.Name("")
	recs := compat.Generate(410, 150, 3, compat.BaseTime())
	if err := setup(ctx, t, topic, 3, recs); err != nil {
		return "", err
	}
	from := map[int32]int64{0: 0, 1: 17, 2: 49}
	var want []compat.Record
	for _, r := range recs {
		if r.Offset >= from[r.Partition] {
			want = append(want, r)
		}
	}
	cctx, cancel := t.Step(ctx, "consume")
	defer cancel()
	got, err := consume(cctx, t, topic, from, compat.Counts(want))
	if err != nil {
		return "", err
	}
	if err := compat.Compare(want, got); err != nil {
		return "", err
	}
	return fmt.Sprintf("read %d records from offsets %v", len(got), from), nil
}

// deleteRecords deletes the records before offset 10 of partition 0, none
// of partition 1 and all of partition 2 with ClusterAdmin.DeleteRecords,
// checks the earliest and latest offsets after it and that consuming from
// the oldest offset begins at the new start, and that deleting past the end
// fails with OFFSET_OUT_OF_RANGE.
func deleteRecords(ctx context.Context, t *compat.T) (string, error) {
	topic := t.Name("")
	recs := compat.Generate(810, 150, 3, compat.BaseTime())
	if err := setup(ctx, t, topic, 3, recs); err != nil {
		return "", err
	}
	start := map[int32]int64{0: 10, 1: 0, 2: 50}
	_, cancel := t.Step(ctx, "delete records")
	defer cancel()
	adm, err := sarama.NewClusterAdmin(t.Brokers(), config())
	if err != nil {
		return "", fmt.Errorf("admin client: %w", err)
	}
	defer adm.Close()
	if err := adm.DeleteRecords(topic, start); err != nil {
		return "", fmt.Errorf("delete records before %v: %w", start, err)
	}

	_, cancel = t.Step(ctx, "list offsets after delete")
	defer cancel()
	cl, err := sarama.NewClient(t.Brokers(), config())
	if err != nil {
		return "", fmt.Errorf("client: %w", err)
	}
	defer cl.Close()
	for p, o := range start {
		first, err := cl.GetOffset(topic, p, sarama.OffsetOldest)
		if err != nil || first != o {
			return "", fmt.Errorf("earliest offset of partition %d is %d (%s), want %d after the delete", p, first, compat.Said(err), o)
		}
		last, err := cl.GetOffset(topic, p, sarama.OffsetNewest)
		if err != nil || last != 50 {
			return "", fmt.Errorf("latest offset of partition %d is %d (%s), want 50", p, last, compat.Said(err))
		}
	}

	var want []compat.Record
	for _, r := range recs {
		if r.Offset >= start[r.Partition] {
			want = append(want, r)
		}
	}
	cctx, cancel := t.Step(ctx, "consume from the oldest offset")
	defer cancel()
	counts := compat.Counts(want)
	delete(counts, 2) // nothing left to read there
	got, err := consume(cctx, t, topic, map[int32]int64{0: sarama.OffsetOldest, 1: sarama.OffsetOldest}, counts)
	if err != nil {
		return "", err
	}
	if err := compat.Compare(want, got); err != nil {
		return "", err
	}

	_, cancel = t.Step(ctx, "delete past the end")
	defer cancel()
	if err := adm.DeleteRecords(topic, map[int32]int64{0: 51}); !errors.Is(err, sarama.ErrOffsetOutOfRange) {
		return "", fmt.Errorf("deleting before offset 51 of a 50-record partition answered %s, want OFFSET_OUT_OF_RANGE", compat.Said(err))
	}
	return fmt.Sprintf("start offsets moved to %v, consuming from the oldest offset read %d records from there", start, len(got)), nil
}
