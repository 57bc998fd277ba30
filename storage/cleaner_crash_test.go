package storage

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gregor-io/gregor/protocol/record"
)

// The cleaner crash test: the parent appends a round of keyed records
// (random keys, tombstones, codecs) to a compacted log and closes it; a
// child process (this test binary running TestCleanerCrashChild) opens the
// dir and cleans the log, with a small offset map so that it takes several
// passes, each swapping in several cleaned segments. The parent kills the
// child with SIGKILL at a random moment, from before its open to after its
// last pass, then reopens the dir and checks: no .cleaned or .swap file is
// left, every record read from offset 0 is one that was appended, at its
// offset with its key and value, batches do not overlap, the latest record
// of every key is there, the log end did not move, and a read at any
// record's offset finds it. The kill moments are drawn up to the time an
// unkilled child took. At the end one last cleaning must leave exactly the
// latest record of each key.

const (
	cleanerCrashDirEnv    = "GREGOR_CLEANER_CRASH_CHILD"
	cleanerCrashCyclesEnv = "GREGOR_CLEANER_CRASH_CYCLES"
	cleanerCrashCycles    = 30
)

var cleanerCrashTP = TopicPartition{Topic: "compacted", Partition: 0}

func cleanerCrashManagerConfig(dir string) ManagerConfig {
	cfg := DefaultManagerConfig(dir)
	cfg.Log = compactConfig(4096)
	cfg.CleanerEnable = false
	cfg.RetentionCheckInterval = time.Hour
	cfg.CleanerDedupeBufferSize = int64(float64(120*offsetMapEntrySize)/offsetMapLoadFactor) + 1
	return cfg
}

// TestCleanerCrashChild is the child: it cleans until nothing is left to
// clean and exits without closing.
func TestCleanerCrashChild(t *testing.T) {
	dir := os.Getenv(cleanerCrashDirEnv)
	if dir == "" {
		t.Skip("run by TestCleanerCrash")
	}
	m, err := OpenManager(cleanerCrashManagerConfig(dir))
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(3)
	}
	for {
		st, err := m.RunCleaner(context.Background())
		if err != nil {
			fmt.Fprintln(os.Stderr, "clean:", err)
			os.Exit(4)
		}
		if st.Logs == 0 {
			os.Exit(0)
		}
	}
}

func TestCleanerCrash(t *testing.T) {
	if os.Getenv(cleanerCrashDirEnv) != "" {
		t.Skip("in the child")
	}
	cycles := cleanerCrashCycles
	if s := os.Getenv(cleanerCrashCyclesEnv); s != "" {
		cycles, _ = strconv.Atoi(s)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	codecs := []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd}
	dir := t.TempDir()
	var all []kv
	aborted := map[int64]kv{} // records of aborted transactions, by offset
	seqs := map[int64]int32{}
	var leo int64
	var full time.Duration // how long an unkilled child took
	killed := 0
	for cycle := 0; cycle <= cycles; cycle++ {
		m, err := OpenManager(cleanerCrashManagerConfig(dir))
		if err != nil {
			t.Fatalf("cycle %d: open: %v", cycle, err)
		}
		l, err := m.GetOrCreate(cleanerCrashTP, cleanerCrashManagerConfig(dir).Log)
		if err != nil {
			t.Fatal(err)
		}
		all = checkCleanerCrash(t, rng, l, all, aborted, leo, cycle)
		if cycle == cycles {
			settle(t, l)
			cleanUntilDone(t, m, l)
			// Aborted records in the active segment are not cleaned yet;
			// below it none is left.
			var left []kv
			for _, r := range readRecords(t, l) {
				if _, ok := aborted[r.offset]; !ok {
					left = append(left, r)
				} else if r.offset < activeBase(l) {
					t.Fatalf("final cleaning left the aborted record %v", r)
				}
			}
			sameRecords(t, "final cleaning", left, compacted(all, activeBase(l), false))
			m.Close()
			break
		}
		for b := 0; b < 150; b++ {
			recs := make([]kv, 1+rng.IntN(8))
			for i := range recs {
				recs[i].key = fmt.Sprintf("key-%d", rng.IntN(300))
				if rng.IntN(10) > 0 {
					recs[i].value = randomValue(rng)
				}
			}
			if rng.IntN(8) > 0 {
				all = append(all, appendKeyed(t, l, recs, time.Now().UnixMilli(), codecs[rng.IntN(len(codecs))])...)
				continue
			}
			pid := int64(1000 + rng.IntN(3))
			rs := make([]record.Record, len(recs))
			for i, r := range recs {
				rs[i] = record.Record{OffsetDelta: int32(i), Key: []byte(r.key), Value: r.value}
			}
			tb, err := record.Build(nil, record.BatchHeader{Codec: codecs[rng.IntN(len(codecs))], Transactional: true,
				BaseTimestamp: time.Now().UnixMilli(), ProducerID: pid, BaseSequence: seqs[pid]}, rs)
			if err != nil {
				t.Fatal(err)
			}
			seqs[pid] += int32(len(rs))
			res, err := l.Append(tb, AppendOptions{AssignOffsets: true})
			if err != nil {
				t.Fatal(err)
			}
			commit := rng.IntN(2) == 0
			if _, err := l.AppendTxnMarker(TxnMarker{ProducerID: pid, Commit: commit}, 0); err != nil {
				t.Fatal(err)
			}
			for i := range recs {
				recs[i].offset = res.FirstOffset + int64(i)
				if commit {
					all = append(all, recs[i])
				} else {
					aborted[recs[i].offset] = recs[i]
				}
			}
		}
		settle(t, l)
		leo = l.LogEndOffset()
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}

		cmd := exec.Command(os.Args[0], "-test.run=^TestCleanerCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), cleanerCrashDirEnv+"="+dir)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var timer *time.Timer
		if cycle > 0 {
			// The kill moment is drawn, not awaited: this is where the
			// child dies, not a synchronisation.
			timer = time.AfterFunc(time.Duration(rng.Int64N(int64(full)+1)), func() {
				cmd.Process.Signal(syscall.SIGKILL) //nolint:errcheck // it may have exited
			})
		}
		err = cmd.Wait()
		if timer != nil {
			timer.Stop()
		}
		if cycle == 0 {
			full = time.Since(start)
			t.Logf("an unkilled child took %v", full)
		}
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() {
				killed++
				continue
			}
			t.Fatalf("cycle %d: child: %v: %s", cycle, err, stderr.String())
		}
	}
	t.Logf("%d cycles, %d kills", cycles, killed)
}

// checkCleanerCrash checks the log after a child's crash against what was
// appended (all, and the aborted records, with the log end leo) and
// returns the committed records left.
func checkCleanerCrash(t *testing.T, rng *rand.Rand, l *Log, all []kv, aborted map[int64]kv, leo int64, cycle int) []kv {
	t.Helper()
	ents, err := os.ReadDir(l.Dir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), cleanedSuffix) || strings.HasSuffix(e.Name(), swapSuffix) {
			t.Fatalf("cycle %d: %s left after open", cycle, e.Name())
		}
	}
	if l.LogEndOffset() != leo {
		t.Fatalf("cycle %d: log end %d, want %d", cycle, l.LogEndOffset(), leo)
	}
	byOffset := make(map[int64]kv, len(all))
	latest := map[string]int64{}
	for _, r := range all {
		byOffset[r.offset] = r
		latest[r.key] = r.offset
	}
	abortList, err := l.AbortedTransactions(0, l.LogEndOffset())
	if err != nil {
		t.Fatalf("cycle %d: aborted transactions: %v", cycle, err)
	}
	var got []kv
	for _, r := range readRecords(t, l) {
		w, ok := aborted[r.offset]
		if !ok {
			got = append(got, r)
			continue
		}
		if w.key != r.key || string(w.value) != string(r.value) {
			t.Fatalf("cycle %d: record %v was not appended (appended: %v)", cycle, r, w)
		}
		covered := false
		for _, a := range abortList {
			covered = covered || a.FirstOffset <= r.offset && r.offset < a.LastOffset
		}
		if !covered {
			t.Fatalf("cycle %d: aborted record %v is in no aborted transaction %+v", cycle, r, abortList)
		}
	}
	present := make(map[int64]bool, len(got))
	for _, r := range got {
		w, ok := byOffset[r.offset]
		if !ok || w.key != r.key || string(w.value) != string(r.value) || (w.value == nil) != (r.value == nil) {
			t.Fatalf("cycle %d: record %v was not appended (appended: %v)", cycle, r, w)
		}
		present[r.offset] = true
	}
	for k, o := range latest {
		if !present[o] {
			t.Fatalf("cycle %d: the latest record of %s, %v, is gone", cycle, k, byOffset[o])
		}
	}
	for i := 0; i < 20 && len(got) > 0; i++ {
		o := got[rng.IntN(len(got))].offset
		res, err := l.Read(ReadOptions{Offset: o, MaxBytes: 1, MinOneBatch: true})
		if err != nil {
			t.Fatalf("cycle %d: read at %d: %v", cycle, o, err)
		}
		buf, err := res.AppendTo(nil)
		res.Release()
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := record.Parse(buf)
		if err != nil || b.BaseOffset() > o || b.LastOffset() < o {
			t.Fatalf("cycle %d: read at %d found the batch [%d, %d]: %v", cycle, o, b.BaseOffset(), b.LastOffset(), err)
		}
	}
	return got
}
