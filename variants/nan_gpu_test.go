package variants_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/variants"
)

// TestNaNXOnGPU plants one NaN, then one infinity, at a random position of
// x and runs each family's bigSample (both activation paths) on a K-tail
// shape and 1024x4096: with a NaN every y must be NaN, with an infinity
// every y non-finite, as the float64 reference would have it (the int8
// staging reduces its groups' amax with a NaN-propagating max for this).
func TestNaNXOnGPU(t *testing.T) {
	dev := openDevice(t)
	info := dev.Info()
	lim := info.Limits()
	src := deviceCubins(t, info.Arch)
	poisons := []struct {
		v    float32
		ok   func(float32) bool
		want string
	}{
		{float32(math.NaN()), func(y float32) bool { return y != y }, "NaN"},
		{float32(math.Inf(1)), func(y float32) bool { return math.IsNaN(float64(y)) || math.IsInf(float64(y), 0) }, "non-finite"},
	}
	for fi, f := range variants.Families() {
		t.Run(f.Format().Name(), func(t *testing.T) {
			bs, err := src.build(f, bigSample(f))
			if err != nil {
				t.Fatal(err)
			}
			for si, sh := range shapesFor(f) {
				if sh.name != "k-tail" && sh.name != "1024x4096" {
					continue
				}
				t.Run(sh.name, func(t *testing.T) {
					seed := uint64(5000*(fi+1) + si)
					c := newCase(t, dev, f, sh.rows, sh.cols, seed)
					defer c.free(dev)
					rng := rand.New(rand.NewPCG(seed, 3))
					for _, pz := range poisons {
						x := append([]float32(nil), c.xf...)
						at := rng.IntN(len(x))
						x[at] = pz.v
						if err := dev.CopyHtoD(c.x, gpu.Bytes(x)); err != nil {
							t.Fatal(err)
						}
						checked := 0
						for _, b := range bs {
							y, ok := runBuilt(t, dev, f, lim, b, c, nil)
							if !ok {
								continue
							}
							for i, yi := range y {
								if !pz.ok(yi) {
									t.Errorf("%s: x[%d] = %v, y[%d] = %v, want %s", b.p.ID(), at, pz.v, i, yi, pz.want)
									break
								}
							}
							checked++
						}
						if checked == 0 {
							t.Fatalf("no variant of the sample runs at %dx%d", sh.rows, sh.cols)
						}
						t.Logf("%s %dx%d: %d variants give %s rows for x[%d] = %v", f.Format().Name(), sh.rows, sh.cols, checked, pz.want, at, pz.v)
					}
				})
			}
		})
	}
}
