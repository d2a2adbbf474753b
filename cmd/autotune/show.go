package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

func init() {
	register(&command{name: "show", short: "list what the cache holds, per arch",
		run: func(_ context.Context, args []string) error { return showMain(args, os.Stdout, os.Stderr) }})
}

const showUsage = `usage: autotune show [--arch sm_XY] [--cache PATH]

Lists every tuned (arch, format, shape): winner, class, median µs, GB/s,
% of the read ceiling, speedup over v1, the best exact variant when the
winner is not exact (what GEMV_REQUIRE_EXACT=1 gets: its ID, speedup and GB/s,
or "v1 (kept)"), and whether the record is stale.
`

func showMain(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("show", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, showUsage); fs.PrintDefaults() }
	arch := fs.String("arch", "", "only this compute capability, e.g. sm_90")
	cachePath := fs.String("cache", "", "cache file (default $GEMV_TUNE_CACHE or the user cache folder)")
	if help, err := parseArgs(fs, args, 0); help || err != nil {
		return err
	}
	if *arch != "" {
		if _, err := space.ParseArch(*arch); err != nil {
			return usagef("show: %v", err)
		}
	}
	db, err := openReader(*cachePath)
	if err != nil {
		return fmt.Errorf("show: %w", err)
	}
	defer db.Close()
	recs, err := db.All(*arch)
	if err != nil && !errors.Is(err, cache.ErrBadRecord) {
		return fmt.Errorf("show: %w", err)
	}
	if err != nil {
		fmt.Fprintf(stderr, "autotune show: warning: %v\n", err)
	}
	if len(recs) == 0 {
		fmt.Fprintf(stdout, "cache %s: no records", db.Path())
		if *arch != "" {
			fmt.Fprintf(stdout, " for %s", *arch)
		}
		fmt.Fprintln(stdout)
		return nil
	}
	return writeShow(stdout, db.Path(), recs)
}

// openReader opens the cache at path ("" = default) read-only.
func openReader(path string) (*cache.DB, error) {
	if path == "" {
		p, err := cache.DefaultPath()
		if err != nil {
			return nil, err
		}
		path = p
	}
	return cache.Open(path, &cache.Options{ReadOnly: true})
}

// staleWhy says whether r is stale against this build's kernels.
func staleWhy(r cache.Record) string {
	fam, err := variants.FamilyOf(r.Format)
	if err != nil {
		return "unknown format"
	}
	if stale, why := r.Stale(fam.SourceHash(), cache.ToolVersion); stale {
		return why
	}
	return ""
}

// exactAlt describes r's exact alternative in the show table: "-" for an
// exact winner, "none" for a record written without one.
func exactAlt(r cache.Record) string {
	x := r.Exact
	switch {
	case r.Class == cache.ClassExact:
		return "-"
	case x == nil:
		return "none"
	case x.Kept:
		return "v1 (kept)"
	}
	return fmt.Sprintf("%s %.3f× %.0f GB/s", x.WinnerID, x.Speedup, x.GBs)
}

func writeShow(w io.Writer, path string, recs []cache.Record) error {
	fmt.Fprintf(w, "cache %s\n", path)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	arch := ""
	for _, r := range recs {
		if r.Arch != arch {
			arch = r.Arch
			fmt.Fprintf(tw, "\n%s\t\t\t\t\t\t\t\t\t\t\n", arch)
			fmt.Fprintln(tw, "format\tshape\twinner\tclass\tµs\tGB/s\t% ceiling\tspeedup\texact alternative\tGPU\tstale")
		}
		stale := "no"
		if why := staleWhy(r); why != "" {
			stale = "yes: " + why
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%.0f\t%.1f\t%.3f×\t%s\t%s\t%s\n", r.Format, r.Shape(), r.WinnerID, r.Class,
			r.MedianUS, r.GBs, r.PctCeiling, r.Speedup, exactAlt(r), r.GPUName, stale)
	}
	return tw.Flush()
}
