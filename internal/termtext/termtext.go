// Package termtext keeps text that came from outside (a cache file, an
// import file, a registry) from driving the terminal it is printed on.
package termtext

import "strings"

// Printable replaces every control character of s but newline and tab
// (terminal escape sequences among them: ESC, C1 controls) and every
// invalid UTF-8 byte by '?'.
func Printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 || r == '\uFFFD' {
			return '?'
		}
		return r
	}, s)
}

// Field is Printable for a value quoted inside a one-line message: its
// whitespace runs (newlines and tabs too) become one space, and past max
// bytes it is cut and marked with "...".
func Field(s string, max int) string {
	s = strings.Join(strings.Fields(Printable(s)), " ")
	if len(s) > max {
		s = s[:max] + "..."
	}
	return s
}
