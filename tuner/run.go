package tuner

import (
	"context"
	"errors"
	"fmt"
	"sort"
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

// limitsOf builds space limits from the device's own attributes.
func limitsOf(in gpu.Info) space.Limits {
	lim, err := space.LimitsFor(in.Arch.String())
	if err != nil {
		lim = space.Limits{Arch: in.Arch.String(), MaxRegsPerThread: 255, SmemPerBlockDefault: 48 * space.KiB}
	}
	lim.RegsPerSM = in.RegsPerSM
	lim.MaxThreadsPerSM = in.MaxThreadsPerSM
	lim.MaxThreadsPerBlock = in.MaxThreadsPerBlock
	lim.MaxBlocksPerSM = in.MaxBlocksPerSM
	lim.SmemPerSM = in.SmemPerSM
	lim.SmemPerBlockDefault = in.SmemPerBlock
	lim.SmemPerBlockOptin = in.SmemPerBlockOptin
	return lim
}

// sourcesFor lists every candidate of a family that some arch limits allow
// at all (shape-specific shared memory is checked per job), stock first.
func sourcesFor(fam variants.Family, lim space.Limits, only []string) ([]source, error) {
	ok, _ := space.Enumerate(lim, variants.KnobsOf(fam), nil)
	if len(only) > 0 {
		ok = ok[:0]
		for _, id := range only {
			p, err := space.Parse(id)
			if err != nil {
				return nil, err
			}
			ok = append(ok, p)
		}
	}
	out := make([]source, 0, len(ok)+1)
	stock, err := fam.Source(space.Stock)
	if err != nil {
		return nil, err
	}
	out = append(out, source{ID: space.Stock.ID(), Params: space.Stock, Code: stock})
	for _, p := range ok {
		if p == space.Stock || (candidateFilter != nil && !candidateFilter(p)) {
			continue
		}
		code, err := fam.Source(p)
		if errors.Is(err, variants.ErrShape) && len(only) == 0 {
			continue // not a variant of this family (e.g. a=1 without staging)
		}
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", fam.Format().Name(), p.ID(), err)
		}
		out = append(out, source{ID: p.ID(), Params: p, Code: code})
	}
	return out, nil
}

// candidateFilter, when set (by tests), narrows the candidates compiled.
var candidateFilter func(space.Params) bool

// runArch tunes jobs on the GPUs of one arch, one worker per GPU pulling
// jobs from a shared queue.
func runArch(ctx context.Context, infos []gpu.Info, nv *gpu.NVRTC, nvml *gpu.NVML, jobs []Job, opts Options, extra planted) ([]Decision, error) {
	arch := infos[0].Arch
	lim := limitsOf(infos[0])
	comp := newCompiler(nv, arch)
	start := time.Now()

	ceil, _, err := nv.Compile(ceilingSource, "read_ceiling.cu", arch)
	if err != nil {
		return nil, fmt.Errorf("compiling the read-ceiling kernel: %w", err)
	}

	// Compile every format's candidates once (sources do not depend on the
	// shape), format after format in the background: the GPUs start on the
	// first format's jobs while the next formats compile.
	builds := map[string]*pendingBuild{}
	var formats []string
	for _, j := range jobs {
		if _, ok := builds[j.Format]; !ok {
			formats = append(formats, j.Format)
			builds[j.Format] = &pendingBuild{done: make(chan struct{})}
		}
	}
	var compiling sync.WaitGroup
	compiling.Add(1)
	go func() {
		defer compiling.Done()
		for _, f := range formats {
			pb := builds[f]
			fam, err := variants.FamilyOf(f)
			if err == nil {
				pb.b, err = buildFormat(ctx, comp, fam, lim, opts, extra[f], len(jobs))
			}
			pb.err = err
			close(pb.done)
		}
	}()
	defer compiling.Wait()

	// One session per GPU.
	var sessions []*session
	defer func() {
		for _, s := range sessions {
			s.close()
		}
	}()
	for _, in := range infos {
		lk, err := lockGPU(in.UUID, opts.WaitForLock, func(pid int) {
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

	// A first ETA from the static model, until measured jobs refine it.
	if plan, err := Plan(arch.String(), jobs, opts.Budget); err == nil {
		var eta time.Duration
		for _, e := range plan {
			eta += e.Expected
		}
		report(opts, Progress{Total: len(jobs), Stage: "tuning", ETA: eta / time.Duration(len(sessions))})
	}

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
	)
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range queue {
				if ctx.Err() != nil {
					return
				}
				pb := builds[j.Format]
				select {
				case <-pb.done:
				case <-ctx.Done():
					return
				}
				var d Decision
				err := pb.err
				if err == nil {
					d, err = tuneJob(ctx, s, j, pb.b, nv, opts)
				}
				mu.Lock()
				done++
				if err != nil {
					errs = append(errs, fmt.Errorf("%s %s on GPU %d: %w", j.Format, j.Shape(), s.info.Ordinal, err))
				} else {
					if opts.Record != nil {
						if rerr := opts.Record(d); rerr != nil {
							errs = append(errs, rerr)
						}
					}
					decisions = append(decisions, d)
				}
				el := time.Since(start)
				eta := time.Duration(float64(el) / float64(done) * float64(len(jobs)-done))
				report(opts, Progress{Done: done, Total: len(jobs), Job: j, Stage: "done", GPU: fmt.Sprintf("%d: %s", s.info.Ordinal, s.info.Name), ETA: eta})
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

func report(opts Options, p Progress) {
	if opts.Progress != nil {
		opts.Progress(p)
	}
}

// tuneJob runs one (format, shape) on one GPU: prune, verify, measure,
// select.
func tuneJob(ctx context.Context, s *session, j Job, b build, nv *gpu.NVRTC, opts Options) (Decision, error) {
	comp := b.compiled
	t0 := time.Now()
	fam, err := variants.FamilyOf(j.Format)
	if err != nil {
		return Decision{}, err
	}
	bytes, _ := fam.Format().Bytes(j.Rows, j.Cols)
	lim := limitsOf(s.info)
	d := Decision{Job: j, Arch: s.info.Arch.String(), Bytes: bytes, GPUName: s.info.Name, GPUUUID: s.info.UUID,
		NVRTC: nv.Version.String(), SourceHash: fam.SourceHash(), Time: time.Now().UTC()}
	if v, err := gpu.DriverVersion(); err == nil {
		d.Driver = v.String()
	}
	progress := func(stage string) {
		report(opts, Progress{Total: -1, Job: j, Stage: stage, GPU: fmt.Sprintf("%d: %s", s.info.Ordinal, s.info.Name)})
	}

	// Load this format's modules into the worker (once per format).
	if s.format != j.Format {
		s.mods, s.format = s.mods[:0], j.Format
		for _, c := range comp {
			if c.Err == nil {
				s.mods = append(s.mods, moduleSpec{ID: c.ID, Params: c.Params, Cubin: c.Cubin})
			}
		}
		r, err := s.call(request{Op: opModules, Modules: s.mods}, 5*time.Minute)
		if err != nil {
			return d, err
		}
		if !r.OK {
			return d, fmt.Errorf("loading modules: %s", r.Err)
		}
	}
	progress("verify")
	d.Before = s.clocks()
	shapeReq := request{Op: opShape, Format: j.Format, Rows: j.Rows, Cols: j.Cols, Seed: time.Now().UnixNano()}
	s.shape = &shapeReq
	r, err := s.call(shapeReq, shapeTimeout(&shapeReq))
	if err != nil {
		return d, err
	}
	if !r.OK {
		s.shape = nil
		return d, fmt.Errorf("stock kernel failed its check, nothing can be tuned: %s", r.Err)
	}
	d.CeilingGBs = s.ceiling

	// Static pruning with reasons.
	cands := make([]Candidate, 0, len(comp))
	index := map[string]int{}
	for _, c := range comp {
		cand := Candidate{ID: c.ID, Params: c.Params, Class: string(fam.Class(c.Params)), Status: StatusOK}
		a := r.Attrs[c.ID]
		cand.Registers, cand.LocalBytes, cand.SharedBytes, cand.BlocksPerSM = a.Registers, a.LocalBytes, a.SharedBytes, a.BlocksPerSM
		l := fam.Launch(c.Params, j.Rows, j.Cols)
		switch {
		case fam.Gate(c.Params, j.Rows, j.Cols) != nil:
			cand.Status, cand.Reason = StatusGate, fam.Gate(c.Params, j.Rows, j.Cols).Error()
		case space.Check(c.Params, lim, int(l.SharedBytes)) != nil:
			cand.Status, cand.Reason = StatusPruned, space.Check(c.Params, lim, int(l.SharedBytes)).Error()
		case c.Err != nil:
			cand.Status, cand.Reason = StatusCompile, c.Err.Error()
		case c.Spills > 0:
			cand.Status, cand.Reason = StatusPruned, fmt.Sprintf("spills: ptxas spills %d bytes at %d registers", c.Spills, c.Registers)
		case a.Err != "":
			cand.Status, cand.Reason = StatusCompile, a.Err
		case a.LocalBytes > 0:
			cand.Status, cand.Reason = StatusPruned, fmt.Sprintf("spills: %d bytes of local memory per thread at %d registers", a.LocalBytes, a.Registers)
		case a.BlocksPerSM == 0:
			cand.Status, cand.Reason = StatusPruned, fmt.Sprintf("zero occupancy: no block of %d threads fits an SM at %d registers", l.Block[0], a.Registers)
		}
		index[c.ID] = len(cands)
		cands = append(cands, cand)
	}
	for _, c := range b.skipped {
		index[c.ID] = len(cands)
		cands = append(cands, c)
	}
	pruneUnboundFloors(cands)
	stockID := space.Stock.ID()
	si, ok := index[stockID]
	if !ok || cands[si].Status != StatusOK {
		return d, fmt.Errorf("stock %s is not runnable here", stockID)
	}
	cands[si].RelErr = r.RelErr

	// Verify every survivor before timing it.
	var ids []string
	for i := range cands {
		c := &cands[i]
		if c.Status != StatusOK || c.ID == stockID {
			continue
		}
		if ctx.Err() != nil {
			return d, ctx.Err()
		}
		vr, err := s.call(request{Op: opVerify, ID: c.ID}, 30*time.Second)
		if err != nil {
			return d, err
		}
		c.RelErr, c.MaxAbsDiff = vr.RelErr, vr.MaxAbsDiff
		if !vr.OK {
			c.Status, c.Reason = Status(vr.Status), vr.Err
			if c.Status == "" {
				c.Status = StatusFault
			}
			continue
		}
		ids = append(ids, c.ID)
	}

	// Measure and select, exact and tolerance classes as separate groups.
	groupOf := func(id string) int {
		if cands[index[id]].Class == string(variants.Exact) {
			return 0
		}
		return 1
	}
	progress(fmt.Sprintf("measure %d", len(ids)+1))
	var res stageResult
	for attempt := 0; ; attempt++ {
		if opts.Budget > 0 {
			res, err = halving(s, ids, stockID, opts.Budget, groupOf)
		} else {
			res, err = exhaustive(s, ids, stockID, groupOf)
		}
		if err != nil {
			return d, err
		}
		d.After = s.clocks()
		if !(d.Before.Throttled || d.After.Throttled) || attempt == 1 {
			d.Throttled = d.Before.Throttled || d.After.Throttled
			break
		}
		d.Before = s.clocks() // throttled: measure once more
	}
	for id, v := range res.screen {
		c := &cands[index[id]]
		c.Samples = v
		if k, dropped := res.droppedAt[id]; dropped {
			c.Status, c.Reason = StatusDropped, fmt.Sprintf("dropped by successive halving at stage %d", k+1)
		}
	}
	for id, v := range res.final {
		cands[index[id]].Samples = v
	}
	for i := range cands {
		c := &cands[i]
		if len(c.Samples) > 0 {
			c.MedianUS, c.LoUS, c.HiUS = summarize(c.Samples)
			c.GBs = float64(bytes) / (c.MedianUS * 1e-6) / 1e9
			if s.ceiling > 0 {
				c.PctCeiling = 100 * c.GBs / s.ceiling
			}
		}
	}
	var finalists []Candidate
	for id := range res.final {
		if id != stockID {
			finalists = append(finalists, cands[index[id]])
		}
	}
	sort.Slice(finalists, func(a, b int) bool { return finalists[a].ID < finalists[b].ID })
	rule := Rule{MinGain: opts.MinGain, Alpha: opts.Alpha}
	dec := decide(cands[si], finalists, rule)
	d.Stock, d.Winner, d.Kept, d.P, d.Speedup, d.Reason = cands[si], dec.winner, dec.kept, dec.p, dec.speedup, dec.reason
	if d.Winner.Class != string(variants.Exact) {
		// The engines that require exact output get the best exact variant.
		var exact []Candidate
		for _, c := range finalists {
			if c.Class == string(variants.Exact) {
				exact = append(exact, c)
			}
		}
		ex := decide(cands[si], exact, rule)
		d.Exact = &Alternative{Winner: ex.winner, Kept: ex.kept, P: ex.p, Speedup: ex.speedup, Reason: ex.reason}
	}
	if d.Throttled {
		d.Reason += " (measured while throttled: " + strings.Join(append(d.Before.Reasons, d.After.Reasons...), ",") + ")"
	}
	for _, c := range comp {
		if c.ID == d.Winner.ID {
			d.Cubin = c.Cubin
		}
		if d.Exact != nil && c.ID == d.Exact.Winner.ID {
			d.Exact.Cubin = c.Cubin
		}
	}
	d.Candidates = cands
	d.Wall = time.Since(t0).Seconds()
	s.shape = nil
	return d, nil
}

// pruneUnboundFloors drops variants whose launch-bounds floor did not bind:
// same knobs but f, same register count as a variant with a lower floor,
// hence the same occupancy and, in practice, the same code. The floor
// matters only through the registers it forces (design.md §2: the V100
// curve tracks resident blocks), so measuring both would spend time on
// noise. Stock (f=0) is never dropped.
func pruneUnboundFloors(cands []Candidate) {
	type key struct{ r, u, s, w, l, regs int }
	first := map[key]string{}
	order := make([]int, 0, len(cands))
	for i := range cands {
		order = append(order, i)
	}
	sort.SliceStable(order, func(a, b int) bool { return cands[order[a]].Params.F < cands[order[b]].Params.F })
	for _, i := range order {
		c := &cands[i]
		if c.Status != StatusOK || c.ID != c.Params.ID() {
			continue // planted variants keep their own identity
		}
		k := key{c.Params.R, c.Params.U, c.Params.S, c.Params.W, c.Params.L, c.Registers}
		if id, dup := first[k]; dup {
			c.Status, c.Reason = StatusPruned, fmt.Sprintf("same code as %s: f=%d does not bind (%d registers either way)", id, c.Params.F, c.Registers)
			continue
		}
		first[k] = c.ID
	}
}

// pendingBuild is a format's build that may still be compiling; done is
// closed when b and err are set.
type pendingBuild struct {
	done chan struct{}
	b    build
	err  error
}

// build is what compiling one format produced: the compiled candidates and
// those skipped at compile time with a reason.
type build struct {
	compiled []compiled
	skipped  []Candidate
}

// buildFormat compiles a family's candidates in two phases. Phase one
// builds every variant without a launch-bounds floor (f=0); ptxas reports
// its registers. A floor f only changes code by capping registers at
// RegsPerSM/(f·threads), so phase two builds f>0 only where that cap is
// below the f=0 count, once per distinct cap. Every variant skipped is
// listed with the reason.
func buildFormat(ctx context.Context, comp *compiler, fam variants.Family, lim space.Limits, opts Options, extra []source, total int) (build, error) {
	srcs, err := sourcesFor(fam, lim, opts.Only)
	if err != nil {
		return build{}, err
	}
	name := fam.Format().Name()
	var phase1 []source
	for _, s := range srcs {
		if s.Params.F == 0 || len(opts.Only) > 0 {
			phase1 = append(phase1, s)
		}
	}
	phase1 = append(phase1, extra...)
	report(opts, Progress{Total: total, Stage: fmt.Sprintf("compile %d %s variants", len(phase1), name)})
	b := build{compiled: comp.compileAll(ctx, phase1, nil)}
	if ctx.Err() != nil {
		return b, ctx.Err()
	}
	if len(opts.Only) > 0 {
		return b, nil
	}
	var phase2 []source
	for _, c := range b.compiled {
		if c.Err != nil || c.Registers == 0 || c.ID != c.Params.ID() {
			continue
		}
		capOf := map[int]int{} // register cap → the floor that first gives it
		for _, f := range space.Knobs[1].Values {
			if f == 0 {
				continue
			}
			p := c.Params
			p.F = f
			if space.Check(p, lim, 0) != nil {
				continue // excluded whatever the shape; Plan reports these
			}
			limit := regCap(lim, 32*p.W, f)
			skip := func(reason string) {
				b.skipped = append(b.skipped, Candidate{ID: p.ID(), Params: p, Class: string(fam.Class(p)), Status: StatusPruned, Reason: reason})
			}
			if limit >= c.Registers {
				skip(fmt.Sprintf("f=%d does not bind: its cap of %d registers ≥ the %d %s uses", f, limit, c.Registers, c.ID))
				continue
			}
			if f0, dup := capOf[limit]; dup {
				skip(fmt.Sprintf("f=%d gives the same %d-register cap as f=%d", f, limit, f0))
				continue
			}
			capOf[limit] = f
			code, err := fam.Source(p)
			if err != nil {
				return b, err
			}
			phase2 = append(phase2, source{ID: p.ID(), Params: p, Code: code})
		}
	}
	report(opts, Progress{Total: total, Stage: fmt.Sprintf("compile %d %s launch-bounds variants", len(phase2), name)})
	b.compiled = append(b.compiled, comp.compileAll(ctx, phase2, nil)...)
	return b, ctx.Err()
}

// regCap is the register budget per thread that __launch_bounds__(threads, f)
// leaves: the register file shared by f resident blocks, in the allocation
// unit of 8 registers per thread, at most MaxRegsPerThread.
func regCap(lim space.Limits, threads, f int) int {
	c := lim.RegsPerSM / (f * threads) &^ 7
	return min(c, lim.MaxRegsPerThread)
}
