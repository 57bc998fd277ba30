package sasl

import (
	"errors"
	"fmt"
	"strings"
)

// JAAS configs (sasl.jaas.config and the brokers'
// listener.name.<l>.<mechanism>.sasl.jaas.config) name a login module and
// its options: PLAIN's users, a client's or a broker's username and
// password, OAUTHBEARER's validator options. Both the broker and the
// gregor CLI read them here.

// ParseJAAS reads a sasl.jaas.config value: one login module with
// its control flag and options, ended by a semicolon,
//
//	org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="alice-secret";
//
// An option's value is a bare word or quoted in double or single quotes,
// with the escapes of Java's StreamTokenizer, which Kafka's JaasConfig
// reads it with (see unescapeJAAS).
func ParseJAAS(s string) (class string, opts map[string]string, err error) {
	rest := strings.TrimSpace(s)
	word := func() string {
		i := strings.IndexAny(rest, " \t\r\n=;\"'")
		if i < 0 {
			i = len(rest)
		}
		w := rest[:i]
		rest = strings.TrimLeft(rest[i:], " \t\r\n")
		return w
	}
	if class = word(); class == "" {
		return "", nil, errors.New("no login module")
	}
	switch flag := word(); strings.ToLower(flag) {
	case "required", "requisite", "sufficient", "optional":
	default:
		return "", nil, fmt.Errorf("login module %s: want a control flag (required, requisite, sufficient or optional) after it", class)
	}
	opts = map[string]string{}
	for {
		if strings.HasPrefix(rest, ";") {
			if strings.TrimSpace(rest[1:]) != "" {
				return "", nil, errors.New("more than one login module")
			}
			return class, opts, nil
		}
		name := word()
		if name == "" || !strings.HasPrefix(rest, "=") {
			return "", nil, fmt.Errorf("login module %s: want name=value options ended by ;", class)
		}
		rest = strings.TrimLeft(rest[1:], " \t\r\n")
		var val string
		if rest != "" && (rest[0] == '"' || rest[0] == '\'') {
			i := 1
			for ; i < len(rest) && rest[i] != rest[0]; i++ {
				if rest[i] == '\\' && i+1 < len(rest) {
					i++
				}
			}
			if i >= len(rest) {
				return "", nil, fmt.Errorf("login module %s: option %s: unterminated quote", class, name)
			}
			val, rest = unescapeJAAS(rest[1:i]), strings.TrimLeft(rest[i+1:], " \t\r\n")
		} else if val = word(); val == "" {
			return "", nil, fmt.Errorf("login module %s: option %s has no value", class, name)
		}
		opts[name] = val
		if rest == "" {
			return "", nil, fmt.Errorf("login module %s: missing the closing ;", class)
		}
	}
}

// unescapeJAAS resolves the backslash escapes of a quoted JAAS value as
// Java's StreamTokenizer does: \a \b \f \n \r \t \v, up to three octal
// digits (two when the first is above 3) for a byte, and any other
// character for itself. So password="a\\b" is a\b, while "a\b" is an a
// and a backspace: backslashes are written doubled (and, in a properties
// file, doubled again).
func unescapeJAAS(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		c := s[i]
		if '0' <= c && c <= '7' {
			n, digits := int(c-'0'), 2
			if c <= '3' {
				digits = 3
			}
			for k := 1; k < digits && i+1 < len(s) && '0' <= s[i+1] && s[i+1] <= '7'; k++ {
				i++
				n = n*8 + int(s[i]-'0')
			}
			b.WriteRune(rune(n))
			continue
		}
		switch c {
		case 'a':
			c = 7
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		case 'v':
			c = '\v'
		}
		b.WriteByte(c)
	}
	return b.String()
}
