package variants_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

var (
	devOnce sync.Once
	theDev  *gpu.Device
	devErr  error
)

// openDevice returns GPU 0 (opened once for the package) or skips.
func openDevice(t *testing.T) *gpu.Device {
	t.Helper()
	devOnce.Do(func() { theDev, devErr = gpu.Open(0) })
	if devErr != nil {
		t.Skipf("skipping: no usable GPU (%v)", devErr)
	}
	return theDev
}

// deviceCubins picks NVRTC for the device's arch, else $GEMV_TEST_CUBINS.
func deviceCubins(t *testing.T, arch gpu.Arch) *cubinSource {
	t.Helper()
	if libs, err := gpu.FindNVRTC(); err == nil {
		if n, err := gpu.ChooseNVRTC(libs, arch); err == nil {
			return &cubinSource{n: n, arch: arch}
		}
	}
	if dir := os.Getenv(envCubins); dir != "" {
		return &cubinSource{dir: dir, arch: arch}
	}
	t.Skipf("skipping: no NVRTC for %s and %s not set", arch, envCubins)
	return nil
}

// testShape is one shape of the GPU test and the variants it runs.
type testShape struct {
	name       string
	rows, cols int
	big        bool // run only bigSample
}

// shapesFor covers every gate arm of f: rows not a multiple of r*w, the
// smallest legal cols, a K tail (chunks per row not a multiple of 32*u for
// any u), and the model shapes.
func shapesFor(f variants.Family) []testShape {
	step := 1 // the smallest cols stock's gate accepts
	for f.Gate(space.Stock, 1, step) != nil {
		step++
	}
	chunksPerStep := step / f.ChunkWeights()
	tailCols := step * (293 / chunksPerStep) // 293 or 292 or 292 chunks: never a multiple of 32*u
	shapes := []testShape{
		{"smallest-cols", 37, step, false},
		{"k-tail", 67, tailCols, false},
		{"1024x4096", 1024, 4096, false},
		{"4096x14336", 4096, 14336, false},
		{"28672x8192", 28672, 8192, true},
	}
	// A repacked layout that needs more cols (q8_0's tiles, the interleaved
	// q4_K and affine4) gets its own smallest cols, with a row tail.
	for _, l := range f.Layouts() {
		for cols := step; cols <= 4096; cols += step {
			if f.Gate(space.Params{R: 1, U: 1, W: 8, L: l}, 37, cols) == nil {
				if cols != step {
					shapes = append(shapes, testShape{fmt.Sprintf("smallest-cols-l%d", l), 37, cols, false})
				}
				break
			}
		}
	}
	return shapes
}

// gpuCase is the device data of one shape: raw and repacked weights, x, y.
type gpuCase struct {
	rows, cols int
	w          map[int]gpu.DevPtr // by layout
	x, y       gpu.DevPtr
	ref        []float64
	bytes      int64
	raw        []byte    // raw weights (for the int8 model)
	xf         []float32 // x on the host
}

func (c *gpuCase) free(dev *gpu.Device) {
	for _, p := range c.w {
		dev.Free(p)
	}
	dev.Free(c.x)
	dev.Free(c.y)
}

// newCase quantizes random weights, computes the float64 reference and
// uploads every layout of f, x, and a y buffer.
func newCase(t *testing.T, dev *gpu.Device, f variants.Family, rows, cols int, seed uint64) *gpuCase {
	t.Helper()
	fm := f.Format()
	raw := randomQuantized(t, fm, rows, cols, seed)
	rng := rand.New(rand.NewPCG(seed, 77))
	x := randomFloats(rng, cols)
	ref, err := fm.Reference(raw, x, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	c := &gpuCase{rows: rows, cols: cols, w: map[int]gpu.DevPtr{}, ref: ref, bytes: int64(len(raw)), raw: raw, xf: x}
	upload := func(b []byte) gpu.DevPtr {
		p, err := dev.Alloc(len(b))
		if err == nil {
			err = dev.CopyHtoD(p, b)
		}
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, l := range f.Layouts() {
		b, err := f.Repack(raw, rows, cols, l)
		if errors.Is(err, variants.ErrShape) && f.Gate(space.Params{R: 1, U: 1, W: 8, L: l}, rows, cols) != nil {
			continue // no variant of this layout passes the gate here (l=2 needs cols % 256 == 0)
		}
		if err != nil {
			t.Fatal(err)
		}
		c.w[l] = upload(b)
	}
	c.x = upload(gpu.Bytes(x))
	y, err := dev.Alloc(rows * 4)
	if err != nil {
		t.Fatal(err)
	}
	c.y = y
	return c
}

// loaded is one variant's module on the device.
type loaded struct {
	p   space.Params
	m   gpu.Module
	fn  gpu.Function
	inf gpu.FuncInfo
}

// loadVariant loads b's module and kernel (the caller unloads v.m).
func loadVariant(t *testing.T, dev *gpu.Device, f variants.Family, b built) loaded {
	t.Helper()
	v := loaded{p: b.p}
	err := dev.Do(func(ctx *gpu.Ctx) error {
		var err error
		if v.m, err = ctx.LoadModule(b.cubin); err != nil {
			return err
		}
		if v.fn, err = ctx.Function(v.m, variants.KernelName); err != nil {
			return err
		}
		v.inf, err = ctx.FuncInfo(v.fn)
		return err
	})
	if err != nil {
		t.Fatalf("%s %s: loading: %v", f.Format().Name(), b.p.ID(), err)
	}
	return v
}

// run launches v on c with y poisoned by NaN and returns y; with lx, in
// the late-x chain (lateX.chain), else plainly.
func run(dev *gpu.Device, f variants.Family, v loaded, c *gpuCase, lx *lateX) ([]float32, error) {
	l := f.Launch(v.p, c.rows, c.cols)
	y := make([]float32, c.rows)
	err := dev.Do(func(ctx *gpu.Ctx) error {
		if err := ctx.Memset(c.y, 0xFF, c.rows*4); err != nil { // 0xFFFFFFFF is a NaN
			return err
		}
		if l.SharedBytes > 48*1024 {
			if err := ctx.SetMaxDynamicShared(v.fn, int(l.SharedBytes)); err != nil {
				return err
			}
		}
		args, err := gpu.NewArgs(c.w[v.p.L], c.x, c.y, int32(c.rows), int32(c.cols))
		if err != nil {
			return err
		}
		if lx != nil {
			err = lx.chain(ctx, c, v.fn, l, args)
		} else if err = ctx.Launch(v.fn, gpu.LaunchConfig{Grid: l.Grid, Block: l.Block, SharedBytes: l.SharedBytes}, args); err == nil {
			err = ctx.WaitStream(0, 10*time.Second)
		}
		if err != nil {
			return err
		}
		return ctx.CopyDtoH(gpu.Bytes(y), c.y)
	})
	if err != nil {
		if lx != nil {
			return nil, fmt.Errorf("%s after a late x: %w", v.p.ID(), err)
		}
		return nil, fmt.Errorf("%s: %w", v.p.ID(), err)
	}
	return y, nil
}

// runBuilt loads b, runs it on c as run does (lx: in the late-x chain)
// and unloads it; ok is false, and nothing runs, where b's gate or the
// device's limits refuse c's shape.
func runBuilt(t *testing.T, dev *gpu.Device, f variants.Family, lim space.Limits, b built, c *gpuCase, lx *lateX) (y []float32, ok bool) {
	t.Helper()
	l := f.Launch(b.p, c.rows, c.cols)
	if f.Gate(b.p, c.rows, c.cols) != nil || space.Check(b.p, lim, int(l.SharedBytes)) != nil {
		return nil, false
	}
	v := loadVariant(t, dev, f, b)
	y, err := run(dev, f, v, c, lx)
	dev.Do(func(ctx *gpu.Ctx) error { return ctx.UnloadModule(v.m) })
	if err != nil {
		t.Fatal(err)
	}
	return y, true
}

// TestFamiliesOnGPU runs, for every family, every variant that passes its
// gate (-short: a sample) on fresh random data with NaN-poisoned outputs and
// checks it is within ErrorBound of the float64 reference and bit-identical
// to the family's v1 (a=0) or to int8Base (a=1, int8 activations).
func TestFamiliesOnGPU(t *testing.T) {
	dev := openDevice(t)
	info := dev.Info()
	lim := info.Limits()
	src := deviceCubins(t, info.Arch)
	t.Logf("device %s", info)
	for i, f := range variants.Families() {
		t.Run(f.Format().Name(), func(t *testing.T) {
			testFamily(t, dev, src, lim, f, uint64(i+1))
		})
	}
}

func testFamily(t *testing.T, dev *gpu.Device, src *cubinSource, lim space.Limits, f variants.Family, seed uint64) {
	name := f.Format().Name()
	ps := gpuVariants(f, lim)
	start := time.Now()
	bs, err := src.build(f, ps)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d variants built in %v", name, len(bs), time.Since(start).Round(time.Millisecond))
	mods := make(map[space.Params]loaded, len(bs))
	spills := 0
	for _, b := range bs {
		v := loadVariant(t, dev, f, b)
		if v.inf.LocalBytes > 0 {
			spills++
		}
		mods[b.p] = v
	}
	defer dev.Do(func(ctx *gpu.Ctx) error {
		for _, v := range mods {
			ctx.UnloadModule(v.m)
		}
		return nil
	})
	t.Logf("%s: %d of %d variants use local memory (spills)", name, spills, len(mods))
	big := map[space.Params]bool{}
	for _, p := range bigSample(f) {
		big[p] = true
	}
	for si, sh := range shapesFor(f) {
		t.Run(sh.name, func(t *testing.T) {
			c := newCase(t, dev, f, sh.rows, sh.cols, seed*100+uint64(si))
			defer c.free(dev)
			stock := mods[space.Stock]
			want, err := run(dev, f, stock, c, nil)
			if err != nil {
				t.Fatal(err)
			}
			e := variants.RelL2(want, c.ref)
			if !(e <= f.ErrorBound(space.Stock)) {
				t.Fatalf("v1: relative L2 error %.3g vs reference > bound %.3g", e, f.ErrorBound(space.Stock))
			}
			// The a=1 baseline (int8 activations), when the family has one.
			var want8 []float32
			e8 := math.NaN()
			if b, ok := mods[int8Base]; ok {
				if want8, err = run(dev, f, b, c, nil); err != nil {
					t.Fatal(err)
				}
				e8 = variants.RelL2(want8, c.ref)
				if !(e8 <= f.ErrorBound(int8Base)) {
					t.Fatalf("%s: relative L2 error %.3g vs reference > bound %.3g", int8Base.ID(), e8, f.ErrorBound(int8Base))
				}
				// Against the host model of int8 activations (same
				// quantization of x; only f32 accumulation differs), the
				// error must be that of the f32 path: this catches a wrong
				// rounding or pairing the loose bound would hide.
				if !sh.big {
					y8 := make([]float64, len(want8))
					for i, v := range want8 {
						y8[i] = float64(v)
					}
					em := relL2f64(y8, int8Model(t, f.Format(), c.raw, c.xf, c.rows, c.cols))
					if !(em <= f.ErrorBound(space.Stock)) {
						t.Fatalf("%s: relative L2 error %.3g vs the int8 model > %.3g", int8Base.ID(), em, f.ErrorBound(space.Stock))
					}
					t.Logf("%s: relative L2 error %.3g vs the int8 model", int8Base.ID(), em)
				}
			}
			maxErr, ran, failed := e, 0, 0
			maxErr8, ran8, failed8 := e8, 0, 0
			for _, v := range mods {
				if v.p.IsStock() || v.p == int8Base || (sh.big && !big[v.p]) {
					continue
				}
				if f.Gate(v.p, sh.rows, sh.cols) != nil ||
					space.Check(v.p, lim, int(f.Launch(v.p, sh.rows, sh.cols).SharedBytes)) != nil {
					continue
				}
				base, ref, nRan, nFailed, mErr := "v1", want, &ran, &failed, &maxErr
				if v.p.A == 1 {
					base, ref, nRan, nFailed, mErr = int8Base.ID(), want8, &ran8, &failed8, &maxErr8
				}
				*nRan++
				y, err := run(dev, f, v, c, nil)
				if err != nil {
					var ce *gpu.CUDAError
					if errors.As(err, &ce) && gpu.IsSticky(err) {
						t.Fatalf("%v (context poisoned)", err)
					}
					t.Errorf("%v", err)
					*nFailed++
					continue
				}
				e := variants.RelL2(y, c.ref)
				if !(e <= f.ErrorBound(v.p)) {
					if *nFailed++; *nFailed <= 5 {
						t.Errorf("%s: relative L2 error %.3g > bound %.3g", v.p.ID(), e, f.ErrorBound(v.p))
					}
					continue
				}
				if i, ok := firstDiff(y, ref); !ok {
					if *nFailed++; *nFailed <= 5 {
						t.Errorf("%s: y[%d] = %08x, %s gave %08x (not bit-identical)", v.p.ID(), i,
							math.Float32bits(y[i]), base, math.Float32bits(ref[i]))
					}
					continue
				}
				*mErr = max(*mErr, e)
			}
			t.Logf("%s %dx%d: %d variants bit-identical to v1 (%d failed); rel L2 error %.3g (bound %.3g)",
				name, sh.rows, sh.cols, ran-failed, failed, maxErr, f.ErrorBound(space.Stock))
			if want8 != nil {
				t.Logf("%s %dx%d: a=1: %d variants bit-identical to %s (%d failed); rel L2 error %.3g (bound %.3g)",
					name, sh.rows, sh.cols, ran8-failed8, int8Base.ID(), failed8, maxErr8, f.ErrorBound(int8Base))
			}
			if sh.big {
				timeVariants(t, dev, f, lim, mods, c)
			}
		})
	}
}

// firstDiff returns the first index where a and b differ bitwise.
func firstDiff(a, b []float32) (int, bool) {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i, false
		}
	}
	return 0, true
}

// timeVariants logs a quick timing of the big-shape sample (CUDA events, 20
// launches after 3 warm-ups; the weights stay in L2 only partly). This is
// an indication, not the tuner's measurement.
// Like the check, it skips what the gate or the arch's limits refuse.
func timeVariants(t *testing.T, dev *gpu.Device, f variants.Family, lim space.Limits, mods map[space.Params]loaded, c *gpuCase) {
	for _, p := range bigSample(f) {
		v, ok := mods[p]
		l := f.Launch(p, c.rows, c.cols)
		if !ok || f.Gate(p, c.rows, c.cols) != nil || space.Check(p, lim, int(l.SharedBytes)) != nil {
			continue
		}
		var el time.Duration
		const n = 20
		err := dev.Do(func(ctx *gpu.Ctx) error {
			args, err := gpu.NewArgs(c.w[p.L], c.x, c.y, int32(c.rows), int32(c.cols))
			if err != nil {
				return err
			}
			cfg := gpu.LaunchConfig{Grid: l.Grid, Block: l.Block, SharedBytes: l.SharedBytes}
			for i := 0; i < 3; i++ {
				if err := ctx.Launch(v.fn, cfg, args); err != nil {
					return err
				}
			}
			e0, err := ctx.NewEvent()
			if err != nil {
				return err
			}
			defer ctx.DestroyEvent(e0)
			e1, err := ctx.NewEvent()
			if err != nil {
				return err
			}
			defer ctx.DestroyEvent(e1)
			ctx.Record(e0, 0)
			for i := 0; i < n; i++ {
				if err := ctx.Launch(v.fn, cfg, args); err != nil {
					return err
				}
			}
			ctx.Record(e1, 0)
			if err := ctx.WaitEvent(e1, 10*time.Second); err != nil {
				return err
			}
			el, err = ctx.Elapsed(e0, e1)
			return err
		})
		if err != nil {
			t.Errorf("timing %s: %v", p.ID(), err)
			continue
		}
		us := float64(el.Nanoseconds()) / 1e3 / n
		t.Logf("timing %s %s %dx%d: %.1f µs, %.0f GB/s, %d regs, %d B local",
			f.Format().Name(), p.ID(), c.rows, c.cols, us, float64(c.bytes)/us/1e3, v.inf.Registers, v.inf.LocalBytes)
	}
}
