package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// The disk-full nemesis needs each broker's data dir on a small file
// system of its own, so that filling it touches nothing else: a tmpfs the
// harness mounts over the dir (root only; under the backing dir of the
// broker's lazyfs when drop-unsynced runs too, where the broker then meets
// the full disk when it fsyncs) and unmounts when the brokers are gone. fsync on tmpfs is a no-op, which changes nothing the harness
// does: a killed process loses nothing a tmpfs or a page cache holds.

// mountDataDirs mounts a tmpfs of size bytes over each of dirs (the
// brokers' data dirs, or the backing dirs of their lazyfs mounts).
func mountDataDirs(dirs []string, size int64) ([]string, error) {
	var mounted []string
	for _, d := range dirs {
		if err := sh("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0755", size), "gregor-chaos", d); err != nil {
			unmount(mounted, false)
			return nil, err
		}
		mounted = append(mounted, d)
	}
	return mounted, nil
}

// unmount unmounts the tmpfs mounts; with keep, their contents are
// copied first into the directories they were mounted over, so that a
// failing run's data stays for a look.
func unmount(dirs []string, keep bool) {
	for _, d := range dirs {
		saved := d + ".saved"
		if keep {
			os.Remove(filepath.Join(d, ballastName))
			if err := sh("cp", "-a", d, saved); err != nil {
				fmt.Fprintf(os.Stderr, "chaos: keeping %s: %v\n", d, err)
				saved = ""
			}
		}
		if err := sh("umount", d); err != nil {
			fmt.Fprintf(os.Stderr, "chaos: %v\n", err)
			continue
		}
		if keep && saved != "" {
			os.Remove(d)
			os.Rename(saved, d)
		}
	}
}

// ballastName is the file that fills a broker's file system.
const ballastName = "chaos-ballast"

// fill takes every free byte of the file system holding dir with a
// ballast file, written until the file system says it is full (tmpfs
// refuses a fallocate of all it has free), returning how many it took.
func fill(dir string) (int64, error) {
	f, err := os.Create(filepath.Join(dir, ballastName))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n int64
	for _, size := range []int{1 << 20, 4 << 10, 1} {
		buf := make([]byte, size)
		for {
			w, err := f.Write(buf)
			n += int64(w)
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			if err != nil {
				return n, fmt.Errorf("fill %s: %w", dir, err)
			}
		}
	}
	return n, nil
}

var diskFull = nemesis{name: "disk-full", mounts: true,
	doc: "a random broker's file system (a tmpfs over its data dir) filled by a ballast file; at the heal the file goes and the broker is restarted, as both Gregor and Kafka need to bring a failed log dir back",
	inject: func(_ context.Context, h *harness, _ int) (string, func(context.Context) error, error) {
		i := h.rng.IntN(len(h.c.Brokers))
		b, disk := h.c.Brokers[i], h.disks[i]
		n, err := fill(disk)
		if err != nil {
			return "", nil, err
		}
		return fmt.Sprintf("file system of broker %d full (%d MiB of ballast)", b.ID, n>>20), func(ctx context.Context) error {
			if err := os.Remove(filepath.Join(disk, ballastName)); err != nil {
				return err
			}
			if b.Running() {
				if _, err := h.c.Kill(ctx, b); err != nil {
					return err
				}
			} else {
				h.logf("broker %d exited while its disk was full (see broker-%d.log)", b.ID, b.ID)
			}
			return h.c.Start(b)
		}, nil
	}}

func init() { nemeses = append(nemeses, diskFull) }
