package tuner

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

// ErrNoSameCompiler is returned (wrapped) by SameCubin when no NVRTC of
// the version a record was compiled with is on this machine.
var ErrNoSameCompiler = errors.New("no NVRTC of that version here")

// SameCubin reports whether variant p of format, compiled from this
// build's source for arch with the NVRTC of version nvrtc ("13.0", as a
// record names it) and the tuner's options, is byte for byte the cubin of
// sha256 hex cubinHash. It is how a record stale only by its source hash
// is kept when a change of the kernel source left its kernel as it was.
// It needs NVRTC, not a GPU.
func SameCubin(arch, nvrtc, format string, p space.Params, cubinHash string) (bool, error) {
	a, err := gpu.ParseArch(arch)
	if err != nil {
		return false, err
	}
	fam, err := variants.FamilyOf(format)
	if err != nil {
		return false, err
	}
	libs, err := gpu.FindNVRTC()
	if err != nil {
		return false, err
	}
	var nv *gpu.NVRTC
	for _, n := range libs {
		if n.Version.String() == nvrtc && n.Supports(a) {
			nv = n
			break
		}
	}
	if nv == nil {
		return false, fmt.Errorf("%w (%s, for %s)", ErrNoSameCompiler, nvrtc, arch)
	}
	code, err := fam.Source(p)
	if err != nil {
		return false, err
	}
	c := newCompiler(nv, a)
	cubin, _, err := c.compileOne(source{ID: p.ID(), Params: p, Code: code}, &sync.Once{})
	if err != nil {
		return false, err
	}
	sum := sha256.Sum256(cubin)
	return hex.EncodeToString(sum[:]) == cubinHash, nil
}
