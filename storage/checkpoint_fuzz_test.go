package storage

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// The files a log dir and a partition read at open time besides segments:
// the offset checkpoints, the leader epoch checkpoint and the producer
// snapshots. Each must decode or fail with ErrCorruptCheckpoint, and what
// decodes must encode back to the same value.

// FuzzOffsetCheckpoint reads arbitrary bytes as an offset checkpoint file
// (recovery point, log start, high watermark).
func FuzzOffsetCheckpoint(f *testing.F) {
	f.Add([]byte("0\n0\n"))
	f.Add([]byte("0\n2\nt 0 5\nt 1 7\n"))
	f.Add([]byte("0\n3\n__consumer_offsets 49 -1\nb 2147483647 9223372036854775807\na.b-c_d 0 0\n"))
	f.Add([]byte("0\n1\nt 0 5\n\n"))
	f.Add([]byte("0\n1\nt  0   5\r\n"))
	f.Add([]byte("0\n2\nt 0 5\n"))             // fewer entries than counted
	f.Add([]byte("0\n1\nt 0 5\nu 0 6\n"))      // more
	f.Add([]byte("0\n1\nt -1 5\n"))            // negative partition
	f.Add([]byte("1\n0\n"))                    // unknown version
	f.Add([]byte("0\n99999999999999999999\n")) // count overflows
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "in")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := readOffsetCheckpoint(path)
		if err != nil {
			if !errors.Is(err, ErrCorruptCheckpoint) {
				t.Fatalf("error %v does not wrap ErrCorruptCheckpoint", err)
			}
			return
		}
		for tp := range got {
			if tp.Partition < 0 || tp.Topic == "" {
				t.Fatalf("decoded entry %+v", tp)
			}
		}
		again := filepath.Join(dir, "again")
		if err := writeOffsetCheckpoint(again, got); err != nil {
			t.Fatal(err)
		}
		back, err := readOffsetCheckpoint(again)
		if err != nil {
			t.Fatalf("re-encoded checkpoint does not read: %v", err)
		}
		if !reflect.DeepEqual(back, got) {
			t.Fatalf("round trip: read %v, wrote and read back %v", got, back)
		}
	})
}

// FuzzEpochCheckpoint reads arbitrary bytes as a leader-epoch-checkpoint,
// then answers and updates the history it holds, as a partition does.
func FuzzEpochCheckpoint(f *testing.F) {
	f.Add([]byte("0\n0\n"), int32(0), int64(0))
	f.Add([]byte("0\n3\n0 0\n3 10\n5 12\n"), int32(4), int64(11))
	f.Add([]byte("0\n2\n1 5\n2 5\n"), int32(1), int64(5))
	f.Add([]byte("0\n2\n2 5\n1 6\n"), int32(2), int64(6)) // out of order
	f.Add([]byte("0\n1\n-1 5\n"), int32(0), int64(0))
	f.Add([]byte("0\n1\n2147483647 9223372036854775807\n"), int32(-1), int64(-1))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, epoch int32, offset int64) {
		path := filepath.Join(dir, "in")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := loadEpochCache(path)
		if err != nil {
			if !errors.Is(err, ErrCorruptCheckpoint) {
				t.Fatalf("error %v does not wrap ErrCorruptCheckpoint", err)
			}
			return
		}
		checkEpochs := func(what string) {
			es := c.snapshot()
			for i, e := range es {
				if e.epoch < 0 || e.start < 0 {
					t.Fatalf("%s: entry %d is %+v", what, i, e)
				}
				if i > 0 && (e.epoch <= es[i-1].epoch || e.start < es[i-1].start) {
					t.Fatalf("%s: entries out of order: %+v", what, es)
				}
			}
		}
		checkEpochs("loaded")
		loaded := c.snapshot()
		c.path = filepath.Join(dir, "again")
		if err := c.persist(); err != nil {
			t.Fatal(err)
		}
		back, err := loadEpochCache(c.path)
		if err != nil {
			t.Fatalf("re-encoded checkpoint does not read: %v", err)
		}
		if got := back.snapshot(); !reflect.DeepEqual(got, loaded) {
			t.Fatalf("round trip: read %+v, wrote and read back %+v", loaded, got)
		}

		c.latest()
		c.epochFor(offset)
		// A log end is never negative: with one, "no epoch" and an end of
		// -1 look alike.
		if e, end := c.endOffsetFor(epoch, offset); offset >= 0 && (e == -1) != (end == -1) {
			t.Fatalf("endOffsetFor(%d, %d) = %d, %d", epoch, offset, e, end)
		}
		if epoch >= 0 && offset >= 0 {
			if _, err := c.assign(epoch, offset, true); err != nil {
				t.Fatal(err)
			}
			checkEpochs("after assign")
		}
		if err := c.truncateFromStart(offset / 2); err != nil {
			t.Fatal(err)
		}
		checkEpochs("after truncateFromStart")
		if err := c.truncateFromEnd(offset); err != nil {
			t.Fatal(err)
		}
		checkEpochs("after truncateFromEnd")
	})
}

// FuzzProducerSnapshot decodes arbitrary bytes as a producer state
// snapshot, once as they are and once with their CRC made to match, so
// that the fuzzer gets past the checksum to the body.
func FuzzProducerSnapshot(f *testing.F) {
	ps := newProducerState()
	ps.entries[7] = &producerEntry{epoch: 2, batches: []producerBatch{
		{firstSeq: 0, lastSeq: 4, firstOffset: 10, lastOffset: 14, timestamp: 1000},
		{firstSeq: 5, lastSeq: 5, firstOffset: 20, lastOffset: 20, timestamp: 1001},
	}}
	ps.entries[-3] = &producerEntry{epoch: -1, batches: []producerBatch{{firstSeq: 2147483647, lastSeq: 1, firstOffset: 0, lastOffset: 2}}}
	full := &producerEntry{}
	for i := range producerBatchesKept {
		full.add(producerBatch{firstSeq: int32(i), lastSeq: int32(i), firstOffset: int64(i), lastOffset: int64(i)})
	}
	ps.entries[1<<40] = full
	ps.entries[9] = &producerEntry{epoch: 4, coordinatorEpoch: 12, txnFirst: 30}
	ps.entries[10] = &producerEntry{epoch: 0, coordinatorEpoch: -1, txnFirst: 31,
		batches: []producerBatch{{firstSeq: 0, lastSeq: 0, firstOffset: 31, lastOffset: 31}}}
	f.Add(ps.encode())
	f.Add(newProducerState().encode())
	f.Add([]byte{0, 1, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzProducerSnapshot(t, data)
		if len(data) >= 10 {
			fixed := append([]byte(nil), data...)
			binary.BigEndian.PutUint32(fixed[2:], crc32.Checksum(fixed[6:], castagnoli))
			fuzzProducerSnapshot(t, fixed)
		}
	})
}

func fuzzProducerSnapshot(t *testing.T, data []byte) {
	ps, err := decodeProducerSnapshot(data)
	if err != nil {
		if !errors.Is(err, ErrCorruptCheckpoint) {
			t.Fatalf("error %v does not wrap ErrCorruptCheckpoint", err)
		}
		return
	}
	for pid, e := range ps.entries {
		if n := len(e.batches); n == 0 && e.txnFirst < 0 && e.coordinatorEpoch < 0 || n > producerBatchesKept {
			t.Fatalf("producer %d decoded with %d batches", pid, n)
		}
		e.lastSeq()
	}
	ps.lastOffsets()
	back, err := decodeProducerSnapshot(ps.encode())
	if err != nil {
		t.Fatalf("re-encoded snapshot does not decode: %v", err)
	}
	if !reflect.DeepEqual(back, ps) {
		t.Fatalf("round trip: decoded %+v, encoded and decoded back %+v", ps, back)
	}
}
