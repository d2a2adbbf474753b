package gpu_test

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/internal/gpu/gputest"
)

func TestDeviceInfo(t *testing.T) {
	d := gputest.Device(t)
	i := d.Info()
	t.Logf("%s %s; regs/SM %d, regs/block %d, smem/SM %d, smem/block %d (opt-in %d), threads/SM %d, blocks/SM %d, clock %d kHz, mem clock %d kHz, bus %d bits, peak %.0f GB/s",
		i, i.UUID, i.RegsPerSM, i.RegsPerBlock, i.SmemPerSM, i.SmemPerBlock, i.SmemPerBlockOptin,
		i.MaxThreadsPerSM, i.MaxBlocksPerSM, i.ClockKHz, i.MemClockKHz, i.MemBusBits, i.PeakGBps())
	if i.Name == "" || !strings.HasPrefix(i.UUID, "GPU-") || len(i.UUID) != 40 || i.Arch.Major < 3 ||
		i.SMs <= 0 || i.L2Bytes <= 0 || i.RegsPerSM <= 0 || i.SmemPerBlockOptin < i.SmemPerBlock ||
		i.MaxThreadsPerBlock < 64 || i.MaxBlocksPerSM <= 0 || i.WarpSize != 32 || i.TotalMem == 0 {
		t.Errorf("implausible device info %+v", i)
	}
	v, err := gpu.DriverVersion()
	if err != nil || v.Major < 11 {
		t.Errorf("DriverVersion = %v, %v", v, err)
	}
	probed, err := gpu.Probe()
	if err != nil || len(probed) == 0 || probed[0] != i {
		t.Errorf("Probe()[0] = %+v, %v; want %+v", probed, err, i)
	}

	n, err := gpu.OpenNVML()
	if err != nil {
		t.Logf("NVML: %v", err)
		return
	}
	defer n.Close()
	nd, err := n.Device(i.UUID)
	if err != nil {
		t.Fatalf("NVML does not know CUDA's UUID: %v", err)
	}
	ni, err := nd.Info()
	if err != nil {
		t.Fatal(err)
	}
	c, err := nd.Clocks()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("NVML: %+v, peak %.0f GB/s; clocks %s", ni, ni.PeakGBps(), c)
	if ni.UUID != i.UUID || ni.Arch != i.Arch || ni.Name != i.Name {
		t.Errorf("NVML says %s %s %s, CUDA says %s %s %s", ni.Name, ni.UUID, ni.Arch, i.Name, i.UUID, i.Arch)
	}
	if c.SMMHz <= 0 || c.MemMHz <= 0 || c.TempC <= 0 || c.At.IsZero() {
		t.Errorf("implausible clocks %+v", c)
	}
}

func TestDoStaysOnOneThread(t *testing.T) {
	d := gputest.Device(t)
	var tids []int
	for range 20 {
		if err := d.Do(func(*gpu.Ctx) error { tids = append(tids, syscall.Gettid()); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range tids {
		if id != tids[0] {
			t.Fatalf("Do ran on threads %v, want one", tids)
		}
	}
}

func TestDeviceErrors(t *testing.T) {
	d := gputest.Device(t)
	var stale *gpu.Ctx
	err := d.Do(func(c *gpu.Ctx) error {
		stale = c
		return c.Free(gpu.DevPtr(0xdead0000)) // never allocated
	})
	var ce *gpu.CUDAError
	if !errors.As(err, &ce) || ce.Func != "cuMemFree_v2" || !strings.HasPrefix(ce.Name, "CUDA_ERROR_") || ce.Sticky() {
		t.Errorf("freeing a bogus pointer: %v; want a non-sticky CUDAError from cuMemFree_v2", err)
	} else {
		t.Logf("driver-named error: %v", err)
	}
	if _, err := stale.Alloc(16); !errors.Is(err, gpu.ErrCtxOutsideDo) {
		t.Errorf("Ctx used after Do: %v, want ErrCtxOutsideDo", err)
	}
	if _, err := d.Alloc(1 << 60); !errors.As(err, &ce) || ce.Func != "cuMemAlloc_v2" ||
		(ce.Code != gpu.CodeOutOfMemory && ce.Code != gpu.CodeInvalidValue) {
		t.Errorf("alloc 1 EiB: %v, want cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)", err)
	} else {
		t.Logf("alloc 1 EiB: %v", err)
	}
	func() {
		defer func() {
			if v := recover(); v != "boom" {
				t.Errorf("panic in Do: recovered %v, want boom", v)
			}
		}()
		d.Do(func(*gpu.Ctx) error { panic("boom") })
	}()
	if err := d.Do(func(*gpu.Ctx) error { return nil }); err != nil {
		t.Errorf("Do after a panic: %v", err)
	}
	if _, err := gpu.Open(1 << 20); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("Open(huge) = %v", err)
	}
	d2, err := gpu.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	d2.Close()
	if err := d2.Do(func(*gpu.Ctx) error { return nil }); !errors.Is(err, gpu.ErrClosed) {
		t.Errorf("Do after Close = %v, want ErrClosed", err)
	}
	d3, err := gpu.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d3.Close()
	if err := d3.Do(func(*gpu.Ctx) error { runtime.Goexit(); return nil }); err == nil || !strings.Contains(err.Error(), "Goexit") {
		t.Errorf("Goexit inside Do = %v, want an error naming it", err)
	}
	if err := d3.Do(func(*gpu.Ctx) error { return nil }); !errors.Is(err, gpu.ErrClosed) {
		t.Errorf("Do after Goexit = %v, want ErrClosed", err)
	}
}

// gemvBufs holds one GEMV problem on the device.
type gemvBufs struct {
	rows, cols int
	w, x       []float32
	alpha      float32
	dW, dX, dY gpu.DevPtr
	args       *gpu.Args
	cfg        gpu.LaunchConfig
}

// newGEMV uploads random W and x (never zero) and allocates y. It runs
// inside Do, so it returns errors rather than calling t.Fatal.
func newGEMV(t *testing.T, c *gpu.Ctx, rows, cols int) (*gemvBufs, error) {
	r := gputest.Rand(t)
	g := &gemvBufs{rows: rows, cols: cols, w: gputest.Float32s(r, rows*cols), x: gputest.Float32s(r, cols), alpha: 0.75}
	var err error
	for _, a := range []struct {
		p *gpu.DevPtr
		n int
	}{{&g.dW, rows * cols * 4}, {&g.dX, cols * 4}, {&g.dY, rows * 4}} {
		if *a.p, err = c.Alloc(a.n); err != nil {
			return nil, err
		}
	}
	if err := c.CopyHtoD(g.dW, gpu.Bytes(g.w)); err != nil {
		return nil, err
	}
	if err := c.CopyHtoD(g.dX, gpu.Bytes(g.x)); err != nil {
		return nil, err
	}
	if g.args, err = gpu.NewArgs(g.dW, g.dX, g.dY, uint32(rows), int32(cols), g.alpha); err != nil {
		return nil, err
	}
	const warps = 8
	g.cfg = gpu.LaunchConfig{Grid: [3]uint32{uint32((rows + warps - 1) / warps)}, Block: [3]uint32{32 * warps}}
	return g, nil
}

// free releases the buffers.
func (g *gemvBufs) free(c *gpu.Ctx) {
	c.Free(g.dW)
	c.Free(g.dX)
	c.Free(g.dY)
}

// poison fills y with NaN on the device and waits until the copy has
// landed (a pageable copy may still be in flight when cuMemcpyHtoD returns,
// and work on a non-blocking stream does not wait for it).
func (g *gemvBufs) poison(c *gpu.Ctx) error {
	if err := c.CopyHtoD(g.dY, gpu.Bytes(gputest.NaNs(g.rows))); err != nil {
		return err
	}
	return c.Synchronize()
}

// read copies y back.
func (g *gemvBufs) read(c *gpu.Ctx) ([]float32, error) {
	y := make([]float32, g.rows)
	return y, c.CopyDtoH(gpu.Bytes(y), g.dY)
}

// launchChecked poisons y, launches f once on the default stream, waits,
// and returns y after checking it against the reference.
func (g *gemvBufs) launchChecked(t *testing.T, c *gpu.Ctx, f gpu.Function) ([]float32, error) {
	if err := g.poison(c); err != nil {
		return nil, err
	}
	if err := c.Launch(f, g.cfg, g.args); err != nil {
		return nil, err
	}
	if err := c.WaitStream(0, 10*time.Second); err != nil {
		return nil, err
	}
	y, err := g.read(c)
	if err != nil {
		return nil, err
	}
	g.check(t, y)
	return y, nil
}

// check compares y with a float64 reference, row by row, with a bound
// scaled by the sum of |terms| (f32 accumulation of cols/32 terms per lane).
func (g *gemvBufs) check(t *testing.T, y []float32) {
	t.Helper()
	bad := 0
	for i := 0; i < g.rows; i++ {
		var ref, mag float64
		for k := 0; k < g.cols; k++ {
			p := float64(g.w[i*g.cols+k]) * float64(g.x[k])
			ref += p
			mag += math.Abs(p)
		}
		ref *= float64(g.alpha)
		tol := 1e-5*mag + 1e-6
		if d := math.Abs(float64(y[i]) - ref); !(d <= tol) {
			if bad++; bad <= 5 {
				t.Errorf("y[%d] = %v, want %v ± %.2g", i, y[i], ref, tol)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d rows wrong", bad, g.rows)
	}
}

// loadKernel compiles src for the device and loads entry.
func loadKernel(t *testing.T, d *gpu.Device, src, name, entry string) gpu.Function {
	n := gputest.NVRTC(t, d.Info().Arch)
	cubin, log, err := n.Compile(src, name, d.Info().Arch)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	_, f, err := d.LoadModule(cubin, entry)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestGEMVKernel(t *testing.T) {
	d := gputest.Device(t)
	f := loadKernel(t, d, gemvSrc, "gemv.cu", "gemv_f32")
	const rows, cols = 4099, 4096 // a tail block
	err := d.Do(func(c *gpu.Ctx) error {
		fi, err := c.FuncInfo(f)
		if err != nil {
			return err
		}
		occ, err := c.Occupancy(f, 256, 0)
		if err != nil {
			return err
		}
		t.Logf("gemv_f32: %d registers, %d B local, max %d threads/block, binary sm_%d; %d blocks of 256/SM",
			fi.Registers, fi.LocalBytes, fi.MaxThreadsPerBlock, fi.BinaryVersion, occ)
		if fi.Registers <= 0 || fi.Registers > 255 || occ < 1 || occ > c.Info().MaxBlocksPerSM {
			t.Errorf("implausible registers %d or occupancy %d", fi.Registers, occ)
		}
		if fi.BinaryVersion != c.Info().Arch.Number() {
			t.Errorf("binary version %d, want %d", fi.BinaryVersion, c.Info().Arch.Number())
		}

		g, err := newGEMV(t, c, rows, cols)
		if err != nil {
			return err
		}
		defer g.free(c)
		if _, err := g.launchChecked(t, c, f); err != nil {
			return err
		}

		// Timing: many launches inside this one Do, bracketed by events.
		start, _ := c.NewEvent()
		end, _ := c.NewEvent()
		defer c.DestroyEvent(start)
		defer c.DestroyEvent(end)
		const warm, n = 20, 500
		for range warm {
			if err := c.Launch(f, g.cfg, g.args); err != nil {
				return err
			}
		}
		hostStart := time.Now()
		if err := c.Record(start, 0); err != nil {
			return err
		}
		for range n {
			if err := c.Launch(f, g.cfg, g.args); err != nil {
				return err
			}
		}
		hostLaunch := time.Since(hostStart) / n
		if err := c.Record(end, 0); err != nil {
			return err
		}
		if err := c.WaitEvent(end, 10*time.Second); err != nil {
			return err
		}
		el, err := c.Elapsed(start, end)
		if err != nil {
			return err
		}
		per := el / n
		gbps := float64(rows*cols*4) / per.Seconds() / 1e9
		t.Logf("gemv_f32 %dx%d: %v per launch on the GPU (%.0f GB/s, L2-resident in part), %v per launch on the host", rows, cols, per, gbps, hostLaunch)
		if per <= 0 {
			t.Errorf("elapsed %v for %d launches", el, n)
		}
		y, err := g.read(c)
		if err != nil {
			return err
		}
		g.check(t, y) // still right after the loop
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestGraphReplay(t *testing.T) {
	d := gputest.Device(t)
	f := loadKernel(t, d, gemvSrc, "gemv.cu", "gemv_f32")
	err := d.Do(func(c *gpu.Ctx) error {
		g, err := newGEMV(t, c, 1000, 2080)
		if err != nil {
			return err
		}
		defer g.free(c)
		direct, err := g.launchChecked(t, c, f)
		if err != nil {
			return err
		}

		s, err := c.NewStream()
		if err != nil {
			return err
		}
		defer c.DestroyStream(s)
		cfg := g.cfg
		cfg.Stream = s
		if err := c.BeginCapture(s); err != nil {
			return err
		}
		for range 10 {
			if err := c.Launch(f, cfg, g.args); err != nil {
				c.EndCapture(s)
				return err
			}
		}
		graph, err := c.EndCapture(s)
		if err != nil {
			return err
		}
		defer c.DestroyGraph(graph)
		exec, err := c.Instantiate(graph)
		if err != nil {
			return err
		}
		defer c.DestroyGraphExec(exec)

		// Change the argument buffer after capture: the graph must have
		// copied the parameters.
		if err := g.args.Set(5, float32(-99)); err != nil {
			return err
		}
		if err := g.poison(c); err != nil {
			return err
		}
		start, _ := c.NewEvent()
		end, _ := c.NewEvent()
		defer c.DestroyEvent(start)
		defer c.DestroyEvent(end)
		c.Record(start, s)
		for range 20 {
			if err := c.LaunchGraph(exec, s); err != nil {
				return err
			}
		}
		c.Record(end, s)
		if err := c.WaitStream(s, 10*time.Second); err != nil {
			return err
		}
		el, err := c.Elapsed(start, end)
		if err != nil {
			return err
		}
		t.Logf("graph of 10 launches: %v per kernel", el/200)
		replayed, err := g.read(c)
		if err != nil {
			return err
		}
		for i := range direct {
			if math.Float32bits(replayed[i]) != math.Float32bits(direct[i]) {
				return fmt.Errorf("y[%d]: graph %v, direct %v (want bit-identical)", i, replayed[i], direct[i])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestWaitTimeout(t *testing.T) {
	d := gputest.Device(t)
	f := loadKernel(t, d, spinSrc, "spin.cu", "spin")
	err := d.Do(func(c *gpu.Ctx) error {
		flag, err := c.Alloc(4)
		if err != nil {
			return err
		}
		defer c.Free(flag)
		if err := c.Memset(flag, 0, 4); err != nil {
			return err
		}
		s, err := c.NewStream()
		if err != nil {
			return err
		}
		defer c.DestroyStream(s)
		args, err := gpu.NewArgs(uint32(2000), flag) // spins 2 s, then ends
		if err != nil {
			return err
		}
		start := time.Now()
		if err := c.Launch(f, gpu.LaunchConfig{Stream: s}, args); err != nil {
			return err
		}
		err = c.WaitStream(s, 200*time.Millisecond)
		waited := time.Since(start)
		if !errors.Is(err, gpu.ErrTimeout) || waited < 200*time.Millisecond || waited > 1500*time.Millisecond {
			t.Errorf("WaitStream(200ms) on a 2 s kernel: %v after %v, want ErrTimeout after ~200ms", err, waited)
		} else {
			t.Logf("timed out as expected: %v", err)
		}
		if err := c.WaitStream(s, 20*time.Second); err != nil {
			return err // the kernel must still finish
		}
		total := time.Since(start)
		got := make([]int32, 1)
		if err := c.CopyDtoH(gpu.Bytes(got), flag); err != nil {
			return err
		}
		if got[0] != 1 || total < 1900*time.Millisecond {
			t.Errorf("spin kernel: flag %d after %v, want 1 after ≥ 2 s", got[0], total)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
