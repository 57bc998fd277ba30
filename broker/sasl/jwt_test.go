package sasl

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"
)

// testKeys are an RSA and an EC key and their key set.
type testKeys struct {
	rsa  *rsa.PrivateKey
	ec   *ecdsa.PrivateKey
	jwks []byte
}

func newTestKeys(t testing.TB) testKeys {
	t.Helper()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	pt, err := ek.PublicKey.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]any{"keys": []map[string]string{
		{"kty": "RSA", "kid": "r1", "use": "sig", "n": enc(rk.N.Bytes()), "e": enc(big.NewInt(int64(rk.E)).Bytes())},
		{"kty": "EC", "kid": "e1", "crv": "P-256", "x": enc(pt[1:33]), "y": enc(pt[33:])},
		{"kty": "oct", "kid": "secret", "k": "c2VjcmV0"},
	}}
	data, _ := json.Marshal(set)
	return testKeys{rsa: rk, ec: ek, jwks: data}
}

// SignJWT builds a token signed with alg (RS256, PS256, ES256 or none).
func (k testKeys) sign(t testing.TB, alg, kid string, claims map[string]any) string {
	t.Helper()
	enc := base64.RawURLEncoding.EncodeToString
	h, _ := json.Marshal(map[string]string{"alg": alg, "kid": kid, "typ": "JWT"})
	c, _ := json.Marshal(claims)
	signed := enc(h) + "." + enc(c)
	d := sha256.Sum256([]byte(signed))
	var sig []byte
	var err error
	switch alg {
	case "RS256":
		sig, err = rsa.SignPKCS1v15(rand.Reader, k.rsa, crypto.SHA256, d[:])
	case "PS256":
		sig, err = rsa.SignPSS(rand.Reader, k.rsa, crypto.SHA256, d[:], &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
	case "ES256":
		var r, s *big.Int
		r, s, err = ecdsa.Sign(rand.Reader, k.ec, d[:])
		sig = append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...)
	}
	if err != nil {
		t.Fatal(err)
	}
	return signed + "." + enc(sig)
}

func TestJWTValidator(t *testing.T) {
	k := newTestKeys(t)
	set, err := ParseJWKS(k.jwks)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	claims := func(mod func(map[string]any)) map[string]any {
		c := map[string]any{"sub": "alice", "exp": now.Unix() + 60, "iat": now.Unix(), "iss": "https://idp", "aud": []string{"kafka"}, "scope": "a b"}
		if mod != nil {
			mod(c)
		}
		return c
	}
	v := &JWTValidator{Keys: set, Audience: []string{"kafka"}, Issuer: "https://idp", ClockSkew: 30 * time.Second,
		Now: func() time.Time { return now }}
	for _, alg := range []string{"RS256", "PS256", "ES256"} {
		kid := "r1"
		if alg == "ES256" {
			kid = "e1"
		}
		tok, err := v.Validate(k.sign(t, alg, kid, claims(nil)))
		if err != nil || tok.Principal != "alice" || !tok.Expiry.Equal(now.Add(time.Minute)) {
			t.Errorf("%s: %+v %v", alg, tok, err)
		}
	}
	for name, tc := range map[string]struct {
		token string
		want  string
	}{
		"expired":          {k.sign(t, "RS256", "r1", claims(func(c map[string]any) { c["exp"] = now.Unix() - 31 })), "expired"},
		"no iat":           {k.sign(t, "RS256", "r1", claims(func(c map[string]any) { delete(c, "iat") })), "no iat"},
		"audience":         {k.sign(t, "RS256", "r1", claims(func(c map[string]any) { c["aud"] = "other" })), "audience"},
		"issuer":           {k.sign(t, "RS256", "r1", claims(func(c map[string]any) { c["iss"] = "x" })), "issuer"},
		"no subject":       {k.sign(t, "RS256", "r1", claims(func(c map[string]any) { delete(c, "sub") })), "no sub"},
		"not yet":          {k.sign(t, "RS256", "r1", claims(func(c map[string]any) { c["nbf"] = now.Unix() + 60 })), "nbf"},
		"wrong key":        {k.sign(t, "ES256", "r1", claims(nil)), "does not verify"},
		"unknown kid":      {k.sign(t, "RS256", "r9", claims(nil)), "key id"},
		"unsigned":         {k.sign(t, "none", "", claims(nil)), "algorithm"},
		"HMAC":             {k.sign(t, "none", "secret", claims(nil))[:0] + "eyJhbGciOiJIUzI1NiJ9.e30.AAAA", "algorithm"},
		"tampered payload": {tamper(k.sign(t, "RS256", "r1", claims(nil))), "does not verify"},
		"two parts":        {"a.b", "three parts"},
	} {
		_, err := v.Validate(tc.token)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, tc.want)
		}
	}
	if _, err := v.Validate(k.sign(t, "RS256", "r9", claims(nil))); !IsUnknownKey(err) {
		t.Errorf("unknown kid: %v, not IsUnknownKey", err)
	}

	unsecured := &JWTValidator{RequiredScope: []string{"b"}, Now: v.Now}
	if tok, err := unsecured.Validate(k.sign(t, "none", "", claims(nil))); err != nil || tok.Principal != "alice" {
		t.Errorf("unsecured: %+v %v", tok, err)
	}
	if _, err := unsecured.Validate(k.sign(t, "RS256", "r1", claims(nil))); err == nil {
		t.Error("unsecured validator took a signed token")
	}
	if _, err := unsecured.Validate(k.sign(t, "none", "", claims(func(c map[string]any) { c["scope"] = []string{"a"} }))); err == nil {
		t.Error("unsecured validator took a token without its required scope")
	}
	for _, bad := range []string{`{}`, `{"keys":[]}`, `{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`, `[`} {
		if _, err := ParseJWKS([]byte(bad)); err == nil {
			t.Errorf("key set %s parsed", bad)
		}
	}
}

// tamper changes the token's payload, keeping its signature.
func tamper(token string) string {
	p := strings.Split(token, ".")
	c, _ := json.Marshal(map[string]any{"sub": "mallory", "exp": 1_900_000_000, "iat": 1_800_000_000, "iss": "https://idp", "aud": "kafka"})
	return p[0] + "." + base64.RawURLEncoding.EncodeToString(c) + "." + p[2]
}

// oauthMessage is a client's initial response for token.
func oauthMessage(authzid, token string) []byte {
	a := ""
	if authzid != "" {
		a = "a=" + authzid
	}
	return []byte(fmt.Sprintf("n,%s,\x01auth=Bearer %s\x01ext=1\x01\x01", a, token))
}

func TestOAuthBearerServer(t *testing.T) {
	valid := func(tok string) (Token, error) {
		if tok != "good" {
			return Token{}, errInvalidToken("bad")
		}
		return Token{Principal: "alice", Expiry: time.Unix(2e9, 0)}, nil
	}
	s := &OAuthBearerServer{Validate: valid}
	reply, done, err := s.Step(oauthMessage("", "good"))
	if err != nil || !done || len(reply) != 0 || s.Principal() != "alice" || s.Expiry().Unix() != 2e9 {
		t.Fatalf("good token: %q %v %v %q", reply, done, err, s.Principal())
	}
	s = &OAuthBearerServer{Validate: valid}
	reply, done, err = s.Step(oauthMessage("", "bad"))
	if err != nil || done || string(reply) != `{"status":"invalid_token"}` {
		t.Fatalf("bad token: %q %v %v", reply, done, err)
	}
	_, _, err = s.Step([]byte{1})
	var f Failure
	if !errors.As(err, &f) || !errors.Is(err, ErrAuthentication) || string(f) != `{"status":"invalid_token"}` {
		t.Fatalf("after the error reply: %v", err)
	}
	s = &OAuthBearerServer{Validate: valid}
	if _, _, err = s.Step(oauthMessage("bob", "good")); !errors.As(err, &f) {
		t.Fatalf("authorization id of another principal: %v", err)
	}
	for _, bad := range []string{"", "n,,auth=Bearer good\x01\x01", "y,,\x01auth=Bearer good\x01\x01", "n,,\x01auth=Basic good\x01\x01",
		"n,,\x01auth=Bearer \x01\x01", "n,,\x01noequals\x01\x01", "n,,\x01ext=1\x01\x01"} {
		s = &OAuthBearerServer{Validate: valid}
		if _, done, err := s.Step([]byte(bad)); err == nil || done {
			t.Errorf("%q: taken", bad)
		}
	}
}

func FuzzOAuthBearer(f *testing.F) {
	k := newTestKeys(f)
	set, err := ParseJWKS(k.jwks)
	if err != nil {
		f.Fatal(err)
	}
	v := &JWTValidator{Keys: set}
	f.Add(oauthMessage("", k.sign(f, "RS256", "r1", map[string]any{"sub": "a", "exp": 4e9, "iat": 1})))
	f.Add(oauthMessage("a", "x.y.z"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		s := &OAuthBearerServer{Validate: v.Validate}
		if _, done, err := s.Step(msg); done && (err != nil || s.Principal() == "") {
			t.Fatalf("done with principal %q, err %v", s.Principal(), err)
		}
		s.Step([]byte{1})
	})
}
