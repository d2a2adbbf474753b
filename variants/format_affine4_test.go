package variants_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/gemvtune/gemvtune/variants"
)

// affine4Group builds a one-row, one-group (64 weights) affine4 buffer:
// 8 uint32 words, then the f16 scale, then the f16 bias.
func affine4Group(words [8]uint32, scale, bias uint16) []byte {
	b := make([]byte, 36)
	for k, w := range words {
		binary.LittleEndian.PutUint32(b[4*k:], w)
	}
	binary.LittleEndian.PutUint16(b[32:], scale)
	binary.LittleEndian.PutUint16(b[34:], bias)
	return b
}

// Known answers for MLX's affine layout: weight 8k+i = (word k >> 4i) & 0xF,
// value scale*q + bias (mlx/ops.cpp affine_dequantize, ml-explore/mlx).
func TestAffine4DequantizeKnown(t *testing.T) {
	lowHigh := [8]uint32{0x76543210, 0xfedcba98, 0x76543210, 0xfedcba98, 0x76543210, 0xfedcba98, 0x76543210, 0xfedcba98}
	got, err := mustFormat(t, "affine4").Dequantize(affine4Group(lowHigh, 0x3800, 0xbc00), 1, 64) // scale 0.5, bias -1
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{-1, -0.5, 0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 5.5, 6, 6.5}
	for i, v := range got {
		if v != want[i%16] {
			t.Errorf("weight %d = %v, want %v", i, v, want[i%16])
		}
	}
}

// MLX's CPU dequantize computes in the scales' dtype: with float16 scales,
// scale*q is rounded to float16 before the bias is added, and the sum is
// rounded to float16 again.
func TestAffine4DequantizeRoundsLikeFloat16(t *testing.T) {
	cases := []struct {
		name        string
		scale, bias uint16
		q           uint32
		want        float32
	}{
		// (1+2^-10)*15 = 15.0146484375 -> f16 15.015625 (step 2^-7 in [8,16)).
		{"product rounds to f16", 0x3c01, 0x0000, 15, 15.015625},
		// 15.015625 + 1000 = 1015.015625 -> f16 1015 (step 0.5 in [512,1024)).
		{"sum rounds to f16", 0x3c01, 0x63d0, 15, 1015},
		// 3*(1+2^-10) = 3.0029296875 is 1537.5 steps of 2^-9: ties to even
		// 1538 steps = 3.00390625; + 0.5 = 3.50390625 exactly.
		{"tie to even in the product", 0x3c01, 0x3800, 3, 3.50390625},
	}
	for _, c := range cases {
		var words [8]uint32
		words[0] = c.q
		got, err := mustFormat(t, "affine4").Dequantize(affine4Group(words, c.scale, c.bias), 1, 64)
		if err != nil {
			t.Fatal(err)
		}
		if got[0] != c.want {
			t.Errorf("%s: scale %v q %d bias %v = %v, want %v", c.name,
				variants.F16ToF32(c.scale), c.q, variants.F16ToF32(c.bias), got[0], c.want)
		}
	}
}

// MLX's quantize (mlx/backend/cpu/quantized.cpp quantize()), worked by hand.
func TestAffine4QuantizeKnown(t *testing.T) {
	nibbles := [8]uint32{0x76543210, 0xfedcba98, 0x76543210, 0xfedcba98, 0x76543210, 0xfedcba98, 0x76543210, 0xfedcba98}
	cases := []struct {
		name        string
		x           func(j int) float32
		scale, bias uint16
	}{
		// w in [-15, 0]: |min| > |max|, scale = 15/15 = 1, edge = -15,
		// q0 = rint(-15/1) = -15, scale = -15/-15 = 1, bias = -15, q = j%16.
		{"min edge, positive scale", func(j int) float32 { return float32(j%16 - 15) }, 0x3c00, 0xcb80},
		// w in [0, 15]: |min| <= |max|, scale = -1, edge = 15, q0 = -15,
		// scale = 15/-15 = -1, bias = 15, q = rint((w-15)/-1) = j%16.
		{"max edge, negative scale", func(j int) float32 { return float32(15 - j%16) }, 0xbc00, 0x4b80},
	}
	for _, c := range cases {
		x := make([]float32, 64)
		for j := range x {
			x[j] = c.x(j)
		}
		got, err := mustFormat(t, "affine4").Quantize(x, 1, 64)
		if err != nil {
			t.Fatal(err)
		}
		if want := affine4Group(nibbles, c.scale, c.bias); !bytes.Equal(got, want) {
			t.Errorf("%s: Quantize = % x, want % x", c.name, got, want)
		}
	}
}

// The planes are whole tensors: row r's words, then all scales, then all
// biases. Two rows of two groups, each group a constant nibble.
func TestAffine4PlaneOrder(t *testing.T) {
	rows, cols := 2, 128
	b := make([]byte, 0, 2*128/2+2*2*2*2)
	for g := 0; g < 4; g++ { // w plane: row 0 group 0, row 0 group 1, row 1 group 0, row 1 group 1
		for k := 0; k < 8; k++ {
			b = binary.LittleEndian.AppendUint32(b, 0x11111111*uint32(g+1))
		}
	}
	for _, s := range []uint16{0x3c00, 0x4000, 0x4200, 0x4400} { // scales 1 2 3 4
		b = binary.LittleEndian.AppendUint16(b, s)
	}
	for _, s := range []uint16{0x0000, 0x3c00, 0x4000, 0x4200} { // biases 0 1 2 3
		b = binary.LittleEndian.AppendUint16(b, s)
	}
	got, err := mustFormat(t, "affine4").Dequantize(b, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	for g, want := range []float32{1*1 + 0, 2*2 + 1, 3*3 + 2, 4*4 + 3} {
		for i := 0; i < 64; i++ {
			if v := got[g*64+i]; v != want {
				t.Fatalf("group %d weight %d = %v, want %v", g, i, v, want)
			}
		}
	}
}

// affine4Bound: MLX's q0 snapping can stretch the far end of a group by up
// to one step |scale| (then clamped at 15), plus float16 roundings of the
// scale (x15), the bias, the product and the sum.
func affine4Bound(w []float32, b []byte, rows, cols, i int) float64 {
	g := i / 64
	sp := rows * cols / 2
	s := math.Abs(float64(variants.F16ToF32(binary.LittleEndian.Uint16(b[sp+2*g:]))))
	var amax float64
	for _, v := range w[g*64 : g*64+64] {
		amax = math.Max(amax, math.Abs(float64(v)))
	}
	return s*(1+32.0/2048) + 3*amax/2048
}
