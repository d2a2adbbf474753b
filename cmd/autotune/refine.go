package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gemvtune/gemvtune"
	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/tuner"
	"github.com/gemvtune/gemvtune/variants"
)

// refineFn is tuner.RefineChain, behind a variable so tests can use a
// fake.
var refineFn = tuner.RefineChain

// refineAlternatives returns, for each (format, shape) of the stages, the
// cache's other candidates worth trying in the token
// (tuner.PickAlternatives), read from the record of that key; the shapes
// without a record are named in missing.
func refineAlternatives(db *cache.DB, arch, model string, sms int, stages []tuner.ChainStage) (alts []tuner.ChainVariant, missing []string) {
	seen := map[cache.Key]bool{}
	for _, st := range stages {
		k := cache.Key{Arch: arch, Model: model, Format: st.Format, Rows: st.Rows, Cols: st.Cols}
		if seen[k] {
			continue
		}
		seen[k] = true
		rec, err := db.Get(k)
		if err != nil {
			missing = append(missing, fmt.Sprintf("%s %dx%d (%v)", st.Format, st.Rows, st.Cols, err))
			continue
		}
		cands := make([]tuner.Measured, len(rec.Candidates))
		for i, c := range rec.Candidates {
			cands[i] = tuner.Measured{Params: c.Params, Class: c.Class, Status: c.Status, MedianUS: c.MedianUS}
		}
		alts = append(alts, tuner.Alternatives(st.Job(), cands, st.Params, sms)...)
	}
	return alts, missing
}

// parseTries parses bench --try: FORMAT:ROWSxCOLS:ID items, comma-separated,
// each a variant of one of formats that its family can run at that shape.
func parseTries(list string, formats []string) ([]tuner.ChainVariant, error) {
	if list == "" {
		return nil, nil
	}
	var out []tuner.ChainVariant
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		parts := strings.Split(item, ":")
		if len(parts) != 3 {
			return nil, fmt.Errorf("%q: want FORMAT:ROWSxCOLS:ID, e.g. q4_0:28672x4096:r2f0u2s3w16g4l2a1", item)
		}
		if !slices.Contains(formats, parts[0]) {
			return nil, fmt.Errorf("%q: format %s is not among --formats (%s)", item, parts[0], strings.Join(formats, ","))
		}
		sh, err := space.ParseShape(parts[1])
		if err != nil {
			return nil, fmt.Errorf("%q: %v", item, err)
		}
		p, err := space.Parse(parts[2])
		if err != nil {
			return nil, fmt.Errorf("%q: %v", item, err)
		}
		fam, err := variants.FamilyOf(parts[0])
		if err != nil {
			return nil, fmt.Errorf("%q: %v", item, err)
		}
		if err := fam.Gate(p, sh.Rows, sh.Cols); err != nil { // the knobs, then the shape
			return nil, fmt.Errorf("%q: %v", item, err)
		}
		out = append(out, tuner.ChainVariant{Format: parts[0], Rows: sh.Rows, Cols: sh.Cols, Params: p})
	}
	return out, nil
}

// triesOf returns the tries of format; an error names a try whose shape
// is not one of the token's stages.
func triesOf(tries []tuner.ChainVariant, format string, stages []tuner.ChainStage) ([]tuner.ChainVariant, error) {
	var out []tuner.ChainVariant
	for _, v := range tries {
		if v.Format != format {
			continue
		}
		if !slices.ContainsFunc(stages, func(st tuner.ChainStage) bool { return st.Job() == v.Job() }) {
			var shapes []string
			for _, st := range stages {
				if s := fmt.Sprintf("%dx%d", st.Rows, st.Cols); !slices.Contains(shapes, s) {
					shapes = append(shapes, s)
				}
			}
			return nil, usagef("bench: --try %s:%dx%d: not a shape of the token; its shapes: %s", format, v.Rows, v.Cols, strings.Join(shapes, ", "))
		}
		out = append(out, v)
	}
	return out, nil
}

// refineToken times the tuned token of format with each alternative in
// place (tuner.RefineChain) and prints what it found. The alternatives
// are tries where given, else the cache's other candidates.
func refineToken(ctx context.Context, db *cache.DB, arch, model string, g gpu.Info, pdl bool, format string, stages []tuner.ChainStage, tries []tuner.ChainVariant, stdout, stderr io.Writer) error {
	alts := tries
	if alts == nil {
		var missing []string
		alts, missing = refineAlternatives(db, arch, model, g.SMs, stages)
		for _, m := range missing {
			fmt.Fprintf(stderr, "autotune: bench --chain --refine %s: no alternatives for %s\n", format, m)
		}
	}
	if len(alts) == 0 {
		_, err := fmt.Fprintf(stdout, "%s, refine: no alternatives in the cache\n", format)
		return err
	}
	r, err := refineFn(ctx, g.Ordinal, stages, alts, tuner.RefineOptions{PDL: pdl})
	if err != nil {
		return fmt.Errorf("bench --chain --refine %s: %w", format, err)
	}
	mode := "plain launches"
	if pdl {
		mode = "PDL edges"
	}
	fmt.Fprintf(stdout, "%s, refine (%s): the token as tuned %.1f µs (%.1f–%.1f), %.1f %% of the %.0f GB/s ceiling; alternatives: %d\n",
		format, mode, r.Base.MedianUS, r.Base.LoUS, r.Base.HiUS, r.Base.PctCeiling, r.First.CeilingGBs, len(r.Trials))
	fmt.Fprintf(stdout, refineRow, "stage", "shape", "tuned", "alternative", "µs/token", "95% CI µs", "change")
	for _, t := range r.Trials {
		name, tuned := stageOf(stages, t.Variant)
		verdict := ""
		if t.Faster {
			verdict = "  faster"
		}
		fmt.Fprintf(stdout, refineRow, name, fmt.Sprintf("%dx%d", t.Variant.Rows, t.Variant.Cols), tuned, t.Variant.Params.ID(),
			fmt.Sprintf("%.1f", t.MedianUS), fmt.Sprintf("%.1f–%.1f", t.LoUS, t.HiUS), fmt.Sprintf("%+.2f %%%s", 100*(t.MedianUS/r.Base.MedianUS-1), verdict))
	}
	if r.Together == nil {
		_, err := fmt.Fprintf(stdout, "%s, refine: no alternative made the token faster beyond the intervals\n", format)
		return err
	}
	verdict := "kept"
	if r.Chosen == nil {
		verdict = "not faster beyond the intervals: nothing kept"
	}
	_, err = fmt.Fprintf(stdout, "%s, refine: %s together: %.1f µs (%.1f–%.1f, %.1f %% of the ceiling) against %.1f (%.1f–%.1f) as tuned in a second run, %+.2f %%: %s\n",
		format, variantList(r.Tried), r.Together.MedianUS, r.Together.LoUS, r.Together.HiUS, r.Together.PctCeiling, r.BaseAgain.MedianUS, r.BaseAgain.LoUS, r.BaseAgain.HiUS,
		100*r.Change(), verdict)
	return err
}

// refineRow is one line of the refine table.
const refineRow = "  %-8s  %-11s  %-20s  %-20s  %9s  %17s  %s\n"

// stageOf names the stage role the variant runs ("qkv" of "blk.0.qkv")
// and the tuned variant it replaces there.
func stageOf(stages []tuner.ChainStage, v tuner.ChainVariant) (name, tuned string) {
	for _, st := range stages {
		if st.Job() == v.Job() {
			return st.Name[strings.LastIndex(st.Name, ".")+1:], st.Params.ID()
		}
	}
	return "?", "?"
}

// variantList is "28672x4096 r1f0…, 4096x14336 r2f0…".
func variantList(vs []tuner.ChainVariant) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf("%dx%d %s", v.Rows, v.Cols, v.Params.ID())
	}
	return strings.Join(parts, ", ")
}

// refineTokens is bench --chain --refine: for each format, the tuned
// token of the cache's choices for GPU g, refined (refineToken).
func refineTokens(ctx context.Context, pol *gemvtune.Policy, run chainRun, g gpu.Info, token []tokenGEMV, stdout, stderr io.Writer) error {
	db, err := openReader(run.cachePath)
	if err != nil {
		return fmt.Errorf("bench --chain --refine: %w", err)
	}
	defer db.Close()
	arch, model := g.Arch.String(), cache.NormalizeModel(g.Name)
	pdl := g.Arch.Major >= 9
	// Every format's stages and tries first: a --try the token has no
	// stage for is an error before any GPU work.
	stages := make([][]tuner.ChainStage, len(run.formats))
	tries := make([][]tuner.ChainVariant, len(run.formats))
	for i, f := range run.formats {
		if stages[i], err = chainStages(pol, arch, f, token, true, run.compile); err != nil {
			return fmt.Errorf("bench --chain --refine %s: %w", f, err)
		}
		if tries[i], err = triesOf(run.tries, f, stages[i]); err != nil {
			return err
		}
	}
	against := "the cache's other candidates"
	if run.tries != nil {
		against = "the variants of --try"
	}
	fmt.Fprintf(stdout, "one token of %d GEMVs on GPU %d, %s: the tuned choices against %s, in the token\n", len(token), run.ordinal, g.Name, against)
	for i, f := range run.formats {
		if run.tries != nil && tries[i] == nil {
			continue
		}
		if err := refineToken(ctx, db, arch, model, g, pdl, f, stages[i], tries[i], stdout, stderr); err != nil {
			return err
		}
	}
	return nil
}

// refineTunedFn is tuner.RefineDecisions, behind a variable so tests can
// use a fake.
var refineTunedFn = tuner.RefineDecisions

// refineTuned is tune --refine: for each GPU model and format, the
// model preset's token of this run's decisions is refined
// (tuner.RefineDecisions) on a GPU of that model; the decisions it
// changes are stored and replaced in ds. A format whose token has a shape
// this run did not decide (resumed, or out of its formats) is skipped,
// and stderr says so. When a refinement fails or is interrupted, the
// formats from it on are returned in unfinished.
func refineTuned(ctx context.Context, f tuneFlags, store *cache.DB, ds []tuner.Decision, stderr io.Writer) (unfinished []string, err error) {
	name := f.model
	if name == "" {
		name = defaultModel
	}
	p, err := presetByName(name)
	if err != nil {
		return nil, err
	}
	token := p.token()
	type group struct {
		gpuModel, format string
	}
	var groups []group
	index := map[group]map[tuner.Job]int{} // the group's decisions, by job, as indexes into ds
	for i, d := range ds {
		g := group{cache.NormalizeModel(d.GPUName), d.Format}
		if index[g] == nil {
			index[g] = map[tuner.Job]int{}
			groups = append(groups, g)
		}
		index[g][d.Job] = i
	}
	// unfinishedFrom is the formats of groups[i:], each once, when the
	// refinement stops at group i.
	unfinishedFrom := func(i int) []string {
		var fs []string
		for _, g := range groups[i:] {
			if !slices.Contains(fs, g.format) {
				fs = append(fs, g.format)
			}
		}
		return fs
	}
	for gi, g := range groups {
		for round := 1; round <= refineRounds; round++ {
			stages, own, missing := decidedStages(ds, index[g], g.format, token)
			if missing != "" {
				fmt.Fprintf(stderr, "autotune: refine %s: %s was not tuned in this run: not refined (autotune bench --chain --refine tries the cache's choices)\n", g.format, missing)
				break
			}
			arch, err := space.ParseArch(own[0].Arch)
			if err != nil {
				return nil, err
			}
			label := g.format
			if round > 1 {
				label = fmt.Sprintf("%s (round %d)", g.format, round)
				fmt.Fprintf(stderr, "autotune: refine %s: the token again, each shape's next-best candidates after the shapes round %d changed\n", label, round-1)
			} else {
				fmt.Fprintf(stderr, "autotune: refine %s: the %s token with each shape's next-best candidates on %s\n", label, p.name, own[0].GPUName)
			}
			changed, ref, err := refineTunedFn(ctx, p.name, stages, own, tuner.RefineOptions{PDL: arch.Major >= 9, WaitForLock: f.wait})
			if err != nil {
				return unfinishedFrom(gi), fmt.Errorf("refine %s: %w", label, err)
			}
			for _, d := range changed {
				if err := putDecision(store, d); err != nil {
					return unfinishedFrom(gi), err
				}
				ds[index[g][d.Job]] = d
			}
			fmt.Fprintf(stderr, "autotune: refine %s: %s\n", label, refineSummary(ref))
			if len(changed) == 0 {
				break
			}
		}
	}
	return nil, nil
}

// refineRounds is how many times tune --refine refines a token: again
// after a round that changed a shape's choice, since which alternative a
// shape's neighbours favour depends on their own choices. On the H200
// (docs/results.md, "twenty-fifth lease") one round moved q4_0's qkv from
// an s=2 winner to an s=3 one and left o on its winner alone, whose
// alternatives it had tried beside the s=2 qkv: 13 µs a token over its
// reads, where the previous lease's refined o, beside an s=3 qkv, was 5.
const refineRounds = 2

// decidedStages is the token of format with each stage running its
// decision's choice (index: the decisions of one GPU model, by job) and
// those decisions, one per shape; or the first shape without a decision
// in missing.
func decidedStages(ds []tuner.Decision, index map[tuner.Job]int, format string, token []tokenGEMV) (stages []tuner.ChainStage, own []tuner.Decision, missing string) {
	seen := map[tuner.Job]bool{}
	for _, t := range token {
		j := tuner.Job{Format: format, Rows: t.shape.Rows, Cols: t.shape.Cols}
		i, ok := index[j]
		if !ok {
			return nil, nil, t.shape.String()
		}
		d := ds[i]
		if !seen[j] {
			seen[j] = true
			own = append(own, d)
		}
		rec := d.Record()
		st := tuner.ChainStage{Name: t.name, Format: format, Rows: t.shape.Rows, Cols: t.shape.Cols, Params: rec.Params,
			PDLShared: uint32(rec.PDLShared), LaunchPDL: rec.LaunchPDL}
		if !rec.Params.IsStock() {
			st.Cubin = d.Cubin
		}
		stages = append(stages, st)
	}
	return stages, own, ""
}

// refineSummary says in one line what a refinement kept.
func refineSummary(r tuner.Refinement) string {
	switch {
	case len(r.Trials) == 0:
		return "no alternatives measured"
	case r.Together == nil:
		return fmt.Sprintf("none of %d alternatives made the token faster beyond the intervals (%.1f µs)", len(r.Trials), r.Base.MedianUS)
	case r.Chosen == nil:
		return fmt.Sprintf("%s: %.1f against %.1f µs per token, not faster beyond the intervals: nothing changed", variantList(r.Tried), r.Together.MedianUS, r.BaseAgain.MedianUS)
	}
	return fmt.Sprintf("kept %s: %.1f against %.1f µs per token (%+.2f %%)", variantList(r.Chosen), r.Together.MedianUS, r.BaseAgain.MedianUS,
		100*r.Change())
}
