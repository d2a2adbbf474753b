package gpu_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/internal/gpu/gputest"
)

// pdlSrc: produce writes a slow function of (i, round) into buf; consume,
// launched with PDL after it, may start early but waits
// (griddepcontrol.wait) before it reads buf. produce waits too, before it
// overwrites what the previous consume reads.
const pdlSrc = `
extern "C" __global__ void produce(unsigned* buf, unsigned n, unsigned round) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;");
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = i * 2654435761u + round;
    for (int k = 0; k < 4000; k++) v = v * 1664525u + 1013904223u;
    if (i < n) buf[i] = v;
}
extern "C" __global__ void consume(const unsigned* buf, unsigned* out, unsigned n) {
    asm volatile("griddepcontrol.launch_dependents;");
    asm volatile("griddepcontrol.wait;" ::: "memory");
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] ^= buf[i];
}
`

// pdlWant is what out holds after rounds produce/consume pairs from zero.
func pdlWant(n, rounds int) []uint32 {
	want := make([]uint32, n)
	for r := 0; r < rounds; r++ {
		for i := range want {
			v := uint32(i)*2654435761 + uint32(r)
			for k := 0; k < 4000; k++ {
				v = v*1664525 + 1013904223
			}
			want[i] ^= v
		}
	}
	return want
}

// TestPDLChain launches produce/consume pairs with programmatic dependent
// launch, on a stream and captured into a graph, and checks every consume
// saw its own produce's values: the launch attribute and the
// griddepcontrol pair keep the order where it matters.
func TestPDLChain(t *testing.T) {
	d := gputest.Device(t)
	if d.Info().Arch.Major < 9 {
		t.Skipf("skipping: programmatic dependent launch needs sm_90 or newer, device is %v", d.Info().Arch)
	}
	n := gputest.NVRTC(t, d.Info().Arch)
	cubin, log, err := n.Compile(pdlSrc, "pdl.cu", d.Info().Arch)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	const elems, rounds = 1 << 16, 6
	want := pdlWant(elems, rounds)
	err = d.Do(func(c *gpu.Ctx) error {
		mod, err := c.LoadModule(cubin)
		if err != nil {
			return err
		}
		defer c.UnloadModule(mod)
		produce, err := c.Function(mod, "produce")
		if err != nil {
			return err
		}
		consume, err := c.Function(mod, "consume")
		if err != nil {
			return err
		}
		buf, err := c.Alloc(4 * elems)
		if err != nil {
			return err
		}
		defer c.Free(buf)
		out, err := c.Alloc(4 * elems)
		if err != nil {
			return err
		}
		defer c.Free(out)
		s, err := c.NewStream()
		if err != nil {
			return err
		}
		defer c.DestroyStream(s)
		cfg := gpu.LaunchConfig{Grid: [3]uint32{elems / 256}, Block: [3]uint32{256}, Stream: s, PDL: true}
		consumeArgs, err := gpu.NewArgs(buf, out, uint32(elems))
		if err != nil {
			return err
		}
		enqueue := func() error {
			for r := 0; r < rounds; r++ {
				a, err := gpu.NewArgs(buf, uint32(elems), uint32(r))
				if err != nil {
					return err
				}
				if err := c.Launch(produce, cfg, a); err != nil {
					return err
				}
				if err := c.Launch(consume, cfg, consumeArgs); err != nil {
					return err
				}
			}
			return nil
		}
		check := func(how string) error {
			got := make([]uint32, elems)
			if err := c.CopyDtoH(gpu.Bytes(got), out); err != nil {
				return err
			}
			for i := range got {
				if got[i] != want[i] {
					return fmt.Errorf("%s: out[%d] = %#x, want %#x", how, i, got[i], want[i])
				}
			}
			return nil
		}
		// zero clears p and waits: Memset runs on the legacy stream, which
		// the non-blocking stream s does not wait for.
		zero := func(p gpu.DevPtr) error {
			if err := c.Memset(p, 0, 4*elems); err != nil {
				return err
			}
			return c.Synchronize()
		}
		// On the stream.
		if err := zero(out); err != nil {
			return err
		}
		if err := enqueue(); err != nil {
			return err
		}
		if err := c.WaitStream(s, 10*time.Second); err != nil {
			return err
		}
		if err := check("stream"); err != nil {
			return err
		}
		// Captured into a graph.
		if err := zero(out); err != nil {
			return err
		}
		if err := c.BeginCapture(s); err != nil {
			return err
		}
		if err := enqueue(); err != nil {
			c.EndCapture(s)
			return err
		}
		g, err := c.EndCapture(s)
		if err != nil {
			return err
		}
		defer c.DestroyGraph(g)
		exec, err := c.Instantiate(g)
		if err != nil {
			return err
		}
		defer c.DestroyGraphExec(exec)
		if err := c.LaunchGraph(exec, s); err != nil {
			return err
		}
		if err := c.WaitStream(s, 10*time.Second); err != nil {
			return err
		}
		return check("graph")
	})
	if err != nil {
		t.Fatal(err)
	}
}
