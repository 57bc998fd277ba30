package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gregor-io/gregor/protocol/record"
)

// twoDirs returns a parent temp dir holding log dirs "a" and "b" and a
// Manager on them.
func twoDirs(t *testing.T) (string, *Manager) {
	t.Helper()
	parent := t.TempDir()
	m, err := OpenManager(DefaultManagerConfig(filepath.Join(parent, "a"), filepath.Join(parent, "b")))
	if err != nil {
		t.Fatal(err)
	}
	return parent, m
}

func openTwo(parent string) (*Manager, error) {
	return OpenManager(DefaultManagerConfig(filepath.Join(parent, "a"), filepath.Join(parent, "b")))
}

// killCopyTwo is killCopy for a parent of two log dirs.
func killCopyTwo(t *testing.T, parent string) string {
	t.Helper()
	snap := filepath.Join(t.TempDir(), "after-kill")
	if err := copyTree(parent, snap); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"a", "b"} {
		if err := os.Remove(filepath.Join(snap, d, dirLockFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	return snap
}

// createIn creates tp's log in the log dir at path.
func createIn(t *testing.T, m *Manager, tp TopicPartition, path string) *Log {
	t.Helper()
	if err := m.SetPreferredDir(tp, path); err != nil {
		t.Fatal(err)
	}
	l, err := m.Create(tp, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := m.LogDir(tp); d != path {
		t.Fatalf("created in %s, want %s (the preferred dir)", d, path)
	}
	return l
}

func appendN(t *testing.T, l *Log, n int, tag uint64) {
	t.Helper()
	for i := range n {
		if _, err := l.Append(makeBatch(t, 5, 200, int64(i+1), tag+uint64(i), 0), AppendOptions{AssignOffsets: true, LeaderEpoch: 3}); err != nil {
			t.Fatal(err)
		}
	}
}

// copyAll runs CopyToFuture until the future log has caught up.
func copyAll(t *testing.T, m *Manager, tp TopicPartition) {
	t.Helper()
	for range 10000 {
		_, lag, err := m.CopyToFuture(tp, 4<<10)
		if err != nil {
			t.Fatal(err)
		}
		if lag == 0 {
			return
		}
	}
	t.Fatal("the copy never caught up")
}

func sameLog(t *testing.T, what string, got *Log, want []record.Batch, end, start int64) {
	t.Helper()
	if got.LogEndOffset() != end || got.LogStartOffset() != start {
		t.Fatalf("%s: log [%d, %d), want [%d, %d)", what, got.LogStartOffset(), got.LogEndOffset(), start, end)
	}
	have := readAll(t, got, start, 0)
	if len(have) != len(want) {
		t.Fatalf("%s: %d batches, want %d", what, len(have), len(want))
	}
	for i := range want {
		if !bytes.Equal(have[i], want[i]) {
			t.Fatalf("%s: batch %d (offset %d) differs", what, i, want[i].BaseOffset())
		}
	}
}

// TestMoveBetweenDirs moves a log taking writes from one log dir to the
// other: the copy catches up while the log grows, FinishMove puts it in
// place, and the moved log holds every batch byte for byte, with its log
// start, high watermark and epochs, takes appends, and is found in the
// new dir after a restart.
func TestMoveBetweenDirs(t *testing.T) {
	t.Parallel()
	parent, m := twoDirs(t)
	a, b := filepath.Join(parent, "a"), filepath.Join(parent, "b")
	tp := TopicPartition{Topic: "moving", Partition: 2}
	l := createIn(t, m, tp, a)
	if err := l.SetTopicID([16]byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 60, 0)
	if err := l.DeleteBelow(20); err != nil {
		t.Fatal(err)
	}
	l.SetHighWatermark(l.LogEndOffset())

	started, err := m.StartMove(tp, b)
	if err != nil || !started {
		t.Fatalf("StartMove: %v, %v", started, err)
	}
	if again, err := m.StartMove(tp, b); err != nil || again {
		t.Fatalf("StartMove again to the same dir: %v, %v (want nothing to start)", again, err)
	}
	if _, dir, ok := m.Future(tp); !ok || dir != b {
		t.Fatalf("future in %q (%v), want %s", dir, ok, b)
	}
	for i := range 20 {
		if _, _, err := m.CopyToFuture(tp, 2<<10); err != nil {
			t.Fatal(err)
		}
		appendN(t, l, 1, uint64(1000+i)) // the log grows during the copy
	}
	copyAll(t, m, tp)
	appendN(t, l, 3, 2000) // FinishMove copies these last ones
	if err := l.AssignEpoch(7); err != nil {
		t.Fatal(err)
	}
	l.SetHighWatermark(l.LogEndOffset() - 2)
	want := readAll(t, l, l.LogStartOffset(), 0)
	end, start, hw := l.LogEndOffset(), l.LogStartOffset(), l.HighWatermark()

	nl, err := m.FinishMove(tp)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Get(tp); got != nl {
		t.Fatal("the Manager does not hand out the moved log")
	}
	if d, _ := m.LogDir(tp); d != b {
		t.Fatalf("log in %s after the move, want %s", d, b)
	}
	if _, _, ok := m.Future(tp); ok {
		t.Fatal("a future log is left after the move")
	}
	sameLog(t, "moved", nl, want, end, start)
	if nl.HighWatermark() != hw || nl.LatestEpoch() != 7 {
		t.Fatalf("moved log: high watermark %d epoch %d, want %d and 7", nl.HighWatermark(), nl.LatestEpoch(), hw)
	}
	if id, ok, err := nl.TopicID(); err != nil || !ok || id != [16]byte{1, 2, 3} {
		t.Fatalf("moved log's topic id %x %v %v", id, ok, err)
	}
	if _, err := l.Append(makeBatch(t, 1, 10, 1, 1, 0), AppendOptions{AssignOffsets: true}); !errors.Is(err, ErrClosed) {
		t.Fatalf("append to the old log: %v, want ErrClosed", err)
	}
	if _, err := l.Read(ReadOptions{Offset: start, MaxBytes: 1 << 10}); !errors.Is(err, ErrClosed) {
		t.Fatalf("read of the old log: %v, want ErrClosed", err)
	}
	appendN(t, nl, 2, 3000)
	want = readAll(t, nl, start, 0)
	end = nl.LogEndOffset()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(a, tp.Topic+"*")); len(left) != 0 {
		t.Fatalf("the old dir is still there: %v", left)
	}

	m2, err := openTwo(parent)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	l2, ok := m2.Get(tp)
	if !ok {
		t.Fatal("the moved log is not found after a restart")
	}
	if d, _ := m2.LogDir(tp); d != b {
		t.Fatalf("after a restart the log is in %s, want %s", d, b)
	}
	sameLog(t, "after restart", l2, want, end, start)
}

// TestMoveFollowsTruncation truncates the log (as a follower does) after
// part of it was copied and writes other batches in place of the cut
// ones: the future log drops what it copied of the cut tail, and the
// moved log is the truncated log, not a mix.
func TestMoveFollowsTruncation(t *testing.T) {
	t.Parallel()
	parent, m := twoDirs(t)
	defer m.Close()
	tp := TopicPartition{Topic: "cut", Partition: 0}
	l := createIn(t, m, tp, filepath.Join(parent, "a"))
	appendN(t, l, 40, 0)
	if _, err := m.StartMove(tp, filepath.Join(parent, "b")); err != nil {
		t.Fatal(err)
	}
	copyAll(t, m, tp)
	if err := l.TruncateTo(100); err != nil {
		t.Fatal(err)
	}
	// Different batches over the cut offsets, longer than before.
	appendN(t, l, 45, 5000)
	want := readAll(t, l, 0, 0)
	end := l.LogEndOffset()
	nl, err := m.FinishMove(tp)
	if err != nil {
		t.Fatal(err)
	}
	sameLog(t, "truncated then moved", nl, want, end, 0)
}

// TestMoveFollowsLogStart moves the log start past what the future log
// holds (retention or DeleteRecords during the copy): the copy starts over
// there.
func TestMoveFollowsLogStart(t *testing.T) {
	t.Parallel()
	parent, m := twoDirs(t)
	defer m.Close()
	tp := TopicPartition{Topic: "start", Partition: 0}
	l := createIn(t, m, tp, filepath.Join(parent, "a"))
	appendN(t, l, 80, 0)
	if _, err := m.StartMove(tp, filepath.Join(parent, "b")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.CopyToFuture(tp, 2<<10); err != nil {
		t.Fatal(err)
	}
	if err := l.DeleteBelow(300); err != nil {
		t.Fatal(err)
	}
	copyAll(t, m, tp)
	want := readAll(t, l, l.LogStartOffset(), 0)
	end, start := l.LogEndOffset(), l.LogStartOffset()
	nl, err := m.FinishMove(tp)
	if err != nil {
		t.Fatal(err)
	}
	sameLog(t, "log start moved during the copy", nl, want, end, start)
}

// TestMoveKilledAtEveryStep takes the files as a kill -9 leaves them
// after each step of a move (part of the copy made, then each step of
// FinishMove) and opens a Manager on them: it always opens, the partition
// has exactly one log holding every batch, in the old dir with the copy
// resumable (before the move-done marker) or in the new dir with nothing
// of the old one left (from the marker on); a resumed move then finishes.
func TestMoveKilledAtEveryStep(t *testing.T) {
	t.Parallel()
	steps := []string{"copying", "writes stopped", "future closed", "new dir checkpointed", "marked done", "current renamed",
		"current synced", "future renamed", "future synced", "marker removed"}
	for i, kill := range steps {
		t.Run(kill, func(t *testing.T) {
			t.Parallel()
			parent, m := twoDirs(t)
			a, b := filepath.Join(parent, "a"), filepath.Join(parent, "b")
			tp := TopicPartition{Topic: "killed", Partition: 1}
			l := createIn(t, m, tp, a)
			appendN(t, l, 50, 0)
			// A log start inside a batch (DeleteRecords), checkpointed.
			const start = 52
			if err := l.DeleteBelow(start); err != nil {
				t.Fatal(err)
			}
			if err := m.Checkpoint(); err != nil {
				t.Fatal(err)
			}
			if _, err := m.StartMove(tp, b); err != nil {
				t.Fatal(err)
			}
			if _, _, err := m.CopyToFuture(tp, 3<<10); err != nil {
				t.Fatal(err)
			}
			appendN(t, l, 5, 900)
			want := readAll(t, l, start, 0)
			end := l.LogEndOffset()
			var snap string
			if kill == "copying" {
				snap = killCopyTwo(t, parent)
			}
			m.stepHook = func(step string) {
				if step == kill {
					snap = killCopyTwo(t, parent)
				}
			}
			if _, err := m.FinishMove(tp); err != nil {
				t.Fatal(err)
			}
			m.Close()
			if snap == "" {
				t.Fatalf("no step %q", kill)
			}

			m2, err := openTwo(snap)
			if err != nil {
				t.Fatalf("open after a kill at %q: %v", kill, err)
			}
			defer m2.Close()
			l2, ok := m2.Get(tp)
			if !ok {
				t.Fatalf("kill at %q: the partition has no log", kill)
			}
			sameLog(t, "after the kill at "+kill, l2, want, end, start)
			dir, _ := m2.LogDir(tp)
			_, _, moving := m2.Future(tp)
			decided := i >= slices.Index(steps, "marked done")
			switch {
			case decided && (dir != filepath.Join(snap, "b") || moving):
				t.Fatalf("kill at %q, after the marker: log in %s, future %v; want it moved", kill, dir, moving)
			case !decided && (dir != filepath.Join(snap, "a") || !moving):
				t.Fatalf("kill at %q, before the marker: log in %s, future %v; want it in place and the copy resumable", kill, dir, moving)
			}
			for _, d := range []string{"a", "b"} {
				left, _ := filepath.Glob(filepath.Join(snap, d, "*"+deleteDirSuffix))
				marker, _ := filepath.Glob(filepath.Join(snap, d, "*", moveDoneFile))
				if len(left)+len(marker) != 0 {
					t.Fatalf("kill at %q: left behind %v %v", kill, left, marker)
				}
			}
			if !decided {
				copyAll(t, m2, tp)
				nl, err := m2.FinishMove(tp)
				if err != nil {
					t.Fatalf("finishing the resumed move: %v", err)
				}
				sameLog(t, "resumed move", nl, want, end, start)
			}
		})
	}
}

// TestMoveBackKilled: a log moved out of dir a and, a kill having kept
// a's checkpoints from dropping its entry, moved back into a after its log
// start moved on: a kill at any step once the move back is decided opens
// it with its log start of now, not the stale entry a still held.
func TestMoveBackKilled(t *testing.T) {
	t.Parallel()
	for _, kill := range []string{"marked done", "current renamed", "current synced", "future renamed", "future synced", "marker removed"} {
		t.Run(kill, func(t *testing.T) {
			t.Parallel()
			parent, m := twoDirs(t)
			a, b := filepath.Join(parent, "a"), filepath.Join(parent, "b")
			tp := TopicPartition{Topic: "back", Partition: 0}
			l := createIn(t, m, tp, a)
			appendN(t, l, 50, 0)
			if err := l.DeleteBelow(31); err != nil {
				t.Fatal(err)
			}
			if err := m.Checkpoint(); err != nil { // a: log start 31
				t.Fatal(err)
			}
			// Out to b, killed as the move ends, before the checkpoint
			// that drops the log's entry from a.
			if _, err := m.StartMove(tp, b); err != nil {
				t.Fatal(err)
			}
			copyAll(t, m, tp)
			var snap string
			m.stepHook = func(step string) {
				if step == "marker removed" {
					snap = killCopyTwo(t, parent)
				}
			}
			if _, err := m.FinishMove(tp); err != nil {
				t.Fatal(err)
			}
			m.Close()

			m2, err := openTwo(snap)
			if err != nil {
				t.Fatal(err)
			}
			l2, ok := m2.Get(tp)
			if dir, _ := m2.LogDir(tp); !ok || dir != filepath.Join(snap, "b") {
				t.Fatalf("after the first kill: log in %s, want b", dir)
			}
			// The log start moves on (same batch, so the same segment)
			// and the log grows; then back to a, killed at kill.
			const start = 33
			if err := l2.DeleteBelow(start); err != nil {
				t.Fatal(err)
			}
			appendN(t, l2, 5, 900)
			want := readAll(t, l2, start, 0)
			end := l2.LogEndOffset()
			if _, err := m2.StartMove(tp, filepath.Join(snap, "a")); err != nil {
				t.Fatal(err)
			}
			copyAll(t, m2, tp)
			var snap2 string
			m2.stepHook = func(step string) {
				if step == kill {
					snap2 = killCopyTwo(t, snap)
				}
			}
			if _, err := m2.FinishMove(tp); err != nil {
				t.Fatal(err)
			}
			m2.Close()
			if snap2 == "" {
				t.Fatalf("no step %q", kill)
			}

			m3, err := openTwo(snap2)
			if err != nil {
				t.Fatalf("open after the kill at %q: %v", kill, err)
			}
			defer m3.Close()
			l3, ok := m3.Get(tp)
			if dir, _ := m3.LogDir(tp); !ok || dir != filepath.Join(snap2, "a") {
				t.Fatalf("after the kill at %q: log in %s, want a", kill, dir)
			}
			sameLog(t, "after the kill at "+kill, l3, want, end, start)
		})
	}
}

// TestCancelMoveKilled: a kill after a cancelled move's future log was
// renamed away leaves no copy to resume, and the log as it was.
func TestCancelMoveKilled(t *testing.T) {
	t.Parallel()
	parent, m := twoDirs(t)
	tp := TopicPartition{Topic: "cancelled", Partition: 0}
	l := createIn(t, m, tp, filepath.Join(parent, "a"))
	appendN(t, l, 20, 0)
	want := readAll(t, l, 0, 0)
	if _, err := m.StartMove(tp, filepath.Join(parent, "b")); err != nil {
		t.Fatal(err)
	}
	copyAll(t, m, tp)
	var snap string
	m.stepHook = func(step string) {
		if step == "future renamed -delete" {
			snap = killCopyTwo(t, parent)
		}
	}
	if err := m.CancelMove(tp); err != nil {
		t.Fatal(err)
	}
	m.Close()
	m2, err := openTwo(snap)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	l2, ok := m2.Get(tp)
	if !ok {
		t.Fatal("no log after the kill")
	}
	if _, _, moving := m2.Future(tp); moving {
		t.Fatal("a cancelled move came back")
	}
	sameLog(t, "after a cancel", l2, want, l.LogEndOffset(), 0)
}

// TestFutureWithoutCurrentRefused: a future log, complete or not, whose
// partition has no current log is not a state a move leaves; the open
// fails instead of guessing. A deletion of a moving partition drops its
// copy first.
func TestFutureWithoutCurrentRefused(t *testing.T) {
	t.Parallel()
	parent, m := twoDirs(t)
	tp := TopicPartition{Topic: "orphan", Partition: 0}
	l := createIn(t, m, tp, filepath.Join(parent, "a"))
	appendN(t, l, 10, 0)
	if _, err := m.StartMove(tp, filepath.Join(parent, "b")); err != nil {
		t.Fatal(err)
	}
	copyAll(t, m, tp)
	m.Close()
	snap := killCopyTwo(t, parent)
	if err := os.RemoveAll(filepath.Join(snap, "a", tp.DirName())); err != nil {
		t.Fatal(err)
	}
	if m2, err := openTwo(snap); err == nil {
		m2.Close()
		t.Fatal("opened a future log with no current log")
	}

	m3, err := openTwo(parent)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := m3.Future(tp); !ok {
		t.Fatal("the copy under way was not resumed after a restart")
	}
	if err := m3.Delete(tp); err != nil {
		t.Fatal(err)
	}
	m3.Close()
	if left := futureDirs(filepath.Join(parent, "b")); len(left) != 0 {
		t.Fatalf("the future log outlived its partition's deletion: %v", left)
	}
}

// TestStartMoveErrors: an unknown dir, an unknown partition.
func TestStartMoveErrors(t *testing.T) {
	t.Parallel()
	parent, m := twoDirs(t)
	defer m.Close()
	tp := TopicPartition{Topic: "x", Partition: 0}
	createIn(t, m, tp, filepath.Join(parent, "a"))
	if _, err := m.StartMove(tp, filepath.Join(parent, "c")); !errors.Is(err, ErrLogDirNotFound) {
		t.Fatalf("move to an unknown dir: %v", err)
	}
	if _, err := m.StartMove(TopicPartition{Topic: "y"}, filepath.Join(parent, "b")); !errors.Is(err, ErrUnknownPartition) {
		t.Fatalf("move of an unknown partition: %v", err)
	}
	if started, err := m.StartMove(tp, filepath.Join(parent, "a")); started || err != nil {
		t.Fatalf("move to its own dir: %v %v", started, err)
	}
	if err := m.SetPreferredDir(tp, filepath.Join(parent, "c")); !errors.Is(err, ErrLogDirNotFound) {
		t.Fatalf("preferred unknown dir: %v", err)
	}
}

// TestMoveGivenUpWhenMarkerFails: when the move-done marker cannot be
// written, the move is given up: the future log is removed (no marker can
// be left to finish the move at the next start), the log takes writes
// again, and a restart finds it whole, in place, with no move.
func TestMoveGivenUpWhenMarkerFails(t *testing.T) {
	t.Parallel()
	parent, m := twoDirs(t)
	tp := TopicPartition{Topic: "unmarked", Partition: 0}
	l := createIn(t, m, tp, filepath.Join(parent, "a"))
	appendN(t, l, 30, 0)
	if _, err := m.StartMove(tp, filepath.Join(parent, "b")); err != nil {
		t.Fatal(err)
	}
	copyAll(t, m, tp)
	m.markerHook = func(string) error { return &os.PathError{Op: "write", Path: "move.done", Err: errors.New("injected")} }
	if _, err := m.FinishMove(tp); err == nil {
		t.Fatal("FinishMove succeeded without its marker")
	}
	if _, _, ok := m.Future(tp); ok {
		t.Fatal("the future log outlived a move given up")
	}
	appendN(t, l, 2, 500) // the log takes writes again
	want := readAll(t, l, 0, 0)
	end := l.LogEndOffset()
	m.Close()
	if left := futureDirs(filepath.Join(parent, "b")); len(left) != 0 {
		t.Fatalf("a future log is left on disk: %v", left)
	}
	m2, err := openTwo(parent)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	l2, ok := m2.Get(tp)
	if !ok {
		t.Fatal("no log after the restart")
	}
	if d, _ := m2.LogDir(tp); d != filepath.Join(parent, "a") {
		t.Fatalf("log in %s after a move given up", d)
	}
	sameLog(t, "after a move given up", l2, want, end, 0)
}

// futureDirs lists the future logs' dirs in the log dir at dir.
func futureDirs(dir string) []string {
	all, _ := filepath.Glob(filepath.Join(dir, "*"))
	return slices.DeleteFunc(all, func(p string) bool {
		_, isFuture := parseFutureDirName(filepath.Base(p))
		return !isFuture
	})
}

// TestStartMoveKilled takes the files as a kill -9 leaves them right after
// StartMove made the future log: the Manager opens, the log is whole and
// in place, the empty copy is resumed, and the move then finishes.
func TestStartMoveKilled(t *testing.T) {
	t.Parallel()
	parent, m := twoDirs(t)
	tp := TopicPartition{Topic: "started", Partition: 0}
	l := createIn(t, m, tp, filepath.Join(parent, "a"))
	appendN(t, l, 20, 0)
	want := readAll(t, l, 0, 0)
	end := l.LogEndOffset()
	var snap string
	m.stepHook = func(step string) {
		if step == "future created" {
			snap = killCopyTwo(t, parent)
		}
	}
	if _, err := m.StartMove(tp, filepath.Join(parent, "b")); err != nil {
		t.Fatal(err)
	}
	m.Close()
	if snap == "" {
		t.Fatal("no step \"future created\"")
	}
	m2, err := openTwo(snap)
	if err != nil {
		t.Fatalf("open after a kill at StartMove: %v", err)
	}
	defer m2.Close()
	l2, ok := m2.Get(tp)
	if !ok {
		t.Fatal("no log after the kill")
	}
	sameLog(t, "after a kill at StartMove", l2, want, end, 0)
	if _, _, moving := m2.Future(tp); !moving {
		t.Fatal("the copy StartMove began is not resumed")
	}
	copyAll(t, m2, tp)
	nl, err := m2.FinishMove(tp)
	if err != nil {
		t.Fatal(err)
	}
	sameLog(t, "moved after the kill", nl, want, end, 0)
}

// TestCancelledFutureFlushKeepsDirOnline: a flush of a future log queued
// before its move was cancelled runs after its dir was renamed away and
// fails to persist the indexes of the segments it rolled. That is no disk
// fault: the log dir stays online (crash-test once took a dir offline
// this way, and every partition in it stopped taking writes).
func TestCancelledFutureFlushKeepsDirOnline(t *testing.T) {
	t.Parallel()
	parent, m := twoDirs(t)
	defer m.Close()
	tp := TopicPartition{Topic: "flushed", Partition: 0}
	l := createIn(t, m, tp, filepath.Join(parent, "a"))
	appendN(t, l, 60, 0) // several segments of 16 KiB
	if _, err := m.StartMove(tp, filepath.Join(parent, "b")); err != nil {
		t.Fatal(err)
	}
	copyAll(t, m, tp)
	fl, _, _ := m.Future(tp)
	if fl.SegmentCount() < 2 {
		t.Fatalf("the copy rolled no segment (%d)", fl.SegmentCount())
	}
	if err := m.CancelMove(tp); err != nil {
		t.Fatal(err)
	}
	if err := fl.sync(); err != nil && !errors.Is(err, ErrClosed) {
		t.Fatalf("flush of the cancelled future log: %v, want nothing or ErrClosed", err)
	}
	if err := m.DirError(filepath.Join(parent, "b")); err != nil {
		t.Fatalf("the log dir went offline: %v", err)
	}
	appendN(t, l, 1, 900)
}

// TestMoveLogStartInsideBatch: a log whose start DeleteRecords put inside
// a batch moves: the future log takes that batch whole and keeps the log
// start (it once truncated to the batch's base and back, forever).
func TestMoveLogStartInsideBatch(t *testing.T) {
	t.Parallel()
	parent, m := twoDirs(t)
	defer m.Close()
	tp := TopicPartition{Topic: "inside", Partition: 0}
	l := createIn(t, m, tp, filepath.Join(parent, "a"))
	appendN(t, l, 50, 0)
	if err := l.DeleteBelow(31); err != nil {
		t.Fatal(err)
	}
	want := readAll(t, l, 31, 0)
	end := l.LogEndOffset()
	if _, err := m.StartMove(tp, filepath.Join(parent, "b")); err != nil {
		t.Fatal(err)
	}
	copyAll(t, m, tp)
	nl, err := m.FinishMove(tp)
	if err != nil {
		t.Fatal(err)
	}
	sameLog(t, "moved", nl, want, end, 31)
}
