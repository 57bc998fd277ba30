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

// codec is a producer compression codec and the attribute bits a batch
// written with it carries.
type codec struct {
	name string
	kgo  kgo.CompressionCodec
	attr uint8
}

var codecs = []codec{
	{"none", kgo.NoCompression(), 0},
	{"gzip", kgo.GzipCompression(), 1},
	{"snappy", kgo.SnappyCompression(), 2},
	{"lz4", kgo.Lz4Compression(), 3},
	{"zstd", kgo.ZstdCompression(), 4},
}

// produceConsume writes records with the codec and reads them back from the
// start of every partition. Besides the records themselves, it checks that
// each record comes back in a batch compressed with the producer's codec:
// with the topic's compression.type at its default ("producer") the broker
// keeps the producer's batches as they are.
func (s *suite) produceConsume(c codec) func(context.Context, *compat.T) (string, error) {
	return func(ctx context.Context, t *compat.T) (string, error) {
		topic := t.Name("")
		recs := compat.Generate(uint64(100+c.attr), 300, 3, compat.BaseTime())
		cl, err := s.producer(t, kgo.ProducerBatchCompression(c.kgo), kgo.ProducerLinger(20*time.Millisecond))
		if err != nil {
			return "", err
		}
		defer cl.Close()
		sctx, cancel := t.Step(ctx, "create topic")
		defer cancel()
		if err := createTopic(sctx, kadm.NewClient(cl), topic, 3, nil); err != nil {
			return "", err
		}
		pctx, cancel := t.Step(ctx, "produce")
		defer cancel()
		if err := produce(pctx, cl, topic, recs); err != nil {
			return "", err
		}
		if err := compat.CheckAcked(recs, 0); err != nil {
			return "", err
		}
		cctx, cancel := t.Step(ctx, "consume")
		defer cancel()
		got, raw, err := s.consume(cctx, t, topic, fromStart(3), compat.Counts(recs))
		if err != nil {
			return "", err
		}
		if err := compat.Compare(recs, got); err != nil {
			return "", err
		}
		// franz-go sends a batch uncompressed when compressing would not
		// shrink it, so a batch may come back with no codec; any other
		// codec than the producer's is wrong, and with a codec set at
		// least one batch must carry it.
		withCodec := 0
		for _, kr := range raw {
			ct := kr.Attrs.CompressionType()
			if ct != c.attr && ct != 0 {
				return "", fmt.Errorf("partition %d offset %d came back in a batch with compression %d, the producer used %d (%s)",
					kr.Partition, kr.Offset, ct, c.attr, c.name)
			}
			if ct == c.attr {
				withCodec++
			}
			if tt := kr.Attrs.TimestampType(); tt != 0 {
				return "", fmt.Errorf("partition %d offset %d has timestamp type %d, want 0 (create time)", kr.Partition, kr.Offset, tt)
			}
		}
		if withCodec == 0 {
			return "", fmt.Errorf("no record came back in a batch compressed with %s (codec %d)", c.name, c.attr)
		}
		ectx, cancel := t.Step(ctx, "end offsets")
		defer cancel()
		if err := checkEnds(ectx, kadm.NewClient(cl), topic, compat.Counts(recs)); err != nil {
			return "", err
		}
		return fmt.Sprintf("%d records in 3 partitions, %s, read back equal", len(recs), c.name), nil
	}
}

// checkEnds checks that each partition's end offset (high watermark) is the
// number of records written to it, so nothing beyond them was appended.
func checkEnds(ctx context.Context, adm *kadm.Client, topic string, counts map[int32]int) error {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("list end offsets: %w", err)
	}
	for p, n := range counts {
		lo, ok := ends.Lookup(topic, p)
		switch {
		case !ok:
			return fmt.Errorf("list end offsets: no answer for partition %d", p)
		case lo.Err != nil:
			return fmt.Errorf("list end offsets: partition %d: %w", p, lo.Err)
		case lo.Offset != int64(n):
			return fmt.Errorf("end offset of partition %d is %d, wrote %d records", p, lo.Offset, n)
		}
	}
	return nil
}

// idempotentProducer writes with franz-go's default producer (idempotent,
// acks=all) in two rounds, so that the second continues the sequence numbers
// of the first, and checks that every record landed once, in order, at dense
// offsets, in batches that carry the producer ID the broker handed out.
func (s *suite) idempotentProducer(ctx context.Context, t *compat.T) (string, error) {
	topic := t.Name("")
	recs := compat.Generate(200, 900, 3, compat.BaseTime())
	cl, err := s.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return "", err
	}
	defer cl.Close()
	sctx, cancel := t.Step(ctx, "create topic")
	defer cancel()
	if err := createTopic(sctx, kadm.NewClient(cl), topic, 3, nil); err != nil {
		return "", err
	}
	for round, part := range [][]compat.Record{recs[:450], recs[450:]} {
		pctx, cancel := t.Step(ctx, fmt.Sprintf("produce round %d", round+1))
		defer cancel()
		if err := produce(pctx, cl, topic, part); err != nil {
			return "", err
		}
	}
	if err := compat.CheckAcked(recs, 0); err != nil {
		return "", err
	}
	ictx, cancel := t.Step(ctx, "producer id")
	defer cancel()
	id, epoch, err := cl.ProducerID(ictx)
	if err != nil {
		return "", fmt.Errorf("producer id: %w", err)
	}
	if id < 0 || epoch < 0 {
		return "", fmt.Errorf("producer id %d epoch %d: the client did not get an idempotent producer ID", id, epoch)
	}
	cctx, cancel := t.Step(ctx, "consume")
	defer cancel()
	got, raw, err := s.consume(cctx, t, topic, fromStart(3), compat.Counts(recs))
	if err != nil {
		return "", err
	}
	if err := compat.Compare(recs, got); err != nil {
		return "", err
	}
	for _, kr := range raw {
		if kr.ProducerID != id || kr.ProducerEpoch != epoch {
			return "", fmt.Errorf("partition %d offset %d: batch has producer id %d epoch %d, the producer has %d epoch %d",
				kr.Partition, kr.Offset, kr.ProducerID, kr.ProducerEpoch, id, epoch)
		}
	}
	return fmt.Sprintf("%d records in 2 rounds, producer id %d epoch %d, each once and in order", len(recs), id, epoch), nil
}

// listOffsets checks the earliest, latest, by-timestamp and max-timestamp
// offset lookups against what was produced.
func (s *suite) listOffsets(ctx context.Context, t *compat.T) (string, error) {
	topic := t.Name("")
	base := compat.BaseTime()
	recs := compat.Generate(300, 150, 3, base)
	if err := s.setup(ctx, t, topic, 3, recs); err != nil {
		return "", err
	}
	cl, err := s.client(t)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	byP := compat.ByPartition(recs)
	lctx, cancel := t.Step(ctx, "list offsets")
	defer cancel()
	check := func(what string, lo kadm.ListedOffsets, want func(p int32) (offset, ts int64)) error {
		for p := range int32(3) {
			got, ok := lo.Lookup(topic, p)
			if !ok {
				return fmt.Errorf("%s: no answer for partition %d", what, p)
			}
			if got.Err != nil {
				return fmt.Errorf("%s: partition %d: %w", what, p, got.Err)
			}
			wo, wts := want(p)
			if got.Offset != wo {
				return fmt.Errorf("%s: partition %d offset %d, want %d", what, p, got.Offset, wo)
			}
			if wts != 0 && got.Timestamp != wts {
				return fmt.Errorf("%s: partition %d timestamp %d, want %d", what, p, got.Timestamp, wts)
			}
		}
		return nil
	}
	lo, err := adm.ListStartOffsets(lctx, topic)
	if err == nil {
		err = check("earliest", lo, func(int32) (int64, int64) { return 0, 0 })
	}
	if err != nil {
		return "", err
	}
	if lo, err = adm.ListEndOffsets(lctx, topic); err == nil {
		err = check("latest", lo, func(p int32) (int64, int64) { return int64(len(byP[p])), 0 })
	}
	if err != nil {
		return "", err
	}
	// The last stable offset (isolation read_committed): without
	// transactions it is the high watermark.
	if lo, err = adm.ListCommittedOffsets(lctx, topic); err == nil {
		err = check("last stable", lo, func(p int32) (int64, int64) { return int64(len(byP[p])), 0 })
	}
	if err != nil {
		return "", err
	}
	if lo, err = adm.ListMaxTimestampOffsets(lctx, topic); err == nil {
		err = check("max timestamp", lo, func(p int32) (int64, int64) {
			last := byP[p][len(byP[p])-1]
			return last.Offset, last.Timestamp.UnixMilli()
		})
	}
	if err != nil {
		return "", err
	}
	// By timestamp: the first offset whose timestamp is at or after the
	// one asked, in each partition; kadm turns "none" into the end offset.
	firstAtOrAfter := func(ms int64) func(p int32) (int64, int64) {
		return func(p int32) (int64, int64) {
			for _, r := range byP[p] {
				if r.Timestamp.UnixMilli() >= ms {
					return r.Offset, r.Timestamp.UnixMilli()
				}
			}
			return int64(len(byP[p])), 0
		}
	}
	probes := []struct {
		what string
		ms   int64
	}{
		{"timestamp before all", base.Add(-time.Hour).UnixMilli()},
		{"timestamp of record 60", recs[60].Timestamp.UnixMilli()},
		{"timestamp between records", recs[91].Timestamp.UnixMilli() + 1},
		{"timestamp of the last record", recs[149].Timestamp.UnixMilli()},
		{"timestamp after all", recs[149].Timestamp.UnixMilli() + 1},
	}
	for _, pr := range probes {
		if lo, err = adm.ListOffsetsAfterMilli(lctx, pr.ms, topic); err == nil {
			err = check(fmt.Sprintf("%s (%d)", pr.what, pr.ms), lo, firstAtOrAfter(pr.ms))
		}
		if err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("earliest, latest, last stable, max timestamp and %d timestamp lookups on 3 partitions agree", len(probes)), nil
}

// consumeFromOffset assigns a consumer to each partition at a different
// explicit offset (the first, a middle one, the last) and checks it reads
// from exactly there to the end.
func (s *suite) consumeFromOffset(ctx context.Context, t *compat.T) (string, error) {
	topic := t.Name("")
	recs := compat.Generate(400, 150, 3, compat.BaseTime())
	if err := s.setup(ctx, t, topic, 3, recs); err != nil {
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
	got, _, err := s.consume(cctx, t, topic, from, compat.Counts(want))
	if err != nil {
		return "", err
	}
	if err := compat.Compare(want, got); err != nil {
		return "", err
	}
	return fmt.Sprintf("read %d records from offsets %v", len(got), from), nil
}

// deleteRecords deletes the records before offset 10 of partition 0, none
// of partition 1 and all of partition 2, and checks the low watermarks
// DeleteRecords answers, the start and end offsets listed after it, that
// reading from the start of each partition begins at its new start, and
// that deleting past the end fails with OFFSET_OUT_OF_RANGE.
func (s *suite) deleteRecords(ctx context.Context, t *compat.T) (string, error) {
	topic := t.Name("")
	recs := compat.Generate(800, 150, 3, compat.BaseTime())
	if err := s.setup(ctx, t, topic, 3, recs); err != nil {
		return "", err
	}
	cl, err := s.client(t)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	start := map[int32]int64{0: 10, 1: 0, 2: 50}

	dctx, cancel := t.Step(ctx, "delete records")
	defer cancel()
	var os kadm.Offsets
	for p, o := range start {
		os.Add(kadm.Offset{Topic: topic, Partition: p, At: o, LeaderEpoch: -1})
	}
	resps, err := adm.DeleteRecords(dctx, os)
	if err != nil {
		return "", fmt.Errorf("delete records: %w", err)
	}
	for p, o := range start {
		r, err := resps.On(topic, p, nil)
		if err == nil {
			err = r.Err
		}
		if err != nil {
			return "", fmt.Errorf("delete records of partition %d before %d: %w", p, o, err)
		}
		if r.LowWatermark != o {
			return "", fmt.Errorf("delete records of partition %d before %d answered low watermark %d", p, o, r.LowWatermark)
		}
	}

	lctx, cancel := t.Step(ctx, "list offsets after delete")
	defer cancel()
	starts, err := adm.ListStartOffsets(lctx, topic)
	if err != nil {
		return "", fmt.Errorf("list start offsets: %w", err)
	}
	for p, o := range start {
		lo, ok := starts.Lookup(topic, p)
		if !ok || lo.Err != nil || lo.Offset != o {
			return "", fmt.Errorf("start offset of partition %d is %d (%s), want %d after the delete", p, lo.Offset, compat.Said(lo.Err), o)
		}
	}
	if err := checkEnds(lctx, adm, topic, compat.Counts(recs)); err != nil {
		return "", err
	}

	var want []compat.Record
	for _, r := range recs {
		if r.Offset >= start[r.Partition] {
			want = append(want, r)
		}
	}
	cctx, cancel := t.Step(ctx, "consume from the start")
	defer cancel()
	from := map[int32]int64{0: earliest, 1: earliest, 2: earliest}
	counts := compat.Counts(want)
	counts[2] = 0 // all deleted; read 0 and 1 to their ends
	got, _, err := s.consume(cctx, t, topic, from, counts)
	if err != nil {
		return "", err
	}
	if err := compat.Compare(want, got); err != nil {
		return "", err
	}

	xctx, cancel := t.Step(ctx, "delete past the end")
	defer cancel()
	var past kadm.Offsets
	past.Add(kadm.Offset{Topic: topic, Partition: 0, At: 51, LeaderEpoch: -1})
	resps, err = adm.DeleteRecords(xctx, past)
	if err == nil {
		var r kadm.DeleteRecordsResponse
		if r, err = resps.On(topic, 0, nil); err == nil {
			err = r.Err
		}
	}
	if !errors.Is(err, kerr.OffsetOutOfRange) {
		return "", fmt.Errorf("deleting before offset 51 of a 50-record partition answered %s, want OFFSET_OUT_OF_RANGE", compat.Said(err))
	}
	return fmt.Sprintf("start offsets moved to %v, reading from the start read %d records from there", start, len(got)), nil
}
