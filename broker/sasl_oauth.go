package broker

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gregor-io/gregor/broker/sasl"
)

// OAUTHBEARER on a SASL listener validates the client's JWT as Kafka's
// broker does:
//
//   - with listener.name.<l>.oauthbearer.sasl.server.callback.handler.class
//     set to Kafka's OAuthBearerValidatorCallbackHandler, against the keys
//     of sasl.oauthbearer.jwks.endpoint.url (an https or http URL, or a
//     file), refreshed every sasl.oauthbearer.jwks.endpoint.refresh.ms and
//     at once (at most every 10 s) for a token naming a key id the set
//     does not hold; sasl.oauthbearer.expected.audience,
//     .expected.issuer, .sub.claim.name, .scope.claim.name and
//     .clock.skew.seconds as Kafka reads them;
//   - without one, with Kafka's unsecured validator, for development:
//     unsigned tokens, with the JAAS options unsecuredValidatorPrincipalClaimName,
//     unsecuredValidatorScopeClaimName, unsecuredValidatorRequiredScope and
//     unsecuredValidatorAllowableClockSkewMs.
//
// The authentication lasts until the token expires (KIP-368), or
// connections.max.reauth.ms if that is sooner.

// oauthValidatorClass is Kafka's secured validator's class.
const oauthValidatorClass = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"

// oauthSetup validates a listener's OAUTHBEARER tokens.
type oauthSetup struct {
	base sasl.JWTValidator
	keys *jwksSource // nil for the unsecured validator
}

// oauthConfig returns an OAUTHBEARER setting of listener: the listener's
// own, else the broker's.
func (c *Config) oauthConfig(listener, key string) (string, bool) {
	if v, ok := c.listenerConfig(listener, "oauthbearer."+key); ok {
		return v, true
	}
	v, ok := c.OAuthBearerConfigs[key]
	return v, ok
}

func (c *Config) resolveOAuth(listener string) (*oauthSetup, error) {
	s := &oauthSetup{}
	class, _ := c.listenerConfig(listener, "oauthbearer.sasl.server.callback.handler.class")
	switch class = strings.TrimSpace(class); class {
	case "":
		opts, err := c.jaasOptions(listener, sasl.OAuthBearer, "OAuthBearerLoginModule")
		if err != nil {
			return nil, err
		}
		s.base.SubClaim = opts["unsecuredValidatorPrincipalClaimName"]
		s.base.ScopeClaim = opts["unsecuredValidatorScopeClaimName"]
		s.base.RequiredScope = strings.Fields(strings.ReplaceAll(opts["unsecuredValidatorRequiredScope"], ",", " "))
		if v := opts["unsecuredValidatorAllowableClockSkewMs"]; v != "" {
			ms, err := strconv.ParseUint(v, 10, 31)
			if err != nil {
				return nil, fmt.Errorf("%w: OAUTHBEARER on listener %s: unsecuredValidatorAllowableClockSkewMs %q is not a number of milliseconds", ErrInvalidConfig, listener, v)
			}
			s.base.ClockSkew = time.Duration(ms) * time.Millisecond
		}
		return s, nil
	case oauthValidatorClass:
	default:
		return nil, fmt.Errorf("%w: listener.name.%s.oauthbearer.sasl.server.callback.handler.class %s: Gregor has %s (or none, for the unsecured validator)",
			ErrInvalidConfig, strings.ToLower(listener), class, oauthValidatorClass)
	}
	get := func(key, dflt string) string {
		if v, ok := c.oauthConfig(listener, key); ok {
			return strings.TrimSpace(v)
		}
		return dflt
	}
	where := get("sasl.oauthbearer.jwks.endpoint.url", "")
	if where == "" {
		return nil, fmt.Errorf("%w: OAUTHBEARER on listener %s validates with keys, but sasl.oauthbearer.jwks.endpoint.url is not set", ErrInvalidConfig, listener)
	}
	refresh, err := strconv.ParseInt(get("sasl.oauthbearer.jwks.endpoint.refresh.ms", "3600000"), 10, 64)
	if err != nil || refresh < 1 {
		return nil, fmt.Errorf("%w: sasl.oauthbearer.jwks.endpoint.refresh.ms must be a positive number", ErrInvalidConfig)
	}
	skew, err := strconv.ParseInt(get("sasl.oauthbearer.clock.skew.seconds", "30"), 10, 32)
	if err != nil || skew < 0 {
		return nil, fmt.Errorf("%w: sasl.oauthbearer.clock.skew.seconds must be a number of seconds", ErrInvalidConfig)
	}
	s.keys, err = newJWKSSource(where, time.Duration(refresh)*time.Millisecond)
	if err != nil {
		return nil, fmt.Errorf("%w: sasl.oauthbearer.jwks.endpoint.url: %w", ErrInvalidConfig, err)
	}
	s.base.Audience = splitList(get("sasl.oauthbearer.expected.audience", ""))
	s.base.Issuer = get("sasl.oauthbearer.expected.issuer", "")
	s.base.SubClaim = get("sasl.oauthbearer.sub.claim.name", "sub")
	s.base.ScopeClaim = get("sasl.oauthbearer.scope.claim.name", "scope")
	s.base.ClockSkew = time.Duration(skew) * time.Second
	return s, nil
}

// validate checks a token with the listener's validator.
func (s *oauthSetup) validate(token string) (sasl.Token, error) {
	v := s.base
	if s.keys == nil {
		return v.Validate(token)
	}
	keys, err := s.keys.current(false)
	if err != nil {
		return sasl.Token{}, err
	}
	v.Keys = keys
	t, err := v.Validate(token)
	if sasl.IsUnknownKey(err) {
		if fresh, ferr := s.keys.current(true); ferr == nil && fresh != keys {
			v.Keys = fresh
			t, err = v.Validate(token)
		}
	}
	return t, err
}

// jwksSource is a key set kept fresh from a URL or a file.
type jwksSource struct {
	where   string
	file    bool
	refresh time.Duration

	mu      sync.Mutex
	set     *sasl.JWKS
	fetched time.Time // of set
	tried   time.Time // of the last fetch, failed or not
}

// jwksForcedEvery bounds the fetches a token with an unknown key id can
// cause.
const jwksForcedEvery = 10 * time.Second

func newJWKSSource(where string, refresh time.Duration) (*jwksSource, error) {
	s := &jwksSource{where: where, refresh: refresh}
	u, err := url.Parse(where)
	switch {
	case err == nil && (u.Scheme == "https" || u.Scheme == "http"):
		return s, nil // fetched at first use
	case err == nil && u.Scheme == "file":
		s.where = u.Path
	case err == nil && u.Scheme != "":
		return nil, fmt.Errorf("%q: scheme %s (Gregor reads https, http and file)", where, u.Scheme)
	}
	s.file = true
	if _, err := s.current(false); err != nil {
		return nil, err
	}
	return s, nil
}

// current returns the key set, fetching it when it is older than the
// refresh interval, or when force asks for a newer one (at most every
// jwksForcedEvery). A failed fetch keeps the set there is, if any.
func (s *jwksSource) current(force bool) (*sasl.JWKS, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	stale := s.set == nil || now.Sub(s.fetched) >= s.refresh || (force && now.Sub(s.tried) >= jwksForcedEvery)
	if !stale || (s.set != nil && now.Sub(s.tried) < time.Second) {
		if s.set == nil {
			return nil, fmt.Errorf("no key set from %s yet", s.where)
		}
		return s.set, nil
	}
	s.tried = now
	data, err := s.fetch()
	var set *sasl.JWKS
	if err == nil {
		set, err = sasl.ParseJWKS(data)
	}
	if err != nil {
		if s.set != nil {
			return s.set, nil
		}
		return nil, fmt.Errorf("key set from %s: %w", s.where, err)
	}
	s.set, s.fetched = set, now
	return set, nil
}

func (s *jwksSource) fetch() ([]byte, error) {
	const limit = 1 << 20
	if s.file {
		f, err := os.Open(s.where)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return io.ReadAll(io.LimitReader(f, limit))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.where, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %s", resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, limit))
}
