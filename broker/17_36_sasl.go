package broker

// SaslHandshake (key 17, versions 0-1) and SaslAuthenticate (key 36,
// versions 0-2). On a SASL listener the connection's authenticator
// (sasl_conn.go) answers them until the client has authenticated, and
// again for a re-authentication. These handlers answer the rest, as
// Kafka's request handler does: a handshake on a listener without SASL,
// or an authentication once the connection is authenticated, is
// ILLEGAL_SASL_STATE.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
)

var (
	saslHandshakeAPI    = handler{key: 17, min: 0, max: 1, handle: (*Broker).handleSaslHandshake}
	saslAuthenticateAPI = handler{key: 36, min: 0, max: 2, handle: (*Broker).handleSaslAuthenticate}
)

func (b *Broker) handleSaslHandshake(context.Context, *conn, protocol.RequestHeader, kmsg.Request) (kmsg.Response, error) {
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.ErrorCode = int16(protocol.IllegalSASLState)
	return resp, nil
}

func (b *Broker) handleSaslAuthenticate(context.Context, *conn, protocol.RequestHeader, kmsg.Request) (kmsg.Response, error) {
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.ErrorCode = int16(protocol.IllegalSASLState)
	msg := "SaslAuthenticate request received after successful authentication"
	resp.ErrorMessage = &msg
	return resp, nil
}
