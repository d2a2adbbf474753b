package variants_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

// quantizeX8 quantizes x per group of 32 as the a=1 kernels do (prelude.cu
// gemv_xq_put, in f32): amax = max|x|, d = amax·f32(1/127), id = 1/d (0 when d
// is 0), q = round-half-even(x*id) clamped to ±127. It returns the
// dequantized activations d*q in float64 (exact).
func quantizeX8(x []float32) []float64 {
	out := make([]float64, len(x))
	for g := 0; g+32 <= len(x); g += 32 {
		var amax float32
		for _, v := range x[g : g+32] {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		d := amax * float32(1.0/127)
		var id float32
		if d != 0 {
			id = 1 / d
		}
		for j, v := range x[g : g+32] {
			p := v * id
			q := math.RoundToEven(float64(p))
			q = max(-127, min(127, q))
			out[g+j] = float64(d) * q
		}
	}
	return out
}

// int8Model is what an a=1 kernel computes up to f32 rounding of its
// accumulation: the dequantized weights times the int8-rounded x, in
// float64. (The kernel's integer block dot products are exact; only
// fma(d_w*d_x, isum, acc) rounds, about 1e-7 relative.)
func int8Model(t testing.TB, f variants.Format, raw []byte, x []float32, rows, cols int) []float64 {
	t.Helper()
	w, err := f.Dequantize(raw, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	xq := quantizeX8(x)
	y := make([]float64, rows)
	for r := range y {
		var s float64
		for j, v := range w[r*cols : (r+1)*cols] {
			s += float64(v) * xq[j]
		}
		y[r] = s
	}
	return y
}

// relL2f64 is ||y - ref|| / ||ref||.
func relL2f64(y, ref []float64) float64 {
	var num, den float64
	for i, v := range y {
		d := v - ref[i]
		num += d * d
		den += ref[i] * ref[i]
	}
	return math.Sqrt(num / den)
}

// tunerLikeWeights draws weights as the tuner does (tuner/data.go): uniform
// in [-1, 1), one row in eight scaled by 10^u, u uniform in [-2, 2).
func tunerLikeWeights(rng *rand.Rand, rows, cols int) []float32 {
	w := make([]float32, rows*cols)
	for r := 0; r < rows; r++ {
		scale := float32(1)
		if rng.IntN(8) == 0 {
			scale = float32(math.Pow(10, rng.Float64()*4-2))
		}
		for i := range w[r*cols : (r+1)*cols] {
			w[r*cols+i] = scale * float32(rng.Float64()*2-1)
		}
	}
	return w
}

// TestInt8ErrorBound checks that the a=1 bound leaves at least a 3× margin
// over the error of int8 activations on the data the tuner and the GPU
// test use (uniform x) and on Gaussian x, for q4_0, q8_0, q4_K and affine4 at the K
// of the model shapes.
func TestInt8ErrorBound(t *testing.T) {
	p := mustParse(t, "r1f0u1s1w8a1")
	for _, name := range []string{"q4_0", "q8_0", "q4_K", "affine4"} {
		f := mustFamily(t, name)
		bound := f.ErrorBound(p)
		for _, cols := range []int{4096, 14336} {
			const rows = 1024
			rng := rand.New(rand.NewPCG(uint64(cols), 5))
			uniform := func() []float32 {
				x := make([]float32, cols)
				for i := range x {
					x[i] = float32(rng.Float64()*2 - 1)
				}
				return x
			}
			gauss := func() []float32 {
				x := make([]float32, cols)
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				return x
			}
			cases := []struct {
				name string
				gen  func() ([]float32, []float32)
			}{
				{"tuner data (uniform, rows scaled 1e±2)", func() ([]float32, []float32) { return tunerLikeWeights(rng, rows, cols), uniform() }},
				{"test data (±0.05..1)", func() ([]float32, []float32) { return randomFloats(rng, rows*cols), randomFloats(rng, cols) }},
				{"gaussian x", func() ([]float32, []float32) { return tunerLikeWeights(rng, rows, cols), gauss() }},
			}
			for _, tc := range cases {
				cname := tc.name
				w, x := tc.gen()
				raw, err := f.Format().Quantize(w, rows, cols)
				if err != nil {
					t.Fatal(err)
				}
				ref, err := f.Format().Reference(raw, x, rows, cols)
				if err != nil {
					t.Fatal(err)
				}
				e := relL2f64(int8Model(t, f.Format(), raw, x, rows, cols), ref)
				t.Logf("%s %dx%d %s: relative L2 error %.3g (bound %.3g, margin %.1f×)", name, rows, cols, cname, e, bound, bound/e)
				if !(e*3 <= bound) {
					t.Errorf("%s %dx%d %s: error %.3g leaves less than 3× margin to bound %.3g", name, rows, cols, cname, e, bound)
				}
			}
		}
	}
}

// TestQuantizeX8 pins the activation quantization: scale, rounding, the
// all-zero group.
func TestQuantizeX8(t *testing.T) {
	x := make([]float32, 64)
	x[0], x[1], x[2], x[3] = 127, -63.5, 0.5, 1.5 // d = 1: ties to even
	got := quantizeX8(x)
	for i, want := range []float64{127, -64, 0, 2} {
		if got[i] != want {
			t.Errorf("x[%d] = %g → %g, want %g", i, x[i], got[i], want)
		}
	}
	for i := 32; i < 64; i++ {
		if got[i] != 0 {
			t.Errorf("zero group: x[%d] → %g", i, got[i])
		}
	}
}

func TestInt8Knob(t *testing.T) {
	a1 := mustParse(t, "r2f0u2s1w8a1")
	if a1.A != 1 || a1.ID() != "r2f0u2s1w8a1" {
		t.Fatalf("parse a1: %+v %s", a1, a1.ID())
	}
	for _, f := range variants.Families() {
		name := f.Format().Name()
		int8 := name != "bf16" && name != "f16"
		step := f.Format().BlockWeights()
		acts := f.Activations()
		if int8 && (len(acts) != 2 || acts[0] != 0 || acts[1] != 1) || !int8 && (len(acts) != 1 || acts[0] != 0) {
			t.Errorf("%s: Activations() = %v", name, acts)
		}
		if f.Class(withA(a1, 0)) != variants.Exact {
			t.Errorf("%s: a=0 class %s", name, f.Class(withA(a1, 0)))
		}
		src0, err := f.Source(withA(a1, 0))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(src0, "#define GEMV_A 0\n") {
			t.Errorf("%s: a=0 source lacks GEMV_A 0", name)
		}
		if !int8 {
			if _, err := f.Source(a1); err == nil || !strings.Contains(err.Error(), "no activation path a=1 (accepted: 0)") {
				t.Errorf("%s Source(a1) = %v", name, err)
			}
			if err := f.Gate(a1, 64, 4096); err == nil {
				t.Errorf("%s: gate accepted a=1", name)
			}
			continue
		}
		if f.Class(a1) != variants.Tolerance {
			t.Errorf("%s: a=1 class %s", name, f.Class(a1))
		}
		if b := f.ErrorBound(a1); b != 2e-2 {
			t.Errorf("%s: a=1 bound %g", name, b)
		}
		if b := f.ErrorBound(withA(a1, 0)); b != map[string]float64{"affine4": 2e-3}[name] && b != 1e-5 {
			t.Errorf("%s: a=0 bound %g", name, b)
		}
		src, err := f.Source(a1)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(src, "#define GEMV_A 1\n") || src == src0 {
			t.Errorf("%s: a=1 source lacks GEMV_A 1", name)
		}
		// affine4 packs weights 2b and 2b+1 in byte b: its int8 x is staged
		// even values first, then odd ones.
		if want := fmt.Sprintf("#define GEMV_XQ_EVENODD %d\n", map[bool]int{true: 1}[name == "affine4"]); !strings.Contains(src, want) {
			t.Errorf("%s: a=1 source lacks %q", name, want)
		}
		if err := f.Gate(a1, 37, step); err != nil {
			t.Errorf("%s Gate(a1, 37x%d) = %v", name, step, err)
		}
		l1a1 := mustParse(t, "r4f0u2s1w4l1a1")
		if err := f.Gate(l1a1, 4096, 14336); err != nil {
			t.Errorf("%s Gate(%s) = %v", name, l1a1, err)
		}
		s0 := mustParse(t, "r2f0u2s0w8a1")
		for _, err := range []error{f.Gate(s0, 64, 4096), func() error { _, err := f.Source(s0); return err }()} {
			if err == nil || !strings.Contains(err.Error(), "a=1 stages int8 activations in shared memory: needs s ≥ 1") {
				t.Errorf("%s %s: %v", name, s0, err)
			}
		}
		if err := f.Gate(a1, 8, step+16); err == nil || !strings.Contains(err.Error(), "multiple of") {
			t.Errorf("%s Gate(a1, 8x%d) = %v", name, step+16, err)
		}
		// 48 bytes per group of 32 x: 32 int8, f32 scale, int32 sum, 8
		// bytes of padding; the K-quants: 16 more per chunk of two groups.
		chunk := f.ChunkWeights()
		for _, cols := range []int{256, 4096, 14336} {
			want := cols / 32 * 48
			if chunk == 64 {
				want = cols / 64 * 112
			}
			l := f.Launch(a1, 100, cols)
			if l.SharedBytes != uint32(want) || l.Grid[0] != 7 || l.Block[0] != 256 {
				t.Errorf("%s Launch(a1, 100x%d) = %+v, want smem %d grid 7 block 256", name, cols, l, want)
			}
		}
		if got := f.Launch(withA(a1, 0), 100, 4096).SharedBytes; got != uint32(4096*4+4096/chunk*16) {
			t.Errorf("%s a=0 s=1 smem %d changed", name, got)
		}
	}
	// The space offers a=1 only where the family does, and never with s=0.
	lim, _ := space.LimitsFor("sm_90")
	for _, f := range variants.Families() {
		n := 0
		for _, p := range spaceFor(f, lim) {
			if p.A == 1 {
				n++
				if p.S == 0 {
					t.Errorf("%s: space holds %s", f.Format().Name(), p)
				}
			}
		}
		if (n > 0) != (len(f.Activations()) > 1) {
			t.Errorf("%s: %d a=1 variants in the space", f.Format().Name(), n)
		}
	}
}

func withA(p space.Params, a int) space.Params {
	p.A = a
	return p
}
