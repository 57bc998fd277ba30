package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ack is one acknowledged record, as its writer's callback saw it.
type ack struct {
	writer    string
	seq       int64
	partition int32
	offset    int64
	at        time.Time // when the harness learnt of it
}

func recordValue(writer string, seq int64) string { return fmt.Sprintf("%s-%012d", writer, seq) }

// parseValue splits a record value into its writer and sequence number.
func parseValue(v string) (writer string, seq int64, ok bool) {
	i := strings.LastIndexByte(v, '-')
	if i < 1 || len(v)-i-1 != 12 {
		return "", 0, false
	}
	seq, err := strconv.ParseInt(v[i+1:], 10, 64)
	return v[:i], seq, err == nil
}

// ackLog holds every outcome the writers report, in the order the harness
// learnt of them (so acks are sorted by at), and writes each to a file as
// it comes: "<ms since start> ack <partition> <offset> <value>" or
// "<ms> err <value> <error>".
type ackLog struct {
	start time.Time
	mu    struct {
		sync.Mutex
		f    *os.File
		acks []ack
		errs []string
	}
}

func newAckLog(path string) (*ackLog, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	l := &ackLog{start: time.Now()}
	l.mu.f = f
	return l, nil
}

func (l *ackLog) ack(writer string, seq int64, partition int32, offset int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	l.mu.acks = append(l.mu.acks, ack{writer: writer, seq: seq, partition: partition, offset: offset, at: now})
	fmt.Fprintf(l.mu.f, "%d ack %d %d %s\n", now.Sub(l.start).Milliseconds(), partition, offset, recordValue(writer, seq))
}

func (l *ackLog) fail(value, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	l.mu.errs = append(l.mu.errs, value+": "+msg)
	fmt.Fprintf(l.mu.f, "%d err %s %s\n", now.Sub(l.start).Milliseconds(), value, msg)
}

// note writes a harness event into the log, between the acks.
func (l *ackLog) note(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.mu.f, "%d note %s\n", time.Since(l.start).Milliseconds(), fmt.Sprintf(format, args...))
}

// firstAfter returns when the first acknowledgement on partition came in
// after t.
func (l *ackLog) firstAfter(partition int32, t time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	acks := l.mu.acks
	for i := sort.Search(len(acks), func(i int) bool { return acks[i].at.After(t) }); i < len(acks); i++ {
		if acks[i].partition == partition {
			return acks[i].at, true
		}
	}
	return time.Time{}, false
}

func (l *ackLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.mu.acks)
}

func (l *ackLog) snapshot() ([]ack, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]ack(nil), l.mu.acks...), append([]string(nil), l.mu.errs...)
}

func (l *ackLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.f.Close()
}

// writer is one producer under load; stop ends its sending, waits for
// every record it sent to be answered (at most until ctx ends) and
// returns how many it sent.
type writer interface {
	name() string
	stop(ctx context.Context) (sent int64, err error)
}

// kgoWriter is franz-go's idempotent producer (kgo's default) with
// acks=all, sending value kgo-<seq> to partition seq % partitions.
type kgoWriter struct {
	cl   *kgo.Client
	quit chan struct{}
	done chan int64
}

func startKgoWriter(seeds []string, topic string, partitions int32, rate int, log *ackLog) (*kgoWriter, error) {
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
	w := &kgoWriter{cl: cl, quit: make(chan struct{}), done: make(chan int64, 1)}
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
				r := &kgo.Record{Partition: int32(s % int64(partitions)), Value: []byte(recordValue("kgo", s))}
				// Not the harness's context: a record is given up on
				// only by Close, after stop has waited for it.
				cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
					if err != nil {
						log.fail(string(r.Value), err.Error())
						return
					}
					log.ack("kgo", s, r.Partition, r.Offset)
				})
			}
		}
	}()
	return w, nil
}

func (w *kgoWriter) name() string { return "kgo" }

func (w *kgoWriter) stop(ctx context.Context) (int64, error) {
	close(w.quit)
	sent := <-w.done
	err := w.cl.Flush(ctx)
	w.cl.Close()
	if err != nil {
		return sent, fmt.Errorf("kgo writer: records still unanswered at the end: %w", err)
	}
	return sent, nil
}

// javaWriter is kafka-clients' idempotent acks=all producer in a JVM of
// its own (FailoverWriter.java), reporting every outcome on its stdout;
// closing its stdin stops it.
type javaWriter struct {
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

func startJavaWriter(c *cluster, java, classpath, stderrPath string, topic string, partitions int32, rate int, log *ackLog) (*javaWriter, error) {
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
		strings.Join(c.seeds(), ","), topic, "java", strconv.Itoa(int(partitions)), strconv.Itoa(rate))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errf
	exited, err := c.startProcess(cmd, "java writer")
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	w := &javaWriter{stdin: inW, exited: exited, read: make(chan struct{})}
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

func (w *javaWriter) line(line string, log *ackLog) {
	f := strings.SplitN(line, " ", 4)
	switch {
	case len(f) == 4 && f[0] == "ack":
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		off, err2 := strconv.ParseInt(f[2], 10, 64)
		wr, seq, ok := parseValue(f[3])
		if err1 == nil && err2 == nil && ok {
			log.ack(wr, seq, int32(p), off)
			return
		}
	case len(f) >= 3 && f[0] == "err":
		log.fail(f[1], strings.Join(f[2:], " "))
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

func (w *javaWriter) name() string { return "java" }

// alive reports whether the JVM is still running.
func (w *javaWriter) alive() bool {
	select {
	case <-w.exited:
		return false
	default:
		return true
	}
}

func (w *javaWriter) stop(ctx context.Context) (int64, error) {
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
