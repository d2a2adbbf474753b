package variants_test

import (
	"math"
	"testing"

	"github.com/gemvtune/gemvtune/variants"
)

// f16Bound: the weight must decode to exactly its round-to-nearest-even
// binary16 value, within half an ulp of an 11-bit significand (or of the
// smallest subnormal, 2^-24, below the normal range).
func f16Bound(w []float32, b []byte, rows, cols, i int) float64 {
	if variants.F16ToF32(variants.F32ToF16(w[i])) != variants.F16ToF32(uint16(b[2*i])|uint16(b[2*i+1])<<8) {
		return -1 // not the round-to-nearest-even value: fail
	}
	return max(math.Abs(float64(w[i]))/2048, math.Ldexp(1, -25))
}

// TestF16KnownAnswers: bytes as ggml writes them (GGML_FP32_TO_FP16, round
// to nearest even) decode to these values, and a row of them multiplies
// exactly.
func TestF16KnownAnswers(t *testing.T) {
	f := mustFormat(t, "f16")
	raw := []byte{0x00, 0x3c, 0x00, 0xc0, 0x00, 0x38, 0xff, 0x7b, 0x01, 0x00, 0x00, 0x80, 0x00, 0x7c, 0x55, 0x35}
	want := []float32{1, -2, 0.5, 65504, float32(math.Ldexp(1, -24)), float32(math.Copysign(0, -1)), float32(math.Inf(1)), 0.333251953125}
	got, err := f.Dequantize(raw, 1, 8)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] || math.Signbit(float64(got[i])) != math.Signbit(float64(want[i])) {
			t.Errorf("f16 value %d = %v, want %v", i, got[i], want[i])
		}
	}
	b, err := f.Quantize(want[:5], 1, 5)
	if err != nil || string(b) != string(raw[:10]) {
		t.Errorf("Quantize = % x, %v; want % x", b, err, raw[:10])
	}
	y, err := f.Reference(raw[:8], []float32{1, 1, 2, 0}, 1, 4)
	if err != nil || y[0] != 1-2+1 {
		t.Errorf("Reference = %v, %v", y, err)
	}
}
