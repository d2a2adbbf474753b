package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/space"
)

func init() {
	register(&command{name: "export", short: "write the cache as JSON (or a C header) to stdout",
		run: func(_ context.Context, args []string) error { return exportMain(args, os.Stdout, os.Stderr) }})
}

const exportUsage = `usage: autotune export [--arch sm_XY] [--cache PATH] [--header] > tune.json

Writes every record (with its cubin, base64) as JSON; docs/cache.md describes
the form. --header writes a C header of the winners' knobs instead, leaving
out stale records, for engines that compile kernels themselves.
`

func exportMain(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, exportUsage); fs.PrintDefaults() }
	arch := fs.String("arch", "", "only this compute capability, e.g. sm_90")
	cachePath := fs.String("cache", "", "cache file (default $GEMV_TUNE_CACHE or the user cache folder)")
	header := fs.Bool("header", false, "write a C header of the winners instead of JSON")
	if help, err := parseArgs(fs, args, 0); help || err != nil {
		return err
	}
	if *arch != "" {
		if _, err := space.ParseArch(*arch); err != nil {
			return usagef("export: %v", err)
		}
	}
	db, err := openReader(*cachePath)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer db.Close()
	e, err := db.Export(*arch)
	if err != nil && !errors.Is(err, cache.ErrBadRecord) {
		return fmt.Errorf("export: %w", err)
	}
	if err != nil {
		fmt.Fprintf(stderr, "autotune export: warning: %v\n", err)
	}
	if *header {
		var fresh []cache.Record
		for _, r := range e.Records {
			if staleWhy(r) == "" {
				fresh = append(fresh, r)
			}
		}
		return cache.WriteCHeader(stdout, fresh)
	}
	return e.WriteJSON(stdout)
}
