package kafkagosuite

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/gregor-io/gregor/compat-tests/go/internal/compat"
)

type codec struct {
	name string
	c    kafka.Compression
	seed uint64
}

var codecs = []codec{
	{"none", 0, 120},
	{"gzip", kafka.Gzip, 121},
	{"snappy", kafka.Snappy, 122},
	{"lz4", kafka.Lz4, 123},
	{"zstd", kafka.Zstd, 124},
}

// produceConsume writes records with the codec in one WriteMessages call
// and reads them back from the start of every partition.
func (s *suite) produceConsume(c codec) func(context.Context, *compat.T) (string, error) {
	return func(ctx context.Context, t *compat.T) (string, error) {
		topic := t.Name("")
		recs := compat.Generate(c.seed, 300, 3, compat.BaseTime())
		cctx, cancel := t.Step(ctx, "create topic")
		defer cancel()
		if err := createTopic(cctx, t, topic, 3); err != nil {
			return "", err
		}
		pctx, cancel := t.Step(ctx, "produce")
		defer cancel()
		if err := s.produce(pctx, topic, t, c.c, recs); err != nil {
			return "", err
		}
		if err := compat.CheckAcked(recs, 0); err != nil {
			return "", err
		}
		rctx, cancel := t.Step(ctx, "consume")
		defer cancel()
		got, err := s.consume(rctx, t, topic, fromStart(3), compat.Counts(recs))
		if err != nil {
			return "", err
		}
		if err := compare(recs, got); err != nil {
			return "", err
		}
		return fmt.Sprintf("%d records in 3 partitions, %s, read back equal", len(recs), c.name), nil
	}
}

// listOffsets checks the earliest, latest and by-timestamp lookups two
// ways: Conn (ListOffsets v1, one partition per connection) and Client
// (the version both sides support), which also reports the timestamp of
// the offset found.
func (s *suite) listOffsets(ctx context.Context, t *compat.T) (string, error) {
	topic := t.Name("")
	base := compat.BaseTime()
	recs := compat.Generate(320, 150, 3, base)
	if err := s.setup(ctx, t, topic, 3, recs); err != nil {
		return "", err
	}
	byP := compat.ByPartition(recs)
	// firstAtOrAfter is the record a timestamp lookup must find, nil where
	// none is (Kafka answers offset -1).
	firstAtOrAfter := func(p int32, ms int64) *compat.Record {
		for _, r := range byP[p] {
			if r.Timestamp.UnixMilli() >= ms {
				return &r
			}
		}
		return nil
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

	lctx, cancel := t.Step(ctx, "list offsets with Conn")
	defer cancel()
	for p := range int32(3) {
		conn, err := dialer().DialLeader(lctx, "tcp", t.Brokers()[0], topic, int(p))
		if err != nil {
			return "", fmt.Errorf("dial leader of partition %d: %w", p, err)
		}
		defer conn.Close()
		if dl, ok := lctx.Deadline(); ok {
			conn.SetDeadline(dl)
		}
		first, last, err := conn.ReadOffsets()
		if err != nil {
			return "", fmt.Errorf("with Conn, earliest and latest, partition %d: %w", p, err)
		}
		if first != 0 || last != int64(len(byP[p])) {
			return "", fmt.Errorf("with Conn, earliest and latest of partition %d are %d and %d, want 0 and %d", p, first, last, len(byP[p]))
		}
		for _, pr := range probes {
			got, err := conn.ReadOffset(time.UnixMilli(pr.ms))
			if err != nil {
				return "", fmt.Errorf("with Conn, %s (%d), partition %d: %w", pr.what, pr.ms, p, err)
			}
			want := int64(-1)
			if r := firstAtOrAfter(p, pr.ms); r != nil {
				want = r.Offset
			}
			if got != want {
				return "", fmt.Errorf("with Conn, %s (%d), partition %d: offset %d, want %d", pr.what, pr.ms, p, got, want)
			}
		}
	}

	cctx, cancel := t.Step(ctx, "list offsets with Client")
	defer cancel()
	// Client.ListOffsets sends one request per partition and lookup, and
	// reports each answer under the timestamp asked for (not the one the
	// broker returned): FirstOffset, LastOffset, or Offsets[offset] = the
	// asked time, where Kafka's "none" is offset -1.
	cl := client(t)
	var reqs []kafka.OffsetRequest
	for p := range 3 {
		reqs = append(reqs, kafka.FirstOffsetOf(p), kafka.LastOffsetOf(p))
	}
	resp, err := cl.ListOffsets(cctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return "", fmt.Errorf("with Client, earliest and latest: %w", err)
	}
	if len(resp.Topics[topic]) != 3 {
		return "", fmt.Errorf("with Client, earliest and latest: %d partitions in the answer, want 3", len(resp.Topics[topic]))
	}
	for _, po := range resp.Topics[topic] {
		n := int64(len(byP[int32(po.Partition)]))
		if po.Error != nil || po.FirstOffset != 0 || po.LastOffset != n {
			return "", fmt.Errorf("with Client, earliest and latest of partition %d: %d and %d (%s), want 0 and %d", po.Partition, po.FirstOffset, po.LastOffset, compat.Said(po.Error), n)
		}
	}
	for _, pr := range probes {
		at := time.UnixMilli(pr.ms)
		req := &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: {
			kafka.TimeOffsetOf(0, at), kafka.TimeOffsetOf(1, at), kafka.TimeOffsetOf(2, at),
		}}}
		resp, err := cl.ListOffsets(cctx, req)
		if err != nil {
			return "", fmt.Errorf("with Client, %s: %w", pr.what, err)
		}
		if len(resp.Topics[topic]) != 3 {
			return "", fmt.Errorf("with Client, %s: %d partitions in the answer, want 3", pr.what, len(resp.Topics[topic]))
		}
		for _, po := range resp.Topics[topic] {
			if po.Error != nil {
				return "", fmt.Errorf("with Client, %s, partition %d: %w", pr.what, po.Partition, po.Error)
			}
			want := int64(-1)
			if r := firstAtOrAfter(int32(po.Partition), pr.ms); r != nil {
				want = r.Offset
			}
			if _, ok := po.Offsets[want]; !ok || len(po.Offsets) != 1 {
				return "", fmt.Errorf("with Client, %s, partition %d: found offsets %v, want %d", pr.what, po.Partition, slices.Sorted(maps.Keys(po.Offsets)), want)
			}
		}
	}
	return fmt.Sprintf("earliest, latest and %d timestamp lookups on 3 partitions agree, via Conn and Client", len(probes)), nil
}

// consumeFromOffset reads each partition from a different explicit offset
// (the first, a middle one, the last) and checks that reading starts
// exactly there.
func (s *suite) consumeFromOffset(ctx context.Context, t *compat.T) (string, error) {
	topic := t.Name("")
	recs := compat.Generate(420, 150, 3, compat.BaseTime())
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
	got, err := s.consume(cctx, t, topic, from, compat.Counts(want))
	if err != nil {
		return "", err
	}
	if err := compare(want, got); err != nil {
		return "", err
	}
	return fmt.Sprintf("read %d records from offsets %v", len(got), from), nil
}
