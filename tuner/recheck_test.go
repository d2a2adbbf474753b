package tuner

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync"
	"testing"

	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

// TestSameCubin compiles a variant with a local NVRTC (it skips without
// one) and checks it against its own hash, another hash, and a compiler
// version that is not here.
func TestSameCubin(t *testing.T) {
	libs, err := gpu.FindNVRTC()
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	arch := gpu.Arch{Major: 8, Minor: 0}
	n, err := gpu.ChooseNVRTC(libs, arch)
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	p := space.Params{R: 2, U: 2, S: 1, W: 8}
	fam, _ := variants.FamilyOf("q4_0")
	code, _ := fam.Source(p)
	cubin, _, err := newCompiler(n, arch).compileOne(source{ID: p.ID(), Params: p, Code: code}, new(sync.Once))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(cubin)
	h := hex.EncodeToString(sum[:])
	if same, err := SameCubin("sm_80", n.Version.String(), "q4_0", p, h); err != nil || !same {
		t.Errorf("its own cubin: %v, %v", same, err)
	}
	if same, err := SameCubin("sm_80", n.Version.String(), "q4_0", space.Params{R: 1, U: 2, S: 1, W: 8}, h); err != nil || same {
		t.Errorf("another variant's cubin: %v, %v", same, err)
	}
	if _, err := SameCubin("sm_80", "99.9", "q4_0", p, h); !errors.Is(err, ErrNoSameCompiler) {
		t.Errorf("NVRTC 99.9: %v", err)
	}
}
