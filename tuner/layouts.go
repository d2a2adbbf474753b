package tuner

import (
	"fmt"
	"slices"

	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

// untunedLayout says why the tuner does not search variant p of the format
// called name (repacked: it has a layout other than raw), or "" when it
// does. The space (space.Enumerate) keeps every layout, so the
// GPU tests and forced variants cover them all; the search skips layouts
// that the fifth session's full tune of llama-3-8b on the H200 (run11,
// docs/results.md) never picked, which halved the compile of the formats
// that gained a repacked layout:
//   - the raw layout (l=0) where the family has a repacked one: the same
//     bytes repacked beat the best raw variant at all 28 quantized jobs,
//     by 0.5-58 %; stock stays raw, the baseline of every decision;
//   - q8_0's tiles of 8 blocks (l=2): 0.6-9.5 % behind its planes (l=1)
//     at every shape since the planes got the weight ring.
//
// `autotune bench --variants` still measures any of them.
func untunedLayout(name string, repacked bool, p space.Params) string {
	if p == space.Stock {
		return ""
	}
	if p.L == 0 && repacked {
		return fmt.Sprintf("%s l=0 (raw bytes) is not searched: its repacked layouts beat it at every llama-3-8b shape on the H200 (docs/results.md); stock stays raw", name)
	}
	if name == "q8_0" && p.L == 2 {
		return "q8_0 l=2 (tiles of 8 blocks) is not searched: 0.6-9.5 % behind l=1 at every llama-3-8b shape on the H200 (docs/results.md)"
	}
	return ""
}

// untunedStaging says why the tuner does not search variant p of the
// format called name (bulk: the family has the bulk-copy ring, s=3, and
// the compiler can build it), or "" when it does. In the sixth session's full tune of llama-3-8b on the H200
// (run13, docs/results.md, "Kernels v7"):
//   - for q4_0, q4_K and affine4 the bulk-copy ring won 18 of 21 jobs and
//     the shared-memory ring (s=2) the other three, while the best variant
//     with x staged alone (s=1) was 1.3-31 % behind and the best unstaged
//     one (s=0) 41-124 % behind at every job. Where s=3 can run (sm_90
//     and newer), neither is searched; stock stays, the baseline.
//   - bf16's bulk-copy ring lost every job, by 0.4-6.8 %.
func untunedStaging(name string, bulk bool, arch space.Arch, p space.Params) string {
	if p == space.Stock || !bulk || arch.Major < 9 {
		return ""
	}
	if name == "bf16" {
		if p.S == 3 {
			return "bf16 s=3 (bulk copies) is not searched: 0.4-6.8 % behind at every llama-3-8b shape on the H200 (docs/results.md)"
		}
		return ""
	}
	if p.S <= 1 {
		return fmt.Sprintf("%s s=%d is not searched on sm_90 and newer: the weight rings (s=2, s=3) beat it at every llama-3-8b shape on the H200 (docs/results.md); stock stays", name, p.S)
	}
	return ""
}

// searchSpace is the space the tuner searches for fam: space.Enumerate
// (smemFor as there) less the layouts untunedLayout names and the
// stagings untunedStaging names, which join the exclusions with their
// reason. bulkBuilds says whether the compiler can build s=3
// (compilerLacks): where it cannot, the stagings s=3 displaces are
// searched again, so an old NVRTC on sm_90 still gets s=1 and s=0.
func searchSpace(fam variants.Family, lim space.Limits, smemFor func(space.Params) int, bulkBuilds bool) (ok []space.Params, excluded []space.Exclusion) {
	all, excluded := space.Enumerate(lim, variants.KnobsOf(fam), smemFor)
	name, repacked := fam.Format().Name(), len(fam.Layouts()) > 1
	bulk := bulkBuilds && slices.Contains(fam.Stagings(), 3)
	arch, _ := space.ParseArch(lim.Arch) // the zero Arch (unknown) keeps every staging
	for _, p := range all {
		reason := untunedLayout(name, repacked, p)
		if reason == "" {
			reason = untunedStaging(name, bulk, arch, p)
		}
		if reason != "" {
			excluded = append(excluded, space.Exclusion{Params: p, Reason: reason})
			continue
		}
		ok = append(ok, p)
	}
	return ok, excluded
}
