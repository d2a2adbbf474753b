package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gemvtune/gemvtune/cache"
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
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	e, err := cache.ReadExport(f)
	if err != nil {
		return fmt.Errorf("import %s: %w", file, err)
	}
	path := *cachePath
	if path == "" {
		if path, err = cache.DefaultPath(); err != nil {
			return fmt.Errorf("import: %w", err)
		}
	}
	db, err := cache.Open(path, &cache.Options{Timeout: 10 * time.Second})
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer db.Close()
	s, err := db.Import(e)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	fmt.Fprintf(stdout, "imported %s into %s: %s\n", file, path, s)
	for _, c := range s.Conflicts {
		fmt.Fprintf(stdout, "  conflict %s: cache has %s, file has %s (kept the cache's)\n", c.Key, c.Ours, c.Theirs)
	}
	for _, sk := range s.Skipped {
		fmt.Fprintf(stdout, "  skipped %s\n", sk)
	}
	return nil
}
