package storage

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gregor-io/gregor/protocol/record"
)

// roundObserver records the size of every group-commit round.
type roundObserver struct {
	mu     sync.Mutex
	rounds []int
}

func (o *roundObserver) Fsynced(time.Duration) {}
func (o *roundObserver) Synced(int64)          {}
func (o *roundObserver) GroupCommit(logs int) {
	o.mu.Lock()
	o.rounds = append(o.rounds, logs)
	o.mu.Unlock()
}

func (o *roundObserver) take() []int {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := o.rounds
	o.rounds = nil
	return r
}

// TestStartFlushOneRound: the logs of one StartFlush share one group-commit
// round however many there are, and each is durable to its target after.
func TestStartFlushOneRound(t *testing.T) {
	t.Parallel()
	obs := &roundObserver{}
	mc := DefaultManagerConfig(t.TempDir())
	mc.Log = testConfig()
	mc.Log.FlushMessages = 1
	mc.CleanerEnable = false
	mc.Observer = obs
	m, err := OpenManager(mc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })

	for _, n := range []int{1, 5, syncFSMin - 1, syncFSMin, 3 * syncFSMin} {
		logs := make([]*Log, n)
		targets := make([]FlushTarget, n)
		for i := range logs {
			l, err := m.Create(TopicPartition{Topic: "flush-all", Partition: int32(n*1000 + i)}, mc.Log)
			if err != nil {
				t.Fatal(err)
			}
			res, err := l.Append(makeBatch(t, 3, 50, time.Now().UnixMilli(), uint64(i), record.CodecNone), AppendOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !res.NeedsFlush {
				t.Fatalf("append to log %d: no flush needed with flush.messages=1", i)
			}
			logs[i], targets[i] = l, FlushTarget{Log: l, UpTo: res.LastOffset + 1}
		}
		obs.take() // rounds of the creations, if any
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		StartFlush(targets).Wait(ctx)
		cancel()
		for i, l := range logs {
			if d := l.DurableOffset(); d != targets[i].UpTo {
				t.Fatalf("%d logs: log %d durable to %d after StartFlush and Wait, want %d", n, i, d, targets[i].UpTo)
			}
		}
		if got := obs.take(); !slices.Equal(got, []int{n}) {
			t.Errorf("StartFlush of %d logs ran rounds %v, want one of %d", n, got, n)
		}
	}
}
