package gpu

import (
	"fmt"
	"strconv"
	"strings"
)

// Arch is a CUDA compute capability, written "sm_XY" (e.g. sm_90, sm_120).
// It has the same fields as space.Arch, so the two convert directly.
type Arch struct {
	Major, Minor int
}

// String returns "sm_90".
func (a Arch) String() string { return "sm_" + strconv.Itoa(a.Major) + strconv.Itoa(a.Minor) }

// Number returns the compute capability as NVRTC lists it: 10*Major+Minor.
func (a Arch) Number() int { return a.Major*10 + a.Minor }

// ArchFromNumber converts NVRTC's form (90, 120) to an Arch.
func ArchFromNumber(n int) Arch { return Arch{Major: n / 10, Minor: n % 10} }

// ParseArch reads "sm_90", "sm_120", "90" or "9.0".
func ParseArch(s string) (Arch, error) {
	t := strings.TrimPrefix(s, "sm_")
	if maj, min, ok := strings.Cut(t, "."); ok && t == s {
		if digits(maj) && len(maj) <= 2 && maj[0] != '0' && digits(min) && len(min) == 1 {
			a, _ := strconv.Atoi(maj)
			return Arch{Major: a, Minor: int(min[0] - '0')}, nil
		}
	} else if digits(t) && len(t) >= 2 && len(t) <= 3 && t[0] != '0' {
		n, _ := strconv.Atoi(t)
		return ArchFromNumber(n), nil
	}
	return Arch{}, fmt.Errorf("arch %q: want sm_XY (e.g. sm_90), XY or X.Y", s)
}

// digits reports whether s is non-empty and all ASCII digits.
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
