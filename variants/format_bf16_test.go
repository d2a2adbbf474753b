package variants_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/gemvtune/gemvtune/variants"
)

func TestBF16Known(t *testing.T) {
	w := []float32{1, -2.5, float32(math.Pi), 65536}
	want := []byte{0x80, 0x3f, 0x20, 0xc0, 0x49, 0x40, 0x80, 0x47} // little-endian bf16
	f := mustFormat(t, "bf16")
	b, err := f.Quantize(w, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, want) {
		t.Errorf("Quantize = % x, want % x", b, want)
	}
	got, err := f.Dequantize(b, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range []float32{1, -2.5, 3.140625, 65536} {
		if got[i] != v {
			t.Errorf("weight %d = %v, want %v", i, got[i], v)
		}
	}
}

// bf16Bound: half an ulp of an 8-bit significand, and exactly the RNE value.
func bf16Bound(w []float32, b []byte, rows, cols, i int) float64 {
	if variants.BF16ToF32(variants.F32ToBF16(w[i])) != variants.BF16ToF32(uint16(b[2*i])|uint16(b[2*i+1])<<8) {
		return -1 // not the round-to-nearest-even value: fail
	}
	return math.Abs(float64(w[i])) / 256
}
