package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/internal/termtext"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

func init() {
	register(&command{name: "import", short: "merge an exported JSON file into the cache",
		run: func(_ context.Context, args []string) error { return importMain(args, os.Stdout, os.Stderr) }})
}

const importUsage = `usage: autotune import FILE [--cache PATH]

Merges records exported by "autotune export": new keys are added; for a key
already tuned on a GPU of the same name the newer measurement stays; a key
tuned on another GPU name is a conflict and the cache keeps its own.
`

func importMain(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, importUsage); fs.PrintDefaults() }
	cachePath := fs.String("cache", "", "cache file (default $GEMV_TUNE_CACHE or the user cache folder)")
	if help, err := parseArgs(fs, args, 1); help || err != nil {
		return err
	}
	file := fs.Arg(0)
	if file == "" {
		return usagef("import: FILE is required (see autotune import --help)")
	}
	data, err := readUserFile(file, maxUserFile)
	if err != nil {
		return fmt.Errorf("import %w", err)
	}
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		return fmt.Errorf("import %s: this is the output of autotune --json (decisions, without cubins): import takes what autotune export writes (gzipped or not); autotune compare reads this one", file)
	}
	e, err := cache.ReadExport(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("import %s: %w (import takes what autotune export writes)", file, err)
	}
	db, path, err := openWritable(*cachePath, "import")
	if err != nil {
		return err
	}
	defer db.Close()
	return merge(db, e, "import", file+" into "+path, "the file", stdout)
}

// openWritable opens --cache, else the default cache, for a merge (waiting
// up to 10 s for another writer); cmd names the command in errors.
func openWritable(flagPath, cmd string) (*cache.DB, string, error) {
	path := flagPath
	if path == "" {
		p, err := cache.DefaultPath()
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", cmd, err)
		}
		path = p
	}
	db, err := cache.Open(path, &cache.Options{Timeout: 10 * time.Second})
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", cmd, err)
	}
	return db, path, nil
}

// merge imports e into db with the import rules (conflicts decided by the
// GPU name and the evidence's time, never another arch) and prints what
// happened; what names the source and the cache ("FILE into PATH"),
// theirs the source in conflict lines ("the file").
func merge(db *cache.DB, e *cache.Export, cmd, what, theirs string, stdout io.Writer) error {
	var skipped []string
	e.Records, skipped = lookableRecords(e.Records)
	s, err := db.Import(e)
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	fmt.Fprintf(stdout, "%sed %s: %s\n", cmd, what, s)
	if len(skipped) > 0 {
		fmt.Fprintf(stdout, "  %d more skipped before the merge (nothing could look them up)\n", len(skipped))
	}
	for _, c := range s.Conflicts {
		fmt.Fprintf(stdout, "  conflict %s: cache has %s, %s has %s (kept the cache's)\n", c.Key, c.Ours, theirs, c.Theirs)
	}
	for _, sk := range append(skipped, s.Skipped...) {
		fmt.Fprintf(stdout, "  skipped %s\n", termtext.Printable(sk))
	}
	return nil
}

// lookableRecords keeps the records a lookup of this build can return: a
// known format on an arch it has limits for. The others are listed.
func lookableRecords(recs []cache.Record) (keep []cache.Record, skipped []string) {
	for _, r := range recs {
		if _, err := variants.FamilyOf(r.Format); err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: format %q: accepted %s", r.Key, r.Format, strings.Join(variants.FormatNames, ", ")))
			continue
		}
		if _, err := space.LimitsFor(r.Arch); err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: arch %s: accepted %s", r.Key, r.Arch, strings.Join(space.KnownArchs(), ", ")))
			continue
		}
		keep = append(keep, r)
	}
	return keep, skipped
}
