package broker

import (
	"crypto/x509/pkix"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTLSEncryptedKey: a key store whose key openssl encrypted as PKCS#8
// loads with ssl.key.password, in each PBES2 variant, and is refused with
// a message without it, with a wrong one, or in the older PBES1.
func TestTLSEncryptedKey(t *testing.T) {
	t.Parallel()
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("no openssl to encrypt a key with")
	}
	ca := newTestCA(t)
	dir := t.TempDir()
	certPEM, keyPEM := ca.issue(t, pkix.Name{CommonName: "broker"}, 1)
	plain := writeFile(t, dir, "key.pem", keyPEM)
	encrypt := func(name string, args ...string) string {
		out := filepath.Join(dir, name+".key")
		cmd := exec.Command(openssl, append([]string{"pkcs8", "-topk8", "-in", plain, "-out", out, "-passout", "pass:s3cret"}, args...)...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("openssl %v: %v\n%s", args, err, b)
		}
		enc, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(enc), "ENCRYPTED PRIVATE KEY") {
			t.Fatalf("openssl %v wrote no ENCRYPTED PRIVATE KEY", args)
		}
		return writeFile(t, dir, name+".pem", enc, certPEM)
	}
	validate := func(ks, password string) error {
		cfg := DefaultConfig()
		cfg.Listeners, cfg.ListenerSecurityProtocolMap = []string{"SSL://127.0.0.1:0"}, "SSL:SSL"
		cfg.SSL.KeystoreType, cfg.SSL.KeystoreLocation, cfg.SSL.KeyPassword = "PEM", ks, password
		return cfg.Validate()
	}
	for _, v := range []struct {
		name string
		args []string
	}{
		{"default", nil},
		{"aes128-sha1", []string{"-v2", "aes128", "-v2prf", "hmacWithSHA1"}},
		{"aes192-sha512", []string{"-v2", "aes192", "-v2prf", "hmacWithSHA512"}},
		{"aes256-sha224", []string{"-v2", "aes256", "-v2prf", "hmacWithSHA224"}},
	} {
		ks := encrypt(v.name, v.args...)
		if err := validate(ks, "s3cret"); err != nil {
			t.Errorf("%s: %v", v.name, err)
		}
		for password, want := range map[string]string{"": "ssl.key.password is not set", "wrong": "wrong ssl.key.password"} {
			if err := validate(ks, password); err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("%s with password %q: %v, want ErrInvalidConfig with %q", v.name, password, err, want)
			}
		}
	}
	if err := validate(encrypt("pbes1", "-v1", "PBE-SHA1-3DES"), "s3cret"); err == nil || !strings.Contains(err.Error(), "is not PBES2") {
		t.Errorf("PBES1: %v, want an error saying it is not PBES2", err)
	}
	if err := validate(writeFile(t, dir, "plain.pem", keyPEM, certPEM), "unused"); err != nil {
		t.Errorf("unencrypted key with a password set: %v", err)
	}
}

// FuzzDecryptPKCS8: whatever the bytes, decrypting ends without a panic.
func FuzzDecryptPKCS8(f *testing.F) {
	f.Add([]byte{0x30, 0x00})
	f.Fuzz(func(t *testing.T, der []byte) {
		_, _ = decryptPKCS8(der, []byte("pw"))
	})
}
