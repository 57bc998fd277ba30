package broker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Produce and fetch throughput of an in-process broker driven by franz-go
// over loopback: 1 KiB records of random bytes, uncompressed (what is
// counted is what is stored), 1, 16 and 256 partitions, acks=1 and acks=all, in
// the default durable mode (fsync before ack, group commit). The client
// runs in the same process, so CPU profiles show both sides. Run them with
// the storage benchmarks in one `make bench` to compare.

func randomValue(n int) []byte {
	v := make([]byte, n)
	for i := range v {
		v[i] = byte(rand.Uint32())
	}
	return v
}

func benchTopic(b *testing.B, br *Broker, partitions int32) string {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := fmt.Sprintf("bench-%d", partitions)
	adm := kadm.NewClient(newClient(b, br))
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, name); err != nil {
		b.Fatal(err)
	}
	return name
}

func BenchmarkProduce(b *testing.B) {
	value := randomValue(1024)
	for _, partitions := range []int32{1, 16, 256} {
		for _, acks := range []string{"1", "all"} {
			b.Run(fmt.Sprintf("partitions=%d/acks=%s", partitions, acks), func(b *testing.B) {
				br := startBroker(b)
				topic := benchTopic(b, br, partitions)
				opts := []kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5 * time.Millisecond),
					kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression())}
				if acks == "1" {
					opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
				}
				cl := newClient(b, br, opts...)
				ctx := context.Background()
				var wg sync.WaitGroup
				b.SetBytes(int64(len(value)))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					wg.Add(1)
					cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
						if err != nil {
							b.Error(err)
						}
						wg.Done()
					})
				}
				wg.Wait()
			})
		}
	}
}

func BenchmarkFetch(b *testing.B) {
	br := startBroker(b)
	topic := benchTopic(b, br, 1)
	value := randomValue(1024)
	ctx := context.Background()
	prod := newClient(b, br, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	const prepared = 50_000
	for i := 0; i < prepared; i++ {
		prod.Produce(ctx, &kgo.Record{Value: value}, nil)
	}
	if err := prod.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(value)))
	b.ResetTimer()
	for read := 0; read < b.N; {
		cl := newClient(b, br, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		for got := 0; got < prepared && read < b.N; {
			fs := cl.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				b.Fatal(err)
			}
			got += fs.NumRecords()
			read += fs.NumRecords()
		}
		cl.Close()
	}
}
