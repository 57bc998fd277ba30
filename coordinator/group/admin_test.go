package group

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDeleteGroups(t *testing.T) {
	h := newHarness(t, testConfig())
	a := h.consumer("busy", "a", "t")
	h.stabilize(a)
	s := h.consumer("idle", "s", "t")
	s.memberID, s.generation = "", -1
	s.commit(9, "t", 1, 2)
	s.commit(9, "u", 3)

	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Version = 2
	req.Groups = []string{"busy", "idle", "nobody"}
	n := len(h.records)
	r := response[*kmsg.DeleteGroupsResponse](h, h.send("admin", req))
	var codes []int16
	for _, g := range r.Groups {
		codes = append(codes, g.ErrorCode)
	}
	deepEqual(t, "codes", codes, []int16{errNonEmptyGroup, errNone, errGroupIDNotFound})
	var names []string
	for _, rec := range h.records[n:] {
		if rec.Value != nil {
			t.Fatal("DeleteGroups writes only tombstones")
		}
		names = append(names, recordName(t, rec.Key))
	}
	deepEqual(t, "tombstones", names, []string{"offset idle/t/0", "offset idle/t/1", "offset idle/u/0", "group idle"})

	d := h.describe("idle")[0]
	if d.State != "Dead" || d.ErrorCode != 0 {
		t.Fatalf("describe v5 of a deleted group: %+v", d)
	}
	if f := h.fetchAll("idle")[0]; len(f.Topics) != 0 {
		t.Fatal("offsets survived the deletion")
	}
	dr := kmsg.NewPtrDescribeGroupsRequest()
	dr.Version = 6
	dr.Groups = []string{"idle"}
	d = response[*kmsg.DescribeGroupsResponse](h, h.send("admin", dr)).Groups[0]
	if d.State != "Dead" || d.ErrorCode != errGroupIDNotFound {
		t.Fatalf("describe v6 of a deleted group: %+v", d)
	}
}

func TestListGroups(t *testing.T) {
	h := newHarness(t, testConfig())
	a := h.consumer("stable", "a", "t")
	h.stabilize(a)
	s := h.consumer("simple", "s", "t")
	s.memberID, s.generation = "", -1
	s.commit(9, "t", 1)
	p := h.consumer("preparing", "p", "t")
	p.joinFully()

	list := func(version int16, states, types []string) []string {
		req := kmsg.NewPtrListGroupsRequest()
		req.Version = version
		req.StatesFilter, req.TypesFilter = states, types
		r := response[*kmsg.ListGroupsResponse](h, h.send("admin", req))
		var out []string
		for _, g := range r.Groups {
			out = append(out, g.Group+":"+g.GroupState+":"+g.ProtocolType+":"+g.GroupType)
		}
		return out
	}
	deepEqual(t, "all", list(5, nil, nil), []string{
		"preparing:PreparingRebalance:consumer:classic",
		"simple:Empty::classic",
		"stable:Stable:consumer:classic",
	})
	deepEqual(t, "states", list(4, []string{"stable", "EMPTY"}, nil), []string{"simple:Empty::classic", "stable:Stable:consumer:classic"})
	deepEqual(t, "type classic", len(list(5, nil, []string{"Classic"})), 3)
	deepEqual(t, "type consumer", len(list(5, nil, []string{"consumer"})), 0)
	deepEqual(t, "filters ignored before v4", len(list(3, []string{"Dead"}, nil)), 3)
}

func TestDescribeGroups(t *testing.T) {
	h := newHarness(t, testConfig())
	a := h.consumer("g", "a", "t").static("ia")
	b := h.consumer("g", "b", "t")
	h.stabilize(a, b)

	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version = 5
	req.Groups = []string{"g"}
	req.IncludeAuthorizedOperations = true
	d := response[*kmsg.DescribeGroupsResponse](h, h.send("admin", req)).Groups[0]
	if d.AuthorizedOperations != 3400 { // READ|DELETE|DESCRIBE|DESCRIBE_CONFIGS|ALTER_CONFIGS
		t.Fatalf("authorized operations %d", d.AuthorizedOperations)
	}
	if d.State != "Stable" || d.ProtocolType != "consumer" || d.Protocol != "range" || len(d.Members) != 2 {
		t.Fatalf("describe: %+v", d)
	}
	m := d.Members[0]
	if m.MemberID != a.memberID || m.InstanceID == nil || *m.InstanceID != "ia" ||
		!bytes.Equal(m.ProtocolMetadata, subscription("t")) || !bytes.Equal(m.MemberAssignment, assignment("t", 0)) {
		t.Fatalf("member: %+v", m)
	}
	in := Input{Token: 999, Version: 5, Request: req, AuthorizedOperations: func(string) int32 { return 8 }}
	out := h.c.Step(h.now, in)
	if got := out.Responses[0].Body.(*kmsg.DescribeGroupsResponse).Groups[0].AuthorizedOperations; got != 8 {
		t.Fatalf("driver-given operations: %d", got)
	}

	// During a rebalance: no protocol, no metadata, assignments kept.
	b.topics = []string{"u"}
	b.join()
	d = h.describe("g")[0]
	if d.State != "PreparingRebalance" || d.Protocol != "" || len(d.Members[0].ProtocolMetadata) != 0 {
		t.Fatalf("describe during rebalance: %+v", d)
	}
	if d.AuthorizedOperations != -2147483648 {
		t.Fatal("operations are only reported when asked for")
	}
}
