package storage

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gregor-io/gregor/protocol/record"
)

// The truncation crash test: the parent builds a log of several small
// segments, written by a leader over several leader epochs (some batches
// from an idempotent producer), and closes it. A child process (this test
// binary running TestTruncateCrashChild) opens the dir and runs a plan of
// steps the parent drew, each what a follower does: TruncateTo an offset
// inside an earlier segment, TruncateFullyAndStartAt an offset above the
// log end, or DeleteBelow an offset, then append the new leader's batches
// (a new, higher epoch, offsets kept) and flush them. It prints "cut <i>"
// once step i's cut returned and "done <i>" once its batches are flushed.
// The parent kills the child with SIGKILL at a random moment (a few cycles
// it is not killed), reopens the dir and checks that the log is one the
// plan can leave at that moment: every batch passes its checks and is one
// the parent or the child wrote, at its offset, byte for byte, and the
// batches form one unbroken run of a state the plan passes through (before
// the step under way, part way through its cut, or after the cut with some
// of its batches); the log start is never above what the plan set and the
// first batch read holds it; the epoch history agrees with the batches; no
// .deleted, .cleaned, .swap or .tmp file and no index without its segment
// is left.
//
// A seed is logged; GREGOR_TRUNCATE_CRASH_SEED=<seed> repeats the plans and
// the kill delays (the moments still depend on the child's timing).

const (
	truncCrashDirEnv    = "GREGOR_TRUNCATE_CRASH_CHILD"
	truncCrashPlanEnv   = "GREGOR_TRUNCATE_CRASH_PLAN"
	truncCrashSeedEnv   = "GREGOR_TRUNCATE_CRASH_SEED"
	truncCrashCyclesEnv = "GREGOR_TRUNCATE_CRASH_CYCLES"
	truncCrashCycles    = 30
)

var truncCrashTP = TopicPartition{Topic: "follower", Partition: 0}

func truncCrashManagerConfig(dir string) ManagerConfig {
	cfg := DefaultManagerConfig(dir)
	cfg.Log = DefaultConfig()
	cfg.Log.SegmentBytes = 64 << 10
	cfg.Log.IndexIntervalBytes = 1024
	cfg.CleanerEnable = false
	cfg.RetentionCheckInterval = time.Hour
	cfg.CheckpointInterval = time.Hour
	return cfg
}

// truncStep is one step of a child's plan: a cut (mode 't' TruncateTo,
// 'f' TruncateFullyAndStartAt, 'd' DeleteBelow at arg), after which the
// log must end at leo and start at start, then count batches of epoch
// appended with their offsets from leo on.
type truncStep struct {
	mode       byte
	arg        int64
	leo, start int64
	epoch      int32
	count      int
}

func (s truncStep) String() string {
	return fmt.Sprintf("%c:%d:%d:%d:%d:%d", s.mode, s.arg, s.leo, s.start, s.epoch, s.count)
}

func parseTruncPlan(plan string) ([]truncStep, error) {
	var steps []truncStep
	for _, f := range strings.Split(plan, ",") {
		var s truncStep
		if _, err := fmt.Sscanf(f, "%c:%d:%d:%d:%d:%d", &s.mode, &s.arg, &s.leo, &s.start, &s.epoch, &s.count); err != nil {
			return nil, fmt.Errorf("bad step %q: %w", f, err)
		}
		steps = append(steps, s)
	}
	return steps, nil
}

// truncNewBatch is batch k of step i of a plan, at base offset base: the
// child appends it, the parent recognises it, both build it from these
// numbers alone. Every third comes from an idempotent producer.
func truncNewBatch(i, k int, base int64, epoch int32) ([]byte, error) {
	h := splitmix64(uint64(i)<<32 | uint64(k))
	n := 1 + int(h%6)
	size := 40 + int(h>>8%700)
	recs := make([]record.Record, n)
	for j := range recs {
		v := make([]byte, size)
		for x := range v {
			v[x] = byte(h>>(x%8*8)) ^ byte(x) ^ byte(j)
		}
		recs[j] = record.Record{OffsetDelta: int32(j), TimestampDelta: int64(j), Key: []byte(fmt.Sprintf("s%d-%d-%d", i, k, j)), Value: v}
	}
	hdr := record.BatchHeader{BaseOffset: base, PartitionLeaderEpoch: epoch, BaseTimestamp: 1_700_000_000_000 + int64(i)*1000 + int64(k),
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	if k%3 == 2 {
		hdr.ProducerID, hdr.ProducerEpoch, hdr.BaseSequence = 9000+int64(i), 0, int32(k*10)
	}
	return record.Build(nil, hdr, recs)
}

// TestTruncateCrashChild is the child of TestTruncateCrash; on its own it
// skips. It runs the plan and exits without closing.
func TestTruncateCrashChild(t *testing.T) {
	dir := os.Getenv(truncCrashDirEnv)
	if dir == "" {
		t.Skip("run by TestTruncateCrash")
	}
	die := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "truncate crash child: "+format+"\n", args...)
		os.Exit(2)
	}
	time.AfterFunc(2*time.Minute, func() { die("still running after 2 minutes") })
	steps, err := parseTruncPlan(os.Getenv(truncCrashPlanEnv))
	if err != nil {
		die("%v", err)
	}
	say := func(line string) {
		if _, err := os.Stdout.WriteString(line + "\n"); err != nil {
			die("write stdout: %v", err)
		}
	}
	m, err := OpenManager(truncCrashManagerConfig(dir))
	if err != nil {
		die("open: %v", err)
	}
	l, ok := m.Get(truncCrashTP)
	if !ok {
		die("no log %s", truncCrashTP)
	}
	say("open")
	for i, s := range steps {
		switch s.mode {
		case 't':
			err = l.TruncateTo(s.arg)
		case 'f':
			err = l.TruncateFullyAndStartAt(s.arg)
		case 'd':
			err = l.DeleteBelow(s.arg)
		}
		if err != nil {
			die("step %d %v: %v", i, s, err)
		}
		if l.LogEndOffset() != s.leo || l.LogStartOffset() != s.start {
			die("step %d %v: log [%d, %d) after the cut, want [%d, %d)", i, s, l.LogStartOffset(), l.LogEndOffset(), s.start, s.leo)
		}
		say("cut " + strconv.Itoa(i))
		for k := range s.count {
			b, err := truncNewBatch(i, k, l.LogEndOffset(), s.epoch)
			if err != nil {
				die("build: %v", err)
			}
			if _, err := l.Append(b, AppendOptions{}); err != nil {
				die("step %d: append %d: %v", i, k, err)
			}
		}
		if err := l.Flush(context.Background(), l.LogEndOffset()); err != nil {
			die("step %d: flush: %v", i, err)
		}
		say("done " + strconv.Itoa(i))
	}
	os.Exit(0)
}

// truncBatch is a batch the parent or a child wrote.
type truncBatch struct {
	base, last int64
	epoch      int32
	data       []byte
}

// truncState is a state of the log a plan passes through: all is every
// batch its segments may still hold (DeleteBelow moves start, but the
// batches below it go only with their segment), start its log start.
type truncState struct {
	all   []truncBatch
	start int64
}

func (s truncState) end() int64 {
	if len(s.all) == 0 {
		return s.start
	}
	return s.all[len(s.all)-1].last + 1
}

// firstAt is the index of the first batch of all ending at or above o.
func (s truncState) firstAt(o int64) int {
	for i, b := range s.all {
		if b.last >= o {
			return i
		}
	}
	return len(s.all)
}

// truncPlanned is a drawn plan with the states it passes through: pre[i]
// before step i's cut, cut[i] after it, news[i] the batches step i appends.
type truncPlanned struct {
	steps []truncStep
	pre   []truncState
	cut   []truncState
	news  [][]truncBatch
	final truncState
}

func drawTruncPlan(t *testing.T, rng *rand.Rand, orig truncState, epoch int32) truncPlanned {
	t.Helper()
	var p truncPlanned
	st := orig
	for i := range 3 + rng.IntN(4) {
		s := truncStep{count: 10 + rng.IntN(40)}
		epoch += 1 + int32(rng.IntN(2))
		s.epoch = epoch
		cut := truncState{start: st.start}
		// Batches starting above the log start: TruncateTo one of them
		// (or inside it) cuts it and what follows.
		first := st.firstAt(st.start + 1)
		if first < len(st.all) && st.all[first].base <= st.start {
			first++
		}
		mode := "tttffdd"[rng.IntN(7)]
		if mode == 't' && first >= len(st.all) || mode == 'd' && st.start >= st.end() {
			mode = 'f'
		}
		switch mode {
		case 't':
			// Earlier segments more often: within the older two thirds.
			n := len(st.all) - first
			j := first + rng.IntN(max(n*2/3, 1))
			b := st.all[j]
			s.arg = b.base + rng.Int64N(b.last-b.base+1)
			cut.all = st.all[:j:j]
		case 'f':
			s.arg = st.end() + 1 + rng.Int64N(3000)
			cut.start = s.arg
		case 'd':
			s.arg = st.start + 1 + rng.Int64N(st.end()-st.start)
			cut.all = st.all[:len(st.all):len(st.all)]
			cut.start = s.arg
		}
		s.mode = mode
		s.leo = cut.end()
		s.start = cut.start
		var news []truncBatch
		next := s.leo
		for k := range s.count {
			data, err := truncNewBatch(i, k, next, s.epoch)
			if err != nil {
				t.Fatal(err)
			}
			b := record.Batch(data)
			news = append(news, truncBatch{base: b.BaseOffset(), last: b.LastOffset(), epoch: s.epoch, data: data})
			next = b.NextOffset()
		}
		p.steps = append(p.steps, s)
		p.pre = append(p.pre, st)
		p.cut = append(p.cut, cut)
		p.news = append(p.news, news)
		st = truncState{all: append(cut.all, news...), start: cut.start}
	}
	p.final = st
	return p
}

func (p truncPlanned) plan() string {
	var parts []string
	for _, s := range p.steps {
		parts = append(parts, s.String())
	}
	return strings.Join(parts, ",")
}

func TestTruncateCrash(t *testing.T) {
	if os.Getenv(truncCrashDirEnv) != "" {
		t.Skip("in the child")
	}
	cycles := truncCrashCycles
	if s := os.Getenv(truncCrashCyclesEnv); s != "" {
		cycles, _ = strconv.Atoi(s)
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(truncCrashSeedEnv); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (%s=%d repeats it)", seed, truncCrashSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	root := t.TempDir()
	var full time.Duration // the longest an unkilled child took after "open"
	killed := 0
	landed, states := map[string]int{}, map[string]int{}
	noEpoch := 0
	for cycle := range cycles {
		dir := filepath.Join(root, strconv.Itoa(cycle))
		orig, epoch := buildTruncCrashLog(t, rng, dir)
		p := drawTruncPlan(t, rng, orig, epoch)

		// Cycle 0 and a few more run to the end; the others are killed
		// after a delay drawn from the child's "open", or (a few) from
		// its start, while it opens the dir.
		var delay time.Duration
		fromStart := false
		switch r := rng.IntN(10); {
		case cycle == 0 || r == 0:
			delay = -1
		case r == 1:
			fromStart = true
			delay = time.Duration(rng.Int64N(int64(200 * time.Millisecond)))
		default:
			delay = time.Duration(rng.Int64N(int64(full) + 1))
		}
		last, wasKilled, took := runTruncCrashChild(t, dir, p.plan(), delay, fromStart)
		if delay < 0 {
			full = max(full, took)
			t.Logf("cycle %d: an unkilled child ran its %d steps in %v", cycle, len(p.steps), took)
		}
		if wasKilled {
			killed++
			landed[last]++
		} else if last != fmt.Sprintf("done %d", len(p.steps)-1) {
			t.Fatalf("cycle %d: the child exited after %q", cycle, last)
		}
		kind, unknown := checkTruncCrash(t, dir, p, last, fmt.Sprintf("cycle %d (plan %s, killed after %q)", cycle, p.plan(), last))
		if wasKilled {
			states[kind]++
		}
		if unknown {
			noEpoch++
			t.Logf("cycle %d: batches below the history's first epoch, above a log start that went back after DeleteBelow", cycle)
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d cycles, %d kills; last line before the kill: %v; state found: %v; cycles with batches of no epoch: %d",
		cycles, killed, landed, states, noEpoch)
}

// buildTruncCrashLog writes the leader's log the child starts from: about
// six segments over four epochs, an idempotent producer's batches among
// them, closed cleanly. It returns the batches and the last epoch.
func buildTruncCrashLog(t *testing.T, rng *rand.Rand, dir string) (truncState, int32) {
	t.Helper()
	m, err := OpenManager(truncCrashManagerConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.GetOrCreate(truncCrashTP, truncCrashManagerConfig(dir).Log)
	if err != nil {
		t.Fatal(err)
	}
	var st truncState
	epoch := int32(rng.IntN(3))
	var seq int32
	for e := 0; e < 4; e++ {
		epoch += 1 + int32(rng.IntN(2))
		if err := l.AssignEpoch(epoch); err != nil {
			t.Fatal(err)
		}
		for range 60 + rng.IntN(60) {
			n := 1 + rng.IntN(8)
			recs := make([]record.Record, n)
			for j := range recs {
				v := make([]byte, 30+rng.IntN(400))
				for x := range v {
					v[x] = byte(rng.Uint32())
				}
				recs[j] = record.Record{OffsetDelta: int32(j), TimestampDelta: int64(j), Value: v}
			}
			hdr := record.BatchHeader{BaseTimestamp: 1_600_000_000_000 + l.LogEndOffset(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
			if rng.IntN(3) == 0 {
				hdr.ProducerID, hdr.ProducerEpoch, hdr.BaseSequence = 77, 0, seq
				seq += int32(n)
			}
			data, err := record.Build(nil, hdr, recs)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Append(data, AppendOptions{AssignOffsets: true, LeaderEpoch: epoch}); err != nil {
				t.Fatal(err)
			}
			b := record.Batch(data) // Append set its offset and epoch
			st.all = append(st.all, truncBatch{base: b.BaseOffset(), last: b.LastOffset(), epoch: epoch, data: data})
		}
	}
	if l.SegmentCount() < 4 {
		t.Fatalf("the leader's log has %d segments, want several", l.SegmentCount())
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	return st, epoch
}

// runTruncCrashChild runs a child on dir with plan and kills it delay after
// it says "open" (from its start with fromStart; a negative delay: never).
// It returns the last line the child printed, whether it was killed, and
// how long after "open" it printed that line.
func runTruncCrashChild(t *testing.T, dir, plan string, delay time.Duration, fromStart bool) (last string, killed bool, took time.Duration) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestTruncateCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), truncCrashDirEnv+"="+dir, truncCrashPlanEnv+"="+plan)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	kill := func() { cmd.Process.Signal(syscall.SIGKILL) } //nolint:errcheck // it may have exited
	var timer *time.Timer
	if delay >= 0 && fromStart {
		// The kill moment is drawn, not awaited: this is where the
		// child dies, not a synchronisation.
		timer = time.AfterFunc(delay, kill)
	}
	var opened time.Time
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "open":
			opened = time.Now()
			if delay >= 0 && !fromStart {
				timer = time.AfterFunc(delay, kill)
			}
			last = line
		case strings.HasPrefix(line, "cut "), strings.HasPrefix(line, "done "):
			last = line
			took = time.Since(opened)
		}
	}
	err = cmd.Wait()
	if timer != nil {
		timer.Stop()
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() {
			return last, true, took
		}
		t.Fatalf("child: %v: %s", err, stderr.String())
	}
	return last, false, took
}

// truncCandidate is a log the plan may leave: a run of all's batches
// starting at the one holding a log start at most start, and ending
// between endMin and endMax batches (inclusive); with anyFirst the run
// may start at any batch (segments deleted oldest first).
type truncCandidate struct {
	name, kind     string
	all            []truncBatch
	start          int64
	endMin, endMax int
	anyFirst       bool
}

// truncCandidates lists the logs a child may leave when its last line
// was last.
func truncCandidates(p truncPlanned, last string) []truncCandidate {
	exact := func(name string, s truncState) truncCandidate {
		return truncCandidate{name: name, kind: "before a step", all: s.all, start: s.start, endMin: len(s.all), endMax: len(s.all)}
	}
	withNews := func(i int) []truncCandidate {
		all := append(p.cut[i].all[:len(p.cut[i].all):len(p.cut[i].all)], p.news[i]...)
		c := truncCandidate{name: fmt.Sprintf("after cut %d with some of its batches", i), kind: "after a cut", all: all, start: p.cut[i].start,
			endMin: len(p.cut[i].all), endMax: len(all)}
		return []truncCandidate{c}
	}
	var mode string
	var i int
	if last == "" || last == "open" {
		i = 0
	} else if _, err := fmt.Sscanf(last, "%s %d", &mode, &i); err == nil && mode == "done" {
		i++
	} else if mode == "cut" {
		return withNews(i)
	}
	if i == len(p.steps) {
		c := exact("the final state", p.final)
		c.kind = "final"
		return []truncCandidate{c}
	}
	pre, cut := p.pre[i], p.cut[i]
	cs := []truncCandidate{exact(fmt.Sprintf("before step %d", i), pre)}
	within := "within " + map[byte]string{'t': "TruncateTo", 'f': "TruncateFullyAndStartAt", 'd': "DeleteBelow"}[p.steps[i].mode]
	switch p.steps[i].mode {
	case 't':
		cs = append(cs, truncCandidate{name: fmt.Sprintf("part way through TruncateTo(%d)", p.steps[i].arg), kind: within,
			all: pre.all, start: pre.start, endMin: len(cut.all), endMax: len(pre.all)})
	case 'f':
		// Its segments go newest first: a shorter log.
		cs = append(cs, truncCandidate{name: fmt.Sprintf("part way through TruncateFullyAndStartAt(%d)", p.steps[i].arg), kind: within,
			all: pre.all, start: pre.start, endMin: 0, endMax: len(pre.all)})
	case 'd':
		cs = append(cs, truncCandidate{name: fmt.Sprintf("part way through DeleteBelow(%d)", p.steps[i].arg), kind: within,
			all: pre.all, start: p.steps[i].arg, endMin: len(pre.all), endMax: len(pre.all), anyFirst: true})
	}
	return append(cs, withNews(i)...)
}

// match reports why the batches got, read from the log start ls of a log
// ending at leo, are not this candidate's, or "".
func (c truncCandidate) match(got []record.Batch, ls, leo int64) string {
	if ls > c.start {
		return fmt.Sprintf("log start %d above %d", ls, c.start)
	}
	if len(got) == 0 {
		// An empty log: everything of all that ends at or above ls is
		// gone, as a cut at or below ls leaves, or a deletion under way.
		if ls != leo {
			return fmt.Sprintf("no batch read from %d, log end %d", ls, leo)
		}
		if f := (truncState{all: c.all}).firstAt(ls); !c.anyFirst && c.endMin > 0 && (f < c.endMin || f > c.endMax) {
			return fmt.Sprintf("empty from %d, but its batches %d to %d (of %d) remain", ls, f, c.endMin, len(c.all))
		}
		return ""
	}
	a := -1
	for i, b := range c.all {
		if b.base == got[0].BaseOffset() {
			a = i
			break
		}
	}
	if a < 0 {
		return fmt.Sprintf("first batch at %d is none of its batches", got[0].BaseOffset())
	}
	if got[0].BaseOffset() > ls || got[0].LastOffset() < ls {
		return fmt.Sprintf("first batch [%d, %d] does not hold the log start %d", got[0].BaseOffset(), got[0].LastOffset(), ls)
	}
	end := a + len(got)
	if end > len(c.all) {
		return fmt.Sprintf("%d batches from batch %d, only %d there", len(got), a, len(c.all)-a)
	}
	for k, g := range got {
		if w := c.all[a+k]; !bytes.Equal(g, w.data) {
			return fmt.Sprintf("batch at %d (epoch %d) is not its batch at %d (epoch %d)", g.BaseOffset(), g.PartitionLeaderEpoch(), w.base, w.epoch)
		}
	}
	if end < c.endMin || end > c.endMax {
		return fmt.Sprintf("ends after its batch %d (offset %d), want between %d and %d", end, c.all[end-1].last, c.endMin, c.endMax)
	}
	if got[len(got)-1].NextOffset() != leo {
		return fmt.Sprintf("last batch ends at %d, log end %d", got[len(got)-1].NextOffset(), leo)
	}
	return ""
}

// checkTruncCrash reopens dir after a child and checks the log against the
// states the plan may have left it in, its epoch history and its files.
func checkTruncCrash(t *testing.T, dir string, p truncPlanned, last, where string) (kind string, unknownEpoch bool) {
	t.Helper()
	m, err := OpenManager(truncCrashManagerConfig(dir))
	if err != nil {
		t.Fatalf("%s: reopen: %v", where, err)
	}
	defer m.Close()
	l, ok := m.Get(truncCrashTP)
	if !ok {
		t.Fatalf("%s: the log is gone", where)
	}
	ents, err := os.ReadDir(l.Dir())
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, e := range ents {
		names[e.Name()] = true
	}
	for n := range names {
		for _, suf := range []string{deletedSuffix, cleanedSuffix, swapSuffix, ".tmp"} {
			if strings.HasSuffix(n, suf) {
				t.Errorf("%s: %s left after open", where, n)
			}
		}
		for _, suf := range []string{indexSuffix, timeIndexSuffix} {
			if base, ok := strings.CutSuffix(n, suf); ok && !names[base+logSuffix] {
				t.Errorf("%s: %s left without its segment", where, n)
			}
		}
	}

	ls, leo := l.LogStartOffset(), l.LogEndOffset()
	got := readAll(t, l, ls, 0)
	var why []string
	for _, c := range truncCandidates(p, last) {
		w := c.match(got, ls, leo)
		if w == "" {
			w = c.epochMismatch(l, p, got, ls, leo)
		}
		if w != "" {
			why = append(why, c.name+": "+w)
			continue
		}
		return c.kind, unknownEpochs(l, got, ls)
	}
	var have []string
	for _, b := range got {
		have = append(have, fmt.Sprintf("[%d,%d]e%d", b.BaseOffset(), b.LastOffset(), b.PartitionLeaderEpoch()))
	}
	t.Fatalf("%s: the log [%d, %d) is no state the plan may leave:\n  %s\nbatches: %s\nepoch history: %v", where, ls, leo,
		strings.Join(why, "\n  "), strings.Join(have, " "), l.epochs.snapshot())
	return "", false
}

// epochMismatch says how the log's epoch history disagrees with the
// batches got, read from ls, if c is the state the log is in, or "". A
// batch has its epoch at its first offset at or above ls, except below the
// start c sets: there the log start went back (a DeleteBelow's log start
// is checkpointed later, by the Manager, while the epoch history moved up
// with it at once), and the batches below the history's first epoch have
// none (-1).
func (c truncCandidate) epochMismatch(l *Log, p truncPlanned, got []record.Batch, ls, leo int64) string {
	es := l.epochs.snapshot()
	for _, e := range es {
		if e.start > leo {
			return fmt.Sprintf("epoch %d starts at %d, above the log end %d", e.epoch, e.start, leo)
		}
	}
	for _, b := range got {
		o := max(b.BaseOffset(), ls)
		e := l.EpochForOffset(o)
		if e != b.PartitionLeaderEpoch() && (o >= c.start || e != -1) {
			return fmt.Sprintf("EpochForOffset(%d) = %d, the batch [%d, %d] has epoch %d", o, e, b.BaseOffset(), b.LastOffset(), b.PartitionLeaderEpoch())
		}
	}
	maxEpoch := p.steps[len(p.steps)-1].epoch
	if n := len(got); n > 0 {
		if le := l.LatestEpoch(); le < got[n-1].PartitionLeaderEpoch() || le > maxEpoch {
			return fmt.Sprintf("latest epoch %d, the last batch's %d, the plan's newest %d", le, got[n-1].PartitionLeaderEpoch(), maxEpoch)
		}
	}
	return ""
}

// unknownEpochs reports whether a batch read has no epoch in the history
// (EpochForOffset -1) though it carries one: see epochMismatch.
func unknownEpochs(l *Log, got []record.Batch, ls int64) bool {
	for _, b := range got {
		if l.EpochForOffset(max(b.BaseOffset(), ls)) == -1 && b.PartitionLeaderEpoch() >= 0 {
			return true
		}
	}
	return false
}

// TestTruncateKilledAtEveryStep takes the files as a kill -9 leaves them
// after each step of a TruncateTo that removes several segments, and of a
// TruncateFullyAndStartAt, and checks that each reopens as a prefix of the
// log, with no hole: the segments go newest first. Removed oldest first, a
// kill after the first removal left the divergent segments above a hole
// (TestTruncateCrash found it: seed 1796372722019103296, cycle 83).
func TestTruncateKilledAtEveryStep(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	orig, _ := buildTruncCrashLog(t, rand.New(rand.NewPCG(1, 2)), base)
	// A cut inside the second segment's batches removes all later ones.
	segs, _ := filepath.Glob(filepath.Join(base, truncCrashTP.DirName(), "*"+logSuffix))
	second, _ := parseSegmentName(filepath.Base(segs[1]), logSuffix)
	cutAt := orig.firstAt(second + 3)
	ops := map[string]func(l *Log) error{
		"TruncateTo":              func(l *Log) error { return l.TruncateTo(orig.all[cutAt].base) },
		"TruncateFullyAndStartAt": func(l *Log) error { return l.TruncateFullyAndStartAt(orig.end() + 100) },
	}
	for name, op := range ops {
		run := func(at func(dir string)) int {
			t.Helper()
			dir := filepath.Join(t.TempDir(), "data")
			if err := copyTree(base, dir); err != nil {
				t.Fatal(err)
			}
			m, err := OpenManager(truncCrashManagerConfig(dir))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			l, _ := m.Get(truncCrashTP)
			n := 0
			l.stepHook = func(step string) {
				if step == "segment removed" {
					at(dir)
					n++
				}
			}
			if err := op(l); err != nil {
				t.Fatal(err)
			}
			return n
		}
		steps := run(func(string) {})
		if steps < 3 {
			t.Fatalf("%s removed %d segments, want several", name, steps)
		}
		for k := range steps {
			var snap string
			i := 0
			run(func(dir string) {
				if i == k {
					snap = killCopy(t, dir)
				}
				i++
			})
			func() {
				m, err := OpenManager(truncCrashManagerConfig(snap))
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				l, _ := m.Get(truncCrashTP)
				got := readAll(t, l, l.LogStartOffset(), 0)
				if l.LogStartOffset() != 0 {
					t.Fatalf("%s killed after removing %d segments: log start %d, want 0", name, k+1, l.LogStartOffset())
				}
				for j, b := range got {
					if j >= len(orig.all) || !bytes.Equal(b, orig.all[j].data) {
						t.Fatalf("%s killed after removing %d segments: batch %d at %d is not the log's batch %d at %d: not a prefix of the log",
							name, k+1, j, b.BaseOffset(), j, orig.all[min(j, len(orig.all)-1)].base)
					}
				}
				if name == "TruncateTo" && len(got) < cutAt {
					t.Fatalf("%s killed after removing %d segments: %d batches left, want at least %d", name, k+1, len(got), cutAt)
				}
			}()
		}
	}
}
