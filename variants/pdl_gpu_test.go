package variants_test

import (
	"testing"
	"time"

	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/variants"
)

// lateSrc are the two helper kernels of the late-x check. lateWrite is the
// previous kernel of a PDL chain at its worst: it lets its dependents
// launch first thing, waits delay nanoseconds, and only then writes x
// (copying it from src). earlyRead is the control, a kernel that reads x
// before griddepcontrol.wait: it must see the decoy x held before the
// write, or the device did not overlap the two kernels and the check
// proves nothing.
const lateSrc = `
extern "C" __global__ void lateWrite(const float* src, float* dst, int n, unsigned int delay) {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < delay);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) dst[i] = src[i];
}
extern "C" __global__ void earlyRead(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = 0.0f;
    if (i < n) asm volatile("ld.global.f32 %0, [%1];" : "=f"(v) : "l"(x + i));
    asm volatile("griddepcontrol.wait;" ::: "memory");
    if (i < n) out[i] = v;
}
`

// lateDelay is how long lateWrite holds x back: far longer than a block
// of any variant takes to start and read it.
const lateDelay = 200 * time.Microsecond

// lateX runs variants in a PDL chain after lateWrite, whose x is a decoy
// (-x) until lateDelay after the variant's launch: a variant that reads x
// before its griddepcontrol.wait computes with the decoy and fails the
// reference check (sm_90 and newer).
type lateX struct {
	fn, control gpu.Function
	mod         gpu.Module
	src, decoy  gpu.DevPtr // x and -x
	stream      gpu.Stream
}

// newLateX loads the helpers (lateSrc compiled: cubin) and uploads c's x
// and decoy.
func newLateX(t *testing.T, dev *gpu.Device, cubin []byte, c *gpuCase) *lateX {
	t.Helper()
	neg := make([]float32, len(c.xf))
	for i, v := range c.xf {
		neg[i] = -v
	}
	lx := &lateX{}
	err := dev.Do(func(ctx *gpu.Ctx) error {
		var err error
		if lx.mod, err = ctx.LoadModule(cubin); err != nil {
			return err
		}
		if lx.fn, err = ctx.Function(lx.mod, "lateWrite"); err != nil {
			return err
		}
		if lx.control, err = ctx.Function(lx.mod, "earlyRead"); err != nil {
			return err
		}
		if lx.src, err = ctx.Alloc(4 * len(c.xf)); err != nil {
			return err
		}
		if err := ctx.CopyHtoD(lx.src, gpu.Bytes(c.xf)); err != nil {
			return err
		}
		if lx.decoy, err = ctx.Alloc(4 * len(neg)); err != nil {
			return err
		}
		if err := ctx.CopyHtoD(lx.decoy, gpu.Bytes(neg)); err != nil {
			return err
		}
		lx.stream, err = ctx.NewStream()
		return err
	})
	if err != nil {
		t.Fatalf("late-x check: %v", err)
	}
	return lx
}

func (lx *lateX) free(dev *gpu.Device) {
	dev.Do(func(ctx *gpu.Ctx) error {
		ctx.DestroyStream(lx.stream)
		ctx.Free(lx.src)
		ctx.Free(lx.decoy)
		return ctx.UnloadModule(lx.mod)
	})
}

// chain puts the decoy into c.x, waits for the default stream, launches
// lateWrite and then fn (grid, block, shared bytes, args) with PDL on the
// check's stream, and waits for it.
func (lx *lateX) chain(ctx *gpu.Ctx, c *gpuCase, fn gpu.Function, l variants.Launch, args *gpu.Args) error {
	n := len(c.xf)
	if err := ctx.CopyDtoD(c.x, lx.decoy, 4*n); err != nil {
		return err
	}
	// The check's stream does not wait for the default one, where the
	// decoy copy and the caller's poisoning of y were queued.
	if err := ctx.WaitStream(0, 10*time.Second); err != nil {
		return err
	}
	wa, err := lateWriteArgs(lx.src, c.x, n)
	if err != nil {
		return err
	}
	if err := ctx.Launch(lx.fn, gpu.LaunchConfig{Grid: [3]uint32{1}, Block: [3]uint32{256}, Stream: lx.stream}, wa); err != nil {
		return err
	}
	cfg := gpu.LaunchConfig{Grid: l.Grid, Block: l.Block, SharedBytes: l.SharedBytes, Stream: lx.stream, PDL: true}
	if err := ctx.Launch(fn, cfg, args); err != nil {
		return err
	}
	return ctx.WaitStream(lx.stream, 10*time.Second)
}

// lateWriteArgs are lateWrite's arguments: copy n floats from src to dst
// lateDelay after it starts (nanoseconds, a 32-bit kernel argument).
func lateWriteArgs(src, dst gpu.DevPtr, n int) (*gpu.Args, error) {
	return gpu.NewArgs(src, dst, int32(n), uint32(lateDelay.Nanoseconds()))
}

// controlSeesDecoy runs the control kernel in the chain and reports
// whether it read the decoy: the device overlaps the kernels, so a GEMV
// that read x early would read the decoy too.
func (lx *lateX) controlSeesDecoy(dev *gpu.Device, c *gpuCase) (bool, error) {
	n := len(c.xf)
	got := make([]float32, n)
	err := dev.Do(func(ctx *gpu.Ctx) error {
		o, err := ctx.Alloc(4 * n)
		if err != nil {
			return err
		}
		defer ctx.Free(o)
		args, err := gpu.NewArgs(c.x, o, int32(n))
		if err != nil {
			return err
		}
		l := variants.Launch{Grid: [3]uint32{uint32((n + 255) / 256)}, Block: [3]uint32{256}}
		if err := lx.chain(ctx, c, lx.control, l, args); err != nil {
			return err
		}
		return ctx.CopyDtoH(gpu.Bytes(got), o)
	})
	if err != nil {
		return false, err
	}
	decoy := 0
	for i, v := range got {
		if c.xf[i] != 0 && v == -c.xf[i] {
			decoy++
		}
	}
	return decoy > 0, nil
}

// TestLateXOnGPU checks that no variant reads x before griddepcontrol.wait:
// every family's variants of the GPU test's big sample (every staging,
// layout and activation path) run in a PDL chain after a kernel that writes x
// 200 µs after they launched, on a gate-walking shape and a model shape,
// and must match the float64 reference of the real x. The control kernel
// that does read x early must see the decoy, which proves the chain
// overlaps on this device.
func TestLateXOnGPU(t *testing.T) {
	dev := openDevice(t)
	info := dev.Info()
	lim := info.Limits()
	if info.Arch.Major < 9 {
		t.Skipf("skipping: PDL needs sm_90 or newer, device is %v", info.Arch)
	}
	src := deviceCubins(t, info.Arch)
	if src.n == nil {
		t.Skip("skipping: the late-x helpers need NVRTC on this machine")
	}
	helpers, log, err := src.n.Compile(lateSrc, "late.cu", src.arch)
	if err != nil {
		t.Fatalf("late-x helpers: %v\n%s", err, log)
	}
	for fi, f := range variants.Families() {
		t.Run(f.Format().Name(), func(t *testing.T) {
			ps := bigSample(f)
			bs, err := src.build(f, ps)
			if err != nil {
				t.Fatal(err)
			}
			for si, sh := range shapesFor(f) {
				if sh.name != "k-tail" && sh.name != "4096x14336" {
					continue
				}
				t.Run(sh.name, func(t *testing.T) {
					c := newCase(t, dev, f, sh.rows, sh.cols, uint64(1000*(fi+1)+si))
					defer c.free(dev)
					lx := newLateX(t, dev, helpers, c)
					defer lx.free(dev)
					if ok, err := lx.controlSeesDecoy(dev, c); err != nil {
						t.Fatal(err)
					} else if !ok {
						t.Fatalf("the control kernel never saw the decoy x: the device did not overlap the chain, so the check proves nothing")
					}
					checked := 0
					for _, b := range bs {
						y, ok := runBuilt(t, dev, f, lim, b, c, lx)
						if !ok {
							continue
						}
						if e := variants.RelL2(y, c.ref); !(e <= f.ErrorBound(b.p)) {
							t.Errorf("%s: relative L2 error %.3g > bound %.3g after a late x: it read x before griddepcontrol.wait", b.p.ID(), e, f.ErrorBound(b.p))
						}
						checked++
					}
					if checked == 0 {
						t.Fatalf("no variant of the sample runs at %dx%d", sh.rows, sh.cols)
					}
					t.Logf("%s %dx%d: %d variants correct after a late x", f.Format().Name(), sh.rows, sh.cols, checked)
				})
			}
		})
	}
}

// TestLateWriteArgs runs without a GPU: the late-x check's launch
// arguments are of types a kernel launch takes.
func TestLateWriteArgs(t *testing.T) {
	a, err := lateWriteArgs(1, 2, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if a.Len() != 4 {
		t.Fatalf("lateWrite takes 4 arguments, got %d", a.Len())
	}
}
