package tuner

import (
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/gemvtune/gemvtune/space"
)

// PriorShape is what a finished job of a format says about its
// candidates: each one's median over the best median measured there (Rel,
// by variant ID; 1 = the best).
type PriorShape struct {
	Rows, Cols int
	Rel        map[string]float64
}

// PriorFromCandidates is the PriorShape of a rows×cols job whose candidates
// had these medians (µs; 0: not measured).
func PriorFromCandidates(rows, cols int, medians map[string]float64) PriorShape {
	ps := PriorShape{Rows: rows, Cols: cols, Rel: map[string]float64{}}
	best := math.Inf(1)
	for _, m := range medians {
		if m > 0 {
			best = min(best, m)
		}
	}
	for id, m := range medians {
		if m > 0 {
			ps.Rel[id] = m / best
		}
	}
	return ps
}

// priorOf is the PriorShape of a finished decision: its measured
// candidates' medians.
func priorOf(d Decision) PriorShape {
	med := map[string]float64{}
	for _, c := range d.Candidates {
		if c.MedianUS > 0 && !math.IsNaN(c.MedianUS) {
			med[c.ID] = c.MedianUS
		}
	}
	return PriorFromCandidates(d.Rows, d.Cols, med)
}

// priorKey is the name a candidate has across shapes: its ID without knob
// g, whose value is chosen per shape (a one-wave grid: r2f0u4s3w8g14l1a1
// at 28672 rows is r2f0u4s3w8g4l1a1 at 6144), so every g of a variant
// shares the prior of the variant.
func priorKey(id string) string {
	p, err := space.Parse(id)
	if err != nil || p.G == 0 {
		return id
	}
	p.G = 0
	return p.ID() + "g"
}

// formatPrior is the prior of a format's rows×cols job from the shapes
// measured so far (by format): the format's own, or, before its first
// job, every other format's, matched across layouts (acrossLayouts). Families
// share their knobs' meaning, so the other formats' best (the staging, the
// warps, one wave of row groups) orders a first screen better than a
// spread over the space does (docs/tuner.md); the race's exploration
// share still measures what the prior ranks low.
func formatPrior(priors map[string][]PriorShape, format string, rows, cols int) map[string]float64 {
	if own := priors[format]; len(own) > 0 {
		return priorFor(rows, cols, own)
	}
	var others []PriorShape
	for _, f := range slices.Sorted(maps.Keys(priors)) { // map order must not matter
		if f != format {
			others = append(others, priors[f]...)
		}
	}
	return acrossLayouts(priorFor(rows, cols, others))
}

// acrossLayouts is the prior of other formats' results for this one: each
// variant's value is the best any layout of it has, under the key of
// every layout. Layouts are each family's own (q4_0's bulk-copy tiles are
// l=2, q4_K's l=1), so between formats a variant is matched by its other
// knobs; by ID, q4_K's bulk-copy candidates would find none of q4_0's
// bulk-copy results and its staged-ring ones all of q8_0's.
func acrossLayouts(prior map[string]float64) map[string]float64 {
	type variant struct {
		p       space.Params // with l = 0
		grouped bool         // the key of a variant with g (priorKey)
	}
	best := map[variant]float64{}
	for k, val := range prior {
		id, grouped := strings.CutSuffix(k, "g")
		p, err := space.Parse(id)
		if err != nil {
			continue
		}
		p.L = 0
		v := variant{p, grouped}
		if b, ok := best[v]; !ok || val < b {
			best[v] = val
		}
	}
	layout, _ := space.KnobByLetter("l")
	out := make(map[string]float64, len(best)*len(layout.Values))
	for v, val := range best {
		for _, l := range layout.Values {
			p := v.p
			p.L = l
			k := p.ID()
			if v.grouped {
				k += "g"
			}
			out[k] = val
		}
	}
	return out
}

// priorFor is the prior of a rows×cols job from earlier jobs: per
// candidate (by priorKey), the weighted geometric mean of its relative medians there,
// each shape weighted by how close its size is (exp(-|ln(size ratio)|): a
// shape twice as large counts half), since the best variants of a small
// GEMV and of a DRAM-bound one differ. nil without earlier jobs.
func priorFor(rows, cols int, earlier []PriorShape) map[string]float64 {
	if len(earlier) == 0 {
		return nil
	}
	size := float64(rows) * float64(cols)
	sum, wsum := map[string]float64{}, map[string]float64{}
	for _, e := range earlier {
		w := math.Exp(-math.Abs(math.Log(float64(e.Rows) * float64(e.Cols) / size)))
		best := map[string]float64{} // per key, the best of its g values there
		for id, v := range e.Rel {
			k := priorKey(id)
			if b, ok := best[k]; !ok || v < b {
				best[k] = v
			}
		}
		for k, v := range best {
			sum[k] += w * math.Log(v)
			wsum[k] += w
		}
	}
	out := make(map[string]float64, len(sum))
	for k, s := range sum {
		out[k] = math.Exp(s / wsum[k])
	}
	return out
}
