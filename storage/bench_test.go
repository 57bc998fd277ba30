package storage

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/gregor-io/gregor/protocol/record"
)

// The benchmarks compare the log's append throughput with what write(2)
// does with the same bytes on this machine, measured in the same run:
// BenchmarkPlainFileWrite is the raw page-cache bandwidth that
// BenchmarkAppend's figures are measured against. Two more plain-file
// benchmarks give the disk's own limits for the log's two flush policies:
// BenchmarkPlainFileRoll for page-cache mode, where each segment is
// fdatasynced when it rolls, and BenchmarkPlainFileWriteSync for
// fsync-before-ack. Compare them from one run:
//
//	go test -run='^$' -bench=. -benchtime=2s -count=5 ./storage/ | tee bench.txt
//	benchstat bench.txt
//
// BenchmarkPlainFileWrite removes its file at 1 GiB, so its pages rarely
// reach the disk, while a log keeps its segments and fsyncs each when it
// rolls: on a slow disk the log's page-cache figures follow
// BenchmarkPlainFileRoll rather than BenchmarkPlainFileWrite. With TMPDIR
// on a tmpfs the disk drops out, and the ratios show the code's overhead.

const (
	benchRecordSize = 1 << 10
	// benchSegmentBytes is the segment size: with the default of 1 GiB a
	// run would hardly roll. A run's segments (a few GiB) are kept until it
	// ends.
	benchSegmentBytes = 128 << 20
	// benchPlainFileBytes is where the plain-file benchmark starts a new
	// file, so that its disk usage stays bounded.
	benchPlainFileBytes = 1 << 30
)

// benchBatchSizes are the batch sizes measured, by name.
var benchBatchSizes = []struct {
	name string
	size int
}{{"16KiB", 16 << 10}, {"256KiB", 256 << 10}}

// benchBatch builds an uncompressed batch of size/1 KiB records of 1 KiB of
// random bytes each (a little over size bytes with the framing).
func benchBatch(b *testing.B, size int) []byte {
	b.Helper()
	rng := rand.New(rand.NewPCG(uint64(size), 1))
	recs := make([]record.Record, size/benchRecordSize)
	for i := range recs {
		v := make([]byte, benchRecordSize)
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		recs[i] = record.Record{OffsetDelta: int32(i), TimestampDelta: int64(i), Value: v}
	}
	batch, err := record.Build(nil, record.BatchHeader{
		BaseTimestamp: 1_700_000_000_000, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
	}, recs)
	if err != nil {
		b.Fatal(err)
	}
	return batch
}

// BenchmarkPlainFileWrite writes the batches BenchmarkAppend appends with
// plain write(2) calls to one file, removed and started again at 1 GiB: the
// raw page-cache write bandwidth that the log's nofsync figures are measured
// against.
func BenchmarkPlainFileWrite(b *testing.B) {
	for _, bs := range benchBatchSizes {
		b.Run(bs.name, func(b *testing.B) {
			benchPlainFile(b, benchBatch(b, bs.size), plainFileOpts{files: 1, rollBytes: benchPlainFileBytes})
		})
	}
}

// BenchmarkPlainFileWriteSync is BenchmarkPlainFileWrite with an fdatasync
// after every batch, on one file or on 16 files by 16 writers at once: the
// most that one or 16 partitions appending with fsync-before-ack can do on
// this disk.
func BenchmarkPlainFileWriteSync(b *testing.B) {
	for _, bs := range benchBatchSizes {
		for _, files := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/files=%d", bs.name, files), func(b *testing.B) {
				benchPlainFile(b, benchBatch(b, bs.size), plainFileOpts{files: files, rollBytes: benchPlainFileBytes, syncEach: true})
			})
		}
	}
}

// BenchmarkPlainFileRoll writes one file after another of benchSegmentBytes
// each, keeps them and fdatasyncs each in the background once the next one
// starts, as a log in page-cache mode does with its segments: unlike
// BenchmarkPlainFileWrite, every byte reaches the disk.
func BenchmarkPlainFileRoll(b *testing.B) {
	for _, bs := range benchBatchSizes {
		b.Run(bs.name, func(b *testing.B) {
			benchPlainFile(b, benchBatch(b, bs.size), plainFileOpts{files: 1, rollBytes: benchSegmentBytes, keep: true})
		})
	}
}

type plainFileOpts struct {
	files     int   // writers, each on its own files, at once
	rollBytes int64 // a writer starts a new file after this many bytes
	// keep keeps a full file and fdatasyncs it in the background; without
	// it the file is removed, its pages most likely never written back.
	keep     bool
	syncEach bool // fdatasync after every write
}

func benchPlainFile(b *testing.B, batch []byte, o plainFileOpts) {
	dir := b.TempDir()
	errs := make(chan error, o.files+1)
	var wg, bg sync.WaitGroup
	b.SetBytes(int64(len(batch)))
	syscall.Sync() // the previous benchmark's dirty pages are not this one's
	b.ResetTimer()
	for w := range o.files {
		n := b.N / o.files
		if w < b.N%o.files {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var f *os.File
			var written int64
			files := 0
			next := func() error {
				if old := f; old != nil && o.keep {
					bg.Add(1)
					go func() {
						defer bg.Done()
						if err := fdatasync(old); err != nil {
							errs <- err
						}
						old.Close()
					}()
				} else if old != nil {
					old.Close()
					if err := os.Remove(old.Name()); err != nil {
						return err
					}
				}
				var err error
				f, err = os.Create(filepath.Join(dir, fmt.Sprintf("plain-%d-%d", w, files)))
				files++
				written = 0
				return err
			}
			if err := next(); err != nil {
				errs <- err
				return
			}
			defer func() { f.Close() }()
			for range n {
				if written+int64(len(batch)) > o.rollBytes {
					if err := next(); err != nil {
						errs <- err
						return
					}
				}
				if _, err := f.Write(batch); err != nil {
					errs <- err
					return
				}
				written += int64(len(batch))
				if o.syncEach {
					if err := fdatasync(f); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	bg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// BenchmarkAppend measures appends through a Manager, one goroutine per
// partition, each appending its share of b.N batches. fsync waits for Flush
// after every append (flush.messages=1: group commit shares the fsyncs of
// concurrent flushes); nofsync leaves the data in the page cache
// (flush.messages=MaxInt64), fsynced only when a segment rolls.
func BenchmarkAppend(b *testing.B) {
	for _, bs := range benchBatchSizes {
		for _, partitions := range []int{1, 16, 256} {
			for _, fsync := range []bool{true, false} {
				mode := "nofsync"
				if fsync {
					mode = "fsync"
				}
				name := fmt.Sprintf("batch=%s/partitions=%d/%s", bs.name, partitions, mode)
				b.Run(name, func(b *testing.B) {
					benchAppend(b, benchBatch(b, bs.size), partitions, fsync)
				})
			}
		}
	}
}

func benchAppend(b *testing.B, batch []byte, partitions int, fsync bool) {
	cfg := DefaultManagerConfig(b.TempDir())
	cfg.Log.SegmentBytes = benchSegmentBytes
	if !fsync {
		cfg.Log.FlushMessages = math.MaxInt64
	}
	m, err := OpenManager(cfg)
	if err != nil {
		b.Fatal(err)
	}
	logs := make([]*Log, partitions)
	for p := range logs {
		if logs[p], err = m.Create(TopicPartition{Topic: "bench", Partition: int32(p)}, cfg.Log); err != nil {
			b.Fatal(err)
		}
	}
	errs := make(chan error, partitions)
	var wg sync.WaitGroup
	b.SetBytes(int64(len(batch)))
	syscall.Sync() // the previous benchmark's dirty pages are not this one's
	b.ResetTimer()
	for p, l := range logs {
		n := b.N / partitions
		if p < b.N%partitions {
			n++
		}
		set := append([]byte(nil), batch...) // Append patches offsets in place
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for range n {
				res, err := l.Append(set, AppendOptions{AssignOffsets: true})
				if err != nil {
					errs <- err
					return
				}
				if res.NeedsFlush {
					if err := l.Flush(ctx, res.LastOffset+1); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	if err := m.Close(); err != nil {
		b.Fatal(err)
	}
}

// benchReadLogBytes is the size of the log BenchmarkRead reads, round and
// round: more than a segment, small enough to stay in the page cache.
const benchReadLogBytes = 256 << 20

// BenchmarkRead reads a log sequentially as a consumer's fetches do: Read
// with a 1 MiB limit, the bytes copied into a reused buffer, the next fetch
// at the end of the last whole batch. The log is in the page cache.
func BenchmarkRead(b *testing.B) {
	for _, bs := range benchBatchSizes {
		b.Run(bs.name, func(b *testing.B) {
			batch := benchBatch(b, bs.size)
			cfg := DefaultConfig()
			cfg.SegmentBytes = benchSegmentBytes
			cfg.FlushMessages = math.MaxInt64
			l, err := Open(b.TempDir(), TopicPartition{Topic: "bench", Partition: 0}, cfg, OpenState{}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			for l.Size() < benchReadLogBytes {
				if _, err := l.Append(batch, AppendOptions{AssignOffsets: true}); err != nil {
					b.Fatal(err)
				}
			}
			buf := make([]byte, 0, 1<<20+len(batch))
			b.SetBytes(int64(len(batch)))
			b.ResetTimer()
			offset := int64(0)
			for done := 0; done < b.N; {
				res, err := l.Read(ReadOptions{Offset: offset, MaxBytes: 1 << 20, MinOneBatch: true})
				if err != nil {
					b.Fatal(err)
				}
				if res.Len == 0 { // the end: round again
					res.Release()
					offset = 0
					continue
				}
				buf, err = res.AppendTo(buf[:0])
				res.Release()
				if err != nil {
					b.Fatal(err)
				}
				for rest := buf; done < b.N; done++ {
					bt, r, err := record.Parse(rest)
					if err != nil {
						break // a partial batch at the end of the fetch
					}
					offset, rest = bt.NextOffset(), r
				}
			}
		})
	}
}
