package main

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestParseProperties(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		want     []property
	}{
		{"empty", "", nil},
		{"equals", "a=b", []property{{"a", "b", 1}}},
		{"colon", "a: b", []property{{"a", "b", 1}}},
		{"space", "a b", []property{{"a", "b", 1}}},
		{"tab and form feed", "a\t\f= b", []property{{"a", "b", 1}}},
		{"only one separator", "a==b", []property{{"a", "=b", 1}}},
		{"colon then equals", "a := b", []property{{"a", "= b", 1}}},
		{"key alone", "flag", []property{{"flag", "", 1}}},
		{"key and separator", "k =", []property{{"k", "", 1}}},
		{"leading whitespace", "  \t a = b", []property{{"a", "b", 1}}},
		{"trailing whitespace kept", "a = b  ", []property{{"a", "b  ", 1}}},
		{"comments and blanks", "# c\n! c\n\n   \n  # c\na=b\n", []property{{"a", "b", 6}}},
		{"comment does not continue", "# c \\\na=b", []property{{"a", "b", 2}}},
		{"hash inside value", "a=b#c", []property{{"a", "b#c", 1}}},
		{"crlf and cr", "a=1\r\nb=2\rc=3", []property{{"a", "1", 1}, {"b", "2", 2}, {"c", "3", 3}}},
		{"continuation", "a = one \\\n    two\\\n\tthree\nb=4", []property{{"a", "one twothree", 1}, {"b", "4", 4}}},
		{"continuation crlf", "a=x\\\r\n  y", []property{{"a", "xy", 1}}},
		{"continuation to blank", "a=x\\\n\nb=y", []property{{"a", "x", 1}, {"b", "y", 3}}},
		{"continued line starting with hash", "a=x\\\n  #y", []property{{"a", "x#y", 1}}},
		{"escaped backslash does not continue", "a=x\\\\\nb=y", []property{{"a", `x\`, 1}, {"b", "y", 2}}},
		{"continuation at end of file", "a=x\\", []property{{"a", "x", 1}}},
		{"escapes", `a=\t\n\r\f\\\=\:\ \#\q`, []property{{"a", "\t\n\r\f\\=: #q", 1}}},
		{"escaped separators in key", `my\=key\:x\ y = v`, []property{{"my=key:x y", "v", 1}}},
		{"escaped leading space in value", `a=\  b`, []property{{"a", "  b", 1}}},
		{"unicode", `a=\u00e9\u20AC`, []property{{"a", "é€", 1}}},
		{"surrogate pair", `a=\uD83D\uDE00!`, []property{{"a", "😀!", 1}}},
		{"lone surrogate", `a=\uD83Dx`, []property{{"a", "\uFFFDx", 1}}},
		{"utf-8", "pässwörd=grüße", []property{{"pässwörd", "grüße", 1}}},
		{"latin-1", "a=gr\xfc\xdfe", []property{{"a", "grüße", 1}}},
		{"duplicates listed in order", "a=1\na=2", []property{{"a", "1", 1}, {"a", "2", 2}}},
		{"jaas over lines", "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n" +
			"    username=\"alice\" \\\n    password=\"s3cr=t\";\n",
			[]property{{"sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="s3cr=t";`, 1}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProperties([]byte(tt.in))
			if err != nil {
				t.Fatalf("parseProperties(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parseProperties(%q)\n got %+v\nwant %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParsePropertiesErrors(t *testing.T) {
	for _, in := range []string{`a=\u12`, `a=\u12x4`, "b=1\n\\uZZZZ=1", `a=\u`} {
		if got, err := parseProperties([]byte(in)); err == nil || !strings.Contains(err.Error(), "malformed") {
			t.Errorf("parseProperties(%q) = %+v, %v; want a malformed escape error", in, got, err)
		}
	}
	_, err := parseProperties([]byte("ok=1\n\nbad=\\u00G0"))
	if err == nil || !strings.HasPrefix(err.Error(), "line 3:") {
		t.Errorf("error %v, want it to name line 3", err)
	}
}

// escapeProperty writes s so that parseProperties reads it back: every
// character that could mean something is escaped.
func escapeProperty(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\' || r == '=' || r == ':' || r == ' ' || r == '#' || r == '!':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || r == 0xFFFD:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// FuzzParseProperties: any input parses or fails without panicking, and
// what it parses to, written back escaped, parses to the same.
func FuzzParseProperties(f *testing.F) {
	for _, s := range []string{
		"a=b", "a : b\n#c\n!d\n", "a=x\\\n  y", `k\ =\u00e9\t`, "a\\", `\uD83D\uDE00=1`,
		"sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"p\";",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		props, err := parseProperties(data)
		if err != nil {
			return
		}
		var b strings.Builder
		for _, p := range props {
			fmt.Fprintf(&b, "%s=%s\n", escapeProperty(p.key), escapeProperty(p.value))
		}
		again, err := parseProperties([]byte(b.String()))
		if err != nil {
			t.Fatalf("re-parsing %q: %v", b.String(), err)
		}
		if len(again) != len(props) {
			t.Fatalf("%d properties, %d after writing them back as %q", len(props), len(again), b.String())
		}
		for i := range props {
			if again[i].key != props[i].key || again[i].value != props[i].value {
				t.Fatalf("property %d: %q=%q, read back as %q=%q", i, props[i].key, props[i].value, again[i].key, again[i].value)
			}
		}
	})
}
