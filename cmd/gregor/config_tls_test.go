package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// selfSigned writes a self-signed certificate and its key to a PEM file
// and returns the file and the certificate's PEM.
func selfSigned(t *testing.T) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	path := filepath.Join(t.TempDir(), "broker.pem")
	if err := os.WriteFile(path, append(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8}), certPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, string(certPEM)
}

// TestSSLKeys: the ssl.* keys, inline PEM as a YAML block, and
// listener.name.<listener>.ssl.* overrides reach broker.Config.
func TestSSLKeys(t *testing.T) {
	clearEnv(t)
	ks, certPEM := selfSigned(t)
	file := writeConfig(t, `
listeners: INTERNAL://localhost:9093,EXTERNAL://localhost:9094
listener.security.protocol.map: INTERNAL:SSL,EXTERNAL:SSL
inter.broker.listener.name: INTERNAL
ssl.keystore.type: PEM
ssl.keystore.location: `+ks+`
ssl.truststore.type: PEM
ssl.truststore.certificates: |
`+indent(certPEM)+`
ssl.client.auth: required
ssl.principal.mapping.rules: RULE:^CN=([^,]*).*$/$1/L,DEFAULT
listener.name.external.ssl.client.auth: none
`)
	c := mustLoad(t, "--config", file, "--ssl.enabled.protocols", "TLSv1.3")
	s := c.broker.SSL
	if s.KeystoreType != "PEM" || s.KeystoreLocation != ks || s.ClientAuth != "required" || s.EnabledProtocols != "TLSv1.3" ||
		s.PrincipalMappingRules != "RULE:^CN=([^,]*).*$/$1/L,DEFAULT" || strings.TrimSpace(s.TruststoreCertificates) != strings.TrimSpace(certPEM) {
		t.Errorf("ssl.* = %+v", s)
	}
	if got := c.broker.ListenerConfigs["listener.name.external.ssl.client.auth"]; got != "none" {
		t.Errorf("listener.name.external.ssl.client.auth = %q, want none (ListenerConfigs %v)", got, c.broker.ListenerConfigs)
	}
	if len(c.warnings) != 0 {
		t.Errorf("warnings = %q, want none", c.warnings)
	}
}

func indent(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n")
}
