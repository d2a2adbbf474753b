package variants_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

// envSpace selects how much of the space the compile and GPU tests cover:
// "all" for every gated variant (minutes of NVRTC time: meant for a machine
// with many cores), "sample" for sampleFor, otherwise (the default, so that
// a plain go test stays quick) stock and a few corner variants, only stock
// with -short.
const envSpace = "GEMV_TEST_SPACE"

// envCubins names a folder of prebuilt cubins "<format>_<id>.cubin" that the
// GPU test loads when the machine has no NVRTC (see TestWriteCubins).
const envCubins = "GEMV_TEST_CUBINS"

// planShape is the shape whose shared-memory needs decide which variants
// exist when the space is enumerated for a family.
const planRows, planCols = 4096, 4096

// spaceFor returns every variant of f that passes its gate for the plan
// shape and the constraints of lim.
func spaceFor(f variants.Family, lim space.Limits) []space.Params {
	ok, _ := space.Enumerate(lim, variants.KnobsOf(f), func(p space.Params) int {
		return int(f.Launch(p, planRows, planCols).SharedBytes)
	})
	var out []space.Params
	for _, p := range ok {
		if f.Gate(p, planRows, planCols) == nil {
			out = append(out, p)
		}
	}
	return out
}

// variantsFor is the part of spaceFor the tests cover (see envSpace).
func variantsFor(f variants.Family, lim space.Limits) []space.Params {
	switch os.Getenv(envSpace) {
	case "all":
		return spaceFor(f, lim)
	case "sample":
		return sampleFor(f, lim)
	}
	var out []space.Params
	for _, p := range spaceFor(f, lim) {
		base := p == space.Stock || p == int8Base
		if testing.Short() && !base {
			continue
		}
		if base || p.ID() == cornerIDs[0] || p.ID() == cornerIDs[1]+"l1" || p.ID() == cornerIDs[2] ||
			p.ID() == cornerIDs[0]+"a1" || p.ID() == cornerIDs[2]+"l1a1" {
			out = append(out, p)
		}
	}
	return out
}

// int8Base is the baseline of the int8-activation path (a=1 needs s=1): the
// a=1 variants of a family must be bit-identical to it.
var int8Base = space.Params{R: 1, F: 0, U: 1, S: 1, W: 8, A: 1}

// sampleFor is a subset of spaceFor: stock and, for families with int8
// activations, int8Base; every one-knob deviation from each; a few corner
// combinations (every layout and activation path) and (without -short)
// every 29th variant.
func sampleFor(f variants.Family, lim space.Limits) []space.Params {
	all := spaceFor(f, lim)
	valid, added := map[space.Params]bool{}, map[space.Params]bool{}
	for _, p := range all {
		valid[p] = true
	}
	var out []space.Params
	add := func(p space.Params) { // p, when its g=0 variant is in the space
		base := p
		base.G = 0
		if valid[base] && !added[p] {
			out = append(out, p)
			added[p] = true
		}
	}
	bases := []space.Params{space.Stock}
	if slices.Contains(f.Activations(), 1) {
		bases = append(bases, int8Base)
	}
	for _, b := range bases {
		add(b)
	}
	for _, b := range bases {
		for _, k := range space.Knobs {
			if k.Letter == "g" {
				continue // its 255 values are sampled below, a few at a time
			}
			for _, v := range k.Values {
				p := b
				switch k.Letter {
				case "r":
					p.R = v
				case "f":
					p.F = v
				case "u":
					p.U = v
				case "s":
					p.S = v
				case "w":
					p.W = v
				case "l":
					p.L = v
				case "a":
					p.A = v
				}
				add(p)
			}
		}
	}
	// Knob g (row groups per block): each base and two corners walk
	// several row groups per block; small shapes then have fewer blocks
	// than groups, so the stride loop and its prefetch are exercised.
	for _, b := range bases {
		for _, g := range []int{2, 4, 128} {
			p := b
			p.S, p.G = 1, g
			add(p)
		}
	}
	// The weight ring (s=2): several depths, rows per warp and row-group
	// walks, with each activation path.
	if slices.Contains(f.Stagings(), 2) {
		for _, id := range []string{"r1f0u2s2w16g4", "r2f0u4s2w8g2", "r3f0u2s2w4", "r1f0u8s2w2g128", "r4f0u1s2w8"} {
			for _, a := range f.Activations() {
				for _, l := range f.Layouts() {
					p, _ := space.Parse(id)
					p.L, p.A = l, a
					add(p)
				}
			}
		}
	}
	// The bulk-copy ring (s=3, whole tiles): depths, rows per warp (r=3
	// leaves dead rows in the last group), row-group walks.
	if slices.Contains(f.Stagings(), 3) {
		for _, id := range []string{"r1f0u2s3w16g4", "r2f0u4s3w8g2", "r3f0u2s3w8", "r1f0u8s3w8g128", "r4f0u1s3w8", "r4f0u2s3w16"} {
			for _, a := range f.Activations() {
				for _, l := range f.Layouts() {
					p, _ := space.Parse(id)
					p.L, p.A = l, a
					add(p)
				}
			}
		}
	}
	for _, id := range []string{"r8f0u4s1w16g2", "r2f3u8s1w2g4", "r3f0u2s0w4g8"} {
		for _, a := range f.Activations() {
			for _, l := range f.Layouts() {
				p, _ := space.Parse(id)
				p.L, p.A = l, a
				if a == 0 || p.S == 1 {
					add(p)
				}
			}
		}
	}
	for _, id := range cornerIDs {
		for _, a := range f.Activations() {
			for _, l := range f.Layouts() {
				p, _ := space.Parse(id)
				p.L, p.A = l, a
				add(p)
			}
		}
	}
	if !testing.Short() {
		for i := 0; i < len(all); i += 29 {
			add(all[i])
		}
	}
	return out
}

// cornerIDs combine knobs the one-knob deviations do not.
var cornerIDs = []string{"r8f0u4s1w16", "r3f2u8s0w2", "r6f0u2s1w4", "r4f4u4s0w8", "r2f3u8s1w2", "r8f1u2s0w4", "r4f0u8s1w16", "r2f2u2s1w8"}

// bigSample is the handful of variants run on the largest shapes, per
// layout and activation path (a=1 only with staged x), and every ring
// the layout has.
func bigSample(f variants.Family) []space.Params {
	ids := []string{"v1", "r2f0u4s0w8", "r4f0u2s1w4", "r1f0u8s0w16", "r8f0u4s1w16", "r2f0u2s1w16g4"}
	ids8 := []string{"r1f0u1s1w8", "r4f0u2s1w4", "r8f0u4s1w16", "r4f0u4s1w8", "r2f0u4s1w8", "r1f0u4s1w16g8"}
	var out []space.Params
	for _, a := range f.Activations() {
		for _, l := range f.Layouts() {
			for _, id := range map[int][]string{0: ids, 1: ids8}[a] {
				p, _ := space.Parse(id)
				p.L, p.A = l, a
				out = append(out, p)
			}
			// The rings where the layout has them: cp.async (s=2) and
			// bulk copies (s=3).
			for _, id := range []string{"r2f0u2s2w8", "r1f0u4s2w16g4", "r1f0u2s3w16g7", "r2f0u2s3w8g4"} {
				p, _ := space.Parse(id)
				p.L, p.A = l, a
				if f.Gate(p, 28672, 8192) == nil {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// findCompiler returns the newest NVRTC that builds arch (or, with arch
// zero, sm_90 if it can, else its newest arch), or skips the test.
func findCompiler(t *testing.T, arch gpu.Arch) (*gpu.NVRTC, gpu.Arch) {
	t.Helper()
	libs, err := gpu.FindNVRTC()
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	if arch == (gpu.Arch{}) {
		arch = gpu.Arch{Major: 9, Minor: 0}
		if _, err := gpu.ChooseNVRTC(libs, arch); err != nil {
			n := libs[len(libs)-1]
			if len(n.Archs) == 0 {
				t.Skipf("skipping: %s lists no archs", n)
			}
			arch = n.Archs[len(n.Archs)-1]
		}
	}
	n, err := gpu.ChooseNVRTC(libs, arch)
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	return n, arch
}

// built is one compiled variant.
type built struct {
	p     space.Params
	cubin []byte
	log   string
}

// compileAll builds ps of f for arch on GOMAXPROCS goroutines.
func compileAll(n *gpu.NVRTC, arch gpu.Arch, f variants.Family, ps []space.Params) ([]built, error) {
	out := make([]built, len(ps))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, p := range ps {
		g.Go(func() error {
			src, err := f.Source(p)
			if err != nil {
				return err
			}
			name := fmt.Sprintf("%s_%s.cu", f.Format().Name(), p.ID())
			cubin, log, err := n.Compile(src, name, arch)
			if err != nil {
				return fmt.Errorf("%s %s: %w\n%s", f.Format().Name(), p.ID(), err, log)
			}
			out[i] = built{p: p, cubin: cubin, log: log}
			return nil
		})
	}
	return out, g.Wait()
}

// compilable drops the variants n cannot build: s=3 (bulk copies, PTX ISA
// 8.0) needs NVRTC 12.0 or newer, and the kernel says so in an #error.
func compilable(t *testing.T, n *gpu.NVRTC, ps []space.Params) []space.Params {
	if n.Version.Major >= 12 {
		return ps
	}
	out := slices.DeleteFunc(slices.Clone(ps), func(p space.Params) bool { return p.S == 3 })
	if len(out) < len(ps) {
		t.Logf("%d s=3 variants not compiled: %s is older than 12.0", len(ps)-len(out), n)
	}
	return out
}

// TestCompileSpace compiles, for every family, the variants that pass its
// gate for 4096x4096 and the sm_90 constraints (all of them with
// GEMV_TEST_SPACE=all, else a sample) with whatever NVRTC is found.
func TestCompileSpace(t *testing.T) {
	n, arch := findCompiler(t, gpu.Arch{})
	lim, err := space.LimitsFor(arch.String())
	if err != nil {
		lim, _ = space.LimitsFor("sm_90")
	}
	for _, f := range variants.Families() {
		t.Run(f.Format().Name(), func(t *testing.T) {
			ps := compilable(t, n, variantsFor(f, lim))
			bs, err := compileAll(n, arch, f, ps)
			if err != nil {
				t.Fatal(err)
			}
			warned := 0
			for _, b := range bs {
				if b.log != "" {
					warned++
					if warned <= 3 {
						t.Errorf("%s: compiler said: %s", b.p.ID(), b.log)
					}
				}
			}
			t.Logf("%s: %d variants compiled for %s with %s", f.Format().Name(), len(bs), arch, n)
		})
	}
}

// TestWriteCubins writes the cubins the GPU test needs into $GEMV_WRITE_CUBINS
// (for a GPU machine without NVRTC, which then sets GEMV_TEST_CUBINS), and
// selected SASS-inspection cubins. It does nothing when the variable is unset.
func TestWriteCubins(t *testing.T) {
	dir := os.Getenv("GEMV_WRITE_CUBINS")
	if dir == "" {
		t.Skip("skipping: GEMV_WRITE_CUBINS not set")
	}
	n, arch := findCompiler(t, gpu.Arch{Major: 9, Minor: 0})
	lim, _ := space.LimitsFor(arch.String())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range variants.Families() {
		ps := gpuVariants(f, lim)
		bs, err := compileAll(n, arch, f, ps)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bs {
			if err := os.WriteFile(filepath.Join(dir, cubinName(f, b.p)), b.cubin, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("%s: wrote %d cubins", f.Format().Name(), len(bs))
	}
}

func cubinName(f variants.Family, p space.Params) string {
	return fmt.Sprintf("%s_%s.cubin", f.Format().Name(), p.ID())
}

// gpuVariants is every variant the GPU test runs for f: the space (-short:
// the sample) plus the big-shape sample.
func gpuVariants(f variants.Family, lim space.Limits) []space.Params {
	ps := variantsFor(f, lim)
	seen := map[space.Params]bool{}
	for _, p := range ps {
		seen[p] = true
	}
	for _, p := range bigSample(f) {
		if !seen[p] {
			ps = append(ps, p)
			seen[p] = true
		}
	}
	return ps
}

var errNoCubin = errors.New("no cubin")

// cubinSource yields cubins for the device: compiled with NVRTC when one
// builds the device's arch, else read from $GEMV_TEST_CUBINS.
type cubinSource struct {
	n    *gpu.NVRTC
	dir  string
	arch gpu.Arch
}

func (s *cubinSource) build(f variants.Family, ps []space.Params) ([]built, error) {
	if s.n != nil {
		return compileAll(s.n, s.arch, f, ps)
	}
	out := make([]built, len(ps))
	for i, p := range ps {
		b, err := os.ReadFile(filepath.Join(s.dir, cubinName(f, p)))
		if err != nil {
			return nil, fmt.Errorf("%w for %s %s: %v", errNoCubin, f.Format().Name(), p.ID(), err)
		}
		out[i] = built{p: p, cubin: b}
	}
	return out, nil
}

// ciArchs are the archs CI compiles for with the NVRTC it installs (no GPU
// needed): every arch a user may tune that this machine cannot run.
var ciArchs = []string{"sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90"}

// TestCompileEveryArch compiles, for each of ciArchs and every family, a
// sample of the variants the space allows on that arch: stock, the int8
// base, and for every staging the arch and the compiler can build, one
// variant per layout. What the arch lacks (s=2 below sm_80, s=3 below
// sm_90) is excluded by the space with its reason; what the compiler
// cannot build (s=3 before NVRTC 12.0) is left out and counted. An arch
// that no NVRTC here builds (sm_70 beside NVRTC 13 alone) is skipped,
// but in CI, which installs one that builds them all.
func TestCompileEveryArch(t *testing.T) {
	libs, err := gpu.FindNVRTC()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI installs an NVRTC: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	for _, archName := range ciArchs {
		arch, _ := gpu.ParseArch(archName)
		n, err := gpu.ChooseNVRTC(libs, arch)
		if err != nil {
			if os.Getenv("CI") != "" {
				t.Errorf("CI installs an NVRTC for %s: %v", archName, err)
			} else {
				t.Run(archName, func(t *testing.T) { t.Skipf("skipping: %v", err) })
			}
			continue
		}
		lim, err := space.LimitsFor(archName)
		if err != nil {
			t.Fatal(err)
		}
		sa, _ := space.ParseArch(archName)
		for _, f := range variants.Families() {
			t.Run(archName+"/"+f.Format().Name(), func(t *testing.T) {
				all := spaceFor(f, lim)
				ps := archSample(f, all)
				for _, p := range all {
					if err := space.ArchAllows(sa, p); err != nil {
						t.Fatalf("the space offers %s on %s: %v", p.ID(), archName, err)
					}
				}
				ps = compilable(t, n, ps)
				if _, err := compileAll(n, arch, f, ps); err != nil {
					t.Fatal(err)
				}
				t.Logf("%d variants compiled with %s", len(ps), n)
			})
		}
	}
}

// archSample picks from all (one arch's space of f): stock, the int8 base
// where f has a=1, and the first variant of each (staging, layout, a).
func archSample(f variants.Family, all []space.Params) []space.Params {
	type kind struct{ s, l, a int }
	seen := map[kind]bool{}
	out := []space.Params{space.Stock}
	if slices.Contains(f.Activations(), 1) {
		out = append(out, int8Base)
	}
	for _, p := range all {
		if k := (kind{p.S, p.L, p.A}); !seen[k] && p != space.Stock && p != int8Base {
			seen[k] = true
			out = append(out, p)
		}
	}
	return out
}
