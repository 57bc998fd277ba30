package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
)

// testPKI is a CA with a server certificate for localhost only and a
// client certificate, in PEM.
type testPKI struct {
	caPEM, otherCAPEM       string
	serverCert              tls.Certificate
	clientKeyPEM, clientPEM string
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	serial := int64(0)
	issue := func(tmpl, parent *x509.Certificate, key *ecdsa.PrivateKey, signer *ecdsa.PrivateKey) (*x509.Certificate, string) {
		serial++
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
		if parent == nil {
			parent = tmpl
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
		if err != nil {
			t.Fatal(err)
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return c, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	}
	keyPEM := func(k *ecdsa.PrivateKey) string {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	}
	caTmpl := func(name string) *x509.Certificate {
		return &x509.Certificate{Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
			KeyUsage: x509.KeyUsageCertSign}
	}
	caKey, otherKey := newKey(), newKey()
	ca, caPEM := issue(caTmpl("test CA"), nil, caKey, caKey)
	_, otherPEM := issue(caTmpl("other CA"), nil, otherKey, otherKey)

	srvKey := newKey()
	_, srvPEM := issue(&x509.Certificate{Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, ca, srvKey, caKey)
	srv, err := tls.X509KeyPair([]byte(srvPEM), []byte(keyPEM(srvKey)))
	if err != nil {
		t.Fatal(err)
	}
	cliKey := newKey()
	_, cliPEM := issue(&x509.Certificate{Subject: pkix.Name{CommonName: "alice"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, ca, cliKey, caKey)
	return &testPKI{caPEM: caPEM, otherCAPEM: otherPEM, serverCert: srv, clientKeyPEM: keyPEM(cliKey), clientPEM: cliPEM}
}

// writeFile writes data to name in dir and returns its path.
func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// asPropertyValue writes a multi-line PEM as one property value continued
// over lines, as people write them in client.properties.
func asPropertyValue(pemText string) string {
	return strings.ReplaceAll(strings.TrimSpace(pemText), "\n", " \\\n    ")
}

func TestCommandConfig(t *testing.T) {
	pki := newTestPKI(t)
	dir := t.TempDir()
	caFile := writeFile(t, dir, "ca.pem", pki.caPEM)
	keystore := writeFile(t, dir, "client.pem", pki.clientKeyPEM+pki.clientPEM)
	tokenFile := writeFile(t, dir, "token.jwt", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJib2IifQ.\n")

	for _, tt := range []struct {
		name  string
		props string
		check func(t *testing.T, s *clientSettings)
	}{
		{"empty", "", func(t *testing.T, s *clientSettings) {
			if s.protocol != protoPlaintext || s.tls != nil || s.mechanism != "" || len(s.bootstrap) > 0 || len(s.opts()) != 0 {
				t.Errorf("empty file: %+v, want PLAINTEXT and no options", s)
			}
		}},
		{"common", `
bootstrap.servers = a:9092, b:9092
client.id: tool
request.timeout.ms=45000
socket.connection.setup.timeout.ms=5000
connections.max.idle.ms=60000
metadata.max.age.ms=120000
retry.backoff.ms=50
`, func(t *testing.T, s *clientSettings) {
			want := clientSettings{bootstrap: []string{"a:9092", "b:9092"}, clientID: "tool", requestTimeout: 45 * time.Second,
				dialTimeout: 5 * time.Second, idleTimeout: time.Minute, metadataMaxAge: 2 * time.Minute,
				retryBackoff: 50 * time.Millisecond, protocol: protoPlaintext}
			if !reflect.DeepEqual(*s, want) {
				t.Errorf("settings\n got %+v\nwant %+v", *s, want)
			}
			var got []time.Duration
			for n := 1; n <= 7; n++ {
				got = append(got, s.backoff(n))
			}
			ms := time.Millisecond
			if want := []time.Duration{50 * ms, 100 * ms, 200 * ms, 400 * ms, 800 * ms, 1000 * ms, 1000 * ms}; !reflect.DeepEqual(got, want) {
				t.Errorf("backoffs %v, want %v (doubling to retry.backoff.max.ms' default)", got, want)
			}
		}},
		{"plain", `security.protocol=sasl_plaintext
sasl.mechanism=PLAIN
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \
    username="alice" \
    password="a;b=c d";
`, func(t *testing.T, s *clientSettings) {
			if s.protocol != protoSASLPlaintext || s.mechanism != mechPlain || s.user != "alice" || s.password != "a;b=c d" || s.tls != nil {
				t.Errorf("settings %+v, want SASL_PLAINTEXT, PLAIN as alice with password %q", s, "a;b=c d")
			}
			if len(s.warnings) > 0 {
				t.Errorf("warnings %q, want none", s.warnings)
			}
		}},
		{"scram quoting", `security.protocol=SASL_PLAINTEXT
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username='bob' password="say \\"hi\\" \\\\o/" tokenauth=true;
`, func(t *testing.T, s *clientSettings) {
			if s.mechanism != mechSCRAMSHA512 || s.user != "bob" || s.password != `say "hi" \o/` || !s.scramToken {
				t.Errorf("settings %+v, want SCRAM-SHA-512 as bob with password %q, a delegation token", s, `say "hi" \o/`)
			}
		}},
		{"warnings by line", `acks=all
security.protocol=PLAINTEXT
ssl.truststore.location=/nowhere
sasl.mechanism=PLAIN
foo=bar
`, func(t *testing.T, s *clientSettings) {
			want := []string{
				"f: line 1: ignoring acks: not a setting gregor uses",
				"f: line 3: ignoring ssl.truststore.location: security.protocol is PLAINTEXT",
				"f: line 4: ignoring sasl.mechanism: security.protocol is PLAINTEXT",
				"f: line 5: ignoring foo: not a setting gregor uses",
			}
			if !reflect.DeepEqual(s.warnings, want) {
				t.Errorf("warnings\n got %q\nwant %q", s.warnings, want)
			}
		}},
		{"oauthbearer unsecured", `security.protocol=SASL_PLAINTEXT
sasl.mechanism=OAUTHBEARER
sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
  unsecuredLoginStringClaim_sub="carol" unsecuredLoginListClaim_scope=",read,,write," \
  unsecuredLoginNumberClaim_n="7" unsecuredLoginLifetimeSeconds="60" unsecuredLoginExtension_traceId="t1";
`, func(t *testing.T, s *clientSettings) {
			auth, err := s.token(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			parts := strings.Split(auth.Token, ".")
			if len(parts) != 3 || parts[2] != "" {
				t.Fatalf("token %q, want an unsigned JWT", auth.Token)
			}
			payload, err := base64.RawURLEncoding.DecodeString(parts[1])
			if err != nil {
				t.Fatal(err)
			}
			var claims struct {
				Sub      string
				Scope    []string
				N        float64
				IAT, EXP int64
			}
			if err := json.Unmarshal(payload, &claims); err != nil {
				t.Fatal(err)
			}
			if claims.Sub != "carol" || !reflect.DeepEqual(claims.Scope, []string{"read", "write"}) || claims.N != 7 || claims.EXP-claims.IAT != 60 {
				t.Errorf("claims %s, want sub carol, scope [read write], n 7, a lifetime of 60 s", payload)
			}
			if auth.Extensions["traceId"] != "t1" {
				t.Errorf("extensions %v, want traceId=t1", auth.Extensions)
			}
		}},
		{"oauthbearer token file", `security.protocol=SASL_SSL
sasl.mechanism=OAUTHBEARER
sasl.login.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler
sasl.oauthbearer.token.endpoint.url=file://` + tokenFile + `
sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required extension_tenant="t9";
`, func(t *testing.T, s *clientSettings) {
			auth, err := s.token(t.Context())
			if err != nil || auth.Token != "eyJhbGciOiJub25lIn0.eyJzdWIiOiJib2IifQ." {
				t.Errorf("token %q, %v; want the file's", auth.Token, err)
			}
			if !reflect.DeepEqual(auth.Extensions, map[string]string{"tenant": "t9"}) {
				t.Errorf("extensions %v, want tenant=t9", auth.Extensions)
			}
			if s.tls == nil {
				t.Error("SASL_SSL without TLS")
			}
		}},
		{"ssl files", `security.protocol=SSL
ssl.truststore.type=PEM
ssl.truststore.location=` + caFile + `
ssl.keystore.type=pem
ssl.keystore.location=` + keystore + `
ssl.enabled.protocols=TLSv1.2,TLSv1.3
ssl.protocol=TLSv1.2
ssl.cipher.suites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_AES_128_GCM_SHA256
`, func(t *testing.T, s *clientSettings) {
			c := s.tls
			if c == nil || c.RootCAs == nil || len(c.Certificates) != 1 || c.InsecureSkipVerify {
				t.Fatalf("tls %+v, want the CA, a client certificate and verification", c)
			}
			if c.MinVersion != tls.VersionTLS12 || c.MaxVersion != tls.VersionTLS12 {
				t.Errorf("versions %x-%x, want TLS 1.2 only", c.MinVersion, c.MaxVersion)
			}
			if !reflect.DeepEqual(c.CipherSuites, []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}) {
				t.Errorf("cipher suites %v", c.CipherSuites)
			}
		}},
		{"ssl inline", "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n" +
			"sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=u password=p;\n" +
			"ssl.truststore.type=PEM\nssl.truststore.certificates=" + asPropertyValue(pki.caPEM) + "\n" +
			"ssl.keystore.type=PEM\nssl.keystore.key=" + asPropertyValue(pki.clientKeyPEM) + "\n" +
			"ssl.keystore.certificate.chain=" + asPropertyValue(pki.clientPEM) + "\n" +
			"ssl.endpoint.identification.algorithm=\n",
			func(t *testing.T, s *clientSettings) {
				c := s.tls
				if c == nil || c.RootCAs == nil || len(c.Certificates) != 1 || !c.InsecureSkipVerify || c.VerifyConnection == nil {
					t.Fatalf("tls %+v, want the CA, a client certificate, and the chain checked without the host name", c)
				}
				if s.mechanism != mechPlain || s.user != "u" || s.password != "p" {
					t.Errorf("settings %+v, want PLAIN as u", s)
				}
			}},
		{"ssl system roots", "security.protocol=SSL\nssl.truststore.type=JKS\n", func(t *testing.T, s *clientSettings) {
			if s.tls == nil || s.tls.RootCAs != nil || s.tls.InsecureSkipVerify {
				t.Errorf("tls %+v, want the system's roots and the host name checked", s.tls)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := parseCommandConfig("f", []byte(tt.props))
			if err != nil {
				t.Fatalf("parseCommandConfig: %v", err)
			}
			tt.check(t, s)
		})
	}
}

// TestCommandConfigOpts: the settings become kgo options that a client
// takes, read back through OptValue.
func TestCommandConfigOpts(t *testing.T) {
	s, err := parseCommandConfig("f", []byte(`client.id=tool
request.timeout.ms=45000
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-256
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";
`))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}, s.opts()...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if got := cl.OptValue(kgo.ClientID); got != "tool" {
		t.Errorf("client id %v, want tool", got)
	}
	if got := cl.OptValue(kgo.RequestTimeoutOverhead); got != 45*time.Second {
		t.Errorf("request timeout overhead %v, want 45s", got)
	}
	if got, _ := cl.OptValue(kgo.DialTLSConfig).(*tls.Config); got != s.tls || got == nil {
		t.Errorf("dial TLS config %v, want the settings'", got)
	}
	if ms, _ := cl.OptValue(kgo.SASL).([]sasl.Mechanism); len(ms) != 1 || ms[0].Name() != mechSCRAMSHA256 {
		t.Errorf("SASL mechanisms %v, want SCRAM-SHA-256", ms)
	}
}

func TestCommandConfigErrors(t *testing.T) {
	pki := newTestPKI(t)
	dir := t.TempDir()
	caFile := writeFile(t, dir, "ca.pem", pki.caPEM)
	encKey := writeFile(t, dir, "enc.pem", "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n"+pki.clientPEM)
	const sasl = "security.protocol=SASL_PLAINTEXT\n"
	const plainJAAS = "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"hunter2\";\n"
	for _, tt := range []struct {
		name, props string
		want        []string // substrings of the error
	}{
		{"bad escape", "a=1\nb=\\u12G4", []string{"f: line 2: malformed"}},
		{"bad number", "\nrequest.timeout.ms=30s", []string{"line 2: request.timeout.ms", `"30s"`}},
		{"negative number", "metadata.max.age.ms=-1", []string{"metadata.max.age.ms"}},
		{"empty bootstrap", "bootstrap.servers= , ", []string{"bootstrap.servers: empty"}},
		{"config providers", "config.providers=file\nconfig.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider",
			[]string{"line 1: config.providers", "${...}"}},
		{"protocol", "security.protocol=TLS", []string{"security.protocol", "SASL_SSL"}},
		{"no mechanism", sasl + plainJAAS, []string{"sasl.mechanism is not set", "GSSAPI"}},
		{"gssapi", sasl + "sasl.mechanism=GSSAPI\n" + plainJAAS, []string{"sasl.mechanism", `"GSSAPI" is not supported`}},
		{"no jaas", sasl + "sasl.mechanism=PLAIN\n", []string{"sasl.jaas.config is not set"}},
		{"wrong module", sasl + "sasl.mechanism=SCRAM-SHA-256\n" + plainJAAS, []string{"sasl.jaas.config", "ScramLoginModule"}},
		{"no password", sasl + "sasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=u;",
			[]string{"sasl.jaas.config", "password"}},
		{"no flag", sasl + "sasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule username=u password=p;",
			[]string{"sasl.jaas.config", "control flag"}},
		{"unterminated", sasl + "sasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=u password=\"hunter2;",
			[]string{"sasl.jaas.config", "unterminated quote"}},
		{"no semicolon", sasl + "sasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=u password=hunter2",
			[]string{"sasl.jaas.config", "closing ;"}},
		{"oauth no sub", sasl + "sasl.mechanism=OAUTHBEARER\nsasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
			[]string{"unsecuredLoginStringClaim_sub"}},
		{"oauth http", sasl + "sasl.mechanism=OAUTHBEARER\nsasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;\n" +
			"sasl.login.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler\n" +
			"sasl.oauthbearer.token.endpoint.url=https://idp/token", []string{"sasl.oauthbearer.token.endpoint.url", "file: URL only"}},
		{"truststore default type", "security.protocol=SSL\nssl.truststore.location=" + caFile, []string{"ssl.truststore.type is not set", "JKS", "ssl.truststore.type=PEM"}},
		{"truststore pkcs12", "security.protocol=SSL\nssl.truststore.type=PKCS12\nssl.truststore.location=" + caFile, []string{"ssl.truststore.type: PKCS12 is a Java format"}},
		{"keystore jks", "security.protocol=SSL\nssl.keystore.type=JKS\nssl.keystore.location=" + caFile, []string{"ssl.keystore.type: JKS"}},
		{"truststore missing", "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=" + dir + "/nope.pem", []string{"ssl.truststore.location", "no such file"}},
		{"truststore not pem", "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.certificates=hello", []string{"ssl.truststore.certificates", "not PEM"}},
		{"truststore password", "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=" + caFile + "\nssl.truststore.password=x", []string{"ssl.truststore.password"}},
		{"key without chain", "security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.key=" + asPropertyValue(pki.clientKeyPEM), []string{"ssl.keystore.key", "ssl.keystore.certificate.chain"}},
		{"encrypted key", "security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.location=" + encKey, []string{"encrypted", "openssl pkcs8"}},
		{"key of another cert", "security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.location=" + writeFile(t, dir, "mismatch.pem", pki.clientKeyPEM+pki.caPEM),
			[]string{"ssl.keystore.location", "private key does not match"}},
		{"old protocol", "security.protocol=SSL\nssl.enabled.protocols=TLSv1.2,SSLv3", []string{"ssl.enabled.protocols", "SSLv3"}},
		{"ssl.protocol", "security.protocol=SSL\nssl.protocol=SSL", []string{"ssl.protocol", `"SSL"`}},
		{"capped below", "security.protocol=SSL\nssl.protocol=TLSv1.1", []string{"ssl.protocol", "below"}},
		{"identification", "security.protocol=SSL\nssl.endpoint.identification.algorithm=dns", []string{"ssl.endpoint.identification.algorithm", `"dns"`}},
		{"cipher", "security.protocol=SSL\nssl.cipher.suites=TLS_RSA_WITH_RC4_128_SHA", []string{"ssl.cipher.suites", "TLS_RSA_WITH_RC4_128_SHA"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseCommandConfig("f", []byte(tt.props))
			if err == nil {
				t.Fatalf("parseCommandConfig succeeded, want an error with %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q, want it to hold %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}

// TestCommandConfigTLSVerify dials a TLS server whose certificate names
// localhost only, at 127.0.0.1 (the name franz-go then checks): with the
// host name check it fails; without it the chain is still checked, so it
// succeeds with the server's CA and fails with another.
func TestCommandConfigTLSVerify(t *testing.T) {
	pki := newTestPKI(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pki.serverCert}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				_ = c.(*tls.Conn).Handshake()
				c.Close()
			}()
		}
	}()
	for _, tt := range []struct {
		name, ca, alg string
		wantErr       string
	}{
		{"host name checked", pki.caPEM, "https", "127.0.0.1"},
		{"host name not checked", pki.caPEM, "", ""},
		{"chain still checked", pki.otherCAPEM, "", "unknown authority"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := parseCommandConfig("f", []byte("security.protocol=SSL\nssl.truststore.type=PEM\n"+
				"ssl.truststore.certificates="+asPropertyValue(tt.ca)+"\nssl.endpoint.identification.algorithm="+tt.alg+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			c := s.tls.Clone()
			c.ServerName = "127.0.0.1" // as franz-go sets it from the address
			conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", ln.Addr().String(), c)
			if err == nil {
				conn.Close()
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("dial: %v, want success", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("dial: %v, want an error with %q", err, tt.wantErr)
			}
			if tt.wantErr == "" {
				return
			}
			// The CLI stops at the failed verification, at once, rather
			// than retrying until --timeout.
			file := writeFile(t, t.TempDir(), "ssl.properties", "bootstrap.servers="+ln.Addr().String()+"\n"+
				"security.protocol=SSL\nssl.truststore.type=PEM\n"+
				"ssl.truststore.certificates="+asPropertyValue(tt.ca)+"\nssl.endpoint.identification.algorithm="+tt.alg+"\n")
			start := time.Now()
			_, _, err = execArgs(t, "", "topic", "list", "--command-config", file, "--timeout", "1m")
			if err == nil || !strings.Contains(err.Error(), "authenticate") || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("topic list: %v, want an authentication error with %q", err, tt.wantErr)
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("topic list took %v to fail", d)
			}
		})
	}
}

// TestCommandConfigBootstrap: --bootstrap-server given wins over
// bootstrap.servers, which wins over the flag's default and its
// environment variable.
func TestCommandConfigBootstrap(t *testing.T) {
	t.Setenv(bootstrapEnv, "env:9092")
	file := &clientSettings{bootstrap: []string{"file:9092"}}
	for _, tt := range []struct {
		name string
		flag string // "" for not given
		s    *clientSettings
		want string
	}{
		{"env", "", &clientSettings{}, "env:9092"},
		{"file over env", "", file, "file:9092"},
		{"flag over file", "flag:9092", file, "flag:9092"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := &clientOptions{}
			cmd := &cobra.Command{Use: "x"}
			o.addFlags(cmd)
			if tt.flag != "" {
				if err := cmd.PersistentFlags().Set("bootstrap-server", tt.flag); err != nil {
					t.Fatal(err)
				}
			}
			got, err := o.seeds(tt.s)
			if err != nil || strings.Join(got, ",") != tt.want {
				t.Errorf("seeds = %v, %v; want %s", got, err, tt.want)
			}
		})
	}
}
