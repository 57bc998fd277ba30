package broker

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/broker/sasl"
	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/protocol"
)

// A connection to a SASL listener authenticates before anything else, as
// Kafka's server authenticator has it:
//
//   - it may send ApiVersions once, then SaslHandshake naming a mechanism
//     the listener enables (UNSUPPORTED_SASL_MECHANISM, and the connection
//     closes, otherwise);
//   - after a version 1 handshake the mechanism's tokens come in
//     SaslAuthenticate requests; after a version 0 one, bare in frames;
//   - a failed exchange is answered SASL_AUTHENTICATION_FAILED, saying
//     only that the credentials did not match, and the connection closes;
//   - any other request before the end closes the connection unanswered,
//     and no frame may be larger than sasl.server.max.receive.size;
//   - a client that used SaslAuthenticate v1 or later may authenticate
//     again on the connection (KIP-368), as the same principal with the
//     same mechanism; with connections.max.reauth.ms set it must do so
//     within that time, which the final SaslAuthenticate response tells
//     it, or its next request closes the connection.

// authState is where a SASL connection's authentication stands.
type authState int8

const (
	authStart        authState = iota // ApiVersions or SaslHandshake expected
	authHandshake                     // SaslHandshake expected
	authToken                         // tokens expected in SaslAuthenticate requests
	authRawToken                      // tokens expected bare (SaslHandshake v0)
	authBadMechanism                  // a re-authentication switched mechanism: the next token closes
	authDone                          // authenticated
)

// connAuth is one SASL connection's authenticator. The connection's read
// loop alone uses it.
type connAuth struct {
	listener  *saslListener
	state     authState
	mechanism string
	server    sasl.Server
	// reauthCapable is whether the client sent SaslAuthenticate above
	// version 0, which is how Kafka knows it can re-authenticate.
	reauthCapable    bool
	reauthenticating bool
	// expires is when the authentication lapses; zero for never.
	expires time.Time
}

// errAuthentication closes a connection whose authentication failed.
var errAuthentication = errors.New("SASL authentication failed")

// maxFrame is the largest frame the connection may send now.
func (c *conn) maxFrame() int32 {
	if c.auth != nil && c.auth.state != authDone {
		return min(c.b.cfg.SocketRequestMaxBytes, c.b.cfg.SASLServerMaxReceiveSize)
	}
	return c.b.cfg.SocketRequestMaxBytes
}

// authenticate takes a frame of a SASL connection before the request path
// does. handled reports that it was an authentication frame, answered
// here; an error closes the connection (after the answers queued).
func (c *conn) authenticate(frame []byte, arrived time.Time) (handled bool, err error) {
	a := c.auth
	if a.state == authDone {
		prefix, err := protocol.ParseRequestHeaderPrefix(frame)
		switch {
		case err == nil && prefix.APIKey == saslHandshakeAPI.key && a.reauthCapable:
			a.reauthenticating, a.state = true, authHandshake
		case !a.expires.IsZero() && arrived.After(a.expires):
			return true, fmt.Errorf("SASL session of %s expired (connections.max.reauth.ms) and the client did not authenticate again", c.principal)
		default:
			return false, nil
		}
	}
	if a.state == authRawToken {
		reply, done, err := a.server.Step(frame)
		if err != nil {
			return true, c.authFailed(err)
		}
		if done {
			a.complete(c, arrived)
		}
		buf, start := protocol.BeginFrame(make([]byte, 0, 4+len(reply)))
		buf = append(buf, reply...)
		if err := protocol.FinishFrame(buf, start); err != nil {
			return true, err
		}
		c.out <- bytesFrame(buf)
		return true, nil
	}
	prefix, err := protocol.ParseRequestHeaderPrefix(frame)
	if err != nil {
		return true, err
	}
	switch {
	case prefix.APIKey == protocol.APIVersionsKey && a.state == authStart:
		resp, am, err := c.handle(c.b.ctx, frame, arrived)
		if am != nil {
			am.latency.Observe(time.Since(arrived).Seconds())
		}
		if err != nil {
			return true, err
		}
		c.out <- resp
		// A version above ours is answered with the versions to pick
		// from (KIP-511), and the client may ask again.
		if c.b.apis.Supports(prefix.APIKey, prefix.APIVersion) {
			a.state = authHandshake
		}
		return true, nil
	case prefix.APIKey == saslHandshakeAPI.key && (a.state == authStart || a.state == authHandshake):
		return true, c.saslHandshake(frame)
	case prefix.APIKey == saslAuthenticateAPI.key && a.state == authToken:
		return true, c.saslAuthenticate(frame, arrived)
	case a.state == authBadMechanism:
		return true, c.authFailed(fmt.Errorf("SASL mechanism changed from %s during re-authentication", a.mechanism))
	}
	return true, fmt.Errorf("%w: unexpected request (api %d) during SASL authentication", errCloseConn, prefix.APIKey)
}

// decodeAuthRequest decodes a SaslHandshake or SaslAuthenticate frame.
func (c *conn) decodeAuthRequest(frame []byte, req kmsg.Request) (protocol.RequestHeader, error) {
	hdr, body, err := protocol.ParseRequestHeader(frame)
	if err != nil {
		return hdr, err
	}
	if !c.b.apis.Supports(hdr.APIKey, hdr.APIVersion) {
		return hdr, fmt.Errorf("%w: api %d version %d not served", errCloseConn, hdr.APIKey, hdr.APIVersion)
	}
	if hdr.ClientID != nil {
		c.clientID = *hdr.ClientID
	}
	req.SetVersion(hdr.APIVersion)
	if err := req.ReadFrom(body); err != nil {
		return hdr, fmt.Errorf("decode api %d v%d: %w", hdr.APIKey, hdr.APIVersion, err)
	}
	am := c.b.apiMetrics[hdr.APIKey]
	am.requests[hdr.APIVersion-am.min].Inc()
	return hdr, nil
}

// reply queues the response to the authentication request of hdr.
func (c *conn) reply(hdr protocol.RequestHeader, resp kmsg.Response) {
	resp.SetVersion(hdr.APIVersion)
	c.b.apiMetrics[hdr.APIKey].countResponseErrors(resp)
	c.out <- bytesFrame(encodeResponse(hdr, resp))
}

func (c *conn) saslHandshake(frame []byte) error {
	a := c.auth
	req := kmsg.NewPtrSASLHandshakeRequest()
	hdr, err := c.decodeAuthRequest(frame, req)
	if err != nil {
		return err
	}
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = a.listener.mechanisms
	if !slices.Contains(a.listener.mechanisms, req.Mechanism) {
		resp.ErrorCode = int16(protocol.UnsupportedSASLMechanism)
		c.reply(hdr, resp)
		return c.authFailed(fmt.Errorf("unsupported SASL mechanism %q", req.Mechanism))
	}
	c.reply(hdr, resp)
	if a.reauthenticating && req.Mechanism != a.mechanism {
		a.state = authBadMechanism
		return nil
	}
	a.mechanism = req.Mechanism
	switch a.mechanism {
	case sasl.OAuthBearer:
		a.server = &sasl.OAuthBearerServer{Validate: a.listener.oauth.validate}
	case sasl.Plain:
		a.server = &sasl.PlainServer{Password: func(user string) (string, bool) {
			p, ok := a.listener.plainUsers[user]
			return p, ok
		}}
	default:
		mech := cluster.ScramSHA256
		if a.mechanism == sasl.ScramSHA512 {
			mech = cluster.ScramSHA512
		}
		a.server = &sasl.ScramServer{Hash: sasl.ScramHash(a.mechanism), Lookup: func(user string) (sasl.Credential, bool) {
			cred, ok := c.b.cluster.Snapshot().SCRAM[cluster.ScramKey{User: user, Mechanism: mech}]
			return sasl.Credential{Salt: cred.Salt, StoredKey: cred.StoredKey, ServerKey: cred.ServerKey,
				Iterations: int(cred.Iterations)}, ok
		}}
	}
	a.state = authToken
	if hdr.APIVersion == 0 {
		a.state = authRawToken
	}
	return nil
}

func (c *conn) saslAuthenticate(frame []byte, arrived time.Time) error {
	a := c.auth
	req := kmsg.NewPtrSASLAuthenticateRequest()
	hdr, err := c.decodeAuthRequest(frame, req)
	if err != nil {
		return err
	}
	a.reauthCapable = a.reauthCapable || hdr.APIVersion > 0
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	reply, done, err := a.server.Step(req.SASLAuthBytes)
	if err == nil && done && a.reauthenticating && "User:"+a.server.Principal() != c.principal {
		err = sasl.Failure(fmt.Sprintf("Cannot change principals during re-authentication from %s: User:%s", c.principal, a.server.Principal()))
	}
	if err != nil {
		phase := "authentication"
		if a.reauthenticating {
			phase = "re-authentication"
		}
		// A mechanism's own refusal is told as it is, as Kafka does with
		// SaslAuthenticationException; anything else only as invalid
		// credentials.
		msg := fmt.Sprintf("Authentication failed during %s due to invalid credentials with SASL mechanism %s", phase, a.mechanism)
		var f sasl.Failure
		if errors.As(err, &f) {
			msg = string(f)
		}
		if o, ok := a.server.(*sasl.OAuthBearerServer); ok && o.Err != nil {
			err = fmt.Errorf("%w (%w)", err, o.Err)
		}
		resp.ErrorCode, resp.ErrorMessage = int16(protocol.SASLAuthenticationFailed), &msg
		c.reply(hdr, resp)
		return c.authFailed(err)
	}
	resp.SASLAuthBytes = reply
	if resp.SASLAuthBytes == nil {
		resp.SASLAuthBytes = []byte{}
	}
	if done {
		resp.SessionLifetimeMillis = a.complete(c, arrived)
	}
	c.reply(hdr, resp)
	return nil
}

// complete ends a successful exchange and returns the session's lifetime
// in milliseconds, 0 for no limit.
func (a *connAuth) complete(c *conn, now time.Time) int64 {
	result := "authenticated"
	if a.reauthenticating {
		result = "reauthenticated"
	}
	c.b.metrics.authentications.WithLabelValues(c.listener, a.mechanism, result).Inc()
	c.principal = "User:" + a.server.Principal()
	// The session ends when the credential does (an OAUTHBEARER token's
	// expiry) or after connections.max.reauth.ms, whichever comes first.
	a.expires = time.Time{}
	if e, ok := a.server.(interface{ Expiry() time.Time }); ok && !e.Expiry().IsZero() {
		a.expires = e.Expiry()
	}
	if d := c.b.cfg.ConnectionsMaxReauth; d > 0 && (a.expires.IsZero() || now.Add(d).Before(a.expires)) {
		a.expires = now.Add(d)
	}
	a.state, a.reauthenticating, a.server = authDone, false, nil
	if a.expires.IsZero() {
		return 0
	}
	return max(a.expires.Sub(now).Milliseconds(), 0)
}

// authFailed counts a failed authentication, logs it (at most one line a
// second for the whole broker, so that a flood of bad clients cannot
// flood the log) and returns the error that closes the connection.
func (c *conn) authFailed(cause error) error {
	mech := c.auth.mechanism
	if mech == "" {
		mech = "none"
	}
	c.b.metrics.authentications.WithLabelValues(c.listener, mech, "failed").Inc()
	if now := time.Now().Unix(); c.b.authLogSecond.Swap(now) != now {
		c.logger.Info("SASL authentication failed; closing the connection (one line a second at most)",
			"listener", c.listener, "client_id", c.clientID, "err", cause)
	}
	return fmt.Errorf("%w: %w", errAuthentication, cause)
}

// authenticateOutgoing authenticates one of the broker's own connections
// to another broker's inter-broker listener, when that is a SASL
// listener: SaslHandshake v1, then SaslAuthenticate until the mechanism's
// exchange ends, with sasl.mechanism.inter.broker.protocol and the
// broker's username and password from the listener's JAAS config.
func (b *Broker) authenticateOutgoing(nc net.Conn) error {
	cr := b.lis.interBrokerSASL
	if cr == nil {
		return nil
	}
	const timeout = 10 * time.Second
	clientID := "gregor-broker-" + strconv.Itoa(int(b.cfg.NodeID))
	var buf []byte
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = cr.mechanism
	r, err := roundTrip(nc, &buf, 0, clientID, hs, timeout)
	if err != nil {
		return err
	}
	if code := protocol.ErrorCode(r.(*kmsg.SASLHandshakeResponse).ErrorCode); code != protocol.None {
		return fmt.Errorf("SaslHandshake for %s: %s", cr.mechanism, code)
	}
	client, err := sasl.NewClient(cr.mechanism, cr.user, cr.password)
	if err != nil {
		return err
	}
	token, done, err := client.Step(nil)
	for corr := int32(1); err == nil && !done; corr++ {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SetVersion(2)
		req.SASLAuthBytes = token
		if r, err = roundTrip(nc, &buf, corr, clientID, req, timeout); err != nil {
			return err
		}
		resp := r.(*kmsg.SASLAuthenticateResponse)
		if code := protocol.ErrorCode(resp.ErrorCode); code != protocol.None {
			msg := ""
			if resp.ErrorMessage != nil {
				msg = ": " + *resp.ErrorMessage
			}
			return fmt.Errorf("SaslAuthenticate as %s with %s: %s%s", cr.user, cr.mechanism, code, msg)
		}
		token, done, err = client.Step(resp.SASLAuthBytes)
	}
	if err != nil {
		return err
	}
	return nc.SetDeadline(time.Time{})
}
