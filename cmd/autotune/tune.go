package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/internal/termtext"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/tuner"
	"github.com/gemvtune/gemvtune/variants"
)

func init() {
	register(&command{
		name:  "tune",
		short: "tune the local GPUs (the default command; autotune tune --help lists its flags)",
		run: func(ctx context.Context, args []string) error {
			return tuneMain(ctx, args, os.Stdout, os.Stderr)
		},
	})
}

// The tuner entry points, behind variables so tests can use fakes.
var (
	planFn = tuner.Plan
	// sharePlanFn is tuner.PlanShare, replaced in tests with planFn.
	sharePlanFn = tuner.PlanShare
	runFn       = tuner.Run
)

// defaultModel is the shape source when none is given.
const defaultModel = "llama-3-8b"

// tuneFlags holds the parsed command line of the tune command.
type tuneFlags struct {
	arch      string
	model     string
	shapes    string
	gguf      string
	formats   string
	cachePath string
	budget    string
	budgetSpec
	search string
	dryRun bool
	json   bool
	force  bool
	wait   bool
	shard  string
	refine bool
	fuse   bool
}

const tuneUsage = `usage: autotune [--arch sm_XY|auto] [--model NAME | --shapes RxC,... | --gguf FILE]
                [--formats q4_0,q8_0,...] [--cache PATH] [--budget N]
                [--dry-run] [--json] [--force] [--wait] [--shard I/N] [--refine] [--fuse]

Finds, for each local GPU, weight format and matrix shape, the fastest
kernel variant that is correct and beats the stock kernel significantly,
and stores it in the cache engines read at start-up. Progress goes to
stderr, the final table (or --json) to stdout. Finished entries are saved
as they finish: after Ctrl-C, run the same command again to resume.

Shapes are ROWSxCOLS = out x in. With no --model, --shapes or --gguf the
shapes of --model ` + defaultModel + ` are tuned.

flags:
`

const tuneExitCodes = `
exit codes: 0 ok (also --help and --dry-run), 1 failure (no matching GPU,
unreadable file, a run that failed or was interrupted), 2 usage error.
`

// newTuneFlagSet declares the tune command's flags on a fresh FlagSet.
func newTuneFlagSet(f *tuneFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("autotune", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.arch, "arch", "auto", "`arch` to tune: sm_XY tunes every local GPU of that compute capability; auto tunes each local GPU for its own")
	fs.StringVar(&f.model, "model", "", "tune the decode GEMV shapes of a model preset `NAME`: "+strings.Join(presetNames(), ", "))
	fs.StringVar(&f.shapes, "shapes", "", "tune these comma-separated `shapes` ROWSxCOLS, e.g. 4096x14336,1024x4096")
	fs.StringVar(&f.gguf, "gguf", "", "tune exactly the (format, shape) pairs of the weight matrices in GGUF `FILE` (no weights are read)")
	fs.BoolVar(&f.fuse, "fuse", false, "with --gguf: the pairs of the file's token with each block's q, k, v and its gate, up fused where they share a format and columns, as an engine that concatenates them at load runs them (and --refine refines that token)")
	fs.StringVar(&f.formats, "formats", "", "comma-separated `formats` to tune (default all: "+strings.Join(variants.FormatNames, ",")+")")
	fs.StringVar(&f.formats, "format", "", "the same as --formats")
	fs.StringVar(&f.shapes, "shape", "", "the same as --shapes")
	fs.StringVar(&f.cachePath, "cache", "", "cache `PATH` (default $GEMV_TUNE_CACHE, else $XDG_CACHE_HOME/gemvtune/tune.db)")
	fs.StringVar(&f.budget, "budget", "0", "a budgeted search: `N` timed batches per (format, shape), a share of the exhaustive run's batches (25%), or a time for the whole run (60s, 2m); 0 measures every candidate in full")
	fs.StringVar(&f.search, "search", "", "the search strategy: "+strings.Join(tuner.SearchNames(), ", ")+" (default: race under a budget, else exhaustive; docs/tuner.md)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print the plan (candidates after static pruning, main exclusions, expected time) and exit; needs no GPU")
	fs.BoolVar(&f.json, "json", false, "print the decisions as JSON instead of the table")
	fs.BoolVar(&f.force, "force", false, "re-tune entries the cache already holds and are not stale")
	fs.BoolVar(&f.wait, "wait", false, "wait for another tuner of the same GPU, or another writer of the cache, to finish instead of failing (Ctrl-C or SIGTERM stops the wait)")
	fs.StringVar(&f.shard, "shard", "", "tune only part `I/N` of the job list (0 ≤ I < N): N machines (or processes with a cache file each) running their parts tune the list once; merge the parts with push and pull, or export and import")
	fs.BoolVar(&f.refine, "refine", false, "after the jobs, run the model's decoded token (sm_90+: with PDL edges) with each shape's next-best candidates in place of its winner and keep those that make the token faster, a second time after a round that changed one; a re-run refines the tokens the cache does not mark refined (docs/tuner.md, \"Choosing in the token\")")
	return fs
}

// printTuneHelp writes the tune command's help.
func printTuneHelp(w io.Writer) {
	var f tuneFlags
	fs := newTuneFlagSet(&f)
	fs.SetOutput(w)
	fmt.Fprint(w, tuneUsage)
	fs.PrintDefaults()
	fmt.Fprint(w, tuneExitCodes)
}

// errHelp is returned by parseTuneFlags when help was asked for.
var errHelp = errors.New("help requested")

// parseTuneFlags parses and checks the tune command line. Every error is a
// usage error (exit 2) except errHelp.
func parseTuneFlags(args []string) (tuneFlags, error) {
	var f tuneFlags
	fs := newTuneFlagSet(&f)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return f, errHelp
		}
		return f, usagef("%v (see autotune --help)", err)
	}
	if fs.NArg() > 0 {
		return f, usagef("unexpected argument %q: flags only (see autotune --help)", fs.Arg(0))
	}
	if f.arch != "auto" {
		if _, err := space.ParseArch(f.arch); err != nil {
			return f, usagef("--arch: %v or auto", err)
		}
		if _, err := space.LimitsFor(f.arch); err != nil {
			return f, usagef("--arch %s: this autotune has no limits for it: accepted %s or auto", f.arch,
				strings.Join(space.KnownArchs(), ", "))
		}
	}
	sources := 0
	for _, s := range []string{f.model, f.shapes, f.gguf} {
		if s != "" {
			sources++
		}
	}
	if sources > 1 {
		return f, usagef("give one of --model, --shapes and --gguf")
	}
	bs, err := parseBudget(f.budget)
	if err != nil {
		return f, usagef("%v", err)
	}
	f.budgetSpec = bs
	if f.search != "" && !slices.Contains(tuner.SearchNames(), f.search) {
		return f, usagef("--search %q: accepted %s", termtext.Printable(f.search), strings.Join(tuner.SearchNames(), ", "))
	}
	if f.shard != "" {
		if _, err := tuner.ParseShard(f.shard); err != nil {
			return f, usagef("--%v", err)
		}
	}
	switch {
	case f.fuse && f.gguf == "":
		return f, usagef("--fuse fuses a --gguf file's matrices (a --model preset tunes the fused shapes already)")
	case f.refine && f.shapes != "":
		return f, usagef("--refine runs a token: a model preset's (--model, or no shapes at all: %s) or a GGUF file's (--gguf), not --shapes", defaultModel)
	case f.refine && f.shard != "":
		return f, usagef("--refine needs every shape of the token in one run: not with --shard")
	}
	return f, nil
}

// tuneMain runs the tune command.
func tuneMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseTuneFlags(args)
	if errors.Is(err, errHelp) {
		printTuneHelp(stdout)
		return nil
	}
	if err != nil {
		return err
	}
	jobs, notes, err := resolveJobs(f)
	if err != nil {
		return err
	}
	if f.shard != "" {
		spec, _ := tuner.ParseShard(f.shard) // checked by parseTuneFlags
		all := len(jobs)
		jobs = tuner.Shard(jobs, spec)
		notes = append(notes, fmt.Sprintf("shard %s: %d of the %d jobs", spec, len(jobs), all))
		if len(jobs) == 0 {
			fmt.Fprintln(stderr, "autotune: shard "+spec.String()+": nothing to tune in this part (more parts than jobs)")
			return nil
		}
	}
	for _, n := range notes {
		fmt.Fprintln(stderr, "autotune:", n)
	}
	if len(jobs) == 0 {
		return errors.New("no (format, shape) left to tune")
	}
	if f.dryRun {
		return dryRun(f, jobs, stdout)
	}
	return tune(ctx, f, jobs, stdout, stderr)
}

// dryRun prints the static plan of each arch; it needs no GPU when the
// arch is given.
func dryRun(f tuneFlags, jobs []tuner.Job, stdout io.Writer) error {
	archs := []string{f.arch}
	if f.arch == "auto" {
		gpus, err := localGPUsFn()
		if err != nil || len(gpus) == 0 {
			return usagef("--dry-run needs --arch sm_XY when no GPU is visible (the plan depends on the arch)")
		}
		archs = archs[:0]
		for _, g := range gpus {
			if !slices.Contains(archs, g.arch) {
				archs = append(archs, g.arch)
			}
		}
	}
	type archPlan struct {
		Arch   string            `json:"arch"`
		Budget string            `json:"budget"`
		Jobs   []tuner.PlanEntry `json:"jobs"`
	}
	var plans []archPlan
	for i, arch := range archs {
		batches, share, note, err := f.budgetSpec.options(arch, jobs)
		if err != nil {
			return fmt.Errorf("planning for %s: %w", arch, err)
		}
		var plan []tuner.PlanEntry
		if share > 0 {
			plan, err = sharePlanFn(arch, jobs, share)
		} else {
			plan, err = planFn(arch, jobs, batches)
		}
		if err != nil {
			return fmt.Errorf("planning for %s: %w", arch, err)
		}
		if note != "" && !f.json {
			fmt.Fprintln(stdout, note)
		}
		if f.json {
			plans = append(plans, archPlan{arch, f.budgetSpec.String(), plan})
			continue
		}
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		if err := writePlan(stdout, arch, f.budgetSpec, plan); err != nil {
			return err
		}
	}
	if f.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(plans)
	}
	return nil
}

// tune skips what the cache already holds, runs the tuner with progress,
// stores each decision as it finishes, refines the tokens under --refine
// and prints the final table.
func tune(ctx context.Context, f tuneFlags, jobs []tuner.Job, stdout, stderr io.Writer) error {
	store, err := openStore(ctx, f.cachePath, f.wait)
	if err != nil {
		return err
	}
	defer store.Close()
	gpus := runGPUs(f.arch)
	all := jobs

	if !f.force {
		var skipped, refreshed int
		jobs, skipped, refreshed, err = skipFresh(store, gpus, jobs)
		if err != nil {
			return err
		}
		if skipped > 0 {
			fmt.Fprintf(stderr, "autotune: skipping %d (format, shape) already tuned in %s (--force re-tunes them)\n", skipped, store.Path())
			if refreshed > 0 {
				fmt.Fprintf(stderr, "autotune: %d of them were tuned with another kernel source that compiles to the same cubins: kept\n", refreshed)
			}
		}
		if len(jobs) == 0 && !f.refine {
			fmt.Fprintln(stderr, "autotune: nothing left to tune; see autotune show")
			return nil
		}
	}

	var decisions []tuner.Decision
	var runErr error
	if len(jobs) > 0 {
		decisions, runErr = runJobs(ctx, f, store, gpus, jobs, stderr)
	}
	var unrefined []string // formats whose refinement an interrupt cut short
	if f.refine && runErr == nil && ctx.Err() == nil {
		unrefined, runErr = refineTuned(ctx, f, store, gpus, all, decisions, stderr) // replaces decisions in place: the order holds
	}

	if len(decisions) > 0 || runErr == nil && len(jobs) > 0 {
		if err := writeResult(stdout, f.json, decisions); err != nil {
			return err
		}
	}
	switch {
	case ctx.Err() != nil && len(unrefined) > 0:
		return fmt.Errorf("interrupted while refining %s: every tuned entry and every finished refinement are saved in %s; run the same command again to refine the rest",
			strings.Join(unrefined, ", "), store.Path())
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted: %d of %d finished and saved in %s; run the same command again to resume",
			len(decisions), len(jobs), store.Path())
	case runErr != nil:
		// Several jobs may fail (errors.Join): keep the error on one line.
		return errors.New(strings.ReplaceAll(runErr.Error(), "\n", "; "))
	}
	return nil
}

// runJobs runs the tuner on jobs with progress on stderr, storing each
// decision as it finishes, and returns the decisions in the order of jobs
// (every one stored, when the run stopped early) and the run's error.
func runJobs(ctx context.Context, f tuneFlags, store *cache.DB, gpus []localGPU, jobs []tuner.Job, stderr io.Writer) ([]tuner.Decision, error) {
	prog := newProgress(stderr, len(jobs))
	var (
		mu   sync.Mutex
		done []tuner.Decision
	)
	batches, share, note, err := f.budgetSpec.options(budgetArch(f.arch, gpus), jobs)
	if err != nil {
		return nil, err
	}
	if note != "" {
		fmt.Fprintln(stderr, "autotune:", note)
	}
	opts := tuner.Options{
		Arch:        f.arch,
		Budget:      batches,
		BudgetShare: share,
		Search:      f.search,
		Priors:      cachePriors(store, gpus),
		WaitForLock: f.wait,
		Progress:    prog.update,
		Record: func(d tuner.Decision) error {
			if err := putDecision(store, d); err != nil {
				return err
			}
			mu.Lock()
			done = append(done, d)
			mu.Unlock()
			return nil
		},
	}
	decisions, runErr := runFn(ctx, jobs, opts)
	prog.finish()
	mu.Lock()
	if len(decisions) < len(done) {
		decisions = done
	}
	mu.Unlock()
	sortDecisions(decisions, jobs)
	return decisions, runErr
}

// sortDecisions puts decisions, which arrive in the order they finish (GPUs
// work in parallel), in the order of jobs, arch by arch.
func sortDecisions(ds []tuner.Decision, jobs []tuner.Job) {
	order := make(map[tuner.Job]int, len(jobs))
	for i, j := range jobs {
		order[j] = i
	}
	sort.SliceStable(ds, func(a, b int) bool {
		if ds[a].Arch != ds[b].Arch {
			return ds[a].Arch < ds[b].Arch
		}
		return order[ds[a].Job] < order[ds[b].Job]
	})
}

// writeResult prints the decisions as the table or as JSON.
func writeResult(w io.Writer, asJSON bool, ds []tuner.Decision) error {
	if asJSON {
		return writeDecisionsJSON(w, ds)
	}
	return writeDecisions(w, ds)
}

// resolveJobs turns the shape source and --formats into jobs. Notes are
// printed to stderr (types a GGUF file holds that are not tuned, pairs a
// format cannot hold).
func resolveJobs(f tuneFlags) (jobs []tuner.Job, notes []string, err error) {
	formats, err := parseFormats(f.formats)
	if err != nil {
		return nil, nil, err
	}
	if f.gguf != "" && f.fuse {
		return fusedJobs(f.gguf, formats)
	}
	if f.gguf != "" {
		m, err := readGGUF(f.gguf)
		if err != nil {
			return nil, nil, err
		}
		want := map[string]bool{}
		for _, name := range formats {
			want[name] = true
		}
		for _, p := range m.Pairs {
			if want[p.Format] {
				jobs = append(jobs, tuner.Job{Format: p.Format, Rows: p.Shape.Rows, Cols: p.Shape.Cols})
			} else {
				notes = append(notes, fmt.Sprintf("not tuned: %s %s (%d tensors; not in --formats)", p.Format, p.Shape, len(p.Tensors)))
			}
		}
		return jobs, append(notes, m.notTunedLines()...), nil
	}
	var shapes []space.Shape
	if f.shapes != "" {
		if shapes, err = parseShapes(f.shapes); err != nil {
			return nil, nil, err
		}
	} else {
		name := f.model
		if name == "" {
			name = defaultModel
		}
		p, err := presetByName(name)
		if err != nil {
			return nil, nil, usageError{fmt.Errorf("--model: %w", err)}
		}
		shapes = p.shapes()
	}
	for _, format := range formats {
		for _, s := range shapes {
			if why := unfit(format, s); why != "" {
				notes = append(notes, fmt.Sprintf("not tuned: %s %s (%s)", format, s, why))
				continue
			}
			jobs = append(jobs, tuner.Job{Format: format, Rows: s.Rows, Cols: s.Cols})
		}
	}
	return jobs, notes, nil
}

// unfit says why format cannot hold shape s ("" if it can): cols must be a
// multiple of the format's block.
func unfit(format string, s space.Shape) string {
	f, err := variants.FormatOf(format)
	if err != nil {
		return "" // not registered in this build: the tuner reports it
	}
	if bw := f.BlockWeights(); bw > 0 && s.Cols%bw != 0 {
		return fmt.Sprintf("cols %d is not a multiple of the %d-weight block", s.Cols, bw)
	}
	return ""
}

// parseFormats reads --formats: comma-separated format names, "" for all.
// Names match case-insensitively ("q4_k" is q4_K); duplicates are dropped.
func parseFormats(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return append([]string(nil), variants.FormatNames...), nil
	}
	var out []string
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		name := strings.TrimSpace(part)
		canon := ""
		for _, n := range variants.FormatNames {
			if strings.EqualFold(n, name) {
				canon = n
			}
		}
		if canon == "" {
			return nil, usagef("--formats: unknown format %q: accepted: %s", name, strings.Join(variants.FormatNames, ", "))
		}
		if !seen[canon] {
			seen[canon] = true
			out = append(out, canon)
		}
	}
	return out, nil
}

// parseShapes reads --shapes: comma-separated ROWSxCOLS; duplicates are
// dropped, order is kept.
func parseShapes(s string) ([]space.Shape, error) {
	var out []space.Shape
	seen := map[space.Shape]bool{}
	for _, part := range strings.Split(s, ",") {
		sh, err := space.ParseShape(strings.TrimSpace(part))
		if err != nil {
			return nil, usagef("--shapes: %v", err)
		}
		if !seen[sh] {
			seen[sh] = true
			out = append(out, sh)
		}
	}
	return out, nil
}

// localGPU is a local GPU's arch and model (cache.NormalizeModel).
type localGPU struct{ arch, model string }

// localGPUsFn lists the distinct (arch, model) of the local GPUs, for
// resuming (a record counts for the model it was measured on) and
// --dry-run. An error means none can be listed.
var localGPUsFn = probeGPUs

// probeGPUs asks the driver for the local GPUs.
func probeGPUs() ([]localGPU, error) {
	infos, err := gpu.Probe()
	if err != nil {
		return nil, err
	}
	var out []localGPU
	for _, i := range infos {
		if g := (localGPU{i.Arch.String(), cache.NormalizeModel(i.Name)}); !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out, nil
}

// openStore opens the cache for writing at path ("" = cache.DefaultPath).
// With wait, a cache locked by another autotune is waited for.
func openStore(ctx context.Context, path string, wait bool) (*cache.DB, error) {
	if path == "" {
		p, err := cache.DefaultPath()
		if err != nil {
			return nil, err
		}
		path = p
	}
	opts := &cache.Options{}
	if wait {
		opts.Timeout = 24 * time.Hour
	}
	db, err := cache.OpenContext(ctx, path, opts)
	if err != nil {
		if errors.Is(err, cache.ErrLocked) && !wait {
			return nil, fmt.Errorf("%w (--wait waits for it)", err)
		}
		return nil, err
	}
	if m := db.Migrated(); m != "" {
		fmt.Fprintln(os.Stderr, "autotune: "+m)
	}
	return db, nil
}

// runGPUs are the distinct (arch, model) of the local GPUs a run on arch
// ("auto": all) tunes; none when the driver lists none.
func runGPUs(arch string) []localGPU {
	all, err := localGPUsFn()
	if err != nil {
		return nil
	}
	return gpusOf(arch, all)
}

// gpusOf are those of gpus that a run on arch ("auto": all) uses.
func gpusOf(arch string, gpus []localGPU) []localGPU {
	var out []localGPU
	for _, g := range gpus {
		if arch == "auto" || g.arch == arch {
			out = append(out, g)
		}
	}
	return out
}

// skipFresh drops the jobs the cache holds a current record for, for
// every one of gpus, the run's GPU models (their own model's records:
// another model's do not count). It returns the jobs left and how many
// were dropped.
func skipFresh(db *cache.DB, gpus []localGPU, jobs []tuner.Job) (left []tuner.Job, skipped, refreshed int, err error) {
	if len(gpus) == 0 {
		return jobs, 0, 0, nil // nothing to resume on; the tuner says why it cannot run
	}
	for _, j := range jobs {
		fresh := true
		for _, g := range gpus {
			ok, err := isFresh(db, g, j, &refreshed)
			if err != nil {
				return nil, 0, 0, err
			}
			fresh = fresh && ok
		}
		if !fresh {
			left = append(left, j)
		}
	}
	return left, len(jobs) - len(left), refreshed, nil
}

// isFresh reports whether the cache holds a record for (GPU, job) that is
// not stale, or was kept by refresh (counted in refreshed). Missing and
// unreadable records are not fresh (re-tuned).
func isFresh(db *cache.DB, g localGPU, j tuner.Job, refreshed *int) (bool, error) {
	rec, err := db.Get(cache.Key{Arch: g.arch, Model: g.model, Format: j.Format, Rows: j.Rows, Cols: j.Cols})
	switch {
	case errors.Is(err, cache.ErrNotFound), errors.Is(err, cache.ErrBadRecord):
		return false, nil
	case err != nil:
		return false, err
	}
	fam, err := variants.FamilyOf(j.Format)
	if err != nil {
		return false, nil
	}
	if stale, _ := rec.Stale(fam.SourceHash(), cache.ToolVersion); !stale {
		return true, nil
	}
	if refresh(db, rec, fam.SourceHash()) {
		*refreshed++
		return true, nil
	}
	return false, nil
}

// sameCubinFn is tuner.SameCubin; tests replace it.
var sameCubinFn = tuner.SameCubin

// refresh keeps a record that is stale only by its source hash when this
// build's source compiles, with the record's NVRTC, to the very cubins it
// holds (winner and exact alternative): the record then names the current
// hash and is not re-tuned. It reports whether it did.
func refresh(db *cache.DB, rec cache.Record, hash string) bool {
	if rec.Schema != cache.SchemaVersion || rec.ToolVersion != cache.ToolVersion || rec.CubinHash == "" && !rec.Params.IsStock() {
		return false
	}
	same := func(p space.Params, h string) bool {
		if h == "" {
			return p.IsStock() // stock has no stored cubin and nothing to compare
		}
		ok, err := sameCubinFn(rec.Arch, rec.NVRTC, rec.Format, p, h)
		return err == nil && ok
	}
	if !same(rec.Params, rec.CubinHash) {
		return false
	}
	if x := rec.Exact; x != nil && !x.Kept && !same(x.Params, x.CubinHash) {
		return false
	}
	return db.Amend([]cache.Key{rec.Key}, func(r *cache.Record) { r.SourceHash = hash }) == nil
}

// putDecision stores one finished decision and its cubins.
func putDecision(db *cache.DB, d tuner.Decision) error { return tuner.Store(db, d) }
