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
