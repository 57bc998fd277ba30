package broker

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gregor-io/gregor/broker/sasl"
)

// SASL listeners' settings, with Kafka's names: which mechanisms a
// listener offers (sasl.enabled.mechanisms, or the listener's own
// listener.name.<l>.sasl.enabled.mechanisms), PLAIN's users (the
// user_<name>="<password>" options of listener.name.<l>.plain.sasl.jaas.config)
// and, on the inter-broker listener, the broker's own username and
// password (the username and password options of the JAAS config of
// sasl.mechanism.inter.broker.protocol). SCRAM users are kept in the
// cluster's registry (AlterUserScramCredentials), so a SCRAM mechanism
// needs a JAAS config only to name the broker's own user.

// saslListener is one SASL listener's authentication setup.
type saslListener struct {
	// mechanisms are the enabled mechanisms, in the order configured,
	// which is the order SaslHandshake lists them in.
	mechanisms []string
	// plainUsers are PLAIN's users and their passwords.
	plainUsers map[string]string
	// oauth validates OAUTHBEARER tokens (sasl_oauth.go).
	oauth *oauthSetup
}

// saslCredentials are what the broker's own connections authenticate with.
type saslCredentials struct {
	mechanism, user, password string
}

// servedMechanisms are the SASL mechanisms Gregor has.
var servedMechanisms = []string{sasl.Plain, sasl.ScramSHA256, sasl.ScramSHA512, sasl.OAuthBearer}

// listenerConfig returns listener.name.<listener>.<key>, or ok false.
func (c *Config) listenerConfig(listener, key string) (string, bool) {
	v, ok := c.ListenerConfigs["listener.name."+strings.ToLower(listener)+"."+key]
	return v, ok
}

// resolveSASL checks and puts together the setup of ls's SASL listeners.
func (c *Config) resolveSASL(ls *listenerSetup) error {
	for _, l := range ls.listeners {
		if p := ls.protocols[l.Name]; p != ProtocolSASLPlaintext && p != ProtocolSASLSSL {
			continue
		}
		key, mechs := "sasl.enabled.mechanisms", c.SASLEnabledMechanisms
		if v, ok := c.listenerConfig(l.Name, "sasl.enabled.mechanisms"); ok {
			key, mechs = "listener.name."+strings.ToLower(l.Name)+".sasl.enabled.mechanisms", splitList(v)
		}
		sl := &saslListener{}
		for _, m := range mechs {
			m = strings.ToUpper(m)
			if !slices.Contains(servedMechanisms, m) {
				return fmt.Errorf("%w: %s: SASL listener %s enables mechanism %s, which Gregor does not have (it has %s)",
					ErrInvalidConfig, key, l.Name, m, strings.Join(servedMechanisms, ", "))
			}
			if !slices.Contains(sl.mechanisms, m) {
				sl.mechanisms = append(sl.mechanisms, m)
			}
		}
		if len(sl.mechanisms) == 0 {
			return fmt.Errorf("%w: %s: SASL listener %s enables no mechanism", ErrInvalidConfig, key, l.Name)
		}
		if slices.Contains(sl.mechanisms, sasl.Plain) {
			opts, err := c.jaasOptions(l.Name, sasl.Plain, "PlainLoginModule")
			if err != nil {
				return err
			}
			if opts == nil {
				return fmt.Errorf("%w: SASL listener %s enables PLAIN but has no listener.name.%s.plain.sasl.jaas.config naming its users (user_<name>=\"<password>\")",
					ErrInvalidConfig, l.Name, strings.ToLower(l.Name))
			}
			sl.plainUsers = map[string]string{}
			for k, v := range opts {
				if u, ok := strings.CutPrefix(k, "user_"); ok && u != "" {
					sl.plainUsers[u] = v
				}
			}
		}
		if slices.Contains(sl.mechanisms, sasl.OAuthBearer) {
			var err error
			if sl.oauth, err = c.resolveOAuth(l.Name); err != nil {
				return err
			}
		}
		if ls.sasl == nil {
			ls.sasl = map[string]*saslListener{}
		}
		ls.sasl[l.Name] = sl
	}
	ib := ls.sasl[ls.interBroker]
	if ib == nil {
		return nil
	}
	mech := strings.ToUpper(strings.TrimSpace(c.SASLMechanismInterBrokerProtocol))
	if mech == sasl.OAuthBearer {
		return fmt.Errorf("%w: sasl.mechanism.inter.broker.protocol OAUTHBEARER: the brokers' own connections authenticate with PLAIN or SCRAM in Gregor", ErrInvalidConfig)
	}
	if !slices.Contains(ib.mechanisms, mech) {
		return fmt.Errorf("%w: sasl.mechanism.inter.broker.protocol %s is not enabled on the inter-broker listener %s (it enables %s)",
			ErrInvalidConfig, mech, ls.interBroker, strings.Join(ib.mechanisms, ", "))
	}
	module := "ScramLoginModule"
	if mech == sasl.Plain {
		module = "PlainLoginModule"
	}
	opts, err := c.jaasOptions(ls.interBroker, mech, module)
	if err != nil {
		return err
	}
	if opts["username"] == "" || opts["password"] == "" {
		return fmt.Errorf("%w: the inter-broker listener %s is SASL: listener.name.%s.%s.sasl.jaas.config must give the broker's username and password",
			ErrInvalidConfig, ls.interBroker, strings.ToLower(ls.interBroker), strings.ToLower(mech))
	}
	ls.interBrokerSASL = &saslCredentials{mechanism: mech, user: opts["username"], password: opts["password"]}
	return nil
}

// jaasOptions parses listener.name.<listener>.<mechanism>.sasl.jaas.config,
// nil when it is not set. Its login module must be module (by the last
// part of its class name).
func (c *Config) jaasOptions(listener, mechanism, module string) (map[string]string, error) {
	key := "listener.name." + strings.ToLower(listener) + "." + strings.ToLower(mechanism) + ".sasl.jaas.config"
	v, ok := c.ListenerConfigs[key]
	if !ok {
		return nil, nil
	}
	class, opts, err := sasl.ParseJAAS(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidConfig, key, err)
	}
	if class != module && !strings.HasSuffix(class, "."+module) {
		return nil, fmt.Errorf("%w: %s: login module %s where %s is needed for %s", ErrInvalidConfig, key, class, module, mechanism)
	}
	return opts, nil
}

// splitList splits a comma-separated list, dropping empty entries.
func splitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}
