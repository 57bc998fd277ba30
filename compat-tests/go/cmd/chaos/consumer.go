package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/gregor-io/gregor/compat-tests/go/internal/lab"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// reader is the live side of the workload: a member of consumer group
// group reading the topic throughout the run and committing after each
// poll, and a watcher asking the group's committed offsets every second.
// Every record read, every commit the coordinator accepted and every
// committed offset fetched goes to a log file as it comes
// ("<ms> read|commit|fetch <partition> <offset> [value]") and into the
// history the checker gets.
type reader struct {
	start  time.Time
	cancel context.CancelFunc
	done   sync.WaitGroup
	mu     struct {
		sync.Mutex
		f        *os.File
		consumed []lab.Stored
		commits  []lab.Commit
	}
}

func (r *reader) record(kind string, p int32, off int64, value string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.mu.f, "%d %s %d %d %s\n", time.Since(r.start).Milliseconds(), kind, p, off, value)
	if kind == "read" {
		r.mu.consumed = append(r.mu.consumed, lab.Stored{Partition: p, Offset: off, Value: value})
	} else {
		r.mu.commits = append(r.mu.commits, lab.Commit{Source: kind, Partition: p, Offset: off})
	}
}

func startReader(seeds []string, topic, group, logPath string) (*reader, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(500*time.Millisecond), kgo.MetadataMinAge(100*time.Millisecond),
		kgo.SessionTimeout(10*time.Second), kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	if err != nil {
		f.Close()
		return nil, err
	}
	adminCl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		cl.Close()
		f.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &reader{start: time.Now(), cancel: cancel}
	r.mu.f = f
	r.done.Add(2)
	go func() {
		defer r.done.Done()
		defer cl.Close()
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(rec *kgo.Record) { r.record("read", rec.Partition, rec.Offset, string(rec.Value)) })
			offs := cl.UncommittedOffsets()
			if len(offs) == 0 {
				continue
			}
			cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
			cl.CommitOffsetsSync(cctx, offs, func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
				if err != nil || resp == nil {
					return
				}
				asked := map[int32]int64{}
				for _, t := range req.Topics {
					for _, p := range t.Partitions {
						asked[p.Partition] = p.Offset
					}
				}
				for _, t := range resp.Topics {
					for _, p := range t.Partitions {
						if off, ok := asked[p.Partition]; ok && p.ErrorCode == 0 {
							r.record("commit", p.Partition, off, "")
						}
					}
				}
			})
			ccancel()
		}
	}()
	go func() {
		defer r.done.Done()
		defer adminCl.Close()
		adm := kadm.NewClient(adminCl)
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			fctx, fcancel := context.WithTimeout(ctx, 3*time.Second)
			offs, err := adm.FetchOffsets(fctx, group)
			fcancel()
			if err != nil {
				continue
			}
			offs.Each(func(o kadm.OffsetResponse) {
				if o.Err == nil && o.Topic == topic && o.At >= 0 {
					r.record("fetch", o.Partition, o.At, "")
				}
			})
		}
	}()
	return r, nil
}

// stop ends reading and returns what was read and committed.
func (r *reader) stop() ([]lab.Stored, []lab.Commit) {
	r.cancel()
	r.done.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.f.Close()
	return r.mu.consumed, r.mu.commits
}
