package variants

import (
	"fmt"
	"strings"
)

// FormatNames lists the formats in the order of docs/design.md §3.
var FormatNames = []string{"q4_0", "q8_0", "q4_K", "q5_K", "q6_K", "affine4", "bf16", "f16"}

var (
	formats  = map[string]Format{}
	families = map[string]Family{}
)

// registerFormat and registerFamily are called from init functions of the
// format and family files.
func registerFormat(f Format) { formats[f.Name()] = f }
func registerFamily(f Family) { families[f.Format().Name()] = f }

// FormatOf returns the format called name ("q4_0", "q8_0", "q4_K", "affine4", "bf16").
func FormatOf(name string) (Format, error) {
	if f, ok := formats[name]; ok {
		return f, nil
	}
	return nil, fmt.Errorf("%w %q: accepted: %s", ErrUnknownFormat, name, strings.Join(FormatNames, ", "))
}

// FamilyOf returns the kernel family of the format called name.
func FamilyOf(name string) (Family, error) {
	if f, ok := families[name]; ok {
		return f, nil
	}
	return nil, fmt.Errorf("%w %q: accepted: %s", ErrUnknownFormat, name, strings.Join(FormatNames, ", "))
}

// Formats returns every registered format in FormatNames order.
func Formats() []Format {
	var out []Format
	for _, n := range FormatNames {
		if f, ok := formats[n]; ok {
			out = append(out, f)
		}
	}
	return out
}

// Families returns every registered family in FormatNames order.
func Families() []Family {
	var out []Family
	for _, n := range FormatNames {
		if f, ok := families[n]; ok {
			out = append(out, f)
		}
	}
	return out
}

// formatsWith lists, in FormatNames order, the registered formats that
// implement T (a layout's interface), for messages.
func formatsWith[T any]() []string {
	var out []string
	for _, n := range FormatNames {
		if _, ok := formats[n].(T); ok {
			out = append(out, n)
		}
	}
	return out
}

// ggmlNamer is a Format that is a GGML tensor type too.
type ggmlNamer interface {
	// ggmlType is the type's name in GGML (and GGUF files): "Q4_0".
	ggmlType() string
}

// FormatOfGGML returns the format of the GGML tensor type called name
// ("Q4_K"), and false when no registered format is that type.
func FormatOfGGML(name string) (string, bool) {
	for _, n := range FormatNames {
		if g, ok := formats[n].(ggmlNamer); ok && g.ggmlType() == name {
			return n, true
		}
	}
	return "", false
}

// GGMLTypes lists the GGML tensor types the registered formats are, in
// FormatNames order ("Q4_0", "Q8_0", ...).
func GGMLTypes() []string {
	var out []string
	for _, n := range FormatNames {
		if g, ok := formats[n].(ggmlNamer); ok {
			out = append(out, g.ggmlType())
		}
	}
	return out
}
