package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/tuner"
	"github.com/gemvtune/gemvtune/variants"
)

func TestTuneFlagErrors(t *testing.T) {
	swap(t, &localGPUsFn, func() ([]localGPU, error) { return nil, errors.New("no GPU in this test") })
	dir := t.TempDir()
	tests := []struct {
		name  string
		args  []string
		usage bool   // a usage error (exit 2); false: a failure (exit 1)
		want  string // in the message
	}{
		{"bad arch", []string{"--arch", "sm_7"}, true, "sm_XY"},
		{"arch without limits", []string{"--arch", "sm_60", "--dry-run"}, true, "no limits for it: accepted sm_70"},
		{"arch past the table", []string{"--arch", "sm_999", "--dry-run"}, true, "no limits for it"},
		{"arch name", []string{"--arch", "volta"}, true, "or auto"},
		{"arch suffix", []string{"--arch", "sm_90a"}, true, "sm_XY"},
		{"unknown model", []string{"--arch", "sm_90", "--model", "llama-2-7b"}, true, "accepted: llama-3-70b, llama-3-8b, mistral-7b, qwen2.5-7b"},
		{"shape without x", []string{"--shapes", "4096"}, true, "ROWSxCOLS"},
		{"zero cols", []string{"--shapes", "4096x0"}, true, "positive"},
		{"empty shape", []string{"--shapes", "4096x4096,,1024x4096"}, true, "--shapes"},
		{"unknown format", []string{"--formats", "q4_0,q5_0"}, true, "accepted: " + strings.Join(variants.FormatNames, ", ")},
		{"two sources", []string{"--model", "llama-3-8b", "--shapes", "4096x4096"}, true, "one of --model, --shapes and --gguf"},
		{"negative budget", []string{"--budget", "-1"}, true, `--budget "-1": want 0 (exhaustive)`},
		{"budget not a number", []string{"--budget", "many"}, true, `--budget "many"`},
		{"budget share over 100", []string{"--budget", "120%"}, true, `--budget "120%"`},
		{"budget of no time", []string{"--budget", "-3s"}, true, `--budget "-3s"`},
		{"unknown search", []string{"--search", "annealing"}, true, `--search "annealing": accepted exhaustive, halving, race`},
		{"bad shard", []string{"--shard", "2/2"}, true, "--shard \"2/2\": want I/N with 0 ≤ I < N"},
		{"unknown flag", []string{"--archs", "sm_90"}, true, "flag provided but not defined: -archs"},
		{"positional", []string{"--arch", "sm_90", "llama"}, true, `unexpected argument "llama"`},
		{"dry run auto", []string{"--dry-run"}, true, "--dry-run needs --arch"},
		{"missing gguf", []string{"--gguf", filepath.Join(dir, "none.gguf")}, false, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := dispatch(context.Background(), tt.args)
			if err == nil {
				t.Fatal("no error")
			}
			var u usageError
			if got := errors.As(err, &u); got != tt.usage {
				t.Errorf("usage error = %v, want %v (%v)", got, tt.usage, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

func TestTuneHelp(t *testing.T) {
	var out bytes.Buffer
	if err := tuneMain(context.Background(), []string{"--help"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	help := out.String()
	for _, flag := range []string{"-arch", "-model", "-shapes", "-gguf", "-formats", "-cache", "-budget", "-dry-run", "-json", "-force", "-wait", "exit codes", "2 usage"} {
		if !strings.Contains(help, flag) {
			t.Errorf("help does not mention %s", flag)
		}
	}
}

func TestParseShapes(t *testing.T) {
	tests := []struct {
		in, want string // want: shapes joined by ",", or "error"
	}{
		{"4096x14336,1024x4096", "4096x14336,1024x4096"},
		{" 4096x4096 , 4096x4096,1x32", "4096x4096,1x32"},
		{"", "error"},
		{"4096", "error"},
		{"x4096", "error"},
		{"4096x", "error"},
		{"-1x4096", "error"},
		{"4096X4096", "error"},
		{"04096x4096", "error"},
		{"4096x4096x2", "error"},
	}
	for _, tt := range tests {
		shapes, err := parseShapes(tt.in)
		got := "error"
		if err == nil {
			var s []string
			for _, sh := range shapes {
				s = append(s, sh.String())
			}
			got = strings.Join(s, ",")
		}
		if got != tt.want {
			t.Errorf("parseShapes(%q) = %s (%v), want %s", tt.in, got, err, tt.want)
		}
	}
}

func TestParseFormats(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", strings.Join(variants.FormatNames, ",")},
		{"q4_k,Q8_0,q4_K", "q4_K,q8_0"},
		{"bf16", "bf16"},
		{"q5_0", "error"},
		{"q4_0,", "error"},
	}
	for _, tt := range tests {
		fs, err := parseFormats(tt.in)
		got := strings.Join(fs, ",")
		if err != nil {
			got = "error"
		}
		if got != tt.want {
			t.Errorf("parseFormats(%q) = %s (%v), want %s", tt.in, got, err, tt.want)
		}
	}
}

// jobNames writes jobs as "format shape" strings.
func jobNames(jobs []tuner.Job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.Format+" "+j.Shape())
	}
	return out
}

func TestResolveJobs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "small.gguf")
	writeGGUF(t, path, smallModel)
	tests := []struct {
		name  string
		flags tuneFlags
		jobs  []string // nil: check only the count
		count int
		notes []string // each must appear in the notes
	}{
		{name: "default model", flags: tuneFlags{}, count: 7 * len(variants.FormatNames)},
		{name: "preset", flags: tuneFlags{model: "qwen2.5-7b", formats: "q4_K"}, jobs: []string{
			"q4_K 3584x3584", "q4_K 512x3584", "q4_K 4608x3584", "q4_K 18944x3584", "q4_K 37888x3584", "q4_K 3584x18944", "q4_K 152064x3584"}},
		{name: "shapes", flags: tuneFlags{shapes: "64x256,4096x80", formats: "bf16,q4_0"}, jobs: []string{
			"bf16 64x256", "bf16 4096x80", "q4_0 64x256"},
			notes: []string{"not tuned: q4_0 4096x80 (cols 80 is not a multiple of the 32-weight block)"}},
		{name: "gguf", flags: tuneFlags{gguf: path}, jobs: []string{
			"q4_0 256x256", "q4_0 64x256", "q8_0 256x512", "q8_0 1000x256", "q4_K 64x256", "q6_K 512x256", "bf16 512x256", "f16 512x256"},
			notes: []string{"not tuned: Q2_K (1 tensors)"}},
		{name: "gguf narrowed", flags: tuneFlags{gguf: path, formats: "q8_0"}, jobs: []string{
			"q8_0 256x512", "q8_0 1000x256"},
			notes: []string{"not tuned: q4_0 256x256 (2 tensors; not in --formats)", "not tuned: f16 512x256 (1 tensors; not in --formats)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jobs, notes, err := resolveJobs(tt.flags)
			if err != nil {
				t.Fatal(err)
			}
			got := jobNames(jobs)
			if tt.jobs != nil && strings.Join(got, "; ") != strings.Join(tt.jobs, "; ") {
				t.Errorf("jobs:\n got  %v\n want %v", got, tt.jobs)
			}
			if tt.jobs == nil && len(got) != tt.count {
				t.Errorf("%d jobs, want %d", len(got), tt.count)
			}
			all := strings.Join(notes, "\n")
			for _, n := range tt.notes {
				if !strings.Contains(all, n) {
					t.Errorf("notes %q lack %q", all, n)
				}
			}
		})
	}
}

// swap replaces *p by v for the duration of the test.
func swap[T any](t *testing.T, p *T, v T) {
	old := *p
	*p = v
	t.Cleanup(func() { *p = old })
}

func TestDryRunFake(t *testing.T) {
	var gotArch string
	var gotJobs []tuner.Job
	swap(t, &planFn, func(arch string, jobs []tuner.Job, budget int) ([]tuner.PlanEntry, error) {
		gotArch, gotJobs = arch, jobs
		var plan []tuner.PlanEntry
		for i, j := range jobs {
			plan = append(plan, tuner.PlanEntry{Job: j, Candidates: 100 + i, Excluded: 20,
				Reasons:  map[string]int{"smem 72 KB > 48 KB default cap": 12, "rows not a multiple of r": 8},
				Expected: time.Duration(i+1) * 1500 * time.Millisecond})
		}
		return plan, nil
	})
	var out, errw bytes.Buffer
	err := tuneMain(context.Background(), []string{"--arch", "sm_70", "--shapes", "4096x4096,1024x4096", "--formats", "q8_0", "--dry-run"}, &out, &errw)
	if err != nil {
		t.Fatal(err)
	}
	if gotArch != "sm_70" || len(gotJobs) != 2 {
		t.Errorf("plan called with %s, %v", gotArch, gotJobs)
	}
	text := out.String()
	for _, want := range []string{
		"plan for sm_70",
		"q8_0    4096x4096  100         20        1.5s      smem 72 KB > 48 KB default cap (12); rows not a multiple of r (8)",
		"q8_0    1024x4096  101",
		"total: 2 jobs, 201 candidates (40 excluded), expected 4.5s on one GPU",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("dry-run output lacks %q:\n%s", want, text)
		}
	}
}

// TestDryRunSM70 runs the real planner on sm_70 without a GPU.
func TestDryRunSM70(t *testing.T) {
	var out, errw bytes.Buffer
	err := tuneMain(context.Background(), []string{"--arch", "sm_70", "--model", "llama-3-8b", "--dry-run"}, &out, &errw)
	if err != nil {
		t.Fatalf("%v\nstderr: %s", err, errw.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	// A title, the header, 7 shapes of every format and the total.
	jobs := 7 * len(variants.FormatNames)
	if len(lines) != jobs+3 {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), jobs+3, out.String())
	}
	if want := fmt.Sprintf("total: %d jobs, ", jobs); !strings.HasPrefix(lines[jobs+2], want) {
		t.Errorf("last line %q, want it to start with %q", lines[jobs+2], want)
	}
	for _, l := range lines[2 : jobs+2] {
		f := strings.Fields(l)
		if len(f) < 5 || f[2] == "0" {
			t.Errorf("row %q: no candidate left", l)
		}
	}
}

// fakeRun is a tuner that decides every job at once without a GPU, calling
// Progress and Record as the real one does. cancelAfter > 0 cancels the
// run after that many jobs.
// fakeGPUs is the one local GPU of the fake tuner's decisions.
func fakeGPUs() ([]localGPU, error) {
	return []localGPU{{"sm_90", cache.NormalizeModel("Fake GPU")}}, nil
}

type fakeRun struct {
	mu          sync.Mutex
	jobs        []tuner.Job // every job it was given
	cancelAfter int
	cancel      context.CancelFunc
}

func (f *fakeRun) run(ctx context.Context, jobs []tuner.Job, opts tuner.Options) ([]tuner.Decision, error) {
	f.mu.Lock()
	f.jobs = append(f.jobs, jobs...)
	f.mu.Unlock()
	arch := opts.Arch
	var out []tuner.Decision
	// The events the real tuner sends: stages before any job, stages within
	// a job (Total -1), and a finished job.
	opts.Progress(tuner.Progress{Total: len(jobs), Stage: "compile q4_0 (2024 variants)"})
	for i, j := range jobs {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		for _, stage := range []string{"verify", "measure"} {
			opts.Progress(tuner.Progress{Total: -1, Job: j, Stage: stage, GPU: "0: Fake GPU"})
		}
		d := fakeDecision(arch, j, int64(i+1))
		if err := opts.Record(d); err != nil {
			return out, err
		}
		out = append(out, d)
		opts.Progress(tuner.Progress{Done: i + 1, Total: len(jobs), Job: j, Stage: "done", GPU: "0: Fake GPU", ETA: time.Duration(len(jobs)-i-1) * time.Second})
		if f.cancelAfter > 0 && i+1 == f.cancelAfter {
			f.cancel()
		}
	}
	return out, nil
}

// fakeDecision builds a plausible decision with random (never zero)
// figures: a winner r2f3u1s0w8 beating stock, a grid of rows per warp ×
// launch-bounds floors around it, a variant with other knobs, a mismatch
// and a pruned one.
func fakeDecision(arch string, j tuner.Job, seed int64) tuner.Decision {
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	fam, err := variants.FamilyOf(j.Format)
	hash := "unregistered"
	if err == nil {
		hash = fam.SourceHash()
	}
	ceiling := 4400 + 100*rng.Float64()
	bytes := float64(j.Rows) * float64(j.Cols) // about a byte per weight
	cand := func(p space.Params, gbs float64) tuner.Candidate {
		us := bytes / gbs / 1e3
		return tuner.Candidate{ID: p.ID(), Params: p, Class: "exact", Status: tuner.StatusOK,
			Registers: 24 + 8*p.R + 2*p.F + rng.IntN(4), BlocksPerSM: max(1, 8-p.R+p.F/2),
			MedianUS: us, LoUS: us * 0.99, HiUS: us * 1.01, GBs: gbs, PctCeiling: 100 * gbs / ceiling,
			Samples: []float64{us, us * 1.001, us * 0.999}}
	}
	win := cand(space.Params{R: 2, F: 3, U: 1, S: 0, W: 8}, 3000+200*rng.Float64())
	stock := cand(space.Stock, 2000+100*rng.Float64())
	others := []tuner.Candidate{stock, win}
	for _, f := range []int{0, 2, 3, 4} {
		for _, r := range []int{1, 2, 3, 4, 6, 8} {
			p := space.Params{R: r, F: f, U: 1, S: 0, W: 8}
			if p == stock.Params || p == win.Params || p.ID() == "r8f4u1s0w8" {
				continue
			}
			d := float64(r) - 2.5
			gbs := 2100 + 800/(1+d*d/2) + 40*float64(f) + 50*rng.Float64()
			others = append(others, cand(p, min(gbs, 0.97*win.GBs)))
		}
	}
	others = append(others, cand(space.Params{R: 2, F: 3, U: 2, S: 0, W: 8}, 2900),
		tuner.Candidate{ID: "r8f4u1s0w8", Params: space.Params{R: 8, F: 4, U: 1, S: 0, W: 8}, Class: "exact", Status: tuner.StatusMismatch, Reason: "row 17: 1.25 vs stock 1.5"},
		tuner.Candidate{ID: "r6f0u8s1w16", Params: space.Params{R: 6, F: 0, U: 8, S: 1, W: 16}, Class: "exact", Status: tuner.StatusPruned, Reason: "smem 72 KB > 48 KB default cap"})
	return tuner.Decision{
		Job: j, Arch: arch, Winner: win, Stock: stock, Speedup: stock.MedianUS / win.MedianUS, P: 0.001 * rng.Float64(),
		Reason: fmt.Sprintf("r2f3u1s0w8: +%.1f %% (p=0.001)", 100*(win.GBs/stock.GBs-1)), CeilingGBs: ceiling,
		Bytes: int64(j.Rows) * int64(j.Cols), Candidates: others, Cubin: []byte("fake cubin " + j.Shape()),
		GPUName: "Fake GPU", GPUUUID: "GPU-fake", Driver: "555.42", NVRTC: "12.4", SourceHash: hash,
		Time: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Wall: 1.5,
		Before: tuner.Clocks{SMMHz: 1980, MemMHz: 3201, TempC: 40}, After: tuner.Clocks{SMMHz: 1980, MemMHz: 3201, TempC: 55},
	}
}

func TestTuneRecordsAndResumes(t *testing.T) {
	db := filepath.Join(t.TempDir(), "tune.db")
	args := []string{"--arch", "sm_90", "--shapes", "4096x4096,1024x4096", "--formats", "q4_0", "--cache", db}

	fake := &fakeRun{}
	swap(t, &runFn, fake.run)
	swap(t, &localGPUsFn, fakeGPUs)
	var out, errw bytes.Buffer
	if err := tuneMain(context.Background(), args, &out, &errw); err != nil {
		t.Fatal(err)
	}
	table := out.String()
	for _, want := range []string{"ARCH", "SPEEDUP", "sm_90  q4_0    4096x4096  r2f3u1s0w8  exact", "1024x4096"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	wantErr := "autotune: compile q4_0 (2024 variants)\n" +
		"autotune: [1/2] q4_0 4096x4096 on GPU 0: Fake GPU\n" +
		"autotune: [2/2] q4_0 1024x4096 on GPU 0: Fake GPU, ETA 1s\n"
	if errw.String() != wantErr {
		t.Errorf("progress on stderr:\n%s\nwant:\n%s", errw.String(), wantErr)
	}
	c, err := cache.Open(db, &cache.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := c.All("sm_90")
	if err != nil || len(recs) != 2 {
		t.Fatalf("cache holds %d records (%v), want 2", len(recs), err)
	}

	// Second run: everything is fresh, nothing runs.
	fake2 := &fakeRun{}
	swap(t, &runFn, fake2.run)
	out.Reset()
	errw.Reset()
	if err := tuneMain(context.Background(), args, &out, &errw); err != nil {
		t.Fatal(err)
	}
	if len(fake2.jobs) != 0 {
		t.Errorf("second run tuned %v again", jobNames(fake2.jobs))
	}
	if !strings.Contains(errw.String(), "skipping 2 (format, shape) already tuned") {
		t.Errorf("stderr does not say what it skipped:\n%s", errw.String())
	}

	// --force re-tunes them.
	if err := tuneMain(context.Background(), append(args, "--force"), &out, &errw); err != nil {
		t.Fatal(err)
	}
	if len(fake2.jobs) != 2 {
		t.Errorf("--force tuned %v, want both", jobNames(fake2.jobs))
	}
}

func TestTuneInterruptedResumes(t *testing.T) {
	db := filepath.Join(t.TempDir(), "tune.db")
	args := []string{"--arch", "sm_90", "--shapes", "4096x4096,1024x4096,14336x4096", "--formats", "q8_0", "--cache", db}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fake := &fakeRun{cancelAfter: 1, cancel: cancel}
	swap(t, &runFn, fake.run)
	swap(t, &localGPUsFn, fakeGPUs)
	var out, errw bytes.Buffer
	err := tuneMain(ctx, args, &out, &errw)
	if err == nil || !strings.Contains(err.Error(), "interrupted: 1 of 3 finished and saved") {
		t.Fatalf("error %v, want interrupted: 1 of 3", err)
	}
	if !strings.Contains(out.String(), "4096x4096") {
		t.Errorf("finished entry not printed:\n%s", out.String())
	}

	fake2 := &fakeRun{}
	swap(t, &runFn, fake2.run)
	if err := tuneMain(context.Background(), args, &out, &errw); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(jobNames(fake2.jobs), ", "); got != "q8_0 1024x4096, q8_0 14336x4096" {
		t.Errorf("resumed run tuned %s", got)
	}
}

// A tune that waits (--wait) for another writer's cache stops waiting
// when it is interrupted, with one line naming the holder.
func TestTuneWaitInterrupted(t *testing.T) {
	db := filepath.Join(t.TempDir(), "tune.db")
	holder, err := cache.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	swap(t, &runFn, (&fakeRun{}).run)
	swap(t, &localGPUsFn, fakeGPUs)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	var out, errw bytes.Buffer
	err = tuneMain(ctx, []string{"--arch", "sm_90", "--shapes", "4096x4096", "--formats", "q8_0", "--cache", db, "--wait"}, &out, &errw)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "stopped waiting for "+db+".lock") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("interrupted wait: %v", err)
	}
}

func TestTuneJSON(t *testing.T) {
	db := filepath.Join(t.TempDir(), "tune.db")
	swap(t, &runFn, (&fakeRun{}).run)
	var out, errw bytes.Buffer
	err := tuneMain(context.Background(), []string{"--arch", "sm_80", "--shapes", "4096x4096", "--formats", "bf16,q4_0", "--json", "--cache", db}, &out, &errw)
	if err != nil {
		t.Fatal(err)
	}
	var ds []tuner.Decision
	if err := json.Unmarshal(out.Bytes(), &ds); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out.String())
	}
	if len(ds) != 2 || ds[0].Format != "bf16" || ds[1].Format != "q4_0" || ds[0].Winner.ID != "r2f3u1s0w8" || ds[0].Arch != "sm_80" {
		t.Errorf("decoded %+v", ds)
	}
}

func TestTuneRunError(t *testing.T) {
	db := filepath.Join(t.TempDir(), "tune.db")
	swap(t, &runFn, func(ctx context.Context, jobs []tuner.Job, opts tuner.Options) ([]tuner.Decision, error) {
		return nil, errors.New("no local GPU is sm_70; found: 0: NVIDIA H200 (sm_90)")
	})
	var out, errw bytes.Buffer
	err := tuneMain(context.Background(), []string{"--arch", "sm_70", "--cache", db}, &out, &errw)
	if err == nil || err.Error() != "no local GPU is sm_70; found: 0: NVIDIA H200 (sm_90)" {
		t.Errorf("error %v", err)
	}
	if out.Len() != 0 || errw.Len() != 0 {
		t.Errorf("output on a failed run:\nstdout: %s\nstderr: %s", out.String(), errw.String())
	}
}

func TestRecordFromDecision(t *testing.T) {
	d := fakeDecision("sm_90", tuner.Job{Format: "q4_0", Rows: 4096, Cols: 14336}, 3)
	kept := fakeDecision("sm_90", tuner.Job{Format: "q8_0", Rows: 1024, Cols: 4096}, 4)
	kept.Winner = tuner.Candidate{} // the tuner kept stock and named no winner
	kept.Reason, kept.Speedup = "kept v1: +1.2 % not significant (p=0.41)", 1

	db, err := cache.Open(filepath.Join(t.TempDir(), "tune.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, dec := range []tuner.Decision{d, kept} {
		r := dec.Record()
		if err := db.Put(r, dec.Cubin); err != nil {
			t.Fatalf("%s: Put: %v", dec.Shape(), err)
		}
		got, err := db.Get(r.Key)
		if err != nil {
			t.Fatal(err)
		}
		if got.Decision != dec.Reason || got.GPUName != "Fake GPU" || got.SourceHash != dec.SourceHash || len(got.Candidates) != len(dec.Candidates) {
			t.Errorf("%s: record %+v", dec.Shape(), got)
		}
		if !strings.Contains(got.ClockNotes, "after: SM 1980 MHz, memory 3201 MHz, 55 °C") {
			t.Errorf("clock notes %q", got.ClockNotes)
		}
	}
	r := d.Record()
	if r.WinnerID != "r2f3u1s0w8" || r.MedianUS != d.Winner.MedianUS || r.StockGBs != d.Stock.GBs || r.Samples != 3 || r.CeilingGBs != d.CeilingGBs {
		t.Errorf("winner fields: %+v", r)
	}
	k := kept.Record()
	if k.WinnerID != "r1f0u1s0w8" || k.Params != space.Stock || k.Class != "exact" {
		t.Errorf("kept stock: %s %v %s", k.WinnerID, k.Params, k.Class)
	}
	if _, err := os.Stat(db.Path()); err != nil {
		t.Error(err)
	}
}

// buildAutotune builds this command into a temporary folder and returns
// the binary's path; it skips in -short mode and without a go tool.
func buildAutotune(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	bin := filepath.Join(t.TempDir(), "autotune")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestBinaryNoGPU builds autotune and runs commands that need a GPU where
// they cannot have one: "autotune --arch sm_70" on a machine without an
// sm_70 GPU (CI has none), and bench where no driver loads (skipped where
// one does). Each must fail with exit status 1 and exactly one line on
// stderr, bench's before any note on the cache it found missing.
func TestBinaryNoGPU(t *testing.T) {
	bin := buildAutotune(t)
	_, probeErr := probeGPUs()
	for _, args := range [][]string{{"--arch", "sm_70"}, {"bench"}, {"bench", "--chain"}} {
		name := strings.Join(args, " ")
		t.Run(name, func(t *testing.T) {
			if args[0] == "bench" && probeErr == nil {
				t.Skip("a driver loads here: bench would measure")
			}
			dir := t.TempDir()
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "GEMV_TUNE_CACHE="+filepath.Join(dir, "tune.db"))
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("autotune %s succeeded or did not run (%v); stdout:\n%s", name, err, stdout.String())
			}
			if exit.ExitCode() != 1 {
				t.Errorf("exit status %d, want 1", exit.ExitCode())
			}
			lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "autotune: ") {
				t.Errorf("stderr is not one line:\n%s", stderr.String())
			}
			t.Logf("stderr: %s", stderr.String())
			if stdout.Len() != 0 {
				t.Errorf("stdout not empty:\n%s", stdout.String())
			}
		})
	}
}

// TestBinarySIGTERM: a SIGTERM (a service manager's stop, timeout(1))
// stops autotune as Ctrl-C does: here one waiting for another writer's
// cache stops waiting, with exit status 1 and one line naming the holder.
func TestBinarySIGTERM(t *testing.T) {
	bin := buildAutotune(t)
	db := filepath.Join(t.TempDir(), "tune.db")
	holder, err := cache.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	cmd := exec.Command(bin, "--arch", "sm_90", "--shapes", "4096x4096", "--formats", "q8_0", "--cache", db, "--wait")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // inside the wait: the lock is ours until the end
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("autotune kept waiting after SIGTERM")
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit %v, want status 1 (stderr %q)", err, stderr.String())
	}
	lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "stopped waiting for "+db+".lock") {
		t.Errorf("stderr is not one line naming the wait:\n%s", stderr.String())
	}
}

func TestBinaryUsageExit(t *testing.T) {
	bin := buildAutotune(t)
	tests := []struct {
		args []string
		code int
	}{
		{[]string{"--help"}, 0},
		{[]string{"--arch", "sm_7"}, 2},
		{[]string{"--formats", "q5_0"}, 2},
		{[]string{"report", "--arch", "x"}, 2},
	}
	for _, tt := range tests {
		cmd := exec.Command(bin, tt.args...)
		cmd.Env = append(os.Environ(), "GEMV_TUNE_CACHE="+filepath.Join(t.TempDir(), "tune.db"))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tt.code {
			t.Errorf("autotune %v: exit %d, want %d (stderr %q)", tt.args, code, tt.code, stderr.String())
		}
	}
}

func TestSortDecisions(t *testing.T) {
	jobs := []tuner.Job{{Format: "q4_0", Rows: 4096, Cols: 4096}, {Format: "q4_0", Rows: 1024, Cols: 4096}, {Format: "bf16", Rows: 4096, Cols: 4096}}
	ds := []tuner.Decision{{Job: jobs[2], Arch: "sm_90"}, {Job: jobs[1], Arch: "sm_90"}, {Job: jobs[0], Arch: "sm_90"}, {Job: jobs[1], Arch: "sm_80"}}
	sortDecisions(ds, jobs)
	var got []string
	for _, d := range ds {
		got = append(got, d.Arch+" "+d.Format+" "+d.Shape())
	}
	want := "sm_80 q4_0 1024x4096, sm_90 q4_0 4096x4096, sm_90 q4_0 1024x4096, sm_90 bf16 4096x4096"
	if strings.Join(got, ", ") != want {
		t.Errorf("order %v, want %s", got, want)
	}
}

// TestStaleRecordKeptWhenCubinsMatch: a record stale only by its source
// hash is kept (and names the current hash) when its kernel compiles to
// the same cubin, and re-tuned when it does not.
func TestStaleRecordKeptWhenCubinsMatch(t *testing.T) {
	for _, same := range []bool{true, false} {
		db := filepath.Join(t.TempDir(), "tune.db")
		args := []string{"--arch", "sm_90", "--shapes", "4096x4096", "--formats", "q4_0", "--cache", db}
		swap(t, &runFn, (&fakeRun{}).run)
		swap(t, &localGPUsFn, fakeGPUs)
		var out, errw bytes.Buffer
		if err := tuneMain(context.Background(), args, &out, &errw); err != nil {
			t.Fatal(err)
		}
		c, err := cache.Open(db, nil)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := c.Get(cache.Key{Arch: "sm_90", Format: "q4_0", Rows: 4096, Cols: 4096})
		if err != nil {
			t.Fatal(err)
		}
		cubin, _ := c.Cubin(rec.CubinHash)
		current := rec.SourceHash
		rec.SourceHash = "0000older0000000"
		if err := c.Put(rec, cubin); err != nil {
			t.Fatal(err)
		}
		c.Close()
		var checked int
		swap(t, &sameCubinFn, func(arch, nvrtc, format string, p space.Params, hash string) (bool, error) {
			checked++
			return same && hash == rec.CubinHash && nvrtc == rec.NVRTC, nil
		})
		fake := &fakeRun{}
		swap(t, &runFn, fake.run)
		errw.Reset()
		if err := tuneMain(context.Background(), args, &out, &errw); err != nil {
			t.Fatal(err)
		}
		if checked != 1 || (len(fake.jobs) == 0) != same {
			t.Errorf("same=%v: %d checks, re-tuned %v", same, checked, jobNames(fake.jobs))
		}
		if same && !strings.Contains(errw.String(), "compiles to the same cubins: kept") {
			t.Errorf("same cubins: stderr %q", errw.String())
		}
		r, _ := cache.Open(db, &cache.Options{ReadOnly: true})
		got, _ := r.Get(cache.Key{Arch: "sm_90", Format: "q4_0", Rows: 4096, Cols: 4096})
		if got.SourceHash != current {
			t.Errorf("same=%v: source hash %s, want the current %s", same, got.SourceHash, current)
		}
	}
}

// TestDryRunShard: the parts of --shard I/N list every job of the preset
// once between them.
func TestDryRunShard(t *testing.T) {
	total := 0
	for i := 0; i < 3; i++ {
		var out, errw bytes.Buffer
		err := tuneMain(context.Background(), []string{"--arch", "sm_90", "--model", "llama-3-8b", "--dry-run", "--shard", fmt.Sprintf("%d/3", i)}, &out, &errw)
		if err != nil {
			t.Fatalf("%v\nstderr: %s", err, errw.String())
		}
		if !strings.Contains(errw.String(), fmt.Sprintf("shard %d/3: ", i)) {
			t.Errorf("stderr lacks the shard note: %s", errw.String())
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		total += len(lines) - 3 // title, header, total
	}
	if want := 7 * len(variants.FormatNames); total != want {
		t.Errorf("the three parts plan %d jobs, want %d", total, want)
	}
}

func TestParseBudget(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want budgetSpec
	}{
		{"0", budgetSpec{}}, {"", budgetSpec{}}, {"400", budgetSpec{batches: 400}}, {"25%", budgetSpec{share: 0.25}},
		{"100%", budgetSpec{share: 1}}, {"60s", budgetSpec{wall: time.Minute}}, {" 2m ", budgetSpec{wall: 2 * time.Minute}},
	} {
		got, err := parseBudget(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("parseBudget(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

// A time budget becomes the share of the exhaustive run the plan expects
// to take that long; the plan of a share spends about that share.
func TestDryRunBudgets(t *testing.T) {
	run := func(budget string) string {
		var out, errw bytes.Buffer
		err := tuneMain(context.Background(), []string{"--arch", "sm_90", "--model", "llama-3-8b", "--formats", "q4_0", "--dry-run", "--budget", budget}, &out, &errw)
		if err != nil {
			t.Fatalf("--budget %s: %v (%s)", budget, err, errw.String())
		}
		return out.String()
	}
	if out := run("25%"); !strings.Contains(out, "budget: 25 % of an exhaustive run's timed batches") {
		t.Errorf("--budget 25%%:\n%s", out)
	}
	if out := run("20s"); !strings.Contains(out, "--budget 20s: ") || !strings.Contains(out, " % of the exhaustive run's timed batches") {
		t.Errorf("--budget 20s:\n%s", out)
	}
	if out := run("10h"); !strings.Contains(out, "tuning in full") {
		t.Errorf("--budget 10h:\n%s", out)
	}
}

// A time budget is split by the plan's model into what no budget shortens
// and what scales with the share.
func TestTimeBudgetShare(t *testing.T) {
	swap(t, &planFn, func(arch string, jobs []tuner.Job, budget int) ([]tuner.PlanEntry, error) {
		return []tuner.PlanEntry{{Expected: 100 * time.Second}}, nil // 20 s fixed + 80 s at the full share
	})
	swap(t, &sharePlanFn, func(arch string, jobs []tuner.Job, share float64) ([]tuner.PlanEntry, error) {
		return []tuner.PlanEntry{{Expected: time.Duration((20 + 80*share) * float64(time.Second))}}, nil
	})
	for _, tc := range []struct {
		wall  time.Duration
		share float64
	}{{60 * time.Second, 0.5}, {10 * time.Second, minShare}, {200 * time.Second, 0}} {
		_, share, note, err := budgetSpec{wall: tc.wall}.options("sm_90", nil)
		if err != nil || math.Abs(share-tc.share) > 1e-9 || note == "" {
			t.Errorf("--budget %v: share %.3f (%q, %v), want %.3f", tc.wall, share, note, err, tc.share)
		}
	}
}
