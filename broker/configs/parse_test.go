package configs

import (
	"math"
	"reflect"
	"testing"
)

func TestJavaDouble(t *testing.T) {
	tests := map[float64]string{
		0.5: "0.5", 2: "2.0", -0.1: "-0.1", 0: "0.0", 1e7: "1.0E7", 1.5e10: "1.5E10",
		1e-4: "1.0E-4", 0.001: "0.001", 1234567.5: "1234567.5", math.Inf(1): "Infinity",
	}
	for f, want := range tests {
		if got := javaDouble(f); got != want {
			t.Errorf("javaDouble(%v) = %q, want %q", f, got, want)
		}
	}
}

func TestParseJavaDouble(t *testing.T) {
	for in, want := range map[string]float64{"0.5": 0.5, "1": 1, "1e3": 1000, "2.5d": 2.5, "3F": 3, "-1.5": -1.5, ".5": 0.5} {
		if got, ok := parseJavaDouble(in); !ok || got != want {
			t.Errorf("parseJavaDouble(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "inf", "nan", "1_000", "abc", "1.2.3", "d"} {
		if got, ok := parseJavaDouble(in); ok {
			t.Errorf("parseJavaDouble(%q) = %v, want failure", in, got)
		}
	}
}

func TestParseList(t *testing.T) {
	tests := map[string][]string{
		"":               nil,
		"  ":             nil,
		"a":              {"a"},
		"a,b":            {"a", "b"},
		" a , b\t,c ":    {"a", "b", "c"},
		"a,,b":           {"a", "", "b"},
		"a,":             {"a", ""},
		",a":             {"", "a"},
		"compact,delete": {"compact", "delete"},
	}
	for in, want := range tests {
		p, err := parseValue("x", TypeList, in)
		if err != nil || !reflect.DeepEqual(p.list, want) {
			t.Errorf("parse list %q = %#v, %v; want %#v", in, p.list, err, want)
		}
	}
}

func TestJavaSplitComma(t *testing.T) {
	tests := map[string][]string{
		"":      {""},
		"a":     {"a"},
		"a,b":   {"a", "b"},
		"a,,b":  {"a", "", "b"},
		"a,b,,": {"a", "b"},
		",":     {},
		",a":    {"", "a"},
		" a, b": {" a", " b"},
	}
	for in, want := range tests {
		if got := javaSplitComma(in); !reflect.DeepEqual(got, want) {
			t.Errorf("javaSplitComma(%q) = %#v, want %#v", in, got, want)
		}
	}
}

func TestUnitConversions(t *testing.T) {
	tests := []struct {
		f    func(string) string
		in   string
		want string
	}{
		{hoursToMillis, "1", "3600000"},
		{hoursToMillis, " 168 ", "604800000"},
		{hoursToMillis, "-1", "-3600000"},
		{hoursToMillis, "x", "0"},
		{hoursToMillis, "", "0"},
		{hoursToMillis, "2147483648", "0"}, // not an int, as Kafka's Integer.parseInt
		{minutesToMillis, "5", "300000"},
	}
	for _, tt := range tests {
		if got := tt.f(tt.in); got != tt.want {
			t.Errorf("conversion of %q = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestJavaTrim(t *testing.T) {
	if got := javaTrim("\x00\t 5 \n\x1f"); got != "5" {
		t.Errorf("javaTrim = %q, want 5", got)
	}
	if got := javaTrim("\u00a05\u00a0"); got != "\u00a05\u00a0" {
		t.Errorf("javaTrim trimmed a non-breaking space: %q", got)
	}
}
