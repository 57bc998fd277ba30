// Command quotarate measures client quota enforcement, the acceptance
// check of client quotas: it sets producer_byte_rate on one client id
// (AlterClientQuotas), then runs two franz-go producers side by side for
// the same time, one with that client id and one with a client id without
// a quota, and prints each one's acknowledged produce rate. Against any
// Kafka-compatible broker, so Gregor and Apache Kafka can be compared.
//
//	quotarate -bootstrap HOST:PORT [-quota 1048576] [-duration 30s] [-record 16384] [-batch-max 1048576] [-free-rate 16777216] [-timeline] [-consume]
//
// The client id without a quota is paced by the client at -free-rate
// (0: as fast as it can), so that the run does not fill the disk or take
// a shared machine's CPUs; the broker does not throttle it either way. The
// topic is deleted at the end.
//
// The records are uncompressed random bytes, each its own, so that what
// counts against the quota (the produce request's size) is what is
// counted here, give or take the batch and record headers. -timeline
// prints the quota'd client's bytes second by second, which shows how a
// broker holds it: Kafka's windowed rate lets through a burst of about
// 10 s of quota, then almost nothing for 11 s, then the next burst;
// Gregor's token bucket gives the quota every second after a first
// window. The rate after -warmup (default 10 s) is printed as well.
//
// -consume measures consumer_byte_rate instead: the topic is first given
// a backlog of twice -duration of quota, then two franz-go consumers
// (no group), one with the quota'd client id, read it from the start for
// -duration; the rates are of the record values they polled.
package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	var (
		bootstrap = flag.String("bootstrap", "127.0.0.1:9092", "broker address")
		quota     = flag.Int64("quota", 1<<20, "producer_byte_rate of the quota'd client id, bytes per second")
		duration  = flag.Duration("duration", 30*time.Second, "how long both producers run")
		warmup    = flag.Duration("warmup", 10*time.Second, "time left out of the steady-state rate")
		size      = flag.Int("record", 16<<10, "record value size, bytes")
		topic     = flag.String("topic", "quotarate", "topic (created with 3 partitions if missing, deleted at the end)")
		batchMax  = flag.Int("batch-max", 1<<20, "producer batch max bytes (franz-go's default 1 MiB); smaller batches make the measurement finer")
		freeRate  = flag.Int64("free-rate", 16<<20, "client-side pace of the client id without a quota, bytes per second (0: none)")
		timeline  = flag.Bool("timeline", false, "print the quota'd client's acknowledged bytes second by second")
		consume   = flag.Bool("consume", false, "measure consumer_byte_rate instead: produce a backlog of twice -duration of quota, then run two consumers reading it from the start")
	)
	flag.Parse()
	if err := run(*bootstrap, *topic, *quota, *freeRate, *duration, *warmup, *size, *batchMax, *timeline, *consume); err != nil {
		fmt.Fprintf(os.Stderr, "quotarate: %v\n", err)
		os.Exit(1)
	}
}

func run(bootstrap, topic string, quota, freeRate int64, duration, warmup time.Duration, size, batchMax int, timeline, consume bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), duration+2*time.Minute)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		return err
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		fmt.Fprintf(os.Stderr, "create topic %s: %v (using it as it is)\n", topic, err)
	}
	defer func() {
		if _, err := adm.DeleteTopics(context.Background(), topic); err != nil {
			fmt.Fprintf(os.Stderr, "delete topic %s: %v\n", topic, err)
		}
	}()
	slowID := fmt.Sprintf("quotarate-limited-%d", time.Now().UnixNano())
	fastID := fmt.Sprintf("quotarate-free-%d", time.Now().UnixNano())
	q := float64(quota)
	key := "producer_byte_rate"
	if consume {
		key = "consumer_byte_rate"
		if err := backlog(ctx, bootstrap, topic, 2*quota*int64(duration/time.Second), size, batchMax); err != nil {
			return err
		}
	}
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: []kadm.ClientQuotaEntityComponent{{Type: "client-id", Name: &slowID}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: key, Value: q}},
	}})
	if err != nil {
		return fmt.Errorf("alter client quotas: %w", err)
	}
	for _, r := range res {
		if r.Err != nil {
			return fmt.Errorf("alter client quotas: %w (%s)", r.Err, r.ErrMessage)
		}
	}
	// Let every broker's metadata pick the quota up.
	time.Sleep(2 * time.Second)

	type result struct {
		total, steady int64
		perSecond     []atomic.Int64
		throttles     atomic.Int64
		maxThrottle   atomic.Int64
	}
	produce := func(clientID string, r *result, pace int64) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ClientID(clientID), kgo.DefaultProduceTopic(topic),
			kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(int32(batchMax)),
			kgo.WithHooks(throttleHook{r: &r.throttles, max: &r.maxThrottle}))
		if err != nil {
			return err
		}
		defer cl.Close()
		start := time.Now()
		end := start.Add(duration)
		var total, steady atomic.Int64
		r.perSecond = make([]atomic.Int64, int(duration/time.Second)+1)
		var wg sync.WaitGroup
		pctx, pcancel := context.WithDeadline(ctx, end)
		defer pcancel()
		for sent := int64(0); pctx.Err() == nil; sent += int64(size) {
			if pace > 0 {
				if ahead := time.Duration(float64(sent)/float64(pace)*float64(time.Second)) - time.Since(start); ahead > 0 {
					time.Sleep(ahead)
				}
			}
			value := make([]byte, size)
			_, _ = rand.Read(value)
			wg.Add(1)
			cl.Produce(pctx, &kgo.Record{Value: value}, func(rec *kgo.Record, err error) {
				defer wg.Done()
				if err == nil && time.Now().Before(end) {
					total.Add(int64(len(rec.Value)))
					r.perSecond[int(time.Since(start)/time.Second)].Add(int64(len(rec.Value)))
					if time.Since(start) >= warmup {
						steady.Add(int64(len(rec.Value)))
					}
				}
			})
		}
		// Records still buffered or throttled when the time is up do not
		// count; closing the client fails those it has not sent.
		waited := make(chan struct{})
		go func() { wg.Wait(); close(waited) }()
		select {
		case <-waited:
		case <-time.After(10 * time.Second):
			cl.Close()
			<-waited
		}
		r.total, r.steady = total.Load(), steady.Load()
		return nil
	}
	// read consumes the topic from its start until the time is up.
	read := func(clientID string, r *result) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ClientID(clientID), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.WithHooks(throttleHook{r: &r.throttles, max: &r.maxThrottle}))
		if err != nil {
			return err
		}
		defer cl.Close()
		r.perSecond = make([]atomic.Int64, int(duration/time.Second)+1)
		start := time.Now()
		pctx, pcancel := context.WithDeadline(ctx, start.Add(duration))
		defer pcancel()
		for pctx.Err() == nil {
			fs := cl.PollFetches(pctx)
			since := time.Since(start)
			if since >= duration {
				break
			}
			fs.EachRecord(func(rec *kgo.Record) {
				n := int64(len(rec.Value))
				r.total += n
				if since >= warmup {
					r.steady += n
				}
				r.perSecond[int(since/time.Second)].Add(n)
			})
		}
		return nil
	}
	var slow, fast result
	errs := make(chan error, 2)
	if consume {
		go func() { errs <- read(slowID, &slow) }()
		go func() { errs <- read(fastID, &fast) }()
	} else {
		go func() { errs <- produce(slowID, &slow, 0) }()
		go func() { errs <- produce(fastID, &fast, freeRate) }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			return err
		}
	}
	secs, steadySecs := duration.Seconds(), (duration - warmup).Seconds()
	fmt.Printf("quota %s=%d B/s on client id %s; %v, record %d B, batch max %d B\n", key, quota, slowID, duration, size, batchMax)
	for _, x := range []struct {
		name string
		r    *result
	}{{"limited  ", &slow}, {"unlimited", &fast}} {
		fmt.Printf("%s: %8.0f B/s over %v (%.2fx quota); %8.0f B/s after %v (%.3fx quota); throttled responses %d, max throttle %d ms\n",
			x.name, float64(x.r.total)/secs, duration, float64(x.r.total)/secs/q,
			float64(x.r.steady)/steadySecs, warmup, float64(x.r.steady)/steadySecs/q,
			x.r.throttles.Load(), x.r.maxThrottle.Load())
	}
	if timeline {
		fmt.Printf("limited, per second (x quota):")
		for i := range slow.perSecond[:int(duration/time.Second)] {
			fmt.Printf(" %.2f", float64(slow.perSecond[i].Load())/q)
		}
		fmt.Println()
	}
	return nil
}

// backlog produces n bytes of records to topic, as fast as it can.
func backlog(ctx context.Context, bootstrap, topic string, n int64, size, batchMax int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(int32(batchMax)))
	if err != nil {
		return err
	}
	defer cl.Close()
	var failed atomic.Pointer[error]
	for sent := int64(0); sent < n; sent += int64(size) {
		value := make([]byte, size)
		_, _ = rand.Read(value)
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Store(&err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if err := failed.Load(); err != nil {
		return fmt.Errorf("backlog: %w", *err)
	}
	return nil
}

// throttleHook counts the throttled responses a client sees.
type throttleHook struct {
	r, max *atomic.Int64
}

func (h throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, throttleInterval time.Duration, _ bool) {
	h.r.Add(1)
	if ms := throttleInterval.Milliseconds(); ms > h.max.Load() {
		h.max.Store(ms)
	}
}
