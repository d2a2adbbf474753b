package tuner

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gemvtune/gemvtune/internal/gpu"
)

// ceilingSource holds two streaming reads. read_ceiling: every thread
// reads 16-byte words in a grid-stride loop, several in flight, and folds
// them so the compiler keeps the loads; its GB/s on a buffer far larger
// than L2 is the device's read ceiling, the yardstick for every variant's
// GB/s. chain_read is the read launched as a stage of a decode chain
// (Chain's read graphs), where most stages read 10-70 MB: every pass of
// its loop issues a thread's next 8 words at once, out-of-range ones
// predicated off, so even a stage one pass covers has all its loads in
// flight together. With wait set it calls griddepcontrol.wait before its
// loads, as every GEMV does before its loads (an s=3 GEMV prefetches a
// kilobyte of each first row to L2 before it); with x set every block
// then reads xn words of x, as a GEMV stages its x (an L2 hit) after the
// wait; with early set its first pass's loads are issued before the wait;
// with y set it then writes yn values to y, the stage's output, so that
// the next stage finds its x in L2 as it does after a GEMV (the
// attribution's reads): nonzero normal floats of either sign, since an x
// of zeros takes a branch no GEMV's output does (an int8 group whose amax
// is 0 skips its reciprocal). It lets the next kernel launch once its
// loads are done, as the GEMVs do after their last row group.
const ceilingSource = `
extern "C" __global__ void read_ceiling(const uint4* __restrict__ p, unsigned n, unsigned* out) {
    unsigned acc = 0;
    const unsigned stride = gridDim.x * blockDim.x;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 7 * stride < n; i += 8 * stride) {
        uint4 v[8];
#pragma unroll
        for (int k = 0; k < 8; k++) v[k] = __ldg(p + i + k * stride);
#pragma unroll
        for (int k = 0; k < 8; k++) acc ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;
    }
    for (; i < n; i += stride) { uint4 a = __ldg(p + i); acc ^= a.x ^ a.y ^ a.z ^ a.w; }
    if (acc == 0x9e3779b9u) out[0] = acc;
}
// A stand-in for a GEMV's output j: +-[0.5, 1), varying with j.
__device__ __forceinline__ float chain_read_y(unsigned j) {
    const unsigned h = j * 2654435761u;
    return __uint_as_float(0x3f000000u | (h & 0x80000000u) | (h >> 9));
}
extern "C" __global__ void chain_read(const uint4* __restrict__ p, unsigned n, unsigned* out, int wait, int early,
                                      const uint4* x, unsigned xn, float* y, unsigned yn) {
    const unsigned stride = gridDim.x * blockDim.x;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    uint4 v[8];
#define CHAIN_READ_PASS                                                                                  \
    _Pragma("unroll") for (int k = 0; k < 8; k++)                                                         \
        v[k] = i + k * stride < n ? __ldg(p + i + k * stride) : make_uint4(0, 0, 0, 0)
    if (early) CHAIN_READ_PASS;
#if __CUDA_ARCH__ >= 900
    if (wait) asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    unsigned acc = 0;
    if (x)
        for (unsigned j = threadIdx.x; j < xn; j += blockDim.x) { uint4 a = __ldcg(x + j); acc ^= a.x ^ a.y ^ a.z ^ a.w; }
    for (; i < n; i += 8 * stride, early = 0) {
        if (!early) CHAIN_READ_PASS;
#pragma unroll
        for (int k = 0; k < 8; k++) acc ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;
    }
    for (unsigned j = blockIdx.x * blockDim.x + threadIdx.x; j < yn; j += stride) y[j] = chain_read_y(j);
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
    if (acc == 0x9e3779b9u) out[0] = acc;
}
`

// readID names, among a job's measurements, the streaming-read kernel run
// over the job's own weight copies (Decision.ReadUS) with launch
// readLaunchConfigs[k], as readID@k: not a variant ID.
const readID = "read"

// readLaunchConfigs are the streaming read's launches, {blocks per SM,
// threads per block}: the ceiling is the best of them over 1 GiB, and a
// job's same-bytes read the best of them over its own bytes. The best
// launch for 1 GiB is not the best for a few MB: a grid that covers a
// small matrix in one pass issues every load at once, a smaller one
// loads some twice in a row. Taking the read with the ceiling's launch
// made the same-bytes read of q4_0 1024x4096 (2.4 MB) 2.06 µs in one
// `autotune bench` and 2.44 µs in the next on one H200 (docs/results.md,
// "thirteenth lease").
var readLaunchConfigs = [][2]int{{1, 1024}, {2, 1024}, {2, 512}, {4, 512}, {8, 256}, {16, 128}, {32, 256}}

// readLaunchID is the measurement ID of the same-bytes read with launch
// readLaunchConfigs[k].
func readLaunchID(k int) string { return fmt.Sprintf("%s@%d", readID, k) }

// readLaunchIndex is k for readLaunchID(k), false for any other ID.
func readLaunchIndex(id string) (int, bool) {
	v, ok := strings.CutPrefix(id, readID+"@")
	if !ok {
		return 0, false
	}
	k, err := strconv.Atoi(v)
	if err != nil || k < 0 || k >= len(readLaunchConfigs) || readLaunchID(k) != id {
		return 0, false
	}
	return k, true
}

// readLaunchConfig is readLaunchConfigs[k] on a GPU of sms SMs.
func readLaunchConfig(k, sms int) gpu.LaunchConfig {
	g := readLaunchConfigs[k]
	return gpu.LaunchConfig{Grid: [3]uint32{uint32(sms * g[0]), 1, 1}, Block: [3]uint32{uint32(g[1]), 1, 1}}
}

// measureCeiling times the streaming read over 1 GiB (well past 4 × L2)
// with each of readLaunchConfigs and returns the best median GB/s. The
// module (cubin, ceilingSource's) is loaded on the first call and stays
// loaded for the same-bytes read of each job (readLaunches) and the
// chain's reads.
func (w *worker) measureCeiling(cubin []byte) (float64, error) {
	const bytes = 1 << 30
	var best float64
	err := w.dev.Do(func(c *gpu.Ctx) error {
		if w.ceilingMod == 0 {
			mod, err := c.LoadModule(cubin)
			if err != nil {
				return err
			}
			fn, err := c.Function(mod, "read_ceiling")
			if err != nil {
				_ = c.UnloadModule(mod)
				return err
			}
			w.ceilingMod, w.ceiling = mod, fn
		}
		fn := w.ceiling
		buf, err := c.Alloc(bytes)
		if err != nil {
			return err
		}
		defer c.Free(buf)
		if err := c.Memset(buf, 0x5A, bytes); err != nil {
			return err
		}
		out, err := c.Alloc(4)
		if err != nil {
			return err
		}
		defer c.Free(out)
		args, err := gpu.NewArgs(buf, uint32(bytes/16), out)
		if err != nil {
			return err
		}
		e0, _ := c.NewEvent()
		e1, _ := c.NewEvent()
		defer c.DestroyEvent(e0)
		defer c.DestroyEvent(e1)
		// Warm up first, as measure does: the worker starts on a GPU that
		// may have idled at low clocks, and the first shapes' reads came
		// out slow. In the fifth session's bench, worker by worker, the
		// ceilings read 4286-4433 GB/s on one machine, the lowest first,
		// which flattered that job's % of the ceiling by 3 %.
		warmCfg := gpu.LaunchConfig{Grid: [3]uint32{uint32(w.info.SMs * 2), 1, 1}, Block: [3]uint32{1024, 1, 1}}
		// timeOne times one launch of the read with cfg between the events.
		timeOne := func(cfg gpu.LaunchConfig) (time.Duration, error) {
			if err := c.Record(e0, 0); err != nil {
				return 0, err
			}
			if err := c.Launch(fn, cfg, args); err != nil {
				return 0, err
			}
			if err := c.Record(e1, 0); err != nil {
				return 0, err
			}
			if err := c.WaitEvent(e1, roundTimeout); err != nil {
				return 0, err
			}
			return c.Elapsed(e0, e1)
		}
		for warm, n := time.Duration(0), 0; warm < minWarmup && n < 400; n++ { // about 210 reads of 1 GiB
			d, err := timeOne(warmCfg)
			if err != nil {
				return err
			}
			warm += d
		}
		for k := range readLaunchConfigs {
			cfg := readLaunchConfig(k, w.info.SMs)
			var times []float64
			for rep := 0; rep < 12; rep++ {
				d, err := timeOne(cfg)
				if err != nil {
					return err
				}
				if rep >= 2 {
					times = append(times, d.Seconds())
				}
			}
			sort.Float64s(times)
			best = max(best, bytes/times[len(times)/2]/1e9)
		}
		return nil
	})
	return best, err
}

// readLaunches returns the launches of the streaming-read kernel over each
// of the current job's raw weight copies (bytes rounded down to 16), with
// launch readLaunchConfigs[k]: how long reading exactly the job's bytes
// takes, timed like a candidate.
func (w *worker) readLaunches(c *gpu.Ctx, k int) (gpu.Function, gpu.LaunchConfig, []*gpu.Args, error) {
	s := w.shape
	if w.ceiling == 0 {
		return 0, gpu.LaunchConfig{}, nil, fmt.Errorf("read: the ceiling kernel is not loaded")
	}
	ptrs, err := w.weights(c, 0)
	if err != nil {
		return 0, gpu.LaunchConfig{}, nil, err
	}
	cfg := readLaunchConfig(k, w.info.SMs)
	cfg.Stream = s.stream
	args := make([]*gpu.Args, len(ptrs))
	for i, p := range ptrs {
		// out: the kernel writes it only on an impossible checksum; y is
		// poisoned before every verification anyway.
		if args[i], err = gpu.NewArgs(p, uint32(s.bytes/16), s.y); err != nil {
			return 0, gpu.LaunchConfig{}, nil, err
		}
	}
	return w.ceiling, cfg, args, nil
}
