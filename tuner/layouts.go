package tuner

import (
	"fmt"

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

// searchSpace is the space the tuner searches for fam: space.Enumerate
// (smemFor as there) less the layouts untunedLayout names, which join the
// exclusions with their reason.
func searchSpace(fam variants.Family, lim space.Limits, smemFor func(space.Params) int) (ok []space.Params, excluded []space.Exclusion) {
	all, excluded := space.Enumerate(lim, variants.KnobsOf(fam), smemFor)
	name, repacked := fam.Format().Name(), len(fam.Layouts()) > 1
	for _, p := range all {
		if reason := untunedLayout(name, repacked, p); reason != "" {
			excluded = append(excluded, space.Exclusion{Params: p, Reason: reason})
			continue
		}
		ok = append(ok, p)
	}
	return ok, excluded
}
