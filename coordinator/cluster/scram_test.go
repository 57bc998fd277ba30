package cluster

import (
	"bytes"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"testing"
)

// TestScramCredentialRFC7677: the keys derived from the RFC 7677
// SCRAM-SHA-256 example's salted password check that exchange: the
// client's proof recovers StoredKey, and ServerKey signs what the server
// sent.
func TestScramCredentialRFC7677(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	salted, err := pbkdf2.Key(sha256.New, "pencil", salt, 4096, sha256.Size)
	if err != nil {
		t.Fatal(err)
	}
	cr := NewScramCredential(ScramSHA256, salt, salted, 4096)
	if !bytes.Equal(cr.Salt, salt) || cr.Iterations != 4096 {
		t.Fatalf("credential keeps salt %x, iterations %d", cr.Salt, cr.Iterations)
	}
	const nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
	authMessage := "n=user,r=rOprNGfwEbeRWgbNEkqO," +
		"r=" + nonce + ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096," +
		"c=biws,r=" + nonce
	mac := func(key []byte) []byte {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(authMessage))
		return h.Sum(nil)
	}
	if got, want := base64.StdEncoding.EncodeToString(mac(cr.ServerKey)), "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="; got != want {
		t.Errorf("ServerSignature from ServerKey %s, want %s (RFC 7677)", got, want)
	}
	proof, _ := base64.StdEncoding.DecodeString("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
	clientKey := mac(cr.StoredKey) // ClientSignature, XORed with the proof below
	for i := range clientKey {
		clientKey[i] ^= proof[i]
	}
	if got := sha256.Sum256(clientKey); !bytes.Equal(got[:], cr.StoredKey) {
		t.Errorf("H(ClientProof XOR ClientSignature) = %x, want StoredKey %x", got, cr.StoredKey)
	}
}

// TestScram: credentials are stored per user and mechanism, seen by
// another node, replaced by a second upsert and removed by deletions that
// report whether there was one; names with "/" and any character survive
// the key; more changes than one transaction holds go through.
func TestScram(t *testing.T) {
	t.Parallel()
	a := open(t, embeddedConfig(t.TempDir(), 1))
	b := open(t, externalConfig(a, 2))
	ctx := testCtx(t)
	cred := func(n byte, it int32) ScramCredential {
		return ScramCredential{Salt: []byte{n}, StoredKey: []byte{n, 1}, ServerKey: []byte{n, 2}, Iterations: it}
	}
	alice256 := ScramKey{"alice", ScramSHA256}
	alice512 := ScramKey{"alice", ScramSHA512}
	odd := ScramKey{"we/ird %2F näme", ScramSHA512}
	if _, err := a.AlterScram(ctx, []ScramUpsert{{alice256, cred(1, 4096)}, {alice512, cred(2, 8192)}, {odd, cred(3, 4096)}}, nil); err != nil {
		t.Fatal(err)
	}
	// The writer's own view has it on return.
	if got := a.Snapshot().SCRAM; len(got) != 3 || got[alice512].Iterations != 8192 || !bytes.Equal(got[odd].ServerKey, []byte{3, 2}) {
		t.Fatalf("node 1 sees %v right after the write", got)
	}
	eventually(t, func() string {
		if got := b.Snapshot().SCRAM; len(got) != 3 || got[odd].Iterations != 4096 {
			return fmt.Sprintf("node 2 sees %v", got)
		}
		return ""
	})

	gone, err := b.AlterScram(ctx, []ScramUpsert{{alice512, cred(4, 16384)}}, []ScramKey{alice256, {"bob", ScramSHA256}})
	if err != nil {
		t.Fatal(err)
	}
	if len(gone) != 2 || !gone[0] || gone[1] {
		t.Fatalf("deletions of alice's and bob's report %v, want [true false]", gone)
	}
	if got := b.Snapshot().SCRAM; len(got) != 2 || got[alice512].Iterations != 16384 || !bytes.Equal(got[alice512].Salt, []byte{4}) {
		t.Fatalf("node 2 sees %v after replacing alice's SHA-512", got)
	}
	prev := b.Snapshot().SCRAM
	if _, err := b.CreateTopic(ctx, TopicSpec{Name: "t", Assignments: [][]int32{{1}}}); err != nil {
		t.Fatal(err)
	}
	if m := b.Snapshot(); fmt.Sprintf("%p", m.SCRAM) != fmt.Sprintf("%p", prev) {
		t.Error("a topic change rebuilt the SCRAM map")
	}

	for _, bad := range [][]ScramKey{{{"", ScramSHA256}}, {{"x", 3}}, {{"x", ScramSHA256}, {"x", ScramSHA256}}} {
		if _, err := a.AlterScram(ctx, nil, bad); err == nil {
			t.Errorf("deleting %v was accepted", bad)
		}
	}

	var many []ScramUpsert
	var manyKeys []ScramKey
	for i := range 150 {
		k := ScramKey{fmt.Sprintf("u%03d", i), ScramSHA256}
		many = append(many, ScramUpsert{k, cred(byte(i), 4096)})
		manyKeys = append(manyKeys, k)
	}
	if _, err := a.AlterScram(ctx, many, nil); err != nil {
		t.Fatal(err)
	}
	if n := len(a.Snapshot().SCRAM); n != 152 {
		t.Fatalf("%d credentials after storing 150 more, want 152", n)
	}
	gone, err = a.AlterScram(ctx, nil, manyKeys)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range gone {
		if !g {
			t.Fatalf("deletion %d of 150 reports nothing removed", i)
		}
	}
	if n := len(a.Snapshot().SCRAM); n != 2 {
		t.Fatalf("%d credentials after deleting the 150, want 2", n)
	}
}

// TestParseScramKey: a key round-trips; keys this version does not write
// are not credentials.
func TestParseScramKey(t *testing.T) {
	k := newKeyspace("/p")
	sk := ScramKey{"a/b c", ScramSHA512}
	if pk := k.parse(k.scram(sk)); pk.kind != kindScram || pk.scram != sk {
		t.Fatalf("parsed %+v", pk)
	}
	for _, bad := range []string{"scram/a", "scram//1", "scram/a/0", "scram/a/3", "scram/a/01", "scram/a/1/2", "scram/a%zz/1", "scram/a b/1"} {
		if pk := k.parse("/p/" + bad); pk.kind == kindScram {
			t.Errorf("%s parsed as %v", bad, pk.scram)
		}
	}
}
