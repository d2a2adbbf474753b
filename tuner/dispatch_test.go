package tuner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/space"
)

// fakeGPU is a worker that "tunes" by returning a decision measured on it
// after a delay (the second GPU slower), holding its GPU lock as a real
// session does, and counting what it ran.
type fakeGPU struct {
	ordinal int
	uuid    string
	delay   time.Duration
	ran     atomic.Int32
	priors  sync.Map // job → whether it came with a prior
}

func (g *fakeGPU) worker() gpuWorker {
	return gpuWorker{ordinal: g.ordinal, name: "NVIDIA H200", tune: func(ctx context.Context, j Job, jp jobPlan) (Decision, error) {
		select {
		case <-time.After(g.delay):
		case <-ctx.Done():
			return Decision{}, ctx.Err()
		}
		g.ran.Add(1)
		g.priors.Store(j, jp.prior != nil)
		id := "r1f0u2s2w8"
		p, _ := space.Parse(id)
		w := Candidate{ID: id, Params: p, Class: "exact", Status: StatusOK, MedianUS: 10, Samples: []float64{10, 10.1, 9.9}}
		st := Candidate{ID: "v1", Params: space.Stock, Class: "exact", Status: StatusOK, MedianUS: 12, Samples: []float64{12, 12.1, 11.9}}
		return Decision{Job: j, Arch: "sm_90", Winner: w, Stock: st, Speedup: 1.2, P: 0.001, Reason: id + ": +20 %",
			Candidates: []Candidate{st, w}, GPUName: "NVIDIA H200", GPUUUID: g.uuid, Time: time.Now().UTC()}, nil
	}}
}

func twoFakeGPUs(t *testing.T) []*fakeGPU {
	t.Helper()
	dir := t.TempDir()
	lockDir = func() string { return dir }
	gpus := []*fakeGPU{{ordinal: 0, uuid: "GPU-aaaa", delay: time.Millisecond}, {ordinal: 1, uuid: "GPU-bbbb", delay: 3 * time.Millisecond}}
	for _, g := range gpus {
		l, err := lockGPU(context.Background(), g.uuid, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.unlock)
		// Each GPU's lock is its own worker's: another tuner of that GPU
		// is refused while this run holds it.
		if _, err := lockGPU(context.Background(), g.uuid, false, nil); !errors.Is(err, ErrGPUBusy) {
			t.Fatalf("a second tuner of %s: %v, want ErrGPUBusy", g.uuid, err)
		}
	}
	return gpus
}

// TestDispatchTwoGPUs is the split of a run over two GPUs of one host
// without GPUs: every job runs once, on one GPU, both GPUs work, each
// decision names the GPU it was measured on, the decisions merge into one
// cache, and jobs after the first of their format come with a prior.
func TestDispatchTwoGPUs(t *testing.T) {
	gpus := twoFakeGPUs(t)
	jobs := fakeJobs()
	db, err := cache.Open(filepath.Join(t.TempDir(), "tune.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var recorded []Decision
	opts := Options{Record: func(d Decision) error { recorded = append(recorded, d); return Store(db, d) }}
	ds, err := dispatch(context.Background(), jobs, []gpuWorker{gpus[0].worker(), gpus[1].worker()}, opts, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != len(jobs) || len(recorded) != len(jobs) {
		t.Fatalf("%d decisions, %d recorded, for %d jobs", len(ds), len(recorded), len(jobs))
	}
	seen := map[Job]string{}
	for _, d := range ds {
		if prev, ok := seen[d.Job]; ok {
			t.Errorf("%s %s tuned twice (%s, %s)", d.Format, d.Shape(), prev, d.GPUUUID)
		}
		seen[d.Job] = d.GPUUUID
	}
	if a, b := gpus[0].ran.Load(), gpus[1].ran.Load(); a == 0 || b == 0 || int(a+b) != len(jobs) || a <= b {
		t.Errorf("jobs per GPU: %d on the fast one, %d on the slow one, want both busy, the fast one more, %d in all", a, b, len(jobs))
	}
	all, err := db.All("sm_90")
	if err != nil || len(all) != len(jobs) {
		t.Fatalf("the cache holds %d records (%v), want %d", len(all), err, len(jobs))
	}
	for _, r := range all {
		j := Job{Format: r.Format, Rows: r.Rows, Cols: r.Cols}
		if r.GPUUUID != seen[j] {
			t.Errorf("%s: recorded on %s, measured on %s", r.Key, r.GPUUUID, seen[j])
		}
	}
	// Two GPUs have at most two jobs in flight: from the third job of a
	// format on, one of its jobs has finished.
	nth := map[string]int{}
	for _, j := range jobs {
		nth[j.Format]++
		if nth[j.Format] < 3 {
			continue
		}
		hadPrior := false
		for _, g := range gpus {
			if v, ok := g.priors.Load(j); ok {
				hadPrior = v.(bool)
			}
		}
		if !hadPrior {
			t.Errorf("%s %s (job %d of its format) came without a prior", j.Format, j.Shape(), nth[j.Format])
		}
	}
}

// An interrupted two-GPU run keeps every finished decision, starts nothing
// after the interrupt, and says how far it came.
func TestDispatchInterrupted(t *testing.T) {
	gpus := twoFakeGPUs(t)
	jobs := fakeJobs()
	ctx, cancel := context.WithCancel(context.Background())
	var recorded atomic.Int32
	opts := Options{Record: func(d Decision) error {
		if recorded.Add(1) == 10 {
			cancel()
		}
		return nil
	}}
	ds, err := dispatch(ctx, jobs, []gpuWorker{gpus[0].worker(), gpus[1].worker()}, opts, nil, time.Now())
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	if n := int(recorded.Load()); len(ds) != n || n < 10 || n >= len(jobs) {
		t.Fatalf("%d decisions returned, %d recorded, of %d jobs", len(ds), n, len(jobs))
	}
	if want := fmt.Sprintf("interrupted after %d of %d jobs", len(ds), len(jobs)); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q lacks %q", err, want)
	}
}
