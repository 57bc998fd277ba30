// Package sasl holds the server side of the SASL mechanisms a Kafka broker
// offers, as state machines over the tokens SaslAuthenticate carries: PLAIN
// (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802, RFC 7677, with Kafka's
// tokenauth extension refused). They read no network and keep no clock;
// the broker feeds them each client token and sends back what they answer.
//
// A mechanism answers each token with the server's next token, or with an
// error once the exchange has failed. ErrAuthentication is the error a
// client may be told of (Kafka's SASL_AUTHENTICATION_FAILED): it says
// only that the credentials did not match, never which part, so that an
// unknown user and a wrong password look the same.
package sasl

import (
	"errors"
)

// Mechanism names, as SaslHandshake carries them.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// ErrAuthentication is a failed authentication: wrong credentials, or a
// token that breaks the mechanism's grammar.
var ErrAuthentication = errors.New("authentication failed: invalid credentials")

// maxToken bounds a client token. Kafka bounds the whole frame before
// authentication (sasl.server.max.receive.size, 512 KiB); the tokens of
// these mechanisms are far smaller.
const maxToken = 64 << 10

// Server is one authentication exchange on the server side.
type Server interface {
	// Step takes the client's next token and returns the server's reply.
	// done reports the exchange is complete and succeeded: Principal then
	// names the authenticated user. An error ends the exchange.
	Step(token []byte) (reply []byte, done bool, err error)
	// Principal is the authenticated user's name once Step reported done.
	Principal() string
}
