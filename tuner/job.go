package tuner

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

// tuneJob runs one (format, shape) on one GPU: prune, verify, measure,
// select.
func tuneJob(ctx context.Context, s *session, j Job, b build, nv *gpu.NVRTC, opts Options, jp jobPlan) (Decision, error) {
	comp := b.compiled
	t0 := time.Now()
	fam, err := variants.FamilyOf(j.Format)
	if err != nil {
		return Decision{}, err
	}
	bytes, _ := fam.Format().Bytes(j.Rows, j.Cols)
	lim := s.info.Limits()
	d := Decision{Job: j, Arch: s.info.Arch.String(), Bytes: bytes, GPUName: s.info.Name, GPUUUID: s.info.UUID,
		NVRTC: nv.Version.String(), SourceHash: fam.SourceHash(), Time: time.Now().UTC(), WarmL2: opts.WarmL2}
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
	shapeReq := request{Op: opShape, Format: j.Format, Rows: j.Rows, Cols: j.Cols, Seed: time.Now().UnixNano(),
		RowGroups: len(opts.Only) == 0, WarmL2: opts.WarmL2}
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

	// Static pruning with reasons. The worker added, for staged variants,
	// their one-wave twins (knob g, rowGroupsFor): same cubin, own grid.
	comp = withTwins(comp, r.Attrs)
	cands := make([]Candidate, 0, len(comp))
	index := map[string]int{}
	for _, c := range comp {
		cand := Candidate{ID: c.ID, Params: c.Params, Class: string(fam.Class(c.Params)), Status: StatusOK}
		a := r.Attrs[c.ID]
		cand.Registers, cand.LocalBytes, cand.SharedBytes, cand.BlocksPerSM = a.Registers, a.LocalBytes, a.SharedBytes, a.BlocksPerSM
		cand.PDLShared = a.PDLShared
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
	groups := map[int]bool{}
	for _, id := range ids {
		groups[groupOf(id)] = true
	}
	cost := exhaustiveCost(len(ids), len(groups))
	budget := jp.budget
	if jp.searchShare > 0 {
		budget = cost.budget(jp.searchShare)
	}
	d.ExhaustiveBatches = cost.exhaustive
	progress(fmt.Sprintf("measure %d", len(ids)+1))
	var res stageResult
	for attempt := 0; ; attempt++ {
		res, err = jp.search(s, searchInput{ids: ids, stock: stockID, budget: budget, groupOf: groupOf, prior: jp.prior})
		if err != nil {
			return d, err
		}
		d.Batches += res.batches
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
			c.Status, c.Reason = StatusDropped, fmt.Sprintf("dropped by the %s search at step %d", jp.name, k+1)
		}
	}
	for id, v := range res.final {
		cands[index[id]].Samples = v
	}
	for _, id := range ids {
		if c := &cands[index[id]]; c.Status == StatusOK && len(c.Samples) == 0 {
			c.Status, c.Reason = StatusDropped, fmt.Sprintf("not measured: the %s search spent its budget on candidates the prior and their neighbours ranked higher", jp.name)
		}
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
	dec, alt := decideClasses(cands[si], finalists, Rule{MinGain: opts.MinGain, Alpha: opts.Alpha})
	d.Stock, d.Winner, d.Kept, d.P, d.Speedup, d.Reason = cands[si], dec.winner, dec.kept, dec.p, dec.speedup, dec.reason
	if alt != nil {
		// The engines that require exact output get the best exact variant.
		d.Exact = &Alternative{Winner: alt.winner, Kept: alt.kept, P: alt.p, Speedup: alt.speedup, Reason: alt.reason}
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
	measurePDL(s, &d, len(opts.Only) > 0)
	// The same-bytes read: a yardstick, so a failure leaves it out (0)
	// rather than failing the job.
	if us := fastestRead(s); us > 0 {
		d.ReadUS = us
		d.ReadGBs = float64(bytes/16*16) / (us * 1e-6) / 1e9
	}
	d.Wall = time.Since(t0).Seconds()
	s.shape = nil
	return d, nil
}

// readRounds is how many rounds time the same-bytes read (Decision.ReadUS)
// and the PDL chains (Candidate.PDLUS).
const readRounds = 15

// fastestRead times the same-bytes read with every launch of
// readLaunchConfigs, interleaved in the same rounds, and returns the
// smallest median µs; 0 when it could not be measured.
func fastestRead(s *session) float64 {
	ids := make([]string, len(readLaunchConfigs))
	for k := range ids {
		ids[k] = readLaunchID(k)
	}
	v, err := s.measure(ids, readRounds)
	if err != nil {
		return 0
	}
	best := 0.0
	for _, id := range ids {
		if len(v[id]) == 0 {
			continue
		}
		if m, _, _ := summarize(v[id]); m > 0 && (best == 0 || m < best) {
			best = m
		}
	}
	return best
}

// pdlPrefix, before a variant ID among a job's measurements, launches it
// with programmatic dependent launch (Candidate.PDLUS): not a variant ID.
const pdlPrefix = "pdl:"

// measurePDL times stock, the winners and the fastest candidate (all
// verified candidates when every is set) of d.Candidates in chains of their
// own PDL launches, on sm_90 and newer (PDLUS); the winners (every
// candidate when every is set), whose launch mode a record keeps, also in
// a chain of their plain launches in the same rounds: LaunchPDL unless the
// plain chain is the faster beyond both intervals. A yardstick like the
// same-bytes read: a failure (a driver without cuLaunchKernelEx) leaves it
// out rather than failing the job.
func measurePDL(s *session, d *Decision, every bool) {
	if s.info.Arch.Major < 9 {
		return
	}
	mode := map[string]bool{d.Winner.ID: true} // timed plainly too
	if d.Exact != nil {
		mode[d.Exact.Winner.ID] = true
	}
	want := map[string]bool{d.Stock.ID: true, d.Fastest().ID: true} // what autotune bench reports
	cands := d.Candidates
	var ids []string
	for _, c := range cands {
		switch {
		case c.Status != StatusOK:
		case every || mode[c.ID]:
			ids = append(ids, c.ID, pdlPrefix+c.ID)
		case want[c.ID]:
			ids = append(ids, pdlPrefix+c.ID)
		}
	}
	v, err := s.measure(ids, readRounds)
	if err != nil {
		return
	}
	pdlFigures(cands, v)
	for _, c := range cands {
		for _, w := range []*Candidate{&d.Stock, &d.Winner, exactWinner(d)} {
			if w != nil && w.ID == c.ID {
				w.PDLUS, w.PDLShared, w.LaunchPDL = c.PDLUS, c.PDLShared, c.LaunchPDL
			}
		}
	}
}

// pdlFigures sets each candidate's PDLUS from its PDL chain's samples in v
// (under pdlPrefix+ID) and LaunchPDL where v also holds its plain chain's
// and that one is not the faster (plainFaster). A tie goes to PDL: a
// chain of one kernel's own launches cannot resolve the 0.1-0.3 µs a PDL
// edge saves a long kernel, and in a decode token the edges save 0.6-4 %
// for every format (docs/results.md); the mode a self-chain shows to cost
// (early-launched blocks holding the SM) it still catches.
func pdlFigures(cands []Candidate, v map[string][]float64) {
	for i := range cands {
		c := &cands[i]
		x := v[pdlPrefix+c.ID]
		if len(x) == 0 {
			continue
		}
		c.PDLUS, _, _ = summarize(x)
		c.LaunchPDL = len(v[c.ID]) > 0 && !plainFaster(v[c.ID], x)
	}
}

// plainFaster reports whether the plain chain's samples are faster than
// the PDL chain's beyond both confidence intervals of the median.
func plainFaster(plain, pdl []float64) bool {
	_, _, plainHi := summarize(plain)
	_, pdlLo, _ := summarize(pdl)
	return plainHi < pdlLo
}

// exactWinner is d's exact alternative's winner, nil without one.
func exactWinner(d *Decision) *Candidate {
	if d.Exact == nil {
		return nil
	}
	return &d.Exact.Winner
}

// pruneUnboundFloors drops variants whose launch-bounds floor did not bind:
// same knobs but f, same register count as a variant with a lower floor,
// hence the same occupancy and, in practice, the same code. The floor
// matters only through the registers it forces (docs/design.md §2: the V100
// curve tracks resident blocks), so measuring both would spend time on
// noise. Stock (f=0) is never dropped.
func pruneUnboundFloors(cands []Candidate) {
	// Every knob but f, whatever knobs there are, and the registers.
	type key struct {
		p    space.Params
		regs int
	}
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
		k := key{c.Params, c.Registers}
		k.p.F = 0
		if id, dup := first[k]; dup {
			c.Status, c.Reason = StatusPruned, fmt.Sprintf("same code as %s: f=%d does not bind (%d registers either way)", id, c.Params.F, c.Registers)
			continue
		}
		first[k] = c.ID
	}
}

// withTwins returns comp followed by the g twins the worker reported in
// attrs (IDs that are not compiled themselves), each sharing its g=0
// variant's cubin and compile result, in ID order.
func withTwins(comp []compiled, attrs map[string]moduleAttrs) []compiled {
	byID := make(map[string]int, len(comp))
	for i, c := range comp {
		byID[c.ID] = i
	}
	var twins []compiled
	for id := range attrs {
		if _, ok := byID[id]; ok {
			continue
		}
		p, err := space.Parse(id)
		if err != nil || p.G == 0 {
			continue
		}
		base := p
		base.G = 0
		i, ok := byID[base.ID()]
		if !ok {
			continue
		}
		t := comp[i]
		t.ID, t.Params = id, p
		twins = append(twins, t)
	}
	sort.Slice(twins, func(a, b int) bool { return twins[a].ID < twins[b].ID })
	return append(comp[:len(comp):len(comp)], twins...)
}
