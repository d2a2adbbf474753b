package tuner

import (
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
