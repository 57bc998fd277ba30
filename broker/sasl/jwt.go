package sasl

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"
)

// JWKS is a JSON Web Key Set (RFC 7517) of signature verification keys:
// RSA keys and EC keys on P-256, P-384 and P-521. Keys of other types, or
// marked for encryption only, are left out.
type JWKS struct {
	keys []jwk
}

type jwk struct {
	kid string
	alg string // empty when the key does not name one
	pub crypto.PublicKey
}

// ParseJWKS reads a key set. A set without a usable key is an error.
func ParseJWKS(data []byte) (*JWKS, error) {
	var doc struct {
		Keys []struct {
			Kty, Kid, Use, Alg, N, E, Crv, X, Y string
		} `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("key set: %w", err)
	}
	set := &JWKS{}
	for _, k := range doc.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		var pub crypto.PublicKey
		switch k.Kty {
		case "RSA":
			n, err1 := b64(k.N)
			e, err2 := b64(k.E)
			if err1 != nil || err2 != nil || len(n) == 0 || len(e) == 0 || len(e) > 4 {
				return nil, fmt.Errorf("key set: RSA key %q: bad n or e", k.Kid)
			}
			exp := int(new(big.Int).SetBytes(e).Int64())
			if exp < 3 || len(n) < 2048/8 {
				return nil, fmt.Errorf("key set: RSA key %q: exponent %d or %d-bit modulus refused", k.Kid, exp, len(n)*8)
			}
			pub = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: exp}
		case "EC":
			var curve elliptic.Curve
			switch k.Crv {
			case "P-256":
				curve = elliptic.P256()
			case "P-384":
				curve = elliptic.P384()
			case "P-521":
				curve = elliptic.P521()
			default:
				continue
			}
			x, err1 := b64(k.X)
			y, err2 := b64(k.Y)
			size := (curve.Params().BitSize + 7) / 8
			if err1 != nil || err2 != nil || len(x) != size || len(y) != size {
				return nil, fmt.Errorf("key set: EC key %q: bad x or y", k.Kid)
			}
			// The point is checked by its uncompressed encoding.
			point := append(append([]byte{4}, x...), y...)
			ek, err := ecdsa.ParseUncompressedPublicKey(curve, point)
			if err != nil {
				return nil, fmt.Errorf("key set: EC key %q: %w", k.Kid, err)
			}
			pub = ek
		default:
			continue
		}
		set.keys = append(set.keys, jwk{kid: k.Kid, alg: k.Alg, pub: pub})
	}
	if len(set.keys) == 0 {
		return nil, errors.New("key set: no RSA or EC signature key")
	}
	return set, nil
}

// Has reports whether the set holds a key with this id.
func (s *JWKS) Has(kid string) bool {
	return s != nil && slices.ContainsFunc(s.keys, func(k jwk) bool { return k.kid == kid })
}

func b64(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

// JWTValidator checks OAUTHBEARER tokens: compact JWS (RFC 7515) with
// JWT claims (RFC 7519), as Kafka's broker-side validators do.
//
// With Keys set it is Kafka's secured validator: the signature must
// verify with a key of the set (RS256/384/512, PS256/384/512,
// ES256/384/512; "none" is refused), exp and iat are required, aud must
// name one of Audience when that is set, and iss must equal Issuer when
// that is set. Without Keys it is Kafka's unsecured validator, for
// development: only unsigned tokens (alg "none") are taken, exp is
// required, and RequiredScope, when set, must all be granted.
type JWTValidator struct {
	Keys          *JWKS
	Audience      []string
	Issuer        string
	SubClaim      string // "sub" when empty
	ScopeClaim    string // "scope" when empty
	RequiredScope []string
	ClockSkew     time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Token is a validated token's principal and expiry.
type Token struct {
	Principal string
	Expiry    time.Time
}

// errInvalidToken is why a token is refused; its text goes to the log,
// never to the client, who is told only invalid_token.
type errInvalidToken string

func (e errInvalidToken) Error() string { return "invalid token: " + string(e) }

// Validate checks a token and returns its principal and expiry.
func (v *JWTValidator) Validate(token string) (Token, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return Token{}, errInvalidToken("not a compact JWS of three parts")
	}
	rawHeader, err1 := b64(parts[0])
	payload, err2 := b64(parts[1])
	sig, err3 := b64(parts[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return Token{}, errInvalidToken("a part is not base64url")
	}
	var header struct{ Alg, Kid string }
	if err := json.Unmarshal(rawHeader, &header); err != nil {
		return Token{}, errInvalidToken("header is not JSON")
	}
	if v.Keys == nil {
		if header.Alg != "none" || len(sig) != 0 {
			return Token{}, errInvalidToken("the unsecured validator takes only unsigned tokens (alg none)")
		}
	} else if err := v.verify(header.Alg, header.Kid, []byte(parts[0]+"."+parts[1]), sig); err != nil {
		return Token{}, err
	}
	return v.claims(payload)
}

func (v *JWTValidator) verify(alg, kid string, signed, sig []byte) error {
	if len(alg) != 5 || (alg[:2] != "RS" && alg[:2] != "PS" && alg[:2] != "ES") {
		return errInvalidToken(fmt.Sprintf("algorithm %q is not taken", alg))
	}
	var h crypto.Hash
	switch alg[2:] {
	case "256":
		h = crypto.SHA256
	case "384":
		h = crypto.SHA384
	case "512":
		h = crypto.SHA512
	default:
		return errInvalidToken(fmt.Sprintf("algorithm %q is not taken", alg))
	}
	var digest []byte
	switch h {
	case crypto.SHA256:
		d := sha256.Sum256(signed)
		digest = d[:]
	case crypto.SHA384:
		d := sha512.Sum384(signed)
		digest = d[:]
	default:
		d := sha512.Sum512(signed)
		digest = d[:]
	}
	family := alg[:2]
	for _, k := range v.Keys.keys {
		if (kid != "" && k.kid != kid) || (k.alg != "" && k.alg != alg) {
			continue
		}
		switch pub := k.pub.(type) {
		case *rsa.PublicKey:
			if family == "RS" && rsa.VerifyPKCS1v15(pub, h, digest, sig) == nil {
				return nil
			}
			if family == "PS" && rsa.VerifyPSS(pub, h, digest, sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}) == nil {
				return nil
			}
		case *ecdsa.PublicKey:
			size := (pub.Curve.Params().BitSize + 7) / 8
			if family == "ES" && len(sig) == 2*size &&
				ecdsa.Verify(pub, digest, new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])) {
				return nil
			}
		}
	}
	if kid != "" && !v.Keys.Has(kid) {
		return errUnknownKey
	}
	return errInvalidToken("signature does not verify with the key set")
}

// errUnknownKey is a token signed with a key id the set does not hold:
// the set may be stale.
var errUnknownKey = errInvalidToken("no key of the set has the token's key id")

// IsUnknownKey reports whether err is a token naming a key the set does
// not hold, after which a refreshed set may verify it.
func IsUnknownKey(err error) bool { return errors.Is(err, errUnknownKey) }

func (v *JWTValidator) claims(payload []byte) (Token, error) {
	var c map[string]any
	if err := json.Unmarshal(payload, &c); err != nil {
		return Token{}, errInvalidToken("claims are not a JSON object")
	}
	now := time.Now()
	if v.Now != nil {
		now = v.Now()
	}
	date := func(name string, required bool) (time.Time, error) {
		raw, ok := c[name]
		if !ok {
			if required {
				return time.Time{}, errInvalidToken("no " + name + " claim")
			}
			return time.Time{}, nil
		}
		f, ok := raw.(float64)
		if !ok || f < 0 || f > 1<<40 {
			return time.Time{}, errInvalidToken(name + " is not a date")
		}
		return time.UnixMilli(int64(f * 1000)), nil
	}
	exp, err := date("exp", true)
	if err != nil {
		return Token{}, err
	}
	if !now.Before(exp.Add(v.ClockSkew)) {
		return Token{}, errInvalidToken("expired")
	}
	if _, err := date("iat", v.Keys != nil); err != nil {
		return Token{}, err
	}
	nbf, err := date("nbf", false)
	if err != nil {
		return Token{}, err
	}
	if !nbf.IsZero() && now.Add(v.ClockSkew).Before(nbf) {
		return Token{}, errInvalidToken("not valid yet (nbf)")
	}
	if v.Issuer != "" && c["iss"] != v.Issuer {
		return Token{}, errInvalidToken("issuer is not the one expected")
	}
	if len(v.Audience) > 0 && !slices.ContainsFunc(stringsOf(c["aud"]), func(a string) bool { return slices.Contains(v.Audience, a) }) {
		return Token{}, errInvalidToken("audience is not one expected")
	}
	subClaim, scopeClaim := v.SubClaim, v.ScopeClaim
	if subClaim == "" {
		subClaim = "sub"
	}
	if scopeClaim == "" {
		scopeClaim = "scope"
	}
	sub, _ := c[subClaim].(string)
	if strings.TrimSpace(sub) == "" {
		return Token{}, errInvalidToken("no " + subClaim + " claim naming the principal")
	}
	granted := stringsOf(c[scopeClaim])
	if len(granted) == 1 {
		granted = strings.Fields(granted[0])
	}
	for _, s := range v.RequiredScope {
		if !slices.Contains(granted, s) {
			return Token{}, errInvalidToken("scope " + s + " is not granted")
		}
	}
	return Token{Principal: strings.TrimSpace(sub), Expiry: exp}, nil
}

// stringsOf reads a claim that is a string or an array of strings.
func stringsOf(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
