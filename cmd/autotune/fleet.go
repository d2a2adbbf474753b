package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/gemvtune/gemvtune/artifact"
	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/space"
)

func init() {
	register(&command{name: "push", short: "publish the cache's records as an OCI artifact (a fleet's tune)",
		run: func(ctx context.Context, args []string) error { return pushMain(ctx, args, os.Stdout, os.Stderr) }})
	register(&command{name: "pull", short: "merge a tune published with push into the cache",
		run: func(ctx context.Context, args []string) error { return pullMain(ctx, args, os.Stdout, os.Stderr) }})
}

const pushUsage = `usage: autotune push REF [--arch sm_XY] [--model NAME] [--cache PATH] [--insecure]

Publishes the cache's records (or those of --arch and --model) to an OCI
registry as one artifact, one layer per arch and GPU model, e.g.
  autotune push registry.example:5000/gemvtune/tunes:llama-3-8b-h200
Credentials come from the docker config (docker login, podman login,
credential helpers; $DOCKER_CONFIG). docs/fleet.md has the whole recipe.
`

const pullUsage = `usage: autotune pull REF [--arch sm_XY] [--model NAME|auto] [--cache PATH] [--insecure]

Fetches a tune published with push, verifies every blob against its digest,
and merges it into the cache with the rules of import: new keys are added,
the newer measurement of the same GPU name wins, another GPU name's record
for a key the cache holds is a conflict the cache wins. --model auto keeps
the parts of the local GPUs' models.
`

// fleetFlags are the flags push and pull share.
type fleetFlags struct {
	arch, model, cache string
	insecure           bool
}

func addFleetFlags(fs *flag.FlagSet, modelHelp string) *fleetFlags {
	f := &fleetFlags{}
	fs.StringVar(&f.arch, "arch", "", "only this compute capability, e.g. sm_90")
	fs.StringVar(&f.model, "model", "", modelHelp)
	fs.StringVar(&f.cache, "cache", "", "cache file (default $GEMV_TUNE_CACHE or the user cache folder)")
	fs.BoolVar(&f.insecure, "insecure", false, "allow plain HTTP (a registry on the loopback address or a lab network)")
	return f
}

// parse reads REF and checks the filters; models is the --model filter in
// NormalizeModel's form (nil: all).
func (f *fleetFlags) parse(cmd string, fs *flag.FlagSet, args []string) (ref string, models []string, help bool, err error) {
	if help, err := parseArgs(fs, args, 1); help || err != nil {
		return "", nil, help, err
	}
	ref = fs.Arg(0)
	if ref == "" {
		return "", nil, false, usagef("%s: REF is required, e.g. registry.example:5000/gemvtune/tunes:llama-3-8b-h200 (see autotune %s --help)", cmd, cmd)
	}
	if f.arch != "" {
		if _, err := space.ParseArch(f.arch); err != nil {
			return "", nil, false, usagef("%s: --arch: %v", cmd, err)
		}
	}
	switch f.model {
	case "":
	case "auto":
		gpus, err := localGPUsFn()
		if err != nil || len(gpus) == 0 {
			return "", nil, false, fmt.Errorf("%s --model auto: no local GPU to take the model from (%v): name it, e.g. --model h200", cmd, err)
		}
		for _, g := range gpus {
			models = append(models, g.model)
		}
	default:
		models = []string{cache.NormalizeModel(f.model)}
	}
	return ref, models, false, nil
}

func (f *fleetFlags) keeps(arch, model string, models []string) bool {
	return (f.arch == "" || arch == f.arch) && (models == nil || slices.Contains(models, model))
}

func pushMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, pushUsage); fs.PrintDefaults() }
	f := addFleetFlags(fs, "only this GPU model (as show prints it, or NVML's name), e.g. h200")
	ref, models, help, err := f.parse("push", fs, args)
	if help || err != nil {
		return err
	}
	db, err := openReader(f.cache)
	if err != nil {
		return fmt.Errorf("push: %w", err)
	}
	defer db.Close()
	e, err := db.Export(f.arch)
	if err := tolerateBadRecords("push", err, stderr); err != nil {
		return err
	}
	kept := e.Records[:0]
	for _, r := range e.Records {
		if f.keeps(r.Arch, r.Model, models) {
			kept = append(kept, r)
		}
	}
	e.Records = kept
	a, err := artifact.Build(e)
	if err != nil {
		return fmt.Errorf("push %s: %w", ref, err)
	}
	digest, err := artifact.Push(ctx, ref, a, artifact.Options{Insecure: f.insecure})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "pushed %s@%s: %s\n", ref, digest, describeParts(a.Config.Parts))
	return nil
}

func pullMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pull", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, pullUsage); fs.PrintDefaults() }
	f := addFleetFlags(fs, "only the parts of this GPU model (e.g. h200), or auto: the local GPUs'")
	ref, models, help, err := f.parse("pull", fs, args)
	if help || err != nil {
		return err
	}
	p, err := artifact.Pull(ctx, ref, artifact.Options{Insecure: f.insecure}, func(pt artifact.Part) bool {
		return f.keeps(pt.Arch, pt.Model, models)
	})
	if err != nil {
		return err
	}
	if len(p.Exports) == 0 {
		return fmt.Errorf("pull %s: no part for %s (it holds %s)", ref, filterText(f, models), describeParts(p.Config.Parts))
	}
	if stale := artifact.SourcesDiffer(p.Config); len(stale) > 0 {
		fmt.Fprintf(stderr, "autotune: pull: %s was tuned with other kernel sources than this autotune's for %s: lookups treat those records as stale until autotune refreshes or re-tunes them\n",
			ref, strings.Join(stale, ", "))
	}
	db, path, err := openWritable(f.cache, "pull")
	if err != nil {
		return err
	}
	defer db.Close()
	for i, e := range p.Exports {
		pt := p.Parts[i]
		if err := merge(db, e, "pull", fmt.Sprintf("%s (%s %s) into %s", p.Ref, pt.Arch, pt.Model, path), "the artifact", stdout); err != nil {
			return err
		}
	}
	return nil
}

func describeParts(parts []artifact.Part) string {
	var s []string
	for _, p := range parts {
		s = append(s, fmt.Sprintf("%s %s (%d records)", p.Arch, p.Model, p.Records))
	}
	return strings.Join(s, ", ")
}

func filterText(f *fleetFlags, models []string) string {
	var s []string
	if f.arch != "" {
		s = append(s, f.arch)
	}
	if models != nil {
		s = append(s, strings.Join(models, " or "))
	}
	return strings.Join(s, " ")
}
