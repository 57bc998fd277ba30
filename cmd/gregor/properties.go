package main

import (
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// This file reads Java properties files, the format of the client config
// files Kafka's tools take (--command-config), with the semantics of
// java.util.Properties.load:
//
//   - A logical line is one or more natural lines (ended by \n, \r or
//     \r\n): a line ending in an odd number of backslashes goes on with
//     the next one, whose leading whitespace is dropped.
//   - Whitespace (space, tab, form feed) at the start of a line is
//     skipped; a line that is then empty, or that starts with # or !, is
//     blank or a comment (a comment never goes on to the next line).
//   - The key runs to the first unescaped '=', ':' or whitespace. The
//     whitespace after it, then one '=' or ':', then whitespace again, are
//     skipped; the rest of the line is the value, trailing whitespace
//     included. A line holding only a key has the empty value.
//   - In keys and values, \t \n \r \f are control characters, \uXXXX a
//     UTF-16 code unit (a surrogate pair makes one character), and a
//     backslash before any other character is that character.
//   - A key given twice keeps its last value.
//
// Java reads such a file (through an InputStream, as Kafka does) as
// ISO-8859-1; a file that is valid UTF-8 is read as UTF-8 here, since
// that is what people write today, and any other as ISO-8859-1.

// property is one key and value of a properties file, with the number of
// the line it starts on, for messages.
type property struct {
	key, value string
	line       int
}

// parseProperties parses a properties file. Its only error is a malformed
// \uXXXX escape, which Java refuses too.
func parseProperties(data []byte) ([]property, error) {
	text := string(data)
	if !utf8.Valid(data) {
		rs := make([]rune, len(data))
		for i, b := range data {
			rs[i] = rune(b)
		}
		text = string(rs)
	}
	p := &propReader{text: text, line: 1}
	var out []property
	for {
		line, start, ok := p.logicalLine()
		if !ok {
			return out, nil
		}
		key, value := splitProperty(line)
		k, err := unescapeProperty(key)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		v, err := unescapeProperty(value)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		out = append(out, property{key: k, value: v, line: start})
	}
}

// propReader hands out the logical lines of a properties file.
type propReader struct {
	text string
	line int // of the next natural line
}

func isPropSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

// naturalLine returns the next natural line without its terminator.
func (p *propReader) naturalLine() (string, bool) {
	if p.text == "" {
		return "", false
	}
	i := strings.IndexAny(p.text, "\r\n")
	if i < 0 {
		s := p.text
		p.text = ""
		p.line++
		return s, true
	}
	s := p.text[:i]
	if p.text[i] == '\r' && i+1 < len(p.text) && p.text[i+1] == '\n' {
		i++
	}
	p.text = p.text[i+1:]
	p.line++
	return s, true
}

// logicalLine returns the next line that holds a property, its
// continuations joined, and the number of the line it starts on. The
// escapes are still in it, but the backslashes that joined lines are not.
func (p *propReader) logicalLine() (string, int, bool) {
	for {
		start := p.line
		s, ok := p.naturalLine()
		if !ok {
			return "", 0, false
		}
		s = strings.TrimLeft(s, " \t\f")
		if s == "" || s[0] == '#' || s[0] == '!' {
			continue
		}
		var b strings.Builder
		for {
			cont := trailingBackslashes(s)%2 == 1
			if !cont {
				b.WriteString(s)
				return b.String(), start, true
			}
			b.WriteString(s[:len(s)-1])
			next, ok := p.naturalLine()
			if !ok {
				// A file ending in a continuation: Java drops the
				// backslash and ends the line.
				return b.String(), start, true
			}
			s = strings.TrimLeft(next, " \t\f")
		}
	}
}

func trailingBackslashes(s string) int {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n
}

// splitProperty splits a logical line into its escaped key and value.
func splitProperty(line string) (key, value string) {
	i := 0
	for ; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++ // the escaped character belongs to the key
			continue
		}
		if c == '=' || c == ':' || isPropSpace(c) {
			break
		}
	}
	if i > len(line) {
		i = len(line)
	}
	key, rest := line[:i], line[i:]
	rest = strings.TrimLeft(rest, " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	return key, rest
}

// unescapeProperty resolves the backslash escapes of a key or value.
func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var units []uint16 // pending \u code units, to pair surrogates
	var b strings.Builder
	flush := func() {
		if len(units) > 0 {
			b.WriteString(string(utf16.Decode(units)))
			units = units[:0]
		}
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			flush()
			b.WriteByte(s[i])
			continue
		}
		i++
		if i == len(s) {
			break // a lone trailing backslash is dropped, as in Java
		}
		c := s[i]
		if c == 'u' {
			if len(s)-(i+1) < 4 {
				return "", fmt.Errorf(`malformed \uXXXX escape %q`, s[i-1:])
			}
			var u uint16
			for _, h := range []byte(s[i+1 : i+5]) {
				d, ok := hexDigit(h)
				if !ok {
					return "", fmt.Errorf(`malformed \uXXXX escape %q`, s[i-1:i+5])
				}
				u = u<<4 | uint16(d)
			}
			units = append(units, u)
			i += 4
			continue
		}
		flush()
		switch c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		default:
			// Any other escaped character is itself; it may be the first
			// byte of a multi-byte UTF-8 character, whose other bytes
			// follow unescaped.
			b.WriteByte(c)
		}
	}
	flush()
	return b.String(), nil
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
