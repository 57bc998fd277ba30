package configs

import (
	"errors"
	"sort"
	"strings"
	"unicode/utf16"
)

// Sentinel errors. Every error this package returns is an *Error whose
// message is Kafka's own text, and which matches one or more of these with
// errors.Is. The broker maps them to Kafka error codes in one place:
//
//   - ErrInvalidConfig (which every config error also matches): INVALID_CONFIG
//     for topic configs. Kafka answers failed dynamic broker config changes
//     with INVALID_REQUEST instead (KAFKA-13609), except for the APPEND and
//     SUBTRACT type checks, which are INVALID_CONFIG.
//   - ErrUnknownConfig: a name the catalogue does not know; also
//     ErrInvalidConfig.
//   - ErrNullValue: a null value where Kafka does not take one; also
//     ErrInvalidConfig. CreateTopics answers it with INVALID_CONFIG.
//   - ErrReadOnly: a broker config that cannot be changed at the requested
//     level; also ErrInvalidConfig.
//   - ErrInvalidRequest: a malformed IncrementalAlterConfigs resource
//     (duplicate names, null values, unknown operation): INVALID_REQUEST.
//     It does not match ErrInvalidConfig.
var (
	ErrInvalidConfig  = errors.New("configs: invalid config")
	ErrUnknownConfig  = errors.New("configs: unknown config name")
	ErrNullValue      = errors.New("configs: null config value")
	ErrReadOnly       = errors.New("configs: config cannot be updated at this level")
	ErrInvalidRequest = errors.New("configs: invalid request")
)

// Error is every error this package returns. Error() is Kafka's message,
// meant for the error_message field of a response as it is.
type Error struct {
	// Name is the config the error is about; for errors about several
	// configs, their names joined with commas; empty when it is about none.
	Name  string
	msg   string
	kinds []error
}

// Error returns Kafka's message.
func (e *Error) Error() string { return e.msg }

// Unwrap lets errors.Is match the sentinels the error was made with.
func (e *Error) Unwrap() []error { return e.kinds }

// newError is a config error: it matches kind and ErrInvalidConfig.
func newError(kind error, name, msg string) *Error {
	kinds := []error{ErrInvalidConfig}
	if !errors.Is(kind, ErrInvalidConfig) {
		kinds = []error{kind, ErrInvalidConfig}
	}
	return &Error{Name: name, msg: msg, kinds: kinds}
}

// requestError is a malformed request: it matches ErrInvalidRequest only.
func requestError(name, msg string) *Error {
	return &Error{Name: name, msg: msg, kinds: []error{ErrInvalidRequest}}
}

// invalidValue is ConfigException(name, value, message):
// "Invalid value <value> for configuration <name>: <message>".
func invalidValue(name, value, msg string) *Error {
	return newError(ErrInvalidConfig, name, "Invalid value "+value+" for configuration "+name+": "+msg)
}

// javaSet renders names the way a java.util.HashSet of them prints in
// Kafka's messages since 4.2 (earlier, a Scala Set printed "Set(a, b)"):
// "[a, b]", in the set's iteration order, which follows each name's
// String.hashCode in a table of 16 buckets, or more for larger sets. Names
// sharing a bucket are sorted, where Java keeps their insertion order.
func javaSet(names []string) string {
	size := 16
	for float64(len(names)) > 0.75*float64(size) {
		size *= 2
	}
	bucket := func(name string) uint32 {
		var h uint32
		for _, u := range utf16.Encode([]rune(name)) {
			h = 31*h + uint32(u)
		}
		return (h ^ h>>16) & uint32(size-1)
	}
	s := append([]string(nil), names...)
	sort.Slice(s, func(i, j int) bool {
		if bi, bj := bucket(s[i]), bucket(s[j]); bi != bj {
			return bi < bj
		}
		return s[i] < s[j]
	})
	return "[" + strings.Join(s, ", ") + "]"
}
