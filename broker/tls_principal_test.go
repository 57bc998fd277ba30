package broker

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"strings"
	"testing"
)

// TestPrincipalMappingRulesParse: which ssl.principal.mapping.rules parse,
// and into which rules, by Kafka's syntax.
func TestPrincipalMappingRulesParse(t *testing.T) {
	t.Parallel()
	valid := []struct {
		rules string
		want  string // the parsed rules, as ruleString writes them
	}{
		{"", "[DEFAULT]"},
		{"DEFAULT", "[DEFAULT]"},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/", "[RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/]"},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT", "[RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L DEFAULT]"},
		{"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/", "[RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/]"},
		{"RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U", "[RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U]"},
		{"RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/", "[RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/]"},
		{"RULE://", "[RULE://]"},
		{"RULE:/.*/L", "[RULE:/.*/L]"},
		{"  RULE:// ,  DEFAULT  ", "[RULE:// DEFAULT]"},
		{"  RULE:   /     / ,  DEFAULT  ", "[RULE:   /     / DEFAULT]"},
		{"  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ", "[RULE:([A-Z]*)/$1/U RULE:([a-z]+)/$1/ DEFAULT]"},
		// Empty rules are skipped.
		{",   , , ,      , , ,   ", "[]"},
		{",,RULE://,,,DEFAULT,,", "[RULE:// DEFAULT]"},
		// Escapes: \/ does not end a pattern or a replacement.
		{`RULE:\/\\\(\)\n\t/\/\//`, `[RULE:\/\\\(\)\n\t/\/\//]`},
		// Commas inside patterns and replacements, and rule keywords in them.
		{`RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT`,
			`[RULE:,RULE:,/,RULE:,\//U RULE:,/RULE:,/ RULE:,RULE:,/L,RULE:,/L RULE:, DEFAULT, /DEFAULT/ DEFAULT]`},
	}
	for _, c := range valid {
		m, err := parsePrincipalMappingRules(c.rules)
		if err != nil {
			t.Errorf("%q: %v", c.rules, err)
			continue
		}
		if got := m.String(); got != c.want {
			t.Errorf("%q: parsed %s, want %s", c.rules, got, c.want)
		}
	}
	for _, rules := range []string{
		"default", "DEFAUL", "DEFAULT/L", "DEFAULT/U", "DEFAULT X",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1",
		"rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
		"RULE:^CN=(.*?)$/$1/X",
		"RULE:^CN=(.*?$/$1/",   // not a regular expression
		"RULE:^CN=(?=x)$/$1/",  // look-ahead: Java has it, RE2 does not
		"RULE:^CN=.*$/$1/",     // a group the pattern does not have
		"RULE:^CN=(.*)$/$x/",   // $ without a group number
		`RULE:^CN=(.*)$/a\\\/`, // no end: the last slash is escaped
		"DEFAULT, RULE:",
	} {
		if m, err := parsePrincipalMappingRules(rules); err == nil {
			t.Errorf("%q: parsed as %s, want an error", rules, m)
		}
	}
}

// TestPrincipalMappingRulesApply: DNs mapped by rules, as Kafka maps them.
func TestPrincipalMappingRulesApply(t *testing.T) {
	t.Parallel()
	m, err := parsePrincipalMappingRules(strings.Join([]string{
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
		"RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
		"DEFAULT",
	}, ", "))
	if err != nil {
		t.Fatal(err)
	}
	for dn, want := range map[string]string{
		"CN=Duke,OU=ServiceUsers,O=Org,C=US":        "duke",
		"CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US": "duke@sme",
		"cn=duke,ou=sme,dc=mycp,dc=com":             "DUKE@SME",
		"cN=duke,OU=JavaSoft,O=Sun Microsystems":    "DUKE",
		"OU=JavaSoft,O=Sun Microsystems,C=US":       "OU=JavaSoft,O=Sun Microsystems,C=US",
	} {
		if got, err := m.name(dn); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", dn, got, err, want)
		}
	}

	m, err = parsePrincipalMappingRules(`RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := m.name(`CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz`); got != `Tkac\, Adam` {
		t.Errorf("escaped comma in the CN: %q, want %q", got, `Tkac\, Adam`)
	}

	// Replacements read as Java's Matcher reads them.
	for _, c := range []struct{ rule, dn, want string }{
		{`RULE:^(a)(b)$/$2$1/`, "ab", "ba"},
		{`RULE:^(a)(b)$/$21/`, "ab", "b1"},            // $21 with 2 groups: $2 then 1
		{`RULE:^(a)(b)$/$5/`, "ab", "$5"},             // beyond the groups: literal
		{`RULE:^(a)(b)$/$0-\$1-\x/`, "ab", "ab-$1-x"}, // $0 the match; \ escapes
		{`RULE:^(a)|(b)$/[$2]/`, "a", "[]"},           // a group that did not take part
		{`RULE:^CN=([^,]*).*$/$1/U`, "CN=Dük,O=x", "DÜK"},
	} {
		m, err := parsePrincipalMappingRules(c.rule)
		if err != nil {
			t.Errorf("%s: %v", c.rule, err)
			continue
		}
		if got, err := m.name(c.dn); err != nil || got != c.want {
			t.Errorf("%s on %q: %q, %v; want %q", c.rule, c.dn, got, err, c.want)
		}
	}

	// No rule applies: an error, which closes the connection.
	m, _ = parsePrincipalMappingRules("RULE:^CN=x$/x/")
	if _, err := m.name("CN=y"); err == nil {
		t.Error("a DN no rule applies to was mapped")
	}
}

// TestRFC2253DN: subject DNs written as Java's X500Principal.getName().
func TestRFC2253DN(t *testing.T) {
	t.Parallel()
	oid := func(s string) asn1.ObjectIdentifier {
		var o asn1.ObjectIdentifier
		for _, p := range strings.Split(s, ".") {
			n := 0
			for _, c := range p {
				n = n*10 + int(c-'0')
			}
			o = append(o, n)
		}
		return o
	}
	ava := func(o string, tag int, value string) attributeTypeAndValue {
		return attributeTypeAndValue{Type: oid(o), Value: asn1.RawValue{Class: asn1.ClassUniversal, Tag: tag, Bytes: []byte(value)}}
	}
	utf8 := func(o, v string) attributeTypeAndValue { return ava(o, asn1.TagUTF8String, v) }
	for _, c := range []struct {
		rdns []relativeDistinguishedNameSET
		want string
	}{
		{[]relativeDistinguishedNameSET{{utf8("2.5.4.6", "US")}, {utf8("2.5.4.10", "Acme")}, {utf8("2.5.4.11", "eng")}, {utf8("2.5.4.3", "alice")}},
			"CN=alice,OU=eng,O=Acme,C=US"},
		{[]relativeDistinguishedNameSET{{utf8("2.5.4.3", `a,b+c"d\e<f>g;h=i#j`)}}, `CN=a\,b\+c\"d\\e\<f\>g\;h\=i\#j`},
		{[]relativeDistinguishedNameSET{{utf8("2.5.4.3", "  two spaces around  ")}}, `CN=\ \ two spaces around\ \ `},
		{[]relativeDistinguishedNameSET{{utf8("2.5.4.3", "nul\x00 straße")}}, `CN=nul\00 straße`},
		{[]relativeDistinguishedNameSET{{utf8("0.9.2342.19200300.100.1.25", "com")}, {utf8("0.9.2342.19200300.100.1.25", "example")},
			{utf8("2.5.4.3", "x"), utf8("0.9.2342.19200300.100.1.1", "u1")}},
			"CN=x+UID=u1,DC=example,DC=com"},
		{[]relativeDistinguishedNameSET{{utf8("2.5.4.7", "Paris"), utf8("2.5.4.8", "IDF"), utf8("2.5.4.9", "1 rue")}}, "ST=IDF+L=Paris+STREET=1 rue"}, // as encoded: DER sorts a SET
		// Types RFC 2253 has no keyword for, and values that are not
		// strings: the OID and the DER value in hex.
		{[]relativeDistinguishedNameSET{{ava("1.2.840.113549.1.9.1", asn1.TagIA5String, "a@b.c")}, {ava("2.5.4.5", asn1.TagPrintableString, "123")}},
			"2.5.4.5=#1303313233,1.2.840.113549.1.9.1=#16056140622e63"},
		{[]relativeDistinguishedNameSET{{ava("2.5.4.3", asn1.TagOctetString, "\x01")}}, "2.5.4.3=#040101"},
		{[]relativeDistinguishedNameSET{{ava("2.5.4.3", asn1.TagBMPString, "\x00h\x00i")}}, "CN=hi"},
		{nil, ""},
	} {
		raw, err := asn1.Marshal(c.rdns)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := rfc2253DN(raw); err != nil || got != c.want {
			t.Errorf("%q, %v; want %q", got, err, c.want)
		}
	}

	// A certificate made by Go from a pkix.Name.
	ca := newTestCA(t)
	certPEM, _ := ca.issue(t, pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"Acme"},
		Country: []string{"US"}, Locality: []string{"Springfield"}}, 3)
	cert, err := x509.ParseCertificate(pemBlock(t, certPEM))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := rfc2253DN(cert.RawSubject); got != "CN=alice,OU=eng,O=Acme,L=Springfield,C=US" {
		t.Errorf("certificate subject %q", got)
	}
	if _, err := rfc2253DN([]byte{0x30, 0x03, 0x31}); err == nil {
		t.Error("a truncated DN was written")
	}
}

// FuzzPrincipalMappingRules: whatever the rules, parsing them ends, and
// rules that parse map a DN without panicking and parse again the same
// from how they are written.
//
//	go test -run '^$' -fuzz FuzzPrincipalMappingRules ./broker/
func FuzzPrincipalMappingRules(f *testing.F) {
	for _, s := range []string{"DEFAULT", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT", `RULE:\/\\\(\)\n\t/\/\//`,
		"RULE:,RULE:,/,RULE:,\\//U,RULE:,/RULE:,/", ",,", "RULE:(a)(b)/$21$0\\$/U", "RULE:^CN=([^,]*).*$/$1/L"} {
		f.Add(s, "CN=Duke,OU=ServiceUsers,O=Org,C=US")
	}
	f.Fuzz(func(t *testing.T, rules, dn string) {
		m, err := parsePrincipalMappingRules(rules)
		if err != nil {
			return
		}
		_, _ = m.name(dn)
		if len(m.rules) == 0 {
			return // only empty rules; written out they would read as DEFAULT
		}
		again, err := parsePrincipalMappingRules(strings.Join(m.ruleStrings(), ","))
		if err != nil {
			t.Fatalf("%q parsed as %s, which does not parse: %v", rules, m, err)
		}
		if again.String() != m.String() {
			t.Fatalf("%q parsed as %s, which parses as %s", rules, m, again)
		}
	})
}

// pemBlock returns the bytes of the first PEM block of data.
func pemBlock(t testing.TB, data []byte) []byte {
	t.Helper()
	b, _ := pem.Decode(data)
	if b == nil {
		t.Fatal("no PEM block")
	}
	return b.Bytes
}

// FuzzRFC2253DN: whatever the bytes of a subject (a client certificate's
// RawSubject), writing it as a DN ends without a panic.
//
//	go test -run '^$' -fuzz FuzzRFC2253DN ./broker/
func FuzzRFC2253DN(f *testing.F) {
	for _, name := range []pkix.Name{
		{CommonName: "alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"Acme"}, Country: []string{"US"}},
		{CommonName: " #a,b+c ", SerialNumber: "12", ExtraNames: []pkix.AttributeTypeAndValue{{Type: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}, Value: "a@b.c"}}},
	} {
		raw, err := asn1.Marshal(name.ToRDNSequence())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, _ = rfc2253DN(raw)
	})
}
