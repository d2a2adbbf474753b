package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/gemvtune/gemvtune"
	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/tuner"
)

// chainFn and chainGPUsFn are tuner.Chain and the driver's GPU list,
// behind variables so tests can use fakes.
var (
	chainFn     = tuner.Chain
	chainGPUsFn = gpu.Probe
)

// chainChoices are whose variants a token runs: stock's (v1 everywhere)
// or the cache's; each is timed plainly and, from sm_90 on, with PDL edges
// and, where the choices' recorded launch modes differ, as they say. The
// tuned token's run also times its weights read by one streaming-read
// kernel per stage (tuner.ChainOptions.Reads): what one kernel per GEMV
// allows, in the same batches.
var chainChoices = []struct {
	name  string
	tuned bool
}{{"stock", false}, {"tuned", true}}

// chainRun is what `bench --chain` was asked for.
type chainRun struct {
	model     string               // the preset whose token runs
	gguf      string               // instead, the GGUF model file whose token runs, in its own formats
	fuse      bool                 // with gguf: q, k, v and gate, up fused where they can be (ggufToken)
	formats   []string             // each runs its own token (not with gguf)
	cachePath string               // the cache whose choices are the tuned token's
	ordinal   int                  // the GPU
	compile   bool                 // the tuned choices from this build's source, not their cubins
	refine    bool                 // try the cache's other candidates instead (refineTokens)
	tries     []tuner.ChainVariant // with refine: the variants to try instead of the cache's candidates
	attribute bool                 // also time each shape's GEMVs replaced by reads (tuner.ChainOptions.Attribute)
	batch     int                  // tokens per timed batch (tuner.ChainOptions.BatchTokens), 0 for its default
}

// benchChain runs one token of run.model for every format, in every mode,
// on GPU run.ordinal, and prints a row per (format, mode).
func benchChain(ctx context.Context, run chainRun, stdout, stderr io.Writer) error {
	token, what, err := chainToken(&run)
	if err != nil {
		return err
	}
	gpus, err := chainGPUsFn()
	if err != nil {
		return fmt.Errorf("bench --chain: %w", err)
	}
	if run.ordinal < 0 || run.ordinal >= len(gpus) {
		return usagef("bench --chain: --gpu %d: this machine has GPUs 0..%d", run.ordinal, len(gpus)-1)
	}
	g := gpus[run.ordinal]
	pol, _ := gemvtune.Open(&gemvtune.Options{CachePath: run.cachePath, ContinueOnCacheError: true, GPUName: g.Name,
		LookupEnv: func(string) (string, bool) { return "", false }, ServeStale: run.compile})
	if pol != nil && pol.CacheErr != nil {
		fmt.Fprintf(stderr, "autotune: bench --chain: %v: the tuned rows run what lookups give without it (stock)\n", pol.CacheErr)
	}
	if run.refine {
		return refineTokens(ctx, pol, run, g, token, stdout, stderr)
	}
	fmt.Fprintf(stdout, "one token of %s on GPU %d, %s\n", what, run.ordinal, g.Name)
	// Fixed widths, not a tabwriter: the rows are printed as each token
	// finishes (seconds each), and they must line up with the header all
	// the same.
	fmt.Fprintf(stdout, chainRow, "format", "mode", "µs/token", "95% CI µs", "MB/token", "ceiling GB/s", "bytes/ceiling µs", "% of ceiling", "GEMV tok/s", "max rel err", "throttled")
	pdl := g.Arch.Major >= 9
	if !pdl {
		what := "no PDL modes"
		if run.attribute {
			what += " and no --attribute, which runs with PDL edges"
		}
		fmt.Fprintf(stderr, "autotune: bench --chain: %s is %s: %s (programmatic dependent launch needs sm_90 or newer)\n", g.Name, g.Arch, what)
	}
	throttled := false // some mode ran with lowered clocks
	row := func(f, mode string, r tuner.ChainResult, t tuner.ChainTiming) error {
		_, err := fmt.Fprintf(stdout, chainRow, f, mode, fmt.Sprintf("%.1f", t.MedianUS), fmt.Sprintf("%.1f–%.1f", t.LoUS, t.HiUS),
			fmt.Sprintf("%.1f", float64(r.Bytes)/1e6), fmt.Sprintf("%.0f (%.0f–%.0f)", r.CeilingGBs, r.CeilingBeforeGBs, r.CeilingAfterGBs), fmt.Sprintf("%.1f", float64(r.Bytes)/(r.CeilingGBs*1e3)),
			fmt.Sprintf("%.1f", t.PctCeiling), fmt.Sprintf("%.0f", t.TokPerS), fmt.Sprintf("%.2g", r.MaxRelErr), throttledCell(t))
		throttled = throttled || t.ThrottledPct > 0
		return err
	}
	var verdicts []string
	var attributions []string
	for _, f := range run.formats {
		for _, ch := range chainChoices {
			stages, err := chainStages(pol, g.Arch.String(), f, token, ch.tuned, run.compile)
			if err != nil {
				return fmt.Errorf("bench --chain %s: %w", f, err)
			}
			r, err := chainFn(ctx, run.ordinal, stages, tuner.ChainOptions{PDL: pdl, Recorded: pdl, Reads: ch.tuned, Attribute: ch.tuned && run.attribute,
				BatchTokens: run.batch})
			if err != nil {
				return fmt.Errorf("bench --chain %s (%s): %w", f, ch.name, err)
			}
			modes := []tuner.ChainModeTiming{{Mode: ch.name, ChainTiming: r.ChainTiming}}
			if r.PDL != nil {
				modes = append(modes, tuner.ChainModeTiming{Mode: ch.name + ", PDL", ChainTiming: *r.PDL})
			}
			if r.Recorded != nil {
				modes = append(modes, tuner.ChainModeTiming{Mode: ch.name + ", as recorded", ChainTiming: *r.Recorded})
			}
			for _, m := range append(modes, r.Reads...) {
				if err := row(f, m.Mode, r, m.ChainTiming); err != nil {
					return err
				}
			}
			if !ch.tuned {
				continue
			}
			for _, sp := range r.Spills {
				verdicts = append(verdicts, spillNote(sp))
			}
			if r.PDL != nil {
				verdicts = append(verdicts, launchVerdict(f, r.ChainTiming, *r.PDL))
			}
			if v, ok := readVerdict(f, modes, r.Reads); ok {
				verdicts = append(verdicts, v)
			}
			if r.PDL != nil && len(r.Attribution) > 0 {
				attributions = append(attributions, attributionTable(f, *r.PDL, r.Attribution))
			}
		}
	}
	if throttled {
		verdicts = append([]string{throttledNote}, verdicts...)
	}
	for _, v := range append(verdicts, attributions...) {
		if _, err := fmt.Fprintln(stdout, v); err != nil {
			return err
		}
	}
	return nil
}

// chainToken is the token run asks for and how the table's first line
// names it: --model's preset, in each of run.formats, or the GGUF file's
// matrices in their own formats, for which it sets run.formats to the one
// label the rows get (their format, or "mixed").
func chainToken(run *chainRun) ([]tokenGEMV, string, error) {
	if run.gguf == "" {
		p, err := presetByName(run.model)
		if err != nil {
			return nil, "", usagef("bench --chain: %v", err)
		}
		token := p.token()
		return token, fmt.Sprintf("%s (%d GEMVs)", p.name, len(token)), nil
	}
	token, err := ggufToken(run.gguf, run.fuse)
	if err != nil {
		return nil, "", err
	}
	count := map[string]int{}
	for _, t := range token {
		count[t.format]++
	}
	formats := slices.SortedFunc(maps.Keys(count), func(a, b string) int { return cmp.Compare(count[b], count[a]) })
	parts := make([]string, len(formats))
	for i, f := range formats {
		parts[i] = fmt.Sprintf("%d %s", count[f], f)
	}
	run.formats = []string{"mixed"}
	if len(formats) == 1 {
		run.formats = formats
	}
	return token, fmt.Sprintf("%s (%d GEMVs: %s)", run.gguf, len(token), strings.Join(parts, ", ")), nil
}

// throttledNote explains the throttled column when a mode was.
const throttledNote = "throttled: the share of a mode's timed batches after which NVML reported a clock-lowering reason " +
	"(the software power cap, mostly), and the lowest SM clock then; such a mode's µs include lowered clocks"

// throttledCell is the throttled column: "–" without NVML, else the share
// of the mode's batches with a clock-lowering reason and, if any, the
// lowest SM clock.
func throttledCell(t tuner.ChainTiming) string {
	switch {
	case t.ClockSamples == 0:
		return "–"
	case t.ThrottledPct == 0:
		return "0 %"
	}
	return fmt.Sprintf("%.0f %%, ≥%d MHz", t.ThrottledPct, t.MinSMMHz)
}

// attributionTable says, per shape of format's tuned token with PDL edges
// (pdl), what the token took with that shape's GEMVs run as reads of
// their bytes (tuner.ChainAttribution), and what those GEMVs cost beyond
// the reads: per token, per GEMV, and their sum over the shapes. A token
// of several formats (a GGUF file's) names each shape's format too.
func attributionTable(format string, pdl tuner.ChainTiming, attr []tuner.ChainAttribution) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, tuned, PDL (%.1f µs): each shape's GEMVs in turn run as a read of their bytes that waits, then reads its own x\n", format, pdl.MedianUS)
	fmt.Fprintf(&b, attributionRow, "shape", "GEMVs", "MB/token", "µs/token", "95% CI µs", "GEMVs over reads µs", "per GEMV µs")
	mixed := slices.ContainsFunc(attr, func(a tuner.ChainAttribution) bool { return a.Job.Format != attr[0].Job.Format })
	total := 0.0
	for _, a := range attr {
		over := pdl.MedianUS - a.MedianUS
		total += over
		shape := a.Job.Shape()
		if mixed {
			shape = a.Job.Format + " " + shape
		}
		fmt.Fprintf(&b, attributionRow, shape, fmt.Sprint(a.Stages), fmt.Sprintf("%.1f", float64(a.Bytes)/1e6), fmt.Sprintf("%.1f", a.MedianUS),
			fmt.Sprintf("%.1f–%.1f", a.LoUS, a.HiUS), fmt.Sprintf("%.1f", over), fmt.Sprintf("%.2f", over/float64(a.Stages)))
	}
	fmt.Fprintf(&b, "%s: every shape's GEMVs together %.1f µs over their reads, %.1f %% of the token", format, total, 100*total/pdl.MedianUS)
	return b.String()
}

// attributionRow is one line of attributionTable.
const attributionRow = "%19s  %5s  %9s  %9s  %15s  %19s  %11s\n"

// spillNote says that a kernel the token ran, compiled from this build's
// source, spills: the tuner never chooses such a variant, so the rows that
// ran it time the spill too.
func spillNote(sp tuner.ChainSpill) string {
	return fmt.Sprintf("%s %s: this build's kernel spills %d bytes at %d registers (ptxas), a variant the tuner prunes; the rows that ran it include the spill",
		sp.Format, sp.Params.ID(), sp.SpillBytes, sp.Registers)
}

// launchVerdict says how the tuned token of format should be launched,
// from its timings without and with PDL edges (interleaved batches): the
// faster one where their intervals do not overlap, else that the edges
// made no difference.
func launchVerdict(format string, plain, pdl tuner.ChainTiming) string {
	change := 100 * (pdl.MedianUS/plain.MedianUS - 1)
	switch {
	case pdl.LoUS > plain.HiUS:
		return fmt.Sprintf("%s, tuned: launch plainly in a graph (PDL edges make the token %.1f %% slower)", format, change)
	case pdl.HiUS < plain.LoUS:
		return fmt.Sprintf("%s, tuned: launch with PDL edges (they make the token %.1f %% faster)", format, -change)
	default:
		return fmt.Sprintf("%s, tuned: PDL edges change nothing beyond the intervals (%+.1f %%)", format, change)
	}
}

// chainYardsticks are the read rows a tuned token is set against, the
// first one timed: one read kernel per stage that waits for the kernel
// before and then reads x, as every GEMV must (sm_90+), else the plain
// reads. Unlike % of the ceiling, the ratio does not move with the
// ceiling's own measurement.
var chainYardsticks = []string{"reads, PDL, x", "reads"}

// readVerdict says how fast the tuned token's fastest mode runs against
// the first of chainYardsticks among reads; false when none was timed.
func readVerdict(format string, tuned, reads []tuner.ChainModeTiming) (string, bool) {
	if len(tuned) == 0 {
		return "", false
	}
	best := tuned[0]
	for _, m := range tuned[1:] {
		if m.MedianUS < best.MedianUS {
			best = m
		}
	}
	for _, name := range chainYardsticks {
		for _, r := range reads {
			if r.Mode == name {
				return fmt.Sprintf("%s, %s: %.1f %% of the speed of %q (%.1f µs), one read kernel per stage", format, best.Mode,
					100*r.MedianUS/best.MedianUS, name, r.MedianUS), true
			}
		}
	}
	return "", false
}

// chainRow is one line of the chain table, right-aligned columns wide
// enough for the header and for every value a token can take.
const chainRow = "%8s  %20s  %9s  %17s  %9s  %16s  %16s  %12s  %10s  %11s  %16s\n"

// chainStages is the token's GEMVs in format (each in its own where it has
// one) with stock (v1) everywhere, or with what the policy chooses for this
// GPU (its cubin when stored, unless compile: then this build's source of
// the same variant).
func chainStages(pol *gemvtune.Policy, arch, format string, token []tokenGEMV, tuned, compile bool) ([]tuner.ChainStage, error) {
	var out []tuner.ChainStage
	for _, t := range token {
		st := tuner.ChainStage{Name: t.name, Format: cmp.Or(t.format, format), Rows: t.shape.Rows, Cols: t.shape.Cols, Params: space.Stock, XBack: t.xBack}
		if tuned && pol != nil {
			c, err := pol.Lookup(arch, st.Format, t.shape.Rows, t.shape.Cols)
			if err != nil {
				return nil, err
			}
			st.Params, st.Cubin, st.PDLShared, st.LaunchPDL = c.Params, c.Cubin, c.PDLSharedBytes, c.PDLPays()
			if compile {
				st.Cubin = nil
			}
		}
		out = append(out, st)
	}
	return out, nil
}
