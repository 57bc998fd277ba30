package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
)

const produceLong = `Produce the lines of stdin to TOPIC, one record per line.

Without --key-separator a line is the value of a record with no key. With
it, a line is split at the first separator into key and value; a line
without the separator is reported and skipped. -H adds headers to every
record. Without --partition the default partitioner picks the partition
(by key hash, records without a key are spread).

At the end a summary (records, bytes of keys and values, partitions) is
printed on stderr, or on stdout as JSON with --json. Records the cluster
refused are reported on stderr and make the exit status 1. Ctrl-C stops
reading stdin, waits for what was read to be acknowledged and prints the
summary; a second Ctrl-C ends at once.`

// maxReportedErrors caps the per-record errors printed; the summary
// counts them all.
const maxReportedErrors = 10

// newProduceCmd returns `gregor produce`.
func newProduceCmd() *cobra.Command {
	o := &clientOptions{}
	var (
		keySep            string
		headers           []string
		partition         int32
		acks, compression string
	)
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Produce the lines of stdin as records",
		Long:  produceLong,
		Example: `  echo hello | gregor produce greetings
  printf 'k1:v1\nk2:v2\n' | gregor produce orders --key-separator : -H source=cli --acks 1`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTopics(o),
		RunE: func(cmd *cobra.Command, args []string) error {
			hs, err := parseKeyValues("-H", headers)
			if err != nil {
				return err
			}
			var rh []kgo.RecordHeader
			for _, h := range hs {
				rh = append(rh, kgo.RecordHeader{Key: h[0], Value: []byte(h[1])})
			}
			opts, err := producerOpts(acks, compression, 0)
			if err != nil {
				return err
			}
			opts = append(opts, kgo.DefaultProduceTopic(args[0]))
			if partition >= 0 {
				opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
			}
			cl, err := o.newClient(opts...)
			if err != nil {
				return err
			}
			defer cl.Close()
			p := &producer{
				cl: cl, topic: args[0], keySep: []byte(keySep), headers: rh, partition: partition,
				stderr: &lockedWriter{w: cmd.ErrOrStderr()},
			}
			return p.run(cmd, o)
		},
	}
	o.addFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&keySep, "key-separator", "", "split each line at the first `SEP` into key and value")
	f.StringArrayVarP(&headers, "header", "H", nil, "add header `KEY=VALUE` to every record (repeatable)")
	f.Int32Var(&partition, "partition", -1, "produce to this partition only (-1: let the partitioner choose)")
	f.StringVar(&acks, "acks", "all", "acknowledgements to wait for: all (idempotent), 1 (leader) or 0 (none)")
	f.StringVar(&compression, "compression", "none", "compress batches with none, gzip, snappy, lz4 or zstd")
	return cmd
}

// lockedWriter serializes writes from the producer's callbacks and its
// main loop.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// producer produces the lines of one `gregor produce`.
type producer struct {
	cl        *kgo.Client
	topic     string
	keySep    []byte
	headers   []kgo.RecordHeader
	partition int32
	stderr    io.Writer

	mu struct {
		sync.Mutex
		records, failed, bytes int64
		partitions             map[int32]bool
	}
}

// produceSummary is what produce prints at the end.
type produceSummary struct {
	Topic      string  `json:"topic"`
	Records    int64   `json:"records"`
	Failed     int64   `json:"failed"`
	Bytes      int64   `json:"bytes"`
	Partitions []int32 `json:"partitions"`
}

// line is a line of stdin, or the error that ended reading.
type line struct {
	b   []byte
	err error
}

// readLines sends the lines of r without their line ends, then closes
// out. It stops early when done is closed.
func readLines(r io.Reader, out chan<- line, done <-chan struct{}) {
	defer close(out)
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 || (err != nil && !errors.Is(err, io.EOF)) {
			b = bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r"))
			l := line{b: b}
			if err != nil && !errors.Is(err, io.EOF) {
				l = line{err: err}
			}
			select {
			case out <- l:
			case <-done:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *producer) run(cmd *cobra.Command, o *clientOptions) error {
	p.mu.partitions = map[int32]bool{}
	// Produce with the command's context, which Ctrl-C does not end:
	// what was read before Ctrl-C is still delivered.
	pctx := cmd.Context()
	ctx, stop := interruptible(pctx)
	defer stop()

	lines := make(chan line)
	done := make(chan struct{})
	defer close(done)
	// On Ctrl-C this goroutine may stay blocked reading stdin until the
	// process ends; that is what ending it means.
	go readLines(cmd.InOrStdin(), lines, done)

	var (
		n       int64
		readErr error
	)
read:
	for {
		select {
		case <-ctx.Done():
			break read
		case l, ok := <-lines:
			if !ok {
				break read
			}
			if l.err != nil {
				readErr = fmt.Errorf("read stdin: %w", l.err)
				break read
			}
			n++
			r := &kgo.Record{Value: l.b, Headers: p.headers, Partition: p.partition}
			if len(p.keySep) > 0 {
				k, v, found := bytes.Cut(l.b, p.keySep)
				if !found {
					p.fail(n, fmt.Errorf("no key separator %q", p.keySep))
					continue
				}
				r.Key, r.Value = k, v
			}
			lineNo := n
			p.cl.Produce(pctx, r, func(r *kgo.Record, err error) {
				if err != nil {
					p.fail(lineNo, err)
					return
				}
				p.mu.Lock()
				p.mu.records++
				p.mu.bytes += int64(len(r.Key) + len(r.Value))
				p.mu.partitions[r.Partition] = true
				p.mu.Unlock()
			})
		}
	}
	stop()
	if err := p.cl.Flush(pctx); err != nil {
		return fmt.Errorf("flush: %w", err)
	}

	p.mu.Lock()
	s := produceSummary{Topic: p.topic, Records: p.mu.records, Failed: p.mu.failed, Bytes: p.mu.bytes, Partitions: []int32{}}
	for part := range p.mu.partitions {
		s.Partitions = append(s.Partitions, part)
	}
	p.mu.Unlock()
	slices.Sort(s.Partitions)
	if o.json {
		if err := writeJSON(cmd.OutOrStdout(), s); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(p.stderr, "Produced %d records (%d bytes) to topic %s, partitions %s",
			s.Records, s.Bytes, s.Topic, int32s(s.Partitions))
		if s.Failed > 0 {
			fmt.Fprintf(p.stderr, "; %d records failed", s.Failed)
		}
		fmt.Fprintln(p.stderr)
	}
	switch {
	case readErr != nil:
		return readErr
	case s.Failed > 0:
		return fmt.Errorf("%d of %d records not produced", s.Failed, n)
	}
	return nil
}

// fail counts a record that was not produced and reports the first
// maxReportedErrors of them.
func (p *producer) fail(lineNo int64, err error) {
	p.mu.Lock()
	p.mu.failed++
	failed := p.mu.failed
	p.mu.Unlock()
	switch {
	case failed <= maxReportedErrors:
		fmt.Fprintf(p.stderr, "gregor: line %d: %v\n", lineNo, err)
	case failed == maxReportedErrors+1:
		fmt.Fprintf(p.stderr, "gregor: more records failed; the summary counts them\n")
	}
}
