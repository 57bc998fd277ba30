package lab

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Writer is one producer under load; Stop ends its sending, waits for
// every record it sent to be answered (at most until ctx ends) and
// returns how many it sent.
type Writer interface {
	Name() string
	Stop(ctx context.Context) (sent int64, err error)
}

// KgoWriter is franz-go's idempotent producer (kgo's default) with
// acks=all, sending value kgo-<seq> to partition seq % partitions.
type KgoWriter struct {
	cl   *kgo.Client
	quit chan struct{}
	done chan int64
}

func StartKgoWriter(seeds []string, topic string, partitions int32, rate int, log *AckLog) (*KgoWriter, error) {
	return StartKgoWriterTimed(seeds, topic, partitions, rate, log, nil)
}

// StartKgoWriterTimed is StartKgoWriter that also reports, to latency
// when it is not nil, each acknowledged record's time from send to ack.
func StartKgoWriterTimed(seeds []string, topic string, partitions int32, rate int, log *AckLog, latency func(time.Duration)) (*KgoWriter, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100000),
		kgo.ProduceRequestTimeout(10*time.Second),
		// kgo refreshes metadata at most every 5 s by default; the
		// harness measures the broker's failover, not that.
		kgo.MetadataMinAge(100*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	if err != nil {
		return nil, err
	}
	w := &KgoWriter{cl: cl, quit: make(chan struct{}), done: make(chan int64, 1)}
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
				s := seq
				r := &kgo.Record{Partition: int32(s % int64(partitions)), Value: []byte(RecordValue("kgo", s))}
				sent := time.Now()
				// Not the harness's context: a record is given up on
				// only by Close, after stop has waited for it.
				cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
					if err != nil {
						log.Fail(string(r.Value), err.Error())
						return
					}
					log.Ack("kgo", s, r.Partition, r.Offset)
					if latency != nil {
						latency(time.Since(sent))
					}
				})
			}
		}
	}()
	return w, nil
}

// Name is the writer's name in record values.
func (w *KgoWriter) Name() string { return "kgo" }

// Stop stops sending and waits for the records sent to be answered.
func (w *KgoWriter) Stop(ctx context.Context) (int64, error) {
	close(w.quit)
	sent := <-w.done
	err := w.cl.Flush(ctx)
	w.cl.Close()
	if err != nil {
		return sent, fmt.Errorf("kgo writer: records still unanswered at the end: %w", err)
	}
	return sent, nil
}

// JavaWriter is kafka-clients' idempotent acks=all producer in a JVM of
// its own (FailoverWriter.java), reporting every outcome on its stdout;
// closing its stdin stops it.
type JavaWriter struct {
	stdin  *os.File
	exited chan struct{}
	read   chan struct{} // closed when its stdout is at EOF
	mu     struct {
		sync.Mutex
		sent    int64
		done    bool
		badLine string
	}
}

func StartJavaWriter(c *Cluster, java, classpath, stderrPath string, topic string, partitions int32, rate int, log *AckLog) (*JavaWriter, error) {
	errf, err := os.Create(stderrPath)
	if err != nil {
		return nil, err
	}
	defer errf.Close()
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(java, "-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", classpath, "FailoverWriter",
		strings.Join(c.Seeds(), ","), topic, "java", strconv.Itoa(int(partitions)), strconv.Itoa(rate))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errf
	exited, err := c.StartProcess(cmd, "java writer")
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	w := &JavaWriter{stdin: inW, exited: exited, read: make(chan struct{})}
	go func() {
		defer close(w.read)
		defer outR.Close()
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			w.line(sc.Text(), log)
		}
	}()
	return w, nil
}

func (w *JavaWriter) line(line string, log *AckLog) {
	f := strings.SplitN(line, " ", 4)
	switch {
	case len(f) == 4 && f[0] == "ack":
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		off, err2 := strconv.ParseInt(f[2], 10, 64)
		wr, seq, ok := ParseValue(f[3])
		if err1 == nil && err2 == nil && ok {
			log.Ack(wr, seq, int32(p), off)
			return
		}
	case len(f) >= 3 && f[0] == "err":
		log.Fail(f[1], strings.Join(f[2:], " "))
		return
	case len(f) == 2 && f[0] == "done":
		if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			w.mu.Lock()
			w.mu.sent, w.mu.done = n, true
			w.mu.Unlock()
			return
		}
	}
	w.mu.Lock()
	if w.mu.badLine == "" {
		w.mu.badLine = line
	}
	w.mu.Unlock()
}

// Name is the writer's name in record values.
func (w *JavaWriter) Name() string { return "java" }

// Alive reports whether the JVM is still running.
func (w *JavaWriter) Alive() bool {
	select {
	case <-w.exited:
		return false
	default:
		return true
	}
}

// Stop closes the JVM's stdin and waits for its last outcomes and its exit.
func (w *JavaWriter) Stop(ctx context.Context) (int64, error) {
	w.stdin.Close()
	select {
	case <-w.read:
	case <-ctx.Done():
		return 0, fmt.Errorf("java writer: no end of its output: %w", ctx.Err())
	}
	select {
	case <-w.exited:
	case <-ctx.Done():
		return 0, fmt.Errorf("java writer: did not exit: %w", ctx.Err())
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.mu.badLine != "":
		return w.mu.sent, fmt.Errorf("java writer: unexpected output line %q", w.mu.badLine)
	case !w.mu.done:
		return 0, fmt.Errorf("java writer: exited without its done line (see java-writer.log)")
	}
	return w.mu.sent, nil
}
