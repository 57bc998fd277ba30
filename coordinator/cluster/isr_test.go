package cluster

import (
	"errors"
	"fmt"
	"testing"
)

// TestAlterISR: a leader's ISR proposal is written when the registry still
// holds the state it was made from, and refused after any change.
func TestAlterISR(t *testing.T) {
	t.Parallel()
	c := open(t, embeddedConfig(t.TempDir(), 1))
	if err := c.Register(testCtx(t), BrokerInfo{NodeID: 1, Host: "h", Port: 9092}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(testCtx(t), TopicSpec{Name: "isr", Assignments: [][]int32{{1, 2, 3}}}); err != nil {
		t.Fatal(err)
	}
	from := c.Snapshot().Topics["isr"].Partitions[0]
	if fmt.Sprint(from.ISR) != "[1]" || from.Leader != 1 {
		t.Fatalf("new partition %+v, want leader 1 alone in the ISR (brokers 2 and 3 are not registered)", from)
	}
	got, err := c.AlterISR(testCtx(t), "isr", 0, from, []int32{1, 3})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.ISR) != "[1 3]" || got.PartitionEpoch != from.PartitionEpoch+1 || got.LeaderEpoch != from.LeaderEpoch {
		t.Fatalf("written %+v, want ISR [1 3], partition epoch +1, same leader epoch", got)
	}
	if seen := c.Snapshot().Topics["isr"].Partitions[0]; fmt.Sprint(seen) != fmt.Sprint(got) {
		t.Fatalf("view %+v, want %+v", seen, got)
	}
	// The same proposal again, made from the old state: stale.
	if _, err := c.AlterISR(testCtx(t), "isr", 0, from, []int32{1, 2, 3}); !errors.Is(err, ErrStaleLeader) {
		t.Fatalf("proposal from a stale state: %v, want ErrStaleLeader", err)
	}
	// A deposed leader's (another leader epoch): stale.
	deposed := got
	deposed.LeaderEpoch--
	if _, err := c.AlterISR(testCtx(t), "isr", 0, deposed, []int32{1}); !errors.Is(err, ErrStaleLeader) {
		t.Fatalf("proposal from an older leader epoch: %v, want ErrStaleLeader", err)
	}
	for _, bad := range [][]int32{{3}, {1, 4}, {1, 1}} {
		if _, err := c.AlterISR(testCtx(t), "isr", 0, got, bad); err == nil || errors.Is(err, ErrStaleLeader) {
			t.Errorf("ISR %v: %v, want a refusal", bad, err)
		}
	}
	// A leader whose registration is no longer its session's (as after a
	// pause past the session timeout, before it re-registers): nothing is
	// written, even from the current state.
	if _, err := c.CreateTopic(testCtx(t), TopicSpec{Name: "solo", Assignments: [][]int32{{1}}}); err != nil {
		t.Fatal(err)
	}
	solo := c.Snapshot().Topics["solo"].Partitions[0]
	regKey := c.keys.broker(1)
	cur, err := c.client.Get(testCtx(t), regKey)
	if err != nil || len(cur.Kvs) != 1 {
		t.Fatalf("registration key: %v %v", cur, err)
	}
	if _, err := c.client.Put(testCtx(t), regKey, string(cur.Kvs[0].Value)); err != nil { // no lease
		t.Fatal(err)
	}
	if _, err := c.AlterISR(testCtx(t), "solo", 0, solo, []int32{1}); !errors.Is(err, ErrStaleLeader) {
		t.Fatalf("proposal of a broker without its session's registration: %v, want ErrStaleLeader", err)
	}
	if now := c.Snapshot().Topics["solo"].Partitions[0]; now.PartitionEpoch != solo.PartitionEpoch {
		t.Fatalf("the proposal was written: %+v", now)
	}
}
