package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareBenchOptions are the flags of bench share.
type shareBenchOptions struct {
	group     string
	consumers int
	records   int64
	maxPoll   int32
}

// newBenchShareCmd returns `gregor bench share`: a share group (KIP-932)
// of --consumers members reads the topic, every record acknowledged on its
// own (accepted), until --records are accepted or --duration passes.
func newBenchShareCmd(o *clientOptions, b *benchOptions) *cobra.Command {
	s := &shareBenchOptions{}
	cmd := &cobra.Command{
		Use:   "share",
		Short: "Consume with a share group, each record acknowledged, and measure throughput",
		Long: `A share group of --consumers members (franz-go share consumers) reads the
topic from its earliest record (the group's share.auto.offset.reset is set
to earliest first) and accepts every record it gets, one acknowledgement per
record, until --records are accepted (0: for --duration). The report counts
accepted records; a record delivered twice is counted twice (a lock that
expired), and the errors column holds the acknowledgements the broker
refused.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runShareBench(cmd, o, b, s) },
	}
	f := cmd.Flags()
	f.StringVar(&s.group, "share-group", "gregor-bench-share", "share group id")
	f.IntVar(&s.consumers, "consumers", 8, "members of the share group")
	f.Int64Var(&s.records, "records", 0, "stop once this many records are accepted (0: run for --duration)")
	f.Int32Var(&s.maxPoll, "max-records", 500, "records a member asks for per fetch (ShareFetch MaxRecords)")
	return cmd
}

func runShareBench(cmd *cobra.Command, o *clientOptions, b *benchOptions, s *shareBenchOptions) error {
	switch {
	case s.consumers < 1:
		return errors.New("--consumers: want at least 1")
	case s.records < 0:
		return errors.New("--records: want 0 or more")
	case b.duration <= 0:
		return errors.New("--duration: want more than 0")
	}
	setupCtx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
	defer cancel()
	acl, err := o.newClient()
	if err != nil {
		return err
	}
	defer acl.Close()
	partitions, err := ensureTopic(setupCtx, kadm.NewClient(acl), b)
	if err != nil {
		return err
	}
	if err := setShareGroupEarliest(setupCtx, acl, s.group); err != nil {
		return err
	}

	ctx, stop := interruptible(cmd.Context())
	defer stop()
	ctx, stopRun := context.WithTimeout(ctx, b.duration)
	defer stopRun()
	stats := &benchStats{}
	var accepted, refused atomic.Int64
	var last atomic.Int64
	start := time.Now()
	progressDone := make(chan struct{})
	var progressWG sync.WaitGroup
	if b.progress > 0 {
		progressWG.Add(1)
		go func() {
			defer progressWG.Done()
			printProgress(&lockedWriter{w: cmd.ErrOrStderr()}, b.progress, start, nil, stats, "share", progressDone)
		}()
	}
	var wg sync.WaitGroup
	errs := make(chan error, s.consumers)
	for i := range s.consumers {
		cl, err := o.newClient(kgo.ShareGroup(s.group), kgo.ConsumeTopics(b.topic), kgo.ShareMaxRecords(s.maxPoll),
			kgo.ClientID(fmt.Sprintf("gregor-bench-share-%d", i)),
			kgo.ShareAckCallback(func(_ *kgo.Client, res kgo.ShareAckResults) {
				for _, r := range res {
					if r.Err != nil {
						refused.Add(1)
					}
				}
			}))
		if err != nil {
			stopRun()
			wg.Wait()
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			for ctx.Err() == nil {
				fs := cl.PollFetches(ctx)
				fs.EachRecord(func(r *kgo.Record) {
					r.Ack(kgo.AckAccept)
					stats.add(len(r.Value), -1)
				})
				if n := int64(fs.NumRecords()); n > 0 {
					storeMax(&last, int64(time.Since(start)))
					if total := accepted.Add(n); s.records > 0 && total >= s.records {
						stopRun()
					}
				}
				for _, fe := range fs.Errors() {
					if !errors.Is(fe.Err, context.Canceled) && !errors.Is(fe.Err, context.DeadlineExceeded) {
						errs <- fmt.Errorf("share fetch %s partition %d: %w", fe.Topic, fe.Partition, fe.Err)
						stopRun()
						return
					}
				}
			}
			// The last poll's records are accepted as the member leaves.
			fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := cl.FlushAcks(fctx); err != nil {
				errs <- fmt.Errorf("flush acknowledgements: %w", err)
			}
		}()
	}
	wg.Wait()
	close(progressDone)
	progressWG.Wait()
	close(errs)
	var runErr error
	for err := range errs {
		runErr = errors.Join(runErr, err)
	}
	elapsed := time.Duration(last.Load())
	if s.records == 0 {
		elapsed = min(time.Since(start), b.duration)
	}
	rep := benchReport{Mode: "share", Topic: b.topic, Partitions: partitions, Seconds: elapsed.Seconds()}
	rep.Consume = stats.result(elapsed)
	rep.Consume.Errors = refused.Load()
	if o.json {
		if err := writeJSON(cmd.OutOrStdout(), rep); err != nil {
			return err
		}
	} else if err := printBenchReport(cmd.OutOrStdout(), rep); err != nil {
		return err
	}
	if runErr == nil && s.records > 0 && accepted.Load() < s.records {
		runErr = fmt.Errorf("%d of %d records accepted in %v", accepted.Load(), s.records, b.duration)
	}
	return runErr
}

// setShareGroupEarliest sets the group's share.auto.offset.reset to
// earliest (a GROUP config), so that it reads the records already there.
func setShareGroupEarliest(ctx context.Context, cl *kgo.Client, group string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("set share.auto.offset.reset of %s: %w", group, err)
	}
	if len(resp.Resources) == 1 && resp.Resources[0].ErrorCode != 0 {
		return fmt.Errorf("set share.auto.offset.reset of %s: error code %d", group, resp.Resources[0].ErrorCode)
	}
	return nil
}
