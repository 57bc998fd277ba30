package broker

// End-to-end produce and consume through franz-go against an in-process
// broker: an 8-partition topic, integrationRecords records of 100 bytes
// (1,000,000), written by five idempotent producers with acks=all, one per
// codec, and read back by one consumer while they write. The full million
// runs under -race too: about 30 s on a 2-core machine (2 s without), so
// no smaller count is needed there; -short runs 50,000.
//
// Every record's value carries its producer and that producer's sequence
// number, so the consumer checks, without keeping the records, that each
// one arrived exactly once (a bitset per producer), intact (the filler is
// a function of the sequence), in order (per partition and producer the
// sequence only grows), and at consecutive offsets per partition.

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	integrationRecords    = 1_000_000
	integrationPartitions = 8
	integrationValueSize  = 100
)

// integrationCodecs are the producers, one per codec Kafka defines, in the
// order of their attribute bits (0 none ... 4 zstd).
var integrationCodecs = []struct {
	name  string
	codec kgo.CompressionCodec
}{
	{"none", kgo.NoCompression()},
	{"gzip", kgo.GzipCompression()},
	{"snappy", kgo.SnappyCompression()},
	{"lz4", kgo.Lz4Compression()},
	{"zstd", kgo.ZstdCompression()},
}

// integrationValue is record seq of producer p: p, seq, then filler
// derived from seq.
func integrationValue(p int, seq uint64) []byte {
	v := make([]byte, integrationValueSize)
	v[0] = byte(p)
	binary.BigEndian.PutUint64(v[1:], seq)
	for i := 9; i < len(v); i++ {
		v[i] = 'a' + byte((seq+uint64(i))%26)
	}
	return v
}

// recordChecker verifies consumed records against what the producers sent,
// in a few bits per record.
type recordChecker struct {
	perProducer uint64
	seen        [][]uint64 // bitset per producer
	lastSeq     [][]int64  // [partition][producer]
	nextOffset  []int64    // per partition
	count       int
	problems    []string
}

func newRecordChecker(producers, partitions int, perProducer uint64) *recordChecker {
	c := &recordChecker{perProducer: perProducer, nextOffset: make([]int64, partitions)}
	for range producers {
		c.seen = append(c.seen, make([]uint64, (perProducer+63)/64))
	}
	for range partitions {
		ls := make([]int64, producers)
		for i := range ls {
			ls[i] = -1
		}
		c.lastSeq = append(c.lastSeq, ls)
	}
	return c
}

func (c *recordChecker) problem(format string, args ...any) {
	if len(c.problems) < 20 {
		c.problems = append(c.problems, fmt.Sprintf(format, args...))
	}
}

func (c *recordChecker) check(r *kgo.Record) {
	c.count++
	p := r.Partition
	if p < 0 || int(p) >= len(c.nextOffset) {
		c.problem("record from partition %d", p)
		return
	}
	if r.Offset != c.nextOffset[p] {
		c.problem("partition %d: offset %d, want %d", p, r.Offset, c.nextOffset[p])
	}
	c.nextOffset[p] = r.Offset + 1
	v := r.Value
	if len(v) != integrationValueSize || int(v[0]) >= len(c.seen) {
		c.problem("partition %d offset %d: malformed value of %d bytes", p, r.Offset, len(v))
		return
	}
	prod := int(v[0])
	seq := binary.BigEndian.Uint64(v[1:])
	// Batches are stored and served as the producer sent them. franz-go
	// sends a batch uncompressed when compressing would not shrink it,
	// so "none" is right for any producer.
	if codec := r.Attrs.CompressionType(); int(codec) != prod && codec != 0 {
		c.problem("partition %d offset %d: producer %d (%s) record in a batch with codec %d",
			p, r.Offset, prod, integrationCodecs[prod].name, codec)
	}
	if seq >= c.perProducer {
		c.problem("partition %d offset %d: producer %d sequence %d out of range", p, r.Offset, prod, seq)
		return
	}
	for i := 9; i < len(v); i++ {
		if v[i] != 'a'+byte((seq+uint64(i))%26) {
			c.problem("partition %d offset %d: producer %d sequence %d: filler corrupt at byte %d", p, r.Offset, prod, seq, i)
			break
		}
	}
	word, bit := seq/64, uint64(1)<<(seq%64)
	if c.seen[prod][word]&bit != 0 {
		c.problem("partition %d offset %d: producer %d sequence %d seen twice", p, r.Offset, prod, seq)
	}
	c.seen[prod][word] |= bit
	if last := c.lastSeq[p][prod]; int64(seq) <= last {
		c.problem("partition %d offset %d: producer %d sequence %d after %d: out of order", p, r.Offset, prod, seq, last)
	}
	c.lastSeq[p][prod] = int64(seq)
}

// missing counts the sequences never seen.
func (c *recordChecker) missing() (n uint64, first string) {
	for prod, bits := range c.seen {
		for seq := uint64(0); seq < c.perProducer; seq++ {
			if bits[seq/64]&(1<<(seq%64)) == 0 {
				if n == 0 {
					first = fmt.Sprintf("producer %d sequence %d", prod, seq)
				}
				n++
			}
		}
	}
	return n, first
}

func TestIntegrationAllCodecsExactlyOnceInOrder(t *testing.T) {
	t.Parallel()
	total := integrationRecords
	if testing.Short() {
		total = 50_000
	}
	producers := len(integrationCodecs)
	perProducer := uint64(total / producers)
	total = int(perProducer) * producers

	b := startBroker(t)
	ctx := testContext(t, 9*time.Minute)
	const topic = "integration"
	adm := kadm.NewClient(newClient(t, b))
	if _, err := adm.CreateTopic(ctx, integrationPartitions, 1, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}

	start := time.Now()
	var produceErrs atomic.Int64
	var firstErr atomic.Pointer[string]
	var produced sync.WaitGroup
	produceDone := make([]time.Duration, producers)
	for i, pc := range integrationCodecs {
		cl := newClient(t, b,
			kgo.DefaultProduceTopic(topic),
			kgo.ProducerBatchCompression(pc.codec),
			kgo.RequiredAcks(kgo.AllISRAcks()), // the default, stated
			kgo.MaxBufferedRecords(20_000),
		)
		produced.Add(1)
		go func() {
			defer produced.Done()
			for seq := range perProducer {
				cl.Produce(ctx, &kgo.Record{Value: integrationValue(i, seq)}, func(r *kgo.Record, err error) {
					if err != nil && produceErrs.Add(1) == 1 {
						msg := fmt.Sprintf("producer %s: %v", pc.name, err)
						firstErr.Store(&msg)
					}
				})
			}
			if err := cl.Flush(ctx); err != nil {
				msg := fmt.Sprintf("producer %s: flush: %v", pc.name, err)
				firstErr.CompareAndSwap(nil, &msg)
				produceErrs.Add(1)
			}
			produceDone[i] = time.Since(start)
		}()
	}

	// Consume while the producers write.
	cons := newClient(t, b, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	chk := newRecordChecker(producers, integrationPartitions, perProducer)
	for chk.count < total && produceErrs.Load() == 0 {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		fs := cons.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before the deadline", chk.count, total)
		}
		fs.EachError(func(topic string, p int32, err error) {
			if pctx.Err() == nil {
				t.Fatalf("fetch %s/%d after %d records: %v", topic, p, chk.count, err)
			}
		})
		fs.EachRecord(chk.check)
	}
	consumed := time.Since(start)
	produced.Wait()
	if n := produceErrs.Load(); n > 0 {
		t.Fatalf("%d produce errors, first: %s", n, *firstErr.Load())
	}
	for _, p := range chk.problems {
		t.Error(p)
	}
	if chk.count != total {
		t.Fatalf("consumed %d records, want %d", chk.count, total)
	}
	if n, first := chk.missing(); n > 0 {
		t.Fatalf("%d records never consumed, first %s", n, first)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Errorf("end offset of partition %d: %v", o.Partition, o.Err)
		}
		if o.Offset != chk.nextOffset[o.Partition] {
			t.Errorf("partition %d: end offset %d, consumed up to %d", o.Partition, o.Offset, chk.nextOffset[o.Partition])
		}
		sum += o.Offset
	})
	if sum != int64(total) {
		t.Errorf("end offsets sum to %d, want %d records", sum, total)
	}
	for i, pc := range integrationCodecs {
		t.Logf("producer %s: %d records in %s", pc.name, perProducer, produceDone[i].Round(time.Millisecond))
	}
	t.Logf("%d records of %d bytes over %d partitions produced and consumed in %s (%.0f records/s)",
		total, integrationValueSize, integrationPartitions, consumed.Round(time.Millisecond),
		float64(total)/consumed.Seconds())
}
