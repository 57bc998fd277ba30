package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-io/gregor/compat-tests/go/internal/lab"
)

// The register workload: registerKeys keys of a compacted topic, each a
// register that a franz-go idempotent acks=all writer sets over and over
// to a unique value (reg-<seq>), while the topic's segments roll every few
// seconds and the cleaner compacts them, through the same faults as the
// main topic. A compacted log may drop a record only for a later record of
// the same key, so at the end every acknowledged write must be either at
// its offset with its value, or superseded: a record of its key at a higher
// offset is in the log. Anything else lost an acknowledged register value
// (the key's last write, or a write whose superseding records vanished).
const (
	registerTopic      = "chaos-register"
	registerPartitions = 3
	registerKeys       = 12
)

// registerConfigs make the cleaner busy during a run: a segment rolls
// every 3 s and any dirty data makes a log cleanable.
func registerConfigs() map[string]*string {
	s := func(v string) *string { return &v }
	return map[string]*string{
		"cleanup.policy":            s("compact"),
		"min.insync.replicas":       s("2"),
		"segment.ms":                s("3000"),
		"min.cleanable.dirty.ratio": s("0.01"),
		"min.compaction.lag.ms":     s("0"),
	}
}

// regAck is one acknowledged register write.
type regAck struct {
	Key, Value string
	Partition  int32
	Offset     int64
}

// registerWriter writes the registers at rate writes/s and logs each
// acknowledgement to registers.log.
type registerWriter struct {
	cl   *kgo.Client
	quit chan struct{}
	done chan int64

	mu     sync.Mutex
	acks   []regAck
	failed []string
	out    *bufio.Writer
	f      *os.File
}

func startRegisterWriter(seeds []string, rate int, path string) (*registerWriter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(registerTopic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProduceRequestTimeout(10*time.Second), kgo.MetadataMinAge(100*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	if err != nil {
		f.Close()
		return nil, err
	}
	w := &registerWriter{cl: cl, quit: make(chan struct{}), done: make(chan int64, 1), out: bufio.NewWriter(f), f: f}
	go func() {
		start := time.Now()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		var seq int64
		for {
			select {
			case <-w.quit:
				w.done <- seq
				return
			case <-tick.C:
			}
			due := int64(time.Since(start).Seconds() * float64(rate))
			for ; seq < due; seq++ {
				r := &kgo.Record{Key: fmt.Appendf(nil, "key-%02d", seq%registerKeys), Value: fmt.Appendf(nil, "reg-%012d", seq)}
				cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
					w.mu.Lock()
					defer w.mu.Unlock()
					if err != nil {
						w.failed = append(w.failed, fmt.Sprintf("%s=%s: %v", r.Key, r.Value, err))
						fmt.Fprintf(w.out, "fail %s %s %v\n", r.Key, r.Value, err)
						return
					}
					w.acks = append(w.acks, regAck{Key: string(r.Key), Value: string(r.Value), Partition: r.Partition, Offset: r.Offset})
					fmt.Fprintf(w.out, "ack %s %s %d %d\n", r.Key, r.Value, r.Partition, r.Offset)
				})
			}
		}
	}()
	return w, nil
}

// stop ends the writes, waits for the answers (until ctx ends) and returns
// the acknowledged writes and the failed ones.
func (w *registerWriter) stop(ctx context.Context) (sent int64, acks []regAck, failed []string, err error) {
	close(w.quit)
	sent = <-w.done
	if err = w.cl.Flush(ctx); err != nil {
		err = fmt.Errorf("register writer: %d writes unanswered: %w", w.cl.BufferedProduceRecords(), err)
	}
	w.cl.Close()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.out.Flush()
	w.f.Close()
	return sent, w.acks, w.failed, err
}

// registerVerdict is the register workload's check.
type registerVerdict struct {
	Acked      int
	Superseded int // acknowledged, then compacted away for a later write
	Lost       int
	Duplicated int
	Problems   []string
}

func (v *registerVerdict) problem(format string, args ...any) {
	if len(v.Problems) < 50 {
		v.Problems = append(v.Problems, fmt.Sprintf(format, args...))
	}
}

// checkRegister checks the acknowledged writes against the log read back
// (keys and values of every record below the high watermarks).
func checkRegister(acks []regAck, log []lab.Stored) *registerVerdict {
	v := &registerVerdict{Acked: len(acks)}
	type place struct {
		p int32
		o int64
	}
	at := map[place]lab.Stored{}
	lastOfKey := map[string]int64{} // partition/key -> highest offset in the log
	seen := map[string]place{}
	for _, s := range log {
		at[place{s.Partition, s.Offset}] = s
		pk := fmt.Sprintf("%d/%s", s.Partition, s.Key)
		if o, ok := lastOfKey[pk]; !ok || s.Offset > o {
			lastOfKey[pk] = s.Offset
		}
		if prev, ok := seen[s.Value]; ok {
			v.Duplicated++
			v.problem("%s stored twice: partition %d offset %d and partition %d offset %d", s.Value, prev.p, prev.o, s.Partition, s.Offset)
		}
		seen[s.Value] = place{s.Partition, s.Offset}
	}
	for _, a := range acks {
		s, ok := at[place{a.Partition, a.Offset}]
		switch {
		case ok && s.Value == a.Value && s.Key == a.Key:
		case ok:
			v.Lost++
			v.problem("%s=%s acknowledged at partition %d offset %d, which holds %s=%s", a.Key, a.Value, a.Partition, a.Offset, s.Key, s.Value)
		default:
			if last, ok := lastOfKey[fmt.Sprintf("%d/%s", a.Partition, a.Key)]; ok && last > a.Offset {
				v.Superseded++
				continue
			}
			v.Lost++
			v.problem("%s=%s acknowledged at partition %d offset %d is not in the log and no later write of %s is", a.Key, a.Value, a.Partition, a.Offset, a.Key)
		}
	}
	return v
}
