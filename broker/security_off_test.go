package broker

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
)

// TestSecurityOff asks the security APIs a client may call on a broker
// with no authorizer, SCRAM users or quotas; they used to close the
// connection. The answers are those of a Kafka 4.4 broker so configured
// (the compat lab's franz-go scenario security-off checks both).
func TestSecurityOff(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	for _, v := range []int16{1, 3} {
		d := kmsg.NewPtrDescribeACLsRequest()
		d.SetVersion(v)
		d.ResourceType, d.ResourcePatternType, d.Operation, d.PermissionType = 1, 1, 1, 1
		checkCode(t, fmt.Sprintf("DescribeAcls v%d", v), w.mustRoundTrip(d).(*kmsg.DescribeACLsResponse).ErrorCode, protocol.SecurityDisabled)

		c := kmsg.NewPtrCreateACLsRequest()
		c.SetVersion(v)
		for range 2 {
			cr := kmsg.NewCreateACLsRequestCreation()
			cr.ResourceType, cr.ResourcePatternType, cr.Operation, cr.PermissionType = 2, 3, 3, 3 // TOPIC, LITERAL, READ, ALLOW
			c.Creations = append(c.Creations, cr)
		}
		res := w.mustRoundTrip(c).(*kmsg.CreateACLsResponse).Results
		if len(res) != 2 {
			t.Fatalf("CreateAcls v%d: %d results for 2 creations", v, len(res))
		}
		for _, r := range res {
			checkCode(t, fmt.Sprintf("CreateAcls v%d", v), r.ErrorCode, protocol.SecurityDisabled)
		}

		x := kmsg.NewPtrDeleteACLsRequest()
		x.SetVersion(v)
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = 1, 1, 1, 1 // ANY
		x.Filters = append(x.Filters, f)
		if res := w.mustRoundTrip(x).(*kmsg.DeleteACLsResponse).Results; len(res) != 1 {
			t.Fatalf("DeleteAcls v%d: %d results for 1 filter", v, len(res))
		} else {
			checkCode(t, fmt.Sprintf("DeleteAcls v%d", v), res[0].ErrorCode, protocol.SecurityDisabled)
		}
	}

	type comp = kmsg.DescribeClientQuotasRequestComponent
	for _, q := range []struct {
		comps []comp
		want  protocol.ErrorCode
	}{
		{nil, protocol.None},
		{[]comp{{EntityType: "user", MatchType: quotaMatchAny}}, protocol.None},
		{[]comp{{EntityType: "client-id", MatchType: quotaMatchExact, Match: kmsg.StringPtr("c")}}, protocol.None},
		{[]comp{{EntityType: "ip", MatchType: quotaMatchDefault}}, protocol.None},
		{[]comp{{EntityType: "user", MatchType: quotaMatchExact}}, protocol.InvalidRequest},
		{[]comp{{EntityType: "user", MatchType: quotaMatchDefault, Match: kmsg.StringPtr("x")}}, protocol.InvalidRequest},
		{[]comp{{EntityType: "user", MatchType: 7}}, protocol.InvalidRequest},
		{[]comp{{EntityType: "team", MatchType: quotaMatchAny}}, protocol.UnsupportedVersion},
		{[]comp{{EntityType: "user", MatchType: quotaMatchAny}, {EntityType: "user", MatchType: quotaMatchDefault}}, protocol.InvalidRequest},
		{[]comp{{EntityType: "ip", MatchType: quotaMatchAny}, {EntityType: "client-id", MatchType: quotaMatchAny}}, protocol.InvalidRequest},
		{[]comp{{EntityType: "user", MatchType: quotaMatchAny, Match: kmsg.StringPtr("x")}}, protocol.InvalidRequest},
		// Kafka checks the type before the match: empty, repeated, unknown.
		{[]comp{{EntityType: "", MatchType: quotaMatchExact}}, protocol.InvalidRequest},
		{[]comp{{EntityType: "team", MatchType: quotaMatchExact}}, protocol.UnsupportedVersion},
		{[]comp{{EntityType: "user", MatchType: quotaMatchAny}, {EntityType: "user", MatchType: 7}}, protocol.InvalidRequest},
	} {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.Components = q.comps
		resp := w.mustRoundTrip(req).(*kmsg.DescribeClientQuotasResponse)
		checkCode(t, fmt.Sprintf("DescribeClientQuotas %+v", q.comps), resp.ErrorCode, q.want)
		if q.want == protocol.None && (resp.Entries == nil || len(resp.Entries) != 0) {
			t.Errorf("DescribeClientQuotas %+v: entries %v, want an empty list", q.comps, resp.Entries)
		}
	}

	s := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	if r := w.mustRoundTrip(s).(*kmsg.DescribeUserSCRAMCredentialsResponse); r.ErrorCode != 0 || len(r.Results) != 0 {
		t.Errorf("DescribeUserScramCredentials of every user: error %d, %d results", r.ErrorCode, len(r.Results))
	}
	for _, u := range []string{"alice", "bob", "alice", "alice"} {
		s.Users = append(s.Users, kmsg.DescribeUserSCRAMCredentialsRequestUser{Name: u})
	}
	var got []string
	for _, r := range w.mustRoundTrip(s).(*kmsg.DescribeUserSCRAMCredentialsResponse).Results {
		got = append(got, fmt.Sprintf("%s:%d", r.User, r.ErrorCode))
	}
	if want := []string{"bob:91", "alice:92"}; !slices.Equal(got, want) {
		t.Errorf("DescribeUserScramCredentials of alice, bob, alice, alice: %v, want %v", got, want)
	}
}

// TestACLUnknownEnums sends ACL requests naming an enum's UNKNOWN value
// (0): Kafka fails to parse them and closes the connection, and so does
// Gregor; the same requests with ANY or a real value are answered above.
func TestACLUnknownEnums(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	for i := range 4 {
		// Filters take ANY (1) and a creation a real value (TOPIC,
		// LITERAL, READ, ALLOW), but for the one UNKNOWN.
		filter, creation := []int8{1, 1, 1, 1}, []int8{2, 3, 3, 3}
		filter[i], creation[i] = 0, 0
		d := kmsg.NewPtrDescribeACLsRequest()
		d.ResourceType, d.ResourcePatternType = kmsg.ACLResourceType(filter[0]), kmsg.ACLResourcePatternType(filter[1])
		d.Operation, d.PermissionType = kmsg.ACLOperation(filter[2]), kmsg.ACLPermissionType(filter[3])
		c := kmsg.NewPtrCreateACLsRequest()
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourcePatternType = kmsg.ACLResourceType(creation[0]), kmsg.ACLResourcePatternType(creation[1])
		cr.Operation, cr.PermissionType = kmsg.ACLOperation(creation[2]), kmsg.ACLPermissionType(creation[3])
		c.Creations = append(c.Creations, cr)
		x := kmsg.NewPtrDeleteACLsRequest()
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceType(filter[0]), kmsg.ACLResourcePatternType(filter[1])
		f.Operation, f.PermissionType = kmsg.ACLOperation(filter[2]), kmsg.ACLPermissionType(filter[3])
		x.Filters = append(x.Filters, f)
		for _, req := range []kmsg.Request{d, c, x} {
			w := dialWire(t, b)
			if err := w.writeRaw(w.fmt.AppendRequest(nil, req, 1)); err != nil {
				t.Fatal(err)
			}
			if err := w.expectClosed(10 * time.Second); err != nil {
				t.Errorf("%s with enum %d UNKNOWN: %v", kmsg.NameForKey(req.Key()), i, err)
			}
		}
	}
}
