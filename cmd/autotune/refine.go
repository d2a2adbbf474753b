package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
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
		alts = append(alts, tuner.RecordAlternatives(rec, st.Params, sms)...)
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

// runsAt says whether v runs at a stage of stages: at one of their
// (format, shape)s.
func runsAt(v tuner.ChainVariant, stages []tuner.ChainStage) bool {
	return slices.ContainsFunc(stages, func(st tuner.ChainStage) bool { return st.Job() == v.Job() })
}

// triesOf returns the tries that run at a stage of the token; nil for
// none.
func triesOf(tries []tuner.ChainVariant, stages []tuner.ChainStage) []tuner.ChainVariant {
	var out []tuner.ChainVariant
	for _, v := range tries {
		if runsAt(v, stages) {
			out = append(out, v)
		}
	}
	return out
}

// checkTries fails, naming it, on a try that runs at a stage of none of
// the tokens, with the shapes its format has in them.
func checkTries(tries []tuner.ChainVariant, tokens [][]tuner.ChainStage) error {
	all := slices.Concat(tokens...)
	for _, v := range tries {
		if runsAt(v, all) {
			continue
		}
		var shapes []string
		for _, st := range all {
			if s := st.Job().Shape(); st.Format == v.Format && !slices.Contains(shapes, s) {
				shapes = append(shapes, s)
			}
		}
		return usagef("bench: --try %s:%dx%d: not a shape of the token; its shapes: %s", v.Format, v.Rows, v.Cols, cmp.Or(strings.Join(shapes, ", "), "none in "+v.Format))
	}
	return nil
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
		fmt.Fprintf(stdout, refineRow, name, t.Variant.Format+" "+t.Variant.Job().Shape(), tuned, t.Variant.Params.ID(),
			fmt.Sprintf("%.1f", t.MedianUS), fmt.Sprintf("%.1f–%.1f", t.LoUS, t.HiUS), fmt.Sprintf("%+.2f %%%s", 100*(t.MedianUS/r.Base.MedianUS-1), verdict))
	}
	for _, sp := range r.First.Spills {
		fmt.Fprintln(stdout, spillNote(sp))
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
const refineRow = "  %-11s  %-19s  %-20s  %-20s  %9s  %17s  %s\n"

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

// variantList is "q4_0 28672x4096 r1f0…, q6_K 4096x14336 r2f0…".
func variantList(vs []tuner.ChainVariant) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v.Format + " " + v.Job().Shape() + " " + v.Params.ID()
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
		tries[i] = triesOf(run.tries, stages[i])
	}
	if err := checkTries(run.tries, stages); err != nil {
		return err
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

// refineTunedFn is tuner.RefineRecords, behind a variable so tests can
// use a fake.
var refineTunedFn = tuner.RefineRecords

// refineGroup is one token tune --refine refines on one GPU model: a
// model preset's in one format, or a GGUF file's in its own formats.
type refineGroup struct {
	gpu   localGPU
	name  string      // the token's name, marked on its records (cache.Record.Refined)
	label string      // what it is in messages: its format, or the file's name
	token []tokenGEMV // every GEMV with its format
}

// refineGroups are the tokens tune --refine refines: --gguf's, else, for
// every format of jobs, --model's (the default preset without one), each
// on every GPU model of the run.
func refineGroups(f tuneFlags, gpus []localGPU, jobs []tuner.Job) ([]refineGroup, error) {
	type token struct {
		name, label string
		gemvs       []tokenGEMV
	}
	var tokens []token
	if f.gguf != "" {
		gemvs, err := ggufToken(f.gguf, f.fuse)
		if err != nil {
			return nil, err
		}
		name, label := "gguf:"+filepath.Base(f.gguf), filepath.Base(f.gguf)
		if f.fuse {
			name, label = name+"+fused", label+" (fused)"
		}
		tokens = append(tokens, token{name, label, gemvs})
	} else {
		p, err := presetByName(cmp.Or(f.model, defaultModel))
		if err != nil {
			return nil, err
		}
		for _, format := range tuner.JobFormats(jobs) {
			gemvs := p.token()
			for i := range gemvs {
				gemvs[i].format = format
			}
			tokens = append(tokens, token{p.name, format, gemvs})
		}
	}
	var groups []refineGroup
	for _, g := range gpus {
		for _, t := range tokens {
			groups = append(groups, refineGroup{gpu: g, name: t.name, label: t.label, token: t.gemvs})
		}
	}
	return groups, nil
}

// refineTuned is tune --refine: each token of refineGroups, made of the
// cache's choices (this run's and an earlier run's alike), is refined
// (tuner.RefineRecords) on a GPU of its model, unless every record of that
// token names it refined already (cache.Record.Refined). The choices it
// changes are stored, and replaced in ds (this run's decisions, for the
// table); a token whose rounds all finish has its records marked refined,
// so that a run interrupted here resumes with the tokens it did not
// finish. A token with a shape the cache holds no current record for is
// skipped, and stderr says so. When a refinement fails or is interrupted,
// the labels of the tokens from it on are returned in unfinished.
func refineTuned(ctx context.Context, f tuneFlags, store *cache.DB, gpus []localGPU, jobs []tuner.Job, ds []tuner.Decision, stderr io.Writer) (unfinished []string, err error) {
	groups, err := refineGroups(f, gpus, jobs)
	if err != nil {
		return nil, err
	}
	// unfinishedFrom is the labels of groups[i:], each once, when the
	// refinement stops at group i.
	unfinishedFrom := func(i int) []string {
		var ls []string
		for _, g := range groups[i:] {
			if !slices.Contains(ls, g.label) {
				ls = append(ls, g.label)
			}
		}
		return ls
	}
	for gi, g := range groups {
		where := fmt.Sprintf("%s on %s", g.label, g.gpu.model)
		recs, cubins, missing := tokenRecords(store, g.gpu, g.token)
		if missing != "" {
			fmt.Fprintf(stderr, "autotune: refine %s: %s: not refined\n", where, missing)
			continue
		}
		if !slices.ContainsFunc(recs, func(r cache.Record) bool { return !slices.Contains(r.Refined, g.name) }) {
			fmt.Fprintf(stderr, "autotune: refine %s: refined in the %s token by an earlier run (--force tunes and refines it again)\n", where, g.name)
			continue
		}
		arch, err := space.ParseArch(g.gpu.arch)
		if err != nil {
			return nil, err
		}
		for round := 1; round <= refineRounds; round++ {
			label := where
			if round > 1 {
				label = fmt.Sprintf("%s (round %d)", where, round)
				fmt.Fprintf(stderr, "autotune: refine %s: the token again, each shape's next-best candidates after the shapes round %d changed\n", label, round-1)
			} else {
				fmt.Fprintf(stderr, "autotune: refine %s: the %s token with each shape's next-best candidates\n", label, g.name)
			}
			stages := recordStages(recs, cubins, g.token)
			changed, ref, err := refineTunedFn(ctx, g.name, stages, recs, tuner.RefineOptions{PDL: arch.Major >= 9, WaitForLock: f.wait})
			if err != nil {
				return unfinishedFrom(gi), fmt.Errorf("refine %s: %w", label, err)
			}
			for _, c := range changed {
				if err := storeRefined(store, c); err != nil {
					return unfinishedFrom(gi), err
				}
				job := tuner.JobOf(c.Record.Key)
				recs[slices.IndexFunc(recs, func(r cache.Record) bool { return tuner.JobOf(r.Key) == job })] = c.Record
				cubins[job] = c.Cubin
				for i, d := range ds {
					if d.Arch == g.gpu.arch && cache.NormalizeModel(d.GPUName) == g.gpu.model && d.Job == job {
						ds[i] = d.Refined(c.Record, c.Cubin)
					}
				}
			}
			fmt.Fprintf(stderr, "autotune: refine %s: %s\n", label, refineSummary(ref))
			if len(changed) == 0 {
				break
			}
		}
		keys := make([]cache.Key, len(recs))
		for i, r := range recs {
			keys[i] = r.Key
		}
		err = store.Amend(keys, func(r *cache.Record) {
			if !slices.Contains(r.Refined, g.name) {
				r.Refined = append(r.Refined, g.name)
			}
		})
		if err != nil {
			return unfinishedFrom(gi), fmt.Errorf("refine %s: marking its records refined: %w", where, err)
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

// tokenRecords returns the cache's current record of each (format, shape)
// of the token on GPU model g, in the token's order, and the cubins of
// their winners by job; or, in missing, the first without one and why.
func tokenRecords(store *cache.DB, g localGPU, token []tokenGEMV) (recs []cache.Record, cubins map[tuner.Job][]byte, missing string) {
	cubins = map[tuner.Job][]byte{}
	seen := map[tuner.Job]bool{}
	for _, t := range token {
		j := t.job()
		if seen[j] {
			continue
		}
		seen[j] = true
		fam, err := variants.FamilyOf(t.format)
		if err != nil {
			return nil, nil, err.Error()
		}
		rec, err := store.Get(cache.Key{Arch: g.arch, Model: g.model, Format: j.Format, Rows: j.Rows, Cols: j.Cols})
		switch {
		case errors.Is(err, cache.ErrNotFound):
			return nil, nil, fmt.Sprintf("%s %s is not in the cache", j.Format, t.shape)
		case err != nil:
			return nil, nil, fmt.Sprintf("%s %s's entry cannot be read (%v)", j.Format, t.shape, err)
		}
		if stale, why := rec.Stale(fam.SourceHash(), cache.ToolVersion); stale {
			return nil, nil, fmt.Sprintf("%s %s's entry is stale (%s)", j.Format, t.shape, why)
		}
		if !rec.Params.IsStock() {
			if cubins[j], err = store.Cubin(rec.CubinHash); err != nil {
				return nil, nil, fmt.Sprintf("%s %s's winner %s: %v", j.Format, t.shape, rec.WinnerID, err)
			}
		}
		recs = append(recs, rec)
	}
	return recs, cubins, ""
}

// recordStages is the token with each stage running the winner of the
// record of its (format, shape), from its cubin (stock from source).
func recordStages(recs []cache.Record, cubins map[tuner.Job][]byte, token []tokenGEMV) []tuner.ChainStage {
	byJob := map[tuner.Job]cache.Record{}
	for _, r := range recs {
		byJob[tuner.JobOf(r.Key)] = r
	}
	var stages []tuner.ChainStage
	for _, t := range token {
		rec := byJob[t.job()]
		st := tuner.ChainStage{Name: t.name, Format: rec.Format, Rows: rec.Rows, Cols: rec.Cols, Params: rec.Params,
			PDLShared: uint32(rec.PDLShared), LaunchPDL: rec.LaunchPDL, XBack: t.xBack}
		if !rec.Params.IsStock() {
			st.Cubin = cubins[tuner.JobOf(rec.Key)]
		}
		stages = append(stages, st)
	}
	return stages
}

// storeRefined stores a record a refinement changed with its new
// winner's cubin, keeping its exact alternative's.
func storeRefined(store *cache.DB, c tuner.RefinedRecord) error {
	var exact []byte
	if x := c.Record.Exact; x != nil && x.CubinHash != "" {
		var err error
		if exact, err = store.Cubin(x.CubinHash); err != nil {
			return fmt.Errorf("refine: keeping %s's exact alternative: %w", c.Record.Key, err)
		}
	}
	if err := store.Put(c.Record, c.Cubin, exact); err != nil {
		return fmt.Errorf("refine: saving %s: %w", c.Record.Key, err)
	}
	return nil
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
