package sasl

import (
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// The bounds a client puts on a SCRAM server's iteration count. The lower
// one is Kafka's minimum, so that a server cannot ask for a weakly salted
// proof; the upper one is the most AlterUserScramCredentials accepts, so
// that a server cannot make the broker spend seconds of CPU on one login.
const (
	clientMinIterations = 4096
	clientMaxIterations = 16384
)

var (
	errClientDone      = errors.New("sasl: client exchange already ended")
	errServerMessage   = errors.New("sasl: malformed server message")
	errServerNonce     = errors.New("sasl: server nonce does not extend the client nonce")
	errServerSignature = errors.New("sasl: server signature does not match")
)

// Client is one authentication exchange on the client side, the mirror of
// Server: the broker uses it to log in to another broker's SASL listener.
// Like Server it does no I/O; the caller carries the tokens.
type Client interface {
	// Step takes the server's last token (nil for the first call) and
	// returns the client's next token. done reports that the exchange is
	// complete and the server proved itself (for SCRAM, its signature was
	// checked; PLAIN has no such proof, so done only means the server
	// answered). After done no token is sent: token is nil. An error ends
	// the exchange, and every later Step fails.
	Step(challenge []byte) (token []byte, done bool, err error)
}

// NewClient starts an exchange for mechanism (Plain, ScramSHA256 or
// ScramSHA512) as user with password. Any other mechanism is an error.
func NewClient(mechanism, user, password string) (Client, error) {
	if mechanism == Plain {
		if user == "" || strings.ContainsRune(user+password, 0) {
			return nil, errors.New("sasl: PLAIN user must be non-empty and neither user nor password may hold NUL")
		}
		return &plainClient{user: user, password: password}, nil
	}
	if h := ScramHash(mechanism); h != nil {
		return &scramClient{hash: h, user: user, password: password}, nil
	}
	return nil, fmt.Errorf("sasl: unsupported client mechanism %q", mechanism)
}

// plainClient sends its one token, then takes the server's empty reply as
// the end of the exchange.
type plainClient struct {
	user, password string
	step           int // 0 first token, 1 awaiting the reply, 2 ended
}

func (c *plainClient) Step(challenge []byte) ([]byte, bool, error) {
	step := c.step
	c.step = 2
	switch {
	case step == 0 && len(challenge) == 0:
		c.step = 1
		return []byte("\x00" + c.user + "\x00" + c.password), false, nil
	case step == 1 && len(challenge) == 0:
		return nil, true, nil
	case step == 1:
		return nil, false, errServerMessage
	}
	return nil, false, errClientDone
}

// scramClient runs RFC 5802's client side without channel binding.
type scramClient struct {
	hash           func() hash.Hash
	user, password string
	// nonce is the client nonce; tests set it, otherwise the first Step
	// draws 24 random bytes.
	nonce string

	step        int    // 0 client-first, 1 client-final, 2 verify, 3 ended
	clientFirst string // client-first-message-bare, part of AuthMessage
	serverSig   []byte // the server signature server-final must carry
}

func (c *scramClient) Step(challenge []byte) ([]byte, bool, error) {
	step := c.step
	c.step = 3
	if len(challenge) > maxToken {
		return nil, false, errServerMessage
	}
	switch step {
	case 0:
		if len(challenge) != 0 {
			return nil, false, errServerMessage
		}
		if c.nonce == "" {
			b := make([]byte, 24)
			rand.Read(b)
			c.nonce = base64.RawURLEncoding.EncodeToString(b)
		}
		c.clientFirst = "n=" + escapeName(c.user) + ",r=" + c.nonce
		c.step = 1
		return []byte("n,," + c.clientFirst), false, nil
	case 1:
		token, err := c.final(string(challenge))
		if err != nil {
			return nil, false, err
		}
		c.step = 2
		return token, false, nil
	case 2:
		if err := c.verify(string(challenge)); err != nil {
			return nil, false, err
		}
		return nil, true, nil
	}
	return nil, false, errClientDone
}

// final reads server-first-message (r=nonce,s=salt,i=iterations, then
// optional extensions) and builds client-final-message with the proof.
func (c *scramClient) final(serverFirst string) ([]byte, error) {
	attrs := strings.Split(serverFirst, ",")
	if len(attrs) < 3 || !strings.HasPrefix(attrs[0], "r=") || !strings.HasPrefix(attrs[1], "s=") ||
		!strings.HasPrefix(attrs[2], "i=") {
		return nil, errServerMessage
	}
	nonce := attrs[0][2:]
	if len(nonce) <= len(c.nonce) || !strings.HasPrefix(nonce, c.nonce) {
		return nil, errServerNonce
	}
	salt, err := base64.StdEncoding.DecodeString(attrs[1][2:])
	if err != nil || len(salt) == 0 {
		return nil, errServerMessage
	}
	iterations, err := strconv.Atoi(attrs[2][2:])
	if err != nil || iterations < clientMinIterations || iterations > clientMaxIterations {
		return nil, fmt.Errorf("sasl: server asks for %q iterations, outside %d-%d",
			attrs[2][2:], clientMinIterations, clientMaxIterations)
	}
	salted, err := SaltPassword(c.hash, c.password, salt, iterations)
	if err != nil {
		return nil, fmt.Errorf("sasl: salt password: %w", err)
	}
	// "biws" is base64 of the gs2 header "n,,": no channel binding, no
	// authorization id.
	withoutProof := "c=biws,r=" + nonce
	authMessage := []byte(c.clientFirst + "," + serverFirst + "," + withoutProof)
	clientKey := hmacOf(c.hash, salted, []byte("Client Key"))
	stored := c.hash()
	stored.Write(clientKey)
	proof := hmacOf(c.hash, stored.Sum(nil), authMessage)
	for i := range proof {
		proof[i] ^= clientKey[i]
	}
	c.serverSig = hmacOf(c.hash, hmacOf(c.hash, salted, []byte("Server Key")), authMessage)
	return []byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof)), nil
}

// verify checks server-final-message: "v=" and the server signature, or
// "e=" and the server's reason for refusing, either followed by optional
// extensions.
func (c *scramClient) verify(serverFinal string) error {
	first, _, _ := strings.Cut(serverFinal, ",")
	if reason, ok := strings.CutPrefix(first, "e="); ok {
		return fmt.Errorf("sasl: server refused: %q", reason)
	}
	sig, ok := strings.CutPrefix(first, "v=")
	if !ok {
		return errServerMessage
	}
	got, err := base64.StdEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, c.serverSig) {
		return errServerSignature
	}
	return nil
}

// nameEscaper encodes a saslname, the inverse of unescapeName.
var nameEscaper = strings.NewReplacer("=", "=3D", ",", "=2C")

func escapeName(s string) string { return nameEscaper.Replace(s) }
