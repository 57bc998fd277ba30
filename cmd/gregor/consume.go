package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"text/template"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
)

const consumeLong = `Consume records from TOPIC and print them, one per line.

Where to start:
  --offset start     the oldest record still kept
  --offset end       records produced from now on (the default)
  --offset N         offset N of every partition
  --offset -N        the last N records of every partition
  --timestamp T      the first record at or after T, in milliseconds since
                     the epoch or RFC 3339 (2024-05-01T12:00:00Z)

With --group the records are consumed as a member of that consumer group
and its offsets are committed: a group with committed offsets continues
from them, and --offset or --timestamp only say where to start when it has
none. At the end the offsets after the records printed are committed, and
for an assigned partition without a commit of which no record was printed,
the offset this member started at: the group's next member continues there.
Without --group every partition is read, or those of --partitions.

--format is a Go text/template over the record, printed with a newline
after it. The record has the fields .Topic, .Partition, .Offset, .Key,
.Value (strings), .Timestamp (a time.Time) and .Headers (a list of .Key,
.Value); .Header "name" is the value of the first header of that name.
Escapes such as a tab are written as {{"\t"}}. --json prints one JSON object
per record instead.

consume runs until --count records were printed, until no record arrived
for --timeout, or until Ctrl-C. The number of records is printed on stderr.`

// consumedRecord is what --format templates see of a record.
type consumedRecord struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       string
	Value     string
	Headers   []recordHeader
	Timestamp time.Time
}

type recordHeader struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Header returns the value of the first header called key, or "".
func (r consumedRecord) Header(key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return h.Value
		}
	}
	return ""
}

// jsonRecord is a record as --json prints it. Key and value are strings
// (bytes that are not UTF-8 become U+FFFD); a missing key is null.
type jsonRecord struct {
	Topic     string         `json:"topic"`
	Partition int32          `json:"partition"`
	Offset    int64          `json:"offset"`
	Timestamp time.Time      `json:"timestamp"`
	Key       *string        `json:"key"`
	Value     *string        `json:"value"`
	Headers   []recordHeader `json:"headers"`
}

func headersOf(r *kgo.Record) []recordHeader {
	hs := make([]recordHeader, len(r.Headers))
	for i, h := range r.Headers {
		hs[i] = recordHeader{Key: h.Key, Value: string(h.Value)}
	}
	return hs
}

func strPtr(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

// consumeOptions are the flags of consume.
type consumeOptions struct {
	offset     string
	timestamp  string
	group      string
	partitions string
	count      int
	format     string
	timeout    time.Duration
}

// startOffset parses --offset and --timestamp.
func (c *consumeOptions) startOffset() (kgo.Offset, error) {
	if c.timestamp != "" {
		ms, err := parseTimestamp(c.timestamp)
		if err != nil {
			return kgo.Offset{}, err
		}
		return kgo.NewOffset().AfterMilli(ms), nil
	}
	return parseStartOffset(c.offset)
}

// parseStartOffset parses start, end, N or -N.
func parseStartOffset(s string) (kgo.Offset, error) {
	switch s {
	case "start", "beginning", "earliest":
		return kgo.NewOffset().AtStart(), nil
	case "end", "latest":
		return kgo.NewOffset().AtEnd(), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return kgo.Offset{}, fmt.Errorf("--offset %q: want start, end, an offset N or -N (the last N records)", s)
	}
	if n < 0 {
		return kgo.NewOffset().AtEnd().Relative(n), nil
	}
	return kgo.NewOffset().At(n), nil
}

// parseTimestamp parses milliseconds since the epoch or RFC 3339.
func parseTimestamp(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("--timestamp %q: want milliseconds since the epoch or RFC 3339 (2024-05-01T12:00:00Z)", s)
	}
	return t.UnixMilli(), nil
}

// newConsumeCmd returns `gregor consume`.
func newConsumeCmd() *cobra.Command {
	o := &clientOptions{}
	c := &consumeOptions{}
	cmd := &cobra.Command{
		Use:   "consume TOPIC",
		Short: "Consume records and print them",
		Long:  consumeLong,
		Example: `  gregor consume orders --offset start -n 10
  gregor consume orders --group audit --format '{{.Partition}}/{{.Offset}} {{.Key}}={{.Value}}'
  gregor consume orders --partitions 0,1 --timestamp 2024-05-01T12:00:00Z --json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTopics(o),
		RunE: func(cmd *cobra.Command, args []string) error {
			return consume(cmd, o, c, args[0])
		},
	}
	o.addFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&c.offset, "offset", "end", "where to start: start, end, an offset N, or -N for the last N records")
	f.StringVar(&c.timestamp, "timestamp", "", "start at the first record at or after `TIME` (ms since the epoch or RFC 3339)")
	f.StringVarP(&c.group, "group", "g", "", "consume as a member of consumer group `GROUP` and commit its offsets")
	f.StringVar(&c.partitions, "partitions", "", "consume only these partitions, as `0,1,2`")
	f.IntVarP(&c.count, "count", "n", 0, "stop after this many records (0: no limit)")
	f.StringVar(&c.format, "format", "{{.Value}}", "Go text/template for each record (see above)")
	f.DurationVar(&c.timeout, "timeout", 0, "stop when no record has arrived for this long (0: never)")
	cmd.MarkFlagsMutuallyExclusive("offset", "timestamp")
	cmd.MarkFlagsMutuallyExclusive("group", "partitions")
	cmd.MarkFlagsMutuallyExclusive("format", "json")
	return cmd
}

func consume(cmd *cobra.Command, o *clientOptions, c *consumeOptions, topic string) error {
	if c.count < 0 {
		return errors.New("--count: want 0 or more")
	}
	tmpl, err := template.New("format").Option("missingkey=error").Parse(c.format)
	if err != nil {
		return fmt.Errorf("--format: %w", err)
	}
	start, err := c.startOffset()
	if err != nil {
		return err
	}
	opts := []kgo.Opt{kgo.ConsumeResetOffset(start)}
	var starts *groupStarts
	switch {
	case c.group != "":
		if starts, err = newGroupStarts(topic, c); err != nil {
			return err
		}
		opts = append(opts, kgo.ConsumeTopics(topic), kgo.ConsumerGroup(c.group), kgo.AutoCommitMarks())
		opts = append(opts, starts.opts()...)
	case c.partitions != "":
		ps, err := parsePartitions(c.partitions)
		if err != nil {
			return fmt.Errorf("--partitions: %w", err)
		}
		offsets := make(map[int32]kgo.Offset, len(ps))
		for _, p := range ps {
			offsets[p] = start
		}
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	default:
		opts = append(opts, kgo.ConsumeTopics(topic))
	}
	cl, err := o.newClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()

	ctx, stop := interruptible(cmd.Context())
	defer stop()
	out := bufio.NewWriter(cmd.OutOrStdout())
	var (
		n      int
		reason string
		buf    bytes.Buffer
	)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	printRecord := func(r *kgo.Record) error {
		if o.json {
			return enc.Encode(jsonRecord{
				Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp,
				Key: strPtr(r.Key), Value: strPtr(r.Value), Headers: headersOf(r),
			})
		}
		buf.Reset()
		err := tmpl.Execute(&buf, consumedRecord{
			Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: string(r.Key), Value: string(r.Value),
			Headers: headersOf(r), Timestamp: r.Timestamp,
		})
		if err != nil {
			return fmt.Errorf("--format: %w", err)
		}
		buf.WriteByte('\n')
		_, err = out.Write(buf.Bytes())
		return err
	}

	var runErr error
poll:
	for {
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if c.timeout > 0 {
			pctx, cancel = context.WithTimeout(ctx, c.timeout)
		}
		var fs kgo.Fetches
		if c.count > 0 {
			fs = cl.PollRecords(pctx, c.count-n)
		} else {
			fs = cl.PollFetches(pctx)
		}
		idle := pctx.Err() != nil && ctx.Err() == nil
		cancel()
		for it := fs.RecordIter(); !it.Done(); {
			r := it.Next()
			if err := printRecord(r); err != nil {
				runErr = err
				break poll
			}
			if c.group != "" {
				cl.MarkCommitRecords(r)
			}
			n++
		}
		if err := out.Flush(); err != nil {
			runErr = err
			break
		}
		switch {
		case c.count > 0 && n >= c.count:
			break poll
		case ctx.Err() != nil:
			reason = "interrupted"
			break poll
		case idle && fs.NumRecords() == 0:
			reason = fmt.Sprintf("no record for %v", c.timeout)
			break poll
		}
		for _, fe := range fs.Errors() {
			if errors.Is(fe.Err, context.Canceled) || errors.Is(fe.Err, context.DeadlineExceeded) {
				continue
			}
			runErr = fmt.Errorf("consume %s partition %d: %w", fe.Topic, fe.Partition, fe.Err)
			break poll
		}
	}
	stop()
	if c.group != "" {
		// Commit what was printed, also after Ctrl-C, and where this
		// member started in the partitions it printed nothing of; the
		// group is left when the client closes.
		unprinted := starts.unprinted(cl)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(cmd.Context()), 30*time.Second)
		err := cl.CommitMarkedOffsets(cctx)
		if err == nil {
			err = starts.commitUnprinted(cctx, cl, unprinted)
		}
		cancel()
		if err != nil && runErr == nil {
			runErr = fmt.Errorf("commit offsets of group %s: %w", c.group, err)
		}
	}
	msg := fmt.Sprintf("Consumed %d records", n)
	if reason != "" {
		msg += " (" + reason + ")"
	}
	fmt.Fprintln(cmd.ErrOrStderr(), msg)
	return runErr
}
