package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

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
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(stdout, "one token of %s (%d GEMVs) on GPU %d, %s\n", p.name, len(token), ordinal, g.Name)
	fmt.Fprintln(tw, "format\tmode\tµs/token\t95% CI µs\tMB/token\tceiling GB/s\tbytes/ceiling µs\t% of ceiling\tGEMV tok/s\tmax rel err\t")
	for _, f := range formats {
		for _, m := range chainModes {
			stages, err := chainStages(pol, g.Arch.String(), f, token, m.tuned)
			if err != nil {
				return fmt.Errorf("bench --chain %s: %w", f, err)
			}
			r, err := chainFn(ctx, ordinal, stages, tuner.ChainOptions{PDL: m.pdl})
			if err != nil {
				return fmt.Errorf("bench --chain %s (%s): %w", f, m.name, err)
			}
			fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.1f–%.1f\t%.1f\t%.0f\t%.1f\t%.1f\t%.0f\t%.2g\t\n", f, m.name, r.MedianUS, r.LoUS, r.HiUS,
				float64(r.Bytes)/1e6, r.CeilingGBs, float64(r.Bytes)/(r.CeilingGBs*1e3), r.PctCeiling, r.TokPerS, r.MaxRelErr)
			tw.Flush()
		}
	}
	return tw.Flush()
}

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
