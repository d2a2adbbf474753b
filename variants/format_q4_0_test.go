package variants_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/gemvtune/gemvtune/variants"
)

// Known answers for GGUF block_q4_0 {f16 d; u8 qs[16]}: weight j = low nibble
// of qs[j], weight j+16 = high nibble, value (q-8)*d (dequantize_row_q4_0 in
// ggml-org/llama.cpp ggml/src/ggml-quants.c).
func TestQ4_0DequantizeKnown(t *testing.T) {
	cases := []struct {
		name  string
		block []byte
		want  [32]float32
	}{
		{
			name: "d=0.5, qs[j] = j | (15-j)<<4",
			block: []byte{0x00, 0x38, // d = 0.5 (f16 0x3800), little-endian
				0xf0, 0xe1, 0xd2, 0xc3, 0xb4, 0xa5, 0x96, 0x87, 0x78, 0x69, 0x5a, 0x4b, 0x3c, 0x2d, 0x1e, 0x0f},
			want: [32]float32{
				-4, -3.5, -3, -2.5, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5,
				3.5, 3, 2.5, 2, 1.5, 1, 0.5, 0, -0.5, -1, -1.5, -2, -2.5, -3, -3.5, -4},
		},
		{
			name: "d=-2 (0xc000), all nibbles 8 except first byte 0x0f",
			block: []byte{0x00, 0xc0,
				0x0f, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88},
			want: [32]float32{-14, 16: 16},
		},
	}
	f := mustFormat(t, "q4_0")
	for _, c := range cases {
		got, err := f.Dequantize(c.block, 1, 32)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: weight %d = %v, want %v", c.name, i, got[i], c.want[i])
			}
		}
	}
}

// quantize_row_q4_0_ref on x_j = j - 16: max = -16, d = max/-8 = 2, id = 0.5,
// q_j = min(15, (int8_t)((j-16)*0.5 + 8.5)), worked by hand.
func TestQ4_0QuantizeKnown(t *testing.T) {
	x := make([]float32, 32)
	for j := range x {
		x[j] = float32(j - 16)
	}
	want := []byte{0x00, 0x40, // d = 2
		0x80, 0x91, 0x91, 0xa2, 0xa2, 0xb3, 0xb3, 0xc4, 0xc4, 0xd5, 0xd5, 0xe6, 0xe6, 0xf7, 0xf7, 0xf8}
	got, err := mustFormat(t, "q4_0").Quantize(x, 1, 32)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Quantize(j-16) = % x, want % x", got, want)
	}
}

// q4_0Bound: one step |d| for weights pushed into the clamp at q=15 (those
// opposite in sign to the block's max, beyond 7.5 steps), else half a step,
// both widened for d's rounding to f16.
func q4_0Bound(w []float32, b []byte, rows, cols, i int) float64 {
	k := i / 32
	d := math.Abs(float64(variants.F16ToF32(binary.LittleEndian.Uint16(b[k*18:]))))
	var amax, vmax float32
	for _, v := range w[k*32 : k*32+32] {
		if a := float32(math.Abs(float64(v))); amax < a {
			amax, vmax = a, v
		}
	}
	if -8*w[i]/vmax <= 7.4 {
		return d * 0.51
	}
	return d * (1 + 1.0/128)
}
