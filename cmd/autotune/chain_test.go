package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/tuner"
)

// TestBenchChain: --chain runs, per format, the token of the preset with
// stock everywhere and with the cache's choices, each also with PDL edges
// from sm_90 on, prints a row for each, and closes with the launch verdict.
func TestBenchChain(t *testing.T) {
	path := cacheWith(t, testRecord(t, "sm_90", "q4_0", 28672, 4096, "r2f0u2s2w8l1"))
	swap(t, &chainGPUsFn, func() ([]gpu.Info, error) {
		return []gpu.Info{{Ordinal: 0, Name: "NVIDIA H200", Arch: gpu.Arch{Major: 9, Minor: 0}}}, nil
	})
	type call struct {
		stages     []tuner.ChainStage
		pdl, reads bool
		batch      int
	}
	var calls []call
	swap(t, &chainFn, func(ctx context.Context, ordinal int, stages []tuner.ChainStage, opts tuner.ChainOptions) (tuner.ChainResult, error) {
		calls = append(calls, call{stages, opts.PDL, opts.Reads, opts.BatchTokens})
		r := tuner.ChainResult{Stages: len(stages), Bytes: 4.2e9, CeilingGBs: 4400, CeilingBeforeGBs: 4380, CeilingAfterGBs: 4420, MaxRelErr: 3e-7,
			ChainTiming: tuner.ChainTiming{MedianUS: 1100, LoUS: 1090, HiUS: 1110, PctCeiling: 86.8, TokPerS: 909, ClockSamples: 21, MinSMMHz: 1980}}
		if opts.PDL { // PDL edges slower, as on the H200, and at the power cap in 8 of 21 batches
			r.PDL = &tuner.ChainTiming{MedianUS: 1210, LoUS: 1200, HiUS: 1220, PctCeiling: 78.9, TokPerS: 826,
				ClockSamples: 21, ThrottledPct: 100 * 8.0 / 21, MinSMMHz: 1875}
		}
		if opts.Reads { // every mode's name, so the widths are checked for each
			for i, m := range tuner.ChainReadModes() {
				if i == 0 || opts.PDL {
					r.Reads = append(r.Reads, tuner.ChainModeTiming{Mode: m, ChainTiming: tuner.ChainTiming{MedianUS: 1050.5 - 50.25*float64(i)}})
				}
			}
		}
		return r, nil
	})
	var out, errw bytes.Buffer
	if err := benchMain(context.Background(), []string{"--chain", "--formats", "q4_0", "--cache", path}, &out, &errw); err != nil {
		t.Fatalf("%v (%s)", err, errw.String())
	}
	if len(calls) != 2 {
		t.Fatalf("%d chain runs, want 2 (stock and tuned, each also with PDL)", len(calls))
	}
	for i, c := range calls {
		tuned := i == 1
		if !c.pdl || c.reads != tuned || len(c.stages) != 32*4+1 || c.batch != 0 {
			t.Errorf("run %d: PDL %v, reads %v, %d stages, %d tokens a batch", i, c.pdl, c.reads, len(c.stages), c.batch)
		}
		for _, st := range c.stages {
			// The record at 28672x4096 serves every 4096-col shape (the
			// nearest rule); down (14336 cols) has none: stock.
			want := space.Stock
			if tuned && st.Cols == 4096 {
				want, _ = space.Parse("r2f0u2s2w8l1")
			}
			if st.Params != want {
				t.Errorf("run %d %s: %s, want %s", i, st.Name, st.Params.ID(), want.ID())
			}
			if tuned && st.Cols == 4096 && st.Cubin == nil {
				t.Errorf("run %d %s: no stored cubin", i, st.Name)
			}
		}
	}
	for _, want := range []string{"one token of llama-3-8b (129 GEMVs) on GPU 0, NVIDIA H200", "stock, PDL", "tuned, PDL", "1100.0", "86.8", "909",
		"4400 (4380–4420)", " reads  ", "1050.5", "reads, PDL, no wait", "950.0", "38 %, ≥1875 MHz", " 0 %\n", " –\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// The rows, printed as each mode finishes, line up with the header;
	// what the throttled column means, the launch verdict and the read
	// verdict follow them.
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")[1:]
	if v := lines[len(lines)-3]; v != throttledNote {
		t.Errorf("throttled note %q", v)
	}
	if v := lines[len(lines)-2]; v != "q4_0, tuned: launch plainly in a graph (PDL edges make the token 10.0 % slower)" {
		t.Errorf("verdict %q", v)
	}
	if v := lines[len(lines)-1]; v != `q4_0, tuned: 81.8 % of the speed of "reads, PDL, x" (899.8 µs), one read kernel per stage` {
		t.Errorf("read verdict %q", v)
	}
	lines = lines[:len(lines)-3]
	for _, l := range lines[1:] {
		if utf8.RuneCountInString(l) != utf8.RuneCountInString(lines[0]) {
			t.Errorf("row %q is not as wide as the header %q", l, lines[0])
		}
	}
	// --batch-tokens reaches every run.
	calls = nil
	if err := benchMain(context.Background(), []string{"--chain", "--formats", "q4_0", "--cache", path, "--batch-tokens", "200"}, &out, &errw); err != nil {
		t.Fatalf("--batch-tokens 200: %v (%s)", err, errw.String())
	}
	if len(calls) != 2 || calls[0].batch != 200 || calls[1].batch != 200 {
		t.Errorf("--batch-tokens 200: runs %+v", calls)
	}
	// Before sm_90 there are no PDL modes, and stderr says why.
	swap(t, &chainGPUsFn, func() ([]gpu.Info, error) {
		return []gpu.Info{{Ordinal: 0, Name: "NVIDIA A100-SXM4-80GB", Arch: gpu.Arch{Major: 8, Minor: 0}}}, nil
	})
	calls = nil
	out.Reset()
	errw.Reset()
	if err := benchMain(context.Background(), []string{"--chain", "--formats", "q4_0", "--cache", path}, &out, &errw); err != nil {
		t.Fatalf("sm_80: %v (%s)", err, errw.String())
	}
	if len(calls) != 2 || calls[0].pdl || calls[1].pdl || !strings.Contains(errw.String(), "no PDL modes") || strings.Contains(out.String(), "launch") ||
		strings.Count(strings.TrimSpace(out.String()), "\n") != 5 || !strings.Contains(out.String(), " reads  ") || strings.Contains(out.String(), "no wait") ||
		!strings.HasSuffix(strings.TrimSpace(out.String()), `q4_0, tuned: 95.5 % of the speed of "reads" (1050.5 µs), one read kernel per stage`) {
		t.Errorf("sm_80: %d runs (%v), stderr %q, stdout:\n%s", len(calls), calls, errw.String(), out.String())
	}
	swap(t, &chainGPUsFn, func() ([]gpu.Info, error) {
		return []gpu.Info{{Ordinal: 0, Name: "NVIDIA H200", Arch: gpu.Arch{Major: 9, Minor: 0}}}, nil
	})
	// Errors: a bad preset is a usage error, a failed chain names the mode.
	swap(t, &chainFn, func(context.Context, int, []tuner.ChainStage, tuner.ChainOptions) (tuner.ChainResult, error) {
		return tuner.ChainResult{}, errors.New("blk.3.down: relative L2 error 0.5")
	})
	err := benchMain(context.Background(), []string{"--chain", "--formats", "bf16", "--cache", path}, &out, &errw)
	if err == nil || !strings.Contains(err.Error(), "bench --chain bf16 (stock): blk.3.down") {
		t.Errorf("failed chain: %v", err)
	}
	var u usageError
	for _, args := range [][]string{{"--chain", "--model", "gpt-9"}, {"--chain", "--warm-l2"}, {"--compile", "--formats", "q4_0"},
		{"--attribute"}, {"--chain", "--refine", "--attribute"}} {
		if err := benchMain(context.Background(), args, &out, &errw); !errors.As(err, &u) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}

// With --compile the tuned stages run the recorded variants from this
// build's source, even where the record was tuned on other kernels: no
// stored cubin reaches the chain.
func TestBenchChainCompile(t *testing.T) {
	r := testRecord(t, "sm_90", "q4_0", 28672, 4096, "r2f0u2s2w8l1")
	r.SourceHash = "0123456789abcdef" // tuned on another kernel source
	path := cacheWith(t, r)
	swap(t, &chainGPUsFn, func() ([]gpu.Info, error) {
		return []gpu.Info{{Ordinal: 0, Name: "NVIDIA H200", Arch: gpu.Arch{Major: 9, Minor: 0}}}, nil
	})
	tuned := 0
	swap(t, &chainFn, func(ctx context.Context, ordinal int, stages []tuner.ChainStage, opts tuner.ChainOptions) (tuner.ChainResult, error) {
		r := tuner.ChainResult{Stages: len(stages), ChainTiming: tuner.ChainTiming{MedianUS: 1100, LoUS: 1090, HiUS: 1110}}
		for _, st := range stages {
			if st.Cubin != nil {
				t.Errorf("%s: a stored cubin under --compile", st.Name)
			}
			if st.Params != space.Stock {
				tuned++
				// This build's source spills in the tuned variant.
				r.Spills = []tuner.ChainSpill{{Format: st.Format, Params: st.Params, Registers: 64, SpillBytes: 12}}
			}
		}
		return r, nil
	})
	var out, errw bytes.Buffer
	if err := benchMain(context.Background(), []string{"--chain", "--compile", "--formats", "q4_0", "--cache", path}, &out, &errw); err != nil {
		t.Fatalf("%v (%s)", err, errw.String())
	}
	if tuned != 3*32+1 {
		t.Errorf("%d tuned stages, want the 97 of 4096 columns", tuned)
	}
	const note = "q4_0 r2f0u2s2w8l1: this build's kernel spills 12 bytes at 64 registers (ptxas), a variant the tuner prunes; the rows that ran it include the spill\n"
	if strings.Count(out.String(), note) != 1 {
		t.Errorf("the spill is not noted once:\n%s", out.String())
	}
}

// With --attribute the tuned run (only) asks Chain for the attribution,
// and a table per format follows the verdicts: each shape's token as
// reads, and what its GEMVs cost over them, per token and per GEMV.
func TestBenchChainAttribute(t *testing.T) {
	path := cacheWith(t, testRecord(t, "sm_90", "q4_0", 28672, 4096, "r2f0u2s2w8l1"))
	swap(t, &chainGPUsFn, func() ([]gpu.Info, error) {
		return []gpu.Info{{Ordinal: 0, Name: "NVIDIA H200", Arch: gpu.Arch{Major: 9, Minor: 0}}}, nil
	})
	var asked []bool
	swap(t, &chainFn, func(ctx context.Context, ordinal int, stages []tuner.ChainStage, opts tuner.ChainOptions) (tuner.ChainResult, error) {
		asked = append(asked, opts.Attribute)
		r := tuner.ChainResult{Stages: len(stages), ChainTiming: tuner.ChainTiming{MedianUS: 1250, LoUS: 1240, HiUS: 1260},
			PDL: &tuner.ChainTiming{MedianUS: 1200, LoUS: 1195, HiUS: 1205}}
		if opts.Attribute {
			for i, a := range []struct {
				rows, cols, n int
				us            float64
			}{{6144, 4096, 32, 1184}, {4096, 14336, 32, 1176}, {128256, 4096, 1, 1198.5}} {
				r.Attribution = append(r.Attribution, tuner.ChainAttribution{Job: tuner.Job{Format: "q4_0", Rows: a.rows, Cols: a.cols},
					Stages: a.n, Bytes: int64(1e6 * (i + 1)), ChainTiming: tuner.ChainTiming{MedianUS: a.us, LoUS: a.us - 1, HiUS: a.us + 1}})
			}
		}
		return r, nil
	})
	var out, errw bytes.Buffer
	if err := benchMain(context.Background(), []string{"--chain", "--attribute", "--formats", "q4_0", "--cache", path}, &out, &errw); err != nil {
		t.Fatalf("%v (%s)", err, errw.String())
	}
	if !slices.Equal(asked, []bool{false, true}) {
		t.Errorf("Attribute asked %v, want only of the tuned run", asked)
	}
	text := out.String()
	table := text[strings.Index(text, "q4_0, tuned, PDL (1200.0 µs): each shape's GEMVs"):]
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 6 {
		t.Fatalf("attribution table:\n%s", table)
	}
	for i, want := range [][]string{
		{"shape", "GEMVs", "MB/token", "µs/token", "95% CI µs", "GEMVs over reads µs", "per GEMV µs"},
		{"6144x4096", "32", "1.0", "1184.0", "1183.0–1185.0", "16.0", "0.50"},
		{"4096x14336", "32", "2.0", "1176.0", "1175.0–1177.0", "24.0", "0.75"},
		{"128256x4096", "1", "3.0", "1198.5", "1197.5–1199.5", "1.5", "1.50"},
	} {
		if got := strings.Fields(strings.NewReplacer("95% CI µs", "95%_CI_µs", "GEMVs over reads µs", "GEMVs_over_reads_µs", "per GEMV µs", "per_GEMV_µs").Replace(lines[i+1])); len(got) != len(want) {
			t.Errorf("row %d: %q, want %q", i, lines[i+1], want)
		} else {
			for k := range want {
				if strings.ReplaceAll(got[k], "_", " ") != want[k] {
					t.Errorf("row %d column %d: %q, want %q", i, k, got[k], want[k])
				}
			}
		}
		if utf8.RuneCountInString(lines[i+1]) != utf8.RuneCountInString(lines[1]) {
			t.Errorf("row %q is not as wide as the header %q", lines[i+1], lines[1])
		}
	}
	if got, want := lines[5], "q4_0: every shape's GEMVs together 41.5 µs over their reads, 3.5 % of the token"; got != want {
		t.Errorf("sum %q, want %q", got, want)
	}
	// Before sm_90 there is no attribution, and stderr says why.
	swap(t, &chainGPUsFn, func() ([]gpu.Info, error) {
		return []gpu.Info{{Ordinal: 0, Name: "NVIDIA A100-SXM4-80GB", Arch: gpu.Arch{Major: 8, Minor: 0}}}, nil
	})
	out.Reset()
	errw.Reset()
	swap(t, &chainFn, func(ctx context.Context, ordinal int, stages []tuner.ChainStage, opts tuner.ChainOptions) (tuner.ChainResult, error) {
		return tuner.ChainResult{Stages: len(stages), ChainTiming: tuner.ChainTiming{MedianUS: 1250, LoUS: 1240, HiUS: 1260}}, nil
	})
	if err := benchMain(context.Background(), []string{"--chain", "--attribute", "--formats", "q4_0", "--cache", path}, &out, &errw); err != nil {
		t.Fatalf("sm_80: %v (%s)", err, errw.String())
	}
	if !strings.Contains(errw.String(), "no --attribute, which runs with PDL edges") || strings.Contains(out.String(), "GEMVs over reads") {
		t.Errorf("sm_80: stderr %q, stdout:\n%s", errw.String(), out.String())
	}
}

// Every preset's token is a chain the checks accept in every format:
// each stage's x no longer than the y before it, every shape gated in.
func TestPresetTokens(t *testing.T) {
	for _, p := range presets {
		token := p.token()
		if len(token) != 4*p.layers+1 || p.layers == 0 {
			t.Errorf("%s: %d GEMVs for %d layers", p.name, len(token), p.layers)
		}
		for _, f := range []string{"q4_0", "q4_K", "bf16"} {
			stages, err := chainStages(nil, "sm_90", f, token, false, false)
			if err != nil {
				t.Fatal(err)
			}
			if err := tuner.CheckChain(stages); err != nil {
				t.Errorf("%s %s: %v", p.name, f, err)
			}
		}
	}
}

func TestLaunchVerdict(t *testing.T) {
	plain := tuner.ChainTiming{MedianUS: 1000, LoUS: 990, HiUS: 1010}
	for _, tc := range []struct {
		pdl  tuner.ChainTiming
		want string
	}{
		{tuner.ChainTiming{MedianUS: 1100, LoUS: 1090, HiUS: 1110}, "q8_0, tuned: launch plainly in a graph (PDL edges make the token 10.0 % slower)"},
		{tuner.ChainTiming{MedianUS: 950, LoUS: 940, HiUS: 960}, "q8_0, tuned: launch with PDL edges (they make the token 5.0 % faster)"},
		{tuner.ChainTiming{MedianUS: 1005, LoUS: 995, HiUS: 1015}, "q8_0, tuned: PDL edges change nothing beyond the intervals (+0.5 %)"},
	} {
		if got := launchVerdict("q8_0", plain, tc.pdl); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

// TestReadVerdict: the tuned token's fastest mode against the first
// yardstick read that was timed, and nothing without one.
func TestReadVerdict(t *testing.T) {
	mode := func(name string, us float64) tuner.ChainModeTiming {
		return tuner.ChainModeTiming{Mode: name, ChainTiming: tuner.ChainTiming{MedianUS: us}}
	}
	tuned := []tuner.ChainModeTiming{mode("tuned", 1250), mode("tuned, PDL", 1200), mode("tuned, as recorded", 1190)}
	reads := []tuner.ChainModeTiming{mode("reads", 1150), mode("reads, PDL", 1100), mode("reads, PDL, x", 1130.5)}
	for _, tc := range []struct {
		name         string
		tuned, reads []tuner.ChainModeTiming
		want         string
	}{
		{"fastest mode against reads, PDL, x", tuned, reads, `q4_K, tuned, as recorded: 95.0 % of the speed of "reads, PDL, x" (1130.5 µs), one read kernel per stage`},
		{"plain reads before sm_90", tuned[:1], reads[:1], `q4_K, tuned: 92.0 % of the speed of "reads" (1150.0 µs), one read kernel per stage`},
		{"no yardstick timed", tuned, reads[1:2], ""},
		{"no reads", tuned, nil, ""},
		{"no tuned mode", nil, reads, ""},
	} {
		got, ok := readVerdict("q4_K", tc.tuned, tc.reads)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, ok, tc.want)
		}
	}
	for _, name := range chainYardsticks {
		if !slices.Contains(tuner.ChainReadModes(), name) {
			t.Errorf("yardstick %q is not one of the chain's read modes %q", name, tuner.ChainReadModes())
		}
	}
}

// TestBenchChainGGUF: --chain --gguf runs the file's token once, each stage
// in its tensor's format with the cache's choice for it, and labels its
// rows by the formats it mixes.
func TestBenchChainGGUF(t *testing.T) {
	path := cacheWith(t, testRecord(t, "sm_90", "q4_K", 512, 256, "r1f0u1s1w8"))
	file := filepath.Join(t.TempDir(), "Q4_K_M.gguf")
	writeGGUF(t, file, llamaLike(ggmlQ4_K, ggmlQ6_K))
	swap(t, &chainGPUsFn, func() ([]gpu.Info, error) {
		return []gpu.Info{{Ordinal: 0, Name: "NVIDIA H200", Arch: gpu.Arch{Major: 9, Minor: 0}}}, nil
	})
	var runs [][]tuner.ChainStage
	swap(t, &chainFn, func(ctx context.Context, ordinal int, stages []tuner.ChainStage, opts tuner.ChainOptions) (tuner.ChainResult, error) {
		runs = append(runs, stages)
		if err := tuner.CheckChain(stages); err != nil {
			return tuner.ChainResult{}, err
		}
		return tuner.ChainResult{Stages: len(stages), Bytes: 1e6, CeilingGBs: 4400, ChainTiming: tuner.ChainTiming{MedianUS: 10, LoUS: 9, HiUS: 11}}, nil
	})
	var out, errw bytes.Buffer
	if err := benchMain(context.Background(), []string{"--chain", "--gguf", file, "--cache", path}, &out, &errw); err != nil {
		t.Fatalf("%v (%s)", err, errw.String())
	}
	if len(runs) != 2 {
		t.Fatalf("%d chain runs, want 2 (stock and tuned)", len(runs))
	}
	tuned, _ := space.Parse("r1f0u1s1w8")
	formats := map[string]int{}
	for _, st := range runs[1] {
		formats[st.Format]++
		want := space.Stock
		if st.Format == "q4_K" && st.Cols == 256 { // the record serves every q4_K shape of 256 columns (nearest)
			want = tuned
		}
		if st.Params != want {
			t.Errorf("tuned %s (%s %dx%d): %s, want %s", st.Name, st.Format, st.Rows, st.Cols, st.Params.ID(), want.ID())
		}
	}
	if formats["q4_K"] != 12 || formats["q6_K"] != 3 || runs[1][2].XBack != 3 {
		t.Errorf("tuned stages: formats %v, v's XBack %d", formats, runs[1][2].XBack)
	}
	for _, want := range []string{"one token of " + file + " (15 GEMVs: 12 q4_K, 3 q6_K) on GPU 0", "   mixed                 stock", "   mixed                 tuned"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	var u usageError
	for _, args := range [][]string{{"--gguf", file}, {"--chain", "--gguf", file, "--model", "llama-3-8b"}, {"--chain", "--gguf", file, "--formats", "q4_K"},
		{"--chain", "--gguf", file, "--cache", path, "--refine", "--try", "q4_0:256x256:r1f0u1s1w8"}, {"--chain", "--fuse"}} {
		if err := benchMain(context.Background(), args, &out, &errw); !errors.As(err, &u) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
	if err := benchMain(context.Background(), []string{"--chain", "--gguf", filepath.Join(t.TempDir(), "none.gguf")}, &out, &errw); err == nil || !strings.Contains(err.Error(), "none.gguf") {
		t.Errorf("a missing file: %v", err)
	}
	// --fuse runs layer 1's q, k, v and both layers' gate, up as one GEMV each.
	runs = nil
	out.Reset()
	if err := benchMain(context.Background(), []string{"--chain", "--gguf", file, "--fuse", "--cache", path}, &out, &errw); err != nil {
		t.Fatalf("--fuse: %v (%s)", err, errw.String())
	}
	if len(runs) != 2 || len(runs[1]) != 11 || !strings.Contains(out.String(), "(11 GEMVs: 8 q4_K, 3 q6_K)") {
		t.Errorf("--fuse: %d runs; output:\n%s", len(runs), out.String())
	}
	// --refine --try runs the file's token with a variant at one of its
	// (format, shape)s.
	var alts []tuner.ChainVariant
	swap(t, &refineFn, func(_ context.Context, _ int, stages []tuner.ChainStage, a []tuner.ChainVariant, _ tuner.RefineOptions) (tuner.Refinement, error) {
		if len(stages) != 15 || stages[2].Format != "q6_K" {
			t.Errorf("refined %d stages, v in %s", len(stages), stages[2].Format)
		}
		alts = a
		return tuner.Refinement{Base: tuner.ChainTiming{MedianUS: 1450}}, nil
	})
	out.Reset()
	if err := benchMain(context.Background(), []string{"--chain", "--gguf", file, "--cache", path, "--refine", "--try", "q6_K:256x512:r1f0u1s1w8"}, &out, &errw); err != nil {
		t.Fatalf("--refine --try: %v (%s)", err, errw.String())
	}
	if len(alts) != 1 || alts[0].Format != "q6_K" || alts[0].Rows != 256 || alts[0].Cols != 512 || !strings.Contains(out.String(), "mixed, refine (PDL edges): the token as tuned 1450.0 µs") {
		t.Errorf("alternatives %+v; output:\n%s", alts, out.String())
	}
}

// A token of several formats names each attributed shape's format: a GGUF
// file's q4_K and q6_K GEMVs of one shape are two rows.
func TestAttributionTableMixed(t *testing.T) {
	pdl := tuner.ChainTiming{MedianUS: 1450}
	var attr []tuner.ChainAttribution
	for _, f := range []string{"q4_K", "q6_K"} {
		attr = append(attr, tuner.ChainAttribution{Job: tuner.Job{Format: f, Rows: 1024, Cols: 4096}, Stages: 16, Bytes: 1e6,
			ChainTiming: tuner.ChainTiming{MedianUS: 1440}})
	}
	lines := strings.Split(strings.TrimSpace(attributionTable("mixed", pdl, attr)), "\n")
	if len(lines) != 5 || !strings.HasPrefix(strings.TrimSpace(lines[2]), "q4_K 1024x4096 ") || !strings.HasPrefix(strings.TrimSpace(lines[3]), "q6_K 1024x4096 ") {
		t.Fatalf("table:\n%s", strings.Join(lines, "\n"))
	}
	for _, l := range lines[2:4] {
		if utf8.RuneCountInString(l) != utf8.RuneCountInString(lines[1]) {
			t.Errorf("row %q is not as wide as the header %q", l, lines[1])
		}
	}
	if single := attributionTable("q4_K", pdl, attr[:1]); strings.Contains(single, "q4_K 1024x4096") {
		t.Errorf("one format's table names it in every row:\n%s", single)
	}
}
