package tuner

import (
	"sort"

	"github.com/gemvtune/gemvtune/internal/gpu"
)

// ceilingSource is a plain streaming read: every thread reads 16-byte words
// in a grid-stride loop, several in flight, and folds them so the compiler
// keeps the loads. Its GB/s on a buffer far larger than L2 is the device's
// read ceiling, the yardstick for every variant's GB/s.
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
`

// measureCeiling times the streaming read over 1 GiB (well past 4 × L2)
// for a few grid and block sizes and returns the best median GB/s.
func (w *worker) measureCeiling(cubin []byte) (float64, error) {
	const bytes = 1 << 30
	var best float64
	err := w.dev.Do(func(c *gpu.Ctx) error {
		mod, err := c.LoadModule(cubin)
		if err != nil {
			return err
		}
		defer c.UnloadModule(mod)
		fn, err := c.Function(mod, "read_ceiling")
		if err != nil {
			return err
		}
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
		for _, g := range [][2]int{{1, 1024}, {2, 1024}, {2, 512}, {4, 512}, {8, 256}, {16, 128}, {32, 256}} {
			cfg := gpu.LaunchConfig{Grid: [3]uint32{uint32(w.info.SMs * g[0]), 1, 1}, Block: [3]uint32{uint32(g[1]), 1, 1}}
			var times []float64
			for rep := 0; rep < 12; rep++ {
				if err := c.Record(e0, 0); err != nil {
					return err
				}
				if err := c.Launch(fn, cfg, args); err != nil {
					return err
				}
				if err := c.Record(e1, 0); err != nil {
					return err
				}
				if err := c.WaitEvent(e1, roundTimeout); err != nil {
					return err
				}
				d, err := c.Elapsed(e0, e1)
				if err != nil {
					return err
				}
				if rep >= 2 {
					times = append(times, d.Seconds())
				}
			}
			sort.Float64s(times)
			if gbs := bytes / times[len(times)/2] / 1e9; gbs > best {
				best = gbs
			}
		}
		return nil
	})
	return best, err
}
