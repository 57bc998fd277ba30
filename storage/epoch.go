package storage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"sync"
)

const epochCheckpointFile = "leader-epoch-checkpoint"

// epochEntry says that leader epoch epoch wrote its first record at start.
type epochEntry struct {
	epoch int32
	start int64
}

// epochCache is the partition's leader epoch history (KIP-101), kept in
// memory and in leader-epoch-checkpoint. Epochs and start offsets strictly
// increase along the entries.
type epochCache struct {
	path string
	mu   struct {
		sync.RWMutex
		entries []epochEntry
	}
}

func loadEpochCache(path string) (*epochCache, error) {
	c := &epochCache{path: path}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	lines, err := readCheckpointLines(data, path)
	if err != nil {
		return nil, err
	}
	for _, fields := range lines {
		if len(fields) != 2 {
			return nil, fmt.Errorf("%w: %s: entry %q", ErrCorruptCheckpoint, path, fields)
		}
		e, err1 := strconv.ParseInt(fields[0], 10, 32)
		o, err2 := strconv.ParseInt(fields[1], 10, 64)
		if err1 != nil || err2 != nil || e < 0 || o < 0 {
			return nil, fmt.Errorf("%w: %s: entry %q", ErrCorruptCheckpoint, path, fields)
		}
		if n := len(c.mu.entries); n > 0 {
			if last := c.mu.entries[n-1]; int32(e) <= last.epoch || o < last.start {
				return nil, fmt.Errorf("%w: %s: entries out of order", ErrCorruptCheckpoint, path)
			}
		}
		c.mu.entries = append(c.mu.entries, epochEntry{epoch: int32(e), start: o})
	}
	return c, nil
}

// readCheckpointLines parses Kafka's checkpoint text format: a version line
// (0), a count line, then count lines of space-separated fields.
func readCheckpointLines(data []byte, path string) ([][]string, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return sc.Text(), true
	}
	v, ok := next()
	if !ok || v != "0" {
		return nil, fmt.Errorf("%w: %s: version %q", ErrCorruptCheckpoint, path, v)
	}
	cs, ok := next()
	n, err := strconv.Atoi(cs)
	if !ok || err != nil || n < 0 {
		return nil, fmt.Errorf("%w: %s: count %q", ErrCorruptCheckpoint, path, cs)
	}
	out := make([][]string, 0, min(n, 1<<16))
	for i := 0; i < n; i++ {
		line, ok := next()
		if !ok {
			return nil, fmt.Errorf("%w: %s: %d of %d entries", ErrCorruptCheckpoint, path, i, n)
		}
		out = append(out, bytes2fields(line))
	}
	if sc.Scan() && sc.Text() != "" {
		return nil, fmt.Errorf("%w: %s: more entries than counted", ErrCorruptCheckpoint, path)
	}
	return out, nil
}

func bytes2fields(line string) []string {
	var out []string
	start := -1
	for i := 0; i <= len(line); i++ {
		if i == len(line) || line[i] == ' ' {
			if start >= 0 {
				out = append(out, line[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	return out
}

// assign records that epoch starts at start, if epoch is newer than the
// latest. Entries at or above start (left by a previous leader whose records
// were since truncated) are replaced. It persists the file when asked and
// something changed.
func (c *epochCache) assign(epoch int32, start int64, persist bool) (bool, error) {
	c.mu.Lock()
	n := len(c.mu.entries)
	if n > 0 && epoch <= c.mu.entries[n-1].epoch {
		c.mu.Unlock()
		return false, nil
	}
	for n > 0 && c.mu.entries[n-1].start >= start {
		n--
	}
	c.mu.entries = append(c.mu.entries[:n], epochEntry{epoch: epoch, start: start})
	c.mu.Unlock()
	if persist {
		return true, c.persist()
	}
	return true, nil
}

// truncateFromEnd drops the epochs that start at or after offset (the log
// was truncated there).
func (c *epochCache) truncateFromEnd(offset int64) error {
	c.mu.Lock()
	n := len(c.mu.entries)
	for n > 0 && c.mu.entries[n-1].start >= offset {
		n--
	}
	changed := n != len(c.mu.entries)
	c.mu.entries = c.mu.entries[:n]
	c.mu.Unlock()
	if changed {
		return c.persist()
	}
	return nil
}

// truncateFromStart drops epochs that ended before offset (the log start
// moved there) and moves the start of the epoch holding offset up to it.
func (c *epochCache) truncateFromStart(offset int64) error {
	c.mu.Lock()
	i := 0
	for i+1 < len(c.mu.entries) && c.mu.entries[i+1].start <= offset {
		i++
	}
	changed := i > 0
	c.mu.entries = c.mu.entries[i:]
	if len(c.mu.entries) > 0 && c.mu.entries[0].start < offset {
		c.mu.entries[0].start = offset
		changed = true
	}
	c.mu.Unlock()
	if changed {
		return c.persist()
	}
	return nil
}

// latest returns the newest epoch, or -1.
func (c *epochCache) latest() int32 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if n := len(c.mu.entries); n > 0 {
		return c.mu.entries[n-1].epoch
	}
	return -1
}

// endOffsetFor answers OffsetForLeaderEpoch: the largest epoch at most
// epoch, and the offset where the epoch after it starts (the log end for
// the latest epoch). Unknown answers are (-1, -1), as Kafka's UNDEFINED.
func (c *epochCache) endOffsetFor(epoch int32, logEnd int64) (int32, int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	es := c.mu.entries
	if epoch < 0 || len(es) == 0 {
		return -1, -1
	}
	if epoch == es[len(es)-1].epoch {
		return epoch, logEnd
	}
	hi := 0
	for hi < len(es) && es[hi].epoch <= epoch {
		hi++
	}
	if hi == len(es) {
		return -1, -1
	}
	if hi == 0 {
		return epoch, es[0].start
	}
	return es[hi-1].epoch, es[hi].start
}

// epochFor returns the epoch under which offset was written: the last epoch
// starting at or below it, or -1.
func (c *epochCache) epochFor(offset int64) int32 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e := int32(-1)
	for _, x := range c.mu.entries {
		if x.start > offset {
			break
		}
		e = x.epoch
	}
	return e
}

func (c *epochCache) snapshot() []epochEntry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return append([]epochEntry(nil), c.mu.entries...)
}

func (c *epochCache) persist() error {
	es := c.snapshot()
	buf := make([]byte, 0, 16+len(es)*24)
	buf = append(buf, "0\n"...)
	buf = strconv.AppendInt(buf, int64(len(es)), 10)
	buf = append(buf, '\n')
	for _, e := range es {
		buf = strconv.AppendInt(buf, int64(e.epoch), 10)
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, e.start, 10)
		buf = append(buf, '\n')
	}
	return writeFileAtomic(c.path, buf)
}
