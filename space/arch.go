package space

import (
	"errors"
	"strconv"
)

// ErrBadArch is returned (wrapped) when a compute capability does not parse.
var ErrBadArch = errors.New("invalid arch")

// Arch is a CUDA compute capability, written "sm_XY" (Major X, Minor Y),
// e.g. "sm_90" for Hopper or "sm_120" (Major 12, Minor 0).
type Arch struct {
	Major int
	Minor int
}

// String returns the arch as "sm_XY"; it parses back with ParseArch.
func (a Arch) String() string {
	return "sm_" + strconv.Itoa(a.Major) + strconv.Itoa(a.Minor)
}

// ParseArch reads "sm_XY": "sm_" followed by two or three digits, the last
// of which is the minor version (e.g. "sm_70", "sm_90", "sm_100"). The major
// version has no leading zero. Suffixes such as "sm_90a" are not accepted.
// It does not allocate on success.
func ParseArch(s string) (Arch, error) {
	const prefix = "sm_"
	n := len(s) - len(prefix)
	if n < 2 || n > 3 || s[:len(prefix)] != prefix || s[len(prefix)] == '0' {
		return Arch{}, archError(s)
	}
	major := 0
	for i := len(prefix); i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return Arch{}, archError(s)
		}
		if i < len(s)-1 {
			major = major*10 + int(c-'0')
		}
	}
	return Arch{Major: major, Minor: int(s[len(s)-1] - '0')}, nil
}

func archError(s string) error {
	return badf(ErrBadArch, "arch %q: want sm_XY, e.g. sm_90", s)
}
