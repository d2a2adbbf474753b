package main

import (
	"context"
	"fmt"
	"io"

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

// chainMode is one way the token runs: whose choices, and with PDL.
type chainMode struct {
	name  string
	tuned bool
	pdl   bool
}

var chainModes = []chainMode{{"stock", false, false}, {"stock, PDL", false, true}, {"tuned", true, false}, {"tuned, PDL", true, true}}

// benchChain runs one token of model for every format, in every mode, on
// GPU ordinal, and prints a row per (format, mode).
func benchChain(ctx context.Context, model string, formats []string, cachePath string, ordinal int, stdout, stderr io.Writer) error {
	p, err := presetByName(model)
	if err != nil {
		return usagef("bench --chain: %v", err)
	}
	gpus, err := chainGPUsFn()
	if err != nil {
		return fmt.Errorf("bench --chain: %w", err)
	}
	if ordinal < 0 || ordinal >= len(gpus) {
		return usagef("bench --chain: --gpu %d: this machine has GPUs 0..%d", ordinal, len(gpus)-1)
	}
	g := gpus[ordinal]
	pol, _ := gemvtune.Open(&gemvtune.Options{CachePath: cachePath, ContinueOnCacheError: true, GPUName: g.Name,
		LookupEnv: func(string) (string, bool) { return "", false }})
	if pol != nil && pol.CacheErr != nil {
		fmt.Fprintf(stderr, "autotune: bench --chain: %v: the tuned rows run what lookups give without it (stock)\n", pol.CacheErr)
	}
	token := p.token()
	fmt.Fprintf(stdout, "one token of %s (%d GEMVs) on GPU %d, %s\n", p.name, len(token), ordinal, g.Name)
	// Fixed widths, not a tabwriter: each row is printed as its mode
	// finishes (a format's four modes take seconds each), and the rows
	// must line up with the header all the same.
	fmt.Fprintf(stdout, chainRow, "format", "mode", "µs/token", "95% CI µs", "MB/token", "ceiling GB/s", "bytes/ceiling µs", "% of ceiling", "GEMV tok/s", "max rel err")
	pdl := g.Arch.Major >= 9
	if !pdl {
		fmt.Fprintf(stderr, "autotune: bench --chain: %s is %s: no PDL modes (programmatic dependent launch needs sm_90 or newer)\n", g.Name, g.Arch)
	}
	var verdicts []string
	for _, f := range formats {
		got := map[string]tuner.ChainResult{}
		for _, m := range chainModes {
			if m.pdl && !pdl {
				continue
			}
			stages, err := chainStages(pol, g.Arch.String(), f, token, m.tuned)
			if err != nil {
				return fmt.Errorf("bench --chain %s: %w", f, err)
			}
			r, err := chainFn(ctx, ordinal, stages, tuner.ChainOptions{PDL: m.pdl})
			if err != nil {
				return fmt.Errorf("bench --chain %s (%s): %w", f, m.name, err)
			}
			_, err = fmt.Fprintf(stdout, chainRow, f, m.name, fmt.Sprintf("%.1f", r.MedianUS), fmt.Sprintf("%.1f–%.1f", r.LoUS, r.HiUS),
				fmt.Sprintf("%.1f", float64(r.Bytes)/1e6), fmt.Sprintf("%.0f", r.CeilingGBs), fmt.Sprintf("%.1f", float64(r.Bytes)/(r.CeilingGBs*1e3)),
				fmt.Sprintf("%.1f", r.PctCeiling), fmt.Sprintf("%.0f", r.TokPerS), fmt.Sprintf("%.2g", r.MaxRelErr))
			if err != nil {
				return err
			}
			got[m.name] = r
		}
		if r, ok := got["tuned, PDL"]; ok {
			verdicts = append(verdicts, launchVerdict(f, got["tuned"], r))
		}
	}
	for _, v := range verdicts {
		if _, err := fmt.Fprintln(stdout, v); err != nil {
			return err
		}
	}
	return nil
}

// launchVerdict says how the tuned token of format should be launched,
// from its runs without and with PDL edges: the faster one where their
// intervals do not overlap, else that the edges made no difference.
func launchVerdict(format string, plain, pdl tuner.ChainResult) string {
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

// chainRow is one line of the chain table, right-aligned columns wide
// enough for the header and for every value a token can take.
const chainRow = "%8s  %11s  %9s  %17s  %9s  %12s  %16s  %12s  %10s  %11s\n"

// chainStages is the token's GEMVs in format with stock (v1) everywhere,
// or with what the policy chooses for this GPU (its cubin when stored).
func chainStages(pol *gemvtune.Policy, arch, format string, token []tokenGEMV, tuned bool) ([]tuner.ChainStage, error) {
	var out []tuner.ChainStage
	for _, t := range token {
		st := tuner.ChainStage{Name: t.name, Format: format, Rows: t.shape.Rows, Cols: t.shape.Cols, Params: space.Stock}
		if tuned && pol != nil {
			c, err := pol.Lookup(arch, format, t.shape.Rows, t.shape.Cols)
			if err != nil {
				return nil, err
			}
			st.Params, st.Cubin = c.Params, c.Cubin
		}
		out = append(out, st)
	}
	return out, nil
}
