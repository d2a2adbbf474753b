package tuner

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"

	"golang.org/x/sync/errgroup"

	"github.com/gemvtune/gemvtune/variants"
)

// jobData is the fresh random input of one (format, shape): raw weight
// bytes quantized from random f32 weights, a random activation vector, and
// the float64 reference output. Nothing is ever zero-filled.
type jobData struct {
	raw []byte
	x   []float32
	ref []float64
}

// makeJobData draws weights uniformly in [-1, 1) (with a few rows scaled up
// so scales differ by orders of magnitude) and x in [-1, 1), then quantizes
// and computes the reference in parallel bands of rows, each copied into
// place plane by plane (variants.PlaneRowBytes: affine4 has three planes).
func makeJobData(f variants.Format, rows, cols int, seed int64) (*jobData, error) {
	n, err := f.Bytes(rows, cols)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
	x := make([]float32, cols)
	for i := range x {
		x[i] = float32(rng.Float64()*2 - 1)
	}
	planes, err := variants.PlaneRowBytes(f, cols)
	if err != nil {
		return nil, err
	}
	bands := min(runtime.GOMAXPROCS(0), rows)
	raw := make([]byte, n)
	ref := make([]float64, rows)
	var g errgroup.Group
	for b := 0; b < bands; b++ {
		r0, r1 := rows*b/bands, rows*(b+1)/bands
		if r0 == r1 {
			continue
		}
		bandSeed := rng.Uint64()
		g.Go(func() error {
			brng := rand.New(rand.NewPCG(bandSeed, uint64(r0)))
			w := make([]float32, (r1-r0)*cols)
			for r := 0; r < r1-r0; r++ {
				scale := float32(1)
				if brng.IntN(8) == 0 {
					scale = float32(math.Pow(10, brng.Float64()*4-2)) // 0.01 … 100
				}
				row := w[r*cols : (r+1)*cols]
				for i := range row {
					row[i] = scale * float32(brng.Float64()*2-1)
				}
			}
			q, err := f.Quantize(w, r1-r0, cols)
			if err != nil {
				return err
			}
			y, err := f.Reference(q, x, r1-r0, cols)
			if err != nil {
				return err
			}
			// Plane p of the band goes after plane p of the rows above it.
			var at, from int
			for _, pb := range planes {
				copy(raw[at+r0*pb:at+r1*pb], q[from:from+(r1-r0)*pb])
				at += rows * pb
				from += (r1 - r0) * pb
			}
			copy(ref[r0:], y)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("making %s %dx%d test data: %w", f.Name(), rows, cols, err)
	}
	return &jobData{raw: raw, x: x, ref: ref}, nil
}

// relL2 returns ‖y − ref‖ / ‖ref‖ and whether every y is finite.
func relL2(y []float32, ref []float64) (float64, bool) {
	var num, den float64
	finite := true
	for i, v := range y {
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			finite = false
			continue
		}
		d := f - ref[i]
		num += d * d
		den += ref[i] * ref[i]
	}
	if den == 0 {
		return math.Sqrt(num), finite
	}
	return math.Sqrt(num / den), finite
}
