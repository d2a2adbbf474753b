package tuner

import (
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

// Plan is the static plan of a run on arch (from the limits table; no GPU
// needed): per job, the candidates left after gates and constraints, the
// exclusion reasons, the budget and the expected tuning time. budget is as
// in Options.Budget.
func Plan(arch string, jobs []Job, budget int) ([]PlanEntry, error) {
	return plan(arch, jobs, func(costs []jobCost) ([]int, float64) {
		out := make([]int, len(costs))
		for i := range out {
			out[i] = budget
		}
		return out, 0
	})
}

// PlanShare is Plan under Options.BudgetShare: the run's search share
// (searchShare over the candidates the jobs are expected to time) and
// each job's budget under it; a share outside (0, 1) is exhaustive.
func PlanShare(arch string, jobs []Job, share float64) ([]PlanEntry, error) {
	if share <= 0 || share >= 1 {
		return Plan(arch, jobs, 0)
	}
	return plan(arch, jobs, func(costs []jobCost) ([]int, float64) {
		s := searchShare(costs, share)
		out := make([]int, len(costs))
		for i, c := range costs {
			out[i] = c.budget(s)
		}
		return out, s
	})
}

// plan counts every job's candidates, then gives the jobs their budgets
// (and the run's search share, 0 without one) from what exhaustive would
// cost them, then expects their times.
func plan(arch string, jobs []Job, budgets func([]jobCost) ([]int, float64)) ([]PlanEntry, error) {
	a, err := space.ParseArch(arch)
	if err != nil {
		return nil, err
	}
	lim, err := space.LimitsFor(a.String())
	if err != nil {
		return nil, err
	}
	if err := validateJobs(jobs); err != nil {
		return nil, err
	}
	out := make([]PlanEntry, len(jobs))
	plain := make([]int, len(jobs)) // candidates without a floor
	costs := make([]jobCost, len(jobs))
	for i, j := range jobs {
		fam, err := variants.FamilyOf(j.Format)
		if err != nil {
			return nil, err
		}
		ok, excl := searchSpace(fam, lim, func(p space.Params) int {
			return int(fam.Launch(p, j.Rows, j.Cols).SharedBytes)
		}, true) // a current NVRTC: the plan needs none
		e := PlanEntry{Job: j, Reasons: map[string]int{}}
		for _, x := range excl {
			e.Reasons[generalise(x.Reason)]++
		}
		for _, p := range ok {
			if err := fam.Gate(p, j.Rows, j.Cols); err != nil {
				e.Reasons[generalise(err.Error())]++
				continue
			}
			e.Candidates++
			if p.F == 0 {
				plain[i]++
			}
		}
		e.Excluded = len(ok) + len(excl) - e.Candidates
		// Most floors do not bind or spill and are never measured, while
		// staged variants add one-wave twins: on the H200 (run6, llama-3-8b)
		// 1.24 measured candidates per floor-free one.
		e.Measured = min(e.Candidates, plain[i]*5/4)
		out[i], costs[i] = e, exhaustiveCost(e.Measured, len(fam.Activations()))
	}
	compiledFormat := map[string]bool{}
	bs, share := budgets(costs)
	for i, b := range bs {
		e, j := &out[i], jobs[i]
		fam, _ := variants.FamilyOf(j.Format)
		e.Budget, e.SearchShare = b, share
		e.Expected = expectedTime(fam, j, e.Measured, b)
		if !compiledFormat[j.Format] {
			// The first job of a format pays for compiling it (two phases:
			// f=0, then the binding floors in rounds: 0.82 per f=0 variant
			// on the H200).
			compiledFormat[j.Format] = true
			e.Expected += time.Duration(float64(plain[i]) * 1.8 * compileSeconds / float64(runtime.NumCPU()) * float64(time.Second))
		}
	}
	return out, nil
}

// compileSeconds is the mean NVRTC time of one variant per CPU core: on the
// H200's 16-core host NVRTC 13.0 built the 3020 programs of a full tune in
// about 170 s (0.1 s for small kernels, seconds for r·u = 16 with a=1).
const compileSeconds = 0.9

// generalise folds the measures out of a reason (byte counts, products,
// shapes) so like reasons count together, and keeps the numbers that are
// part of a name or a knob value: sm_80, llama-3-8b, bf16, s=3.
func generalise(reason string) string {
	var b strings.Builder
	for i := 0; i < len(reason); {
		c := reason[i]
		if c < '0' || c > '9' {
			b.WriteByte(c)
			i++
			continue
		}
		j := i
		for j < len(reason) && (reason[j] >= '0' && reason[j] <= '9' || reason[j] == '.' && j+1 < len(reason) && reason[j+1] >= '0' && reason[j+1] <= '9') {
			j++
		}
		prev, next := byte(' '), byte(' ')
		if i > 0 {
			prev = reason[i-1]
		}
		if j < len(reason) {
			next = reason[j]
		}
		shape := prev == 'x' && i >= 2 && reason[i-2] >= '0' && reason[i-2] <= '9' // the cols of ROWSxCOLS
		if !shape && (isNameByte(prev) || prev == '=' || prev == '-' || isNameByte(next) && next != 'x') {
			b.WriteString(reason[i:j])
		} else {
			b.WriteByte('N')
		}
		i = j
	}
	return b.String()
}

func isNameByte(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }

// expectedTime models one job: verification (~2 ms a candidate), timed
// batches of ~0.2 ms or one launch, graph capture, and data generation.
func expectedTime(fam variants.Family, j Job, n int, budget int) time.Duration {
	bytes, _ := fam.Format().Bytes(j.Rows, j.Cols)
	launch := float64(bytes)/3e12 + 3e-6
	batch := max(targetBatch.Seconds(), launch)
	batches := n*screenRounds + (nFinalists+1)*finalRounds
	if budget > 0 && budget < batches {
		batches = budget
	}
	sec := float64(n)*2e-3 + float64(batches)*batch + float64(j.Rows)*float64(j.Cols)*4e-9 + 0.5
	return time.Duration(sec * float64(time.Second))
}

// String reads like one line of --dry-run output.
func (e PlanEntry) String() string {
	return fmt.Sprintf("%-8s %-12s %4d candidates (%d excluded)  ~%v", e.Format, e.Shape(), e.Candidates, e.Excluded, e.Expected.Round(100*time.Millisecond))
}
