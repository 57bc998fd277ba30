package compat

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"regexp"
)

// Security is the client security of a secure lab run (compat-tests/run.sh
// --security), read from the COMPAT_* environment. Mode is "" for none,
// "sasl_ssl" (TLS trusting CA, SCRAM as User) or "mtls" (TLS with the client
// certificate Cert and its key Key).
type Security struct {
	Mode      string
	CA        string
	Cert, Key string
	Mechanism string
	User      string
	Password  string
}

// secureScenarios are the scenarios a secure run covers: produce, consume
// and groups. The others report skip.
var secureScenarios = regexp.MustCompile(`^(produce-consume-.*|idempotent-producer|consume-from-offset|group-commit-resume|group-rebalance)$`)

// SecurityFromEnv reads the run's security; an unknown COMPAT_SECURITY is an
// error, not a silent plaintext run.
func SecurityFromEnv() (Security, error) {
	s := Security{
		Mode:      os.Getenv("COMPAT_SECURITY"),
		CA:        os.Getenv("COMPAT_CA"),
		Cert:      os.Getenv("COMPAT_CLIENT_CERT"),
		Key:       os.Getenv("COMPAT_CLIENT_KEY"),
		Mechanism: os.Getenv("COMPAT_SASL_MECHANISM"),
		User:      os.Getenv("COMPAT_SASL_USER"),
		Password:  os.Getenv("COMPAT_SASL_PASSWORD"),
	}
	switch s.Mode {
	case "":
	case "sasl_ssl":
		if s.Mechanism != "SCRAM-SHA-512" {
			return s, fmt.Errorf("COMPAT_SASL_MECHANISM %q: the Go suites speak SCRAM-SHA-512 only", s.Mechanism)
		}
	case "mtls":
	default:
		return s, fmt.Errorf("COMPAT_SECURITY %q is not sasl_ssl or mtls", s.Mode)
	}
	return s, nil
}

// Covers reports whether the scenario runs under this security.
func (s Security) Covers(scenario string) bool {
	return s.Mode == "" || secureScenarios.MatchString(scenario)
}

// TLSConfig is the client TLS of the run: nil without security; the lab's
// CA as the only root, and for mtls the client certificate.
func (s Security) TLSConfig() (*tls.Config, error) {
	if s.Mode == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(s.CA)
	if err != nil {
		return nil, fmt.Errorf("read COMPAT_CA: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in COMPAT_CA %s", s.CA)
	}
	cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if s.Mode == "mtls" {
		cert, err := tls.LoadX509KeyPair(s.Cert, s.Key)
		if err != nil {
			return nil, fmt.Errorf("load the client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
