package tuner

import (
	"fmt"
	"slices"

	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

// searchContext is what the search rules know of a job: the format, its
// family's offer, the arch.
type searchContext struct {
	format   string
	repacked bool       // the family has a layout other than raw
	bulk     bool       // the family has s=3 and the compiler can build it
	arch     space.Arch // the zero Arch when unknown: every rule keeps all
}

// searchRule is a measured reason not to search part of the space. The
// rules are kept apart from space.Check's hard constraints (what cannot
// run at all): a variant a rule skips is still in the space, so the GPU
// tests cover it, an engine may force it, and `autotune bench --variants`
// measures it. Stock is never skipped: it is every decision's baseline.
type searchRule struct {
	// skip reports whether the rule skips p, and why in words.
	skip func(c searchContext, p space.Params) (bool, string)
}

// minRingWarps is the fewest warps per block the weight rings (s=2, s=3)
// are searched with.
const minRingWarps = 8

// searchRules are the rules of the search, each with the measurement
// behind it (docs/results.md; the full tunes of llama-3-8b on the H200).
var searchRules = []searchRule{
	// The raw layout where the family has a repacked one: the same bytes
	// repacked beat the best raw variant at all 28 quantized jobs of the
	// fifth session's tune (run11), by 0.5-58 %; stock stays raw.
	{func(c searchContext, p space.Params) (bool, string) {
		return p.L == 0 && c.repacked, fmt.Sprintf("%s l=0 (raw bytes) is not searched: its repacked layouts beat it at every llama-3-8b shape on the H200 (docs/results.md); stock stays raw", c.format)
	}},
	// q8_0's tiles of 8 blocks with s≤2: 0.6-9.5 % behind its planes (l=1)
	// at every shape since the planes got the weight ring. s=3 has l=2
	// only (a warp step is four whole tiles).
	{func(c searchContext, p space.Params) (bool, string) {
		return c.format == "q8_0" && p.L == 2 && p.S <= 2, fmt.Sprintf("q8_0 l=2 (tiles of 8 blocks) with s=%d is not searched: 0.6-9.5 %% behind l=1 at every llama-3-8b shape on the H200 (docs/results.md)", p.S)
	}},
	// The rings with 2 or 4 warps: in the fourth session's tunes (run9,
	// run10) the best of them was 10-51 % slower than the job's best, and
	// they added 39 % to the candidates.
	{func(c searchContext, p space.Params) (bool, string) {
		return p.S >= 2 && p.W < minRingWarps, fmt.Sprintf("s=%d with w=%d < %d: few warps per block to share the staged x, and on the H200 never within 10 %% of the best (docs/results.md)", p.S, p.W, minRingWarps)
	}},
	// Where the bulk ring runs, the 4-bit formats' s=0 and s=1 never won:
	// s=3 took 18 of 21 jobs of run13 and s=2 the rest, s=1 was 1.3-31 %
	// behind and s=0 41-124 %. q8_0's s=1 won 4 of its 7 jobs before q8_0
	// had s=3 and none of one tune's after: too little to drop it.
	{func(c searchContext, p space.Params) (bool, string) {
		return !slices.Contains([]string{"bf16", "q8_0"}, c.format) && c.bulk && c.arch.Major >= 9 && p.S <= 1, fmt.Sprintf("%s s=%d is not searched on sm_90 and newer: the weight rings (s=2, s=3) beat it at every llama-3-8b shape on the H200 (docs/results.md); stock stays", c.format, p.S)
	}},
}

// unsearched says why the search rules skip p in context c, "" when none
// does.
func unsearched(c searchContext, p space.Params) string {
	if p == space.Stock {
		return ""
	}
	for _, r := range searchRules {
		if skip, why := r.skip(c, p); skip {
			return why
		}
	}
	return ""
}

// searchSpace is the space the tuner searches for fam: space.Enumerate
// (smemFor as there) less what the search rules skip, which joins the
// exclusions with its reason. bulkBuilds says whether the compiler can
// build s=3 (compilerLacks): where it cannot, the stagings s=3 displaces
// are searched again, so an old NVRTC on sm_90 still gets s=1 and s=0.
func searchSpace(fam variants.Family, lim space.Limits, smemFor func(space.Params) int, bulkBuilds bool) (ok []space.Params, excluded []space.Exclusion) {
	all, excluded := space.Enumerate(lim, variants.KnobsOf(fam), smemFor)
	c := searchContext{format: fam.Format().Name(), repacked: len(fam.Layouts()) > 1,
		bulk: bulkBuilds && slices.Contains(fam.Stagings(), 3)}
	c.arch, _ = space.ParseArch(lim.Arch) // the zero Arch (unknown) keeps every staging
	for _, p := range all {
		if reason := unsearched(c, p); reason != "" {
			excluded = append(excluded, space.Exclusion{Params: p, Reason: reason})
			continue
		}
		ok = append(ok, p)
	}
	return ok, excluded
}
