package sasl

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func TestPlain(t *testing.T) {
	users := map[string]string{"alice": "alice-secret", "bob": "b"}
	lookup := func(u string) (string, bool) { p, ok := users[u]; return p, ok }
	for _, c := range []struct {
		token string
		ok    bool
	}{
		{"\x00alice\x00alice-secret", true},
		{"alice\x00alice\x00alice-secret", true}, // authzid = the user
		{"bob\x00alice\x00alice-secret", false},  // another authzid
		{"\x00alice\x00wrong", false},
		{"\x00alice\x00alice-secret\x00", false},
		{"\x00carol\x00alice-secret", false},
		{"\x00\x00x", false},
		{"\x00alice\x00", false},
		{"alice-secret", false},
		{"", false},
	} {
		s := &PlainServer{Password: lookup}
		_, done, err := s.Step([]byte(c.token))
		if c.ok != (done && err == nil) {
			t.Errorf("%q: done %v err %v, want ok %v", c.token, done, err, c.ok)
		}
		if c.ok && s.Principal() != "alice" {
			t.Errorf("%q: principal %q", c.token, s.Principal())
		}
		if !c.ok && !errors.Is(err, ErrAuthentication) {
			t.Errorf("%q: error %v, want ErrAuthentication", c.token, err)
		}
		if _, _, err := s.Step([]byte(c.token)); err == nil {
			t.Errorf("%q: a second token was taken", c.token)
		}
	}
}

// rfc7677 is the SCRAM-SHA-256 example of RFC 7677, section 3.
var rfc7677 = struct {
	password, salt, serverNonce                        string
	clientFirst, serverFirst, clientFinal, serverFinal string
}{
	password:    "pencil",
	salt:        "W22ZaJ0SNY7soEsUEjb6gQ==",
	serverNonce: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
	clientFirst: "n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
	serverFirst: "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
	clientFinal: "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
	serverFinal: "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
}

func rfcCredential(t testing.TB) Credential {
	t.Helper()
	salt, _ := base64.StdEncoding.DecodeString(rfc7677.salt)
	salted, err := SaltPassword(sha256.New, rfc7677.password, salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	return NewCredential(sha256.New, salt, salted, 4096)
}

func rfcServer(t testing.TB) *ScramServer {
	return rfcServerWith(rfcCredential(t))
}

func rfcServerWith(cred Credential) *ScramServer {
	return &ScramServer{Hash: sha256.New, Nonce: func() string { return rfc7677.serverNonce },
		Lookup: func(u string) (Credential, bool) { return cred, u == "user" }}
}

// TestScramRFC7677 runs the RFC's exchange: the server's messages are the
// RFC's, byte for byte.
func TestScramRFC7677(t *testing.T) {
	s := rfcServer(t)
	first, done, err := s.Step([]byte(rfc7677.clientFirst))
	if err != nil || done || string(first) != rfc7677.serverFirst {
		t.Fatalf("server-first %q, %v, %v; want %q", first, done, err, rfc7677.serverFirst)
	}
	final, done, err := s.Step([]byte(rfc7677.clientFinal))
	if err != nil || !done || string(final) != rfc7677.serverFinal {
		t.Fatalf("server-final %q, %v, %v; want %q", final, done, err, rfc7677.serverFinal)
	}
	if s.Principal() != "user" {
		t.Fatalf("principal %q", s.Principal())
	}
	if _, _, err := s.Step([]byte(rfc7677.clientFinal)); err == nil {
		t.Fatal("a token after the exchange was taken")
	}
}

// TestScramRefusals: every way the exchange can go wrong ends it with
// ErrAuthentication.
func TestScramRefusals(t *testing.T) {
	badProof := strings.Replace(rfc7677.clientFinal, "p=dHzb", "p=dHzc", 1)
	for _, c := range []struct{ name, first, final string }{
		{"unknown user", "n,,n=carol,r=rOprNGfwEbeRWgbNEkqO", ""},
		{"wrong proof", rfc7677.clientFirst, badProof},
		{"channel binding required", "p=tls-unique,,n=user,r=rOprNGfwEbeRWgbNEkqO", ""},
		{"other authzid", "n,a=admin,n=user,r=rOprNGfwEbeRWgbNEkqO", ""},
		{"delegation token", "n,,n=user,r=rOprNGfwEbeRWgbNEkqO,tokenauth=true", ""},
		{"mandatory extension", "n,,m=x,n=user,r=rOprNGfwEbeRWgbNEkqO", ""},
		{"bad escape", "n,,n=us=er,r=rOprNGfwEbeRWgbNEkqO", ""},
		{"no nonce", "n,,n=user", ""},
		{"wrong nonce", rfc7677.clientFirst, strings.Replace(rfc7677.clientFinal, "r=rOpr", "r=xOpr", 1)},
		{"wrong channel header", rfc7677.clientFirst, strings.Replace(rfc7677.clientFinal, "c=biws", "c=eSws", 1)},
		{"no proof", rfc7677.clientFirst, "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"},
		{"short proof", rfc7677.clientFirst, "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=AAAA"},
	} {
		s := rfcServer(t)
		_, _, err := s.Step([]byte(c.first))
		if c.final != "" {
			if err != nil {
				t.Fatalf("%s: client-first refused: %v", c.name, err)
			}
			_, _, err = s.Step([]byte(c.final))
		}
		if !errors.Is(err, ErrAuthentication) {
			t.Errorf("%s: error %v, want ErrAuthentication", c.name, err)
		}
	}
}

// TestScramClient runs a client written here from the RFC against the
// server, for both hashes, with an escaped user name and the user as
// authorization id.
func TestScramClient(t *testing.T) {
	for _, mech := range []string{ScramSHA256, ScramSHA512} {
		h := ScramHash(mech)
		salt := []byte("0123456789abcdef")
		salted, err := SaltPassword(h, "s3cret", salt, 8192)
		if err != nil {
			t.Fatal(err)
		}
		cred := NewCredential(h, salt, salted, 8192)
		s := &ScramServer{Hash: h, Lookup: func(u string) (Credential, bool) { return cred, u == "a,b=c" }}
		gs2 := "n,a=a=2Cb=3Dc,"
		bare := "n=a=2Cb=3Dc,r=clientnonce"
		first, _, err := s.Step([]byte(gs2 + bare))
		if err != nil {
			t.Fatalf("%s: %v", mech, err)
		}
		nonce := strings.TrimPrefix(strings.Split(string(first), ",")[0], "r=")
		withoutProof := "c=" + base64.StdEncoding.EncodeToString([]byte(gs2)) + ",r=" + nonce
		auth := []byte(bare + "," + string(first) + "," + withoutProof)
		clientKey := hmacOf(h, salted, []byte("Client Key"))
		sig := hmacOf(h, cred.StoredKey, auth)
		proof := make([]byte, len(clientKey))
		for i := range proof {
			proof[i] = clientKey[i] ^ sig[i]
		}
		final, done, err := s.Step([]byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof)))
		if err != nil || !done {
			t.Fatalf("%s: final %v %v", mech, done, err)
		}
		want := "v=" + base64.StdEncoding.EncodeToString(hmacOf(h, hmacOf(h, salted, []byte("Server Key")), auth))
		if string(final) != want || s.Principal() != "a,b=c" {
			t.Fatalf("%s: server-final %q principal %q", mech, final, s.Principal())
		}
	}
	if ScramHash("SCRAM-SHA-1") != nil {
		t.Fatal("SCRAM-SHA-1 has a hash")
	}
}

// FuzzScram feeds the server two arbitrary tokens: it never panics, and
// succeeds only with the RFC's proof.
func FuzzScram(f *testing.F) {
	f.Add([]byte(rfc7677.clientFirst), []byte(rfc7677.clientFinal))
	f.Add([]byte("n,a=x,n=user,r=abc,ext=1"), []byte("c=biws,r=abc,p=="))
	cred := rfcCredential(f)
	f.Fuzz(func(t *testing.T, first, final []byte) {
		s := rfcServerWith(cred)
		if _, _, err := s.Step(first); err != nil {
			return
		}
		_, done, err := s.Step(final)
		if done && err == nil && (string(first) != rfc7677.clientFirst || string(final) != rfc7677.clientFinal) {
			// Another spelling of the same proof may pass only with
			// the same nonce and proof bytes.
			if !strings.Contains(string(final), "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=") {
				t.Fatalf("authenticated without the proof: %q / %q", first, final)
			}
		}
	})
}

// FuzzPlain: arbitrary tokens never panic and pass only with the password.
func FuzzPlain(f *testing.F) {
	f.Add([]byte("\x00alice\x00alice-secret"))
	f.Add([]byte("a\x00b\x00c\x00d"))
	f.Fuzz(func(t *testing.T, token []byte) {
		s := &PlainServer{Password: func(u string) (string, bool) { return "alice-secret", u == "alice" }}
		if _, done, err := s.Step(token); done && err == nil && !strings.HasSuffix(string(token), "\x00alice\x00alice-secret") {
			t.Fatalf("authenticated with %q", token)
		}
	})
}
