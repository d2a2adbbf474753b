package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/gemvtune/gemvtune"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/tuner"
	"github.com/gemvtune/gemvtune/variants"
)

func init() {
	register(&command{name: "bench", short: "measure the tuned variant against stock and the read ceiling",
		run: func(ctx context.Context, args []string) error { return benchMain(ctx, args, os.Stdout, os.Stderr) }})
}

const benchUsage = `usage: autotune bench [--arch sm_XY|auto] [--formats q4_0,...] [--shapes RxC,...] [--cache PATH] [--warm-l2]
       autotune bench --variants ID,... [--arch ...] [--formats ...] [--shapes ...] [--warm-l2]
       autotune bench --chain [--model NAME] [--formats ...] [--cache PATH] [--gpu N] [--compile] [--batch-tokens N] [--refine [--try F:RxC:ID,...] | --attribute]
       autotune bench --chain --gguf FILE [--fuse] [--cache PATH] [--gpu N] [--compile] [--batch-tokens N] [--refine [--try F:RxC:ID,...] | --attribute]

Measures, on the local GPUs, stock (v1) against the best variant, interleaved,
and prints µs, GB/s and % of the read ceiling measured in the same run. The
best variant is the cache's tuned winner when there is one (it is re-measured
against stock); otherwise the whole space is tuned now, without recording.
With --variants, exactly those variants (each format takes the ones it has)
are verified and measured against stock, and every one gets a row.
Defaults: all formats, shapes 28672x8192 and 4096x14336.
With --chain, one decoded token's GEMVs of --model (default llama-3-8b) run
back to back in one CUDA graph, each stage's x the output of the one
before, every layer's weights in memory of their own: stock, then the
cache's choices for this GPU, each without and with PDL edges (a tuned
stage's PDL launch with its recorded shared memory), and as the choices'
launch modes say where they differ, every output checked against the
float64 reference (docs/tuner.md, "The decode chain"); with --compile the
tuned choices run this build's kernel source, not their stored cubins.
Each mode's row says how many of its timed batches ran with lowered clocks
(NVML; the power cap); --batch-tokens N times N tokens back to back per
batch (default 5), and 100 or more hold the GPU at full power as an
engine decoding without pause does.
With --chain --gguf FILE, the token is the model file's: every block's
matrices one by one in the order an engine multiplies by them (q, k, v,
the output projection, gate, up, down), each in its tensor's format, then
the lm head; q, k and v read one x, as do gate and up (docs/tuner.md).
With --fuse, each block's q, k and v run as one GEMV, and its gate and up,
where they share a format and columns (an engine that concatenates them at
load). Tune the file's shapes first: autotune --gguf FILE [--fuse].
With --chain --refine, the tuned token instead runs with each of the
cache's other candidates for a shape in place of its choice (the fastest
few alone and the fastest of each staging form and grid share),
interleaved with the token as tuned; the ones that made it faster beyond
the intervals run together in a second run. It prints what each changed;
nothing is recorded. --try FORMAT:ROWSxCOLS:ID,... tries those variants
instead of the cache's candidates, each at a shape of the token (compiled
from this build's source), e.g. --try q4_0:28672x4096:r2f0u2s3w16g4l2a1.
With --chain --attribute (sm_90+), the tuned token with PDL edges is also
run once per shape with that shape's GEMVs replaced by a streaming read of
their weights that waits for the kernel before, reads its own x and
writes nonzero stand-ins to its y (the next stage's x, in L2 as after a
GEMV), and a table per format says what each shape's GEMVs cost beyond
such reads, per token and per GEMV: where the token's time over one read
per stage goes.
With --warm-l2 every launch reads one copy of the weights, as harnesses
that replay one matrix do (ggml's test-backend-ops): below the L2 size the
times are L2-warm, for like-for-like comparisons with such harnesses only.
`

func benchMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, benchUsage); fs.PrintDefaults() }
	arch := fs.String("arch", "auto", "compute capability sm_XY, or auto")
	formats := fs.String("formats", strings.Join(variants.FormatNames, ","), "formats, comma-separated")
	fs.StringVar(formats, "format", *formats, "the same as --formats")
	shapes := fs.String("shapes", "28672x8192,4096x14336", "shapes ROWSxCOLS, comma-separated")
	fs.StringVar(shapes, "shape", *shapes, "the same as --shapes")
	cachePath := fs.String("cache", "", "cache file with tuned winners (default $GEMV_TUNE_CACHE or the user cache folder)")
	ids := fs.String("variants", "", "measure these variant IDs (comma-separated) against stock instead of the tuned winner")
	chain := fs.Bool("chain", false, "time one decoded token's GEMVs in a graph (stock and tuned, without and with PDL, and as recorded)")
	model := fs.String("model", defaultModel, "with --chain: the model preset whose token runs: "+strings.Join(presetNames(), ", "))
	ggufPath := fs.String("gguf", "", "with --chain: run the token of this GGUF model file instead, its matrices in their own formats (no weights are read; not with --model or --formats)")
	fuse := fs.Bool("fuse", false, "with --chain --gguf: run each block's q, k and v as one GEMV, and its gate and up, where they share a format and columns, as an engine that concatenates them at load does")
	ordinal := fs.Int("gpu", 0, "with --chain: the GPU ordinal to run on")
	compile := fs.Bool("compile", false, "with --chain: compile the tuned choices from this build's kernel source instead of running their stored cubins")
	attribute := fs.Bool("attribute", false, "with --chain: also time the tuned token with each shape's GEMVs in turn replaced by a read of their bytes, and print what each shape's GEMVs cost beyond it (PDL edges, sm_90+)")
	batch := fs.Int("batch-tokens", 0, "with --chain: tokens per timed batch, back to back (default 5; 100 or more hold the GPU at full power, as an engine decoding without pause does)")
	refine := fs.Bool("refine", false, "with --chain: try the cache's other candidates in the tuned token, each alone and the faster ones together, and print what each changes (nothing is recorded)")
	try := fs.String("try", "", "with --chain --refine: try these variants instead of the cache's candidates, FORMAT:ROWSxCOLS:ID, comma-separated")
	warm := fs.Bool("warm-l2", false, "time over one copy of the weights (L2-warm below the L2 size), like ggml's test-backend-ops; not with --chain")
	if help, err := parseArgs(fs, args, 0); help || err != nil {
		return err
	}
	fl, err := parseFormats(*formats)
	if err != nil {
		return usagef("bench: %v", err)
	}
	sl, err := parseShapes(*shapes)
	if err != nil {
		return usagef("bench: %v", err)
	}
	if *arch != "auto" {
		if _, err := space.ParseArch(*arch); err != nil {
			return usagef("bench: %v", err)
		}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case *ggufPath != "" && !*chain:
		return usagef("bench: --gguf is for --chain (to tune a file's shapes: autotune --gguf FILE)")
	case *fuse && *ggufPath == "":
		return usagef("bench: --fuse is for --chain --gguf (a --model preset's token fuses already)")
	case *ggufPath != "" && (set["model"] || set["formats"] || set["format"]):
		return usagef("bench: --gguf runs the file's own matrices in their own formats: not with --model or --formats")
	case *chain && *warm:
		return usagef("bench: --warm-l2 times one kernel at a time; a --chain token reads every layer's own weights")
	case *compile && !*chain:
		return usagef("bench: --compile is for --chain (--variants always compiles)")
	case *refine && !*chain:
		return usagef("bench: --refine is for --chain")
	case *attribute && (!*chain || *refine):
		return usagef("bench: --attribute is for --chain without --refine")
	case *try != "" && !*refine:
		return usagef("bench: --try is for --chain --refine")
	case *batch != 0 && (!*chain || *refine):
		return usagef("bench: --batch-tokens is for --chain without --refine")
	case *batch < 0 || *batch > 1000:
		return usagef("bench: --batch-tokens %d: want 1 to 1000", *batch)
	}
	tries, err := parseTries(*try, fl)
	if err != nil {
		return usagef("bench: --try: %v", err)
	}
	if *ids != "" {
		return benchVariants(ctx, *arch, fl, sl, *ids, *warm, stdout, stderr)
	}
	if *chain {
		return benchChain(ctx, chainRun{model: *model, gguf: *ggufPath, fuse: *fuse, formats: fl, cachePath: *cachePath, ordinal: *ordinal, compile: *compile, refine: *refine, tries: tries, attribute: *attribute,
			batch: *batch},
			stdout, stderr)
	}
	gpus, err := localGPUsFn()
	if err != nil {
		return fmt.Errorf("bench: %w", err) // alone: before any note on the cache or on what it will tune
	}
	pol, _ := gemvtune.Open(&gemvtune.Options{CachePath: *cachePath, ContinueOnCacheError: true, LookupEnv: func(string) (string, bool) { return "", false }})
	if pol != nil && pol.CacheErr != nil {
		fmt.Fprintf(stderr, "autotune: bench: %v: what it would hold is tuned now (not recorded)\n", pol.CacheErr)
	}
	var ds []tuner.Decision
	var untuned []benchJob
	for _, b := range benchPlan(pol, benchTargets(*arch, gpus), fl, sl) {
		if b.only == nil {
			untuned = append(untuned, b)
			continue
		}
		d, err := tuner.Run(ctx, []tuner.Job{b.job}, tuner.Options{Arch: b.arch, Only: b.only, WarmL2: *warm})
		if err != nil {
			return err
		}
		ds = append(ds, d...)
	}
	for _, group := range groupByArch(untuned) {
		fmt.Fprintf(stderr, "autotune: bench: %d (format, shape) without a tuned record for %s: tuning them now (not recorded)\n", len(group.jobs), group.arch)
		d, err := tuner.Run(ctx, group.jobs, tuner.Options{Arch: group.arch, WarmL2: *warm})
		ds = append(ds, d...)
		if err != nil {
			return err
		}
	}
	if err := warmNote(stdout, *warm); err != nil {
		return err
	}
	return writeBench(stdout, ds)
}

// benchTargets are the GPUs bench measures on for --arch arch: of the
// GPUs a run on arch uses (gpusOf), the first of each arch, whose model
// the cache lookups name; or arch itself, with no model, when none is
// listed (tuner.Run then says why it cannot run there).
func benchTargets(arch string, gpus []localGPU) []localGPU {
	var out []localGPU
	for _, g := range gpusOf(arch, gpus) {
		if !slices.ContainsFunc(out, func(t localGPU) bool { return t.arch == g.arch }) {
			out = append(out, g)
		}
	}
	if len(out) == 0 {
		out = append(out, localGPU{arch: arch})
	}
	return out
}

// benchJob is one (format, shape) that bench measures on the GPUs of arch:
// against the cache's tuned winner (only), or, with only nil, against
// whatever the whole space gives now.
type benchJob struct {
	arch string
	job  tuner.Job
	only []string
}

// benchPlan is every format and shape on every target, each with the
// winner pol holds for exactly that shape on the target's arch and GPU
// model; pol may be nil (no cache).
func benchPlan(pol *gemvtune.Policy, targets []localGPU, formats []string, shapes []space.Shape) []benchJob {
	var out []benchJob
	for _, t := range targets {
		for _, f := range formats {
			for _, s := range shapes {
				b := benchJob{arch: t.arch, job: tuner.Job{Format: f, Rows: s.Rows, Cols: s.Cols}}
				if pol != nil && t.arch != "auto" {
					if c, err := pol.LookupGPU(t.arch, t.model, f, s.Rows, s.Cols); err == nil && c.Source == gemvtune.SourceTuned && c.ID != space.StockAlias {
						b.only = []string{c.ID}
					}
				}
				out = append(out, b)
			}
		}
	}
	return out
}

// archJobs are the jobs of one arch.
type archJobs struct {
	arch string
	jobs []tuner.Job
}

// groupByArch gathers bs's jobs per arch, in the order the archs first
// appear.
func groupByArch(bs []benchJob) []archJobs {
	var out []archJobs
	for _, b := range bs {
		i := slices.IndexFunc(out, func(g archJobs) bool { return g.arch == b.arch })
		if i < 0 {
			out = append(out, archJobs{arch: b.arch})
			i = len(out) - 1
		}
		out[i].jobs = append(out[i].jobs, b.job)
	}
	return out
}

// benchVariants measures the listed variants against stock for every
// (format, shape); a format skips the IDs it has no kernel for (a layout or
// activation path it lacks), and says so.
func benchVariants(ctx context.Context, arch string, formats []string, shapes []space.Shape, list string, warm bool, stdout, stderr io.Writer) error {
	var ps []space.Params
	for _, id := range strings.Split(list, ",") {
		p, err := space.Parse(strings.TrimSpace(id))
		if err != nil {
			return usagef("bench: --variants: %v", err)
		}
		ps = append(ps, p)
	}
	var ds []tuner.Decision
	for _, f := range formats {
		fam, err := variants.FamilyOf(f)
		if err != nil {
			return usagef("bench: %v", err)
		}
		var only, skipped []string
		for _, p := range ps {
			if _, err := fam.Source(p); err != nil {
				skipped = append(skipped, p.ID())
				continue
			}
			only = append(only, p.ID())
		}
		if len(skipped) > 0 {
			fmt.Fprintf(stderr, "bench: %s has no kernel for %s: skipped\n", f, strings.Join(skipped, ", "))
		}
		if len(only) == 0 {
			continue
		}
		var jobs []tuner.Job
		for _, s := range shapes {
			jobs = append(jobs, tuner.Job{Format: f, Rows: s.Rows, Cols: s.Cols})
		}
		d, err := tuner.Run(ctx, jobs, tuner.Options{Arch: arch, Only: only, WarmL2: warm})
		ds = append(ds, d...)
		if err != nil {
			return err
		}
	}
	if err := warmNote(stdout, warm); err != nil {
		return err
	}
	return writeBenchVariants(stdout, ds)
}

// warmNote heads an L2-warm table with what its times are.
func warmNote(w io.Writer, warm bool) error {
	if !warm {
		return nil
	}
	_, err := fmt.Fprintln(w, "# L2-warm (--warm-l2): one copy of the weights replayed; below the L2 size they come from L2, not DRAM, and % ceil can pass 100")
	return err
}

// writeBenchVariants prints one row per measured variant: its median, the
// spread of that median, GB/s, % of the ceiling and its time against stock.
func writeBenchVariants(w io.Writer, ds []tuner.Decision) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "format\tshape\tvariant\tclass\tµs\t95% CI µs\tGB/s\t% ceil\tvs stock\tPDL µs\tPDL % ceil\tregs\tblocks/SM\tstatus\t")
	for _, d := range ds {
		for _, c := range d.Candidates {
			status := string(c.Status)
			if c.Reason != "" && c.Status != tuner.StatusOK {
				status += ": " + c.Reason
			}
			vs := ""
			if c.MedianUS > 0 && d.Stock.MedianUS > 0 {
				vs = fmt.Sprintf("%.2fx", d.Stock.MedianUS/c.MedianUS)
			}
			pdlUS, pdlPct := pdlCols(d, c)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%.2f–%.2f\t%.0f\t%.1f\t%s\t%s\t%s\t%d\t%d\t%s\t\n", d.Format, d.Shape(), c.ID, c.Class,
				c.MedianUS, c.LoUS, c.HiUS, c.GBs, c.PctCeiling, vs, pdlUS, pdlPct, c.Registers, c.BlocksPerSM, status)
		}
		if d.ReadUS > 0 {
			fmt.Fprintf(tw, "%s\t%s\tread (same bytes)\t\t%.2f\t\t%.0f\t%.1f\t\t\t\t\t\t\t\n", d.Format, d.Shape(), d.ReadUS, d.ReadGBs, pct(d.ReadGBs, d.CeilingGBs))
		}
		fmt.Fprintf(tw, "%s\t%s\tceiling\t\t\t\t%.0f\t100.0\t\t\t\t\t\t\t\n", d.Format, d.Shape(), d.CeilingGBs)
	}
	return tw.Flush()
}

// pct is 100·a/b, or 0 when b is not positive.
func pct(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return 100 * a / b
}

// ofRead is a kernel's speed as a share of the same-bytes read (readUS /
// us: 100 % = as fast as reading the weights once), or "-" when the read
// or the kernel was not measured.
func ofRead(readUS, us float64) string {
	if readUS <= 0 || us <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", pct(readUS, us))
}

// pdlCols formats c's time in a chain of PDL launches and its % of the
// ceiling, or "-" twice when it was not measured.
func pdlCols(d tuner.Decision, c tuner.Candidate) (string, string) {
	if c.PDLUS <= 0 {
		return "-", "-"
	}
	gbs := float64(d.Bytes) / (c.PDLUS * 1e-6) / 1e9
	return usOrDash(c.PDLUS), fmt.Sprintf("%.1f", pct(gbs, d.CeilingGBs))
}

// usOrDash formats a time in µs, or "-" when it was not measured (0).
func usOrDash(us float64) string {
	if us <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", us)
}

// writeBench prints one row per (format, shape): stock, the best verified
// variant (even when it did not beat stock significantly), the ceiling,
// and the streaming read of the same bytes (its µs, and the best's time as
// a share of it: 100 % would be a GEMV as fast as merely reading its
// weights once).
func writeBench(w io.Writer, ds []tuner.Decision) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "format\tshape\tMB\tstock µs\tGB/s\t% ceil\tbest\tµs\tGB/s\t% ceil\tceiling GB/s\tread µs\t% of read\tPDL µs\tPDL % ceil\tdecision\t")
	for _, d := range ds {
		bestC := d.Fastest()
		pdlUS, pdlPct := pdlCols(d, bestC)
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.2f\t%.0f\t%.1f\t%s\t%.2f\t%.0f\t%.1f\t%.0f\t%s\t%s\t%s\t%s\t%s\t\n", d.Format, d.Shape(), float64(d.Bytes)/1e6,
			d.Stock.MedianUS, d.Stock.GBs, d.Stock.PctCeiling, bestC.ID, bestC.MedianUS, bestC.GBs, bestC.PctCeiling, d.CeilingGBs,
			usOrDash(d.ReadUS), ofRead(d.ReadUS, bestC.MedianUS), pdlUS, pdlPct, d.Reason)
	}
	return tw.Flush()
}
