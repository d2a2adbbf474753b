package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/internal/termtext"
	"github.com/gemvtune/gemvtune/tuner"
)

// budgetSpec is --budget: N timed batches per job, a share of the
// exhaustive run's batches ("25%"), or a time for the whole run ("60s").
type budgetSpec struct {
	batches int
	share   float64
	wall    time.Duration
}

func (b budgetSpec) String() string {
	switch {
	case b.batches > 0:
		return fmt.Sprintf("%d timed batches per job", b.batches)
	case b.share > 0:
		return fmt.Sprintf("%.0f %% of an exhaustive run's timed batches", 100*b.share)
	case b.wall > 0:
		return "about " + b.wall.String() + " of tuning"
	}
	return "exhaustive"
}

// parseBudget reads --budget.
func parseBudget(s string) (budgetSpec, error) {
	s = strings.TrimSpace(s)
	bad := fmt.Errorf("--budget %q: want 0 (exhaustive), timed batches per job (400), a share of an exhaustive run (25%%) or a time for the whole run (60s, 2m)", termtext.Printable(s))
	switch {
	case s == "" || s == "0":
		return budgetSpec{}, nil
	case strings.HasSuffix(s, "%"):
		p, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
		if err != nil || !(p > 0 && p <= 100) {
			return budgetSpec{}, bad
		}
		return budgetSpec{share: p / 100}, nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 {
			return budgetSpec{}, bad
		}
		return budgetSpec{batches: n}, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return budgetSpec{wall: d}, nil
	}
	return budgetSpec{}, bad
}

// minShare is the smallest share a time budget becomes: below it the
// finals alone (stock and the finalists, measured for the decision) are
// most of the run.
const minShare = 0.05

// options turns the budget into the tuner's options for jobs on arch. A
// time becomes a share by the static plan's model: its expected time in
// full, E(1), and at the smallest share, E(minShare), give the part no
// budget shortens (compiles, verification, the finals) and the part that
// scales with the share; the share is what leaves the time asked for. A
// note says what it chose.
func (b budgetSpec) options(arch string, jobs []tuner.Job) (batches int, share float64, note string, err error) {
	if b.wall == 0 {
		return b.batches, b.share, "", nil
	}
	expected := func(plan []tuner.PlanEntry, err error) (time.Duration, error) {
		var d time.Duration
		for _, e := range plan {
			d += e.Expected
		}
		return d, err
	}
	full, err := expected(planFn(arch, jobs, 0))
	if err != nil {
		return 0, 0, "", err
	}
	least, err := expected(sharePlanFn(arch, jobs, minShare))
	if err != nil {
		return 0, 0, "", err
	}
	scaled := max(float64(full-least)/(1-minShare), 1)
	fixed := time.Duration(float64(full) - scaled)
	share = (float64(b.wall) - float64(fixed)) / scaled
	switch {
	case share >= 1:
		return 0, 0, fmt.Sprintf("--budget %v: the exhaustive run is expected to take %v: tuning in full", b.wall, full.Round(time.Second)), nil
	case share < minShare:
		return 0, minShare, fmt.Sprintf("--budget %v: what no budget shortens (compiles, verification, the finals) is expected to take %v: searching %.0f %% of the exhaustive run's timed batches",
			b.wall, fixed.Round(time.Second), 100*minShare), nil
	}
	return 0, share, fmt.Sprintf("--budget %v: %.0f %% of the exhaustive run's timed batches (expected %v in full)", b.wall, 100*share, full.Round(time.Second)), nil
}

// budgetArch is the arch a time budget is planned for: the one asked for,
// else that of the run's first GPU ("sm_90" when none is visible: the
// tuner then says why it cannot run).
func budgetArch(arch string, gpus []localGPU) string {
	if arch != "auto" {
		return arch
	}
	if len(gpus) > 0 {
		return gpus[0].arch
	}
	return "sm_90"
}

// cachePriors are the budgeted search's priors from the cache: the
// candidates' medians of every current record of the run's one (arch,
// model), per format. nil when the run's GPUs are of several models or
// none is visible: a prior from another GPU would mislead more than help.
func cachePriors(db *cache.DB, gpus []localGPU) map[string][]tuner.PriorShape {
	if len(gpus) != 1 {
		return nil
	}
	g := gpus[0]
	recs, _ := db.All(g.arch)
	out := map[string][]tuner.PriorShape{}
	for _, r := range recs {
		if r.Model != g.model || staleWhy(r) != "" {
			continue
		}
		med := map[string]float64{}
		for _, c := range r.Candidates {
			if c.MedianUS > 0 {
				med[c.ID] = c.MedianUS
			}
		}
		if len(med) > 0 {
			out[r.Format] = append(out[r.Format], tuner.PriorFromCandidates(r.Rows, r.Cols, med))
		}
	}
	return out
}
