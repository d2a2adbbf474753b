package termtext

import "testing"

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"NVIDIA H200":                 "NVIDIA H200",
		"\x1b[31mH200\x1b[0m":         "?[31mH200?[0m",
		"a\nb\tc\rd\x07e\u009bf\x7fg": "a\nb\tc?d?e?f?g",
		"µs × 2 %":                    "µs × 2 %",
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestField(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"application/vnd.oci.image.config.v1+json", 100, "application/vnd.oci.image.config.v1+json"},
		{"two\nlines\tand  \x1b[2J", 100, "two lines and ?[2J"},
		{"0123456789", 4, "0123..."},
	} {
		if got := Field(tc.in, tc.max); got != tc.want {
			t.Errorf("Field(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}
