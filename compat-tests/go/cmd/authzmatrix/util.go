package main

import (
	"strconv"
	"strings"
)

// isOurs reports whether a topic, group or transactional id is one the
// matrix created, so that listings of the whole broker compare equal
// whatever the broker holds of its own (internal topics, other groups).
func isOurs(name string) bool { return strings.HasPrefix(name, "authz-") }

func itoa(n int) string { return strconv.Itoa(n) }

func i64toa(n int64) string { return strconv.FormatInt(n, 10) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func list(names []string) string { return "[" + strings.Join(names, ",") + "]" }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
