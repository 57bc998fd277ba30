package sasl

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"hash"
	"strconv"
	"strings"
)

// Credential is what a SCRAM server keeps of a user's password (RFC 5802,
// section 3): never the password, nor the salted password.
type Credential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int
}

// ScramHash returns the hash of a SCRAM mechanism, nil for another name.
func ScramHash(mechanism string) func() hash.Hash {
	switch mechanism {
	case ScramSHA256:
		return sha256.New
	case ScramSHA512:
		return sha512.New
	}
	return nil
}

// NewCredential derives the credential of a salted password, as
// AlterUserScramCredentials carries it (the client salts it).
func NewCredential(h func() hash.Hash, salt, saltedPassword []byte, iterations int) Credential {
	clientKey := hmacOf(h, saltedPassword, []byte("Client Key"))
	stored := h()
	stored.Write(clientKey)
	return Credential{Salt: salt, StoredKey: stored.Sum(nil), ServerKey: hmacOf(h, saltedPassword, []byte("Server Key")),
		Iterations: iterations}
}

// SaltPassword is SCRAM's Hi(): PBKDF2 with the hash's HMAC.
func SaltPassword(h func() hash.Hash, password string, salt []byte, iterations int) ([]byte, error) {
	return pbkdf2.Key(h, password, salt, iterations, h().Size())
}

func hmacOf(h func() hash.Hash, key, msg []byte) []byte {
	m := hmac.New(h, key)
	m.Write(msg)
	return m.Sum(nil)
}

// ScramServer is a SCRAM server: client-first, server-first, client-final,
// server-final. Channel binding is not offered (a "p=" client is
// refused), an authorization id must name the user itself, and Kafka's
// delegation-token extension (tokenauth=true) is refused, there being no
// delegation tokens.
type ScramServer struct {
	// Hash is the mechanism's hash (ScramHash).
	Hash func() hash.Hash
	// Lookup returns user's credential for this mechanism, false for none.
	Lookup func(user string) (Credential, bool)
	// Nonce, when set, makes the server's part of the nonce (tests); by
	// default 24 random bytes, base64.
	Nonce func() string

	state       int // 0 first, 1 final, 2 done or failed
	user        string
	cred        Credential
	gs2Header   string
	clientFirst string // client-first-message-bare
	serverFirst string
	nonce       string
}

// Step runs the exchange's next step.
func (s *ScramServer) Step(token []byte) ([]byte, bool, error) {
	if len(token) > maxToken {
		s.state = 2
		return nil, false, ErrAuthentication
	}
	switch s.state {
	case 0:
		reply, err := s.first(string(token))
		if err != nil {
			s.state = 2
			return nil, false, err
		}
		s.state = 1
		return reply, false, nil
	case 1:
		s.state = 2
		reply, err := s.final(string(token))
		if err != nil {
			return nil, false, err
		}
		return reply, true, nil
	}
	return nil, false, ErrAuthentication
}

// Principal is the authenticated user.
func (s *ScramServer) Principal() string { return s.user }

// first reads client-first-message: gs2-header client-first-message-bare.
func (s *ScramServer) first(msg string) ([]byte, error) {
	// gs2-header: cbind-flag "," [authzid] ","
	cbind, rest, ok := strings.Cut(msg, ",")
	if !ok || (cbind != "n" && cbind != "y") {
		return nil, ErrAuthentication
	}
	authzid, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, ErrAuthentication
	}
	s.gs2Header = msg[:len(msg)-len(bare)]
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") {
		return nil, ErrAuthentication
	}
	user, ok := unescapeName(attrs[0][2:])
	clientNonce := attrs[1][2:]
	if !ok || user == "" || clientNonce == "" {
		return nil, ErrAuthentication
	}
	for _, ext := range attrs[2:] {
		if strings.EqualFold(ext, "tokenauth=true") {
			return nil, ErrAuthentication
		}
	}
	if authzid != "" {
		if !strings.HasPrefix(authzid, "a=") {
			return nil, ErrAuthentication
		}
		if id, ok := unescapeName(authzid[2:]); !ok || id != user {
			return nil, ErrAuthentication
		}
	}
	cred, ok := s.Lookup(user)
	if !ok {
		return nil, ErrAuthentication
	}
	s.user, s.cred, s.clientFirst = user, cred, bare
	serverPart := ""
	if s.Nonce != nil {
		serverPart = s.Nonce()
	} else {
		b := make([]byte, 24)
		rand.Read(b)
		serverPart = base64.RawURLEncoding.EncodeToString(b)
	}
	s.nonce = clientNonce + serverPart
	s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) + ",i=" + strconv.Itoa(cred.Iterations)
	return []byte(s.serverFirst), nil
}

// final reads client-final-message and checks the proof.
func (s *ScramServer) final(msg string) ([]byte, error) {
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return nil, ErrAuthentication
	}
	withoutProof, proofB64 := msg[:i], msg[i+3:]
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || attrs[0] != "c="+base64.StdEncoding.EncodeToString([]byte(s.gs2Header)) || attrs[1] != "r="+s.nonce {
		return nil, ErrAuthentication
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	h := s.Hash
	if err != nil || len(proof) != h().Size() || len(s.cred.StoredKey) != h().Size() {
		return nil, ErrAuthentication
	}
	authMessage := []byte(s.clientFirst + "," + s.serverFirst + "," + withoutProof)
	signature := hmacOf(h, s.cred.StoredKey, authMessage)
	clientKey := make([]byte, len(proof))
	for k := range proof {
		clientKey[k] = proof[k] ^ signature[k]
	}
	stored := h()
	stored.Write(clientKey)
	if subtle.ConstantTimeCompare(stored.Sum(nil), s.cred.StoredKey) != 1 {
		return nil, ErrAuthentication
	}
	return []byte("v=" + base64.StdEncoding.EncodeToString(hmacOf(h, s.cred.ServerKey, authMessage))), nil
}

// unescapeName decodes a saslname: "=2C" is ",", "=3D" is "=", and any
// other "=" is an error.
func unescapeName(s string) (string, bool) {
	if !strings.Contains(s, "=") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}
