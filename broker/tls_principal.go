package broker

// The principal of an SSL connection with a client certificate is
// "User:" + the certificate's subject DN, written as Java's
// X500Principal.getName() writes it (RFC 2253), passed through
// ssl.principal.mapping.rules. Both are done here the way Kafka does them,
// so that ACLs written for a Kafka cluster name the same principals here.

import (
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf16"
)

// errNoMappingRule is returned by principalMapper.name for a DN no rule
// applies to; Kafka fails the client's authentication then, and so does
// the broker: the connection is closed.
var errNoMappingRule = errors.New("broker: no ssl.principal.mapping.rules rule applies")

// principalRule is one rule of ssl.principal.mapping.rules: DEFAULT (the
// DN as it is), or RULE:pattern/replacement/ with an optional L or U that
// folds the result's case.
type principalRule struct {
	isDefault bool
	pattern   string
	// full matches the whole DN (Java's Matcher.matches); re finds the
	// matches that are replaced (Java's String.replaceAll).
	full, re    *regexp.Regexp
	replacement string
	lower       bool
	upper       bool
}

// principalMapper is a parsed ssl.principal.mapping.rules: the first rule
// that applies to a DN gives the name.
type principalMapper struct {
	rules []principalRule
}

// parsePrincipalMappingRules parses ssl.principal.mapping.rules: rules
// separated by commas (and spaces), each DEFAULT or
// RULE:pattern/replacement/[LU]. In the pattern and the replacement a
// backslash escapes the character after it, so "\/" is a slash that does
// not end either (commas need no escaping: the rule's syntax says where it
// ends). Empty rules are skipped; an empty setting is DEFAULT, Kafka's
// default. Patterns are Go regular expressions (RE2): Java syntax RE2 lacks
// (look-around, back references in the pattern) is refused here, where
// Kafka would accept it. Replacements follow Java's Matcher: $n is group n
// (the longest group number there is, as Java reads $12 with fewer than 12
// groups as $1 then 2), a $n beyond the groups when there are some is
// literal (as Kafka escapes it), \c is c. L and U fold case with Go's
// simple Unicode mapping, where Java's full one also turns ß into SS.
func parsePrincipalMappingRules(s string) (*principalMapper, error) {
	m := &principalMapper{}
	s = strings.TrimSpace(s)
	if s == "" {
		s = "DEFAULT"
	}
	for i := 0; i < len(s); {
		i = skipSpaces(s, i)
		start := i
		switch {
		case i == len(s) || s[i] == ',':
			// An empty rule, skipped.
		case strings.HasPrefix(s[i:], "DEFAULT"):
			m.rules = append(m.rules, principalRule{isDefault: true})
			i += len("DEFAULT")
		case strings.HasPrefix(s[i:], "RULE:"):
			i += len("RULE:")
			pattern, next, ok := ruleField(s, i)
			if !ok {
				return nil, fmt.Errorf("invalid rule %q: no / after the pattern", s[start:])
			}
			replacement, next, ok := ruleField(s, next)
			if !ok {
				return nil, fmt.Errorf("invalid rule %q: no / after the replacement", s[start:])
			}
			i = next
			r := principalRule{pattern: pattern, replacement: replacement}
			if i < len(s) && (s[i] == 'L' || s[i] == 'U') {
				r.lower, r.upper = s[i] == 'L', s[i] == 'U'
				i++
			}
			var err error
			if r.re, err = regexp.Compile(pattern); err != nil {
				return nil, fmt.Errorf("invalid rule %q: pattern: %w", s[start:i], err)
			}
			r.full = regexp.MustCompile(`^(?:` + pattern + `)$`)
			if err := checkReplacement(replacement, r.re.NumSubexp()); err != nil {
				return nil, fmt.Errorf("invalid rule %q: replacement: %w", s[start:i], err)
			}
			m.rules = append(m.rules, r)
		default:
			end := strings.IndexByte(s[i:], ',')
			if end < 0 {
				end = len(s) - i
			}
			return nil, fmt.Errorf("invalid rule %q: want DEFAULT or RULE:pattern/replacement/[LU]", s[i:i+end])
		}
		i = skipSpaces(s, i)
		switch {
		case i == len(s):
		case s[i] == ',':
			i++
		default:
			return nil, fmt.Errorf("invalid rule %q: unmatched %q", s[start:], s[i:])
		}
	}
	return m, nil
}

func skipSpaces(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' || s[i] == '\f' || s[i] == '\v') {
		i++
	}
	return i
}

// ruleField reads a rule's pattern or replacement from s[i:] up to an
// unescaped slash, returning it (escapes kept: the regular expression and
// the replacement syntax read them) and the index after the slash.
func ruleField(s string, i int) (string, int, bool) {
	start := i
	for i < len(s) {
		switch s[i] {
		case '\\':
			if i+1 == len(s) {
				return "", 0, false
			}
			i += 2
		case '/':
			return s[start:i], i + 1, true
		default:
			i++
		}
	}
	return "", 0, false
}

// checkReplacement refuses what Java's Matcher would throw on when the
// rule is applied: a trailing backslash, a $ not followed by a group
// number, a group reference with no groups.
func checkReplacement(r string, groups int) error {
	for i := 0; i < len(r); i++ {
		switch r[i] {
		case '\\':
			if i+1 == len(r) {
				return errors.New("trailing backslash")
			}
			i++
		case '$':
			if i+1 == len(r) || r[i+1] < '0' || r[i+1] > '9' {
				return fmt.Errorf("$ at %d is not followed by a group number (write \\$ for a dollar sign)", i)
			}
			if groups == 0 && r[i+1] != '0' {
				return fmt.Errorf("$%c refers to a group, and the pattern has none", r[i+1])
			}
		}
	}
	return nil
}

// expand writes the replacement for one match (submatch indexes sm of s).
func (r *principalRule) expand(dst []byte, s string, sm []int) []byte {
	groups := len(sm)/2 - 1
	repl := r.replacement
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		switch {
		case c == '\\' && i+1 < len(repl):
			i++
			dst = append(dst, repl[i])
		case c == '$' && i+1 < len(repl) && repl[i+1] >= '0' && repl[i+1] <= '9':
			n := int(repl[i+1] - '0')
			if n > groups {
				// Kafka makes a reference beyond the groups literal.
				dst = append(dst, c)
				continue
			}
			i++
			for i+1 < len(repl) && repl[i+1] >= '0' && repl[i+1] <= '9' && n*10+int(repl[i+1]-'0') <= groups {
				n = n*10 + int(repl[i+1]-'0')
				i++
			}
			if sm[2*n] >= 0 {
				dst = append(dst, s[sm[2*n]:sm[2*n+1]]...)
			}
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// apply returns the rule's name for dn, or false when it does not apply.
// As Kafka, a rule applies when its pattern matches the whole DN, and then
// every match of the pattern in the DN is replaced. (Java's replaceAll
// also replaces an empty match right after a match at the end of the DN,
// so Kafka doubles the replacement of an unanchored pattern such as .*;
// Go's regexp skips that empty match: give patterns a ^ or a $.)
func (r *principalRule) apply(dn string) (string, bool) {
	if r.isDefault {
		return dn, true
	}
	if !r.full.MatchString(dn) {
		return "", false
	}
	var out []byte
	last := 0
	for _, sm := range r.re.FindAllStringSubmatchIndex(dn, -1) {
		out = append(out, dn[last:sm[0]]...)
		out = r.expand(out, dn, sm)
		last = sm[1]
	}
	out = append(out, dn[last:]...)
	name := string(out)
	switch {
	case r.lower:
		name = strings.ToLower(name)
	case r.upper:
		name = strings.ToUpper(name)
	}
	return name, true
}

// String writes the rule as it is configured.
func (r *principalRule) String() string {
	if r.isDefault {
		return "DEFAULT"
	}
	s := "RULE:" + r.pattern + "/" + r.replacement + "/"
	switch {
	case r.lower:
		s += "L"
	case r.upper:
		s += "U"
	}
	return s
}

// ruleStrings writes each rule as it is configured.
func (m *principalMapper) ruleStrings() []string {
	out := make([]string, len(m.rules))
	for i := range m.rules {
		out[i] = m.rules[i].String()
	}
	return out
}

// String lists the rules, for messages.
func (m *principalMapper) String() string {
	return "[" + strings.Join(m.ruleStrings(), " ") + "]"
}

// name maps a DN to the principal's name.
func (m *principalMapper) name(dn string) (string, error) {
	for i := range m.rules {
		if name, ok := m.rules[i].apply(dn); ok {
			return name, nil
		}
	}
	return "", fmt.Errorf("%w to %q", errNoMappingRule, dn)
}

// attributeTypeAndValue is one AVA of a DN, its value kept encoded: how it
// is written depends on its ASN.1 type.
type attributeTypeAndValue struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// relativeDistinguishedNameSET is one RDN (the SET suffix makes
// encoding/asn1 read a SET OF).
type relativeDistinguishedNameSET []attributeTypeAndValue

// rfc2253Keywords are the attribute types Java writes by name in RFC 2253
// form; every other type is written as its dotted OID with the value in
// hex.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.9":                    "STREET",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"0.9.2342.19200300.100.1.1":  "UID",
	"0.9.2342.19200300.100.1.25": "DC",
}

// rfc2253DN writes an encoded X.509 Name (a certificate's RawSubject) as
// Java's X500Principal.getName() does: RDNs from last to first, separated
// by commas, the AVAs of a multi-valued RDN by "+" in their encoded order;
// a known keyword with a string value as KEYWORD=value, with
// ,=+<>#;"\ and leading and trailing spaces escaped by a backslash and NUL
// written \00; anything else as OID=#hex of the value's DER encoding.
func rfc2253DN(raw []byte) (string, error) {
	var rdns []relativeDistinguishedNameSET
	rest, err := asn1.Unmarshal(raw, &rdns)
	if err != nil {
		return "", fmt.Errorf("subject DN: %w", err)
	}
	if len(rest) > 0 {
		return "", errors.New("subject DN: trailing data")
	}
	var b strings.Builder
	for i := len(rdns) - 1; i >= 0; i-- {
		if i < len(rdns)-1 {
			b.WriteByte(',')
		}
		for j, ava := range rdns[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			writeAVA(&b, ava)
		}
	}
	return b.String(), nil
}

func writeAVA(b *strings.Builder, ava attributeTypeAndValue) {
	oid := ava.Type.String()
	keyword, known := rfc2253Keywords[oid]
	value, isString := derString(ava.Value)
	if !known || !isString {
		b.WriteString(oid)
		b.WriteString("=#")
		b.WriteString(hex.EncodeToString(ava.Value.FullBytes))
		return
	}
	b.WriteString(keyword)
	b.WriteByte('=')
	var esc strings.Builder
	for _, c := range value {
		switch {
		case strings.ContainsRune(`,=+<>#;"\`, c):
			esc.WriteByte('\\')
			esc.WriteRune(c)
		case c == 0:
			esc.WriteString(`\00`)
		default:
			esc.WriteRune(c)
		}
	}
	s := esc.String()
	lead := len(s) - len(strings.TrimLeft(s, " \r"))
	trail := len(strings.TrimRight(s, " \r"))
	for i := 0; i < len(s); i++ {
		if i < lead || i >= trail {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
}

// derString decodes the value of an AVA when it is one of the string
// types Java writes as text (UTF8String, PrintableString, T61String,
// IA5String, GeneralString, BMPString).
func derString(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal {
		return "", false
	}
	switch v.Tag {
	case asn1.TagUTF8String, asn1.TagPrintableString, asn1.TagT61String, asn1.TagIA5String, asn1.TagGeneralString:
		return string(v.Bytes), true
	case asn1.TagBMPString:
		if len(v.Bytes)%2 != 0 {
			return "", false
		}
		u := make([]uint16, len(v.Bytes)/2)
		for i := range u {
			u[i] = uint16(v.Bytes[2*i])<<8 | uint16(v.Bytes[2*i+1])
		}
		return string(utf16.Decode(u)), true
	}
	return "", false
}
