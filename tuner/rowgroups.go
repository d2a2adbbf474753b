package tuner

import (
	"slices"

	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/space"
)

// rowGroupsFor is the launch knob g that fits p's grid into one wave of
// resident blocks at this shape: g = ceil(groups / (blocksPerSM·sms)) for
// groups = ceil(rows/(R·W)), so the grid ceil(groups/g) is as large as one
// wave allows. It is 0 when the plain grid already fits one wave or
// nothing is resident, and at most space.MaxRowGroups.
//
// Why one wave: a variant with smem staging (s=1) stages x once per block;
// with the plain grid a large shape runs several waves of short blocks
// that each stage all of x (for a=1, quantize it) before their first
// weight byte is used. Measured on the H200 at 28672x8192 (docs/results.md),
// staging x a second time cost 2-3 µs of a 35 µs kernel, and the one-wave g
// came within the spread of the best g tried for nearly every staged
// variant, so the tuner measures each staged variant at g = 1 and at this
// g, not at every g.
//
// A weight ring (s=2, s=3) gets a second twin: the one wave at one block
// per SM, where more would fit (rowGroupTwins). Its bytes in flight grow
// with the resident blocks, and on the H200 at 28672x8192 bulk-copy
// variants ran 1.0-1.3 % faster with one block per SM than with the two
// that fit (q4_0 r2f0u4s3w16l2a1: 33.31 µs at g=7, 128 blocks, against
// 33.75 at g=4, 224 blocks; affine4's 33.30 against 33.65;
// docs/results.md, "Kernels v7").
func rowGroupsFor(p space.Params, rows, blocksPerSM, sms int) int {
	wave := blocksPerSM * sms
	perGroup := p.R * p.W
	if wave <= 0 || perGroup <= 0 || rows <= 0 {
		return 0
	}
	groups := (rows + perGroup - 1) / perGroup
	if groups <= wave {
		return 0
	}
	return min((groups+wave-1)/wave, space.MaxRowGroups)
}

// rowGroupTwins lists the values of knob g a staged variant is measured at
// besides its plain grid: rowGroupsFor at the resident blocks per SM and,
// for a weight ring (s ≥ 2) that could have more than one, at one block
// per SM. Zeros and repeats are left out.
func rowGroupTwins(p space.Params, rows, blocksPerSM, sms int) []int {
	var gs []int
	if g := rowGroupsFor(p, rows, blocksPerSM, sms); g > 0 {
		gs = append(gs, g)
	}
	if p.S >= 2 && blocksPerSM > 1 {
		if g := rowGroupsFor(p, rows, 1, sms); g > 0 && (len(gs) == 0 || g != gs[0]) {
			gs = append(gs, g)
		}
	}
	return gs
}

// evenSplits are the even splits (knob b) the tuner measures besides ps:
// every bulk-copy variant (s=3) without a floor, over one block per SM of
// each GPU size in grids. Where more blocks are resident the worker adds
// the wave of them as a twin (launchTwins). Against the row-group walk's
// one-wave grid, which leaves SMs idle where the groups do not divide
// evenly (q4_0's gate_up, 28672x4096 at r1 w16: 1792 groups on 256 blocks,
// 224 rows on each of 128 SMs), the even split gives each of the 132 SMs
// 217 or 218 rows; on the H200 that took gate_up's share of the token from
// 18 µs over its reads to none (docs/results.md, "twenty-fifth lease").
func evenSplits(ps []space.Params, grids []int) []space.Params {
	var out []space.Params
	for _, p := range ps {
		if p.S != 3 || p.F != 0 || p.G != 0 || p.B != 0 {
			continue
		}
		for _, b := range grids {
			if b > 0 && b <= space.MaxEvenSplit {
				p.B = b
				out = append(out, p)
			}
		}
	}
	return out
}

// smCounts is the distinct SM counts of infos, in order.
func smCounts(infos []gpu.Info) []int {
	var out []int
	for _, in := range infos {
		if !slices.Contains(out, in.SMs) {
			out = append(out, in.SMs)
		}
	}
	return out
}

// launchTwins lists the variants p is measured as besides itself, with
// the same cubin and their own grid: a row-group walk's one-wave twins
// (knob g, rowGroupTwins), and for an even split over one block per SM
// where more are resident, the split over all of them.
func launchTwins(p space.Params, rows, blocksPerSM, sms int) []space.Params {
	var out []space.Params
	switch {
	case p.S == 0 || p.G != 0:
	case p.B == 0:
		for _, g := range rowGroupTwins(p, rows, blocksPerSM, sms) {
			t := p
			t.G = g
			out = append(out, t)
		}
	case p.B == sms && blocksPerSM > 1 && blocksPerSM*sms <= space.MaxEvenSplit:
		t := p
		t.B = blocksPerSM * sms
		out = append(out, t)
	}
	return out
}
