package compat

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// Compare checks the records a consumer read (got, in the order it read
// them) against the records written (want, in produce order, with their
// expected offsets). Per partition, got must equal want exactly: the same
// number of records, in the same order, at the same offsets, with equal keys,
// values and headers (null and empty kept apart) and equal timestamps.
// Interleaving across partitions does not matter. The error names the first
// difference.
func Compare(want, got []Record) error {
	w, g := ByPartition(want), ByPartition(got)
	for p := range g {
		if _, ok := w[p]; !ok {
			return fmt.Errorf("read %d records from partition %d, where none were written", len(g[p]), p)
		}
	}
	for _, p := range sortedKeys(w) {
		wp, gp := w[p], g[p]
		for i := range min(len(wp), len(gp)) {
			if err := Equal(wp[i], gp[i]); err != nil {
				return fmt.Errorf("partition %d, record %d of %d: %w", p, i, len(wp), err)
			}
		}
		if len(gp) != len(wp) {
			return fmt.Errorf("partition %d: read %d records, wrote %d", p, len(gp), len(wp))
		}
	}
	return nil
}

// Equal checks one record read back (got) against the one written (want).
// An offset of -1 in want is not checked.
func Equal(want, got Record) error {
	var diffs []string
	if want.Partition != got.Partition {
		diffs = append(diffs, fmt.Sprintf("partition %d, want %d", got.Partition, want.Partition))
	}
	if want.Offset >= 0 && want.Offset != got.Offset {
		diffs = append(diffs, fmt.Sprintf("offset %d, want %d", got.Offset, want.Offset))
	}
	if d := diffBytes("key", want.Key, got.Key); d != "" {
		diffs = append(diffs, d)
	}
	if d := diffBytes("value", want.Value, got.Value); d != "" {
		diffs = append(diffs, d)
	}
	if !want.Timestamp.Equal(got.Timestamp) {
		diffs = append(diffs, fmt.Sprintf("timestamp %d ms, want %d ms", got.Timestamp.UnixMilli(), want.Timestamp.UnixMilli()))
	}
	if d := diffHeaders(want.Headers, got.Headers); d != "" {
		diffs = append(diffs, d)
	}
	if len(diffs) > 0 {
		return fmt.Errorf("at offset %d: %s", got.Offset, strings.Join(diffs, "; "))
	}
	return nil
}

func diffHeaders(want, got []Header) string {
	if len(want) != len(got) {
		return fmt.Sprintf("%d headers %s, want %d %s", len(got), showHeaders(got), len(want), showHeaders(want))
	}
	for i := range want {
		if want[i].Key != got[i].Key {
			return fmt.Sprintf("header %d key %q, want %q", i, got[i].Key, want[i].Key)
		}
		if d := diffBytes(fmt.Sprintf("header %d (%q) value", i, want[i].Key), want[i].Value, got[i].Value); d != "" {
			return d
		}
	}
	return ""
}

func diffBytes(what string, want, got []byte) string {
	switch {
	case want == nil && got == nil:
		return ""
	case want == nil:
		return fmt.Sprintf("%s %s, want null", what, show(got))
	case got == nil:
		return fmt.Sprintf("%s null, want %s", what, show(want))
	case !bytes.Equal(want, got):
		return fmt.Sprintf("%s %s, want %s", what, show(got), show(want))
	}
	return ""
}

// show prints a byte string briefly: its length and its first bytes.
func show(b []byte) string {
	const limit = 16
	if len(b) == 0 {
		return "empty"
	}
	if len(b) <= limit {
		return fmt.Sprintf("%d bytes %x", len(b), b)
	}
	return fmt.Sprintf("%d bytes %x...", len(b), b[:limit])
}

func showHeaders(hs []Header) string {
	keys := make([]string, len(hs))
	for i, h := range hs {
		keys[i] = h.Key
	}
	return "[" + strings.Join(keys, " ") + "]"
}

func sortedKeys[V any](m map[int32]V) []int32 {
	ks := make([]int32, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// SortedPartitions returns the keys of a per-partition map in order.
func SortedPartitions[V any](m map[int32]V) []int32 { return sortedKeys(m) }
