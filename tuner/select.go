package tuner

import (
	"fmt"
	"math"
	"sort"

	"golang.org/x/perf/benchmath"

	"github.com/gemvtune/gemvtune/variants"
)

// Rule is the selection rule: a candidate replaces stock only if its median
// is at least MinGain faster and a Mann–Whitney U test rejects "same
// distribution" at level Alpha.
type Rule struct {
	MinGain float64
	Alpha   float64
}

// DefaultRule is docs/design.md §5's rule: α = 0.05 and a 2 % minimum gain.
var DefaultRule = Rule{MinGain: 0.02, Alpha: 0.05}

func (r Rule) withDefaults() Rule {
	if r.MinGain == 0 {
		r.MinGain = DefaultRule.MinGain
	}
	if r.Alpha == 0 {
		r.Alpha = DefaultRule.Alpha
	}
	return r
}

// summarize returns the median of samples and its 95 % confidence interval
// (benchmath's distribution-free interval; with too few samples Lo and Hi
// fall back to the extremes).
func summarize(samples []float64) (median, lo, hi float64) {
	if len(samples) == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	s := benchmath.NewSample(append([]float64(nil), samples...), &benchmath.DefaultThresholds)
	sum := benchmath.AssumeNothing.Summary(s, 0.95)
	lo, hi = sum.Lo, sum.Hi
	if math.IsInf(lo, 0) || math.IsNaN(lo) || math.IsInf(hi, 0) || math.IsNaN(hi) {
		lo, hi = s.Values[0], s.Values[len(s.Values)-1]
	}
	return sum.Center, lo, hi
}

// compare runs the Mann–Whitney U test on two sets of samples.
func compare(a, b []float64, alpha float64) float64 {
	th := benchmath.DefaultThresholds
	th.CompareAlpha = alpha
	sa := benchmath.NewSample(append([]float64(nil), a...), &th)
	sb := benchmath.NewSample(append([]float64(nil), b...), &th)
	return benchmath.AssumeNothing.Compare(sa, sb).P
}

// decision is the outcome of selecting among measured candidates.
type decision struct {
	winner  Candidate
	kept    bool
	p       float64
	speedup float64
	reason  string
}

// decide picks the fastest measured candidate and keeps it only if it beats
// stock by the rule; otherwise stock stays and the reason says why with
// the figures. measured must contain stock (status ok) first or anywhere.
func decide(stock Candidate, measured []Candidate, rule Rule) decision {
	rule = rule.withDefaults()
	ok := make([]Candidate, 0, len(measured))
	for _, c := range measured {
		if c.Status == StatusOK && c.ID != stock.ID {
			ok = append(ok, c)
		}
	}
	sort.SliceStable(ok, func(i, j int) bool { return ok[i].MedianUS < ok[j].MedianUS })
	if len(ok) == 0 || ok[0].MedianUS >= stock.MedianUS {
		return decision{winner: stock, kept: true, p: 1, speedup: 1, reason: "kept v1: no verified variant is faster"}
	}
	best := ok[0]
	gain := stock.MedianUS/best.MedianUS - 1
	p := compare(stock.Samples, best.Samples, rule.Alpha)
	d := decision{winner: best, p: p, speedup: stock.MedianUS / best.MedianUS}
	switch {
	case p > rule.Alpha:
		d.winner, d.kept = stock, true
		d.reason = fmt.Sprintf("kept v1: %s %+.1f %% not significant (p=%.2f)", best.ID, 100*gain, p)
	case gain < rule.MinGain:
		d.winner, d.kept = stock, true
		d.reason = fmt.Sprintf("kept v1: %s %+.1f %% below the %.0f %% minimum gain (p=%.3f)", best.ID, 100*gain, 100*rule.MinGain, p)
	default:
		d.reason = fmt.Sprintf("%s: %+.1f %% over v1 (p=%.3g, n=%d+%d)", best.ID, 100*gain, p, len(best.Samples), len(stock.Samples))
	}
	if d.kept {
		d.speedup = 1
	}
	return d
}

// decideClasses decides among all finalists and, when the winner is not of
// the exact class, among the exact ones alone: that second decision is what
// engines requiring exact output get. An inexact winner must also beat the
// best exact choice by the rule (significant, and at least MinGain);
// otherwise the exact choice wins outright, since exactness then costs
// nothing measurable.
func decideClasses(stock Candidate, finalists []Candidate, rule Rule) (main decision, exact *decision) {
	rule = rule.withDefaults()
	main = decide(stock, finalists, rule)
	if main.kept || main.winner.Class == string(variants.Exact) {
		return main, nil
	}
	var ex []Candidate
	for _, c := range finalists {
		if c.Class == string(variants.Exact) {
			ex = append(ex, c)
		}
	}
	alt := decide(stock, ex, rule)
	if !alt.kept {
		gain := alt.winner.MedianUS/main.winner.MedianUS - 1
		p := compare(alt.winner.Samples, main.winner.Samples, rule.Alpha)
		if p > rule.Alpha || gain < rule.MinGain {
			alt.reason += fmt.Sprintf("; preferred to %s (%s class, %+.1f %% faster, p=%.2g: below the %.0f %% minimum gain or not significant)",
				main.winner.ID, main.winner.Class, 100*gain, p, 100*rule.MinGain)
			return alt, nil
		}
	}
	return main, &alt
}
