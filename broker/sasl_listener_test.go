package broker

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/gregor-io/gregor/broker/sasl"
	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/protocol"
)

// plainJAAS is a PLAIN listener's JAAS config: the broker's own user
// admin, and alice.
const plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`

// saslListeners gives a broker a PLAINTEXT listener (first, for the
// test's admin) and a SASL_PLAINTEXT one offering PLAIN and both SCRAMs.
func saslListeners(c *Config) {
	c.Listeners = []string{"PLAINTEXT://127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0"}
	c.SASLEnabledMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}
	c.ListenerConfigs = map[string]string{"listener.name.sasl_plaintext.plain.sasl.jaas.config": plainJAAS}
}

// addScramUser stores password for user under both SCRAM mechanisms,
// through the PLAINTEXT listener, and waits until b's registry view has it.
func addScramUser(t *testing.T, b *Broker, user, password string) {
	t.Helper()
	adm := kadm.NewClient(newClient(t, b, kgo.SeedBrokers(b.Addrs()[0])))
	ctx := testContext(t, 30*time.Second)
	for _, mech := range []kadm.ScramMechanism{kadm.ScramSha256, kadm.ScramSha512} {
		// One mechanism a request: Kafka refuses two for one user.
		res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: mech, Iterations: 4096, Password: password}})
		if err == nil {
			for _, r := range res {
				err = errors.Join(err, r.Err)
			}
		}
		if err != nil {
			t.Fatalf("AlterUserScramCredentials for %s: %v", user, err)
		}
	}
	waitFor(t, 10*time.Second, "SCRAM credentials seen", func() error {
		if len(b.cluster.Snapshot().SCRAM) < 2 {
			return errors.New("not yet")
		}
		return nil
	})
}

// saslClient is a franz-go client on b's SASL listener.
func saslClient(t *testing.T, b *Broker, mech kgo.Opt, opts ...kgo.Opt) *kgo.Client {
	return newClient(t, b, append([]kgo.Opt{kgo.SeedBrokers(b.Addrs()[1]), mech, kgo.RequestRetries(0)}, opts...)...)
}

// TestSASLClients: franz-go clients authenticate to a SASL_PLAINTEXT
// listener with PLAIN (users from the JAAS config) and SCRAM-SHA-256/512
// (users from the registry), write and read; a wrong password is
// SASL_AUTHENTICATION_FAILED; the authenticated principal is what the
// authorizer sees.
func TestSASLClients(t *testing.T) {
	t.Parallel()
	b := startBroker(t, saslListeners, func(c *Config) {
		c.AuthorizerClassName = StandardAuthorizer
		c.SuperUsers = []string{"User:ANONYMOUS", "User:alice"}
	})
	addScramUser(t, b, "carol", "carol-secret")
	adm := kadm.NewClient(newClient(t, b, kgo.SeedBrokers(b.Addrs()[0])))
	ctx := testContext(t, time.Minute)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "sasl"); err != nil {
		t.Fatal(err)
	}
	acl := kadm.NewACLs().Allow("User:carol").Topics("sasl").Operations(kadm.OpWrite, kadm.OpDescribe)
	if _, err := adm.CreateACLs(ctx, acl); err != nil {
		t.Fatal(err)
	}

	mechs := map[string]kgo.Opt{
		"PLAIN alice":         kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()),
		"SCRAM-SHA-256 carol": kgo.SASL(scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha256Mechanism()),
		"SCRAM-SHA-512 carol": kgo.SASL(scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha512Mechanism()),
	}
	for name, mech := range mechs {
		cl := saslClient(t, b, mech)
		var err error
		waitFor(t, 20*time.Second, "ACL seen", func() error {
			err = cl.ProduceSync(ctx, &kgo.Record{Topic: "sasl", Value: []byte(name)}).FirstErr()
			if errors.Is(err, kerr.TopicAuthorizationFailed) {
				return err
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: produce: %v", name, err)
		}
	}
	// carol may write but not read: her principal is what the ACLs see.
	cl := saslClient(t, b, mechs["SCRAM-SHA-512 carol"], kgo.ConsumeTopics("sasl"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	fs := cl.PollFetches(pctx)
	cancel()
	if err := fs.Err(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("carol's fetch: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	cl = saslClient(t, b, mechs["PLAIN alice"], kgo.ConsumeTopics("sasl"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < len(mechs) {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := fs.Err(); err != nil {
			t.Fatalf("alice's fetch: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}

	for name, mech := range map[string]kgo.Opt{
		"PLAIN":            kgo.SASL(plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism()),
		"PLAIN no user":    kgo.SASL(plain.Auth{User: "mallory", Pass: "alice-secret"}.AsMechanism()),
		"SCRAM-SHA-512":    kgo.SASL(scram.Auth{User: "carol", Pass: "wrong"}.AsSha512Mechanism()),
		"SCRAM-SHA-256 no": kgo.SASL(scram.Auth{User: "mallory", Pass: "x"}.AsSha256Mechanism()),
	} {
		err := saslClient(t, b, mech).Ping(ctx)
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", name, err)
		}
	}
	if v := counterValue(t, b.metrics.authentications.WithLabelValues("SASL_PLAINTEXT", "SCRAM-SHA-512", "failed")); v < 1 {
		t.Errorf("failed SCRAM-SHA-512 authentications counted %v, want at least 1", v)
	}
}

// saslHandshake sends SaslHandshake at version v for mech.
func (w *wireConn) saslHandshake(v int16, mech string) *kmsg.SASLHandshakeResponse {
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.SetVersion(v)
	req.Mechanism = mech
	return w.mustRoundTrip(req).(*kmsg.SASLHandshakeResponse)
}

// saslAuthenticate sends one SaslAuthenticate v2 token.
func (w *wireConn) saslAuthenticate(token []byte) *kmsg.SASLAuthenticateResponse {
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.SetVersion(2)
	req.SASLAuthBytes = token
	return w.mustRoundTrip(req).(*kmsg.SASLAuthenticateResponse)
}

// plainLogin authenticates w with PLAIN through SaslAuthenticate v2.
func (w *wireConn) plainLogin(user, pass string) *kmsg.SASLAuthenticateResponse {
	w.t.Helper()
	if hs := w.saslHandshake(1, "PLAIN"); hs.ErrorCode != 0 {
		w.t.Fatalf("SaslHandshake PLAIN: error %d", hs.ErrorCode)
	}
	return w.saslAuthenticate([]byte("\x00" + user + "\x00" + pass))
}

func metadataReq() *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	return req
}

// TestSASLWire checks the authentication exchange on the wire: what may
// come before it, frame bounds, refusals and their codes, SaslHandshake
// v0's bare tokens, and SaslHandshake outside a SASL exchange.
func TestSASLWire(t *testing.T) {
	t.Parallel()
	b := startBroker(t, saslListeners, func(c *Config) {
		c.SASLServerMaxReceiveSize = 64 << 10
		c.FailedAuthenticationDelay = 300 * time.Millisecond
	})
	saslAddr := b.Addrs()[1]

	t.Run("request before authentication closes", func(t *testing.T) {
		w := dialWireAddr(t, saslAddr)
		if err := w.writeRaw(w.fmt.AppendRequest(nil, metadataReq(), 1)); err != nil {
			t.Fatal(err)
		}
		if err := w.expectClosed(5 * time.Second); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("frame over sasl.server.max.receive.size closes", func(t *testing.T) {
		w := dialWireAddr(t, saslAddr)
		w.saslHandshake(1, "PLAIN")
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SetVersion(2)
		req.SASLAuthBytes = make([]byte, 65<<10)
		if err := w.writeRaw(w.fmt.AppendRequest(nil, req, 9)); err != nil {
			t.Fatal(err)
		}
		if err := w.expectClosed(5 * time.Second); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ApiVersions then an unknown mechanism", func(t *testing.T) {
		w := dialWireAddr(t, saslAddr)
		av := kmsg.NewPtrApiVersionsRequest()
		av.SetVersion(3)
		av.ClientSoftwareName, av.ClientSoftwareVersion = "wire", "1"
		if resp := w.mustRoundTrip(av).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 || len(resp.ApiKeys) < 10 {
			t.Fatalf("ApiVersions before authentication: error %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
		}
		hs := w.saslHandshake(1, "GSSAPI")
		checkCode(t, "SaslHandshake GSSAPI", hs.ErrorCode, protocol.UnsupportedSASLMechanism)
		if got := strings.Join(hs.SupportedMechanisms, ","); got != "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512" {
			t.Errorf("mechanisms %s", got)
		}
		if err := w.expectClosed(5 * time.Second); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		w := dialWireAddr(t, saslAddr)
		w.saslHandshake(1, "PLAIN")
		began := time.Now()
		resp := w.saslAuthenticate([]byte("\x00alice\x00nope"))
		if took := time.Since(began); took < 300*time.Millisecond {
			t.Errorf("a failed authentication answered after %s, before connection.failed.authentication.delay.ms (300 ms)", took)
		}
		checkCode(t, "SaslAuthenticate with a wrong password", resp.ErrorCode, protocol.SASLAuthenticationFailed)
		if resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, "Authentication failed: Invalid username or password") {
			t.Errorf("message %v", resp.ErrorMessage)
		}
		if err := w.expectClosed(5 * time.Second); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("authenticated, then SaslAuthenticate again is ILLEGAL_SASL_STATE", func(t *testing.T) {
		w := dialWireAddr(t, saslAddr)
		if resp := w.plainLogin("alice", "alice-secret"); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != 0 {
			t.Fatalf("SaslAuthenticate: error %d, session lifetime %d", resp.ErrorCode, resp.SessionLifetimeMillis)
		}
		if m := w.mustRoundTrip(metadataReq()).(*kmsg.MetadataResponse); len(m.Brokers) != 1 {
			t.Fatalf("Metadata after authentication: %d brokers", len(m.Brokers))
		}
		checkCode(t, "SaslAuthenticate after authentication", w.saslAuthenticate([]byte("x")).ErrorCode, protocol.IllegalSASLState)
	})
	t.Run("SaslHandshake v0 and a bare token", func(t *testing.T) {
		w := dialWireAddr(t, saslAddr)
		checkCode(t, "SaslHandshake v0", w.saslHandshake(0, "PLAIN").ErrorCode, protocol.None)
		token := []byte("\x00alice\x00alice-secret")
		if err := w.writeRaw(append([]byte{0, 0, 0, byte(len(token))}, token...)); err != nil {
			t.Fatal(err)
		}
		var size [4]byte
		w.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(w.br, size[:]); err != nil || size != [4]byte{} {
			t.Fatalf("reply to a bare PLAIN token: %v, %v; want an empty frame", size, err)
		}
		w.mustRoundTrip(metadataReq())
	})
	t.Run("SaslHandshake on a PLAINTEXT listener", func(t *testing.T) {
		w := dialWireAddr(t, b.Addrs()[0])
		checkCode(t, "SaslHandshake on PLAINTEXT", w.saslHandshake(1, "PLAIN").ErrorCode, protocol.IllegalSASLState)
	})
}

// TestSASLReauthentication: with connections.max.reauth.ms the final
// SaslAuthenticate response gives the session's lifetime; a client may
// authenticate again on its connection as the same principal, not as
// another; past the lifetime a request closes the connection. franz-go
// clients, which re-authenticate on their own, go on working.
func TestSASLReauthentication(t *testing.T) {
	t.Parallel()
	b := startBroker(t, saslListeners, func(c *Config) { c.ConnectionsMaxReauth = 1500 * time.Millisecond })
	saslAddr := b.Addrs()[1]

	w := dialWireAddr(t, saslAddr)
	if resp := w.plainLogin("alice", "alice-secret"); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != 1500 {
		t.Fatalf("SaslAuthenticate: error %d, session lifetime %d, want 1500", resp.ErrorCode, resp.SessionLifetimeMillis)
	}
	if resp := w.plainLogin("alice", "alice-secret"); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != 1500 {
		t.Fatalf("re-authentication: error %d, session lifetime %d", resp.ErrorCode, resp.SessionLifetimeMillis)
	}
	w.mustRoundTrip(metadataReq())

	other := dialWireAddr(t, saslAddr)
	other.plainLogin("alice", "alice-secret")
	resp := other.plainLogin("admin", "admin-secret")
	checkCode(t, "re-authentication as another user", resp.ErrorCode, protocol.SASLAuthenticationFailed)
	if err := other.expectClosed(5 * time.Second); err != nil {
		t.Fatal(err)
	}

	time.Sleep(1600 * time.Millisecond)
	if err := w.writeRaw(w.fmt.AppendRequest(nil, metadataReq(), 99)); err != nil {
		t.Fatal(err)
	}
	if err := w.expectClosed(5 * time.Second); err != nil {
		t.Fatalf("a request after the session's lifetime: %v", err)
	}

	cl := saslClient(t, b, kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()), kgo.RequestRetries(3), kgo.AllowAutoTopicCreation())
	ctx := testContext(t, time.Minute)
	for i := 0; i < 8; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "reauth", Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d across re-authentications: %v", i, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if v := counterValue(t, b.metrics.authentications.WithLabelValues("SASL_PLAINTEXT", "PLAIN", "reauthenticated")); v < 2 {
		t.Errorf("re-authentications counted %v, want at least 2", v)
	}
}

// TestSASLInterBroker: two brokers whose inter-broker listener is
// SASL_PLAINTEXT with SCRAM-SHA-512 replicate over it.
func TestSASLInterBroker(t *testing.T) {
	t.Parallel()
	internal := func(id int32) func(c *Config) {
		return func(c *Config) {
			c.NodeID = id
			c.Listeners = []string{"PLAINTEXT://127.0.0.1:0", "INTERNAL://127.0.0.1:0"}
			c.ListenerSecurityProtocolMap = "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT"
			c.InterBrokerListenerName = "INTERNAL"
			c.SASLEnabledMechanisms = []string{"SCRAM-SHA-512"}
			c.SASLMechanismInterBrokerProtocol = "SCRAM-SHA-512"
			c.ListenerConfigs = map[string]string{"listener.name.internal.scram-sha-512.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="broker-secret";`}
		}
	}
	b1 := startBroker(t, internal(1))
	addScramUser(t, b1, "broker", "broker-secret")
	b2 := startBroker(t, internal(2), func(c *Config) { c.EtcdEndpoints = b1.cluster.ClientURLs() })
	waitFor(t, 20*time.Second, "two brokers live", func() error {
		for _, b := range []*Broker{b1, b2} {
			if n := len(b.cluster.Snapshot().Brokers); n != 2 {
				return fmt.Errorf("broker %d sees %d live", b.cfg.NodeID, n)
			}
		}
		return nil
	})
	w := dialWire(t, b1)
	rt := w.createTopicResultAssigned("internal", [][]int32{{1, 2}, {2, 1}}, map[string]string{"min.insync.replicas": "2"})
	checkCode(t, "create", rt.ErrorCode, protocol.None)
	waitISR(t, b1, "internal", 0, "[1 2]")
	waitISR(t, b1, "internal", 1, "[1 2]")
	rp := w.producePartition(-1, "internal", 0, buildBatch(t, plainHeader(), "x", 5))
	checkCode(t, "acks=all produce replicated over SASL", rp.ErrorCode, protocol.None)
	if v := counterValue(t, b1.metrics.authentications.WithLabelValues("INTERNAL", "SCRAM-SHA-512", "authenticated")); v < 1 {
		t.Errorf("broker 1 counted %v SCRAM authentications on INTERNAL, want broker 2's fetcher's", v)
	}
}

// TestSASLConfig: SASL listener settings are checked at start.
func TestSASLConfig(t *testing.T) {
	t.Parallel()
	base := func(c *Config) {
		*c = DefaultConfig()
		saslListeners(c)
	}
	for _, tc := range []struct {
		name, want string
		mutate     func(*Config)
	}{
		{"Kafka's default mechanism", "mechanism GSSAPI", func(c *Config) { c.SASLEnabledMechanisms = []string{"GSSAPI"} }},
		{"PLAIN without users", "no listener.name.sasl_plaintext.plain.sasl.jaas.config", func(c *Config) { c.ListenerConfigs = nil }},
		{"bad JAAS", "control flag", func(c *Config) {
			c.ListenerConfigs["listener.name.sasl_plaintext.plain.sasl.jaas.config"] = "org.apache.kafka.common.security.plain.PlainLoginModule maybe;"
		}},
		{"wrong login module", "login module", func(c *Config) {
			c.ListenerConfigs["listener.name.sasl_plaintext.plain.sasl.jaas.config"] = `org.apache.kafka.common.security.scram.ScramLoginModule required;`
		}},
		{"per-listener mechanisms", "mechanism GSSAPI", func(c *Config) {
			c.ListenerConfigs["listener.name.sasl_plaintext.sasl.enabled.mechanisms"] = "PLAIN,GSSAPI"
		}},
		{"inter-broker mechanism not enabled", "sasl.mechanism.inter.broker.protocol GSSAPI", func(c *Config) { c.InterBrokerListenerName = "SASL_PLAINTEXT" }},
		{"inter-broker without a username", "must give the broker's username", func(c *Config) {
			c.InterBrokerListenerName, c.SASLMechanismInterBrokerProtocol = "SASL_PLAINTEXT", "PLAIN"
			c.ListenerConfigs["listener.name.sasl_plaintext.plain.sasl.jaas.config"] = `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="x";`
		}},
		{"SSL without a key store", "no key and certificate", func(c *Config) { c.Listeners = append(c.Listeners, "SSL://127.0.0.1:0") }},
	} {
		var c Config
		base(&c)
		tc.mutate(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	var c Config
	base(&c)
	c.InterBrokerListenerName, c.SASLMechanismInterBrokerProtocol = "SASL_PLAINTEXT", "PLAIN"
	ls, err := c.resolveListeners()
	if err != nil {
		t.Fatal(err)
	}
	if got := *ls.interBrokerSASL; got != (saslCredentials{"PLAIN", "admin", "admin-secret"}) {
		t.Errorf("inter-broker credentials %+v", got)
	}
	if got := ls.sasl["SASL_PLAINTEXT"].plainUsers; len(got) != 2 || got["alice"] != "alice-secret" {
		t.Errorf("PLAIN users %v", got)
	}
}

// FuzzSASLAuthenticate feeds a connection's authenticator two arbitrary
// frames, from each state an exchange can be in: it answers or closes,
// never panics, and authenticates no one without a password.
func FuzzSASLAuthenticate(f *testing.F) {
	b := startBroker(f, saslListeners)
	fmtr := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "SCRAM-SHA-512"
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.SetVersion(2)
	au.SASLAuthBytes = []byte("n,,n=carol,r=abc")
	f.Add(fmtr.AppendRequest(nil, hs, 1), fmtr.AppendRequest(nil, au, 2), uint8(0))
	hs.SetVersion(0)
	hs.Mechanism = "PLAIN"
	f.Add(fmtr.AppendRequest(nil, hs, 1)[4:], []byte("\x00alice\x00x"), uint8(1))
	f.Add(fmtr.AppendRequest(nil, metadataReq(), 1)[4:], []byte{}, uint8(2))
	f.Fuzz(func(t *testing.T, first, second []byte, state uint8) {
		c := &conn{b: b, listener: "SASL_PLAINTEXT", out: make(chan *outFrame, 8), logger: b.logger, principal: anonymous,
			auth: &connAuth{listener: b.lis.sasl["SASL_PLAINTEXT"], state: authState(state % uint8(authDone+1))}}
		if c.auth.state == authToken || c.auth.state == authRawToken || c.auth.state == authBadMechanism {
			c.auth.mechanism = "PLAIN"
			c.auth.server = &sasl.PlainServer{Password: func(u string) (string, bool) { return "alice-secret", u == "alice" }}
		}
		if c.auth.state == authDone {
			c.principal = "User:alice"
		}
		for _, frame := range [][]byte{first, second} {
			handled, err := c.authenticate(frame, time.Now())
			for len(c.out) > 0 {
				(<-c.out).release()
			}
			if err != nil || !handled {
				break
			}
		}
		if c.auth.state == authDone && c.principal != anonymous && c.principal != "User:alice" {
			t.Fatalf("authenticated as %s", c.principal)
		}
	})
}

// rs256 signs claims as an RS256 JWT with key id kid.
func rs256(t *testing.T, key *rsa.PrivateKey, kid string, claims map[string]any) string {
	t.Helper()
	enc := base64.RawURLEncoding.EncodeToString
	h, _ := json.Marshal(map[string]string{"alg": "RS256", "kid": kid})
	c, _ := json.Marshal(claims)
	signed := enc(h) + "." + enc(c)
	d := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, d[:])
	if err != nil {
		t.Fatal(err)
	}
	return signed + "." + enc(sig)
}

// TestSASLOAuthBearer: OAUTHBEARER with Kafka's secured validator, keys
// from a JWKS URL: a franz-go client with a valid token writes as the
// token's subject; a token signed by a key the set gains later verifies
// once the set is fetched again; an expired or forged token is
// SASL_AUTHENTICATION_FAILED; the session ends with the token. The
// unsecured validator takes unsigned tokens.
func TestSASLOAuthBearer(t *testing.T) {
	t.Parallel()
	key1, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	key2, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	jwk := func(kid string, k *rsa.PrivateKey) map[string]string {
		return map[string]string{"kty": "RSA", "kid": kid, "n": enc(k.N.Bytes()), "e": enc(big.NewInt(int64(k.E)).Bytes())}
	}
	var keys atomic.Value
	keys.Store([]map[string]string{jwk("k1", key1)})
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetches.Add(1)
		json.NewEncoder(w).Encode(map[string]any{"keys": keys.Load()})
	}))
	t.Cleanup(srv.Close)

	b := startBroker(t, saslListeners, func(c *Config) {
		c.SASLEnabledMechanisms = []string{"PLAIN", "OAUTHBEARER"}
		c.ListenerConfigs["listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class"] = oauthValidatorClass
		c.OAuthBearerConfigs = map[string]string{
			"sasl.oauthbearer.jwks.endpoint.url":        srv.URL,
			"sasl.oauthbearer.expected.audience":        "kafka",
			"sasl.oauthbearer.jwks.endpoint.refresh.ms": "3600000",
		}
		c.AuthorizerClassName = StandardAuthorizer
		c.SuperUsers = []string{"User:ANONYMOUS", "User:dave"}
	})
	ctx := testContext(t, time.Minute)
	now := time.Now().Unix()
	claims := func(sub string, exp int64) map[string]any {
		return map[string]any{"sub": sub, "exp": exp, "iat": now, "aud": "kafka"}
	}
	bearer := func(tok string) kgo.Opt { return kgo.SASL(oauth.Auth{Token: tok}.AsMechanism()) }

	cl := saslClient(t, b, bearer(rs256(t, key1, "k1", claims("dave", now+600))), kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "oauth", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("produce as dave (a super user): %v", err)
	}
	// erin is no super user: her principal is the token's subject.
	cl = saslClient(t, b, bearer(rs256(t, key1, "k1", claims("erin", now+600))))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "oauth", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce as erin: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	for name, tok := range map[string]string{
		"expired":     rs256(t, key1, "k1", claims("dave", now-120)),
		"forged":      rs256(t, key2, "k1", claims("dave", now+600)),
		"wrong aud":   rs256(t, key1, "k1", map[string]any{"sub": "dave", "exp": now + 600, "iat": now, "aud": "x"}),
		"unknown kid": rs256(t, key2, "k2", claims("dave", now+600)),
		"not a token": "abc",
	} {
		if err := saslClient(t, b, bearer(tok)).Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s token: %v, want SASL_AUTHENTICATION_FAILED", name, err)
		}
	}
	// The identity provider rotates in key k2: a token signed with it
	// verifies once the set is fetched again, which an unknown key id
	// causes (at most every 10 s).
	keys.Store([]map[string]string{jwk("k1", key1), jwk("k2", key2)})
	waitFor(t, 30*time.Second, "a token of the new key taken", func() error {
		return saslClient(t, b, bearer(rs256(t, key2, "k2", claims("dave", now+600)))).Ping(ctx)
	})

	// A token expiring in 2 s sets the session's lifetime.
	w := dialWireAddr(t, b.Addrs()[1])
	if hs := w.saslHandshake(1, "OAUTHBEARER"); hs.ErrorCode != 0 {
		t.Fatalf("SaslHandshake OAUTHBEARER: %d", hs.ErrorCode)
	}
	tok := rs256(t, key1, "k1", claims("dave", time.Now().Add(2*time.Second).Unix()))
	resp := w.saslAuthenticate([]byte("n,,\x01auth=Bearer " + tok + "\x01\x01"))
	if resp.ErrorCode != 0 || resp.SessionLifetimeMillis <= 0 || resp.SessionLifetimeMillis > 2000 {
		t.Fatalf("SaslAuthenticate: error %d, session lifetime %d ms, want (0, 2000]", resp.ErrorCode, resp.SessionLifetimeMillis)
	}
	time.Sleep(time.Duration(resp.SessionLifetimeMillis+200) * time.Millisecond)
	if err := w.writeRaw(w.fmt.AppendRequest(nil, metadataReq(), 50)); err != nil {
		t.Fatal(err)
	}
	if err := w.expectClosed(5 * time.Second); err != nil {
		t.Fatalf("a request after the token expired: %v", err)
	}
	// A bad token is answered with the RFC's error, and the client's
	// acknowledgement ends it.
	w = dialWireAddr(t, b.Addrs()[1])
	w.saslHandshake(1, "OAUTHBEARER")
	if resp := w.saslAuthenticate([]byte("n,,\x01auth=Bearer x.y.z\x01\x01")); resp.ErrorCode != 0 || string(resp.SASLAuthBytes) != `{"status":"invalid_token"}` {
		t.Fatalf("bad token: error %d, reply %q", resp.ErrorCode, resp.SASLAuthBytes)
	}
	resp = w.saslAuthenticate([]byte{1})
	checkCode(t, "after the error reply", resp.ErrorCode, protocol.SASLAuthenticationFailed)

	// Kafka's unsecured validator, with no callback handler configured.
	u := startBroker(t, saslListeners, func(c *Config) {
		c.SASLEnabledMechanisms = []string{"OAUTHBEARER"}
		c.ListenerConfigs = map[string]string{"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredValidatorRequiredScope="kafka";`}
	})
	unsigned := func(scope string) string {
		h, _ := json.Marshal(map[string]string{"alg": "none"})
		c, _ := json.Marshal(map[string]any{"sub": "dave", "exp": now + 600, "scope": scope})
		return enc(h) + "." + enc(c) + "."
	}
	if err := saslClient(t, u, bearer(unsigned("kafka other"))).Ping(ctx); err != nil {
		t.Errorf("unsecured validator, unsigned token: %v", err)
	}
	if err := saslClient(t, u, bearer(unsigned("other"))).Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("unsecured validator, token without the required scope: %v", err)
	}
}

// TestSASLSSL: SASL over TLS. A SASL_SSL listener takes franz-go clients
// with TLS and SCRAM-SHA-512, whose principal is the SASL user's (not the
// client certificate's); a client without TLS is closed; two brokers
// whose inter-broker listener is SASL_SSL replicate over it.
func TestSASLSSL(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	dir := t.TempDir()
	certPEM, keyPEM := ca.issue(t, pkix.Name{CommonName: "broker"}, 100)
	ks := writeFile(t, dir, "broker.pem", keyPEM, certPEM)
	ts := writeFile(t, dir, "ca.pem", ca.pem)
	saslSSL := func(id int32) func(*Config) {
		return func(c *Config) {
			c.NodeID = id
			c.Listeners = []string{"PLAINTEXT://127.0.0.1:0", "SECURE://127.0.0.1:0"}
			c.ListenerSecurityProtocolMap = "PLAINTEXT:PLAINTEXT,SECURE:SASL_SSL"
			c.InterBrokerListenerName = "SECURE"
			c.SSL.KeystoreType, c.SSL.KeystoreLocation = "PEM", ks
			c.SSL.TruststoreType, c.SSL.TruststoreLocation = "PEM", ts
			c.SASLEnabledMechanisms = []string{"SCRAM-SHA-512"}
			c.SASLMechanismInterBrokerProtocol = "SCRAM-SHA-512"
			c.ListenerConfigs = map[string]string{"listener.name.secure.scram-sha-512.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="broker-secret";`}
			c.AuthorizerClassName = StandardAuthorizer
			c.SuperUsers = []string{"User:ANONYMOUS", "User:broker"}
		}
	}
	b1 := startBroker(t, saslSSL(1))
	addScramUser(t, b1, "broker", "broker-secret")
	addScramUser(t, b1, "carol", "carol-secret")
	b2 := startBroker(t, saslSSL(2), func(c *Config) { c.EtcdEndpoints = b1.cluster.ClientURLs() })
	waitFor(t, 20*time.Second, "two brokers live", func() error {
		for _, b := range []*Broker{b1, b2} {
			if n := len(b.cluster.Snapshot().Brokers); n != 2 {
				return fmt.Errorf("broker %d sees %d live", b.cfg.NodeID, n)
			}
		}
		return nil
	})
	w := dialWire(t, b1)
	checkCode(t, "create", w.createTopicResultAssigned("secure", [][]int32{{1, 2}}, map[string]string{"min.insync.replicas": "2"}).ErrorCode, protocol.None)
	waitISR(t, b1, "secure", 0, "[1 2]")
	w.createACLs(allow(acl.ResourceTopic, "secure", "User:carol", acl.OpWrite))

	ctx := testContext(t, time.Minute)
	// The client certificate names CN=mallory, a super user would it count.
	tlsCfg := ca.clientTLS(t, pkix.Name{CommonName: "mallory"}, 9)
	carol := newClient(t, b1, kgo.SeedBrokers(b1.Addrs()[1]), kgo.DialTLSConfig(tlsCfg),
		kgo.SASL(scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha512Mechanism()), kgo.RequiredAcks(kgo.AllISRAcks()))
	waitFor(t, 20*time.Second, "carol's ACL applied", func() error {
		return carol.ProduceSync(ctx, &kgo.Record{Topic: "secure", Value: []byte("x")}).FirstErr()
	})
	adm := kadm.NewClient(newClient(t, b1, kgo.SeedBrokers(b1.Addrs()[1]), kgo.DialTLSConfig(tlsCfg),
		kgo.SASL(scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha512Mechanism())))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "not-carols"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("carol creates a topic: %v, want TOPIC_AUTHORIZATION_FAILED (her principal is User:carol, not the certificate's)", err)
	}
	if err := saslClient(t, b1, kgo.SASL(scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha512Mechanism())).Ping(ctx); err == nil {
		t.Error("a client without TLS was served on the SASL_SSL listener")
	}
	if v := counterValue(t, b1.metrics.authentications.WithLabelValues("SECURE", "SCRAM-SHA-512", "authenticated")); v < 2 {
		t.Errorf("SCRAM authentications on SECURE: %v, want broker 2's fetcher's and carol's", v)
	}
}
