package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/gregor-io/gregor/compat-tests/go/internal/lab"
)

// The drop-unsynced nemesis needs each broker's data dir on a file system
// that can forget what was not fsynced: a lazyfs (compat-tests/go/cmd/
// lazyfs) mounted over the data dir, on a backing dir beside it
// (broker-N.backing), which holds exactly what the broker fsynced. The
// lazyfs processes are the cluster's (they die with it); their mounts are
// unmounted when the brokers are gone. When disk-full runs too, its tmpfs
// goes under the backing dir and its ballast is written there, so the
// broker meets the full disk when it syncs.

// lazyMount is one broker's lazyfs.
type lazyMount struct {
	dir, backing, log string
	pid               int
	cuts              int
}

// fuseWorks says whether lazyfs mounts can be made here, and why not.
func fuseWorks(lazyfs string) error {
	switch {
	case os.Geteuid() != 0:
		return errors.New("not root")
	case lazyfs == "":
		return errors.New("no lazyfs binary (-lazyfs)")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fmt.Errorf("no /dev/fuse: %w", err)
	}
	return nil
}

// startLazy runs bin over backing at dir as a process of c and waits
// until it serves the mount.
func startLazy(ctx context.Context, c *lab.Cluster, bin, backing, dir, logPath, what string) (*lazyMount, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(bin, backing, dir)
	cmd.Stdout, cmd.Stderr = f, f
	exited, err := c.StartProcess(cmd, what)
	if err != nil {
		return nil, err
	}
	lz := &lazyMount{dir: dir, backing: backing, log: logPath, pid: cmd.Process.Pid}
	if _, err := lz.waitLog(ctx, exited, "lazyfs: serving "); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return lz, nil
}

// waitLog waits (at most 10 s) until the lazyfs log has a line starting
// with prefix and returns it.
func (lz *lazyMount) waitLog(ctx context.Context, exited chan struct{}, prefix string) (string, error) {
	var line string
	ok := lab.Poll(ctx, 10*time.Second, 20*time.Millisecond, func() bool {
		b, _ := os.ReadFile(lz.log)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, prefix) {
				line = l
				return true
			}
		}
		select {
		case <-exited:
			return true
		default:
			return false
		}
	})
	if !ok || line == "" {
		return "", fmt.Errorf("no %q from lazyfs within 10s (see %s)", prefix, lz.log)
	}
	return line, nil
}

// powerCut drops every write the broker did not fsync (SIGUSR1 to its
// lazyfs) and returns lazyfs's account of what went.
func (lz *lazyMount) powerCut(ctx context.Context) (string, error) {
	lz.cuts++
	if err := syscall.Kill(lz.pid, syscall.SIGUSR1); err != nil {
		return "", fmt.Errorf("power cut of %s: %w", lz.dir, err)
	}
	line, err := lz.waitLog(ctx, nil, fmt.Sprintf("lazyfs: power cut %d: ", lz.cuts))
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(line, fmt.Sprintf("lazyfs: power cut %d: ", lz.cuts)), nil
}

// mountLazy puts each broker's data dir on a lazyfs over a backing dir
// (created here, or given in backing when disk-full has mounted a tmpfs
// there).
func (h *harness) mountLazy(ctx context.Context, backing []string) error {
	for i, b := range h.c.Brokers {
		if err := os.MkdirAll(backing[i], 0o755); err != nil {
			return err
		}
		lz, err := startLazy(ctx, h.c, h.o.lazyfs, backing[i], b.DataDir, b.DataDir+".lazyfs.log", fmt.Sprintf("lazyfs of broker %d", b.ID))
		if err != nil {
			return err
		}
		h.lazy = append(h.lazy, lz)
	}
	return nil
}

// unmountLazy unmounts the lazyfs mounts (their processes may be gone:
// umount removes a dead FUSE mount too).
func (h *harness) unmountLazy() {
	for _, lz := range h.lazy {
		if err := sh("umount", lz.dir); err != nil {
			if err := sh("umount", "-l", lz.dir); err != nil {
				fmt.Fprintf(os.Stderr, "chaos: %v\n", err)
			}
		}
	}
}

var dropUnsynced = nemesis{name: "drop-unsynced", fuse: true,
	doc: "SIGKILL of a random partition's leader, then a power cut of its lazyfs (every write it did not fsync dropped); restarted on what is left at the heal",
	inject: func(ctx context.Context, h *harness, _ int) (string, func(context.Context) error, error) {
		v, err := h.settled(ctx)
		if err != nil {
			return "", nil, err
		}
		id := v.Parts[h.rng.Int32N(h.o.partitions)].Leader
		b := h.c.Broker(id)
		if b == nil {
			return "", nil, fmt.Errorf("no broker %d to kill (a partition leader)", id)
		}
		if _, err := h.c.Kill(ctx, b); err != nil {
			return "", nil, err
		}
		what, err := h.lazy[b.ID-1].powerCut(ctx)
		if err != nil {
			return "", nil, err
		}
		return fmt.Sprintf("kill -9 broker %d (leader of %v), then a power cut of its file system (%s)", id, led(v, id), what), func(context.Context) error {
			return h.c.Start(b)
		}, nil
	}}

func init() { nemeses = append(nemeses, dropUnsynced) }
