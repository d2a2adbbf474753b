package tuner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

// Run tunes every job on the local GPUs that opts.Arch selects. Jobs are
// shared among the GPUs of one arch; each finished job goes to
// opts.Record at once, so an interrupted run keeps what it finished. A job
// that fails (stock itself failing verification, say) is reported in the
// returned error after the others have run.
func Run(ctx context.Context, jobs []Job, opts Options) ([]Decision, error) {
	return run(ctx, jobs, opts, nil)
}

// planted adds extra sources per format (tests plant wrong, faulting and
// look-alike variants this way).
type planted map[string][]source

func run(ctx context.Context, jobs []Job, opts Options, extra planted) ([]Decision, error) {
	if err := validateJobs(jobs); err != nil {
		return nil, err
	}
	if opts.WarmL2 && opts.Record != nil {
		return nil, errors.New("L2-warm timings are for comparisons and are never recorded")
	}
	if _, ok := strategies[opts.Search]; opts.Search != "" && !ok {
		return nil, fmt.Errorf("search %q: accepted %s", opts.Search, strings.Join(SearchNames(), ", "))
	}
	infos, err := selectGPUs(opts.Arch)
	if err != nil {
		return nil, err
	}
	libs, err := gpu.FindNVRTC()
	if err != nil {
		return nil, err
	}
	nvml, _ := gpu.OpenNVML() // optional: clocks and throttle reasons
	if nvml != nil {
		defer nvml.Close()
	}
	byArch := map[gpu.Arch][]gpu.Info{}
	var arches []gpu.Arch
	for _, in := range infos {
		if _, ok := byArch[in.Arch]; !ok {
			arches = append(arches, in.Arch)
		}
		byArch[in.Arch] = append(byArch[in.Arch], in)
	}
	var all []Decision
	var errs []error
	for _, a := range arches {
		nv, err := gpu.ChooseNVRTC(libs, a)
		if err != nil {
			return all, err
		}
		ds, err := runArch(ctx, byArch[a], nv, nvml, jobs, opts, extra)
		all = append(all, ds...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return all, errors.Join(errs...)
}

func validateJobs(jobs []Job) error {
	if len(jobs) == 0 {
		return errors.New("nothing to tune: no (format, shape) jobs")
	}
	for _, j := range jobs {
		f, err := variants.FormatOf(j.Format)
		if err != nil {
			return err
		}
		if _, err := f.Bytes(j.Rows, j.Cols); err != nil {
			return fmt.Errorf("%s %s: %w", j.Format, j.Shape(), err)
		}
	}
	return nil
}

// selectGPUs returns the local GPUs of arch ("sm_XY"), or all for "auto".
func selectGPUs(arch string) ([]gpu.Info, error) {
	var want *gpu.Arch
	if arch != "" && arch != "auto" {
		a, err := space.ParseArch(arch)
		if err != nil {
			return nil, err
		}
		g := gpu.Arch{Major: a.Major, Minor: a.Minor}
		want = &g
	}
	infos, err := gpu.Probe()
	if err != nil {
		if want != nil {
			return nil, fmt.Errorf("cannot tune %s here: %w", *want, err)
		}
		return nil, err
	}
	if want == nil {
		return infos, nil
	}
	var out []gpu.Info
	var found []string
	for _, in := range infos {
		found = append(found, fmt.Sprintf("%d: %s (%s)", in.Ordinal, in.Name, in.Arch))
		if in.Arch == *want {
			out = append(out, in)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no local GPU is %s; found: %s", *want, strings.Join(found, ", "))
	}
	return out, nil
}

// runArch tunes jobs on the GPUs of one arch, one worker per GPU pulling
// jobs from a shared queue.
func runArch(ctx context.Context, infos []gpu.Info, nv *gpu.NVRTC, nvml *gpu.NVML, jobs []Job, opts Options, extra planted) ([]Decision, error) {
	arch := infos[0].Arch
	lim := infos[0].Limits()
	comp := newCompiler(nv, arch)
	start := time.Now()

	ceil, _, err := nv.Compile(ceilingSource, "read_ceiling.cu", arch)
	if err != nil {
		return nil, fmt.Errorf("compiling the read-ceiling kernel: %w", err)
	}

	// Compile every format's candidates once (sources do not depend on the
	// shape), every format at once in the background, an earlier format's
	// programs first (compiler slots by priority): the GPUs start on the
	// first format's jobs while the next formats compile, and the cores a
	// build leaves idle at its phases' ends compile the next format.
	builds := map[string]*pendingBuild{}
	var formats []string
	for _, j := range jobs {
		if _, ok := builds[j.Format]; !ok {
			formats = append(formats, j.Format)
			builds[j.Format] = &pendingBuild{done: make(chan struct{})}
		}
	}
	var compiling sync.WaitGroup
	for prio, f := range formats {
		compiling.Add(1)
		go func() {
			defer compiling.Done()
			pb := builds[f]
			fam, err := variants.FamilyOf(f)
			if err == nil {
				pb.b, err = buildFormat(ctx, comp, prio, fam, lim, opts, extra[f], len(jobs))
			}
			pb.err = err
			close(pb.done)
		}()
	}
	defer compiling.Wait()

	// One session per GPU.
	var sessions []*session
	defer func() {
		for _, s := range sessions {
			s.close()
		}
	}()
	for _, in := range infos {
		lk, err := lockGPU(ctx, in.UUID, opts.WaitForLock, func(pid int) {
			report(opts, Progress{Total: len(jobs), Stage: fmt.Sprintf("waiting for pid %d, which is tuning GPU %d", pid, in.Ordinal)})
		})
		if err != nil {
			return nil, err
		}
		s := &session{info: in, lock: lk, ceilCode: ceil}
		sessions = append(sessions, s)
		if nvml != nil {
			s.nvml, _ = nvml.Device(in.UUID)
		}
		if err := s.open(); err != nil {
			return nil, err
		}
	}

	// Each job's budget from the static plan, which also gives a first
	// ETA until measured jobs refine it. Without a plan (an arch the limits
	// table lacks) every job gets Options.Budget.
	budgets := map[Job]jobBudget{}
	if plan, err := planFor(arch.String(), jobs, opts); err == nil {
		var eta time.Duration
		for _, e := range plan {
			eta += e.Expected
			budgets[e.Job] = jobBudget{batches: e.Budget, searchShare: e.SearchShare}
		}
		report(opts, Progress{Total: len(jobs), Stage: "tuning", ETA: eta / time.Duration(len(sessions))})
	} else {
		for _, j := range jobs {
			budgets[j] = jobBudget{batches: opts.Budget}
		}
	}

	var workers []gpuWorker
	for _, s := range sessions {
		workers = append(workers, gpuWorker{ordinal: s.info.Ordinal, name: s.info.Name,
			tune: func(ctx context.Context, j Job, jp jobPlan) (Decision, error) {
				pb := builds[j.Format]
				select {
				case <-pb.done:
				case <-ctx.Done():
					return Decision{}, ctx.Err()
				}
				if pb.err != nil {
					return Decision{}, pb.err
				}
				return tuneJob(ctx, s, j, pb.b, nv, opts, jp)
			}})
	}
	return dispatch(ctx, jobs, workers, opts, budgets, start)
}

// gpuWorker is one GPU's part of a run: its ordinal and name, for progress
// and errors, and how it tunes one job there.
type gpuWorker struct {
	ordinal int
	name    string
	tune    func(ctx context.Context, j Job, jp jobPlan) (Decision, error)
}

// dispatch runs jobs on the workers, one GPU each: a worker takes the next
// job from one queue when it finishes the last, so a faster GPU takes more,
// and every job is tuned once, on one GPU. Each job gets its budget and a
// prior from the jobs of its format finished before it, on any GPU.
// Finished decisions go to Options.Record as they finish, so an interrupted
// run keeps them; the error names each job that failed and, after a
// cancel, how many were done.
func dispatch(ctx context.Context, jobs []Job, workers []gpuWorker, opts Options, budgets map[Job]jobBudget, start time.Time) ([]Decision, error) {
	queue := make(chan Job, len(jobs))
	for _, j := range jobs {
		queue <- j
	}
	close(queue)
	var (
		mu        sync.Mutex
		decisions []Decision
		errs      []error
		done      int
		priors    = map[string][]PriorShape{}
	)
	for f, ps := range opts.Priors {
		priors[f] = append([]PriorShape(nil), ps...)
	}
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range queue {
				if ctx.Err() != nil {
					return
				}
				mu.Lock()
				jp := planJob(opts, budgets[j], formatPrior(priors, j.Format, j.Rows, j.Cols))
				mu.Unlock()
				d, err := w.tune(ctx, j, jp)
				if err != nil && ctx.Err() != nil {
					return // interrupted: not a failure of the job
				}
				mu.Lock()
				done++
				if err != nil {
					errs = append(errs, fmt.Errorf("%s %s on GPU %d: %w", j.Format, j.Shape(), w.ordinal, err))
				} else {
					priors[j.Format] = append(priors[j.Format], priorOf(d))
					if opts.Record != nil {
						if rerr := opts.Record(d); rerr != nil {
							errs = append(errs, rerr)
						}
					}
					decisions = append(decisions, d)
				}
				el := time.Since(start)
				eta := time.Duration(float64(el) / float64(done) * float64(len(jobs)-done))
				report(opts, Progress{Done: done, Total: len(jobs), Job: j, Stage: "done", GPU: fmt.Sprintf("%d: %s", w.ordinal, w.name), ETA: eta})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		errs = append(errs, fmt.Errorf("interrupted after %d of %d jobs (finished ones are recorded): %w", len(decisions), len(jobs), ctx.Err()))
	}
	return decisions, errors.Join(errs...)
}

// planFor is Plan or PlanShare, as opts asks.
func planFor(arch string, jobs []Job, opts Options) ([]PlanEntry, error) {
	if opts.BudgetShare > 0 {
		return PlanShare(arch, jobs, opts.BudgetShare)
	}
	return Plan(arch, jobs, opts.Budget)
}

// jobBudget is a job's budget from the plan: timed batches, or under
// Options.BudgetShare the run's search share, which the job applies to the
// candidates it measures (batches is then the plan's estimate of that).
type jobBudget struct {
	batches     int
	searchShare float64
}

// planJob picks a job's strategy: Options.Search, else race under a
// budget and exhaustive without one.
func planJob(opts Options, b jobBudget, prior map[string]float64) jobPlan {
	name := opts.Search
	if name == "" {
		name = "exhaustive"
		if b.batches > 0 || b.searchShare > 0 {
			name = "race"
		}
	}
	return jobPlan{name: name, search: strategies[name], budget: b.batches, searchShare: b.searchShare, prior: prior}
}

func report(opts Options, p Progress) {
	if opts.Progress != nil {
		opts.Progress(p)
	}
}
