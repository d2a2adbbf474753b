package tuner

import (
	"bufio"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

func TestMain(m *testing.M) {
	if os.Getenv(WorkerEnv) != "" {
		switch os.Getenv(fakeWorkerEnv) {
		case "hang": // read the request, never answer
			bufio.NewReader(os.Stdin).ReadString('\n')
			time.Sleep(time.Hour)
		case "crash":
			os.Exit(7)
		}
	}
	MaybeWorker() // the tuner re-executes this test binary as its measurement worker
	os.Exit(m.Run())
}

func needGPU(t *testing.T) {
	t.Helper()
	if _, err := gpu.Probe(); err != nil {
		t.Skipf("skipping: no usable NVIDIA GPU (%v)", err)
	}
	if _, err := gpu.FindNVRTC(); err != nil {
		t.Skipf("skipping: no NVRTC (%v)", err)
	}
}

// plant derives a variant from stock's source by one textual change, made
// at every occurrence (the prelude holds one kernel body per staging form,
// chosen by #if, and the change must reach the one stock compiles), and
// fails the test if the change no longer applies.
func plant(t *testing.T, format, id, old, new string) source {
	t.Helper()
	fam, err := variants.FamilyOf(format)
	if err != nil {
		t.Fatal(err)
	}
	code, err := fam.Source(space.Stock)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(code, old) {
		t.Fatalf("planting %s: %q not in stock's source", id, old)
	}
	return source{ID: id, Params: space.Stock, Code: strings.ReplaceAll(code, old, new)}
}

// TestPlantedVariants runs the whole pipeline on one small job with a
// narrowed space plus four planted variants (plantedQ4_0): one computing the wrong
// function, one writing out of bounds (a fault that poisons the worker's
// context), one identical to stock and one slightly slower. The wrong one
// must be caught by verification, the faulting one marked while the run
// goes on, and neither look-alike may replace stock.
func TestPlantedVariants(t *testing.T) {
	needGPU(t)
	candidateFilter = func(p space.Params) bool {
		return p.F == 0 && p.S == 0 && p.W == 8 && p.L == 1 && p.R <= 2 && p.U <= 2 // raw q4_0 is not searched (layouts.go)
	}
	defer func() { candidateFilter = nil }()
	lockDir = func() string { return t.TempDir() }
	ds, err := run(context.Background(), []Job{{Format: "q4_0", Rows: 4096, Cols: 4096}}, Options{}, plantedQ4_0(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 {
		t.Fatalf("got %d decisions, want 1", len(ds))
	}
	d := ds[0]
	status := map[string]Candidate{}
	for _, c := range d.Candidates {
		status[c.ID] = c
		t.Logf("%-16s %-8s %7.2f µs %7.1f GB/s regs %3d blocks/SM %2d %s", c.ID, c.Status, c.MedianUS, c.GBs, c.Registers, c.BlocksPerSM, c.Reason)
	}
	t.Logf("decision: %s (ceiling %.0f GB/s)", d.Reason, d.CeilingGBs)
	if c := status["planted-wrong"]; c.Status != StatusMismatch {
		t.Errorf("planted-wrong: status %s (%s), want mismatch", c.Status, c.Reason)
	}
	if c := status["planted-fault"]; c.Status != StatusFault {
		t.Errorf("planted-fault: status %s (%s), want fault", c.Status, c.Reason)
	}
	for _, id := range []string{"planted-twin", "planted-slow"} {
		if c := status[id]; c.Status != StatusOK {
			t.Errorf("%s: status %s (%s), want ok (it computes the right function)", id, c.Status, c.Reason)
		}
		if d.Winner.ID == id {
			t.Errorf("%s won (%s): a look-alike must not replace stock", id, d.Reason)
		}
	}
	if !(d.CeilingGBs > 0) || !(d.Stock.MedianUS > 0) || len(d.Stock.Samples) < finalRounds {
		t.Errorf("stock not measured properly: ceiling %.0f GB/s, median %.2f µs, %d samples", d.CeilingGBs, d.Stock.MedianUS, len(d.Stock.Samples))
	}
	// The same-bytes read ran over this job's weights: measured, and no
	// faster than the ceiling allows (a 10 % margin for a smaller read's
	// different cache behaviour).
	t.Logf("same-bytes read: %.2f µs, %.0f GB/s", d.ReadUS, d.ReadGBs)
	if !(d.ReadUS > 0) || !(d.ReadGBs > 0) || d.ReadGBs > 1.1*d.CeilingGBs {
		t.Errorf("same-bytes read: %.2f µs, %.0f GB/s against a ceiling of %.0f GB/s", d.ReadUS, d.ReadGBs, d.CeilingGBs)
	}
}

// TestNoGPUOfArch checks the one-line error for an arch with no local GPU.
func TestNoGPUOfArch(t *testing.T) {
	_, err := Run(context.Background(), []Job{{Format: "q4_0", Rows: 64, Cols: 64}}, Options{Arch: "sm_70"})
	if err == nil {
		t.Fatal("tuning sm_70 here succeeded")
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error is not one line: %q", err)
	}
	if _, perr := gpu.Probe(); perr != nil && !errors.Is(err, gpu.ErrNoDriver) && !errors.Is(err, gpu.ErrNoDevice) {
		t.Errorf("without a GPU, want ErrNoDriver/ErrNoDevice, got %v", err)
	}
	t.Log(err)
}

// plantedQ4_0 is stock q4_0 edited four ways: a wrong result, an
// out-of-bounds store, an identical twin, and a sleep after staging.
func plantedQ4_0(t *testing.T) planted {
	const store = "y[row0 + i] = v;"
	const staged = "gemv_stage_end(x, cols, xpre);"
	return planted{"q4_0": {
		plant(t, "q4_0", "planted-wrong", store, "y[row0 + i] = v * 1.0001f;"),
		plant(t, "q4_0", "planted-fault", store, "y[(size_t)(row0 + i) + (1ull << 40)] = v;"),
		plant(t, "q4_0", "planted-twin", store, store),
		plant(t, "q4_0", "planted-slow", staged, staged+" __nanosleep(300);"),
	}}
}

// TestPlantedSources checks, without a GPU, that the edits of the planted
// variants still find their anchors in stock's source (a kernel change
// that moves them would otherwise only show on the GPU machine).
func TestPlantedSources(t *testing.T) {
	for _, s := range plantedQ4_0(t)["q4_0"] {
		stock, err := variants.FamilyOf("q4_0")
		if err != nil {
			t.Fatal(err)
		}
		code, _ := stock.Source(space.Stock)
		if s.Code == code && s.ID != "planted-twin" {
			t.Errorf("%s: source unchanged", s.ID)
		}
	}
}
