package tuner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/internal/gpu/gputest"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

// TestBuildFloorsStopAtSpill compiles (with whatever NVRTC builds sm_90)
// the launch-bounds floors of a few register-hungry variants and checks
// the rounds: every binding floor is compiled in rising order until one
// spills, and the floors after it are skipped with the reason, never
// compiled.
func TestBuildFloorsStopAtSpill(t *testing.T) {
	arch := gpu.Arch{Major: 9, Minor: 0}
	nv := gputest.NVRTC(t, arch)
	lim, err := space.LimitsFor("sm_90")
	if err != nil {
		t.Fatal(err)
	}
	fam, err := variants.FamilyOf("q8_0")
	if err != nil {
		t.Fatal(err)
	}
	// Planar (l=1): the tuner does not search raw q8_0 variants (layouts.go).
	heavy := map[string]bool{"r2f0u8s0w16l1": true, "r4f0u4s1w8l1": true, "r1f0u1s0w8l1": true}
	candidateFilter = func(p space.Params) bool {
		q := p
		q.F = 0
		return heavy[q.ID()]
	}
	defer func() { candidateFilter = nil }()
	comp := newCompiler(nv, arch)
	comp.dir = t.TempDir()
	b, err := buildFormat(context.Background(), comp, 0, fam, lim, Options{}, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	compiled := map[string]compiled{}
	for _, c := range b.compiled {
		if c.Err != nil {
			t.Fatalf("%s: %v", c.ID, c.Err)
		}
		compiled[c.ID] = c
	}
	skipped := map[string]string{}
	for _, c := range b.skipped {
		skipped[c.ID] = c.Reason
	}
	stopped := 0
	for id := range heavy {
		base := compiled[id]
		if base.Registers == 0 {
			t.Fatalf("%s: not compiled or no register count", id)
		}
		spilled := ""
		for _, f := range space.Knobs[1].Values[1:] {
			p := base.Params
			p.F = f
			c, isCompiled := compiled[p.ID()]
			reason, isSkipped := skipped[p.ID()]
			switch {
			case isCompiled && isSkipped, !isCompiled && !isSkipped:
				if space.Check(p, lim, 0) == nil {
					t.Errorf("%s: compiled %v, skipped %q", p.ID(), isCompiled, reason)
				}
			case isCompiled && spilled != "":
				t.Errorf("%s compiled after %s spilled", p.ID(), spilled)
			case isCompiled && c.Spills > 0:
				spilled = p.ID()
			case isSkipped && strings.Contains(reason, "already spills"):
				if spilled == "" {
					t.Errorf("%s skipped for a spill no lower floor had: %q", p.ID(), reason)
				}
				stopped++
			}
		}
		t.Logf("%s: %d registers at f=0; first spilling floor: %q", id, base.Registers, spilled)
	}
	if stopped == 0 {
		t.Errorf("no floor was skipped after a spill; the test variants should make some spill")
	}
}

// TestCompilerLacks: s=3 needs NVRTC 12.0 or newer; everything else builds
// with any NVRTC the arch allows.
func TestCompilerLacks(t *testing.T) {
	arch := gpu.Arch{Major: 9, Minor: 0}
	for _, tc := range []struct {
		id    string
		nvrtc gpu.Version
		want  string // a part of the reason, "" for none
	}{
		{"r2f0u2s3w16l2a1", gpu.Version{Major: 11, Minor: 8}, "needs NVRTC 12.0 or newer; this one is 11.8"},
		{"r2f0u2s3w16l2a1", gpu.Version{Major: 12, Minor: 0}, ""},
		{"r2f0u2s3w16l2a1", gpu.Version{Major: 13, Minor: 0}, ""},
		{"r2f0u2s2w16l2a1", gpu.Version{Major: 11, Minor: 8}, ""},
		{"v1", gpu.Version{Major: 11, Minor: 8}, ""},
	} {
		p, err := space.Parse(tc.id)
		if err != nil {
			t.Fatal(err)
		}
		got := compilerLacks(newCompiler(&gpu.NVRTC{Version: tc.nvrtc}, arch), p)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("compilerLacks(NVRTC %s, %s) = %q, want %q", tc.nvrtc, tc.id, got, tc.want)
		}
	}
}

// TestCompileOptions: ptxas's report always, and no NVRTC cache from the
// NVRTC that has one (12.9): a compile served from it has no report.
func TestCompileOptions(t *testing.T) {
	for _, tc := range []struct {
		nvrtc gpu.Version
		want  string
	}{
		{gpu.Version{Major: 11, Minor: 8}, "--ptxas-options=-v"},
		{gpu.Version{Major: 12, Minor: 8}, "--ptxas-options=-v"},
		{gpu.Version{Major: 12, Minor: 9}, "--ptxas-options=-v --no-cache"},
		{gpu.Version{Major: 13, Minor: 0}, "--ptxas-options=-v --no-cache"},
	} {
		if got := strings.Join(compileOptions(tc.nvrtc), " "); got != tc.want {
			t.Errorf("compileOptions(NVRTC %s) = %q, want %q", tc.nvrtc, got, tc.want)
		}
	}
}

// TestCachedLogUsable: a cached ptxas log counts only if it still gives the
// register count (a cubin without it is compiled again).
func TestCachedLogUsable(t *testing.T) {
	for _, tc := range []struct {
		name, log string
		want      bool
	}{
		{"ptxas -v", "ptxas info    : Used 46 registers, used 1 barriers, 368 bytes cmem[0]", true},
		{"empty", "", false},
		{"no register line", "ptxas info    : Compiling entry function 'gemv' for 'sm_90'", false},
		{"zero registers", "ptxas info    : Used 0 registers", false},
	} {
		if got := cachedLogUsable(tc.log); got != tc.want {
			t.Errorf("%s: cachedLogUsable = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestCubinCacheRecompilesLogless compiles stock into an empty cubin
// cache, empties the cached log, and compiles again: the second compile
// must not take the logless cubin (it would report 0 registers, and the
// variant's launch-bounds floors would go unjudged).
func TestCubinCacheRecompilesLogless(t *testing.T) {
	arch := gpu.Arch{Major: 9, Minor: 0}
	nv := gputest.NVRTC(t, arch)
	fam, err := variants.FamilyOf("q4_0")
	if err != nil {
		t.Fatal(err)
	}
	code, err := fam.Source(space.Stock)
	if err != nil {
		t.Fatal(err)
	}
	comp := newCompiler(nv, arch)
	comp.dir = t.TempDir()
	src := []source{{ID: space.Stock.ID(), Params: space.Stock, Code: code}}
	first := comp.compileAll(context.Background(), 0, src, nil)[0]
	if first.Err != nil || first.Registers == 0 {
		t.Fatalf("first compile: err %v, %d registers", first.Err, first.Registers)
	}
	logPath := filepath.Join(comp.dir, comp.key(code)+".cubin.log")
	if err := os.WriteFile(logPath, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	again := comp.compileAll(context.Background(), 0, src, nil)[0]
	if again.Err != nil || again.Registers != first.Registers {
		t.Fatalf("after emptying the cached log: err %v, %d registers, want %d", again.Err, again.Registers, first.Registers)
	}
	if b, err := os.ReadFile(logPath); err != nil || !cachedLogUsable(string(b)) {
		t.Errorf("the recompile did not rewrite the cached log (%v): %q", err, b)
	}
}
