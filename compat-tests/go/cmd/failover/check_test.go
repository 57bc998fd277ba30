package main

import (
	"reflect"
	"testing"
)

func TestCheck(t *testing.T) {
	a := func(writer string, seq int64, p int32, off int64) ack {
		return ack{writer: writer, seq: seq, partition: p, offset: off}
	}
	s := func(p int32, off int64, writer string, seq int64) stored {
		return stored{partition: p, offset: off, value: recordValue(writer, seq)}
	}
	for _, tc := range []struct {
		name string
		acks []ack
		log  []stored
		want verdict
	}{
		{
			name: "all there, an unacknowledged record besides",
			acks: []ack{a("kgo", 0, 0, 0), a("java", 0, 0, 1), a("kgo", 1, 1, 0)},
			log:  []stored{s(0, 0, "kgo", 0), s(0, 1, "java", 0), s(1, 0, "kgo", 1), s(1, 1, "java", 1)},
			want: verdict{acked: 3, read: 4, unackedStored: 1},
		},
		{
			name: "lost",
			acks: []ack{a("kgo", 0, 0, 0), a("kgo", 2, 0, 1)},
			log:  []stored{s(0, 0, "kgo", 0)},
			want: verdict{acked: 2, read: 1, lost: 1},
		},
		{
			name: "at another offset",
			acks: []ack{a("kgo", 0, 0, 0), a("kgo", 2, 0, 1)},
			log:  []stored{s(0, 0, "kgo", 0), s(0, 1, "java", 0), s(0, 2, "kgo", 2)},
			want: verdict{acked: 2, read: 3, misplaced: 1, unackedStored: 1},
		},
		{
			name: "duplicated",
			acks: []ack{a("kgo", 0, 0, 0)},
			log:  []stored{s(0, 0, "kgo", 0), s(0, 1, "kgo", 0)},
			want: verdict{acked: 1, read: 2, duplicated: 1},
		},
		{
			name: "reordered within a partition, not across writers or partitions",
			acks: []ack{a("kgo", 6, 0, 0), a("kgo", 0, 0, 1), a("java", 0, 0, 2), a("kgo", 1, 1, 0)},
			log:  []stored{s(0, 0, "kgo", 6), s(0, 1, "kgo", 0), s(0, 2, "java", 0), s(1, 0, "kgo", 1)},
			want: verdict{acked: 4, read: 4, reordered: 1},
		},
		{
			name: "foreign",
			log:  []stored{{partition: 0, offset: 0, value: "hello"}},
			want: verdict{read: 1, foreign: 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := check(tc.acks, tc.log)
			got.problems = nil
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("check = %+v, want %+v", *got, tc.want)
			}
			if got.failed() != (tc.want.lost+tc.want.misplaced+tc.want.duplicated+tc.want.reordered+tc.want.foreign > 0) {
				t.Errorf("failed() = %v for %+v", got.failed(), *got)
			}
		})
	}
}
