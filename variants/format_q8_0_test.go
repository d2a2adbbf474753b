package variants_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/gemvtune/gemvtune/variants"
)

// Known answers for GGUF block_q8_0 {f16 d; i8 qs[32]}: value q*d
// (dequantize_row_q8_0 in ggml-org/llama.cpp ggml/src/ggml-quants.c).
func TestQ8_0DequantizeKnown(t *testing.T) {
	block := make([]byte, 34)
	block[0], block[1] = 0x00, 0x34 // d = 0.25
	qs := []int8{-128, -1, 0, 1, 127, 64, -64, 3}
	for j, q := range qs {
		block[2+j] = byte(q)
	}
	want := []float32{-32, -0.25, 0, 0.25, 31.75, 16, -16, 0.75}
	got, err := mustFormat(t, "q8_0").Dequantize(block, 1, 32)
	if err != nil {
		t.Fatal(err)
	}
	for j, v := range want {
		if got[j] != v {
			t.Errorf("weight %d = %v, want %v", j, got[j], v)
		}
	}
	for j := len(want); j < 32; j++ {
		if got[j] != 0 {
			t.Errorf("weight %d = %v, want 0", j, got[j])
		}
	}
}

// quantize_row_q8_0_ref with amax = 127: d = 1, id = 1, q = roundf(x),
// which rounds halves away from zero.
func TestQ8_0QuantizeKnown(t *testing.T) {
	x := make([]float32, 32)
	in := []float32{127, -63.5, 0.5, 1.5, 2.5, -0.5, -2.5, 0.49, -126.51}
	copy(x, in)
	want := make([]byte, 34)
	want[0], want[1] = 0x00, 0x3c // d = 1
	for j, q := range []int8{127, -64, 1, 2, 3, -1, -3, 0, -127} {
		want[2+j] = byte(q)
	}
	got, err := mustFormat(t, "q8_0").Quantize(x, 1, 32)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Quantize = % x, want % x", got, want)
	}
}

// q8_0Bound: half a step d = amax/127, plus 127 times d's rounding to f16.
func q8_0Bound(w []float32, b []byte, rows, cols, i int) float64 {
	k := i / 32
	d := math.Abs(float64(variants.F16ToF32(binary.LittleEndian.Uint16(b[k*34:]))))
	return d * (0.5 + 127.0/2048 + 0.001)
}
