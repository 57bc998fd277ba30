package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"
)

// Per-dir checkpoint files, in Kafka's names and text format.
const (
	recoveryPointFile = "recovery-point-offset-checkpoint"
	logStartFile      = "log-start-offset-checkpoint"
	highWatermarkFile = "replication-offset-checkpoint"
	cleanShutdownFile = ".kafka_cleanshutdown"
	dirLockFile       = ".lock"
)

// readOffsetCheckpoint reads a "topic partition offset" checkpoint file. A
// missing file is empty.
func readOffsetCheckpoint(path string) (map[TopicPartition]int64, error) {
	out := map[TopicPartition]int64{}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	lines, err := readCheckpointLines(data, path)
	if err != nil {
		return nil, err
	}
	for _, f := range lines {
		if len(f) != 3 {
			return nil, fmt.Errorf("%w: %s: entry %q", ErrCorruptCheckpoint, path, f)
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		o, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || p < 0 {
			return nil, fmt.Errorf("%w: %s: entry %q", ErrCorruptCheckpoint, path, f)
		}
		out[TopicPartition{Topic: f[0], Partition: int32(p)}] = o
	}
	return out, nil
}

// writeOffsetCheckpoint replaces a checkpoint file atomically.
func writeOffsetCheckpoint(path string, offsets map[TopicPartition]int64) error {
	tps := make([]TopicPartition, 0, len(offsets))
	for tp := range offsets {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	buf := make([]byte, 0, 16+len(tps)*48)
	buf = append(buf, "0\n"...)
	buf = strconv.AppendInt(buf, int64(len(tps)), 10)
	buf = append(buf, '\n')
	for _, tp := range tps {
		buf = append(buf, tp.Topic...)
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, int64(tp.Partition), 10)
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, offsets[tp], 10)
		buf = append(buf, '\n')
	}
	return writeFileAtomic(path, buf)
}
