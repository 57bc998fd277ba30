package broker

import (
	"bytes"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha512"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/protocol"
)

// describedSCRAM renders kadm's description as user:mechanism=iterations
// lists, or user:error.
func describedSCRAM(ds kadm.DescribedUserSCRAMs) []string {
	var out []string
	for _, d := range ds.Sorted() {
		if d.Err != nil {
			out = append(out, d.User+":"+d.Err.Error())
			continue
		}
		s := d.User + ":"
		for i, ci := range d.CredInfos {
			if i > 0 {
				s += ","
			}
			s += fmt.Sprintf("%s=%d", ci.Mechanism, ci.Iterations)
		}
		out = append(out, s)
	}
	return out
}

// TestScramCredentials: kadm stores, lists and deletes credentials; the
// registry holds RFC 5802's StoredKey and ServerKey of the salted
// password sent, not the salted password.
func TestScramCredentials(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	adm := kadm.NewClient(newClient(t, b))
	ctx := testContext(t, 30*time.Second)

	salt := []byte("a fixed salt for the test")
	salted, err := pbkdf2.Key(sha512.New, "alice-secret", salt, 8192, sha512.Size)
	if err != nil {
		t.Fatal(err)
	}
	alter := func(del []kadm.DeleteSCRAM, up []kadm.UpsertSCRAM) {
		t.Helper()
		res, err := adm.AlterUserSCRAMs(ctx, del, up)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("altering %s: %v (%s)", r.User, r.Err, r.ErrMessage)
			}
		}
	}
	alter(nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 8192, Salt: salt, SaltedPassword: salted},
		{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "bob-secret"},
	})
	// One user, one change per request: the second mechanism takes another.
	alter(nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 16384, Password: "x"}})

	cr, ok := b.cluster.Snapshot().SCRAM[cluster.ScramKey{User: "alice", Mechanism: cluster.ScramSHA512}]
	if !ok {
		t.Fatal("alice's SCRAM-SHA-512 credential is not in this broker's view on the answer")
	}
	mac := func(key []byte, msg string) []byte {
		h := hmac.New(sha512.New, key)
		h.Write([]byte(msg))
		return h.Sum(nil)
	}
	storedKey := sha512.Sum512(mac(salted, "Client Key"))
	if !bytes.Equal(cr.StoredKey, storedKey[:]) || !bytes.Equal(cr.ServerKey, mac(salted, "Server Key")) ||
		!bytes.Equal(cr.Salt, salt) || cr.Iterations != 8192 {
		t.Errorf("stored %+v, want salt %x, StoredKey %x, ServerKey %x, 8192 iterations", cr, salt, storedKey, mac(salted, "Server Key"))
	}

	all, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := describedSCRAM(all), []string{"alice:SCRAM-SHA-256=16384,SCRAM-SHA-512=8192", "bob:SCRAM-SHA-256=4096"}; !slices.Equal(got, want) {
		t.Errorf("described every user: %q, want %q", got, want)
	}

	alter([]kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha256}}, nil)
	some, err := adm.DescribeUserSCRAMs(ctx, "alice", "nobody")
	if err != nil {
		t.Fatal(err)
	}
	if got := describedSCRAM(some); len(got) != 2 || got[0] != "alice:SCRAM-SHA-512=8192" || !errors.Is(some["nobody"].Err, kerr.ResourceNotFound) {
		t.Errorf("described alice and nobody after deleting alice's SHA-256: %q", got)
	}
}

// TestAlterScramErrors: Kafka's checks, each user's first failure being
// its result and the failed users' changes left unmade, results ordered
// deletions made, upsertions made, failures.
func TestAlterScramErrors(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)

	upsertion := func(name string, mech int8, iterations int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations = name, mech, iterations
		u.Salt, u.SaltedPassword = []byte("salt"), bytes.Repeat([]byte{7}, 32)
		return u
	}
	deletion := func(name string, mech int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
		d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		d.Name, d.Mechanism = name, mech
		return d
	}
	alter := func(dels []kmsg.AlterUserSCRAMCredentialsRequestDeletion, ups ...kmsg.AlterUserSCRAMCredentialsRequestUpsertion) []string {
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		req.Deletions, req.Upsertions = dels, ups
		var out []string
		for _, r := range w.mustRoundTrip(req).(*kmsg.AlterUserSCRAMCredentialsResponse).Results {
			out = append(out, fmt.Sprintf("%s:%s", r.User, protocol.ErrorCode(r.ErrorCode)))
		}
		return out
	}
	if got := alter(nil, upsertion("bob", 1, 4096), upsertion("ivy", 2, 16384)); !slices.Equal(got, []string{"bob:NONE", "ivy:NONE"}) {
		t.Fatalf("storing bob and ivy: %v", got)
	}
	before := b.cluster.Snapshot().SCRAM

	got := alter([]kmsg.AlterUserSCRAMCredentialsRequestDeletion{
		deletion("", 1), deletion("carol", 3), deletion("dave", 1), deletion("bob", 1), deletion("ivy", 2),
		deletion("ivy", 2)},
		upsertion("erin", 1, 4095), upsertion("frank", 2, 16385), upsertion("gina", 1, 4096), upsertion("hank", 1, 8192),
		upsertion("gina", 2, 4096), upsertion("bob", 2, 4096), upsertion("", 1, 4096), upsertion("jo", 0, 4096))
	want := []string{"hank:NONE",
		":UNACCEPTABLE_CREDENTIAL", "carol:UNSUPPORTED_SASL_MECHANISM", "dave:RESOURCE_NOT_FOUND",
		"ivy:DUPLICATE_RESOURCE", "erin:UNACCEPTABLE_CREDENTIAL", "frank:UNACCEPTABLE_CREDENTIAL",
		"gina:DUPLICATE_RESOURCE", "bob:DUPLICATE_RESOURCE", "jo:UNSUPPORTED_SASL_MECHANISM"}
	if !slices.Equal(got, want) {
		t.Errorf("results\n%v\nwant\n%v", got, want)
	}
	after := b.cluster.Snapshot().SCRAM
	for k := range before {
		if !bytes.Equal(before[k].StoredKey, after[k].StoredKey) {
			t.Errorf("%v changed", k)
		}
	}
	if len(after) != 3 {
		t.Errorf("%d credentials stored, want bob's, ivy's and hank's: %v", len(after), after)
	}

	// Deleting a credential the user does not have for that mechanism.
	if got := alter([]kmsg.AlterUserSCRAMCredentialsRequestDeletion{deletion("bob", 2), deletion("hank", 1)}); !slices.Equal(got, []string{"hank:NONE", "bob:RESOURCE_NOT_FOUND"}) {
		t.Errorf("deleting bob's SHA-512 and hank's SHA-256: %v", got)
	}
}

// TestAlterScramAuthorization: without ALTER on the cluster every user
// named gets CLUSTER_AUTHORIZATION_FAILED, once each, by name, and nothing
// is stored.
func TestAlterScramAuthorization(t *testing.T) {
	t.Parallel()
	b := startAuthzBroker(t)
	w := dialWireAs(t, b, "mallory")
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	for _, n := range []string{"zed", "amy", "zed"} {
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations, u.SaltedPassword = n, 1, 4096, []byte{1}
		req.Upsertions = append(req.Upsertions, u)
	}
	d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d.Name, d.Mechanism = "bea", 1
	req.Deletions = append(req.Deletions, d)
	var got []string
	for _, r := range w.mustRoundTrip(req).(*kmsg.AlterUserSCRAMCredentialsResponse).Results {
		got = append(got, fmt.Sprintf("%s:%s", r.User, protocol.ErrorCode(r.ErrorCode)))
	}
	if want := []string{"amy:CLUSTER_AUTHORIZATION_FAILED", "bea:CLUSTER_AUTHORIZATION_FAILED", "zed:CLUSTER_AUTHORIZATION_FAILED"}; !slices.Equal(got, want) {
		t.Errorf("refused request: %v, want %v", got, want)
	}
	if n := len(b.cluster.Snapshot().SCRAM); n != 0 {
		t.Errorf("%d credentials stored by a refused request", n)
	}
}
