package configs

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

// This file parses values the way Kafka's ConfigDef.parseType does and
// prints them the way Java's toString does, so that normalized values and
// error messages match Kafka's.

// parsed is a value after parsing; the field in use depends on kind.
type parsed struct {
	kind Type
	b    bool
	i    int64
	f    float64
	s    string
	list []string
}

// format prints the value as Kafka's ConfigDef.convertToString does.
func (p parsed) format() string {
	switch p.kind {
	case TypeBoolean:
		return strconv.FormatBool(p.b)
	case TypeInt, TypeShort, TypeLong:
		return strconv.FormatInt(p.i, 10)
	case TypeDouble:
		return javaDouble(p.f)
	case TypeList:
		return strings.Join(p.list, ",")
	}
	return p.s
}

// javaString prints the value as Java's toString does, for messages: a list
// prints as "[a, b]".
func (p parsed) javaString() string {
	if p.kind == TypeList {
		return "[" + strings.Join(p.list, ", ") + "]"
	}
	return p.format()
}

// javaTrim is Java's String.trim: it drops every leading and trailing
// character at or below U+0020.
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

// listSplit is ConfigDef's COMMA_WITH_WHITESPACE; \s in Java is [ \t\n\x0B\f\r].
var listSplit = regexp.MustCompile(`[ \t\n\x0B\f\r]*,[ \t\n\x0B\f\r]*`)

// parseValue parses raw as a value of type t for the config called name.
// Errors carry raw as it came, untrimmed, as Kafka's do.
func parseValue(name string, t Type, raw string) (parsed, error) {
	trimmed := javaTrim(raw)
	p := parsed{kind: t}
	switch t {
	case TypeBoolean:
		switch {
		case strings.EqualFold(trimmed, "true"):
			p.b = true
		case strings.EqualFold(trimmed, "false"):
		default:
			return p, invalidValue(name, raw, "Expected value to be either true or false")
		}
	case TypeInt, TypeShort, TypeLong:
		bits := 64
		switch t {
		case TypeInt:
			bits = 32
		case TypeShort:
			bits = 16
		}
		n, err := strconv.ParseInt(trimmed, 10, bits)
		if err != nil {
			return p, invalidValue(name, raw, "Not a number of type "+t.String())
		}
		p.i = n
	case TypeDouble:
		f, ok := parseJavaDouble(trimmed)
		if !ok {
			return p, invalidValue(name, raw, "Not a number of type DOUBLE")
		}
		p.f = f
	case TypeList:
		if trimmed != "" {
			p.list = listSplit.Split(trimmed, -1)
		}
	default:
		// STRING, PASSWORD, and CLASS, whose class cannot be loaded here.
		p.s = trimmed
	}
	return p, nil
}

// parseJavaDouble accepts what Java's Double.parseDouble accepts for the
// values configs take: decimal and exponent forms, an optional f/F/d/D
// suffix, NaN and Infinity.
func parseJavaDouble(s string) (float64, bool) {
	switch s {
	case "NaN", "+NaN", "-NaN":
		return math.NaN(), true
	case "Infinity", "+Infinity":
		return math.Inf(1), true
	case "-Infinity":
		return math.Inf(-1), true
	}
	if n := len(s); n > 1 && strings.ContainsRune("fFdD", rune(s[n-1])) && !strings.HasPrefix(strings.TrimLeft(s, "+-"), "0x") {
		s = s[:n-1]
	}
	if s == "" || strings.ContainsAny(s, "_iInN") {
		// Reject Go's own spellings (inf, nan, 1_000) that Java does not take.
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false
	}
	return f, true
}

// javaDouble prints f as Java's Double.toString: "0.5", "2.0", "1.0E7".
func javaDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	if a := math.Abs(f); a >= 1e-3 && a < 1e7 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'E', -1, 64)
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

// javaSplitComma is Java's String.split(","): no trimming, trailing empty
// parts dropped, and a string with no comma returned whole.
func javaSplitComma(s string) []string {
	if !strings.Contains(s, ",") {
		return []string{s}
	}
	parts := strings.Split(s, ",")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// validator is a ConfigDef.Validator: a check on a parsed value and the
// "Valid Values" text Kafka documents for it.
type validator struct {
	valid string
	check func(name string, p parsed) error
}

// number returns p as a float64 for range checks; Kafka compares
// Number.doubleValue too.
func (p parsed) number() float64 {
	if p.kind == TypeDouble {
		return p.f
	}
	return float64(p.i)
}

// atLeast is Range.atLeast(lo).
func atLeast(lo int64) validator {
	l := strconv.FormatInt(lo, 10)
	return validator{
		valid: "[" + l + ",...]",
		check: func(name string, p parsed) error {
			if p.number() < float64(lo) {
				return invalidValue(name, p.javaString(), "Value must be at least "+l)
			}
			return nil
		},
	}
}

// between is Range.between(lo, hi), bounds included.
func between(lo, hi int64) validator {
	l, h := strconv.FormatInt(lo, 10), strconv.FormatInt(hi, 10)
	return validator{
		valid: "[" + l + ",...," + h + "]",
		check: func(name string, p parsed) error {
			switch n := p.number(); {
			case n < float64(lo):
				return invalidValue(name, p.javaString(), "Value must be at least "+l)
			case n > float64(hi):
				return invalidValue(name, p.javaString(), "Value must be no more than "+h)
			}
			return nil
		},
	}
}

// gzipLevel is CompressionType.GZIP.levelValidator: 1 to 9, or -1 for the
// library's default.
func gzipLevel() validator {
	return validator{
		valid: "[1,...,9] or -1",
		check: func(name string, p parsed) error {
			if p.i > 9 || (p.i < 1 && p.i != -1) {
				return invalidValue(name, p.javaString(), "Value must be between 1 and 9 or equal to -1")
			}
			return nil
		},
	}
}

// oneOf is ValidString.in: case-sensitive.
func oneOf(values ...string) validator {
	return validator{
		valid: "[" + strings.Join(values, ", ") + "]",
		check: func(name string, p parsed) error { return checkOneOf(name, p.s, values) },
	}
}

func checkOneOf(name, s string, values []string) error {
	for _, v := range values {
		if s == v {
			return nil
		}
	}
	return invalidValue(name, s, "String must be one of: "+strings.Join(values, ", "))
}

// listOf is ValidList.in as of Kafka 4.1: every element must be one of
// values; an empty list is accepted.
func listOf(values ...string) validator {
	return validator{
		valid: "[" + strings.Join(values, ", ") + "]",
		check: func(name string, p parsed) error {
			for _, e := range p.list {
				if err := checkOneOf(name, e, values); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

var replicaEntry = regexp.MustCompile(`^([0-9]+:[0-9]+)?$`)

// throttledReplicas is ThrottledReplicaListValidator: "*", or a list of
// partitionId:brokerId.
func throttledReplicas() validator {
	return validator{
		valid: "[partitionId]:[brokerId],[partitionId]:[brokerId],...",
		check: func(name string, p parsed) error {
			pairs := true
			var joined strings.Builder
			for _, e := range p.list {
				e = javaTrim(e)
				pairs = pairs && replicaEntry.MatchString(e)
				joined.WriteString(e)
			}
			if !pairs && joined.String() != "*" {
				return invalidValue(name, p.javaString(), name+
					" must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")
			}
			return nil
		},
	}
}

// Unit conversions for broker synonyms, as Kafka's ConfigSynonym does them:
// a value that is not an int counts as 0.
func hoursToMillis(v string) string   { return strconv.FormatInt(javaInt(v)*3_600_000, 10) }
func minutesToMillis(v string) string { return strconv.FormatInt(javaInt(v)*60_000, 10) }

func javaInt(v string) int64 {
	n, err := strconv.ParseInt(javaTrim(v), 10, 32)
	if err != nil {
		return 0
	}
	return n
}
