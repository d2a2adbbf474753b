package tuner

import (
	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/variants"
)

// pinStep is the step pinnedShared raises shared memory by: the
// granularity in which an SM allocates it.
const pinStep = 256

// pinnedShared is the dynamic shared memory at which an SM can hold no
// more of l's blocks than the grid's even share, ceil(blocks / SMs), or
// l.SharedBytes where it already cannot (a grid of several waves, or one
// whose blocks fill every slot) or where no amount allowed would do it.
//
// Launched plainly, a grid starts on an idle GPU and the block scheduler
// spreads a one-wave grid one block per SM. Launched with PDL, its blocks
// become resident as the kernel before it frees SMs, and an SM that frees
// early takes as many as fit: a persistent grid of one block per SM where
// two fit then runs some SMs at twice the work. Padding shared memory so
// that only the even share fits keeps the plain launch's spread.
//
// limit is the function's dynamic shared memory limit, raised (never
// lowered) as the search needs; it is where the caller keeps it.
func pinnedShared(c *gpu.Ctx, fn gpu.Function, l variants.Launch, info gpu.Info, limit *int) (uint32, error) {
	threads := int(l.Block[0] * l.Block[1] * l.Block[2])
	return pinSearch(l, info, func(s int) (int, error) {
		if s > info.SmemPerBlock && s > *limit {
			if err := c.SetMaxDynamicShared(fn, s); err != nil {
				return 0, err
			}
			*limit = s
		}
		return c.Occupancy(fn, threads, s)
	})
}

// pinSearch is pinnedShared over fits, the resident blocks per SM at s
// bytes of dynamic shared memory.
func pinSearch(l variants.Launch, info gpu.Info, fits func(s int) (int, error)) (uint32, error) {
	share := evenShare(l, info.SMs)
	if share == 0 {
		return l.SharedBytes, nil
	}
	n, err := fits(int(l.SharedBytes))
	if err != nil || n <= share {
		return l.SharedBytes, err
	}
	// share+1 blocks fit below SmemPerSM/(share+1) minus what each block
	// reserves besides (1 KiB on sm_80 and newer), so the search starts a
	// little under that.
	start := max(int(l.SharedBytes), (info.SmemPerSM/(share+1)-2048)/pinStep*pinStep)
	for s := start; s <= info.SmemPerBlockOptin; s += pinStep {
		n, err := fits(s)
		if err != nil {
			return l.SharedBytes, err
		}
		if n >= 1 && n <= share {
			return uint32(s), nil
		}
	}
	return l.SharedBytes, nil
}

// evenShare is l's grid's even share of blocks per SM on a GPU of sms
// SMs, ceil(blocks / sms); 0 when either is not positive.
func evenShare(l variants.Launch, sms int) int {
	blocks := int(l.Grid[0] * l.Grid[1] * l.Grid[2])
	if sms <= 0 || blocks <= 0 {
		return 0
	}
	return (blocks + sms - 1) / sms
}
