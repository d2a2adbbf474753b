package tuner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

// chainRun is Chain, behind a variable so tests of RefineChain can use a
// fake.
var chainRun = Chain

// RefineOptions are how RefineChain times the token.
type RefineOptions struct {
	// PDL times every token with PDL edges before every stage but the
	// first (sm_90+), the way a tuned token runs; else plainly.
	PDL bool
	// Samples is how many timed batches give each median; 0 is 21.
	Samples int
	// WaitForLock (RefineRecords) waits for the GPU's lock when another
	// tuner holds it, instead of failing with ErrGPUBusy.
	WaitForLock bool
}

// RefineTrial is one alternative's token in RefineChain's first run.
type RefineTrial struct {
	Variant ChainVariant
	ChainTiming
	// Faster says the token with it ran faster than the token as given,
	// beyond both intervals.
	Faster bool
}

// Refinement is what RefineChain measured.
type Refinement struct {
	// Base is the token as given in the first run, in the trials' mode.
	Base ChainTiming
	// Trials are the alternatives, each alone in the token, in the order
	// given.
	Trials []RefineTrial
	// Chosen are the alternatives the refined token runs, at most one per
	// (format, shape): of those faster alone, the fastest per shape. Nil
	// when none was faster, or when together they were not. Each carries
	// the cubin it ran and its PDL shared memory.
	Chosen []ChainVariant
	// Tried are the alternatives the second run put together, and
	// Together and BaseAgain the token with them and as given in that
	// run; nil without a second run.
	Tried               []ChainVariant
	Together, BaseAgain *ChainTiming
	// First is the first run's result (its ceilings, the bytes).
	First ChainResult
}

// RefineChain chooses among the alternatives for the token's stages by
// running them where an engine runs them: in the token, after the
// kernels before them, with PDL edges where asked. A first run times the
// token as given beside the token with each alternative alone (every
// stage of that format and shape runs it), interleaved; per (format,
// shape) the fastest alternative that beat the token as given beyond both
// intervals is a candidate. A second run times the candidates together
// against the token as given: they are chosen if that is faster beyond
// both intervals; else the single one that gained most alone is tried the
// same way. Every token the runs time is checked against the float64
// reference (Chain).
func RefineChain(ctx context.Context, ordinal int, stages []ChainStage, alternatives []ChainVariant, opts RefineOptions) (Refinement, error) {
	var ref Refinement
	trials := make([]ChainTrial, len(alternatives))
	for i, v := range alternatives {
		trials[i] = ChainTrial{Variants: []ChainVariant{v}}
	}
	first, err := chainRun(ctx, ordinal, stages, ChainOptions{PDL: opts.PDL, Trials: trials, Samples: opts.Samples})
	if err != nil {
		return ref, err
	}
	ref.First = first
	ref.Base = modeTiming(first, opts.PDL)
	best := map[Job]int{} // (format, shape) → index of its fastest faster trial
	var order []Job
	for i, v := range alternatives {
		t := RefineTrial{Variant: v, ChainTiming: first.Trials[i], Faster: first.Trials[i].HiUS < ref.Base.LoUS}
		ref.Trials = append(ref.Trials, t)
		if !t.Faster {
			continue
		}
		k := v.Job()
		j, seen := best[k]
		if !seen {
			order = append(order, k)
		}
		if !seen || t.MedianUS < ref.Trials[j].MedianUS {
			best[k] = i
		}
	}
	if len(order) == 0 {
		return ref, nil
	}
	together := make([]ChainVariant, len(order))
	for i, k := range order {
		together[i] = alternatives[best[k]]
	}
	tries := [][]ChainVariant{together}
	if len(together) > 1 {
		top := slices.MinFunc(order, func(a, b Job) int {
			return cmp.Compare(ref.Trials[best[a]].MedianUS, ref.Trials[best[b]].MedianUS)
		})
		tries = append(tries, []ChainVariant{alternatives[best[top]]})
	}
	for _, try := range tries {
		second, err := chainRun(ctx, ordinal, stages, ChainOptions{PDL: opts.PDL, Trials: []ChainTrial{{Variants: try}}, Samples: opts.Samples})
		if err != nil {
			return ref, err
		}
		base, with := modeTiming(second, opts.PDL), second.Trials[0]
		ref.Tried, ref.Together, ref.BaseAgain = try, &with, &base
		if with.HiUS < base.LoUS {
			ref.Chosen = second.TrialVariants[0]
			break
		}
	}
	return ref, nil
}

// Change is the second run's verdict as a relative change: the token
// with Tried against the token as given in that run (Together / BaseAgain
// - 1); 0 without a second run.
func (r Refinement) Change() float64 {
	if r.Together == nil || r.BaseAgain == nil {
		return 0
	}
	return r.Together.MedianUS/r.BaseAgain.MedianUS - 1
}

// modeTiming is the run's timing of the token as given in the mode its
// trials ran.
func modeTiming(r ChainResult, pdl bool) ChainTiming {
	if pdl && r.PDL != nil {
		return *r.PDL
	}
	return r.ChainTiming
}

// refineFastest is how many of a decision's fastest verified candidates
// (launched alone, besides its choice) are tried in the token; the
// fastest of each staging form (knob s) and of each grid share
// (GridShare) not among them is tried too, since those start and end
// differently against the kernels around them. On the H200 the token has
// chosen both ways at q4_0's gate_up (28672x4096): a grid of two blocks
// per SM, sixth fastest alone, over the one-per-SM winner (0.5–0.7 % per
// token), and on another machine the reverse (docs/results.md,
// "eighteenth lease").
const refineFastest = 3

// Measured is what PickAlternatives needs of a measured candidate (a
// Candidate's, or a cache record's).
type Measured struct {
	Params   space.Params
	Class    string
	Status   string
	MedianUS float64
}

// PickAlternatives returns which of the candidates RefineChain should try
// in place of chosen: verified ones other than chosen and stock, exact
// ones only when chosen is exact (its class among cands; stock, or a
// variant not among them, counts as exact), the refineFastest fastest
// launched alone, then the fastest of each staging form and of each grid
// share (share(p), GridShare) that neither chosen nor those have.
func PickAlternatives(cands []Measured, chosen space.Params, share func(space.Params) int) []space.Params {
	chosenClass := cache.ClassExact
	if i := slices.IndexFunc(cands, func(c Measured) bool { return c.Params == chosen }); i >= 0 && !chosen.IsStock() {
		chosenClass = cands[i].Class
	}
	var ok []Measured
	for _, c := range cands {
		if c.Status == string(StatusOK) && c.MedianUS > 0 && c.Params != chosen && !c.Params.IsStock() &&
			(chosenClass != cache.ClassExact || c.Class == cache.ClassExact) {
			ok = append(ok, c)
		}
	}
	slices.SortStableFunc(ok, func(a, b Measured) int { return cmp.Compare(a.MedianUS, b.MedianUS) })
	staging := map[int]bool{chosen.S: true}
	shares := map[int]bool{share(chosen): true}
	var out []space.Params
	for i, c := range ok {
		if sh := share(c.Params); i < refineFastest || !staging[c.Params.S] || !shares[sh] {
			out = append(out, c.Params)
			staging[c.Params.S], shares[sh] = true, true
		}
	}
	return out
}

// GridShare is the class of p's grid at job on a GPU of sms SMs that
// PickAlternatives tells apart: its even share of blocks per SM,
// ceil(blocks / sms), as 1, 2, or 3 for three and more (a grid of
// several waves). A PDL launch pins its blocks to that share
// (pinnedShared), which decides whether a block of the kernel before
// can still be resident beside one of its own.
func GridShare(job Job, p space.Params, sms int) int {
	fam, err := variants.FamilyOf(job.Format)
	if err != nil {
		return 0
	}
	return min(evenShare(fam.Launch(p, job.Rows, job.Cols), sms), 3)
}

// Alternatives is PickAlternatives as the variants that run every stage
// of job in a ChainTrial.
func Alternatives(job Job, cands []Measured, chosen space.Params, sms int) []ChainVariant {
	var out []ChainVariant
	share := func(p space.Params) int { return GridShare(job, p, sms) }
	for _, p := range PickAlternatives(cands, chosen, share) {
		out = append(out, ChainVariant{Format: job.Format, Rows: job.Rows, Cols: job.Cols, Params: p})
	}
	return out
}

// RecordAlternatives is Alternatives of a cache record's candidates, in
// place of chosen (its winner, or what runs instead).
func RecordAlternatives(rec cache.Record, chosen space.Params, sms int) []ChainVariant {
	cands := make([]Measured, len(rec.Candidates))
	for i, c := range rec.Candidates {
		cands[i] = Measured{Params: c.Params, Class: c.Class, Status: c.Status, MedianUS: c.MedianUS}
	}
	return Alternatives(JobOf(rec.Key), cands, chosen, sms)
}

// JobOf is the job a cache key names.
func JobOf(k cache.Key) Job { return Job{Format: k.Format, Rows: k.Rows, Cols: k.Cols} }

// aloneSep separates, in a decision the token chose, why it was chosen
// there from the decision made alone.
const aloneSep = "; alone "

// RefinedRecord is a record whose winner a refinement changed, and the
// cubin of its new winner.
type RefinedRecord struct {
	Record cache.Record
	Cubin  []byte
}

// applyRefinement returns the records among recs whose winner ref chose
// in the token, updated (RefineRecords). A record an earlier refinement
// changed keeps what ran alone (TokenChoice.Isolated, its reason).
func applyRefinement(recs []cache.Record, ref Refinement, model string, pdl bool) []RefinedRecord {
	var changed []RefinedRecord
	for _, v := range ref.Chosen {
		i := slices.IndexFunc(recs, func(r cache.Record) bool { return JobOf(r.Key) == v.Job() })
		if i < 0 {
			continue
		}
		r := recs[i]
		j := slices.IndexFunc(r.Candidates, func(c cache.Candidate) bool { return c.Params == v.Params })
		if j < 0 {
			continue
		}
		// What ran alone: the winner, or, for a choice an earlier
		// refinement made, the winner it replaced and that one's reason.
		before, isolated, alone := r.WinnerID, r.WinnerID, r.Decision
		if r.Token != nil {
			isolated = r.Token.Isolated
			if i := strings.Index(r.Decision, aloneSep); i >= 0 {
				alone = r.Decision[i+len(aloneSep):]
			}
		}
		w := r.Candidates[j]
		r.WinnerID, r.Params, r.Class, r.Layout = w.ID, w.Params, w.Class, w.Params.L
		r.MedianUS, r.LoUS, r.HiUS, r.GBs, r.PctCeiling = w.MedianUS, w.LoUS, w.HiUS, w.GBs, w.PctCeiling
		r.Samples, r.Registers, r.BlocksPerSM, r.P = w.Samples, w.Registers, w.BlocksPerSM, w.P
		r.PDLUS, r.PDLShared, r.LaunchPDL = 0, int(v.PDLShared), pdl
		r.Speedup = 0
		if w.MedianUS > 0 {
			r.Speedup = r.StockMedianUS / w.MedianUS
		}
		if w.Class == cache.ClassExact {
			r.Exact = nil
		}
		r.Refined = nil // the choice other tokens were refined with is gone
		r.Token = &TokenChoice{Model: model, Isolated: isolated, PDL: pdl, TokenUS: ref.Together.MedianUS, BaseTokenUS: ref.BaseAgain.MedianUS}
		r.Decision = fmt.Sprintf("%s: chosen in the %s token, %+.2f %% per token (%.1f against %.1f µs with %s)%s%s",
			w.ID, model, 100*ref.Change(), ref.Together.MedianUS, ref.BaseAgain.MedianUS, before, aloneSep, alone)
		changed = append(changed, RefinedRecord{Record: r, Cubin: v.Cubin})
	}
	return changed
}

// Refined returns d with the winner a refinement chose for it (rec, its
// record as RefineRecords changed it, and the cubin it ran): the
// candidate of d that rec names, with the launch rec records, and rec's
// reason and token. d is returned as it is when none of its candidates is
// rec's winner.
func (d Decision) Refined(rec cache.Record, cubin []byte) Decision {
	i := slices.IndexFunc(d.Candidates, func(c Candidate) bool { return c.Params == rec.Params })
	if i < 0 {
		return d
	}
	w := d.Candidates[i]
	w.PDLUS, w.PDLShared, w.LaunchPDL = rec.PDLUS, rec.PDLShared, rec.LaunchPDL
	d.Winner, d.Cubin, d.Kept = w, cubin, false
	d.Speedup, d.P, d.Token, d.Reason = rec.Speedup, rec.P, rec.Token, rec.Decision
	if rec.Exact == nil {
		d.Exact = nil
	}
	return d
}

// refineGPU returns the local GPU with uuid, which measured the records,
// or else the first local GPU of their model (a cache tuned on another
// machine of the same model).
func refineGPU(uuid, model string) (gpu.Info, error) {
	infos, err := gpu.Probe()
	if err != nil {
		return gpu.Info{}, err
	}
	if i := slices.IndexFunc(infos, func(in gpu.Info) bool { return in.UUID == uuid }); i >= 0 {
		return infos[i], nil
	}
	if i := slices.IndexFunc(infos, func(in gpu.Info) bool { return cache.NormalizeModel(in.Name) == model }); i >= 0 {
		return infos[i], nil
	}
	return gpu.Info{}, fmt.Errorf("refine: no local GPU is a %s, which measured the records", model)
}

// TokenChoice says that a decision's winner was chosen in a decoded
// token rather than launched alone (RefineRecords).
type TokenChoice = cache.TokenChoice

// RefineRecords runs RefineChain on the token of stages, which the caller
// built from the cache records recs (each stage runs the winner of the
// record of its format and shape; records of one GPU model), on the local
// GPU that measured the first stage's record, or another of its model,
// under its lock, with each record's alternatives (RecordAlternatives),
// and returns the records whose winner the token changed, updated: the
// chosen candidate wins, with the cubin it ran, recorded in PDL launch
// mode with the shared memory it ran with (under opts.PDL), and Token
// says why; the candidates keep every figure measured alone.
func RefineRecords(ctx context.Context, model string, stages []ChainStage, recs []cache.Record, opts RefineOptions) ([]RefinedRecord, Refinement, error) {
	byJob := map[Job]int{}
	for i, r := range recs {
		byJob[JobOf(r.Key)] = i
	}
	var first *cache.Record
	for _, st := range stages {
		i, ok := byJob[st.Job()]
		if !ok {
			return nil, Refinement{}, fmt.Errorf("refine: no record for stage %s (%s %dx%d)", st.Name, st.Format, st.Rows, st.Cols)
		}
		if first == nil {
			first = &recs[i]
		} else if recs[i].Model != first.Model {
			return nil, Refinement{}, fmt.Errorf("refine: the token's records were measured on GPUs of different models (%s, %s); a token runs on one", first.Model, recs[i].Model)
		}
	}
	if first == nil {
		return nil, Refinement{}, errors.New("refine: a token of no stages")
	}
	info, err := refineGPU(first.GPUUUID, first.Model)
	if err != nil {
		return nil, Refinement{}, err
	}
	lk, err := lockGPU(ctx, info.UUID, opts.WaitForLock, nil)
	if err != nil {
		return nil, Refinement{}, err
	}
	defer lk.unlock()
	var alts []ChainVariant
	seen := map[Job]bool{}
	for _, st := range stages {
		if k := st.Job(); !seen[k] {
			seen[k] = true
			alts = append(alts, RecordAlternatives(recs[byJob[k]], st.Params, info.SMs)...)
		}
	}
	if len(alts) == 0 {
		return nil, Refinement{}, nil
	}
	ref, err := RefineChain(ctx, info.Ordinal, stages, alts, opts)
	if err != nil || ref.Chosen == nil {
		return nil, ref, err
	}
	return applyRefinement(recs, ref, model, opts.PDL), ref, nil
}
