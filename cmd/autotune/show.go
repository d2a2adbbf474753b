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
	"github.com/gemvtune/gemvtune/internal/termtext"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

func init() {
	register(&command{name: "show", short: "list what the cache holds, per arch",
		run: func(_ context.Context, args []string) error { return showMain(args, os.Stdout, os.Stderr) }})
}

const showUsage = `usage: autotune show [--arch sm_XY] [--cache PATH]

Lists every tuned (arch, format, shape): winner, class, median µs, GB/s,
% of the read ceiling, % of the same-bytes read (the winner's speed as a
share of a plain read of its weight bytes; "-" when not measured), speedup
over v1, the best exact variant when the winner is not exact (what
GEMV_REQUIRE_EXACT=1 gets: its ID, speedup and GB/s, or "v1 (kept)"), and
whether the record is stale.
`

func showMain(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("show", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, showUsage); fs.PrintDefaults() }
	rf := addReaderFlags(fs)
	if help, err := parseArgs(fs, args, 0); help || err != nil {
		return err
	}
	db, err := rf.open("show")
	if err != nil {
		return err
	}
	defer db.Close()
	recs, err := db.All(rf.arch)
	if err := tolerateBadRecords("show", err, stderr); err != nil {
		return err
	}
	if len(recs) == 0 {
		fmt.Fprintf(stdout, "cache %s: no records", db.Path())
		if rf.arch != "" {
			fmt.Fprintf(stdout, " for %s", rf.arch)
		}
		fmt.Fprintln(stdout)
		return nil
	}
	return writeShow(stdout, db.Path(), recs)
}

// openReader opens the cache at path ("" = default) read-only.
// readerFlags are the --arch and --cache flags of the commands that read
// the cache.
type readerFlags struct {
	arch, cache string
}

func addReaderFlags(fs *flag.FlagSet) *readerFlags {
	rf := &readerFlags{}
	fs.StringVar(&rf.arch, "arch", "", "only this compute capability, e.g. sm_90")
	fs.StringVar(&rf.cache, "cache", "", "cache file (default $GEMV_TUNE_CACHE or the user cache folder)")
	return rf
}

// open checks --arch (a usage error when malformed) and opens the cache
// read-only; cmd names the command in errors.
func (rf *readerFlags) open(cmd string) (*cache.DB, error) {
	if rf.arch != "" {
		if _, err := space.ParseArch(rf.arch); err != nil {
			return nil, usagef("%s: %v", cmd, err)
		}
	}
	db, err := openReader(rf.cache)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	return db, nil
}

// tolerateBadRecords turns cache.ErrBadRecord (some entries unreadable,
// the rest fine) into a warning on stderr and returns any other error.
func tolerateBadRecords(cmd string, err error, stderr io.Writer) error {
	if err != nil && !errors.Is(err, cache.ErrBadRecord) {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	if err != nil {
		fmt.Fprintf(stderr, "autotune %s: warning: %v\n", cmd, err)
	}
	return nil
}

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

// launchMode is r's recorded launch mode: "pdl" with the PDL launch's
// shared memory (which may be the kernel's own), "plain", or "-" where no
// PDL chain was timed (its own, or a token's: autotune --refine).
func launchMode(r cache.Record) string {
	switch {
	case r.PDLUS <= 0 && (r.Token == nil || !r.Token.PDL):
		return "-"
	case !r.LaunchPDL:
		return "plain"
	case r.PDLShared > 0:
		return fmt.Sprintf("pdl %d B", r.PDLShared)
	}
	return "pdl"
}

func writeShow(w io.Writer, path string, recs []cache.Record) error {
	fmt.Fprintf(w, "cache %s\n", path)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	var group [2]string
	for _, r := range recs {
		if g := [2]string{r.Arch, r.Model}; g != group {
			group = g
			fmt.Fprintf(tw, "\n%s %s\t\t\t\t\t\t\t\t\t\t\t\n", r.Arch, r.Model)
			fmt.Fprintln(tw, "format\tshape\twinner\tclass\tµs\tGB/s\t% ceiling\t% of read\tPDL µs\tlaunch\tspeedup\texact alternative\tGPU\tstale")
		}
		stale := "no"
		if why := staleWhy(r); why != "" {
			stale = "yes: " + why
		}
		winner := r.WinnerID
		if r.Token != nil {
			winner += " (token)" // chosen in a decoded token, not alone
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%.0f\t%.1f\t%s\t%s\t%s\t%.3f×\t%s\t%s\t%s\n", r.Format, r.Shape(), winner, r.Class,
			r.MedianUS, r.GBs, r.PctCeiling, ofRead(r.ReadUS, r.MedianUS), usOrDash(r.PDLUS), launchMode(r), r.Speedup, exactAlt(r),
			termtext.Printable(r.GPUName), termtext.Printable(stale))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeRefined(w, recs)
}

// writeRefined lists, per arch, GPU model and format, the model tokens
// its records were refined in (cache.Record.Refined) and on how many
// shapes: a resumed autotune --refine skips a token refined on every
// shape of it.
func writeRefined(w io.Writer, recs []cache.Record) error {
	type group struct{ arch, model, format, token string }
	var order []group
	shapes := map[group]int{}
	for _, r := range recs {
		for _, tok := range r.Refined {
			g := group{r.Arch, r.Model, r.Format, tok}
			if shapes[g] == 0 {
				order = append(order, g)
			}
			shapes[g]++
		}
	}
	if len(order) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nrefined in a model's token (autotune --refine):")
	for _, g := range order {
		noun := "shapes"
		if shapes[g] == 1 {
			noun = "shape"
		}
		if _, err := fmt.Fprintf(w, "  %s %s %s: %s (%d %s)\n", g.arch, g.model, g.format, termtext.Printable(g.token), shapes[g], noun); err != nil {
			return err
		}
	}
	return nil
}
