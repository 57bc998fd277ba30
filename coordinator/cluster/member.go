package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// The embedded member's files, sized for what a registry holds.
//
// etcd preallocates each write-ahead log segment, and the next one ahead of
// time: 2 x 64 MB by default, before a single key is written. Gregor's
// registry is a few megabytes (topics, configs, groups' offsets live in the
// logs), so its segments are 8 MiB: a new member takes about 17 MiB, and
// its largest request (maxRequestBytes) still fits in one segment. The
// segment size only governs when a segment is cut; a WAL written with
// other sizes reads back the same.
const (
	walSegmentBytes = 8 << 20
	// memberMinFreeBytes is the space the embedded member needs, its
	// files and the free space together, to start: two segments (the one
	// it writes, the one it preallocates) and room for its database.
	memberMinFreeBytes = 3 * walSegmentBytes
	// memberMinGrowBytes is the free space a member that has its files
	// needs to start: a segment it preallocates, a copy of one (etcd
	// repairs a WAL with a torn tail by copying its last segment aside
	// first, and stops when that copy fails) and room for its database to
	// grow.
	memberMinGrowBytes = 2*walSegmentBytes + 2<<20
)

func init() {
	if path := os.Getenv(checkDBEnv); path != "" {
		os.Exit(checkDB(path)) // the child process of checkBackend
	}
	// A package variable of etcd's WAL: set once, before any member runs.
	wal.SegmentSizeBytes = walSegmentBytes
}

// etcdLogs is where etcd's own (zap) logs go: a file (or stderr) at the
// configured level; panics and fatal errors also to stderr, since etcd
// exits the process on a fatal one; and the last error kept in memory, so
// that a failed start can say why.
type etcdLogs struct {
	lg   *zap.Logger
	last *lastEntry
	file *os.File // nil when the logs go to stderr or stdout
}

// etcdLogging builds the logger of etcd's server and client, at
// cfg.EtcdLogLevel, into cfg.EtcdLogFile.
func etcdLogging(cfg Config) (*etcdLogs, error) {
	level, err := zapcore.ParseLevel(cfg.EtcdLogLevel)
	if err != nil {
		return nil, fmt.Errorf("etcd log level: %w", err)
	}
	out := cfg.EtcdLogFile
	if out == "" {
		out = "stderr"
		if cfg.DataDir != "" {
			if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
				return nil, fmt.Errorf("create data dir: %w", err)
			}
			out = filepath.Join(cfg.DataDir, "etcd.log")
		}
	}
	logs := &etcdLogs{last: &lastEntry{}}
	var w zapcore.WriteSyncer
	switch out {
	case "stderr":
		w = zapcore.Lock(os.Stderr)
	case "stdout":
		w = zapcore.Lock(os.Stdout)
	default:
		f, err := os.OpenFile(out, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("open etcd log %s: %w", out, err)
		}
		logs.file, w = f, zapcore.Lock(f)
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.RFC3339NanoTimeEncoder
	cores := []zapcore.Core{
		// Sampled as etcd samples its own logs: a storm of one error
		// (an unreachable endpoint) must not fill the disk.
		zapcore.NewSamplerWithOptions(zapcore.NewCore(zapcore.NewJSONEncoder(enc), w, level), time.Second, 100, 100),
		zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(logs.last), zapcore.ErrorLevel),
	}
	if out != "stderr" {
		cores = append(cores, zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(os.Stderr), zapcore.DPanicLevel))
	}
	// etcd's Fatal (as a WAL it cannot repair at start) panics rather than
	// exits, so that startEtcd turns it into Open's error and the broker
	// refuses to start with the cause, instead of the process ending
	// inside etcd.
	logs.lg = zap.New(zapcore.NewTee(cores...), zap.ErrorOutput(zapcore.Lock(os.Stderr)),
		zap.WithFatalHook(zapcore.WriteThenPanic))
	return logs, nil
}

// close closes the log file. etcd must have stopped.
func (l *etcdLogs) close() {
	_ = l.lg.Sync()
	if l.file != nil {
		_ = l.file.Close()
	}
}

// lastEntry keeps etcd's last error entry (one JSON line, at most 4 KiB).
type lastEntry struct {
	mu   sync.Mutex
	line []byte
}

func (e *lastEntry) Write(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.line = append(e.line[:0], p[:min(len(p), 4<<10)]...)
	return len(p), nil
}

// String is the entry's message and error, "" when etcd logged no error.
func (e *lastEntry) String() string {
	e.mu.Lock()
	line := bytes.TrimSpace(e.line)
	e.mu.Unlock()
	if len(line) == 0 {
		return ""
	}
	var ent struct {
		Msg string `json:"msg"`
		Err string `json:"error"`
	}
	if json.Unmarshal(line, &ent) != nil || ent.Msg == "" {
		return string(line)
	}
	if ent.Err == "" {
		return ent.Msg
	}
	return ent.Msg + ": " + ent.Err
}

// checkMemberSpace refuses to start the member in etcdDir when its files
// and the free space of its file system add up to less than
// memberMinFreeBytes (and, for a member that already has its files, when
// less than memberMinGrowBytes is free): etcd would fail half-way (a panic,
// or a member that never becomes ready) instead of saying so. A new member
// (no files yet) needs memberMinFreeBytes free.
func checkMemberSpace(etcdDir string) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(etcdDir, &st); err != nil {
		return fmt.Errorf("check free space in %s: %w", etcdDir, err)
	}
	free := int64(st.Bavail) * int64(st.Bsize) //nolint:gosec // block counts fit in int64
	held, err := allocatedBytes(etcdDir)
	if err != nil {
		return fmt.Errorf("check free space in %s: %w", etcdDir, err)
	}
	need := memberMinFreeBytes - held
	if held > 0 {
		need = max(need, memberMinGrowBytes)
	}
	if free >= need {
		return nil
	}
	return fmt.Errorf("%w: %s has %d KiB free and its files take %d KiB; the embedded etcd needs %d MiB in all "+
		"(its write-ahead log preallocates two %d MiB segments), and once it has files %d MiB free: free space there, "+
		"or put another log dir first in log.dirs, or use an external etcd (etcd.endpoints)",
		ErrMemberNoSpace, etcdDir, free>>10, held>>10, memberMinFreeBytes>>20, walSegmentBytes>>20, memberMinGrowBytes>>20)
}

// allocatedBytes is the disk space the files under dir take.
func allocatedBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		}
		return nil
	})
	return n, err
}

// memberFreeSpace says how much room dir's file system has, for an error
// message; "" when it cannot tell.
func memberFreeSpace(dir string) string {
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) != nil {
		return ""
	}
	return fmt.Sprintf("%d KiB free in %s", (int64(st.Bavail)*int64(st.Bsize))>>10, dir) //nolint:gosec // fits
}

// checkBackend checks the member's database file (member/snap/db under
// dir), if there is one, before etcd opens it: etcd panics deep inside
// bbolt on a damaged page, naming no file, and some of those panics happen
// in goroutines of bbolt's own where nothing can recover them. The check
// therefore runs in a child process (this executable, see init), which
// opens the file read-only and walks every page. A damaged file is
// ErrMemberDamaged, saying which file and what to do. ok is false when
// the check could not run (then nothing is known).
func checkBackend(ctx context.Context, dir string) (ok bool, err error) {
	path := filepath.Join(dir, "member", "snap", "db")
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return false, nil
	}
	var out boundedBuffer
	cctx, cancel := context.WithTimeout(ctx, dbCheckTimeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, exe)
	cmd.Env = append(os.Environ(), checkDBEnv+"="+path)
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case ctx.Err() != nil:
		return false, ctx.Err()
	case cctx.Err() != nil:
		// A registry's database is checked in well under a second; a
		// damaged page count or pointer sends the check over billions
		// of pages, or in circles, as it would send etcd.
		out.Reset()
		fmt.Fprintf(&out, "its check did not finish within %s, as on a damaged page count or pointer", dbCheckTimeout)
	case !errors.As(err, &exit):
		return false, nil // the check did not run
	}
	cause := strings.TrimSpace(out.String())
	if first, _, found := strings.Cut(cause, "\n\ngoroutine "); found {
		cause = first // a panic: its message, not its stack
	}
	cause = strings.Join(strings.Fields(strings.ReplaceAll(cause, "\n", " ; ")), " ")
	return true, fmt.Errorf("%w: %s: %s. The broker's registry (topics, configs, ids) is in that file. "+
		"Stop every broker using it; restore %s from a backup (or from an etcd snapshot with etcdutl snapshot restore), "+
		"and start again. Do not remove it: the log dirs are stamped for this cluster, so a new registry is refused",
		ErrMemberDamaged, path, cause, dir)
}

// dbCheckTimeout bounds checkBackend's child process; a test shortens it.
var dbCheckTimeout = 15 * time.Second

// checkDBEnv, set in the environment, makes this executable check the
// bbolt file it names and exit: 0 when it is sound, 1 (the problems on
// stderr) or a panic when it is not.
const checkDBEnv = "GREGOR_INTERNAL_CHECK_ETCD_DB"

// checkDB is the child process's check of the database file at path.
func checkDB(path string) int {
	// A damaged file can make the page walk recurse without end: fail
	// fast rather than grow a stack of a gigabyte.
	debug.SetMaxStack(64 << 20)
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer db.Close()
	n := 0
	err = db.View(func(tx *bolt.Tx) error {
		for e := range tx.Check() { // drained: the check must end before the tx
			if n++; n <= 3 {
				fmt.Fprintln(os.Stderr, e)
			}
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if n > 0 {
		return 1
	}
	return 0
}

// boundedBuffer keeps the first 4 KiB written to it.
type boundedBuffer struct{ bytes.Buffer }

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if room := 4<<10 - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// startEtcd is embed.StartEtcd with etcd's panics turned into errors: it
// panics (through its logger) on, among others, a WAL it cannot create.
func startEtcd(ec *embed.Config) (e *embed.Etcd, err error) {
	defer func() {
		if r := recover(); r != nil {
			e, err = nil, fmt.Errorf("etcd panicked: %v", r)
		}
	}()
	return embed.StartEtcd(ec)
}

// closeEtcd stops a member; a test replaces it with one that hangs.
var closeEtcd = (*embed.Etcd).Close

// stopMember closes the member, waiting at most timeout: a member that
// cannot write its files may never finish stopping, and the broker's
// shutdown must end. It reports whether the member stopped.
func stopMember(e *embed.Etcd, timeout time.Duration) bool {
	done, stop := make(chan struct{}), closeEtcd
	go func() {
		defer close(done)
		defer func() { _ = recover() }() // a panic while stopping is no reason to crash
		stop(e)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
