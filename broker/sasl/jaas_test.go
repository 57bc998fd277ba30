package sasl

import (
	"reflect"
	"testing"
)

func TestParseJAASConfig(t *testing.T) {
	for _, tt := range []struct {
		in    string
		class string
		opts  map[string]string
	}{
		{`a.B required;`, "a.B", map[string]string{}},
		{"  a.B  Optional\n k=v\tq = \"x y\" ;  ", "a.B", map[string]string{"k": "v", "q": "x y"}},
		{`a.B required s='it"s' d="q\"q" e='\'';`, "a.B", map[string]string{"s": `it"s`, "d": `q"q`, "e": "'"}},
		{`a.B required p="\\ \t\n\b\101\0411\478\z";`, "a.B", map[string]string{"p": "\\ \t\n\bA!1'8z"}},
	} {
		class, opts, err := ParseJAAS(tt.in)
		if err != nil || class != tt.class || !reflect.DeepEqual(opts, tt.opts) {
			t.Errorf("ParseJAAS(%q) = %q, %q, %v; want %q, %q", tt.in, class, opts, err, tt.class, tt.opts)
		}
	}
}

// FuzzParseJAASConfig: any value parses or fails without panicking; what
// parses has a login module, and options with names.
func FuzzParseJAASConfig(f *testing.F) {
	for _, s := range []string{
		`org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";`,
		`x required a='b\'c' d=e;`, `x optional;`, `x required a="unterminated`, `x required a=b; y required;`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		class, opts, err := ParseJAAS(s)
		if err != nil {
			return
		}
		if class == "" {
			t.Errorf("ParseJAAS(%q): no login module and no error", s)
		}
		for name := range opts {
			if name == "" {
				t.Errorf("ParseJAAS(%q): an option without a name", s)
			}
		}
	})
}

func TestParseJAASQuotesAndErrors(t *testing.T) {
	t.Parallel()
	_, opts, err := ParseJAAS(` org.x.PlainLoginModule  required username='a"b' ;  `)
	if err != nil || opts["username"] != `a"b` {
		t.Fatalf("single quotes: %v %v", opts, err)
	}
	class, opts, err := ParseJAAS("org.x.PlainLoginModule required\n  username=\"ad\\\"min\"\n  password = \"p w\" user_bob=plainword;")
	if err != nil || class != "org.x.PlainLoginModule" || opts["username"] != `ad"min` || opts["password"] != "p w" || opts["user_bob"] != "plainword" {
		t.Fatalf("%q %v %v", class, opts, err)
	}
	for _, bad := range []string{"", "M required", "M required a=\"x;", "M required a=;", "M required a=\"1\"; N required;", "M required a"} {
		if _, _, err := ParseJAAS(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func FuzzParseJAASOptions(f *testing.F) {
	f.Add(`org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`)
	f.Add(`M optional a="\\" b=c;`)
	f.Fuzz(func(t *testing.T, s string) {
		class, opts, err := ParseJAAS(s)
		if err == nil && (class == "" || opts == nil) {
			t.Fatalf("%q: class %q opts %v", s, class, opts)
		}
	})
}
