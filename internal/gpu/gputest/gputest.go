// Package gputest holds test helpers for packages with GPU tests: they open
// the first GPU or an NVRTC, or skip the test with a clear message where
// there is none (CI has neither), and make test data that is never zero.
package gputest

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gemvtune/gemvtune/internal/gpu"
)

// Device opens GPU 0 and closes it when the test ends. It skips the test
// with "skipping: no NVIDIA driver (...)" or "skipping: no CUDA device (...)"
// where there is none, and fails it on any other error.
func Device(t testing.TB) *gpu.Device {
	t.Helper()
	d, err := gpu.Open(0)
	switch {
	case errors.Is(err, gpu.ErrNoDriver):
		t.Skipf("skipping: no NVIDIA driver (%v)", err)
	case errors.Is(err, gpu.ErrNoDevice):
		t.Skipf("skipping: no CUDA device (%v)", err)
	case err != nil:
		t.Fatalf("opening GPU 0: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// NVRTC returns the newest NVRTC that builds arch, skipping the test with
// "skipping: no NVRTC (...)" where there is none.
func NVRTC(t testing.TB, arch gpu.Arch) *gpu.NVRTC {
	t.Helper()
	libs, err := gpu.FindNVRTC()
	if errors.Is(err, gpu.ErrNoNVRTC) {
		t.Skipf("skipping: no NVRTC (%v)", err)
	}
	if err != nil {
		t.Fatalf("finding NVRTC: %v", err)
	}
	n, err := gpu.ChooseNVRTC(libs, arch)
	if err != nil {
		t.Skipf("skipping: no NVRTC for %s (%v)", arch, err)
	}
	return n
}

// Rand returns a generator with a fresh seed, logged so a failure can be
// replayed.
func Rand(t testing.TB) *rand.Rand {
	t.Helper()
	seed := rand.Uint64()
	t.Logf("random seed %#x", seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// Float32s returns n values uniform in [-1, 1), none of them zero.
func Float32s(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		for v[i] == 0 {
			v[i] = r.Float32()*2 - 1
		}
	}
	return v
}

// NaNs returns n quiet NaNs, to poison an output before a kernel writes it.
func NaNs(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(math.NaN())
	}
	return v
}
