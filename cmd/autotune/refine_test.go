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
		"o         4096x4096    r2f0u2s2w8l1          r1f0u2s1w8", "-0.72 %  faster",
		"q4_0, refine: 4096x4096 r1f0u2s1w8 together: 1159.9 µs (1159.4–1160.3, 82.8 % of the ceiling) against 1168.1 (1167.5–1168.9) as tuned in a second run, -0.70 %: kept"} {
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

// tune --refine runs the model's token of each format this run decided,
// stores the decisions the refinement changed, and prints them; usage
// errors where there is no token to run.
func TestTuneRefine(t *testing.T) {
	db := filepath.Join(t.TempDir(), "tune.db")
	swap(t, &runFn, (&fakeRun{}).run)
	swap(t, &localGPUsFn, fakeGPUs)
	alt := space.Params{R: 2, F: 3, U: 2, S: 0, W: 8} // fakeDecision's other variant
	var gotStages, rounds int
	swap(t, &refineTunedFn, func(_ context.Context, model string, stages []tuner.ChainStage, ds []tuner.Decision, o tuner.RefineOptions) ([]tuner.Decision, tuner.Refinement, error) {
		gotStages = len(stages)
		if rounds++; rounds > 1 {
			// The second round runs the first's choice and keeps it.
			for _, st := range stages {
				if st.Rows == 28672 && st.Cols == 4096 && st.Params != alt {
					t.Errorf("round %d runs gate_up's %s, want the first round's %s", rounds, st.Params.ID(), alt.ID())
				}
			}
			return nil, tuner.Refinement{Trials: make([]tuner.RefineTrial, 3), Base: tuner.ChainTiming{MedianUS: 1160}}, nil
		}
		if model != "llama-3-8b" || !o.PDL {
			t.Errorf("model %q, PDL %v", model, o.PDL)
		}
		var d tuner.Decision
		for _, x := range ds {
			if x.Rows == 28672 && x.Cols == 4096 {
				d = x
			}
		}
		for _, c := range d.Candidates {
			if c.Params == alt {
				d.Winner = c
			}
		}
		d.Token = &tuner.TokenChoice{Model: model, Isolated: "r2f3u1s0w8", PDL: true, TokenUS: 1160, BaseTokenUS: 1168}
		v := tuner.ChainVariant{Format: d.Format, Rows: d.Rows, Cols: d.Cols, Params: alt}
		with, base := tuner.ChainTiming{MedianUS: 1160}, tuner.ChainTiming{MedianUS: 1168}
		return []tuner.Decision{d}, tuner.Refinement{Trials: make([]tuner.RefineTrial, 3), Tried: []tuner.ChainVariant{v}, Chosen: []tuner.ChainVariant{v}, Together: &with, BaseAgain: &base}, nil
	})
	var out, errw bytes.Buffer
	if err := tuneMain(context.Background(), []string{"--arch", "sm_90", "--model", "llama-3-8b", "--formats", "q4_0", "--cache", db, "--refine"}, &out, &errw); err != nil {
		t.Fatalf("%v (%s)", err, errw.String())
	}
	if gotStages != 32*4+1 || rounds != 2 {
		t.Errorf("%d stages, %d rounds; want the whole token, twice (the second keeps the first's choice)", gotStages, rounds)
	}
	if want := "autotune: refine q4_0 (round 2): none of 3 alternatives made the token faster beyond the intervals (1160.0 µs)"; !strings.Contains(errw.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, errw.String())
	}
	if want := "autotune: refine q4_0: kept 28672x4096 r2f3u2s0w8: 1160.0 against 1168.0 µs per token (-0.68 %)"; !strings.Contains(errw.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, errw.String())
	}
	if !strings.Contains(out.String(), "28672x4096   r2f3u2s0w8") {
		t.Errorf("table lacks the refined winner:\n%s", out.String())
	}
	c, err := cache.Open(db, &cache.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rec, err := c.Get(cache.Key{Arch: "sm_90", Format: "q4_0", Rows: 28672, Cols: 4096})
	if err != nil || rec.WinnerID != "r2f3u2s0w8" || rec.Token == nil || rec.Token.Isolated != "r2f3u1s0w8" {
		t.Fatalf("stored %s, token %+v (%v)", rec.WinnerID, rec.Token, err)
	}

	for _, args := range [][]string{{"--shapes", "4096x4096", "--refine"}, {"--refine", "--shard", "0/2"}} {
		if _, err := parseTuneFlags(args); err == nil || !strings.Contains(err.Error(), "--refine") {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// A tune --refine interrupted while refining keeps every tuned entry and
// the refinements that finished, and names the formats it did not refine
// (a plain re-run would find nothing left to tune).
func TestTuneRefineInterrupted(t *testing.T) {
	db := filepath.Join(t.TempDir(), "tune.db")
	swap(t, &runFn, (&fakeRun{}).run)
	swap(t, &localGPUsFn, fakeGPUs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	alt := space.Params{R: 2, F: 3, U: 2, S: 0, W: 8} // fakeDecision's other variant
	var refined []string
	swap(t, &refineTunedFn, func(ctx context.Context, model string, stages []tuner.ChainStage, ds []tuner.Decision, _ tuner.RefineOptions) ([]tuner.Decision, tuner.Refinement, error) {
		format := stages[0].Format
		refined = append(refined, format)
		if format != "q4_0" {
			cancel()
			return nil, tuner.Refinement{}, ctx.Err()
		}
		if len(refined) > 1 {
			return nil, tuner.Refinement{Base: tuner.ChainTiming{MedianUS: 1160}}, nil
		}
		for _, d := range ds {
			if d.Rows == 28672 && d.Cols == 4096 {
				for _, c := range d.Candidates {
					if c.Params == alt {
						d.Winner = c
					}
				}
				d.Token = &tuner.TokenChoice{Model: model, Isolated: d.Candidates[0].ID, PDL: true, TokenUS: 1160, BaseTokenUS: 1168}
				v := tuner.ChainVariant{Format: d.Format, Rows: d.Rows, Cols: d.Cols, Params: alt}
				with, base := tuner.ChainTiming{MedianUS: 1160}, tuner.ChainTiming{MedianUS: 1168}
				return []tuner.Decision{d}, tuner.Refinement{Tried: []tuner.ChainVariant{v}, Chosen: []tuner.ChainVariant{v}, Together: &with, BaseAgain: &base}, nil
			}
		}
		t.Fatal("no gate_up decision")
		return nil, tuner.Refinement{}, nil
	})
	var out, errw bytes.Buffer
	err := tuneMain(ctx, []string{"--arch", "sm_90", "--formats", "q4_0,q8_0,bf16", "--cache", db, "--refine"}, &out, &errw)
	want := "interrupted while refining q8_0, bf16: all 21 tuned entries and every finished refinement are saved in " + db +
		"; run the same command with --force --formats q8_0,bf16 to tune and refine those again"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v\nwant %s", err, want)
	}
	if got := strings.Join(refined, ", "); got != "q4_0, q4_0, q8_0" {
		t.Errorf("refined %s, want q4_0's two rounds, then q8_0's interrupted one", got)
	}
	c, err := cache.Open(db, &cache.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	recs, err := c.All("sm_90")
	if err != nil || len(recs) != 21 {
		t.Fatalf("%d records saved (%v), want 21", len(recs), err)
	}
	rec, err := c.Get(cache.Key{Arch: "sm_90", Format: "q4_0", Rows: 28672, Cols: 4096})
	if err != nil || rec.WinnerID != alt.ID() || rec.Token == nil {
		t.Errorf("q4_0's finished refinement not saved: %s, token %+v (%v)", rec.WinnerID, rec.Token, err)
	}
	c.Close()

	// The same command again tunes nothing and says that it refines
	// nothing either.
	refined = nil
	errw.Reset()
	if err := tuneMain(context.Background(), []string{"--arch", "sm_90", "--formats", "q4_0,q8_0,bf16", "--cache", db, "--refine"}, &out, &errw); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"q4_0", "q8_0", "bf16"} {
		if want := "autotune: refine " + f + ": every shape was tuned in an earlier run: not refined (--force tunes and refines it again)"; !strings.Contains(errw.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errw.String())
		}
	}
	if refined != nil {
		t.Errorf("a resumed run refined %v", refined)
	}
}

// tune --refine over GPUs of two models refines each model's token on
// its own, and a format with a shape the run did not decide is skipped.
func TestTuneRefineGroups(t *testing.T) {
	db := filepath.Join(t.TempDir(), "tune.db")
	swap(t, &localGPUsFn, fakeGPUs)
	swap(t, &runFn, func(ctx context.Context, jobs []tuner.Job, opts tuner.Options) ([]tuner.Decision, error) {
		var out []tuner.Decision
		for i, j := range jobs {
			for _, name := range []string{"NVIDIA H200", "NVIDIA H100 80GB HBM3"} {
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
	swap(t, &refineTunedFn, func(_ context.Context, _ string, stages []tuner.ChainStage, ds []tuner.Decision, _ tuner.RefineOptions) ([]tuner.Decision, tuner.Refinement, error) {
		for _, d := range ds {
			if d.GPUName != ds[0].GPUName || d.Format != stages[0].Format {
				t.Errorf("decisions of %s and %s %s in one refinement", ds[0].GPUName, d.GPUName, d.Format)
			}
		}
		calls = append(calls, stages[0].Format+" on "+ds[0].GPUName)
		return nil, tuner.Refinement{}, nil
	})
	var out, errw bytes.Buffer
	if err := tuneMain(context.Background(), []string{"--arch", "sm_90", "--formats", "q4_0,q8_0", "--cache", db, "--refine"}, &out, &errw); err != nil {
		t.Fatalf("%v (%s)", err, errw.String())
	}
	if got := strings.Join(calls, "; "); got != "q4_0 on NVIDIA H200; q4_0 on NVIDIA H100 80GB HBM3" {
		t.Errorf("refinements: %s", got)
	}
	if !strings.Contains(errw.String(), "autotune: refine q8_0: 128256x4096 was not tuned in this run: not refined") {
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
		return tuner.Refinement{Base: tuner.ChainTiming{MedianUS: 1160}}, nil
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
	if !strings.Contains(out.String(), "against the variants of --try") || strings.Contains(out.String(), "q4_K, refine") {
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
