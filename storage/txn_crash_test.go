package storage

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gregor-io/gregor/protocol/record"
)

// The transaction crash test runs a child process (TestTxnCrashChild) that
// runs transactions of a few producers on one partition, fsyncing each
// append before it prints it ("data <pid> <first> <last>" or "marker <pid>
// <offset> <commit|abort>"). The parent kills it at a random moment, opens
// the dir (recovering it, or on half of the cycles a copy, so that the
// next child recovers what the kill left) and checks that every
// acknowledged batch and marker is there, and that the last stable offset,
// the open transactions and the aborted transactions the log reports are
// what a replay of the log's batches from the start gives. Each child
// starts by aborting the transactions a killed child left open, as a
// coordinator does when they time out. Segments are small, so kills land
// in rolls and the txn indexes of many segments are written, recovered and
// rebuilt.

const (
	txnCrashDirEnv   = "GREGOR_TXN_CRASH_CHILD"
	txnCrashCycleEnv = "GREGOR_TXN_CRASH_CYCLE"
	txnCrashCycles   = 16
	txnCrashProds    = 4
	txnCrashTopic    = "txn"
)

func txnCrashConfig(dir string) ManagerConfig {
	cfg := DefaultManagerConfig(dir)
	cfg.Log = DefaultConfig()
	cfg.Log.SegmentBytes = 4 << 10
	cfg.Log.IndexIntervalBytes = 512
	cfg.CheckpointInterval = 20 * time.Millisecond
	return cfg
}

// txnCrashPID is the producer id of producer k of a cycle's child.
func txnCrashPID(cycle, k int) int64 { return int64(cycle)*100 + int64(k) }

func TestTxnCrashChild(t *testing.T) {
	dir := os.Getenv(txnCrashDirEnv)
	if dir == "" {
		t.Skip("the child process of TestTxnCrashRecovery; runs only when that test starts it")
	}
	cycle, err := strconv.Atoi(os.Getenv(txnCrashCycleEnv))
	if err != nil {
		crashChildDie("bad environment: %v", err)
	}
	time.AfterFunc(2*time.Minute, func() { crashChildDie("not killed after 2 minutes") })
	say := func(format string, args ...any) {
		if _, err := fmt.Fprintf(os.Stdout, format+"\n", args...); err != nil {
			crashChildDie("write stdout: %v", err)
		}
	}
	fail := func(what string, err error) {
		if err != nil {
			crashChildDie("%s: %v", what, err)
		}
	}
	say("opening")
	m, err := OpenManager(txnCrashConfig(dir))
	fail("open manager", err)
	l, err := m.GetOrCreate(TopicPartition{Topic: txnCrashTopic, Partition: 0}, txnCrashConfig(dir).Log)
	fail("create partition", err)
	ctx := context.Background()
	flush := func(res AppendResult) {
		fail("flush", l.Flush(ctx, res.LastOffset+1))
	}
	say("ready")
	// A coordinator aborts what the killed children left open.
	for c := 1; c < cycle; c++ {
		for k := range txnCrashProds {
			pid := txnCrashPID(c, k)
			if _, ok := l.OngoingTxn(pid); !ok {
				continue
			}
			res, err := l.AppendTxnMarker(TxnMarker{ProducerID: pid, CoordinatorEpoch: int32(cycle)}, 0)
			fail("abort a dead child's transaction", err)
			flush(res)
			say("marker %d %d abort", pid, res.FirstOffset)
		}
	}
	rng := rand.New(rand.NewPCG(uint64(cycle), 7))
	var seq [txnCrashProds]int32
	var open [txnCrashProds]bool
	for i := 0; ; i++ {
		k := rng.IntN(txnCrashProds)
		pid := txnCrashPID(cycle, k)
		if open[k] && rng.IntN(4) == 0 {
			commit := rng.IntN(2) == 0
			res, err := l.AppendTxnMarker(TxnMarker{ProducerID: pid, CoordinatorEpoch: int32(cycle), Commit: commit}, 0)
			fail("append marker", err)
			flush(res)
			open[k] = false
			kind := "abort"
			if commit {
				kind = "commit"
			}
			say("marker %d %d %s", pid, res.FirstOffset, kind)
			continue
		}
		n := 1 + rng.IntN(6)
		recs := make([]record.Record, n)
		for j := range recs {
			recs[j] = record.Record{OffsetDelta: int32(j), TimestampDelta: int64(j),
				Key: []byte(fmt.Sprintf("k%d", rng.IntN(50))), Value: bytes.Repeat([]byte{byte(i)}, 20+rng.IntN(200))}
		}
		b, err := record.Build(nil, record.BatchHeader{Transactional: true, BaseTimestamp: time.Now().UnixMilli(),
			ProducerID: pid, BaseSequence: seq[k]}, recs)
		fail("build batch", err)
		res, err := l.Append(b, AppendOptions{AssignOffsets: true})
		fail("append", err)
		flush(res)
		seq[k] += int32(n)
		open[k] = true
		say("data %d %d %d", pid, res.FirstOffset, res.LastOffset)
	}
}

// txnAck is a batch or marker a child acknowledged.
type txnAck struct {
	marker      bool
	commit      bool
	pid         int64
	first, last int64
}

func parseTxnAck(line string) (txnAck, bool) {
	var a txnAck
	var kind string
	if _, err := fmt.Sscanf(line, "data %d %d %d", &a.pid, &a.first, &a.last); err == nil {
		return a, true
	}
	if _, err := fmt.Sscanf(line, "marker %d %d %s", &a.pid, &a.first, &kind); err == nil {
		a.marker, a.commit, a.last = true, kind == "commit", a.first
		return a, true
	}
	return a, false
}

// runTxnCrashChild starts a child on dir, kills it after delay from its
// "ready" (or its "opening" when duringOpen), and returns its acks.
func runTxnCrashChild(t *testing.T, dir string, cycle int, delay time.Duration, duringOpen bool) []txnAck {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestTxnCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), txnCrashDirEnv+"="+dir, txnCrashCycleEnv+"="+strconv.Itoa(cycle))
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
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	opening, ready, eof := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var acks []txnAck
	go func() {
		defer close(eof)
		r := bufio.NewReader(stdout)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return // a line the kill cut short was not acknowledged
			}
			line = strings.TrimSuffix(line, "\n")
			switch line {
			case "opening":
				close(opening)
			case "ready":
				close(ready)
			default:
				if a, ok := parseTxnAck(line); ok {
					acks = append(acks, a)
				}
			}
		}
	}()
	start := ready
	if duringOpen {
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
	time.Sleep(delay) // the random moment of the kill
	if err := cmd.Process.Kill(); err != nil {
		t.Fatalf("cycle %d: kill child: %v", cycle, err)
	}
	<-eof
	err = cmd.Wait()
	killed = true
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("cycle %d: child ended with %v, want killed by SIGKILL; stderr:\n%s", cycle, err, stderr.String())
	}
	return acks
}

// txnReplay is what a replay of a log's batches from its start says.
type txnReplay struct {
	aborted []AbortedTxn
	ongoing map[int64]int64
}

func replayTxns(t *testing.T, batches []record.Batch) txnReplay {
	t.Helper()
	ps := newProducerState()
	var r txnReplay
	for _, b := range batches {
		if b.ProducerID() < 0 {
			continue
		}
		var m *record.EndTxnMarker
		if b.Control() {
			_, mk, ok, err := record.ParseControl(b)
			if err != nil {
				t.Fatalf("control batch at %d: %v", b.BaseOffset(), err)
			}
			if ok {
				m = &mk
			}
		}
		if done := ps.apply(b, m); done != nil && done.aborted {
			r.aborted = append(r.aborted, AbortedTxn{done.pid, done.first, done.last, ps.stableAfter(done)})
		}
	}
	r.ongoing = ps.ongoing
	return r
}

// checkTxnLog checks l against the acks and a replay of its batches.
func checkTxnLog(t *testing.T, l *Log, acks []txnAck, cycle int, when string) {
	t.Helper()
	l.SetHighWatermark(l.LogEndOffset())
	got := readAll(t, l, l.LogStartOffset(), 0)
	byBase := map[int64]record.Batch{}
	for _, b := range got {
		byBase[b.BaseOffset()] = b
	}
	for _, a := range acks {
		b, ok := byBase[a.first]
		if !ok || b.LastOffset() != a.last || b.ProducerID() != a.pid || b.Control() != a.marker {
			t.Fatalf("cycle %d %s: acknowledged %+v missing (found %v)", cycle, when, a, ok)
		}
		if a.marker {
			_, m, ok, err := record.ParseControl(b)
			if err != nil || !ok || m.Commit != a.commit {
				t.Fatalf("cycle %d %s: marker at %d: %+v %v %v, want commit %v", cycle, when, a.first, m, ok, err, a.commit)
			}
		}
	}
	want := replayTxns(t, got)
	aborted, err := l.AbortedTransactions(l.LogStartOffset(), l.LogEndOffset())
	if err != nil {
		t.Fatalf("cycle %d %s: aborted transactions: %v", cycle, when, err)
	}
	if len(aborted)+len(want.aborted) > 0 && !reflect.DeepEqual(aborted, want.aborted) {
		t.Fatalf("cycle %d %s: aborted transactions\n%+v\nwant (a replay of the log)\n%+v", cycle, when, aborted, want.aborted)
	}
	wantLSO := l.LogEndOffset()
	for _, o := range want.ongoing {
		wantLSO = min(wantLSO, o)
	}
	if lso := l.LastStableOffset(); lso != wantLSO {
		t.Fatalf("cycle %d %s: last stable offset %d, want %d (open: %v)", cycle, when, lso, wantLSO, want.ongoing)
	}
	for c := 1; c <= cycle; c++ {
		for k := range txnCrashProds {
			pid := txnCrashPID(c, k)
			first, ok := l.OngoingTxn(pid)
			wfirst, wok := want.ongoing[pid]
			if ok != wok || first != wfirst {
				t.Fatalf("cycle %d %s: producer %d open transaction %d %v, want %d %v", cycle, when, pid, first, ok, wfirst, wok)
			}
		}
	}
	// Every abort marker among the batches has its entry.
	n := 0
	for _, b := range got {
		if b.Control() && b.ProducerID() >= 0 {
			if _, m, ok, _ := record.ParseControl(b); ok && !m.Commit {
				n++
			}
		}
	}
	if n < len(want.aborted) {
		t.Fatalf("cycle %d %s: %d abort markers, %d aborted transactions", cycle, when, n, len(want.aborted))
	}
}

func TestTxnCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the transaction crash test kills a child process many times")
	}
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(crashSeedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", crashSeedEnv, s, err)
		}
	}
	t.Logf("seed %d (rerun with %s=%d)", seed, crashSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "data")
	var acks []txnAck
	markers := 0
	for cycle := 1; cycle <= txnCrashCycles; cycle++ {
		delay, duringOpen := time.Duration(20+rng.IntN(200))*time.Millisecond, false
		if rng.IntN(5) == 0 {
			delay, duringOpen = time.Duration(rng.IntN(30))*time.Millisecond, true
		}
		acks = append(acks, runTxnCrashChild(t, dir, cycle, delay, duringOpen)...)
		checkDir := dir
		if rng.IntN(2) == 0 {
			checkDir = filepath.Join(tmp, "copy")
			if err := copyTree(dir, checkDir); err != nil {
				t.Fatalf("copy the data dir: %v", err)
			}
		}
		m, err := OpenManager(txnCrashConfig(checkDir))
		if err != nil {
			t.Fatalf("cycle %d: open after kill: %v", cycle, err)
		}
		if l, ok := m.Get(TopicPartition{Topic: txnCrashTopic, Partition: 0}); ok {
			checkTxnLog(t, l, acks, cycle, "recovered")
		} else if len(acks) > 0 {
			t.Fatalf("cycle %d: partition gone with %d acknowledged appends", cycle, len(acks))
		}
		if err := m.Close(); err != nil {
			t.Fatalf("cycle %d: close: %v", cycle, err)
		}
		// A clean open reads the txn indexes and the snapshot Close wrote.
		m, err = OpenManager(txnCrashConfig(checkDir))
		if err != nil {
			t.Fatalf("cycle %d: clean open: %v", cycle, err)
		}
		if l, ok := m.Get(TopicPartition{Topic: txnCrashTopic, Partition: 0}); ok {
			checkTxnLog(t, l, acks, cycle, "clean reopen")
		}
		if err := m.Close(); err != nil {
			t.Fatalf("cycle %d: close: %v", cycle, err)
		}
		if checkDir != dir {
			if err := os.RemoveAll(checkDir); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, a := range acks {
		if a.marker {
			markers++
		}
	}
	t.Logf("%d cycles: %d acknowledged appends, %d of them markers", txnCrashCycles, len(acks), markers)
	if markers == 0 {
		t.Fatal("no marker was acknowledged in any cycle")
	}
}
