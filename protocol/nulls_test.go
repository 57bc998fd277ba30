package protocol

import (
	"bytes"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// nullAt returns body with the length at off replaced by null: four 0xff
// bytes (an int32 length) or, flexible, the compact length byte 0.
func nullAt(body []byte, off int, flexible bool) []byte {
	out := bytes.Clone(body)
	if flexible {
		out[off] = 0
		return out
	}
	copy(out[off:], []byte{0xff, 0xff, 0xff, 0xff})
	return out
}

func produceWithPartition(v int16, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(v)
	t := kmsg.NewProduceRequestTopic()
	t.Topic = "t"
	p := kmsg.NewProduceRequestTopicPartition()
	p.Records = records
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

func TestCheckNulls(t *testing.T) {
	md0 := kmsg.NewPtrMetadataRequest()
	md0.SetVersion(0)
	md1 := kmsg.NewPtrMetadataRequest()
	md1.SetVersion(1)
	md9 := kmsg.NewPtrMetadataRequest()
	md9.SetVersion(9)
	ct2 := kmsg.NewPtrCreateTopicsRequest()
	ct2.SetVersion(2)
	ct5 := kmsg.NewPtrCreateTopicsRequest()
	ct5.SetVersion(5)
	sg := kmsg.NewPtrSyncGroupRequest()
	sg.SetVersion(3)
	sg.Group, sg.MemberID = "g", "m"
	sg.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: "m", MemberAssignment: []byte{}}}
	rec := []byte{1, 2, 3}
	p3, p9, p13 := produceWithPartition(3, rec), produceWithPartition(9, rec), produceWithPartition(13, rec)
	p9.TransactionID = kmsg.StringPtr("tx")
	// Empty records, so that a null in their place leaves no bytes behind.
	p3e, p9e := produceWithPartition(3, []byte{}), produceWithPartition(9, []byte{})
	p9e.TransactionID = kmsg.StringPtr("tx")

	for _, c := range []struct {
		what string
		req  kmsg.Request
		off  int // where the null goes; -1 for the request as encoded
		want error
	}{
		{"metadata v0 as encoded", md0, -1, nil},
		{"metadata v0 null topics", md0, 0, ErrNullNotAllowed},
		{"metadata v1 null topics (all topics)", md1, 0, nil},
		{"metadata v9 null topics (all topics)", md9, 0, nil},
		{"create topics v2 as encoded", ct2, -1, nil},
		{"create topics v2 null topics", ct2, 0, ErrNullNotAllowed},
		{"create topics v5 null topics", ct5, 0, ErrNullNotAllowed},
		// group "g", generation, member "m", then the assignments array
		// and, inside its element, member "m" and the assignment bytes.
		{"sync group v3 null assignment bytes", sg, 2 + 1 + 4 + 2 + 1 + 2 + 4 + 2 + 1, ErrNullNotAllowed},
		{"produce v3 as encoded", p3, -1, nil},
		// null transactional id (2), acks (2), timeout (4), topics.
		{"produce v3 null topics", p3, 8, ErrNullNotAllowed},
		{"produce v3 null partitions", p3, 8 + 4 + 2 + 1, ErrNullNotAllowed},
		{"produce v3 null records", p3e, 8 + 4 + 3 + 4 + 4, nil},
		// transactional id "tx" (3), acks, timeout, topics (1), "t" (2).
		{"produce v9 as encoded", p9, -1, nil},
		{"produce v9 null topics", p9, 3 + 6, ErrNullNotAllowed},
		{"produce v9 null partitions", p9, 3 + 6 + 1 + 2, ErrNullNotAllowed},
		{"produce v9 null records", p9e, 3 + 6 + 1 + 2 + 1 + 4, nil},
		// v13: a topic id of 16 bytes instead of the name.
		{"produce v13 null partitions", p13, 1 + 6 + 1 + 16, ErrNullNotAllowed},
	} {
		body := c.req.AppendTo(nil)
		if c.off >= 0 {
			body = nullAt(body, c.off, c.req.IsFlexible())
		}
		got := kmsg.RequestForKey(c.req.Key())
		got.SetVersion(c.req.GetVersion())
		if err := got.ReadFrom(body); err != nil {
			t.Fatalf("%s: kmsg cannot read it: %v", c.what, err)
		}
		if err := CheckNulls(got, body); !errors.Is(err, c.want) || (c.want == nil && err != nil) {
			t.Errorf("%s: %v, want %v", c.what, err, c.want)
		}
	}
}

// FuzzCheckNulls reads any bytes as a Produce request (walked) and as a
// CreateTopics request (encoded again); CheckNulls must not panic, and it
// must pass whatever kmsg encodes itself.
func FuzzCheckNulls(f *testing.F) {
	for _, v := range []int16{3, 9, 13} {
		f.Add(produceWithPartition(v, []byte{1}).AppendTo(nil), v)
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0}, int16(2))
	f.Fuzz(func(t *testing.T, body []byte, v int16) {
		for _, req := range []kmsg.Request{kmsg.NewPtrProduceRequest(), kmsg.NewPtrCreateTopicsRequest()} {
			if v < 0 || v > req.MaxVersion() {
				continue
			}
			req.SetVersion(v)
			if req.ReadFrom(body) != nil {
				continue
			}
			_ = CheckNulls(req, body)
			if err := CheckNulls(req, req.AppendTo(nil)); err != nil {
				t.Fatalf("kmsg's own encoding of %s v%d: %v", kmsg.NameForKey(req.Key()), v, err)
			}
		}
	})
}
