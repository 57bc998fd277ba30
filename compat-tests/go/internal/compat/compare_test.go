package compat

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// written returns generated records with dense offsets, as a producer's
// acknowledgements would set them.
func written(t *testing.T) []Record {
	t.Helper()
	recs := Generate(1, 60, 3, time.UnixMilli(1_700_000_000_000))
	AssignDense(recs, 0)
	if err := CheckAcked(recs, 0); err != nil {
		t.Fatalf("CheckAcked of dense offsets: %v", err)
	}
	return recs
}

// clone deep-copies records so that a test can change one side only.
func clone(recs []Record) []Record {
	out := make([]Record, len(recs))
	for i, r := range recs {
		r.Key = slices.Clone(r.Key)
		r.Value = slices.Clone(r.Value)
		r.Headers = slices.Clone(r.Headers)
		for j := range r.Headers {
			r.Headers[j].Value = slices.Clone(r.Headers[j].Value)
		}
		out[i] = r
	}
	return out
}

func TestCompareEqual(t *testing.T) {
	want := written(t)
	// Interleaving across partitions does not matter: read partition by
	// partition.
	var got []Record
	for _, p := range []int32{2, 0, 1} {
		got = append(got, clone(ByPartition(want)[p])...)
	}
	if err := Compare(want, got); err != nil {
		t.Fatalf("Compare of equal records: %v", err)
	}
}

func TestCompareFindsDifferences(t *testing.T) {
	tests := []struct {
		name   string
		change func([]Record) []Record
		says   string
	}{
		{"value byte", func(rs []Record) []Record { rs[4].Value[0] ^= 1; return rs }, "value"},
		{"null value read as empty", func(rs []Record) []Record {
			i := slices.IndexFunc(rs, func(r Record) bool { return r.Value == nil })
			rs[i].Value = []byte{}
			return rs
		}, "want null"},
		{"empty header value read as null", func(rs []Record) []Record { rs[0].Headers[2].Value = nil; return rs }, `header 2 ("empty") value null`},
		{"null header value read as empty", func(rs []Record) []Record { rs[1].Headers[4].Value = []byte{}; return rs }, `header 4 ("null") value empty, want null`},
		{"header order", func(rs []Record) []Record {
			rs[1].Headers[0], rs[1].Headers[1] = rs[1].Headers[1], rs[1].Headers[0]
			return rs
		}, "header 0 key"},
		{"timestamp", func(rs []Record) []Record { rs[7].Timestamp = rs[7].Timestamp.Add(time.Millisecond); return rs }, "timestamp"},
		{"offset gap", func(rs []Record) []Record { rs[9].Offset++; return rs }, "offset"},
		{"order in a partition", func(rs []Record) []Record { rs[0], rs[3] = rs[3], rs[0]; return rs }, "partition 0, record 0"},
		{"record lost", func(rs []Record) []Record { return slices.Delete(rs, 5, 6) }, "partition 2"},
		{"record repeated", func(rs []Record) []Record { return append(rs, rs[len(rs)-1]) }, "read 21 records, wrote 20"},
		{"unwritten partition", func(rs []Record) []Record { r := rs[0]; r.Partition = 7; return append(rs, r) }, "partition 7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := written(t)
			err := Compare(want, tt.change(clone(want)))
			if err == nil {
				t.Fatalf("Compare found no difference")
			}
			if !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("Compare said %q, want it to mention %q", err, tt.says)
			}
		})
	}
}

func TestCheckAckedFindsGaps(t *testing.T) {
	recs := written(t)
	recs[10].Offset += 2
	if err := CheckAcked(recs, 0); err == nil {
		t.Fatal("CheckAcked accepted a gap")
	}
}

func TestGenerateCovers(t *testing.T) {
	recs := Generate(1, 300, 3, time.UnixMilli(0))
	var null, empty, noHeaders, dup, text int
	for _, r := range recs {
		switch {
		case r.Value == nil:
			null++
		case len(r.Value) == 0:
			empty++
		case strings.HasPrefix(string(r.Value), "value "):
			text++
		}
		if r.Headers == nil {
			noHeaders++
		}
		if len(r.Headers) == 6 && r.Headers[4].Value == nil {
			dup++
		}
	}
	for what, n := range map[string]int{"null values": null, "empty values": empty, "records without headers": noHeaders, "repeated header keys and null header values": dup, "text values": text} {
		if n == 0 {
			t.Errorf("no %s in 300 generated records", what)
		}
	}
	if again := Generate(1, 300, 3, time.UnixMilli(0)); Compare(recs, again) != nil {
		t.Error("Generate is not deterministic")
	}
}

func TestEmptyAsNull(t *testing.T) {
	recs := written(t)
	got := EmptyAsNull(recs)
	for i, r := range got {
		if r.Value != nil && len(r.Value) == 0 {
			t.Fatalf("record %d still has an empty value", i)
		}
	}
	if recs[0].Headers[2].Value == nil {
		t.Fatal("EmptyAsNull changed its argument")
	}
}
