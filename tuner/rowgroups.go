package tuner

import (
	"sort"

	"github.com/gemvtune/gemvtune/space"
)

// rowGroupsFor is the launch knob g that fits p's grid into one wave of
// resident blocks at this shape: the smallest g (a value of knob g) with
// ceil(ceil(rows/(R·W))/g) ≤ blocksPerSM·sms. It is 0 when the plain grid
// already fits one wave or nothing is resident.
//
// Why one wave: a variant with smem staging (s=1) stages x once per block;
// with the plain grid a large shape runs several waves of short blocks
// that each stage all of x (for a=1, quantize it) before their first
// weight byte is used. Measured on the H200 at 28672x8192 (docs/results.md),
// the one-wave g beat g = 1 by up to 30 % and came within the spread of the
// best of g ∈ {1, 2, 4, 8} for nearly every staged variant, so the tuner
// measures each staged variant at g = 1 and at this g, not at every g.
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
	gs := rowGroupValues()
	for _, g := range gs {
		if (groups+g-1)/g <= wave {
			return g
		}
	}
	return gs[len(gs)-1]
}

// rowGroupValues is knob g's values above 1, ascending.
func rowGroupValues() []int {
	var out []int
	for _, k := range space.Knobs {
		if k.Letter != "g" {
			continue
		}
		for _, v := range k.Values {
			if v > 1 {
				out = append(out, v)
			}
		}
	}
	sort.Ints(out)
	return out
}
