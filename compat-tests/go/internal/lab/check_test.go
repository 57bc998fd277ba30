package lab

import (
	"reflect"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	a := func(writer string, seq int64, p int32, off int64) Ack {
		return Ack{Writer: writer, Seq: seq, Partition: p, Offset: off}
	}
	s := func(p int32, off int64, writer string, seq int64) Stored {
		return Stored{Partition: p, Offset: off, Value: RecordValue(writer, seq)}
	}
	c := func(source string, p int32, off int64) Commit {
		return Commit{Source: source, Partition: p, Offset: off}
	}
	for _, tc := range []struct {
		name string
		h    History
		want Verdict
	}{
		{
			name: "all there, an unacknowledged record besides, read twice, commits rising",
			h: History{
				Acks:     []Ack{a("kgo", 0, 0, 0), a("java", 0, 0, 1), a("kgo", 1, 1, 0)},
				Log:      []Stored{s(0, 0, "kgo", 0), s(0, 1, "java", 0), s(1, 0, "kgo", 1), s(1, 1, "java", 1)},
				Consumed: []Stored{s(0, 0, "kgo", 0), s(1, 1, "java", 1), s(0, 0, "kgo", 0)},
				Commits:  []Commit{c("commit", 0, 1), c("fetch", 0, 1), c("commit", 0, 1), c("commit", 0, 2), c("commit", 1, 0)},
			},
			want: Verdict{Acked: 3, Read: 4, Consumed: 3, UnackedStored: 1},
		},
		{
			name: "lost",
			h: History{
				Acks: []Ack{a("kgo", 0, 0, 0), a("kgo", 2, 0, 1)},
				Log:  []Stored{s(0, 0, "kgo", 0)},
			},
			want: Verdict{Acked: 2, Read: 1, Lost: 1},
		},
		{
			name: "at another offset",
			h: History{
				Acks: []Ack{a("kgo", 0, 0, 0), a("kgo", 2, 0, 1)},
				Log:  []Stored{s(0, 0, "kgo", 0), s(0, 1, "java", 0), s(0, 2, "kgo", 2)},
			},
			want: Verdict{Acked: 2, Read: 3, Misplaced: 1, UnackedStored: 1},
		},
		{
			name: "duplicated",
			h: History{
				Acks: []Ack{a("kgo", 0, 0, 0)},
				Log:  []Stored{s(0, 0, "kgo", 0), s(0, 1, "kgo", 0)},
			},
			want: Verdict{Acked: 1, Read: 2, Duplicated: 1},
		},
		{
			name: "reordered within a partition, not across writers or partitions",
			h: History{
				Acks: []Ack{a("kgo", 6, 0, 0), a("kgo", 0, 0, 1), a("java", 0, 0, 2), a("kgo", 1, 1, 0)},
				Log:  []Stored{s(0, 0, "kgo", 6), s(0, 1, "kgo", 0), s(0, 2, "java", 0), s(1, 0, "kgo", 1)},
			},
			want: Verdict{Acked: 4, Read: 4, Reordered: 1},
		},
		{
			name: "foreign",
			h:    History{Log: []Stored{{Partition: 0, Offset: 0, Value: "hello"}}},
			want: Verdict{Read: 1, Foreign: 1},
		},
		{
			name: "read, never acknowledged, then vanished; another acknowledged one lost",
			h: History{
				Acks:     []Ack{a("kgo", 0, 0, 0), a("kgo", 2, 0, 1)},
				Log:      []Stored{s(0, 0, "kgo", 0), s(0, 1, "java", 3)},
				Consumed: []Stored{s(0, 0, "kgo", 0), s(0, 1, "kgo", 1), s(0, 1, "kgo", 2)},
			},
			want: Verdict{Acked: 2, Read: 2, Consumed: 3, Lost: 1, Vanished: 2, VanishedUnacked: 1, UnackedStored: 1},
		},
		{
			name: "read at one offset, stored at another",
			h: History{
				Log:      []Stored{s(0, 0, "java", 0), s(0, 1, "kgo", 0)},
				Consumed: []Stored{s(0, 0, "kgo", 0)},
			},
			want: Verdict{Read: 2, Consumed: 1, Moved: 1, UnackedStored: 2},
		},
		{
			name: "committed offsets going back, per source and partition",
			h: History{
				Commits: []Commit{c("commit", 0, 5), c("fetch", 0, 3), c("commit", 1, 9), c("commit", 0, 4), c("fetch", 0, 2), c("commit", 1, 9)},
			},
			want: Verdict{CommitsBackwards: 2},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Check(tc.h)
			if (len(got.Problems) > 0) != tc.want.Failed() {
				t.Errorf("problems %q, want some exactly when the verdict fails (%v)", got.Problems, tc.want.Failed())
			}
			got.Problems = nil
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("Check = %+v, want %+v", *got, tc.want)
			}
			wantFailed := tc.want.Lost+tc.want.Misplaced+tc.want.Duplicated+tc.want.Reordered+tc.want.Foreign+tc.want.Vanished+tc.want.Moved+tc.want.CommitsBackwards > 0
			if got.Failed() != wantFailed {
				t.Errorf("Failed() = %v for %+v", got.Failed(), *got)
			}
		})
	}
}

func TestMedianMax(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in       []int
		med, max int
	}{{nil, 0, 0}, {[]int{5}, 5, 5}, {[]int{3, 1, 2}, 2, 3}, {[]int{4, 1, 3, 2}, 3, 4}} {
		var ds []time.Duration
		for _, n := range tc.in {
			ds = append(ds, time.Duration(n))
		}
		med, maximum := MedianMax(ds)
		if med != time.Duration(tc.med) || maximum != time.Duration(tc.max) {
			t.Errorf("MedianMax(%v) = %v, %v, want %v, %v", tc.in, med, maximum, tc.med, tc.max)
		}
	}
}
