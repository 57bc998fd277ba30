package sasl

import (
	"strings"
	"time"
)

// OAuthBearer is the SASL mechanism of RFC 7628.
const OAuthBearer = "OAUTHBEARER"

// OAuthBearerServer is OAUTHBEARER's server (RFC 7628) as Kafka runs it.
// The client's one message is a GS2 header and key/value pairs separated
// by 0x01, one of them auth=Bearer <token>:
//
//	n,[a=<authzid>],^Aauth=Bearer <token>^A[<key>=<value>^A...]^A
//
// A valid token completes the exchange with an empty reply. An invalid
// one is answered with the RFC's JSON error, {"status":"invalid_token"};
// the client acknowledges it with a lone 0x01, and the exchange fails.
// Extensions (the other pairs) are accepted and ignored, as Kafka's
// validators do when none is configured. An authorization id must name
// the token's principal.
type OAuthBearerServer struct {
	// Validate checks a token.
	Validate func(token string) (Token, error)

	state int // 0 first, 1 after an error reply, 2 done or failed
	token Token
	// Err is why the last token was refused, for the log.
	Err error
}

// oauthError is the reply to a refused token.
const oauthError = `{"status":"invalid_token"}`

// Step takes the client's message.
func (s *OAuthBearerServer) Step(msg []byte) ([]byte, bool, error) {
	if len(msg) > maxToken {
		s.state = 2
		return nil, false, ErrAuthentication
	}
	switch s.state {
	case 1:
		s.state = 2
		if string(msg) == "\x01" {
			return nil, false, Failure(oauthError)
		}
		return nil, false, ErrAuthentication
	case 2:
		return nil, false, ErrAuthentication
	}
	authzid, token, ok := parseOAuthInitial(string(msg))
	if !ok {
		s.state = 2
		return nil, false, ErrAuthentication
	}
	t, err := s.Validate(token)
	if err != nil {
		s.Err, s.state = err, 1
		return []byte(oauthError), false, nil
	}
	s.state = 2
	if authzid != "" && authzid != t.Principal {
		return nil, false, Failure("Authentication failed: Client requested an authorization id (" + authzid +
			") that is different from the token's principal name (" + t.Principal + ")")
	}
	s.token = t
	return []byte{}, true, nil
}

// Principal is the token's principal.
func (s *OAuthBearerServer) Principal() string { return s.token.Principal }

// Expiry is when the token expires: the authentication holds no longer.
func (s *OAuthBearerServer) Expiry() time.Time { return s.token.Expiry }

// parseOAuthInitial reads the client's initial response.
func parseOAuthInitial(msg string) (authzid, token string, ok bool) {
	gs2, rest, ok := strings.Cut(msg, ",")
	if !ok || gs2 != "n" {
		return "", "", false
	}
	authz, rest, ok := strings.Cut(rest, ",")
	if !ok || (authz != "" && !strings.HasPrefix(authz, "a=")) {
		return "", "", false
	}
	if authzid, ok = unescapeName(strings.TrimPrefix(authz, "a=")); !ok {
		return "", "", false
	}
	if !strings.HasPrefix(rest, "\x01") || !strings.HasSuffix(rest, "\x01\x01") {
		return "", "", false
	}
	for _, kv := range strings.Split(strings.TrimSuffix(rest[1:], "\x01\x01"), "\x01") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return "", "", false
		}
		if k == "auth" {
			scheme, t, ok := strings.Cut(v, " ")
			t = strings.TrimLeft(t, " ")
			if !ok || !strings.EqualFold(scheme, "bearer") || t == "" || strings.ContainsAny(t, " \x01") {
				return "", "", false
			}
			token = t
		}
	}
	return authzid, token, token != ""
}

// Failure is a refusal whose text the client may be told, as Kafka tells
// it SaslAuthenticationException's message.
type Failure string

func (f Failure) Error() string { return string(f) }

// Is makes a Failure an ErrAuthentication.
func (f Failure) Is(target error) bool { return target == ErrAuthentication }
