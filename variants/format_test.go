package variants_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/variants"
)

func mustFormat(t testing.TB, name string) variants.Format {
	t.Helper()
	f, err := variants.FormatOf(name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// randWeights returns n non-zero weights: mostly Gaussian with a per-row
// scale, plus rare outliers, as real weight matrices have.
func randWeights(rng *rand.Rand, n int) []float32 {
	w := make([]float32, n)
	scale := 0.02 + rng.Float64()
	for i := range w {
		v := float32(0)
		for v == 0 {
			v = float32(rng.NormFloat64() * scale)
			if rng.IntN(500) == 0 {
				v *= 8
			}
		}
		w[i] = v
	}
	return w
}

// randX returns a non-zero activation vector.
func randX(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		for x[i] == 0 {
			x[i] = float32(rng.Float64()*2 - 1)
		}
	}
	return x
}

func TestFormatsRegistered(t *testing.T) {
	want := map[string]int{"q4_0": 32, "q8_0": 32, "q4_K": 256, "q5_K": 256, "q6_K": 256, "affine4": 64, "bf16": 1, "f16": 1}
	fs := variants.Formats()
	if len(fs) != len(variants.FormatNames) {
		t.Fatalf("Formats() has %d formats, want %d", len(fs), len(variants.FormatNames))
	}
	for i, f := range fs {
		if f.Name() != variants.FormatNames[i] {
			t.Errorf("Formats()[%d] = %s, want %s", i, f.Name(), variants.FormatNames[i])
		}
		if f.BlockWeights() != want[f.Name()] {
			t.Errorf("%s: BlockWeights = %d, want %d", f.Name(), f.BlockWeights(), want[f.Name()])
		}
	}
}

func TestBytes(t *testing.T) {
	cases := []struct {
		format     string
		rows, cols int
		want       int64
	}{
		{"q4_0", 4096, 4096, 4096 * 128 * 18},
		{"q4_0", 1, 32, 18},
		{"q4_0", 28672, 8192, 28672 * 256 * 18},
		{"q8_0", 4096, 14336, 4096 * 448 * 34},
		{"q8_0", 3, 64, 3 * 2 * 34},
		{"q4_K", 4096, 4096, 4096 * 16 * 144},
		{"q4_K", 128256, 4096, 128256 * 16 * 144},
		{"q4_K", 1, 256, 144},
		{"affine4", 4096, 4096, 4096*4096/2 + 2*(4096*4096/64)*2},
		{"affine4", 1, 64, 32 + 2 + 2},
		{"bf16", 1024, 4096, 1024 * 4096 * 2},
		{"bf16", 1, 1, 2},
	}
	for _, c := range cases {
		got, err := mustFormat(t, c.format).Bytes(c.rows, c.cols)
		if err != nil || got != c.want {
			t.Errorf("%s.Bytes(%d, %d) = %d, %v; want %d", c.format, c.rows, c.cols, got, err, c.want)
		}
	}
}

func TestBytesErrors(t *testing.T) {
	cases := []struct {
		format     string
		rows, cols int
	}{
		{"q4_0", 0, 32}, {"q4_0", -1, 32}, {"q4_0", 1, 0}, {"q4_0", 1, 48}, {"q4_0", 1, -32},
		{"q8_0", 4, 16}, {"q8_0", math.MaxInt / 2, 1 << 20},
		{"q4_K", 1, 128}, {"q4_K", 1, 4096 + 32}, {"q4_K", math.MaxInt / 100, 256 * 1000},
		{"affine4", 1, 32}, {"affine4", 1, 96}, {"affine4", math.MaxInt / 8, 64 * 8},
		{"bf16", 0, 1}, {"bf16", 1, -1}, {"bf16", math.MaxInt / 2, 4},
	}
	for _, c := range cases {
		f := mustFormat(t, c.format)
		n, err := f.Bytes(c.rows, c.cols)
		if !errors.Is(err, variants.ErrShape) {
			t.Errorf("%s.Bytes(%d, %d) = %d, %v; want ErrShape", c.format, c.rows, c.cols, n, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), c.format+": ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s.Bytes error %q: want one line starting with the format name", c.format, err)
		}
		// Every other entry point rejects the shape the same way.
		if _, err := f.Quantize(make([]float32, 64), c.rows, c.cols); !errors.Is(err, variants.ErrShape) {
			t.Errorf("%s.Quantize(%dx%d) error = %v, want ErrShape", c.format, c.rows, c.cols, err)
		}
		if _, err := f.Dequantize(make([]byte, 64), c.rows, c.cols); !errors.Is(err, variants.ErrShape) {
			t.Errorf("%s.Dequantize(%dx%d) error = %v, want ErrShape", c.format, c.rows, c.cols, err)
		}
		if _, err := f.Reference(make([]byte, 64), make([]float32, 64), c.rows, c.cols); !errors.Is(err, variants.ErrShape) {
			t.Errorf("%s.Reference(%dx%d) error = %v, want ErrShape", c.format, c.rows, c.cols, err)
		}
	}
}

func TestBufferErrors(t *testing.T) {
	for _, f := range variants.Formats() {
		rows, cols := 3, 2*f.BlockWeights()
		if f.BlockWeights() == 1 {
			cols = 8
		}
		n, err := f.Bytes(rows, cols)
		if err != nil {
			t.Fatal(err)
		}
		b, err := f.Quantize(randWeights(rand.New(rand.NewPCG(5, 6)), rows*cols), rows, cols)
		if err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name string
			call func() error
			want string
		}{
			{"quantize short w", func() error { _, err := f.Quantize(make([]float32, rows*cols-1), rows, cols); return err }, "want"},
			{"quantize long w", func() error { _, err := f.Quantize(make([]float32, rows*cols+1), rows, cols); return err }, "want"},
			{"dequantize short b", func() error { _, err := f.Dequantize(b[:n-1], rows, cols); return err }, "have " + itoa(n-1) + ", want " + itoa(n)},
			{"dequantize long b", func() error { _, err := f.Dequantize(append(b, 0), rows, cols); return err }, "have " + itoa(n+1) + ", want " + itoa(n)},
			{"reference short b", func() error { _, err := f.Reference(b[:n-1], make([]float32, cols), rows, cols); return err }, "want " + itoa(n)},
			{"reference short x", func() error { _, err := f.Reference(b, make([]float32, cols-1), rows, cols); return err }, "want " + itoa(int64(cols))},
			{"reference long x", func() error { _, err := f.Reference(b, make([]float32, cols+1), rows, cols); return err }, "want " + itoa(int64(cols))},
		}
		for _, c := range cases {
			err := c.call()
			if !errors.Is(err, variants.ErrBuffer) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), f.Name()) {
				t.Errorf("%s: %s: error %v, want ErrBuffer naming the format and %q", f.Name(), c.name, err, c.want)
			}
		}
	}
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	var d []byte
	for ; n > 0; n /= 10 {
		d = append([]byte{byte('0' + n%10)}, d...)
	}
	return string(d)
}

func TestQuantizeNonFinite(t *testing.T) {
	for _, name := range []string{"q4_0", "q8_0", "q4_K", "q5_K", "q6_K", "affine4"} {
		f := mustFormat(t, name)
		cols := f.BlockWeights()
		for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
			w := randWeights(rand.New(rand.NewPCG(7, 8)), 2*cols)
			w[cols+3] = bad
			_, err := f.Quantize(w, 2, cols)
			if !errors.Is(err, variants.ErrNonFinite) || !strings.Contains(err.Error(), "[1,3]") {
				t.Errorf("%s: Quantize with %v at [1,3]: error %v, want ErrNonFinite naming [1,3]", name, bad, err)
			}
		}
	}
	// bf16 keeps NaN and Inf.
	w := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1}
	f := mustFormat(t, "bf16")
	b, err := f.Quantize(w, 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.Dequantize(b, 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(float64(got[0])) || !math.IsInf(float64(got[1]), 1) || !math.IsInf(float64(got[2]), -1) || got[3] != 1 {
		t.Errorf("bf16 round trip of NaN, +Inf, -Inf, 1 = %v", got)
	}
}

// roundTripBound returns the largest error a format may make on weight i of
// w, given the decoded bytes b (scales are read back from them).
type boundFunc func(w []float32, b []byte, rows, cols, i int) float64

func TestRoundTrip(t *testing.T) {
	bounds := map[string]boundFunc{
		"q4_0": q4_0Bound, "q8_0": q8_0Bound, "q4_K": q4KBound, "q5_K": q5KBound, "q6_K": q6KBound,
		"affine4": affine4Bound, "bf16": bf16Bound, "f16": f16Bound,
	}
	// The RMS of the error relative to the RMS of the weights, for these
	// Gaussian-with-outliers weights and at least 10^4 of them, must stay
	// below these (measured: q4_0 0.103, q8_0 0.0065, q4_K 0.086, q5_K 0.042, q6_K 0.021,
	// affine4 0.103, bf16 0.0017).
	rmsBound := map[string]float64{"q4_0": 0.12, "q8_0": 0.008, "q4_K": 0.1, "q5_K": 0.05, "q6_K": 0.025, "affine4": 0.12, "bf16": 0.0025, "f16": 0.0004}
	shapes := [][2]int{{1, 256}, {3, 512}, {17, 1024}, {64, 4096}}
	for _, f := range variants.Formats() {
		rng := rand.New(rand.NewPCG(11, uint64(len(f.Name()))))
		for _, s := range shapes {
			rows, cols := s[0], s[1]
			w := randWeights(rng, rows*cols)
			b, err := f.Quantize(w, rows, cols)
			if err != nil {
				t.Fatalf("%s %dx%d: %v", f.Name(), rows, cols, err)
			}
			if n, _ := f.Bytes(rows, cols); int64(len(b)) != n {
				t.Fatalf("%s %dx%d: Quantize gave %d bytes, Bytes says %d", f.Name(), rows, cols, len(b), n)
			}
			got, err := f.Dequantize(b, rows, cols)
			if err != nil {
				t.Fatal(err)
			}
			var se, sw float64
			for i := range w {
				e := math.Abs(float64(got[i]) - float64(w[i]))
				if bound := bounds[f.Name()](w, b, rows, cols, i); !(e <= bound) {
					t.Fatalf("%s %dx%d: weight [%d,%d] = %v decoded %v: error %g > bound %g",
						f.Name(), rows, cols, i/cols, i%cols, w[i], got[i], e, bound)
				}
				se += e * e
				sw += float64(w[i]) * float64(w[i])
			}
			rel := math.Sqrt(se / sw)
			t.Logf("%s %dx%d: RMS error %.4f of the weights' RMS", f.Name(), rows, cols, rel)
			if rows*cols >= 10000 && rel > rmsBound[f.Name()] {
				t.Errorf("%s %dx%d: RMS error %.4f of the weights' RMS, want <= %.4f", f.Name(), rows, cols, rel, rmsBound[f.Name()])
			}
			// Quantizing the decoded weights must give them back exactly
			// for the formats whose decoded grid is a fixed point.
			if f.Name() == "bf16" || f.Name() == "q8_0" {
				b2, err := f.Quantize(got, rows, cols)
				if err != nil {
					t.Fatal(err)
				}
				got2, _ := f.Dequantize(b2, rows, cols)
				for i := range got {
					if got2[i] != got[i] {
						t.Fatalf("%s: requantizing decoded weight %d: %v became %v", f.Name(), i, got[i], got2[i])
					}
				}
			}
		}
	}
}

func TestReference(t *testing.T) {
	for _, f := range variants.Formats() {
		rng := rand.New(rand.NewPCG(13, uint64(len(f.Name()))))
		for _, s := range [][2]int{{1, 256}, {5, 768}, {300, 1024}} {
			rows, cols := s[0], s[1]
			w := randWeights(rng, rows*cols)
			x := randX(rng, cols)
			b, err := f.Quantize(w, rows, cols)
			if err != nil {
				t.Fatal(err)
			}
			y, err := f.Reference(b, x, rows, cols)
			if err != nil {
				t.Fatal(err)
			}
			deq, err := f.Dequantize(b, rows, cols)
			if err != nil {
				t.Fatal(err)
			}
			for r := 0; r < rows; r++ {
				var want, orig, mag float64
				for c := 0; c < cols; c++ {
					want += float64(deq[r*cols+c]) * float64(x[c])
					orig += float64(w[r*cols+c]) * float64(x[c])
					mag += math.Abs(float64(w[r*cols+c]) * float64(x[c]))
				}
				if y[r] != want {
					t.Fatalf("%s %dx%d: Reference row %d = %v, direct float64 sum = %v", f.Name(), rows, cols, r, y[r], want)
				}
				// And the quantized GEMV stays near the unquantized one.
				if math.Abs(y[r]-orig) > 0.2*mag {
					t.Fatalf("%s %dx%d: row %d: quantized %v vs unquantized %v (sum |w*x| %v)", f.Name(), rows, cols, r, y[r], orig, mag)
				}
			}
		}
	}
}

// TestPlaneRowBytes checks that every format's planes add up to its bytes
// at several row counts, that affine4 has its three planes in MLX order,
// and that a bad column count is refused as by Bytes.
func TestPlaneRowBytes(t *testing.T) {
	for _, f := range variants.Formats() {
		cols := 4 * f.BlockWeights() * 64 // a multiple of every block and of 64
		pb, err := variants.PlaneRowBytes(f, cols)
		if err != nil {
			t.Fatalf("%s: %v", f.Name(), err)
		}
		for _, rows := range []int{1, 7, 300} {
			want, _ := f.Bytes(rows, cols)
			got := 0
			for _, b := range pb {
				got += rows * b
			}
			if int64(got) != want {
				t.Errorf("%s %dx%d: planes %v add up to %d bytes, Bytes says %d", f.Name(), rows, cols, pb, got, want)
			}
		}
		if f.Name() == "affine4" && (len(pb) != 3 || pb[0] != cols/2 || pb[1] != cols/32 || pb[2] != cols/32) {
			t.Errorf("affine4 planes %v, want [%d %d %d] (weights, scales, biases)", pb, cols/2, cols/32, cols/32)
		}
		if f.Name() != "affine4" && len(pb) != 1 {
			t.Errorf("%s: %d planes, want 1", f.Name(), len(pb))
		}
		if _, err := variants.PlaneRowBytes(f, f.BlockWeights()+1); err == nil && f.BlockWeights() > 1 {
			t.Errorf("%s: cols %d not a multiple of %d accepted", f.Name(), f.BlockWeights()+1, f.BlockWeights())
		}
	}
}
