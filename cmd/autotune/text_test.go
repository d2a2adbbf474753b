package main

import "testing"

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"NVIDIA H200":                 "NVIDIA H200",
		"\x1b[31mH200\x1b[0m":         "?[31mH200?[0m",
		"a\nb\tc\rd\x07e\u009bf\x7fg": "a\nb\tc?d?e?f?g",
		"µs × 2 %":                    "µs × 2 %",
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
}
