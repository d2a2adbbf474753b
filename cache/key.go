package cache

import (
	"fmt"
	"strings"

	"github.com/gemvtune/gemvtune/space"
)

// Key names one entry: compute capability, format and shape.
type Key struct {
	Arch   string `json:"arch"`   // "sm_90"
	Format string `json:"format"` // "q4_0"
	Rows   int    `json:"rows"`
	Cols   int    `json:"cols"`
}

// Shape returns the key's shape.
func (k Key) Shape() space.Shape { return space.Shape{Rows: k.Rows, Cols: k.Cols} }

// String returns "sm_90/q4_0/4096x14336".
func (k Key) String() string { return k.Arch + "/" + k.Format + "/" + k.Shape().String() }

// Validate checks the arch (sm_XY), the format name (letters, digits and
// '_', starting with a letter, at most 32 bytes) and the shape.
func (k Key) Validate() error {
	if _, err := space.ParseArch(k.Arch); err != nil {
		return fmt.Errorf("%w: %w", ErrBadKey, err)
	}
	if !validFormatName(k.Format) {
		return fmt.Errorf("%w: format %q: want a name such as q4_0", ErrBadKey, k.Format)
	}
	if err := k.Shape().Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrBadKey, err)
	}
	return nil
}

func validFormatName(f string) bool {
	if f == "" || len(f) > 32 {
		return false
	}
	for i, c := range f {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '_')) {
			return false
		}
	}
	return true
}

// parseIndexKey reads "sm_90/q4_0/4096x14336".
func parseIndexKey(s string) (Key, error) {
	a := strings.IndexByte(s, '/')
	f := strings.LastIndexByte(s, '/')
	if a < 0 || f <= a {
		return Key{}, fmt.Errorf("%w %q: want ARCH/FORMAT/ROWSxCOLS", ErrBadKey, s)
	}
	sh, err := space.ParseShape(s[f+1:])
	if err != nil {
		return Key{}, fmt.Errorf("%w: %w", ErrBadKey, err)
	}
	k := Key{Arch: s[:a], Format: s[a+1 : f], Rows: sh.Rows, Cols: sh.Cols}
	if _, err := space.ParseArch(k.Arch); err != nil {
		return k, fmt.Errorf("%w: %w", ErrBadKey, err)
	}
	if !validFormatName(k.Format) {
		return k, fmt.Errorf("%w: format %q", ErrBadKey, k.Format)
	}
	return k, nil
}
