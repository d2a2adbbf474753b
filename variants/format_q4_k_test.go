package variants_test

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/gemvtune/gemvtune/variants"
)

// q4KKnownScales packs, by hand, sub-block scales sc = 1 2 3 4 17 33 48 63
// and mins m = 0 1 2 3 20 40 50 63 the way get_scale_min_k4 (ggml-org/llama.cpp
// ggml/src/ggml-quants.c) reads them: j < 4 from the low 6 bits of bytes j
// and j+4; j >= 4 from the nibbles of byte j+4 plus the top 2 bits of bytes
// j-4 (scale) and j (min).
var (
	q4KKnownScales = [12]byte{
		0x41, 0x82, 0xc3, 0xc4, // sc0..3 | (sc4..7 >> 4) << 6
		0x40, 0x81, 0xc2, 0xc3, // m0..3  | (m4..7 >> 4) << 6
		0x41, 0x81, 0x20, 0xff, // (sc4..7 & 15) | (m4..7 & 15) << 4
	}
	q4KKnownSc = [8]float32{1, 2, 3, 4, 17, 33, 48, 63}
	q4KKnownM  = [8]float32{0, 1, 2, 3, 20, 40, 50, 63}
)

func TestQ4KDequantizeKnown(t *testing.T) {
	block := make([]byte, 144)
	binary.LittleEndian.PutUint16(block[0:], 0x3800) // d = 0.5
	binary.LittleEndian.PutUint16(block[2:], 0x3400) // dmin = 0.25
	copy(block[4:16], q4KKnownScales[:])
	// Each 32-byte chunk c holds sub-block 2c in low nibbles, 2c+1 in high.
	for c := 0; c < 4; c++ {
		for l := 0; l < 32; l++ {
			block[16+32*c+l] = byte(l&15) | byte(15-l&15)<<4
		}
	}
	got, err := mustFormat(t, "q4_K").Dequantize(block, 1, 256)
	if err != nil {
		t.Fatal(err)
	}
	// Spot values worked by hand: y = (d*sc)*q - dmin*m.
	spots := []struct {
		i    int
		want float32
	}{
		{1, 0.5},         // sub 0: 0.5*1*1 - 0
		{32, 14.75},      // sub 1: 1*15 - 0.25
		{64 + 7, 10},     // sub 2: 1.5*7 - 0.5
		{96 + 15, -0.75}, // sub 3: 2*0 - 0.75
		{128 + 3, 20.5},  // sub 4: 8.5*3 - 5
		{160 + 2, 204.5}, // sub 5: 16.5*13 - 10
		{192 + 5, 107.5}, // sub 6: 24*5 - 12.5
		{224, 456.75},    // sub 7: 31.5*15 - 15.75
		{224 + 15, -15.75},
	}
	for _, s := range spots {
		if got[s.i] != s.want {
			t.Errorf("weight %d = %v, want %v", s.i, got[s.i], s.want)
		}
	}
	// Every weight against the hand-packed scale and min lists.
	for i, v := range got {
		sub, l := i/32, i%32
		q := float32(l & 15)
		if sub%2 == 1 {
			q = float32(15 - l&15)
		}
		want := float32(0.5*q4KKnownSc[sub]*q) - 0.25*q4KKnownM[sub]
		if v != want {
			t.Fatalf("weight %d (sub-block %d) = %v, want %v", i, sub, v, want)
		}
	}
}

// The float32 products in dequantize_row_q4_K are exact: d*sc has at most
// 11+6 significant bits and (d*sc)*q at most 17+4 = 21 < 24, so only the
// final subtraction rounds, and a kernel's fma(d1, q, -m1) gives the same
// bits as the reference's separate multiply and subtract. Checked for every
// finite float16 d (every 3rd, for time), every 6-bit sc and every nibble.
func TestQ4KProductsExact(t *testing.T) {
	for h := uint16(1); h < 0x7c00; h += 3 {
		d := variants.F16ToF32(h)
		for sc := 0; sc < 64; sc++ {
			d1 := d * float32(sc)
			if float64(d1) != float64(d)*float64(sc) {
				t.Fatalf("d=%v sc=%d: d*sc rounds", d, sc)
			}
			for q := 0; q < 16; q++ {
				if p := d1 * float32(q); !math.IsInf(float64(p), 0) && float64(p) != float64(d1)*float64(q) {
					t.Fatalf("d=%v sc=%d q=%d: d1*q rounds", d, sc, q)
				}
			}
		}
	}
}

// kQuantBound is the bound of q4_K (blocks of 144 bytes, 15 levels) and
// q5_K (176, 31): half the sub-block step, where the step covers the
// sub-block's range (its min clamped at 0) plus one unit of dmin, rounded
// up by at most one unit of d; plus float32 rounding.
func kQuantBound(blockBytes int, levels float64) boundFunc {
	return func(w []float32, b []byte, rows, cols, i int) float64 {
		k := i / 256
		d := float64(variants.F16ToF32(binary.LittleEndian.Uint16(b[k*blockBytes:])))
		dmin := float64(variants.F16ToF32(binary.LittleEndian.Uint16(b[k*blockBytes+2:])))
		sub := w[i/32*32 : i/32*32+32]
		mn, mx := 0.0, float64(sub[0])
		for _, v := range sub {
			mn, mx = math.Min(mn, float64(v)), math.Max(mx, float64(v))
		}
		step := (mx-mn+dmin)/levels + d
		return 0.5*step*(1+1e-5) + 1e-6*(mx-mn+dmin)
	}
}

var (
	q4KBound = kQuantBound(144, 15)
	q5KBound = kQuantBound(176, 31)
)
