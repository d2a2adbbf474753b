package main

import "strings"

// printable replaces every control character of s but newline and tab
// (terminal escape sequences among them: ESC, C1 controls) by '?', so that
// what a cache or an import file says cannot drive the terminal.
func printable(s string) string {
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
