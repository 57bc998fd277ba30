package lab

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Ack is one acknowledged record, as its writer's callback saw it.
type Ack struct {
	Writer    string
	Seq       int64
	Partition int32
	Offset    int64
	At        time.Time // when the harness learnt of it
}

// RecordValue is the value of writer's record number seq: unique in a run.
func RecordValue(writer string, seq int64) string { return fmt.Sprintf("%s-%012d", writer, seq) }

// ParseValue splits a record value into its writer and sequence number.
func ParseValue(v string) (writer string, seq int64, ok bool) {
	i := strings.LastIndexByte(v, '-')
	if i < 1 || len(v)-i-1 != 12 {
		return "", 0, false
	}
	seq, err := strconv.ParseInt(v[i+1:], 10, 64)
	return v[:i], seq, err == nil
}

// AckLog holds every outcome the writers report, in the order the harness
// learnt of them (so acks are sorted by at), and writes each to a file as
// it comes: "<ms since start> ack <partition> <offset> <value>" or
// "<ms> err <value> <error>".
type AckLog struct {
	start time.Time
	mu    struct {
		sync.Mutex
		f    *os.File
		acks []Ack
		errs []string
	}
}

// NewAckLog creates the log file at path.
func NewAckLog(path string) (*AckLog, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	l := &AckLog{start: time.Now()}
	l.mu.f = f
	return l, nil
}

// Ack records an acknowledgement of writer's record seq at partition and offset.
func (l *AckLog) Ack(writer string, seq int64, partition int32, offset int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	l.mu.acks = append(l.mu.acks, Ack{Writer: writer, Seq: seq, Partition: partition, Offset: offset, At: now})
	fmt.Fprintf(l.mu.f, "%d ack %d %d %s\n", now.Sub(l.start).Milliseconds(), partition, offset, RecordValue(writer, seq))
}

// Fail records a send its writer gave up on.
func (l *AckLog) Fail(value, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	l.mu.errs = append(l.mu.errs, value+": "+msg)
	fmt.Fprintf(l.mu.f, "%d err %s %s\n", now.Sub(l.start).Milliseconds(), value, msg)
}

// Note writes a harness event into the log, between the acks.
func (l *AckLog) Note(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.mu.f, "%d note %s\n", time.Since(l.start).Milliseconds(), fmt.Sprintf(format, args...))
}

// FirstAfter returns when the first acknowledgement on partition came in
// after t.
func (l *AckLog) FirstAfter(partition int32, t time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	acks := l.mu.acks
	for i := sort.Search(len(acks), func(i int) bool { return acks[i].At.After(t) }); i < len(acks); i++ {
		if acks[i].Partition == partition {
			return acks[i].At, true
		}
	}
	return time.Time{}, false
}

// Count is the number of acknowledgements so far.
func (l *AckLog) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.mu.acks)
}

// Snapshot returns the acknowledgements so far, in the order they came, and
// the sends given up on.
func (l *AckLog) Snapshot() ([]Ack, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Ack(nil), l.mu.acks...), append([]string(nil), l.mu.errs...)
}

// Close closes the log file.
func (l *AckLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.f.Close()
}
