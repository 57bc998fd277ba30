package broker

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/protocol"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gregor test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue makes a certificate for subject, good for both ends of a
// connection, for localhost and 127.0.0.1. It returns the certificate's
// and the PKCS#8 key's PEM.
func (ca *testCA) issue(t testing.TB, subject pkix.Name, serial int64) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:    []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	p8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8})
}

// clientTLS is a client config trusting ca, presenting a certificate for
// subject unless it is empty.
func (ca *testCA) clientTLS(t testing.TB, subject pkix.Name, serial int64) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if subject.CommonName != "" {
		certPEM, keyPEM := ca.issue(t, subject, serial)
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg
}

// writeFile writes data to a file in dir, through a rename so that a
// reader never sees it half written.
func writeFile(t testing.TB, dir, name string, data ...[]byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	tmp := path + ".tmp"
	var all []byte
	for _, d := range data {
		all = append(all, d...)
	}
	if err := os.WriteFile(tmp, all, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// sslBroker sets up a broker whose only listener is SSL://127.0.0.1:0,
// with a key store (serial 100, CN=broker) and trust store (ca) in files
// in dir.
func sslBroker(t testing.TB, ca *testCA, dir, clientAuth string) func(*Config) {
	t.Helper()
	certPEM, keyPEM := ca.issue(t, pkix.Name{CommonName: "broker"}, 100)
	ks := writeFile(t, dir, "broker.pem", keyPEM, certPEM)
	ts := writeFile(t, dir, "ca.pem", ca.pem)
	return func(c *Config) {
		c.Listeners = []string{"SSL://127.0.0.1:0"}
		c.ListenerSecurityProtocolMap = "SSL:SSL"
		c.SSL.KeystoreType, c.SSL.KeystoreLocation = "PEM", ks
		c.SSL.TruststoreType, c.SSL.TruststoreLocation = "PEM", ts
		c.SSL.ClientAuth = clientAuth
	}
}

// dialWireTLS opens a wire connection over TLS.
func dialWireTLS(t testing.TB, addr string, cfg *tls.Config) (*wireConn, error) {
	t.Helper()
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second}, Config: cfg}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { nc.Close() })
	return &wireConn{t: t, nc: nc, br: bufio.NewReader(nc),
		fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("gregor-tls-test"))}, nil
}

// TestTLSProduceConsume: a franz-go client produces and consumes over an
// SSL listener, trusting the broker's CA.
func TestTLSProduceConsume(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	b := startBroker(t, sslBroker(t, ca, t.TempDir(), "none"))
	cl := newClient(t, b, kgo.DialTLSConfig(ca.clientTLS(t, pkix.Name{}, 0)), kgo.AllowAutoTopicCreation(),
		kgo.ConsumeTopics("tls"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := testContext(t, 30*time.Second)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "tls", Value: []byte("over TLS")}).FirstErr(); err != nil {
		t.Fatalf("produce over TLS: %v", err)
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err(); err != nil {
		t.Fatalf("consume over TLS: %v", err)
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "over TLS" {
		t.Fatalf("consumed %d records, want the one produced", len(recs))
	}
}

// TestTLSClientAuthRequired: with ssl.client.auth=required, a client with
// a certificate of the trusted CA is served, one without a certificate or
// with one of another CA is not.
func TestTLSClientAuthRequired(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	b := startBroker(t, sslBroker(t, ca, t.TempDir(), "required"))
	apiVersions := func(cfg *tls.Config) error {
		w, err := dialWireTLS(t, b.Addrs()[0], cfg)
		if err != nil {
			return err
		}
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(3)
		_, err = w.roundTripWithin(req, 10*time.Second)
		return err
	}
	if err := apiVersions(ca.clientTLS(t, pkix.Name{CommonName: "alice"}, 7)); err != nil {
		t.Fatalf("client with a certificate: %v", err)
	}
	if err := apiVersions(ca.clientTLS(t, pkix.Name{}, 0)); err == nil {
		t.Error("client without a certificate was served")
	}
	other := ca.clientTLS(t, pkix.Name{}, 0)
	other.Certificates = newTestCA(t).clientTLS(t, pkix.Name{CommonName: "mallory"}, 8).Certificates
	if err := apiVersions(other); err == nil {
		t.Error("client with a certificate of an untrusted CA was served")
	}

	// franz-go without a certificate gets no answer either.
	cl := newClient(t, b, kgo.DialTLSConfig(ca.clientTLS(t, pkix.Name{}, 0)))
	if err := cl.Ping(testContext(t, 5*time.Second)); err == nil {
		t.Error("franz-go client without a certificate: Ping succeeded")
	}
}

// TestTLSPrincipalMappingACL: a client certificate's subject DN, mapped by
// ssl.principal.mapping.rules, is the principal the authorizer sees: an
// ACL for User:alice lets the client with CN=Alice produce, one for
// User:bob the client with CN=bob, each to its own topic only.
func TestTLSPrincipalMappingACL(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	b := startBroker(t, sslBroker(t, ca, t.TempDir(), "required"), func(c *Config) {
		c.SSL.PrincipalMappingRules = `RULE:^CN=([^,]*),OU=eng,.*$/$1/L, RULE:^CN=broker$/broker-principal/, DEFAULT`
		c.AuthorizerClassName = StandardAuthorizer
		c.SuperUsers = []string{"User:CN=admin,OU=ops,O=Acme,C=US", "User:broker-principal"}
	})
	dial := func(cn, ou string, serial int64) *wireConn {
		w, err := dialWireTLS(t, b.Addrs()[0], ca.clientTLS(t, pkix.Name{CommonName: cn, OrganizationalUnit: []string{ou},
			Organization: []string{"Acme"}, Country: []string{"US"}}, serial))
		if err != nil {
			t.Fatalf("dial as %s: %v", cn, err)
		}
		return w
	}
	// CN=admin,OU=ops,... maps by no RULE: DEFAULT keeps the DN, which is
	// a super user, so admin's requests below succeed.
	admin := dial("admin", "ops", 10)
	alice := dial("Alice", "eng", 11)
	bob := dial("bob", "eng", 12)
	admin.createTopic("mapped", 1, nil)
	admin.createTopic("mapped-bob", 1, nil)
	admin.createACLs(allow(acl.ResourceTopic, "mapped", "User:alice", acl.OpWrite),
		allow(acl.ResourceTopic, "mapped-bob", "User:bob", acl.OpWrite))
	batch := buildBatch(t, plainHeader(), "m", 1)
	checkCode(t, "alice produces to mapped", alice.producePartition(-1, "mapped", 0, batch).ErrorCode, protocol.None)
	checkCode(t, "bob produces to mapped", bob.producePartition(-1, "mapped", 0, batch).ErrorCode, protocol.TopicAuthorizationFailed)
	checkCode(t, "bob produces to mapped-bob", bob.producePartition(-1, "mapped-bob", 0, batch).ErrorCode, protocol.None)
	checkCode(t, "alice produces to mapped-bob", alice.producePartition(-1, "mapped-bob", 0, batch).ErrorCode, protocol.TopicAuthorizationFailed)
}

// TestTLSWrongProtocolClosed: a plaintext client on an SSL listener and a
// TLS client on a PLAINTEXT listener are closed.
func TestTLSWrongProtocolClosed(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	ssl := sslBroker(t, ca, t.TempDir(), "none")
	b := startBroker(t, ssl, func(c *Config) {
		c.Listeners = []string{"PLAINTEXT://127.0.0.1:0", "SSL://127.0.0.1:0"}
		c.ListenerSecurityProtocolMap = "PLAINTEXT:PLAINTEXT,SSL:SSL"
	})
	w := dialWireAddr(t, b.Addrs()[1])
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	if _, err := w.roundTripWithin(req, 10*time.Second); err == nil {
		t.Error("plaintext client on the SSL listener was answered")
	}
	if err := w.expectClosed(10 * time.Second); err != nil {
		t.Errorf("plaintext client on the SSL listener: %v", err)
	}
	if _, err := dialWireTLS(t, b.Addrs()[0], ca.clientTLS(t, pkix.Name{}, 0)); err == nil {
		t.Error("TLS handshake on the PLAINTEXT listener succeeded")
	}
	if n := oneMetricValue(t, b.metrics.tlsHandshakes.WithLabelValues("SSL", "failed")); n != 1 {
		t.Errorf("gregor_tls_handshakes_total{listener=SSL,result=failed} = %v, want 1", n)
	}
	// Both listeners still serve.
	if _, err := dialWireAddr(t, b.Addrs()[0]).roundTripWithin(req, 10*time.Second); err != nil {
		t.Errorf("PLAINTEXT listener after the TLS client: %v", err)
	}
	if _, err := dialWireTLS(t, b.Addrs()[1], ca.clientTLS(t, pkix.Name{}, 0)); err != nil {
		t.Errorf("SSL listener after the plaintext client: %v", err)
	}
}

// TestTLSHandshakeNeverDone: a client that connects to an SSL listener and
// sends nothing does not hold up other clients, and is closed after
// tlsHandshakeTimeout.
func TestTLSHandshakeNeverDone(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	b := startBroker(t, sslBroker(t, ca, t.TempDir(), "none"))
	idle, err := net.Dial("tcp", b.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if _, err := dialWireTLS(t, b.Addrs()[0], ca.clientTLS(t, pkix.Name{}, 0)); err != nil {
		t.Fatalf("second client while the first sends nothing: %v", err)
	}
	// The silent one is closed once the handshake's time is up.
	idle.SetReadDeadline(time.Now().Add(tlsHandshakeTimeout + 10*time.Second))
	if _, err := idle.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("client that never started its handshake: read %v, want the connection closed", err)
	}
}

// TestTLSCertificateReload: a key store file replaced while the broker
// runs is used by the connections that follow; one that cannot be loaded
// leaves the previous certificate in use.
func TestTLSCertificateReload(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	dir := t.TempDir()
	b := startBroker(t, sslBroker(t, ca, dir, "none"))
	serial := func() (string, error) {
		w, err := dialWireTLS(t, b.Addrs()[0], ca.clientTLS(t, pkix.Name{}, 0))
		if err != nil {
			return "", err
		}
		defer w.nc.Close()
		return w.nc.(*tls.Conn).ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
	}
	if s, err := serial(); err != nil || s != "100" {
		t.Fatalf("first certificate: serial %s, %v; want 100", s, err)
	}
	certPEM, keyPEM := ca.issue(t, pkix.Name{CommonName: "broker"}, 200)
	writeFile(t, dir, "broker.pem", certPEM, keyPEM)
	expiry := func() float64 { return oneMetricValue(t, b.metrics.tlsCertExpiry.WithLabelValues("SSL")) }
	first := expiry()
	waitFor(t, 20*time.Second, "the new certificate", func() error {
		s, err := serial()
		if err == nil && s != "200" {
			err = fmt.Errorf("serial %s", s)
		}
		return err
	})

	if leaf, err := x509.ParseCertificate(pemBlock(t, certPEM)); err != nil || expiry() != float64(leaf.NotAfter.Unix()) || first == 0 {
		t.Errorf("gregor_tls_certificate_expiry_timestamp_seconds %v after the reload (%v before), want the new notAfter (%v)",
			expiry(), first, err)
	}

	// Another subject or other names: refused, as ssl.allow.dn.changes
	// and ssl.allow.san.changes are false.
	lt := b.lis.tls["SSL"]
	certPEM, keyPEM = ca.issue(t, pkix.Name{CommonName: "impostor"}, 300)
	writeFile(t, dir, "broker.pem", certPEM, keyPEM)
	lt.maybeReload(time.Now().Add(time.Hour))
	if s, err := serial(); err != nil || s != "200" {
		t.Errorf("after a key store with another subject: serial %s, %v; want 200 still", s, err)
	}
	lt.reload.Lock()
	if lt.reload.failed == nil {
		t.Error("the key store with another subject was not tried")
	}
	lt.reload.Unlock()

	writeFile(t, dir, "broker.pem", []byte("not PEM"))
	lt.maybeReload(time.Now().Add(2 * time.Hour))
	lt.reload.Lock()
	tried := lt.reload.failed != nil
	lt.reload.Unlock()
	if !tried {
		t.Error("the broken key store was not tried")
	}
	if s, err := serial(); err != nil || s != "200" {
		t.Errorf("after a broken key store: serial %s, %v; want 200 still", s, err)
	}
}

// TestTLSInterBrokerReplication: three brokers whose only listener, the
// inter-broker one, is SSL with client certificates required replicate,
// authorized as their certificate's principal.
func TestTLSInterBrokerReplication(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	dir := t.TempDir()
	brokers := startCluster(t, 3, sslBroker(t, ca, dir, "required"), func(c *Config) {
		// Brokers fetch as the principal of their certificate, which
		// must be a super user once there is an authorizer.
		c.AuthorizerClassName = StandardAuthorizer
		c.SuperUsers = []string{"User:CN=broker", "User:CN=client"}
	})
	cl := newClient(t, brokers[0], kgo.DialTLSConfig(ca.clientTLS(t, pkix.Name{CommonName: "client"}, 5)),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("replicated"))
	w, err := dialWireTLS(t, brokers[0].Addrs()[0], ca.clientTLS(t, pkix.Name{CommonName: "client"}, 6))
	if err != nil {
		t.Fatal(err)
	}
	rt := w.createTopicResult("replicated", 1, 3, map[string]string{"min.insync.replicas": "3"})
	checkCode(t, "create replicated", rt.ErrorCode, protocol.None)
	waitISR(t, brokers[0], "replicated", 0, "[1 2 3]")
	ctx := testContext(t, 30*time.Second)
	for i := range 5 {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint("r", i))).FirstErr(); err != nil {
			t.Fatalf("produce with acks=all and min.insync.replicas=3: %v", err)
		}
	}
	waitFor(t, 20*time.Second, "every replica has the records", func() error {
		want := logBytes(t, brokers[0], "replicated", 0)
		for _, b := range brokers[1:] {
			if got := logBytes(t, b, "replicated", 0); string(got) != string(want) || len(want) == 0 {
				return fmt.Errorf("broker %d: %d bytes, leader %d", b.cfg.NodeID, len(got), len(want))
			}
		}
		return nil
	})
}

// TestTLSListenerConfig: SSL listeners are checked at start.
func TestTLSListenerConfig(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	dir := t.TempDir()
	certPEM, keyPEM := ca.issue(t, pkix.Name{CommonName: "broker"}, 1)
	otherCert, _ := ca.issue(t, pkix.Name{CommonName: "other"}, 2)
	ks := writeFile(t, dir, "ks.pem", certPEM, keyPEM)
	encrypted := writeFile(t, dir, "enc.pem", certPEM, pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte{1}}))
	ssl := func(mutate func(*Config)) func(*Config) {
		return func(c *Config) {
			c.Listeners = []string{"SSL://127.0.0.1:0"}
			c.ListenerSecurityProtocolMap = "SSL:SSL"
			c.SSL.KeystoreType, c.SSL.KeystoreLocation = "PEM", ks
			mutate(c)
		}
	}
	for _, c := range []struct {
		name   string
		mutate func(*Config)
		want   string // in the error; empty: valid
	}{
		{"file", ssl(func(*Config) {}), ""},
		{"inline", ssl(func(c *Config) {
			c.SSL.KeystoreLocation, c.SSL.KeystoreCertificateChain, c.SSL.KeystoreKey = "", string(certPEM), string(keyPEM)
			c.SSL.TruststoreType, c.SSL.TruststoreCertificates = "PEM", string(ca.pem)
		}), ""},
		{"per listener", ssl(func(c *Config) {
			c.SSL.KeystoreLocation = ""
			c.ListenerConfigs = map[string]string{"listener.name.ssl.ssl.keystore.location": ks}
		}), ""},
		{"per listener beats unprefixed", ssl(func(c *Config) {
			c.ListenerConfigs = map[string]string{"listener.name.ssl.ssl.client.auth": "bogus"}
		}), `ssl.client.auth "bogus"`},
		{"no key", ssl(func(c *Config) { c.SSL.KeystoreLocation = "" }), "no key and certificate"},
		{"JKS", ssl(func(c *Config) { c.SSL.KeystoreType = "JKS" }), "PEM key stores only"},
		{"chain without key", ssl(func(c *Config) {
			c.SSL.KeystoreLocation, c.SSL.KeystoreCertificateChain = "", string(certPEM)
		}), "go together"},
		{"missing file", ssl(func(c *Config) { c.SSL.KeystoreLocation = filepath.Join(dir, "none.pem") }), "no such file"},
		{"not PEM", ssl(func(c *Config) { c.SSL.KeystoreLocation = writeFile(t, dir, "junk.pem", []byte("junk")) }), "key store"},
		{"key of another certificate", ssl(func(c *Config) {
			c.SSL.KeystoreLocation, c.SSL.KeystoreCertificateChain, c.SSL.KeystoreKey = "", string(otherCert), string(keyPEM)
		}), "key store"},
		{"encrypted key", ssl(func(c *Config) { c.SSL.KeystoreLocation = encrypted }), "encrypted"},
		{"truststore JKS", ssl(func(c *Config) { c.SSL.TruststoreLocation = ks }), "PEM trust stores only"},
		{"empty truststore", ssl(func(c *Config) {
			c.SSL.TruststoreType, c.SSL.TruststoreCertificates = "PEM", "nothing"
		}), "no PEM CERTIFICATE"},
		{"protocol", ssl(func(c *Config) { c.SSL.EnabledProtocols = "SSLv3" }), `unknown protocol "SSLv3"`},
		{"cipher suites", ssl(func(c *Config) {
			c.SSL.CipherSuites = "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"
		}), ""},
		{"unknown cipher suite", ssl(func(c *Config) { c.SSL.CipherSuites = "TLS_NOPE" }), `unknown cipher suite "TLS_NOPE"`},
		{"rules", ssl(func(c *Config) { c.SSL.PrincipalMappingRules = "RULE:x" }), "ssl.principal.mapping.rules"},
	} {
		cfg := DefaultConfig()
		c.mutate(&cfg)
		err := cfg.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want valid", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrInvalidConfig)):
			t.Errorf("%s: error %v, want ErrInvalidConfig with %q", c.name, err, c.want)
		}
	}
}

// TestTLSDescribeConfigs: DescribeConfigs reports the ssl.* settings, the
// PEM texts and passwords hidden.
func TestTLSDescribeConfigs(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	b := startBroker(t, sslBroker(t, ca, t.TempDir(), "requested"), func(c *Config) {
		c.SSL.TruststoreLocation, c.SSL.TruststoreCertificates = "", string(ca.pem)
	})
	adm := kadm.NewClient(newClient(t, b, kgo.DialTLSConfig(ca.clientTLS(t, pkix.Name{}, 0))))
	rcs, err := adm.DescribeBrokerConfigs(testContext(t, 20*time.Second), b.cfg.NodeID)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(fmt.Sprint(b.cfg.NodeID), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]kadm.Config{}
	for _, c := range rc.Configs {
		got[c.Key] = c
	}
	for _, c := range []struct {
		name, value string
		sensitive   bool
		source      kmsg.ConfigSource
	}{
		{"ssl.client.auth", "requested", false, kmsg.ConfigSourceStaticBrokerConfig},
		{"ssl.keystore.type", "PEM", false, kmsg.ConfigSourceStaticBrokerConfig},
		{"ssl.keystore.location", b.cfg.SSL.KeystoreLocation, false, kmsg.ConfigSourceStaticBrokerConfig},
		{"ssl.truststore.certificates", "", true, kmsg.ConfigSourceStaticBrokerConfig},
		{"ssl.enabled.protocols", "TLSv1.2,TLSv1.3", false, kmsg.ConfigSourceDefaultConfig},
		{"ssl.principal.mapping.rules", "DEFAULT", false, kmsg.ConfigSourceDefaultConfig},
	} {
		g, ok := got[c.name]
		if !ok {
			t.Errorf("%s not described", c.name)
			continue
		}
		if g.MaybeValue() != c.value || g.Sensitive != c.sensitive || g.Source != c.source {
			t.Errorf("%s = %q sensitive=%v %s, want %q sensitive=%v %s", c.name, g.MaybeValue(), g.Sensitive, g.Source,
				c.value, c.sensitive, c.source)
		}
	}
}

// oneMetricValue is the value of a counter or gauge.
func oneMetricValue(t testing.TB, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatal(err)
	}
	if out.Counter != nil {
		return out.Counter.GetValue()
	}
	return out.Gauge.GetValue()
}

// TestTLSProtocolsAndCipherSuites: ssl.enabled.protocols and
// ssl.cipher.suites limit what a handshake may agree on.
func TestTLSProtocolsAndCipherSuites(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	b := startBroker(t, sslBroker(t, ca, t.TempDir(), "none"), func(c *Config) {
		c.SSL.EnabledProtocols = "TLSv1.2"
		c.SSL.CipherSuites = "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"
	})
	for _, c := range []struct {
		name     string
		min, max uint16
		suite    uint16
		ok       bool
	}{
		{"TLS 1.2, allowed suite", tls.VersionTLS12, tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, true},
		{"TLS 1.2, other suite", tls.VersionTLS12, tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, false},
		{"TLS 1.3 only", tls.VersionTLS13, tls.VersionTLS13, 0, false},
	} {
		cfg := ca.clientTLS(t, pkix.Name{}, 0)
		cfg.MinVersion, cfg.MaxVersion = c.min, c.max
		if c.suite != 0 {
			cfg.CipherSuites = []uint16{c.suite}
		}
		w, err := dialWireTLS(t, b.Addrs()[0], cfg)
		switch {
		case c.ok && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.ok && w.nc.(*tls.Conn).ConnectionState().CipherSuite != c.suite:
			t.Errorf("%s: agreed on %s", c.name, tls.CipherSuiteName(w.nc.(*tls.Conn).ConnectionState().CipherSuite))
		case !c.ok && err == nil:
			t.Errorf("%s: handshake succeeded", c.name)
		}
	}
}

// TestTLSPerListenerSettings: listener.name.<listener>.ssl.* beat the
// unprefixed settings for that listener only.
func TestTLSPerListenerSettings(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	dir := t.TempDir()
	certPEM, keyPEM := ca.issue(t, pkix.Name{CommonName: "external"}, 500)
	external := writeFile(t, dir, "external.pem", certPEM, keyPEM)
	b := startBroker(t, sslBroker(t, ca, dir, "required"), func(c *Config) {
		c.Listeners = []string{"INTERNAL://127.0.0.1:0", "EXTERNAL://127.0.0.1:0"}
		c.ListenerSecurityProtocolMap = "INTERNAL:SSL,EXTERNAL:SSL"
		c.InterBrokerListenerName = "INTERNAL"
		c.ListenerConfigs = map[string]string{
			"listener.name.external.ssl.client.auth":       "none",
			"listener.name.external.ssl.keystore.location": external,
		}
	})
	noCert := ca.clientTLS(t, pkix.Name{}, 0)
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	// With TLS 1.3 the client's side of the handshake may complete before
	// the broker refuses it: the request fails then.
	if w, err := dialWireTLS(t, b.Addrs()[0], noCert); err == nil {
		if _, err := w.roundTripWithin(req, 10*time.Second); err == nil {
			t.Error("INTERNAL (ssl.client.auth=required) served a client without a certificate")
		}
	}
	w, err := dialWireTLS(t, b.Addrs()[1], noCert)
	if err != nil {
		t.Fatalf("EXTERNAL (listener.name.external.ssl.client.auth=none) without a certificate: %v", err)
	}
	if s := w.nc.(*tls.Conn).ConnectionState().PeerCertificates[0].SerialNumber.String(); s != "500" {
		t.Errorf("EXTERNAL presented serial %s, want 500 (listener.name.external.ssl.keystore.location)", s)
	}
	if _, err := w.roundTripWithin(req, 10*time.Second); err != nil {
		t.Errorf("EXTERNAL without a certificate: %v", err)
	}
}
