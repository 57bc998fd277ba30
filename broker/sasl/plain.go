package sasl

import (
	"bytes"
	"crypto/subtle"
)

// PlainServer is PLAIN's server: one token, authzid NUL authcid NUL
// password, checked against a password lookup. As Kafka's PLAIN server, an
// authorization id other than empty or the user itself is refused.
type PlainServer struct {
	// Password returns the password of user, false for a user it does not
	// know.
	Password func(user string) (string, bool)
	user     string
	done     bool
}

// Step checks the one token PLAIN has.
func (s *PlainServer) Step(token []byte) ([]byte, bool, error) {
	if s.done || len(token) > maxToken {
		return nil, false, ErrAuthentication
	}
	s.done = true
	parts := bytes.Split(token, []byte{0})
	if len(parts) != 3 {
		return nil, false, ErrAuthentication
	}
	authzid, user, pass := string(parts[0]), string(parts[1]), parts[2]
	if user == "" || len(pass) == 0 || (authzid != "" && authzid != user) {
		return nil, false, ErrAuthentication
	}
	want, ok := s.Password(user)
	// Compared in constant time, and compared even for an unknown user,
	// so that timing does not tell which users exist.
	if !ok {
		want = "\x00" + string(pass)
	}
	if subtle.ConstantTimeCompare([]byte(want), pass) != 1 || !ok {
		return nil, false, Failure("Authentication failed: Invalid username or password")
	}
	s.user = user
	return nil, true, nil
}

// Principal is the authenticated user.
func (s *PlainServer) Principal() string { return s.user }
