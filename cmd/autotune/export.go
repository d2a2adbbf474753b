package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/gemvtune/gemvtune/cache"
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
	rf := addReaderFlags(fs)
	header := fs.Bool("header", false, "write a C header of the winners instead of JSON")
	if help, err := parseArgs(fs, args, 0); help || err != nil {
		return err
	}
	db, err := rf.open("export")
	if err != nil {
		return err
	}
	defer db.Close()
	e, err := db.Export(rf.arch)
	if err := tolerateBadRecords("export", err, stderr); err != nil {
		return err
	}
	if *header {
		var fresh []cache.Record
		whys := map[string]int{}
		for _, r := range e.Records {
			if why := staleWhy(r); why != "" {
				whys[why]++
				continue
			}
			fresh = append(fresh, r)
		}
		for why, n := range whys {
			fmt.Fprintf(stderr, "autotune: export --header left out %d stale record(s): %s (autotune re-checks or re-tunes them)\n", n, why)
		}
		if len(fresh) == 0 && len(e.Records) > 0 {
			return fmt.Errorf("export --header: every one of the %d records is stale: nothing to write", len(e.Records))
		}
		return cache.WriteCHeader(stdout, fresh)
	}
	return e.WriteJSON(stdout)
}
