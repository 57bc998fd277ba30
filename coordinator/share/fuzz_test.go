package share

import (
	"testing"
	"time"
)

// FuzzShareRecords feeds arbitrary keys and values to a loading
// coordinator: no panic, and what decodes re-encodes to what decodes the
// same.
func FuzzShareRecords(f *testing.F) {
	k := Key{Group: "g", TopicID: [16]byte{1}, Partition: 3}
	f.Add(snapshotKey(k), snapshotValue(1, &State{StateEpoch: 1, StartOffset: 5, Batches: []StateBatch{{5, 9, Archived, 2}}}, 0))
	f.Add(snapshotKey(k), []byte(nil))
	upd := append([]byte{0, 1}, snapshotKey(k)[2:]...)
	f.Add(upd, []byte{0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 7, 1, 0})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		c, _ := New(Config{Partitions: 50}, 0)
		if err := c.Replay(key, value); err != nil {
			return
		}
		p, err := parseRecord(key, value)
		if err != nil || p.update || p.tombstone {
			return
		}
		again, err := parseRecord(snapshotKey(p.key), snapshotValue(p.snapshotEpoch, &p.state, 0))
		if err != nil || again.key != p.key || again.state.StartOffset != p.state.StartOffset || len(again.state.Batches) != len(p.state.Batches) {
			t.Fatalf("re-encoded record decodes differently: %+v vs %+v (%v)", again, p, err)
		}
	})
}

// FuzzPartition drives a share partition with operations read from the
// fuzz input: no panic, the window stays bounded, the acquired count right.
func FuzzPartition(f *testing.F) {
	f.Add([]byte{0, 10, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Fuzz(func(t *testing.T, ops []byte) {
		p := testPartition(int64(len(ops)))
		now := t0
		next := func() int64 {
			if len(ops) == 0 {
				return 0
			}
			b := ops[0]
			ops = ops[1:]
			return int64(b)
		}
		for len(ops) > 0 {
			switch next() % 6 {
			case 0:
				from, _ := p.FetchOffset()
				p.Acquire(now, "m", []Range{{from + next(), from + next() + next()}}, int(next()))
			case 1:
				first := p.StartOffset() + next() - 20
				p.Acknowledge(now, "m", []Ack{{First: first, Last: first + next() - 10, Types: []int8{int8(next() % 7)}}})
			case 2:
				now = now.Add(time.Duration(next()) * time.Second)
				p.Tick(now)
			case 3:
				p.ReleaseMember(now, "m")
			case 4:
				p.AdvanceStart(p.StartOffset() + next() - 100)
			case 5:
				p = NewPartition(p.cfg, p.State())
			}
			n := 0
			for _, e := range p.window {
				if e.state == Acquired {
					n++
				}
			}
			if n != p.acquired || len(p.window) > p.cfg.MaxInFlight {
				t.Fatalf("acquired %d counted %d, window %d", n, p.acquired, len(p.window))
			}
		}
	})
}
