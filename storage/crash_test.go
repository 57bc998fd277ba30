package storage

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gregor-io/gregor/protocol/record"
)

// The crash test runs a child process (this test binary again, running
// TestCrashChild) that appends to a few partitions with fsync-before-ack and
// prints a line for every append once Flush has returned. The parent kills it
// with SIGKILL at a random moment, recovers the log dir, and checks that
// every acknowledged append is there, at its offsets, with its bytes, in a
// log whose offsets are dense. The dir is kept from cycle to cycle, so data
// accumulates and each child continues where the last one was killed.
//
// Half of the cycles verify the dir in place (the parent's clean Close then
// makes the next child's open clean); the other half verify a copy, so that
// the next child itself recovers the dir the kill left. A fifth of the kills
// land while the child opens the dir, which may be while it recovers it.
//
// Besides the acknowledged appends, a check verifies every batch a child
// left, acknowledged or not: it must be exactly a batch the child built, be
// found by a read at its first and last offset, and ListOffsets by
// timestamp must agree with a scan of the batch headers.
//
// A seed is logged; GREGOR_CRASH_SEED=<seed> repeats the parent's choices
// (kill moments, in place or copy), though not the child's timing.

// Environment of the child. crashDirEnv is set only in the child.
const (
	crashDirEnv       = "GREGOR_CRASH_CHILD"
	crashCycleEnv     = "GREGOR_CRASH_CHILD_CYCLE"
	crashChildSeedEnv = "GREGOR_CRASH_CHILD_SEED"
)

// Environment of the parent: GREGOR_CRASH_SEED reruns a logged seed,
// GREGOR_CRASH_CYCLES runs more cycles (a soak).
const (
	crashSeedEnv   = "GREGOR_CRASH_SEED"
	crashCyclesEnv = "GREGOR_CRASH_CYCLES"
)

const (
	crashTopic      = "crash"
	crashPartitions = 3
	crashWriters    = 2 // appending goroutines per partition
	crashCycles     = 50
)

// crashCodecs are the codecs the child's batches use, drawn per batch.
var crashCodecs = []record.Codec{record.CodecNone, record.CodecNone, record.CodecGzip,
	record.CodecSnappy, record.CodecLZ4, record.CodecZstd}

// crashLogConfig has small segments, so that the child rolls segments often
// and kills land during rolls, and the default flush.messages of 1: every
// acknowledged append is fsynced.
func crashLogConfig() Config {
	c := DefaultConfig()
	c.SegmentBytes = 64 << 10
	c.IndexIntervalBytes = 1024
	return c
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// crashTag names one batch of the child: the cycle, partition and writer that
// appended it, and the writer's sequence number.
func crashTag(cycle, partition, writer int, seq uint64) uint64 {
	return uint64(cycle)<<40 | uint64(partition)<<32 | uint64(writer)<<28 | seq
}

// crashBatch builds the batch the child appends for tag, at base offset 0
// and leader epoch 0. Its record count, sizes, codec and values all follow
// from the tag, which the first 8 bytes of every value carry: the parent
// rebuilds any batch it finds from the tag and compares the bytes.
func crashBatch(tag uint64) ([]byte, error) {
	h := splitmix64(tag)
	n := 1 + int(h%8)
	size := 16 + int(h>>8%500)
	codec := crashCodecs[h>>24%uint64(len(crashCodecs))]
	recs := make([]record.Record, n)
	for i := range recs {
		v := make([]byte, size)
		binary.BigEndian.PutUint64(v, tag)
		binary.BigEndian.PutUint64(v[8:], uint64(i))
		for j := 16; j < size; j++ {
			v[j] = byte(h>>(j%8*8)) + byte(j/64) // compressible, but not constant
		}
		recs[i] = record.Record{
			OffsetDelta:    int32(i),
			TimestampDelta: int64(i),
			Key:            binary.BigEndian.AppendUint64(nil, tag),
			Value:          v,
		}
	}
	return record.Build(nil, record.BatchHeader{
		Codec: codec, BaseTimestamp: 1_700_000_000_000 + int64(tag&0xffffff),
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
	}, recs)
}

// crashBatchTag returns the tag a stored batch carries in its first record.
func crashBatchTag(b record.Batch) (uint64, error) {
	var tag uint64
	found := errors.New("found")
	err := record.ForEachRecord(b, nil, func(_, _ int64, r *record.Record) error {
		if len(r.Value) < 8 {
			return fmt.Errorf("record value of %d bytes, want at least 8", len(r.Value))
		}
		tag = binary.BigEndian.Uint64(r.Value)
		return found
	})
	switch {
	case err == nil:
		return 0, fmt.Errorf("no records in batch at %d", b.BaseOffset())
	case !errors.Is(err, found):
		return 0, fmt.Errorf("no tag in batch at %d: %w", b.BaseOffset(), err)
	}
	return tag, nil
}

// TestCrashChild is the child of TestCrashRecovery; on its own it skips.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("the child process of TestCrashRecovery; runs only when that test starts it")
	}
	cycle, err1 := strconv.Atoi(os.Getenv(crashCycleEnv))
	seed, err2 := strconv.ParseUint(os.Getenv(crashChildSeedEnv), 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		crashChildDie("bad environment: %v", err)
	}
	runCrashChild(dir, cycle, seed)
}

// crashChildDie reports a failure of the child on stderr, which the parent
// shows, and exits. The child cannot use t.Fatal: it fails on its writers'
// goroutines, and its exit status is all the parent would see.
func crashChildDie(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "crash child: "+format+"\n", args...)
	os.Exit(2)
}

// runCrashChild appends until it is killed. It writes to stdout "opening"
// before it opens the dir, "ready" once its logs are open, and
// "ack <partition> <first offset> <last offset> <crc hex> <tag hex>" for each
// append once Flush has returned. Each line is one write(2) of less than
// PIPE_BUF bytes, so lines from different writers do not interleave.
func runCrashChild(dir string, cycle int, seed uint64) {
	// Exit on our own if the parent never kills us (it died or hangs).
	time.AfterFunc(2*time.Minute, func() { crashChildDie("not killed after 2 minutes") })
	var outMu sync.Mutex
	say := func(line string) {
		outMu.Lock()
		defer outMu.Unlock()
		if _, err := os.Stdout.WriteString(line); err != nil {
			crashChildDie("write stdout: %v", err)
		}
	}
	rng := rand.New(rand.NewPCG(seed, uint64(cycle)))
	cfg := DefaultManagerConfig(dir)
	cfg.Log = crashLogConfig()
	// Sometimes checkpoint recovery points often, so that recovery starts
	// from a recovery point the child itself wrote.
	cfg.CheckpointInterval = []time.Duration{5 * time.Millisecond, 50 * time.Millisecond, time.Minute}[rng.IntN(3)]
	say("opening\n")
	m, err := OpenManager(cfg)
	if err != nil {
		crashChildDie("open manager: %v", err)
	}
	logs := make([]*Log, crashPartitions)
	for p := range logs {
		if logs[p], err = m.GetOrCreate(TopicPartition{Topic: crashTopic, Partition: int32(p)}, cfg.Log); err != nil {
			crashChildDie("create partition %d: %v", p, err)
		}
	}
	say("ready\n")
	ctx := context.Background()
	for p, l := range logs {
		for w := range crashWriters {
			go func() {
				for seq := uint64(0); ; seq++ {
					a, err := crashAppend(ctx, l, p, crashTag(cycle, p, w, seq))
					if err != nil {
						crashChildDie("%v", err)
					}
					say(fmt.Sprintf("ack %d %d %d %08x %x\n", a.partition, a.first, a.last, a.crc, a.tag))
				}
			}()
		}
	}
	select {}
}

// crashAppend appends the batch of tag to partition p's log l and returns
// the acknowledgement a broker would send with flush.messages=1: Append, then
// Flush as the append asks, then the ack.
func crashAppend(ctx context.Context, l *Log, p int, tag uint64) (crashAck, error) {
	set, err := crashBatch(tag)
	if err != nil {
		return crashAck{}, fmt.Errorf("build batch: %w", err)
	}
	crc := record.Batch(set).CRC()
	res, err := l.Append(set, AppendOptions{AssignOffsets: true})
	if err != nil {
		return crashAck{}, fmt.Errorf("partition %d: append: %w", p, err)
	}
	if !res.NeedsFlush {
		return crashAck{}, fmt.Errorf("partition %d: append of %d..%d with flush.messages=1 did not ask for a flush",
			p, res.FirstOffset, res.LastOffset)
	}
	if err := l.Flush(ctx, res.LastOffset+1); err != nil {
		return crashAck{}, fmt.Errorf("partition %d: flush to %d: %w", p, res.LastOffset+1, err)
	}
	if d := l.DurableOffset(); d <= res.LastOffset {
		return crashAck{}, fmt.Errorf("partition %d: durable offset %d after a flush to %d", p, d, res.LastOffset+1)
	}
	return crashAck{partition: p, first: res.FirstOffset, last: res.LastOffset, crc: crc, tag: tag}, nil
}

// crashAck is an append the child acknowledged.
type crashAck struct {
	partition   int
	first, last int64
	crc         uint32
	tag         uint64
}

func parseCrashAck(line string) (crashAck, error) {
	var a crashAck
	_, err := fmt.Sscanf(line, "ack %d %d %d %x %x", &a.partition, &a.first, &a.last, &a.crc, &a.tag)
	if err == nil && (a.partition < 0 || a.partition >= crashPartitions) {
		err = fmt.Errorf("partition %d out of range", a.partition)
	}
	if err != nil {
		return a, fmt.Errorf("bad ack line %q: %w", line, err)
	}
	return a, nil
}

// crashKill says when the parent kills a child.
type crashKill struct {
	// duringOpen kills the child this long after it says "opening", while it
	// opens (and maybe recovers) the dir; otherwise the delay runs from
	// "ready", while it appends.
	duringOpen bool
	delay      time.Duration
}

// runCrashCycle starts a child on dir, kills it as kill says, and returns the
// appends it acknowledged before it died.
func runCrashCycle(t *testing.T, dir string, cycle int, seed uint64, kill crashKill) []crashAck {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		crashDirEnv+"="+dir,
		crashCycleEnv+"="+strconv.Itoa(cycle),
		crashChildSeedEnv+"="+strconv.FormatUint(seed, 10))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	killed := false
	defer func() {
		if !killed { // a t.Fatal below: do not leave the child running
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()

	opening, ready, eof := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var acks []crashAck
	var badLine error
	go func() {
		defer close(eof)
		r := bufio.NewReader(stdout)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				// EOF, maybe after a line the kill cut short: that append
				// was not acknowledged.
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "opening":
				close(opening)
			case line == "ready":
				close(ready)
			case strings.HasPrefix(line, "ack "):
				a, err := parseCrashAck(line)
				if err != nil && badLine == nil {
					badLine = err
				}
				acks = append(acks, a)
			}
			// Anything else is the testing package's own output.
		}
	}()

	start := ready
	if kill.duringOpen {
		start = opening
	}
	select {
	case <-start:
	case <-eof:
		_ = cmd.Wait()
		killed = true
		t.Fatalf("cycle %d: child exited before it was killed (%v); stderr:\n%s", cycle, cmd.ProcessState, stderr.String())
	case <-time.After(time.Minute):
		t.Fatalf("cycle %d: child did not get ready within a minute; stderr:\n%s", cycle, stderr.String())
	}
	time.Sleep(kill.delay) // the random moment of the kill, not a wait for something
	if err := cmd.Process.Kill(); err != nil {
		t.Fatalf("cycle %d: kill child: %v", cycle, err)
	}
	<-eof // every line the child wrote before it died is read
	err = cmd.Wait()
	killed = true
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("cycle %d: child ended with %v, want killed by SIGKILL; stderr:\n%s", cycle, err, stderr.String())
	}
	if strings.Contains(stderr.String(), "DATA RACE") {
		// A failure, but the cycles go on: what the kill left is still
		// worth checking.
		t.Errorf("cycle %d: the race detector reported in the child:\n%s", cycle, stderr.String())
	}
	if badLine != nil {
		t.Fatalf("cycle %d: %v", cycle, badLine)
	}
	return acks
}

// batchSig identifies a stored batch: its offsets and its CRC (which covers
// everything after the leader epoch).
type batchSig struct {
	base, last int64
	crc        uint32
}

func sigOf(b record.Batch) batchSig {
	return batchSig{base: b.BaseOffset(), last: b.LastOffset(), crc: b.CRC()}
}

// crashChecker holds what the parent knows must be in the dir.
type crashChecker struct {
	acks [crashPartitions][]crashAck
	// known are the batches a previous check found, in log order. A kill
	// loses nothing a child wrote (the page cache survives it) and recovery
	// keeps every complete batch, so they must all stay, unchanged.
	known [crashPartitions][]batchSig
	// checkedUpTo is, per partition, the log end of the previous check:
	// batches from there on are new and are rebuilt from their tags.
	checkedUpTo [crashPartitions]int64
	// tagsChecked is, per partition, how many acks had their batch's tag
	// checked; a later check compares offsets and CRCs, which cover the
	// bytes, without decompressing again.
	tagsChecked [crashPartitions]int
}

// check recovers dir (its clean-shutdown marker decides how) and verifies
// every partition, then closes the Manager cleanly.
func (c *crashChecker) check(t *testing.T, dir string, cycle int) (batches int) {
	t.Helper()
	cfg := DefaultManagerConfig(dir)
	cfg.Log = crashLogConfig()
	m, err := OpenManager(cfg)
	if err != nil {
		t.Fatalf("cycle %d: open after kill: %v", cycle, err)
	}
	defer func() {
		if m != nil {
			m.Close()
		}
	}()
	for p := range crashPartitions {
		l, ok := m.Get(TopicPartition{Topic: crashTopic, Partition: int32(p)})
		if !ok {
			if len(c.acks[p]) > 0 || len(c.known[p]) > 0 {
				t.Fatalf("cycle %d: partition %d is gone after the kill, with %d acknowledged appends",
					cycle, p, len(c.acks[p]))
			}
			continue
		}
		c.checkLog(t, l, p, cycle)
		batches += len(c.known[p])
	}
	err = m.Close()
	m = nil
	if err != nil {
		t.Fatalf("cycle %d: close after check: %v", cycle, err)
	}
	return batches
}

func (c *crashChecker) checkLog(t *testing.T, l *Log, p, cycle int) {
	t.Helper()
	if s := l.LogStartOffset(); s != 0 {
		t.Fatalf("cycle %d partition %d: log start %d, want 0", cycle, p, s)
	}
	leo := l.LogEndOffset()
	stored := readAll(t, l, 0, 0) // checks each batch's integrity (CRC)
	next := int64(0)
	for _, b := range stored {
		if b.BaseOffset() != next {
			t.Fatalf("cycle %d partition %d: batch at offset %d follows a batch ending before %d: offsets not dense",
				cycle, p, b.BaseOffset(), next)
		}
		next = b.NextOffset()
	}
	if next != leo {
		t.Fatalf("cycle %d partition %d: batches end before %d, log end offset %d", cycle, p, next, leo)
	}

	known := c.known[p]
	if len(stored) < len(known) {
		t.Fatalf("cycle %d partition %d: %d batches, but a previous check found %d (log end %d, was %d)",
			cycle, p, len(stored), len(known), leo, c.checkedUpTo[p])
	}
	for i, want := range known {
		if got := sigOf(stored[i]); got != want {
			t.Fatalf("cycle %d partition %d: batch %d is %+v, a previous check found %+v", cycle, p, i, got, want)
		}
	}
	// New batches, acknowledged or not, must be exactly what a child built.
	for _, b := range stored[len(known):] {
		tag, err := crashBatchTag(b)
		if err != nil {
			t.Fatalf("cycle %d partition %d: %v", cycle, p, err)
		}
		want, err := crashBatch(tag)
		if err != nil {
			t.Fatal(err)
		}
		record.Batch(want).SetBaseOffset(b.BaseOffset())
		if !bytes.Equal(b, want) {
			t.Fatalf("cycle %d partition %d: batch at %d (tag %x, %d bytes) differs from the batch the child built (%d bytes)",
				cycle, p, b.BaseOffset(), tag, len(b), len(want))
		}
		if tagPartition := int(tag >> 32 & 0xff); tagPartition != p {
			t.Fatalf("cycle %d partition %d: batch at %d was appended to partition %d", cycle, p, b.BaseOffset(), tagPartition)
		}
		// The offset index finds it by its first and last offset.
		for _, off := range []int64{b.BaseOffset(), b.LastOffset()} {
			res, err := l.Read(ReadOptions{Offset: off, MaxBytes: 1, MinOneBatch: true})
			if err != nil {
				t.Fatalf("cycle %d partition %d: read at %d: %v", cycle, p, off, err)
			}
			buf, err := res.AppendTo(nil)
			res.Release()
			if err != nil || !bytes.Equal(buf, b) {
				t.Fatalf("cycle %d partition %d: read at %d returned %d bytes (%v), want the batch at %d",
					cycle, p, off, len(buf), err, b.BaseOffset())
			}
		}
	}
	c.checkTimestamps(t, l, stored, p, cycle)

	at := make(map[int64]record.Batch, len(stored))
	for _, b := range stored {
		at[b.BaseOffset()] = b
	}
	maxAcked := int64(-1)
	for i, a := range c.acks[p] {
		b, ok := at[a.first]
		if !ok {
			t.Fatalf("cycle %d partition %d: acknowledged append %d..%d (tag %x, from cycle %d) is missing; log end %d",
				cycle, p, a.first, a.last, a.tag, a.tag>>40, leo)
		}
		if b.LastOffset() != a.last || b.CRC() != a.crc {
			t.Fatalf("cycle %d partition %d: acknowledged append %d..%d crc %08x is stored as %d..%d crc %08x",
				cycle, p, a.first, a.last, a.crc, b.BaseOffset(), b.LastOffset(), b.CRC())
		}
		if i >= c.tagsChecked[p] {
			if tag, _ := crashBatchTag(b); tag != a.tag {
				t.Fatalf("cycle %d partition %d: offset %d holds tag %x, the child acknowledged tag %x there",
					cycle, p, a.first, tag, a.tag)
			}
		}
		maxAcked = max(maxAcked, a.last)
	}
	if maxAcked >= 0 {
		// A fetch at the last acknowledged offset finds its batch.
		res, err := l.Read(ReadOptions{Offset: maxAcked, MaxBytes: 1, MinOneBatch: true})
		if err != nil {
			t.Fatalf("cycle %d partition %d: read at the last acknowledged offset %d: %v", cycle, p, maxAcked, err)
		}
		buf, err := res.AppendTo(nil)
		res.Release()
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := record.Parse(buf)
		if err != nil || b.BaseOffset() > maxAcked || b.LastOffset() < maxAcked || !bytes.Equal(b, at[b.BaseOffset()]) {
			t.Fatalf("cycle %d partition %d: read at %d returned %d bytes (%v), want the batch holding it",
				cycle, p, maxAcked, len(buf), err)
		}
	}

	c.known[p] = c.known[p][:0]
	for _, b := range stored {
		c.known[p] = append(c.known[p], sigOf(b))
	}
	c.checkedUpTo[p] = leo
	c.tagsChecked[p] = len(c.acks[p])
}

// checkTimestamps checks ListOffsets by timestamp, which goes through the
// time indexes recovery rebuilt, against a scan of the batch headers: the
// child's record i in a batch has offset and timestamp base+i.
func (c *crashChecker) checkTimestamps(t *testing.T, l *Log, stored []record.Batch, p, cycle int) {
	t.Helper()
	if len(stored) == 0 {
		return
	}
	rng := rand.New(rand.NewPCG(uint64(cycle), uint64(p)))
	for range 20 {
		b := stored[rng.IntN(len(stored))]
		target := b.BaseTimestamp() + rng.Int64N(int64(b.LastOffsetDelta())+2)
		want, found := int64(-1), false
		for _, x := range stored {
			if last := x.MaxTimestamp(); last >= target {
				want, found = x.BaseOffset()+max(target-x.BaseTimestamp(), 0), true
				break
			}
		}
		got, ok, err := l.OffsetForTimestamp(target)
		if err != nil || ok != found || (ok && got.Offset != want) {
			t.Fatalf("cycle %d partition %d: offset for timestamp %d: got %d (found %v, err %v), want %d (found %v)",
				cycle, p, target, got.Offset, ok, err, want, found)
		}
	}
}

// copyTree copies the regular files and directories under src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		in, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed since it was listed: before the copy's moment
		}
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(to)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

// TestCrashRecovery kills a child appending with fsync-before-ack 50 times
// and checks after each kill that every acknowledged append survived; see
// the comment at the top of this file.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the crash test kills a child process 50 times, which takes tens of seconds")
	}
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(crashSeedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", crashSeedEnv, s, err)
		}
	}
	cycles := crashCycles
	if s := os.Getenv(crashCyclesEnv); s != "" {
		var err error
		if cycles, err = strconv.Atoi(s); err != nil {
			t.Fatalf("%s=%q: %v", crashCyclesEnv, s, err)
		}
	}
	t.Logf("seed %d (rerun with %s=%d)", seed, crashSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "data")
	var c crashChecker
	start := time.Now()
	var acked, batches, copies, duringOpen int
	for cycle := 1; cycle <= cycles; cycle++ {
		kill := crashKill{delay: time.Duration(20+rng.IntN(280)) * time.Millisecond}
		if rng.IntN(5) == 0 {
			kill = crashKill{duringOpen: true, delay: time.Duration(rng.IntN(40)) * time.Millisecond}
			duringOpen++
		}
		acks := runCrashCycle(t, dir, cycle, rng.Uint64(), kill)
		for _, a := range acks {
			c.acks[a.partition] = append(c.acks[a.partition], a)
		}
		acked += len(acks)
		checkDir := dir
		onCopy := rng.IntN(2) == 0
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			// The first child was killed before it made the dir: there is
			// nothing to copy, and nothing may have been acknowledged.
			onCopy = false
		}
		if onCopy {
			// Check a copy: the next child recovers what the kill left.
			checkDir = filepath.Join(tmp, "copy")
			if err := copyTree(dir, checkDir); err != nil {
				t.Fatalf("copy the data dir: %v", err)
			}
			copies++
		}
		batches = c.check(t, checkDir, cycle)
		if checkDir != dir {
			if err := os.RemoveAll(checkDir); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("%d cycles in %v (%d checked on a copy, %d killed while opening): %d acknowledged appends, %d batches in the logs",
		cycles, time.Since(start).Round(time.Millisecond), copies, duringOpen, acked, batches)
	if acked == 0 {
		t.Fatal("no append was acknowledged in any cycle")
	}
}

// TestCrashWorkloadInProcess runs the crash child's workload in this process
// without killing it, so that the race detector watches appends, rolls and
// group-commit flushes of several partitions at once, and checks the logs
// the same way, live and after a clean reopen. It does not run in parallel
// with other tests, so that a race it finds is blamed on it alone.
func TestCrashWorkloadInProcess(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultManagerConfig(dir)
	cfg.Log = crashLogConfig()
	cfg.Log.SegmentBytes = 6 << 10 // a roll every few appends, often while a flush runs
	m, err := OpenManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if m != nil {
			m.Close()
		}
	}()
	// More writers than the child has: appends that arrive while a flush
	// is in its fsync, and roll the segment it syncs, are what the race
	// detector needs to see.
	const writers, perWriter = 4, 40
	var c crashChecker
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, crashPartitions*writers)
	for p := range crashPartitions {
		l, err := m.Create(TopicPartition{Topic: crashTopic, Partition: int32(p)}, cfg.Log)
		if err != nil {
			t.Fatal(err)
		}
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for seq := range uint64(perWriter) {
					a, err := crashAppend(context.Background(), l, p, crashTag(0, p, w, seq))
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					c.acks[p] = append(c.acks[p], a)
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	logs := func() []*Log {
		out := make([]*Log, crashPartitions)
		for p := range out {
			l, ok := m.Get(TopicPartition{Topic: crashTopic, Partition: int32(p)})
			if !ok {
				t.Fatalf("partition %d missing", p)
			}
			out[p] = l
		}
		return out
	}
	for p, l := range logs() {
		if got := len(c.acks[p]); got != perWriter*writers {
			t.Fatalf("partition %d: %d acks, want %d", p, got, perWriter*writers)
		}
		if l.SegmentCount() < 5 {
			t.Fatalf("partition %d: %d segments, want several rolls", p, l.SegmentCount())
		}
		c.checkLog(t, l, p, 0)
	}
	err = m.Close()
	m = nil
	if err != nil {
		t.Fatal(err)
	}
	if m, err = OpenManager(cfg); err != nil {
		t.Fatal(err)
	}
	for p, l := range logs() {
		c.checkLog(t, l, p, 1)
	}
}
