package configs

import (
	"errors"
	"math"
	"reflect"
	"testing"
)

// sameParsed reports whether two parsed values are the same value; NaN is
// the same as NaN.
func sameParsed(a, b parsed) bool {
	if a.kind == TypeDouble && math.IsNaN(a.f) && math.IsNaN(b.f) {
		a.f, b.f = 0, 0
	}
	return reflect.DeepEqual(a, b)
}

// FuzzParseValue parses arbitrary strings as values of any type, and of
// every config in the catalogue, as AlterConfigs, CreateTopics and the
// static config do. Parsing and validation return an error or a value,
// never panic; a value that parses prints (format, what DescribeConfigs
// shows) as a string that parses back to the same value and passes the
// same validation.
func FuzzParseValue(f *testing.F) {
	for _, s := range []string{
		"", " ", "true", "FALSE", "1", "-1", " 42 ", "2147483648", "-32769", "9223372036854775807",
		"0.5", "1e3", "2.5d", "3F", "NaN", "-Infinity", "1.0E7", "-0.0", "0x1p-2", "1_000",
		"a,b", " a , b\t,c ", ",", "a,,b,", "*", "0:1,1:2", "delete,compact", "producer", "gzip",
		"\x00", "\u00a0x\u00a0", "日本",
	} {
		f.Add("retention.ms", int8(TypeLong), uint16(0), s)
	}
	f.Add("x", int8(TypeDouble), uint16(3), "1e400")
	f.Add("x", int8(TypeShort), uint16(7), "32767")
	f.Add("x", int8(-1), uint16(11), "v")
	f.Add("x", int8(TypeList), uint16(13), "a\x0b,\x0cb")
	defs := append(Topics(), Brokers()...)
	f.Fuzz(func(t *testing.T, name string, typ int8, which uint16, raw string) {
		ty := Type(typ)
		_ = ty.String()
		p, err := parseValue(name, ty, raw)
		if err == nil {
			out := p.format()
			_ = p.javaString()
			again, err := parseValue(name, ty, out)
			if err != nil {
				t.Fatalf("%v %q parsed and printed as %q, which does not parse: %v", ty, raw, out, err)
			}
			if !sameParsed(again, p) {
				t.Fatalf("%v %q parsed as %+v, printed as %q, which parses as %+v", ty, raw, p, out, again)
			}
		} else if !errors.Is(err, ErrInvalidConfig) {
			t.Fatalf("error %v does not wrap ErrInvalidConfig", err)
		}

		d := defs[int(which)%len(defs)]
		p, err = d.parse(raw)
		if err != nil {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("%s: error %v does not wrap ErrInvalidConfig", d.Name, err)
			}
		} else {
			norm := d.normalize(raw)
			again, err := d.parse(norm)
			if err != nil {
				t.Fatalf("%s=%q is valid, its normal form %q is not: %v", d.Name, raw, norm, err)
			}
			if !sameParsed(again, p) {
				t.Fatalf("%s=%q parsed as %+v, normalized to %q, which parses as %+v", d.Name, raw, p, norm, again)
			}
		}
		_ = ValidateTopic(map[string]string{d.Name: raw, name: raw})
		_ = ValidateBroker(map[string]string{d.Name: raw, name: raw}, Scope(int(which)%3))
		v := Values{d.Name: raw}
		_, _ = v.String(d.Name)
		_, _ = v.Int64(d.Name)
		_, _ = v.Int32(d.Name)
		_, _ = v.Float64(d.Name)
		_, _ = v.Bool(d.Name)
		_, _ = v.List(d.Name)
		_ = hoursToMillis(raw)
		_ = minutesToMillis(raw)
	})
}
