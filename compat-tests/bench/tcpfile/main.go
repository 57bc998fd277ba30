// Command tcpfile measures this machine's ceiling for what a broker does on
// its hot path, with nothing else in the way: bytes arrive over a loopback
// TCP connection and are appended to a file. The benchmark (run.sh) compares
// W1's throughput with it.
//
// A sender goroutine writes -bytes bytes, as 1 KiB records packed into
// -chunk byte writes, to a receiver on 127.0.0.1 that reads them into a
// -chunk byte buffer and writes each read to a new file in -dir. With
// -fsync, the receiver fsyncs after every -chunk bytes written (as a broker
// that fsyncs each batch before acknowledging); otherwise the data is left
// to the page cache and only the final close is waited for. The time runs
// from the first byte sent to the last byte written (and fsynced).
//
// It prints one JSON object: bytes, seconds, mib_per_sec, records_per_sec
// (1 KiB records), fsync. The file is removed afterwards.
//
// With -pagecost it measures instead what writing into the page cache costs
// on this machine, without TCP: -bytes are written to a new file in -chunk
// writes (the file system takes fresh pages for them), then the same range
// is written again (the pages are cached already). It prints the CPU
// seconds (getrusage) per GiB and the MiB/s of each pass: fresh_* and
// reused_*. On a VM whose idle memory goes back to the host, the fresh pass
// pays for the host faulting memory in again.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

const recordSize = 1024

func main() {
	total := flag.Int64("bytes", 4<<30, "bytes to send and write")
	chunk := flag.Int("chunk", 1<<20, "bytes per write (sender and receiver) and per fsync")
	dir := flag.String("dir", os.TempDir(), "directory of the file written")
	fsync := flag.Bool("fsync", false, "fsync after every -chunk bytes written")
	pagecost := flag.Bool("pagecost", false, "measure the CPU cost of page-cache writes instead (see above)")
	flag.Parse()
	var err error
	if *pagecost {
		err = pageCost(*total, *chunk, *dir)
	} else {
		err = run(*total, *chunk, *dir, *fsync)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tcpfile:", err)
		os.Exit(1)
	}
}

func run(total int64, chunk int, dir string, fsync bool) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	f, err := os.CreateTemp(dir, "tcpfile-*.log")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()

	sendErr := make(chan error, 1)
	start := time.Now()
	go func() { sendErr <- send(ln.Addr().String(), total, chunk) }()

	conn, err := ln.Accept()
	if err != nil {
		return err
	}
	defer conn.Close()
	buf := make([]byte, chunk)
	var written, sinceSync int64
	for written < total {
		n, err := conn.Read(buf)
		if n > 0 {
			if _, werr := f.Write(buf[:n]); werr != nil {
				return fmt.Errorf("write %s: %w", filepath.Base(f.Name()), werr)
			}
			written += int64(n)
			sinceSync += int64(n)
			if fsync && sinceSync >= int64(chunk) {
				if err := f.Sync(); err != nil {
					return fmt.Errorf("fsync: %w", err)
				}
				sinceSync = 0
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
	}
	if fsync && sinceSync > 0 {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("fsync: %w", err)
		}
	}
	secs := time.Since(start).Seconds()
	if err := <-sendErr; err != nil {
		return fmt.Errorf("send: %w", err)
	}
	if written != total {
		return fmt.Errorf("received %d bytes, want %d", written, total)
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"bytes":           written,
		"seconds":         secs,
		"mib_per_sec":     float64(written) / secs / (1 << 20),
		"records_per_sec": float64(written) / recordSize / secs,
		"record_size":     recordSize,
		"chunk":           chunk,
		"fsync":           fsync,
	})
}

// send writes total bytes of 1 KiB records to addr in chunk-byte writes.
func send(addr string, total int64, chunk int) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	buf := make([]byte, chunk)
	for i := range buf {
		buf[i] = byte(i % recordSize)
	}
	for sent := int64(0); sent < total; {
		n := int64(len(buf))
		if total-sent < n {
			n = total - sent
		}
		if _, err := conn.Write(buf[:n]); err != nil {
			return err
		}
		sent += n
	}
	return nil
}

// pageCost writes total bytes to a new file in dir twice over the same
// range and reports each pass's CPU time per GiB and rate.
func pageCost(total int64, chunk int, dir string) error {
	f, err := os.CreateTemp(dir, "pagecost-*.log")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, chunk)
	for i := range buf {
		buf[i] = byte(i % recordSize)
	}
	out := map[string]any{"bytes": total, "chunk": chunk}
	for _, pass := range []string{"fresh", "reused"} {
		cpu0, err := cpuTime()
		if err != nil {
			return err
		}
		start := time.Now()
		for off := int64(0); off < total; off += int64(chunk) {
			n := min(int64(chunk), total-off)
			if _, err := f.WriteAt(buf[:n], off); err != nil {
				return fmt.Errorf("write %s: %w", filepath.Base(f.Name()), err)
			}
		}
		secs := time.Since(start).Seconds()
		cpu1, err := cpuTime()
		if err != nil {
			return err
		}
		gib := float64(total) / (1 << 30)
		out[pass+"_cpu_s_per_gib"] = (cpu1 - cpu0).Seconds() / gib
		out[pass+"_mib_per_sec"] = float64(total) / secs / (1 << 20)
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
