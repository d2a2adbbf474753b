package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/tuner"
)

// bench --chain --refine runs the tuned token's refinement with the
// record's alternatives for each shape and prints every trial and the
// verdict.
func TestBenchChainRefine(t *testing.T) {
	rec := testRecord(t, "sm_90", "q4_0", 4096, 4096, "r2f0u2s2w8l1")
	alt, _ := space.Parse("r1f0u2s1w8")
	rec.Candidates = []cache.Candidate{{ID: alt.ID(), Params: alt, Class: "exact", Status: "ok", MedianUS: 22}, {ID: "r1f0u2s1w8a1", Class: "tolerance", Status: "ok", MedianUS: 20}}
	path := cacheWith(t, rec)
	swap(t, &chainGPUsFn, func() ([]gpu.Info, error) {
		return []gpu.Info{{Ordinal: 0, Name: "NVIDIA H200", Arch: gpu.Arch{Major: 9, Minor: 0}}}, nil
	})
	var gotAlts []tuner.ChainVariant
	swap(t, &refineFn, func(_ context.Context, _ int, stages []tuner.ChainStage, alts []tuner.ChainVariant, o tuner.RefineOptions) (tuner.Refinement, error) {
		gotAlts = alts
		if !o.PDL || len(stages) != 32*4+1 {
			t.Errorf("PDL %v, %d stages", o.PDL, len(stages))
		}
		r := tuner.Refinement{Base: tuner.ChainTiming{MedianUS: 1168.4, LoUS: 1167.6, HiUS: 1169.0, PctCeiling: 82.2}, First: tuner.ChainResult{CeilingGBs: 4395}}
		for _, a := range alts {
			r.Trials = append(r.Trials, tuner.RefineTrial{Variant: a, ChainTiming: tuner.ChainTiming{MedianUS: 1160, LoUS: 1159.5, HiUS: 1160.5}, Faster: true})
		}
		with, again := tuner.ChainTiming{MedianUS: 1159.9, LoUS: 1159.4, HiUS: 1160.3, PctCeiling: 82.8}, tuner.ChainTiming{MedianUS: 1168.1, LoUS: 1167.5, HiUS: 1168.9}
		r.Tried, r.Chosen, r.Together, r.BaseAgain = alts, alts, &with, &again
		return r, nil
	})
	var out, errw bytes.Buffer
	if err := benchMain(context.Background(), []string{"--chain", "--refine", "--formats", "q4_0", "--cache", path}, &out, &errw); err != nil {
		t.Fatalf("%v (%s)", err, errw.String())
	}
	// The one record (o's shape) has one alternative; the other shapes have
	// no record of their own and say so.
	if len(gotAlts) != 1 || gotAlts[0].Params != alt || gotAlts[0].Rows != 4096 || gotAlts[0].Cols != 4096 {
		t.Fatalf("alternatives %+v", gotAlts)
	}
	for _, want := range []string{"q4_0, refine (PDL edges): the token as tuned 1168.4 µs (1167.6–1169.0), 82.2 % of the 4395 GB/s ceiling; alternatives: 1",
		"o            q4_0 4096x4096       r2f0u2s2w8l1          r1f0u2s1w8", "-0.72 %  faster",
		"q4_0, refine: q4_0 4096x4096 r1f0u2s1w8 together: 1159.9 µs (1159.4–1160.3, 82.8 % of the ceiling) against 1168.1 (1167.5–1168.9) as tuned in a second run, -0.70 %: kept"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.Contains(errw.String(), "no alternatives for q4_0 6144x4096") {
		t.Errorf("stderr: %s", errw.String())
	}
	if err := benchMain(context.Background(), []string{"--refine"}, &out, &errw); err == nil || !strings.Contains(err.Error(), "--refine is for --chain") {
		t.Errorf("--refine without --chain: %v", err)
	}
}

// chooseInToken is what a refinement that made alt the winner of rec
// in the model's token returns.
func chooseInToken(rec cache.Record, alt space.Params, model string) tuner.RefinedRecord {
	isolated := rec.WinnerID
	rec.WinnerID, rec.Params, rec.Refined = alt.ID(), alt, nil
	rec.Token = &tuner.TokenChoice{Model: model, Isolated: isolated, PDL: true, TokenUS: 1160, BaseTokenUS: 1168}
	rec.Decision = alt.ID() + ": chosen in the " + model + " token"
	return tuner.RefinedRecord{Record: rec, Cubin: []byte("refined " + alt.ID())}
}

// refinedOnce is the refinement that chose v.
func refinedOnce(v tuner.ChainVariant) tuner.Refinement {
	with, base := tuner.ChainTiming{MedianUS: 1160}, tuner.ChainTiming{MedianUS: 1168}
	return tuner.Refinement{Trials: make([]tuner.RefineTrial, 3), Tried: []tuner.ChainVariant{v}, Chosen: []tuner.ChainVariant{v}, Together: &with, BaseAgain: &base}
}

// sm90Records is every sm_90 record of the cache at db, which must hold n.
func sm90Records(t *testing.T, db string, n int) []cache.Record {
	t.Helper()
	c, err := cache.Open(db, &cache.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	recs, err := c.All("sm_90")
	if err != nil || len(recs) != n {
		t.Fatalf("%d records (%v), want %d", len(recs), err, n)
	}
	return recs
}

// recordOf is the record of recs with the format and shape.
func recordOf(t *testing.T, recs []cache.Record, format string, rows, cols int) cache.Record {
	t.Helper()
	for _, r := range recs {
		if r.Format == format && r.Rows == rows && r.Cols == cols {
			return r
		}
	}
	t.Fatalf("no record of %s %dx%d among %d", format, rows, cols, len(recs))
	return cache.Record{}
}

// tune --refine runs the model's token of each format from the cache's
// choices, stores the choices the refinement changed, marks the token's
// records refined and prints the changed winners; a second run finds
// them refined and runs nothing. Usage errors where there is no token to
// run.
func TestTuneRefine(t *testing.T) {
	db := filepath.Join(t.TempDir(), "tune.db")
	swap(t, &runFn, (&fakeRun{}).run)
	swap(t, &localGPUsFn, fakeGPUs)
	alt := space.Params{R: 2, F: 3, U: 2, S: 0, W: 8} // fakeDecision's other variant
	var gotStages, rounds int
	swap(t, &refineTunedFn, func(_ context.Context, model string, stages []tuner.ChainStage, recs []cache.Record, o tuner.RefineOptions) ([]tuner.RefinedRecord, tuner.Refinement, error) {
		gotStages = len(stages)
		if rounds++; rounds > 1 {
			// The second round runs the first's choice and keeps it.
			for _, st := range stages {
				if st.Rows == 28672 && st.Cols == 4096 && (st.Params != alt || string(st.Cubin) != "refined "+alt.ID()) {
					t.Errorf("round %d runs gate_up's %s (%q), want the first round's %s", rounds, st.Params.ID(), st.Cubin, alt.ID())
				}
			}
			return nil, tuner.Refinement{Trials: make([]tuner.RefineTrial, 3), Base: tuner.ChainTiming{MedianUS: 1160}}, nil
		}
		if model != "llama-3-8b" || !o.PDL || len(recs) != 5 {
			t.Errorf("model %q, PDL %v, %d records", model, o.PDL, len(recs))
		}
		for _, st := range stages {
			if string(st.Cubin) != fmt.Sprintf("fake cubin %dx%d", st.Rows, st.Cols) {
				t.Errorf("stage %s runs cubin %q", st.Name, st.Cubin)
			}
		}
		rec := recordOf(t, recs, "q4_0", 28672, 4096)
		return []tuner.RefinedRecord{chooseInToken(rec, alt, model)}, refinedOnce(tuner.ChainVariant{Format: rec.Format, Rows: rec.Rows, Cols: rec.Cols, Params: alt}), nil
	})
	args := []string{"--arch", "sm_90", "--model", "llama-3-8b", "--formats", "q4_0", "--cache", db, "--refine"}
	var out, errw bytes.Buffer
	if err := tuneMain(context.Background(), args, &out, &errw); err != nil {
		t.Fatalf("%v (%s)", err, errw.String())
	}
	if gotStages != 32*4+1 || rounds != 2 {
		t.Errorf("%d stages, %d rounds; want the whole token, twice (the second keeps the first's choice)", gotStages, rounds)
	}
	if want := "autotune: refine q4_0 on fake-gpu (round 2): none of 3 alternatives made the token faster beyond the intervals (1160.0 µs)"; !strings.Contains(errw.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, errw.String())
	}
	if want := "autotune: refine q4_0 on fake-gpu: kept q4_0 28672x4096 r2f3u2s0w8: 1160.0 against 1168.0 µs per token (-0.68 %)"; !strings.Contains(errw.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, errw.String())
	}
	if !strings.Contains(out.String(), "28672x4096   r2f3u2s0w8") || !strings.Contains(out.String(), "chosen in the llama-3-8b token") {
		t.Errorf("table lacks the refined winner:\n%s", out.String())
	}
	recs := sm90Records(t, db, 7)
	for _, r := range recs {
		inToken := r.Rows != 1024 && r.Rows != 14336 // the preset tunes k/v and a 14336-row shape the token does not run
		if got := strings.Join(r.Refined, ","); inToken != (got == "llama-3-8b") {
			t.Errorf("%s marked refined in %q", r.Key, got)
		}
	}
	rec := recordOf(t, recs, "q4_0", 28672, 4096)
	if rec.WinnerID != alt.ID() || rec.Token == nil || rec.Token.Isolated != "r2f3u1s0w8" {
		t.Fatalf("stored %s, token %+v", rec.WinnerID, rec.Token)
	}

	rerunSkipsRefined(t, args, &rounds, "autotune: refine q4_0 on fake-gpu: refined in the llama-3-8b token by an earlier run (--force tunes and refines it again)")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--shapes", "4096x4096", "--refine"}, "--refine runs a token"},
		{[]string{"--refine", "--shard", "0/2"}, "--refine needs every shape"},
		{[]string{"--refine", "--fuse"}, "--fuse fuses a --gguf file's matrices"},
	} {
		if _, err := parseTuneFlags(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// tune --gguf FILE --refine refines the file's one token, its GEMVs in
// their own formats and reading the x they read in it, stores what the
// refinement chose and marks the records refined in the file's token.
func TestTuneRefineGGUF(t *testing.T) {
	db := filepath.Join(t.TempDir(), "tune.db")
	file := filepath.Join(t.TempDir(), "Q4_K_M.gguf")
	writeGGUF(t, file, llamaLike(ggmlQ4_K, ggmlQ6_K))
	swap(t, &runFn, (&fakeRun{}).run)
	swap(t, &localGPUsFn, fakeGPUs)
	alt := space.Params{R: 2, F: 3, U: 2, S: 0, W: 8} // fakeDecision's other variant
	rounds := 0
	swap(t, &refineTunedFn, func(_ context.Context, model string, stages []tuner.ChainStage, recs []cache.Record, o tuner.RefineOptions) ([]tuner.RefinedRecord, tuner.Refinement, error) {
		if rounds++; rounds > 1 {
			return nil, tuner.Refinement{Trials: make([]tuner.RefineTrial, 3), Base: tuner.ChainTiming{MedianUS: 1160}}, nil
		}
		formats := map[string]int{}
		for _, st := range stages {
			formats[st.Format]++
		}
		if model != "gguf:Q4_K_M.gguf" || len(stages) != 15 || formats["q6_K"] != 3 || len(recs) != 7 || stages[2].XBack != 3 || stages[2].Format != "q6_K" {
			t.Errorf("model %q, %d stages (formats %v, v's XBack %d), %d records", model, len(stages), formats, stages[2].XBack, len(recs))
		}
		if err := tuner.CheckChain(stages); err != nil {
			t.Error(err)
		}
		rec := recordOf(t, recs, "q6_K", 256, 512)
		return []tuner.RefinedRecord{chooseInToken(rec, alt, model)}, refinedOnce(tuner.ChainVariant{Format: rec.Format, Rows: rec.Rows, Cols: rec.Cols, Params: alt}), nil
	})
	args := []string{"--arch", "sm_90", "--gguf", file, "--cache", db, "--refine"}
	var out, errw bytes.Buffer
	if err := tuneMain(context.Background(), args, &out, &errw); err != nil {
		t.Fatalf("%v (%s)", err, errw.String())
	}
	if want := "autotune: refine Q4_K_M.gguf on fake-gpu: kept q6_K 256x512 r2f3u2s0w8"; rounds != 2 || !strings.Contains(errw.String(), want) {
		t.Errorf("%d rounds; stderr lacks %q:\n%s", rounds, want, errw.String())
	}
	recs := sm90Records(t, db, 7)
	for _, r := range recs {
		if got := strings.Join(r.Refined, ","); got != "gguf:Q4_K_M.gguf" {
			t.Errorf("%s marked refined in %q", r.Key, got)
		}
	}
	if rec := recordOf(t, recs, "q6_K", 256, 512); rec.WinnerID != alt.ID() {
		t.Errorf("q6_K 256x512 stored %s, want the refinement's %s", rec.WinnerID, alt.ID())
	}
	rerunSkipsRefined(t, args, &rounds, "refined in the gguf:Q4_K_M.gguf token by an earlier run")
}

// rerunSkipsRefined runs tune with args again, on a cache whose tokens
// are refined, and checks that it refines nothing (*rounds, which the
// fake refinement counts, stays 0) and says want on stderr.
func rerunSkipsRefined(t *testing.T, args []string, rounds *int, want string) {
	t.Helper()
	*rounds = 0
	var out, errw bytes.Buffer
	if err := tuneMain(context.Background(), args, &out, &errw); err != nil {
		t.Fatal(err)
	}
	if *rounds != 0 || !strings.Contains(errw.String(), want) {
		t.Errorf("second run: %d rounds; stderr lacks %q:\n%s", *rounds, want, errw.String())
	}
}

// A tune --refine interrupted while refining keeps every tuned entry and
// the refinements that finished, names the formats it did not refine, and
// the same command then refines just those.
func TestTuneRefineInterrupted(t *testing.T) {
	db := filepath.Join(t.TempDir(), "tune.db")
	swap(t, &runFn, (&fakeRun{}).run)
	swap(t, &localGPUsFn, fakeGPUs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	alt := space.Params{R: 2, F: 3, U: 2, S: 0, W: 8} // fakeDecision's other variant
	var refined []string
	swap(t, &refineTunedFn, func(ctx context.Context, model string, stages []tuner.ChainStage, recs []cache.Record, _ tuner.RefineOptions) ([]tuner.RefinedRecord, tuner.Refinement, error) {
		format := stages[0].Format
		refined = append(refined, format)
		switch {
		case format == "q8_0" && ctx.Value(interruptKey{}) != nil:
			cancel()
			return nil, tuner.Refinement{}, context.Canceled
		case format != "q4_0" || len(refined) > 1:
			return nil, tuner.Refinement{Base: tuner.ChainTiming{MedianUS: 1160}}, nil
		}
		rec := recordOf(t, recs, "q4_0", 28672, 4096)
		return []tuner.RefinedRecord{chooseInToken(rec, alt, model)}, refinedOnce(tuner.ChainVariant{Format: rec.Format, Rows: rec.Rows, Cols: rec.Cols, Params: alt}), nil
	})
	args := []string{"--arch", "sm_90", "--formats", "q4_0,q8_0,bf16", "--cache", db, "--refine"}
	var out, errw bytes.Buffer
	err := tuneMain(context.WithValue(ctx, interruptKey{}, true), args, &out, &errw)
	want := "interrupted while refining q8_0, bf16: every tuned entry and every finished refinement are saved in " + db +
		"; run the same command again to refine the rest"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v\nwant %s", err, want)
	}
	if got := strings.Join(refined, ", "); got != "q4_0, q4_0, q8_0" {
		t.Errorf("refined %s, want q4_0's two rounds, then q8_0's interrupted one", got)
	}
	recs := sm90Records(t, db, 21)
	if rec := recordOf(t, recs, "q4_0", 28672, 4096); rec.WinnerID != alt.ID() || rec.Token == nil || rec.Refined == nil {
		t.Errorf("q4_0's finished refinement not saved: %s %s, token %+v, refined %v", rec.Format, rec.WinnerID, rec.Token, rec.Refined)
	}

	// The same command again tunes nothing and refines the two formats
	// the interrupt left.
	refined = nil
	errw.Reset()
	if err := tuneMain(context.Background(), args, &out, &errw); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(refined, ", "); got != "q8_0, bf16" {
		t.Errorf("the resumed run refined %s, want q8_0, bf16", got)
	}
	for _, want := range []string{"autotune: skipping 21 (format, shape) already tuned",
		"autotune: refine q4_0 on fake-gpu: refined in the llama-3-8b token by an earlier run",
		"autotune: refine q8_0 on fake-gpu: no alternatives measured", "autotune: refine bf16 on fake-gpu: no alternatives measured"} {
		if !strings.Contains(errw.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errw.String())
		}
	}
}

// interruptKey marks the context of the run TestTuneRefineInterrupted
// interrupts.
type interruptKey struct{}

// tune --refine over GPUs of two models refines each model's token on
// its own records, and a format with a shape the cache has no record of
// is skipped.
func TestTuneRefineGroups(t *testing.T) {
	db := filepath.Join(t.TempDir(), "tune.db")
	models := []string{"NVIDIA H200", "NVIDIA H100 80GB HBM3"}
	swap(t, &localGPUsFn, func() ([]localGPU, error) {
		return []localGPU{{"sm_90", cache.NormalizeModel(models[0])}, {"sm_90", cache.NormalizeModel(models[1])}}, nil
	})
	swap(t, &runFn, func(ctx context.Context, jobs []tuner.Job, opts tuner.Options) ([]tuner.Decision, error) {
		var out []tuner.Decision
		for i, j := range jobs {
			for _, name := range models {
				if j.Format == "q8_0" && j.Rows == 128256 {
					continue // not decided: q8_0's token is incomplete
				}
				d := fakeDecision("sm_90", j, int64(i+1))
				d.GPUName, d.GPUUUID = name, "GPU-"+name
				if err := opts.Record(d); err != nil {
					return out, err
				}
				out = append(out, d)
			}
		}
		return out, nil
	})
	var calls []string
	swap(t, &refineTunedFn, func(_ context.Context, _ string, stages []tuner.ChainStage, recs []cache.Record, _ tuner.RefineOptions) ([]tuner.RefinedRecord, tuner.Refinement, error) {
		for _, r := range recs {
			if r.Model != recs[0].Model || r.Format != stages[0].Format {
				t.Errorf("records of %s and %s %s in one refinement", recs[0].Model, r.Model, r.Format)
			}
		}
		calls = append(calls, stages[0].Format+" on "+recs[0].GPUName)
		return nil, tuner.Refinement{}, nil
	})
	var out, errw bytes.Buffer
	if err := tuneMain(context.Background(), []string{"--arch", "sm_90", "--formats", "q4_0,q8_0", "--cache", db, "--refine"}, &out, &errw); err != nil {
		t.Fatalf("%v (%s)", err, errw.String())
	}
	if got := strings.Join(calls, "; "); got != "q4_0 on NVIDIA H200; q4_0 on NVIDIA H100 80GB HBM3" {
		t.Errorf("refinements: %s", got)
	}
	if !strings.Contains(errw.String(), "autotune: refine q8_0 on h200: q8_0 128256x4096 is not in the cache: not refined") {
		t.Errorf("stderr: %s", errw.String())
	}
}

// bench --chain --refine --try runs the token with exactly the variants
// given, and refuses a try it cannot run before touching a GPU.
func TestBenchChainTry(t *testing.T) {
	path := cacheWith(t, testRecord(t, "sm_90", "q4_0", 4096, 4096, "r2f0u2s2w8l1"))
	swap(t, &chainGPUsFn, func() ([]gpu.Info, error) {
		return []gpu.Info{{Ordinal: 0, Name: "NVIDIA H200", Arch: gpu.Arch{Major: 9, Minor: 0}}}, nil
	})
	var gotAlts []tuner.ChainVariant
	swap(t, &refineFn, func(_ context.Context, _ int, _ []tuner.ChainStage, alts []tuner.ChainVariant, _ tuner.RefineOptions) (tuner.Refinement, error) {
		gotAlts = alts
		// A tried variant compiled by this build spills.
		spill := tuner.ChainSpill{Format: alts[0].Format, Params: alts[0].Params, Registers: 64, SpillBytes: 8}
		return tuner.Refinement{Base: tuner.ChainTiming{MedianUS: 1160}, First: tuner.ChainResult{Spills: []tuner.ChainSpill{spill}}}, nil
	})
	var out, errw bytes.Buffer
	args := []string{"--chain", "--refine", "--formats", "q4_0,q4_K", "--cache", path, "--try", "q4_0:28672x4096:r2f0u2s3w16g4l2a1, q4_0:4096x14336:r1f0u2s3w16l2a1"}
	if err := benchMain(context.Background(), args, &out, &errw); err != nil {
		t.Fatalf("%v (%s)", err, errw.String())
	}
	want := []string{"28672x4096 r2f0u2s3w16g4l2a1", "4096x14336 r1f0u2s3w16l2a1"}
	if len(gotAlts) != len(want) {
		t.Fatalf("alternatives %+v, want %v", gotAlts, want)
	}
	for i, w := range want {
		if got := fmt.Sprintf("%dx%d %s", gotAlts[i].Rows, gotAlts[i].Cols, gotAlts[i].Params.ID()); got != w || gotAlts[i].Format != "q4_0" {
			t.Errorf("alternative %d: %s %s, want q4_0 %s", i, gotAlts[i].Format, got, w)
		}
	}
	// q4_K has no try: its token does not run.
	if !strings.Contains(out.String(), "against the variants of --try") || strings.Contains(out.String(), "q4_K, refine") ||
		!strings.Contains(out.String(), "q4_0 r2f0u2s3w16g4l2a1: this build's kernel spills 8 bytes at 64 registers") {
		t.Errorf("output:\n%s", out.String())
	}
	for _, c := range []struct{ try, want string }{
		{"q4_0:28672x4096", "want FORMAT:ROWSxCOLS:ID"},
		{"q8_0:28672x4096:r1f0u2s1w8", "format q8_0 is not among --formats (q4_0)"},
		{"q4_0:28672:r1f0u2s1w8", "28672"},
		{"q4_0:28672x4096:r1f0", "r1f0"},
		{"q4_0:28672x4096:r1f0u2s1w8l9", "l"},
		{"q4_0:1024x1024:r1f0u2s1w8", "not a shape of the token; its shapes: 6144x4096, 4096x4096, 28672x4096, 4096x14336, 128256x4096"},
	} {
		gotAlts = nil
		err := benchMain(context.Background(), []string{"--chain", "--refine", "--formats", "q4_0", "--cache", path, "--try", c.try}, &out, &errw)
		if err == nil || !strings.Contains(err.Error(), c.want) || gotAlts != nil {
			t.Errorf("--try %s: %v (ran: %v), want an error with %q", c.try, err, gotAlts != nil, c.want)
		}
	}
	if err := benchMain(context.Background(), []string{"--chain", "--try", "q4_0:4096x4096:r1f0u2s1w8"}, &out, &errw); err == nil || !strings.Contains(err.Error(), "--try is for --chain --refine") {
		t.Errorf("--try without --refine: %v", err)
	}
}
