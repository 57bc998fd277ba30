package main

import (
	"testing"

	"github.com/gregor-io/gregor/compat-tests/go/internal/lab"
)

func TestCheckRegister(t *testing.T) {
	acks := []regAck{
		{Key: "a", Value: "reg-1", Partition: 0, Offset: 0}, // compacted away for reg-3
		{Key: "b", Value: "reg-2", Partition: 0, Offset: 1}, // kept
		{Key: "a", Value: "reg-3", Partition: 0, Offset: 2}, // kept
		{Key: "c", Value: "reg-4", Partition: 1, Offset: 0}, // c's last write: gone
		{Key: "d", Value: "reg-5", Partition: 1, Offset: 1}, // its offset holds another write
		{Key: "e", Value: "reg-6", Partition: 1, Offset: 2}, // only a later write of e in another partition
	}
	log := []lab.Stored{
		{Partition: 0, Offset: 1, Key: "b", Value: "reg-2"},
		{Partition: 0, Offset: 2, Key: "a", Value: "reg-3"},
		{Partition: 1, Offset: 1, Key: "d", Value: "reg-9"},
		{Partition: 0, Offset: 7, Key: "e", Value: "reg-10"},
		{Partition: 0, Offset: 8, Key: "b", Value: "reg-2"}, // stored twice
	}
	v := checkRegister(acks, log)
	if v.Acked != 6 || v.Superseded != 1 || v.Lost != 3 || v.Duplicated != 1 {
		t.Fatalf("acked %d superseded %d lost %d duplicated %d, want 6 1 3 1; problems %q", v.Acked, v.Superseded, v.Lost, v.Duplicated, v.Problems)
	}
	if v := checkRegister(acks[:3], log[:2]); v.Lost != 0 || v.Duplicated != 0 || v.Superseded != 1 {
		t.Fatalf("a clean history: %+v", v)
	}
}
