package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	jaas "github.com/gregor-io/gregor/broker/sasl"
)

// This file maps the client properties of a --command-config file, the
// Java properties file Kafka's tools take (kafka-topics --command-config
// client.properties), to franz-go options, so that one file serves both.
// Kafka's names and meanings are kept; what franz-go cannot do is refused
// with a message that says so, and a property gregor does not use is
// named in a warning, as Kafka's clients log the configs they did not use.

// The values of security.protocol.
const (
	protoPlaintext     = "PLAINTEXT"
	protoSSL           = "SSL"
	protoSASLPlaintext = "SASL_PLAINTEXT"
	protoSASLSSL       = "SASL_SSL"
)

// The values of sasl.mechanism gregor has a client for.
const (
	mechPlain       = "PLAIN"
	mechSCRAMSHA256 = "SCRAM-SHA-256"
	mechSCRAMSHA512 = "SCRAM-SHA-512"
	mechOAuthBearer = "OAUTHBEARER"
)

// clientSettings is what a --command-config file says about reaching a
// cluster. Zero fields were not set and leave franz-go's defaults.
type clientSettings struct {
	// bootstrap is bootstrap.servers; --bootstrap-server given on the
	// command line wins over it.
	bootstrap []string
	clientID  string
	// requestTimeout (request.timeout.ms) is kgo's request timeout
	// overhead: the deadline of a request, beyond the timeout the request
	// itself carries (as CreateTopics and Produce do).
	requestTimeout time.Duration
	dialTimeout    time.Duration // socket.connection.setup.timeout.ms
	idleTimeout    time.Duration // connections.max.idle.ms
	metadataMaxAge time.Duration // metadata.max.age.ms
	// retryBackoff and retryBackoffMax (retry.backoff.ms,
	// retry.backoff.max.ms) bound the exponential backoff between
	// retries; either set means both apply, Kafka's default for the other.
	retryBackoff, retryBackoffMax time.Duration

	protocol string // security.protocol
	// tls is the TLS of SSL and SASL_SSL; nil for the others.
	tls *tls.Config
	// mechanism is sasl.mechanism for SASL_PLAINTEXT and SASL_SSL, with
	// the user and password of the login module (PLAIN, SCRAM) or the
	// token source (OAUTHBEARER).
	mechanism string
	user      string
	password  string
	// scramToken is the ScramLoginModule's tokenauth=true: the user and
	// password are a delegation token's.
	scramToken bool
	token      func(context.Context) (oauth.Auth, error)

	// warnings are the properties read but not used, one line each.
	warnings []string
}

// Kafka's defaults for the backoff between retries.
const (
	kafkaRetryBackoff    = 100 * time.Millisecond
	kafkaRetryBackoffMax = time.Second
)

// opts returns the kgo options of s.
func (s *clientSettings) opts() []kgo.Opt {
	var opts []kgo.Opt
	if s.clientID != "" {
		opts = append(opts, kgo.ClientID(s.clientID))
	}
	if s.requestTimeout > 0 {
		opts = append(opts, kgo.RequestTimeoutOverhead(s.requestTimeout))
	}
	if s.dialTimeout > 0 {
		opts = append(opts, kgo.DialTimeout(s.dialTimeout))
	}
	if s.idleTimeout > 0 {
		opts = append(opts, kgo.ConnIdleTimeout(s.idleTimeout))
	}
	if s.metadataMaxAge > 0 {
		opts = append(opts, kgo.MetadataMaxAge(s.metadataMaxAge))
	}
	if s.retryBackoff > 0 || s.retryBackoffMax > 0 {
		opts = append(opts, kgo.RetryBackoffFn(s.backoff))
	}
	if s.tls != nil {
		opts = append(opts, kgo.DialTLSConfig(s.tls))
	}
	switch s.mechanism {
	case mechPlain:
		opts = append(opts, kgo.SASL(plain.Auth{User: s.user, Pass: s.password}.AsMechanism()))
	case mechSCRAMSHA256:
		opts = append(opts, kgo.SASL(scram.Auth{User: s.user, Pass: s.password, IsToken: s.scramToken}.AsSha256Mechanism()))
	case mechSCRAMSHA512:
		opts = append(opts, kgo.SASL(scram.Auth{User: s.user, Pass: s.password, IsToken: s.scramToken}.AsSha512Mechanism()))
	case mechOAuthBearer:
		opts = append(opts, kgo.SASL(oauth.Oauth(s.token)))
	}
	return opts
}

// backoff is the wait before retry n (from 1) with retry.backoff.ms and
// retry.backoff.max.ms: doubling from the first up to the second, as
// Kafka's clients do (without their jitter).
func (s *clientSettings) backoff(n int) time.Duration {
	lo, hi := s.retryBackoff, s.retryBackoffMax
	if lo <= 0 {
		lo = kafkaRetryBackoff
	}
	if hi <= 0 {
		hi = max(kafkaRetryBackoffMax, lo)
	}
	d := lo
	for i := 1; i < n && d < hi; i++ {
		d *= 2
	}
	return min(d, hi)
}

// propSet is the properties of one file, the last of a key winning, with
// the ones looked at marked, so that the others can be warned about.
type propSet struct {
	file  string
	props map[string]property
	order []string // keys in the order they first appear
	used  map[string]bool
	// warnings are about the key of each, ordered by line at the end.
	warnings []propWarning
}

// propWarning is a warning about one property.
type propWarning struct {
	key, text string
}

// warn notes a warning about key, which is marked used.
func (p *propSet) warn(key, text string) {
	p.used[key] = true
	p.warnings = append(p.warnings, propWarning{key, text})
}

// warningLines returns the warnings ordered by line, each naming the
// file, line and property.
func (p *propSet) warningLines() []string {
	slices.SortStableFunc(p.warnings, func(a, b propWarning) int { return p.props[a.key].line - p.props[b.key].line })
	var out []string
	for _, w := range p.warnings {
		out = append(out, fmt.Sprintf("%s: line %d: ignoring %s: %s", p.file, p.props[w.key].line, w.key, w.text))
	}
	return out
}

func newPropSet(file string, props []property) *propSet {
	p := &propSet{file: file, props: map[string]property{}, used: map[string]bool{}}
	for _, pr := range props {
		if _, ok := p.props[pr.key]; !ok {
			p.order = append(p.order, pr.key)
		}
		p.props[pr.key] = pr
	}
	return p
}

// get returns the value of key, with surrounding whitespace removed as
// Kafka's config parser does, and marks it used.
func (p *propSet) get(key string) (string, bool) {
	pr, ok := p.props[key]
	if ok {
		p.used[key] = true
	}
	return strings.TrimSpace(pr.value), ok
}

// has reports whether key is set, without using it.
func (p *propSet) has(key string) bool {
	_, ok := p.props[key]
	return ok
}

// errorf is an error about the property key, naming it and its line.
func (p *propSet) errorf(key, format string, args ...any) error {
	return fmt.Errorf("%s: line %d: %s: %s", p.file, p.props[key].line, key, fmt.Sprintf(format, args...))
}

// wrapf is errorf wrapping err.
func (p *propSet) wrapf(key string, err error, format string, args ...any) error {
	return fmt.Errorf("%s: line %d: %s: %s: %w", p.file, p.props[key].line, key, fmt.Sprintf(format, args...), err)
}

// ignore marks the properties starting with prefix used, with a warning
// saying why they do nothing.
func (p *propSet) ignore(prefix, why string) {
	for _, k := range p.order {
		if strings.HasPrefix(k, prefix) && !p.used[k] {
			p.warn(k, why)
		}
	}
}

// millis reads a property in milliseconds, >= 0 (Kafka's int and long
// configs), 0 when it is not set.
func (p *propSet) millis(key string) (time.Duration, error) {
	v, ok := p.get(key)
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/int64(time.Millisecond) {
		return 0, p.errorf(key, "%q is not a number of milliseconds >= 0", v)
	}
	return time.Duration(n) * time.Millisecond, nil
}

// loadCommandConfig reads the --command-config file at path.
func loadCommandConfig(path string) (*clientSettings, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--command-config: %w", err)
	}
	return parseCommandConfig(path, data)
}

// parseCommandConfig maps the properties file data, read from file, to
// client settings. Files it names (trust and key stores, tokens) are read
// now, so that a mistake shows before anything is sent.
func parseCommandConfig(file string, data []byte) (*clientSettings, error) {
	props, err := parseProperties(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	p := newPropSet(file, props)
	s := &clientSettings{}
	if p.has("config.providers") {
		// Its ${provider:path:key} references would otherwise be sent as
		// they are, as passwords.
		return nil, p.errorf("config.providers", "gregor does not resolve config providers' ${...} references: write the values in the file")
	}

	if v, ok := p.get("bootstrap.servers"); ok {
		if s.bootstrap = parseList(v); len(s.bootstrap) == 0 {
			return nil, p.errorf("bootstrap.servers", "empty")
		}
	}
	if v, ok := p.get("client.id"); ok {
		s.clientID = v
	}
	for _, m := range []struct {
		key string
		d   *time.Duration
	}{
		{"request.timeout.ms", &s.requestTimeout},
		{"socket.connection.setup.timeout.ms", &s.dialTimeout},
		{"connections.max.idle.ms", &s.idleTimeout},
		{"metadata.max.age.ms", &s.metadataMaxAge},
		{"retry.backoff.ms", &s.retryBackoff},
		{"retry.backoff.max.ms", &s.retryBackoffMax},
	} {
		if *m.d, err = p.millis(m.key); err != nil {
			return nil, err
		}
	}

	s.protocol = protoPlaintext
	if v, ok := p.get("security.protocol"); ok {
		s.protocol = strings.ToUpper(v)
		switch s.protocol {
		case protoPlaintext, protoSSL, protoSASLPlaintext, protoSASLSSL:
		default:
			return nil, p.errorf("security.protocol", "%q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", v)
		}
	}
	if s.protocol == protoSSL || s.protocol == protoSASLSSL {
		if s.tls, err = p.tlsConfig(); err != nil {
			return nil, err
		}
	} else {
		p.ignore("ssl.", "security.protocol is "+s.protocol)
	}
	if s.protocol == protoSASLPlaintext || s.protocol == protoSASLSSL {
		if err := p.saslSettings(s); err != nil {
			return nil, err
		}
	} else {
		p.ignore("sasl.", "security.protocol is "+s.protocol)
	}

	for _, k := range p.order {
		if !p.used[k] {
			p.warn(k, "not a setting gregor uses")
		}
	}
	s.warnings = p.warningLines()
	return s, nil
}

// saslSettings reads sasl.mechanism and the login module of
// sasl.jaas.config into s.
func (p *propSet) saslSettings(s *clientSettings) error {
	mech, ok := p.get("sasl.mechanism")
	if !ok {
		return fmt.Errorf("%s: security.protocol is %s but sasl.mechanism is not set (Kafka's default, GSSAPI, is not supported: use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER)",
			p.file, s.protocol)
	}
	s.mechanism = strings.ToUpper(mech)
	var module string
	switch s.mechanism {
	case mechPlain:
		module = "org.apache.kafka.common.security.plain.PlainLoginModule"
	case mechSCRAMSHA256, mechSCRAMSHA512:
		module = "org.apache.kafka.common.security.scram.ScramLoginModule"
	case mechOAuthBearer:
		module = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
	default:
		return p.errorf("sasl.mechanism", "%q is not supported: want PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER", mech)
	}
	jaasConfig, ok := p.get("sasl.jaas.config")
	if !ok {
		return fmt.Errorf("%s: sasl.mechanism is %s but sasl.jaas.config is not set (gregor does not read JAAS files: give the login module, e.g. %s required ...;)",
			p.file, s.mechanism, module)
	}
	class, opts, err := jaas.ParseJAAS(jaasConfig)
	if err != nil {
		// The value holds a password: the error does not quote it.
		return p.wrapf("sasl.jaas.config", err, "cannot parse")
	}
	if class != module {
		return p.errorf("sasl.jaas.config", "login module %s, but sasl.mechanism %s needs %s", class, s.mechanism, module)
	}
	if s.mechanism == mechOAuthBearer {
		return p.oauthSettings(s, opts)
	}
	s.user, s.password = opts["username"], opts["password"]
	if s.user == "" || s.password == "" {
		return p.errorf("sasl.jaas.config", "%s needs username=\"...\" and password=\"...\"", class)
	}
	if s.mechanism == mechPlain && strings.ContainsRune(s.user+s.password, 0) {
		return p.errorf("sasl.jaas.config", "PLAIN's username and password cannot hold a NUL character")
	}
	if s.mechanism != mechPlain {
		switch strings.ToLower(opts["tokenauth"]) {
		case "", "false":
		case "true":
			s.scramToken = true
		default:
			return p.errorf("sasl.jaas.config", "tokenauth=%q: want true or false", opts["tokenauth"])
		}
	}
	return nil
}

// The JAAS options of Kafka's unsecured OAUTHBEARER login (its default
// login callback handler, OAuthBearerUnsecuredLoginCallbackHandler).
const (
	unsecuredString      = "unsecuredLoginStringClaim_"
	unsecuredNumber      = "unsecuredLoginNumberClaim_"
	unsecuredList        = "unsecuredLoginListClaim_"
	unsecuredExtension   = "unsecuredLoginExtension_"
	securedExtension     = "extension_" // of OAuthBearerLoginCallbackHandler
	unsecuredPrincipal   = "unsecuredLoginPrincipalClaimName"
	unsecuredLifetime    = "unsecuredLoginLifetimeSeconds"
	unsecuredScopeClaim  = "unsecuredLoginScopeClaimName"
	loginCallbackHandler = "sasl.login.callback.handler.class"
	tokenEndpoint        = "sasl.oauthbearer.token.endpoint.url"
)

// oauthSettings sets s's OAUTHBEARER token source: Kafka's unsecured
// tokens (for development brokers), or, with Kafka's
// OAuthBearerLoginCallbackHandler and a file: token endpoint, a token read
// from that file at each login. Fetching tokens from an HTTP endpoint is
// not done.
func (p *propSet) oauthSettings(s *clientSettings, opts map[string]string) error {
	// SASL extensions are the login module's extension_<name> options
	// for Kafka's OAuthBearerLoginCallbackHandler, and its
	// unsecuredLoginExtension_<name> ones for unsecured tokens.
	extensions := func(prefix string) map[string]string {
		ext := map[string]string{}
		for k, v := range opts {
			if name, ok := strings.CutPrefix(k, prefix); ok {
				ext[name] = v
			}
		}
		return ext
	}
	handler, ok := p.get(loginCallbackHandler)
	if ok && handler != "" {
		if !strings.HasSuffix(handler, ".OAuthBearerLoginCallbackHandler") {
			return p.errorf(loginCallbackHandler, "%s is not supported: gregor knows Kafka's OAuthBearerLoginCallbackHandler (with a file: token endpoint) and, without this property, its unsecured tokens", handler)
		}
		u, ok := p.get(tokenEndpoint)
		if !ok {
			return p.errorf(loginCallbackHandler, "needs %s", tokenEndpoint)
		}
		path, ok := strings.CutPrefix(u, "file:")
		if !ok {
			return p.errorf(tokenEndpoint, "%q: gregor reads tokens from a file: URL only, it does not fetch them over HTTP", u)
		}
		path = strings.TrimPrefix(path, "//")
		if _, err := readToken(path); err != nil {
			return p.wrapf(tokenEndpoint, err, "cannot read the token")
		}
		ext := extensions(securedExtension)
		s.token = func(context.Context) (oauth.Auth, error) {
			tok, err := readToken(path)
			return oauth.Auth{Token: tok, Extensions: ext}, err
		}
		return nil
	}

	// Kafka's unsecured login: an unsigned JWT built from the options.
	claims := map[string]any{}
	for k, v := range opts {
		switch {
		case strings.HasPrefix(k, unsecuredString):
			claims[k[len(unsecuredString):]] = v
		case strings.HasPrefix(k, unsecuredNumber):
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return p.errorf("sasl.jaas.config", "%s=%q is not a number", k, v)
			}
			claims[k[len(unsecuredNumber):]] = n
		case strings.HasPrefix(k, unsecuredList):
			// The first character is the separator, as in Kafka;
			// empty items are dropped.
			list := []string{}
			if v != "" {
				for _, e := range strings.Split(v[1:], v[:1]) {
					if e != "" {
						list = append(list, e)
					}
				}
			}
			claims[k[len(unsecuredList):]] = list
		}
	}
	principal := cmp.Or(opts[unsecuredPrincipal], "sub")
	if sub, ok := claims[principal].(string); !ok || sub == "" {
		return p.errorf("sasl.jaas.config", "an unsecured OAUTHBEARER login needs %s%s=\"<principal>\"", unsecuredString, principal)
	}
	lifetime := time.Hour
	if v, ok := opts[unsecuredLifetime]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || n > math.MaxInt32 {
			return p.errorf("sasl.jaas.config", "%s=%q: want a number of seconds > 0", unsecuredLifetime, v)
		}
		lifetime = time.Duration(n) * time.Second
	}
	if scopeName := opts[unsecuredScopeClaim]; scopeName != "" && scopeName != "scope" {
		if v, ok := claims["scope"]; ok {
			delete(claims, "scope")
			claims[scopeName] = v
		}
	}
	ext := extensions(unsecuredExtension)
	s.token = func(context.Context) (oauth.Auth, error) {
		now := time.Now()
		tok, err := unsecuredJWT(claims, now, lifetime)
		return oauth.Auth{Token: tok, Extensions: ext}, err
	}
	return nil
}

// unsecuredJWT is an unsigned JWT ("alg": "none") with claims, issued at
// now and expiring after lifetime.
func unsecuredJWT(claims map[string]any, now time.Time, lifetime time.Duration) (string, error) {
	c := make(map[string]any, len(claims)+2)
	for k, v := range claims {
		c[k] = v
	}
	c["iat"] = now.Unix()
	c["exp"] = now.Add(lifetime).Unix()
	payload, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"none"}`)) + "." + enc.EncodeToString(payload) + ".", nil
}

// readToken reads a JWT from a file, without its surrounding whitespace.
func readToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return tok, nil
}

// tlsConfig builds the TLS of SSL and SASL_SSL from the ssl.* properties.
// Trust and key stores must be PEM (in a file or inline): JKS and PKCS12
// are Java's, and are refused.
func (p *propSet) tlsConfig() (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if err := p.tlsVersions(c); err != nil {
		return nil, err
	}
	if v, ok := p.get("ssl.cipher.suites"); ok {
		for _, name := range parseList(v) {
			if strings.HasPrefix(name, "TLS_AES_") || strings.HasPrefix(name, "TLS_CHACHA20_") {
				continue // TLS 1.3's, which Go always offers
			}
			i := slices.IndexFunc(tls.CipherSuites(), func(cs *tls.CipherSuite) bool { return cs.Name == name })
			if i < 0 {
				return nil, p.errorf("ssl.cipher.suites", "%s is not a cipher suite Go offers (see crypto/tls CipherSuites)", name)
			}
			c.CipherSuites = append(c.CipherSuites, tls.CipherSuites()[i].ID)
		}
	}

	roots, err := p.trustStore()
	if err != nil {
		return nil, err
	}
	c.RootCAs = roots
	cert, err := p.keyStore()
	if err != nil {
		return nil, err
	}
	if cert != nil {
		c.Certificates = []tls.Certificate{*cert}
	}

	alg, _ := p.get("ssl.endpoint.identification.algorithm")
	if !p.has("ssl.endpoint.identification.algorithm") {
		alg = "https"
	}
	switch strings.ToLower(alg) {
	case "https":
		// franz-go sets ServerName to the host it dials; Go checks it.
	case "":
		// Kafka's way to skip the host name check: the chain is still
		// verified, against the trust store.
		c.InsecureSkipVerify = true
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("tls: the server sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, ic := range cs.PeerCertificates[1:] {
				inter.AddCert(ic)
			}
			if _, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter}); err != nil {
				// As Go reports its own verification's failures.
				return &tls.CertificateVerificationError{UnverifiedCertificates: cs.PeerCertificates, Err: err}
			}
			return nil
		}
	default:
		return nil, p.errorf("ssl.endpoint.identification.algorithm", "%q: want https (check the host name) or empty (do not)", alg)
	}
	return c, nil
}

// tlsVersionNames are the names Java gives TLS versions.
var tlsVersionNames = map[string]uint16{
	"TLSv1":   tls.VersionTLS10,
	"TLSv1.1": tls.VersionTLS11,
	"TLSv1.2": tls.VersionTLS12,
	"TLSv1.3": tls.VersionTLS13,
}

// tlsVersions sets c's version range: ssl.enabled.protocols lists the
// versions that may be used (TLSv1.2 and TLSv1.3 by default), and
// ssl.protocol caps them (TLSv1.2 means no TLS 1.3; TLS and TLSv1.3 do
// not cap).
func (p *propSet) tlsVersions(c *tls.Config) error {
	if v, ok := p.get("ssl.enabled.protocols"); ok {
		names := parseList(v)
		if len(names) == 0 {
			return p.errorf("ssl.enabled.protocols", "empty")
		}
		c.MinVersion, c.MaxVersion = math.MaxUint16, 0
		for _, n := range names {
			ver, ok := tlsVersionNames[n]
			if !ok {
				return p.errorf("ssl.enabled.protocols", "%s: want TLSv1.2 or TLSv1.3 (or TLSv1, TLSv1.1)", n)
			}
			c.MinVersion, c.MaxVersion = min(c.MinVersion, ver), max(c.MaxVersion, ver)
		}
	}
	if v, ok := p.get("ssl.protocol"); ok {
		var top uint16
		switch v {
		case "TLS", "TLSv1.3":
			top = tls.VersionTLS13
		default:
			var ok bool
			if top, ok = tlsVersionNames[v]; !ok {
				return p.errorf("ssl.protocol", "%q: want TLSv1.3, TLSv1.2 or TLS", v)
			}
		}
		if c.MaxVersion == 0 || c.MaxVersion > top {
			c.MaxVersion = top
		}
	}
	if c.MaxVersion != 0 && c.MaxVersion < c.MinVersion {
		return p.errorf("ssl.protocol", "caps TLS below the lowest version enabled (by ssl.enabled.protocols, TLSv1.2 by default)")
	}
	return nil
}

// trustStore reads the CA certificates of ssl.truststore.location or
// ssl.truststore.certificates; nil, the system's roots, when neither is
// set.
func (p *propSet) trustStore() (*x509.CertPool, error) {
	const loc, inline, typ = "ssl.truststore.location", "ssl.truststore.certificates", "ssl.truststore.type"
	path, hasPath := p.get(loc)
	certs, hasInline := p.get(inline)
	t, hasType := p.get(typ)
	if !hasPath && !hasInline {
		return nil, nil
	}
	if hasPath && hasInline {
		return nil, p.errorf(inline, "set either it or %s, not both", loc)
	}
	if err := p.needPEM(typ, t, hasType, "keytool -exportcert -rfc"); err != nil {
		return nil, err
	}
	if _, ok := p.get("ssl.truststore.password"); ok {
		return nil, p.errorf("ssl.truststore.password", "a PEM trust store has no password (Kafka refuses it too)")
	}
	key, data := inline, certs
	if hasPath {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, p.wrapf(loc, err, "cannot read it")
		}
		key, data = loc, string(b)
	}
	blocks, err := pemBlocks(data)
	if err != nil {
		return nil, p.wrapf(key, err, "not PEM")
	}
	pool := x509.NewCertPool()
	n := 0
	for _, b := range blocks {
		if b.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, p.wrapf(key, err, "certificate %d", n+1)
		}
		pool.AddCert(cert)
		n++
	}
	if n == 0 {
		return nil, p.errorf(key, "no CERTIFICATE in it")
	}
	return pool, nil
}

// keyStore reads the client's certificate chain and private key from
// ssl.keystore.location (one PEM holding both) or from
// ssl.keystore.key and ssl.keystore.certificate.chain; nil when none is
// set.
func (p *propSet) keyStore() (*tls.Certificate, error) {
	const loc, key, chain, typ = "ssl.keystore.location", "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.keystore.type"
	path, hasPath := p.get(loc)
	keyPEM, hasKey := p.get(key)
	chainPEM, hasChain := p.get(chain)
	t, hasType := p.get(typ)
	if !hasPath && !hasKey && !hasChain {
		return nil, nil
	}
	if err := p.needPEM(typ, t, hasType, "openssl pkcs12 -nodes"); err != nil {
		return nil, err
	}
	if _, ok := p.get("ssl.keystore.password"); ok {
		return nil, p.errorf("ssl.keystore.password", "a PEM key store has no password (Kafka refuses it too; an encrypted key's is ssl.key.password)")
	}
	var data, what string
	switch {
	case hasPath && (hasKey || hasChain):
		return nil, p.errorf(loc, "set either it or %s and %s, not both", key, chain)
	case hasPath:
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, p.wrapf(loc, err, "cannot read it")
		}
		data, what = string(b), loc
	case !hasKey:
		return nil, p.errorf(chain, "needs %s, the private key", key)
	case !hasChain:
		return nil, p.errorf(key, "needs %s, the certificate chain", chain)
	default:
		data, what = keyPEM+"\n"+chainPEM, key+" and "+chain
	}
	blocks, err := pemBlocks(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: not PEM: %w", p.file, what, err)
	}
	var certs, keys []byte
	nkeys := 0
	for _, b := range blocks {
		switch {
		case b.Type == "CERTIFICATE":
			certs = append(certs, pem.EncodeToMemory(b)...)
		case b.Type == "ENCRYPTED PRIVATE KEY":
			return nil, fmt.Errorf("%s: %s: the private key is encrypted, which gregor cannot read: decrypt it (openssl pkcs8 -topk8 -nocrypt)", p.file, what)
		case strings.HasSuffix(b.Type, "PRIVATE KEY"):
			keys = append(keys, pem.EncodeToMemory(b)...)
			nkeys++
		}
	}
	if nkeys != 1 || len(certs) == 0 {
		return nil, fmt.Errorf("%s: %s: want one PRIVATE KEY and its CERTIFICATE chain, found %d keys and %d bytes of certificates", p.file, what, nkeys, len(certs))
	}
	if p.has("ssl.key.password") {
		p.warn("ssl.key.password", "the private key is not encrypted")
	}
	cert, err := tls.X509KeyPair(certs, keys)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", p.file, what, err)
	}
	return &cert, nil
}

// needPEM checks that a store's type (typ, value t when set) is PEM; unset
// is Kafka's default, JKS. convert is the tool that turns the store into PEM.
func (p *propSet) needPEM(typ, t string, set bool, convert string) error {
	if strings.EqualFold(t, "PEM") {
		return nil
	}
	if !set {
		return fmt.Errorf("%s: %s is not set, and Kafka's default, JKS, is a Java format gregor cannot read: convert the store to PEM (%s) and set %s=PEM",
			p.file, typ, convert, typ)
	}
	return p.errorf(typ, "%s is a Java format gregor cannot read: convert the store to PEM (%s) and set %s=PEM", t, convert, typ)
}

// pemBlocks decodes the PEM blocks of s. It is lenient as Kafka's PEM
// reader is: a block's base64 may be broken by any whitespace, or by
// none, so that a properties value joined from continued lines reads
// ("-----BEGIN CERTIFICATE----- MIIB... -----END CERTIFICATE-----").
// Blocks with headers (legacy encrypted keys) are refused.
func pemBlocks(s string) ([]*pem.Block, error) {
	var out []*pem.Block
	for {
		i := strings.Index(s, "-----BEGIN ")
		if i < 0 {
			if len(out) == 0 {
				return nil, errors.New("no -----BEGIN ...----- line")
			}
			return out, nil
		}
		s = s[i+len("-----BEGIN "):]
		j := strings.Index(s, "-----")
		if j < 0 {
			return nil, errors.New("unterminated -----BEGIN line")
		}
		typ := s[:j]
		s = s[j+len("-----"):]
		end := "-----END " + typ + "-----"
		k := strings.Index(s, end)
		if k < 0 {
			return nil, fmt.Errorf("no %s", end)
		}
		body := s[:k]
		s = s[k+len(end):]
		if strings.Contains(body, ":") {
			return nil, fmt.Errorf("%s block with headers (a legacy encrypted key?) is not supported", typ)
		}
		body = strings.Map(func(r rune) rune {
			if r == ' ' || r == '\t' || r == '\r' || r == '\n' || r == '\f' {
				return -1
			}
			return r
		}, body)
		der, err := base64.StdEncoding.DecodeString(body)
		if err != nil {
			return nil, fmt.Errorf("%s block: %w", typ, err)
		}
		out = append(out, &pem.Block{Type: typ, Bytes: der})
	}
}
