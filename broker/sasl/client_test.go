package sasl

import (
	"errors"
	"strings"
	"testing"
)

// exchange drives c against s as the broker would, passing each reply
// through tamper (the identity when nil). It returns whether the server
// was the side that failed, and the error of the side that did.
func exchange(t *testing.T, c Client, s Server, tamper func(string) string) (atServer bool, err error) {
	t.Helper()
	token, done, err := c.Step(nil)
	for i := 0; err == nil && !done; i++ {
		if i == 5 {
			t.Fatal("exchange did not end after 5 rounds")
		}
		reply, _, serr := s.Step(token)
		if serr != nil {
			return true, serr
		}
		if tamper != nil {
			reply = []byte(tamper(string(reply)))
		}
		token, done, err = c.Step(reply)
	}
	if err == nil && token != nil {
		t.Errorf("client sent %q after done", token)
	}
	return false, err
}

func newScramServer(t *testing.T, mech, user, password string) *ScramServer {
	t.Helper()
	h := ScramHash(mech)
	salt := []byte("0123456789abcdef")
	salted, err := SaltPassword(h, password, salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	cred := NewCredential(h, salt, salted, 4096)
	return &ScramServer{Hash: h, Lookup: func(u string) (Credential, bool) { return cred, u == user }}
}

func TestClientPlain(t *testing.T) {
	users := map[string]string{"alice": "alice-secret"}
	for _, c := range []struct {
		password string
		ok       bool
	}{{"alice-secret", true}, {"wrong", false}} {
		cl, err := NewClient(Plain, "alice", c.password)
		if err != nil {
			t.Fatal(err)
		}
		s := &PlainServer{Password: func(u string) (string, bool) { p, ok := users[u]; return p, ok }}
		atServer, err := exchange(t, cl, s, nil)
		if c.ok && (err != nil || s.Principal() != "alice") {
			t.Errorf("password %q: error %v, principal %q; want success as alice", c.password, err, s.Principal())
		}
		if _, _, err := cl.Step(nil); c.ok && err == nil {
			t.Errorf("password %q: a step after the exchange was taken", c.password)
		}
		if !c.ok && (!atServer || !errors.Is(err, ErrAuthentication)) {
			t.Errorf("password %q: error %v (at server %v), want the server's ErrAuthentication", c.password, err, atServer)
		}
	}
	if _, err := NewClient(Plain, "al\x00ice", "x"); err == nil {
		t.Error("PLAIN took a user holding NUL")
	}
	if _, err := NewClient("GSSAPI", "alice", "x"); err == nil {
		t.Error("GSSAPI client was made")
	}
}

// TestClientScram logs in with both hashes, with user names that need
// escaping, and with a wrong password, which the server refuses.
func TestClientScram(t *testing.T) {
	for _, mech := range []string{ScramSHA256, ScramSHA512} {
		for _, user := range []string{"alice", "a,b=c", "=2C,,=="} {
			for _, password := range []string{"s3cret", "wrong"} {
				cl, err := NewClient(mech, user, password)
				if err != nil {
					t.Fatal(err)
				}
				s := newScramServer(t, mech, user, "s3cret")
				atServer, err := exchange(t, cl, s, nil)
				if password == "s3cret" && (err != nil || s.Principal() != user) {
					t.Errorf("%s %q: error %v, principal %q; want success", mech, user, err, s.Principal())
				}
				if password == "wrong" && (!atServer || !errors.Is(err, ErrAuthentication)) {
					t.Errorf("%s %q wrong password: error %v (at server %v), want the server's ErrAuthentication",
						mech, user, err, atServer)
				}
			}
		}
	}
}

// TestClientRFC7677 checks the client's messages against the RFC's
// example, byte for byte, with the RFC's client nonce.
func TestClientRFC7677(t *testing.T) {
	c := &scramClient{hash: ScramHash(ScramSHA256), user: "user", password: rfc7677.password, nonce: "rOprNGfwEbeRWgbNEkqO"}
	for i, step := range []struct{ in, want string }{
		{"", rfc7677.clientFirst}, {rfc7677.serverFirst, rfc7677.clientFinal}, {rfc7677.serverFinal, ""},
	} {
		token, done, err := c.Step([]byte(step.in))
		if err != nil || string(token) != step.want || done != (i == 2) {
			t.Fatalf("step %d: %q, done %v, %v; want %q", i, token, done, err, step.want)
		}
	}
	if _, _, err := c.Step(nil); err == nil {
		t.Fatal("a step after done was taken")
	}
}

// TestClientRefusals: a server that does not prove itself, or asks for
// what the client will not give, ends the exchange at the client.
func TestClientRefusals(t *testing.T) {
	salt := "s=W22ZaJ0SNY7soEsUEjb6gQ=="
	for _, c := range []struct {
		name    string
		tamper  func(string) string
		wantErr error
	}{
		{"tampered server-final", func(m string) string {
			if strings.HasPrefix(m, "v=") {
				// Another first character, whatever it was (the
				// signature changes with the server's random nonce).
				first := "A"
				if m[2] == 'A' {
					first = "B"
				}
				return "v=" + first + m[3:]
			}
			return m
		}, errServerSignature},
		{"server error", func(m string) string {
			if strings.HasPrefix(m, "v=") {
				return "e=other-error"
			}
			return m
		}, nil},
		{"nonce not extended", func(m string) string { return "r=x" + m[2:] }, errServerNonce},
		{"nonce only echoed", func(string) string { return "r=fixednonce," + salt + ",i=4096" }, errServerNonce},
		{"weak iterations", func(string) string { return "r=fixednonceX," + salt + ",i=4095" }, nil},
		{"costly iterations", func(string) string { return "r=fixednonceX," + salt + ",i=16385" }, nil},
		{"mandatory extension", func(string) string { return "m=x,r=fixednonceX," + salt + ",i=4096" }, errServerMessage},
	} {
		cl, _ := NewClient(ScramSHA512, "alice", "s3cret")
		cl.(*scramClient).nonce = "fixednonce"
		atServer, err := exchange(t, cl, newScramServer(t, ScramSHA512, "alice", "s3cret"), c.tamper)
		if err == nil || atServer || (c.wantErr != nil && !errors.Is(err, c.wantErr)) {
			t.Errorf("%s: error %v (at server %v), want a client error %v", c.name, err, atServer, c.wantErr)
		}
	}
}

// FuzzClient feeds a SCRAM client two arbitrary server tokens: it never
// panics, and never reports done with the RFC's server-first unless the
// RFC's signature follows.
func FuzzClient(f *testing.F) {
	f.Add([]byte(rfc7677.serverFirst), []byte(rfc7677.serverFinal))
	f.Add([]byte("r=rOprNGfwEbeRWgbNEkqOx,s=,i=99999999999999999999"), []byte("e=x,y"))
	f.Fuzz(func(t *testing.T, first, final []byte) {
		c := &scramClient{hash: ScramHash(ScramSHA256), user: "user", password: rfc7677.password, nonce: "rOprNGfwEbeRWgbNEkqO"}
		if _, _, err := c.Step(nil); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.Step(first); err != nil {
			return
		}
		token, done, err := c.Step(final)
		if done && (err != nil || token != nil) {
			t.Fatalf("done with token %q, error %v", token, err)
		}
		if done && string(first) == rfc7677.serverFirst && !strings.HasPrefix(string(final), rfc7677.serverFinal) {
			t.Fatalf("done with server-final %q", final)
		}
	})
}
