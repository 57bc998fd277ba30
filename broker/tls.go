package broker

// SSL listeners: the ssl.* settings (Kafka's names and defaults, PEM key
// and trust stores only), the TLS handshake of accepted connections, the
// principal a client certificate gives (tls_principal.go), reloading
// changed key and trust store files, and the TLS side of the broker's own
// connections when the inter-broker listener is SSL.
//
// The handshake runs in the connection's goroutine, bounded by
// tlsHandshakeTimeout, so a client that never completes it neither holds
// the accept loop nor a connection slot for long. A client speaking
// plaintext to an SSL listener fails the handshake and is closed; failed
// handshakes are logged at most once per tlsRejectLogInterval per
// listener. A TLS client on a PLAINTEXT listener sends a ClientHello,
// which reads as a request frame far over socket.request.max.bytes, and is
// closed by the read loop.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

const (
	// tlsHandshakeTimeout bounds a TLS handshake, accepted or dialled.
	tlsHandshakeTimeout = 10 * time.Second
	// tlsReloadCheckInterval is how often, at most, a handshake looks at
	// the key and trust store files for a change.
	tlsReloadCheckInterval = 2 * time.Second
	// tlsRejectLogInterval spaces the log lines of failed handshakes.
	tlsRejectLogInterval = 10 * time.Second
)

// SSLConfig is the ssl.* settings of an SSL listener, Kafka's, with its
// defaults (DefaultSSLConfig). Config.SSL holds the unprefixed settings;
// listener.name.<listener>.ssl.* in Config.ListenerConfigs override them
// one by one for that listener, as in Kafka.
type SSLConfig struct {
	// KeystoreType is ssl.keystore.type. Kafka's default is JKS; Gregor
	// reads only PEM, and refuses to start an SSL listener with another.
	KeystoreType string
	// KeystoreLocation is ssl.keystore.location: a PEM file holding the
	// private key and the certificate chain, leaf first. It is read again
	// when it changes.
	KeystoreLocation string
	// KeystoreCertificateChain and KeystoreKey are
	// ssl.keystore.certificate.chain and ssl.keystore.key: the chain and
	// the key as PEM text, in place of a file.
	KeystoreCertificateChain string
	KeystoreKey              string
	// KeyPassword is ssl.key.password, the password of an encrypted
	// PKCS#8 private key (PBES2 with AES-CBC, see tls_key.go).
	KeyPassword string
	// TruststoreType is ssl.truststore.type (JKS by Kafka's default; only
	// PEM is read). TruststoreLocation (ssl.truststore.location) is a PEM
	// file of CA certificates, read again when it changes;
	// TruststoreCertificates (ssl.truststore.certificates) the same as
	// text. Without either, the system's roots are used.
	TruststoreType         string
	TruststoreLocation     string
	TruststoreCertificates string
	// ClientAuth is ssl.client.auth: none, requested (a client
	// certificate is verified when the client gives one) or required.
	ClientAuth string
	// EnabledProtocols is ssl.enabled.protocols, comma-separated (TLSv1.2,
	// TLSv1.3). Go's TLS takes a range of versions, so the range from the
	// lowest to the highest listed is enabled.
	EnabledProtocols string
	// PrincipalMappingRules is ssl.principal.mapping.rules (DEFAULT): how
	// a client certificate's subject DN becomes the principal's name.
	PrincipalMappingRules string
	// EndpointIdentificationAlgorithm is
	// ssl.endpoint.identification.algorithm: https (the default) checks,
	// on the broker's own connections to other brokers, that the other
	// broker's certificate names the host dialled; empty does not.
	EndpointIdentificationAlgorithm string
	// CipherSuites is ssl.cipher.suites, comma-separated IANA names
	// (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, as Java and Go both name
	// them); empty allows Go's defaults. Go does not make TLS 1.3's
	// suites configurable: the list applies to TLS 1.2 and below.
	CipherSuites string
	// AllowDNChanges and AllowSANChanges are ssl.allow.dn.changes and
	// ssl.allow.san.changes ("true" or "false", default false): whether a
	// reloaded key store may hold a certificate with another subject DN,
	// or other subject alternative names, than the one it replaces. As
	// Kafka does for a dynamic key store update, a reload that would
	// change them is refused (and logged) unless allowed.
	AllowDNChanges  string
	AllowSANChanges string
}

// DefaultSSLConfig is Kafka's defaults of the ssl.* settings.
func DefaultSSLConfig() SSLConfig {
	return SSLConfig{
		KeystoreType:                    "JKS",
		TruststoreType:                  "JKS",
		ClientAuth:                      "none",
		EnabledProtocols:                "TLSv1.2,TLSv1.3",
		PrincipalMappingRules:           "DEFAULT",
		EndpointIdentificationAlgorithm: "https",
		AllowDNChanges:                  "false",
		AllowSANChanges:                 "false",
	}
}

// sslSettings name SSLConfig's fields by their config keys.
var sslSettings = []struct {
	name  string
	field func(*SSLConfig) *string
}{
	{"ssl.keystore.type", func(s *SSLConfig) *string { return &s.KeystoreType }},
	{"ssl.keystore.location", func(s *SSLConfig) *string { return &s.KeystoreLocation }},
	{"ssl.keystore.certificate.chain", func(s *SSLConfig) *string { return &s.KeystoreCertificateChain }},
	{"ssl.keystore.key", func(s *SSLConfig) *string { return &s.KeystoreKey }},
	{"ssl.key.password", func(s *SSLConfig) *string { return &s.KeyPassword }},
	{"ssl.truststore.type", func(s *SSLConfig) *string { return &s.TruststoreType }},
	{"ssl.truststore.location", func(s *SSLConfig) *string { return &s.TruststoreLocation }},
	{"ssl.truststore.certificates", func(s *SSLConfig) *string { return &s.TruststoreCertificates }},
	{"ssl.client.auth", func(s *SSLConfig) *string { return &s.ClientAuth }},
	{"ssl.enabled.protocols", func(s *SSLConfig) *string { return &s.EnabledProtocols }},
	{"ssl.principal.mapping.rules", func(s *SSLConfig) *string { return &s.PrincipalMappingRules }},
	{"ssl.endpoint.identification.algorithm", func(s *SSLConfig) *string { return &s.EndpointIdentificationAlgorithm }},
	{"ssl.cipher.suites", func(s *SSLConfig) *string { return &s.CipherSuites }},
	{"ssl.allow.dn.changes", func(s *SSLConfig) *string { return &s.AllowDNChanges }},
	{"ssl.allow.san.changes", func(s *SSLConfig) *string { return &s.AllowSANChanges }},
}

// SSLConfigNames are the config keys of SSLConfig's fields, in a fixed
// order.
func SSLConfigNames() []string {
	out := make([]string, len(sslSettings))
	for i, s := range sslSettings {
		out[i] = s.name
	}
	return out
}

// Setting returns the value of the ssl.* key name, false for a key that
// is not one of SSLConfig's.
func (s *SSLConfig) Setting(name string) (string, bool) {
	for _, st := range sslSettings {
		if st.name == name {
			return *st.field(s), true
		}
	}
	return "", false
}

// Set sets the ssl.* key name; false for a key that is not one of
// SSLConfig's.
func (s *SSLConfig) Set(name, value string) bool {
	for _, st := range sslSettings {
		if st.name == name {
			*st.field(s) = value
			return true
		}
	}
	return false
}

// listenerSSL is the SSL settings of the listener named name: Config.SSL
// overridden by its listener.name.<name>.ssl.* entries.
func (c *Config) listenerSSL(name string) SSLConfig {
	s := c.SSL
	prefix := "listener.name." + strings.ToLower(name) + "."
	for _, st := range sslSettings {
		if v, ok := c.ListenerConfigs[prefix+st.name]; ok {
			*st.field(&s) = strings.TrimSpace(v)
		}
	}
	return s
}

// listenerTLS serves one SSL listener, and dials other brokers when it is
// the inter-broker listener.
type listenerTLS struct {
	name       string
	ssl        SSLConfig
	minVersion uint16
	maxVersion uint16
	clientAuth tls.ClientAuthType
	mapper     *principalMapper
	// cipherSuites is ssl.cipher.suites; nil for Go's defaults.
	cipherSuites []uint16
	// allowDNChange and allowSANChange are ssl.allow.dn.changes and
	// ssl.allow.san.changes.
	allowDNChange, allowSANChange bool
	// server is handed to tls.Server: it only points each handshake at
	// the current material's config.
	server *tls.Config
	logger *slog.Logger
	// expiry is the listener's gregor_tls_certificate_expiry_timestamp_seconds;
	// nil for a listenerTLS only built to check the config.
	expiry prometheus.Gauge

	cur atomic.Pointer[tlsMaterial]
	// checked is when the files were last looked at (UnixNano).
	checked atomic.Int64
	// reload is held while the files are looked at and loaded; a
	// handshake that finds it held goes on with the current material.
	reload struct {
		sync.Mutex
		// failed is the file states a reload last failed on: they are
		// not tried (nor logged) again until the files change again.
		failed []fileStamp
	}

	rejectLogged atomic.Int64 // UnixNano of the last logged handshake failure
	rejected     atomic.Int64 // failures not logged since
}

// tlsMaterial is the key pair and trust roots of a listener as last
// loaded, and the server config built from them.
type tlsMaterial struct {
	cert   tls.Certificate
	roots  *x509.CertPool // nil: the system's
	stamps []fileStamp
	server *tls.Config
}

// fileStamp is what tells a changed file: its modification time and size.
type fileStamp struct {
	path string
	mod  time.Time
	size int64
}

// newListenerTLS checks a listener's SSL settings and loads its key pair
// and trust store: any problem is a start error.
func newListenerTLS(name string, s SSLConfig) (*listenerTLS, error) {
	lt := &listenerTLS{name: name, ssl: s, logger: slog.New(slog.DiscardHandler)}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: TLS of listener %s: %s", ErrInvalidConfig, name, fmt.Sprintf(format, args...))
	}
	switch strings.ToLower(strings.TrimSpace(s.ClientAuth)) {
	case "none", "":
		lt.clientAuth = tls.NoClientCert
	case "requested":
		lt.clientAuth = tls.VerifyClientCertIfGiven
	case "required":
		lt.clientAuth = tls.RequireAndVerifyClientCert
	default:
		return nil, bad("ssl.client.auth %q: want none, requested or required", s.ClientAuth)
	}
	for _, p := range strings.Split(s.EnabledProtocols, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		v, ok := map[string]uint16{"TLSv1": tls.VersionTLS10, "TLSv1.1": tls.VersionTLS11,
			"TLSv1.2": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13}[p]
		if !ok {
			return nil, bad("ssl.enabled.protocols: unknown protocol %q (TLSv1, TLSv1.1, TLSv1.2 and TLSv1.3 are known)", p)
		}
		if lt.minVersion == 0 || v < lt.minVersion {
			lt.minVersion = v
		}
		lt.maxVersion = max(lt.maxVersion, v)
	}
	if lt.minVersion == 0 {
		return nil, bad("ssl.enabled.protocols is empty")
	}
	for _, name := range strings.Split(s.CipherSuites, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		id, ok := cipherSuiteID(name)
		if !ok {
			return nil, bad("ssl.cipher.suites: unknown cipher suite %q (IANA names, such as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)", name)
		}
		lt.cipherSuites = append(lt.cipherSuites, id)
	}
	switch strings.ToLower(strings.TrimSpace(s.EndpointIdentificationAlgorithm)) {
	case "", "https":
	default:
		return nil, bad("ssl.endpoint.identification.algorithm %q: want https or empty", s.EndpointIdentificationAlgorithm)
	}
	for _, b := range []struct {
		name, value string
		to          *bool
	}{{"ssl.allow.dn.changes", s.AllowDNChanges, &lt.allowDNChange}, {"ssl.allow.san.changes", s.AllowSANChanges, &lt.allowSANChange}} {
		switch strings.ToLower(strings.TrimSpace(b.value)) {
		case "true":
			*b.to = true
		case "false", "":
		default:
			return nil, bad("%s %q: want true or false", b.name, b.value)
		}
	}
	var err error
	if lt.mapper, err = parsePrincipalMappingRules(s.PrincipalMappingRules); err != nil {
		return nil, bad("ssl.principal.mapping.rules: %v", err)
	}
	m, err := lt.load()
	if err != nil {
		return nil, bad("%v", err)
	}
	lt.cur.Store(m)
	lt.checked.Store(time.Now().UnixNano())
	lt.server = &tls.Config{GetConfigForClient: lt.configForClient}
	return lt, nil
}

// load reads the key pair and the trust store.
func (lt *listenerTLS) load() (*tlsMaterial, error) {
	s := lt.ssl
	m := &tlsMaterial{}
	var certPEM, keyPEM []byte
	switch t := strings.TrimSpace(s.KeystoreType); {
	case s.KeystoreLocation == "" && s.KeystoreCertificateChain == "" && s.KeystoreKey == "":
		return nil, errors.New("no key and certificate: set ssl.keystore.type=PEM and ssl.keystore.location, " +
			"or ssl.keystore.certificate.chain and ssl.keystore.key")
	case !strings.EqualFold(t, "PEM"):
		return nil, fmt.Errorf("ssl.keystore.type %s: Gregor reads PEM key stores only; set ssl.keystore.type=PEM "+
			"(a JKS or PKCS12 key store converts with keytool -importkeystore and openssl pkcs12 -nodes)", t)
	case s.KeystoreLocation != "" && (s.KeystoreCertificateChain != "" || s.KeystoreKey != ""):
		return nil, errors.New("ssl.keystore.location and ssl.keystore.certificate.chain/ssl.keystore.key are both set; set one")
	case s.KeystoreLocation != "":
		data, st, err := readStamped(s.KeystoreLocation)
		if err != nil {
			return nil, fmt.Errorf("ssl.keystore.location: %w", err)
		}
		certPEM, keyPEM = data, data
		m.stamps = append(m.stamps, st)
	case s.KeystoreCertificateChain != "" && s.KeystoreKey != "":
		certPEM, keyPEM = []byte(s.KeystoreCertificateChain), []byte(s.KeystoreKey)
	default:
		return nil, errors.New("ssl.keystore.certificate.chain and ssl.keystore.key go together: set both")
	}
	keyPEM, err := decryptKeyPEM(keyPEM, s.KeyPassword)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("key store: %w", err)
	}
	m.cert = cert

	var trustPEM []byte
	switch {
	case s.TruststoreLocation == "" && s.TruststoreCertificates == "":
	case !strings.EqualFold(strings.TrimSpace(s.TruststoreType), "PEM"):
		return nil, fmt.Errorf("ssl.truststore.type %s: Gregor reads PEM trust stores only; set ssl.truststore.type=PEM", s.TruststoreType)
	case s.TruststoreLocation != "" && s.TruststoreCertificates != "":
		return nil, errors.New("ssl.truststore.location and ssl.truststore.certificates are both set; set one")
	case s.TruststoreLocation != "":
		data, st, err := readStamped(s.TruststoreLocation)
		if err != nil {
			return nil, fmt.Errorf("ssl.truststore.location: %w", err)
		}
		trustPEM = data
		m.stamps = append(m.stamps, st)
	default:
		trustPEM = []byte(s.TruststoreCertificates)
	}
	if trustPEM != nil {
		m.roots = x509.NewCertPool()
		n := 0
		for rest := trustPEM; ; {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				break
			}
			if b.Type != "CERTIFICATE" {
				continue
			}
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("trust store: %w", err)
			}
			m.roots.AddCert(c)
			n++
		}
		if n == 0 {
			return nil, errors.New("trust store: no PEM CERTIFICATE in it")
		}
	}
	m.server = &tls.Config{
		Certificates: []tls.Certificate{m.cert},
		ClientAuth:   lt.clientAuth,
		ClientCAs:    m.roots,
		MinVersion:   lt.minVersion,
		MaxVersion:   lt.maxVersion,
		CipherSuites: lt.cipherSuites,
	}
	return m, nil
}

func readStamped(path string) ([]byte, fileStamp, error) {
	st, err := stampOf(path)
	if err != nil {
		return nil, st, err
	}
	data, err := os.ReadFile(path)
	return data, st, err
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{path: path}, err
	}
	return fileStamp{path: path, mod: fi.ModTime(), size: fi.Size()}, nil
}

// configForClient is the server config's GetConfigForClient: the current
// material's config, after reloading the files when they changed.
func (lt *listenerTLS) configForClient(*tls.ClientHelloInfo) (*tls.Config, error) {
	lt.maybeReload(time.Now())
	return lt.cur.Load().server, nil
}

// maybeReload reloads the key and trust store files when one changed,
// looking at most once per tlsReloadCheckInterval. A reload that fails
// keeps the material there was and is logged.
func (lt *listenerTLS) maybeReload(now time.Time) {
	last := lt.checked.Load()
	m := lt.cur.Load()
	if len(m.stamps) == 0 || now.UnixNano()-last < int64(tlsReloadCheckInterval) || !lt.reload.TryLock() {
		return
	}
	defer lt.reload.Unlock()
	if !lt.checked.CompareAndSwap(last, now.UnixNano()) {
		return // looked at since
	}
	m = lt.cur.Load()
	stamps := make([]fileStamp, len(m.stamps))
	for i, st := range m.stamps {
		stamps[i], _ = stampOf(st.path) // a file that cannot be read fails the reload
	}
	if slices.Equal(stamps, m.stamps) || slices.Equal(stamps, lt.reload.failed) {
		return
	}
	next, err := lt.load()
	if err == nil {
		err = lt.compatible(m.cert.Leaf, next.cert.Leaf)
	}
	if err != nil {
		lt.reload.failed = stamps
		lt.logger.Warn("SSL key or trust store changed but cannot be loaded; keeping the previous one", "listener", lt.name, "err", err)
		return
	}
	lt.reload.failed = nil
	lt.cur.Store(next)
	if lt.expiry != nil {
		lt.expiry.Set(float64(next.cert.Leaf.NotAfter.Unix()))
	}
	lt.logger.Info("SSL key and trust store reloaded", "listener", lt.name,
		"subject", next.cert.Leaf.Subject.String(), "serial", next.cert.Leaf.SerialNumber.String(), "not_after", next.cert.Leaf.NotAfter)
}

// cipherSuiteID finds a cipher suite by its IANA name among those Go
// has, the insecure ones included (choosing one is the operator's call,
// as in Kafka).
func cipherSuiteID(name string) (uint16, bool) {
	for _, cs := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		if cs.Name == name {
			return cs.ID, true
		}
	}
	return 0, false
}

// compatible refuses a reloaded certificate whose subject DN or subject
// alternative names differ from the previous one's, unless
// ssl.allow.dn.changes or ssl.allow.san.changes allow it.
func (lt *listenerTLS) compatible(old, next *x509.Certificate) error {
	if !lt.allowDNChange && !bytes.Equal(old.RawSubject, next.RawSubject) {
		return fmt.Errorf("the new certificate's subject %q is not the previous one's %q (ssl.allow.dn.changes=false)",
			next.Subject, old.Subject)
	}
	if !lt.allowSANChange && !slices.Equal(subjectAltNames(old), subjectAltNames(next)) {
		return fmt.Errorf("the new certificate's subject alternative names %q are not the previous one's %q (ssl.allow.san.changes=false)",
			subjectAltNames(next), subjectAltNames(old))
	}
	return nil
}

// subjectAltNames lists a certificate's subject alternative names, sorted.
func subjectAltNames(c *x509.Certificate) []string {
	var out []string
	for _, n := range c.DNSNames {
		out = append(out, "DNS:"+n)
	}
	for _, ip := range c.IPAddresses {
		out = append(out, "IP:"+ip.String())
	}
	for _, e := range c.EmailAddresses {
		out = append(out, "email:"+e)
	}
	for _, u := range c.URIs {
		out = append(out, "URI:"+u.String())
	}
	slices.Sort(out)
	return out
}

// principal is the principal of a connection that completed its
// handshake: User:ANONYMOUS without a client certificate, else User: and
// the mapped subject DN.
func (lt *listenerTLS) principal(cs tls.ConnectionState) (string, error) {
	if len(cs.PeerCertificates) == 0 {
		return anonymous, nil
	}
	dn, err := rfc2253DN(cs.PeerCertificates[0].RawSubject)
	if err != nil {
		return "", err
	}
	name, err := lt.mapper.name(dn)
	if err != nil {
		return "", err
	}
	return "User:" + name, nil
}

// rejected logs a failed handshake, at most once per tlsRejectLogInterval,
// with the count of those not logged.
func (lt *listenerTLS) reject(logger *slog.Logger, err error) {
	now := time.Now().UnixNano()
	last := lt.rejectLogged.Load()
	if now-last < int64(tlsRejectLogInterval) || !lt.rejectLogged.CompareAndSwap(last, now) {
		lt.rejected.Add(1)
		return
	}
	logger.Info("closing connection: TLS handshake failed", "listener", lt.name, "err", err,
		"failures_not_logged", lt.rejected.Swap(0))
}

// handshake completes the TLS handshake of a connection accepted on an SSL
// listener and sets the connection's principal. False means the
// connection is to be closed.
func (c *conn) handshake(lt *listenerTLS) bool {
	tc, ok := c.nc.(idleConn).Conn.(*tls.Conn)
	if !ok {
		return true
	}
	ctx, cancel := context.WithTimeout(c.b.ctx, tlsHandshakeTimeout)
	defer cancel()
	err := tc.HandshakeContext(ctx)
	p := anonymous
	if err == nil {
		p, err = lt.principal(tc.ConnectionState())
	}
	if err != nil {
		c.b.metrics.tlsHandshakes.WithLabelValues(lt.name, "failed").Inc()
		lt.reject(c.logger, err)
		return false
	}
	c.b.metrics.tlsHandshakes.WithLabelValues(lt.name, "ok").Inc()
	c.principal = p
	return true
}

// dial makes nc, a connection to another broker at host, a TLS client
// connection: it trusts the trust store, presents this listener's
// certificate, and checks the host name unless
// ssl.endpoint.identification.algorithm is empty.
func (lt *listenerTLS) dial(ctx context.Context, nc net.Conn, host string) (net.Conn, error) {
	lt.maybeReload(time.Now())
	m := lt.cur.Load()
	checkHost := strings.TrimSpace(lt.ssl.EndpointIdentificationAlgorithm) != ""
	cfg := &tls.Config{
		MinVersion:   lt.minVersion,
		MaxVersion:   lt.maxVersion,
		CipherSuites: lt.cipherSuites,
		Certificates: []tls.Certificate{m.cert},
		// The chain (and the host) are checked in VerifyConnection, so
		// that the host check can be turned off as Kafka's can.
		InsecureSkipVerify: true, //nolint:gosec // verified in VerifyConnection
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("broker presented no certificate")
			}
			opts := x509.VerifyOptions{Roots: m.roots, Intermediates: x509.NewCertPool()}
			for _, ic := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(ic)
			}
			if checkHost {
				opts.DNSName = host
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		},
	}
	if net.ParseIP(host) == nil {
		cfg.ServerName = host
	}
	tc := tls.Client(nc, cfg)
	hctx, cancel := context.WithTimeout(ctx, tlsHandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		nc.Close()
		return nil, fmt.Errorf("TLS handshake with %s: %w", host, err)
	}
	return tc, nil
}

// tlsListeners builds the TLS side of every SSL listener of ls.
func (c *Config) tlsListeners(ls *listenerSetup) error {
	for _, l := range ls.listeners {
		if p := ls.protocols[l.Name]; p != ProtocolSSL && p != ProtocolSASLSSL {
			continue
		}
		lt, err := newListenerTLS(l.Name, c.listenerSSL(l.Name))
		if err != nil {
			return err
		}
		if ls.tls == nil {
			ls.tls = map[string]*listenerTLS{}
		}
		ls.tls[l.Name] = lt
	}
	return nil
}
