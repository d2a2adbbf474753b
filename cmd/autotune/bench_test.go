package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune"
	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/tuner"
)

func TestWriteBenchVariants(t *testing.T) {
	stock := tuner.Candidate{ID: "r1f0u1s0w8", Params: space.Stock, Class: "exact", Status: tuner.StatusOK,
		MedianUS: 250, LoUS: 249.5, HiUS: 250.5, GBs: 528, PctCeiling: 12, Registers: 40, BlocksPerSM: 6}
	g, _ := space.Parse("r2f0u2s1w16g4l1a1")
	d := tuner.Decision{Job: tuner.Job{Format: "q4_0", Rows: 28672, Cols: 8192}, CeilingGBs: 4400, Stock: stock,
		Candidates: []tuner.Candidate{stock,
			{ID: g.ID(), Params: g, Class: "tolerance", Status: tuner.StatusOK, MedianUS: 35.5, LoUS: 35.4, HiUS: 35.6, GBs: 3721, PctCeiling: 84.6, Registers: 56, BlocksPerSM: 2},
			{ID: "r8f0u2s1w16", Class: "exact", Status: tuner.StatusPruned, Reason: "spills: ptxas spills 248 bytes at 128 registers"},
		}}
	var b bytes.Buffer
	if err := writeBenchVariants(&b, []tuner.Decision{d}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"r2f0u2s1w16g4l1a1", "35.50", "35.40–35.60", "3721", "84.6", "7.04x", // 250/35.5
		"r1f0u1s0w8", "1.00x",
		"pruned: spills: ptxas spills 248 bytes",
		"ceiling", "4400",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n"); n != 5 { // header, 3 candidates, ceiling
		t.Errorf("%d lines, want 5:\n%s", n, out)
	}

	// Without the same-bytes read the summary says "-", not 0.
	b.Reset()
	if err := writeBench(&b, []tuner.Decision{d}); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); strings.Contains(out, " 0.00 ") || strings.Count(out, " - ") < 2 {
		t.Errorf("bench table without a read: want \"-\" for read µs and %% of read:\n%s", out)
	}
	b.Reset()

	// With the same-bytes read measured, it gets its own row, and the
	// summary table gives the best's time as a share of it.
	d.ReadUS, d.ReadGBs, d.Bytes = 31.2, 4234, 132120576
	b.Reset()
	if err := writeBenchVariants(&b, []tuner.Decision{d}); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "read (same bytes)") || !strings.Contains(out, "31.20") || !strings.Contains(out, "96.2") { // 4234/4400
		t.Errorf("variants table lacks the same-bytes read row:\n%s", out)
	}
	b.Reset()
	if err := writeBench(&b, []tuner.Decision{d}); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "31.20") || !strings.Contains(out, "87.9") { // 31.2/35.5
		t.Errorf("bench table lacks the read µs or the best's share of it:\n%s", out)
	}

	// A time in a PDL chain: both tables give it and its % of the ceiling
	// (132120576 B / 33.00 µs = 4004 GB/s = 91.0 % of 4400).
	d.Candidates[1].PDLUS = 33
	for name, write := range map[string]func(*bytes.Buffer) error{
		"variants": func(b *bytes.Buffer) error { return writeBenchVariants(b, []tuner.Decision{d}) },
		"bench":    func(b *bytes.Buffer) error { return writeBench(b, []tuner.Decision{d}) },
	} {
		b.Reset()
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		if out := b.String(); !strings.Contains(out, "PDL µs") || !strings.Contains(out, "33.00") || !strings.Contains(out, "91.0") {
			t.Errorf("%s table lacks the PDL chain's µs or %% of ceiling:\n%s", name, out)
		}
	}
}

func TestBenchVariantsBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--variants", "r1f0u1s0w8g1"}, `--variants: "r1f0u1s0w8g1"`},
		{[]string{"--variants", "bogus"}, `invalid variant ID "bogus"`},
		{[]string{"--variants", "v1", "--format", "q5_1"}, "q5_1"},
		{[]string{"--batch-tokens", "100"}, "--batch-tokens is for --chain without --refine"},
		{[]string{"--chain", "--refine", "--batch-tokens", "100"}, "--batch-tokens is for --chain without --refine"},
		{[]string{"--chain", "--batch-tokens", "-1"}, "--batch-tokens -1: want 1 to 1000"},
		{[]string{"--chain", "--batch-tokens", "5000"}, "--batch-tokens 5000: want 1 to 1000"},
	} {
		var out, errb bytes.Buffer
		err := benchMain(context.Background(), tc.args, &out, &errb)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("bench %v = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

func TestSameFixedGrid(t *testing.T) {
	p := func(id string) space.Params {
		q, err := space.Parse(id)
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"r1f0u2s1w16l1a1", "r4f3u2s1w16l1a1", true},
		{"r1f0u2s1w16g7l1a1", "r2f0u2s1w16g4l1a1", true}, // both one-wave grids
		{"r1f0u2s1w16g7l1a1", "r1f0u2s1w16l1a1", false},
		{"r1f0u2s1w16l1a1", "r1f0u2s1w16l1", false},
	} {
		if got := sameFixed(p(tc.a), p(tc.b)); got != tc.same {
			t.Errorf("sameFixed(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}

func TestBenchTargets(t *testing.T) {
	h200, a100 := cache.NormalizeModel("NVIDIA H200"), cache.NormalizeModel("NVIDIA A100")
	h100 := cache.NormalizeModel("NVIDIA H100")
	for _, tc := range []struct {
		name string
		arch string
		gpus []localGPU
		want []localGPU
	}{
		{"auto: each local arch, its first GPU's model", "auto",
			[]localGPU{{"sm_90", h200}, {"sm_80", a100}, {"sm_90", h100}},
			[]localGPU{{"sm_90", h200}, {"sm_80", a100}}},
		{"an arch: its first GPU's model", "sm_90",
			[]localGPU{{"sm_80", a100}, {"sm_90", h100}, {"sm_90", h200}},
			[]localGPU{{"sm_90", h100}}},
		{"an arch no local GPU has", "sm_90", []localGPU{{"sm_80", a100}}, []localGPU{{"sm_90", ""}}},
		{"auto with no GPU listed", "auto", nil, []localGPU{{"auto", ""}}},
	} {
		if got := benchTargets(tc.arch, tc.gpus); !slices.Equal(got, tc.want) {
			t.Errorf("%s: benchTargets = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestBenchPlanUsesTheCache: bench measures the cache's winner of exactly
// the shape, on the arch and GPU model it was tuned for, with --arch auto
// as with an arch named.
func TestBenchPlanUsesTheCache(t *testing.T) {
	rec := testRecord(t, "sm_90", "q4_0", 4096, 14336, "r2f0u4s3w16l2a1")
	pol, err := gemvtune.Open(&gemvtune.Options{CachePath: cacheWith(t, rec), LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	h200 := cache.NormalizeModel("NVIDIA H200")
	shapes := []space.Shape{{Rows: 4096, Cols: 14336}, {Rows: 28672, Cols: 8192}}
	got := benchPlan(pol, benchTargets("auto", []localGPU{{"sm_90", h200}, {"sm_80", "a100"}}), []string{"q4_0"}, shapes)
	want := []benchJob{
		{"sm_90", tuner.Job{Format: "q4_0", Rows: 4096, Cols: 14336}, []string{"r2f0u4s3w16l2a1"}},
		{"sm_90", tuner.Job{Format: "q4_0", Rows: 28672, Cols: 8192}, nil},
		{"sm_80", tuner.Job{Format: "q4_0", Rows: 4096, Cols: 14336}, nil},
		{"sm_80", tuner.Job{Format: "q4_0", Rows: 28672, Cols: 8192}, nil},
	}
	if !slices.EqualFunc(got, want, func(a, b benchJob) bool {
		return a.arch == b.arch && a.job == b.job && slices.Equal(a.only, b.only)
	}) {
		t.Errorf("benchPlan = %+v\nwant %+v", got, want)
	}
	if g := benchPlan(nil, []localGPU{{"sm_90", h200}}, []string{"q4_0"}, shapes[:1]); len(g) != 1 || g[0].only != nil {
		t.Errorf("benchPlan without a cache = %+v, want one job to tune now", g)
	}
	groups := groupByArch(got)
	if len(groups) != 2 || groups[0].arch != "sm_90" || len(groups[0].jobs) != 2 || groups[1].arch != "sm_80" || len(groups[1].jobs) != 2 {
		t.Errorf("groupByArch = %+v, want sm_90's two jobs, then sm_80's", groups)
	}
}
