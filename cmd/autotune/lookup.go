package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gemvtune/gemvtune"
	"github.com/gemvtune/gemvtune/internal/termtext"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

func init() {
	register(&command{name: "lookup", short: "what an engine would get for one format and shape (env applied)",
		run: func(_ context.Context, args []string) error {
			return lookupMain(args, os.Stdout, os.Stderr, os.LookupEnv)
		}})
}

const lookupUsage = `usage: autotune lookup --arch sm_XY --format FORMAT --shape ROWSxCOLS [--cache PATH] [--json]

Prints the variant an engine would run, where the choice came from and why,
with the GEMV_* environment applied exactly as an engine's start-up applies it.
`

// lookupJSON is what --json prints.
type lookupJSON struct {
	Arch    string           `json:"arch"`
	Format  string           `json:"format"`
	Shape   string           `json:"shape"`
	ID      string           `json:"id"`
	Params  space.Params     `json:"params"`
	Class   string           `json:"class"`
	Source  string           `json:"source"`
	Reason  string           `json:"reason"`
	Layout  int              `json:"layout"`
	Launch  *variants.Launch `json:"launch,omitempty"` // grid, block, dynamic smem for the shape
	PDL     bool             `json:"pdl"`              // the kernel supports programmatic dependent launch (Choice.PDL)
	PDLPays bool             `json:"pdl_pays"`         // recorded in PDL launch mode for this shape (Choice.PDLPays)
	// PDLShared is the dynamic shared memory of a PDL launch
	// (Choice.PDLSharedBytes).
	PDLShared uint32             `json:"pdl_shared_bytes"`
	Cubin     bool               `json:"cubin_stored"`
	Evidence  *gemvtune.Evidence `json:"evidence,omitempty"`
	Cache     string             `json:"cache"`
	CacheErr  string             `json:"cache_error,omitempty"`
	Warnings  []string           `json:"warnings,omitempty"` // Policy.Warnings and Notice
}

// environFn is the environment lookup's warnings are about.
var environFn = os.Environ

func lookupMain(args []string, stdout, stderr io.Writer, env func(string) (string, bool)) error {
	fs := flag.NewFlagSet("lookup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, lookupUsage); fs.PrintDefaults() }
	arch := fs.String("arch", "", "compute capability, e.g. sm_90")
	format := fs.String("format", "", "weight format: "+strings.Join(variants.FormatNames, ", "))
	shapeFlag := fs.String("shape", "", "matrix shape ROWSxCOLS, e.g. 4096x14336")
	cachePath := fs.String("cache", "", "cache file (default $GEMV_TUNE_CACHE or the user cache folder)")
	gpuName := fs.String("gpu", "", `the engine's GPU as NVML names it, e.g. "NVIDIA H200" (default: unknown)`)
	asJSON := fs.Bool("json", false, "print JSON")
	if help, err := parseArgs(fs, args, 0); help || err != nil {
		return err
	}
	if *arch == "" || *format == "" || *shapeFlag == "" {
		return usagef("lookup: --arch, --format and --shape are required (see autotune lookup --help)")
	}
	if _, err := space.ParseArch(*arch); err != nil {
		return usagef("lookup: %v", err)
	}
	sh, err := space.ParseShape(*shapeFlag)
	if err != nil {
		return usagef("lookup: %v", err)
	}
	pol, err := gemvtune.Open(&gemvtune.Options{CachePath: *cachePath, ContinueOnCacheError: true, LookupEnv: env,
		Environ: environFn})
	if err != nil {
		return usagef("lookup: %v", err) // an invalid GEMV_* value
	}
	c, err := pol.LookupGPU(*arch, *gpuName, *format, sh.Rows, sh.Cols)
	if err != nil {
		return usagef("lookup: %v", err)
	}
	out := lookupJSON{Arch: *arch, Format: *format, Shape: sh.String(), ID: c.ID, Params: c.Params, Class: c.Class,
		Source: c.Source, Reason: c.Reason, Layout: c.Layout, PDL: c.PDL, PDLPays: c.PDLPays(), PDLShared: c.PDLSharedBytes,
		Cubin: c.Cubin != nil, Evidence: c.Evidence, Cache: pol.CachePath}
	if pol.CacheErr != nil {
		out.CacheErr = pol.CacheErr.Error()
	}
	out.Warnings = pol.Warnings
	if pol.Notice != "" {
		out.Warnings = append(out.Warnings, pol.Notice)
	}
	out.Launch = &c.Launch
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	return writeLookup(stdout, out)
}

// pdlVerdict says how to launch o's kernel: with PDL and its shared
// memory where the record's launch mode is PDL, else plainly.
func pdlVerdict(o lookupJSON) string {
	if o.PDLPays {
		return fmt.Sprintf("recorded in PDL launch mode: launch it with PDL and %d bytes of dynamic shared memory", o.PDLShared)
	}
	return "recorded in plain launch mode: launch it plainly"
}

func writeLookup(w io.Writer, o lookupJSON) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s: %s (%s)\n", o.Arch, o.Format, o.Shape, o.ID, o.Params.ID())
	fmt.Fprintf(&b, "  source  %s\n  reason  %s\n  class   %s\n  layout  %d", o.Source, o.Reason, o.Class, o.Layout)
	if d := variants.LayoutDescription(o.Format, o.Layout); d != "" {
		fmt.Fprintf(&b, ": %s", d)
	}
	if o.Layout != 0 {
		b.WriteString(", repacked once at load")
	}
	b.WriteString("\n")
	if l := o.Launch; l != nil {
		fmt.Fprintf(&b, "  launch  grid %d, block %d, %d bytes of dynamic shared memory\n", l.Grid[0], l.Block[0], l.SharedBytes)
	}
	if o.Cubin {
		b.WriteString("  cubin   stored\n")
	} else {
		b.WriteString("  cubin   none (the engine compiles the variant)\n")
	}
	if e := o.Evidence; e != nil {
		fmt.Fprintf(&b, "  tuned   %s on %s, %s\n", e.TunedShape, e.GPUName, e.Time.Format(time.RFC3339))
		fmt.Fprintf(&b, "  figures %.2f µs, %.0f GB/s (%.1f %% of ceiling), %.3f× over v1, p=%.3g\n",
			e.MedianUS, e.GBs, e.PctCeiling, e.Speedup, e.P)
	}
	if o.PDL {
		b.WriteString("  pdl     supported")
		if e := o.Evidence; e != nil && e.PDLUS > 0 {
			fmt.Fprintf(&b, "; %.2f µs per launch in a PDL chain, %.2f plain (%s)", e.PDLUS, e.MedianUS, pdlVerdict(o))
		} else if o.PDLPays { // chosen in a token (autotune --refine): no chain of its own
			fmt.Fprintf(&b, "; chosen in a decoded token with PDL edges (%s)", pdlVerdict(o))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "  cache   %s\n", o.Cache)
	if o.CacheErr != "" {
		fmt.Fprintf(&b, "  warning %s\n", o.CacheErr)
	}
	for _, warn := range o.Warnings {
		fmt.Fprintf(&b, "  warning %s\n", warn)
	}
	_, err := io.WriteString(w, termtext.Printable(b.String()))
	return err
}
