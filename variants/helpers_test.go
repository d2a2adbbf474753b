package variants_test

import (
	"math/rand/v2"
	"testing"

	"github.com/gemvtune/gemvtune/variants"
)

// randomFloats returns n values uniform in ±(0.05..1), never zero.
func randomFloats(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		m := 0.05 + 0.95*rng.Float32()
		if rng.IntN(2) == 0 {
			m = -m
		}
		v[i] = m
	}
	return v
}

// randomQuantized quantizes random f32 weights into format f's raw bytes.
func randomQuantized(t testing.TB, f variants.Format, rows, cols int, seed uint64) []byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	b, err := f.Quantize(randomFloats(rng, rows*cols), rows, cols)
	if err != nil {
		t.Fatalf("%s Quantize %dx%d: %v", f.Name(), rows, cols, err)
	}
	return b
}
