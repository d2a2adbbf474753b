package tuner

import (
	"time"
)

// Options configures a tuning run. The zero value of each field means the
// default written in its comment.
type Options struct {
	// Arch is "sm_XY" (tune the local GPUs of that compute capability) or
	// "auto" (each local GPU its own); "" means "auto".
	Arch string
	// Budget bounds the timed batches spent per (format, shape); 0 means
	// exhaustive (every surviving candidate measured in full), unless
	// BudgetShare is set.
	Budget int
	// BudgetShare, in (0, 1], is a budget for the whole run as a share of
	// the timed batches an exhaustive run would spend, split over the jobs
	// by their size (each one's finals first); it overrides Budget.
	// autotune's --budget 25% and --budget 60s set it.
	BudgetShare float64
	// Search names the strategy: "exhaustive", "halving" (successive
	// halving) or "race" (docs/tuner.md); "" means race under a budget and
	// exhaustive without one.
	Search string
	// Priors are what earlier tunes measured, per format: each shape's
	// candidates relative to its best (PriorFromCandidates). A budgeted
	// search measures what they rank best first; they never replace a
	// measurement. The run adds its own finished jobs to them.
	Priors map[string][]PriorShape
	// MinGain is the smallest median gain over stock that may replace it;
	// 0 means 0.02 (2 %).
	MinGain float64
	// Alpha is the significance level of the Mann–Whitney U test; 0 means 0.05.
	Alpha float64
	// WaitForLock makes a second tuner of the same GPU wait instead of failing.
	WaitForLock bool
	// Only, if set, limits the candidates to these variant IDs (stock is
	// always measured); autotune bench uses it to compare a stored winner
	// with stock.
	Only []string
	// Progress, if set, is called after each step; it must not block.
	Progress func(Progress)
	// Record, if set, is called once per finished (format, shape), in the
	// order they finish, so the caller can store each decision at once.
	Record func(Decision) error
	// WarmL2 times every launch over one copy of the weights instead of
	// copies rotated past 4 × L2, as harnesses that replay one matrix do
	// (ggml's test-backend-ops): below the L2 size the weights come from
	// L2. For like-for-like comparisons only: a run with WarmL2 cannot
	// Record, and its decisions say WarmL2.
	WarmL2 bool
}

// Progress reports how far a run has come.
type Progress struct {
	Done, Total int           // finished (format, shape) jobs
	Job         Job           // the job being worked on
	Stage       string        // "compile", "verify", "measure", "select"
	GPU         string        // which GPU (index and name)
	ETA         time.Duration // estimated time left, 0 if unknown
}

// PlanEntry is the static plan of one job: what --dry-run prints.
type PlanEntry struct {
	Job
	Candidates int `json:"candidates"` // variants left after gates and static constraints
	Excluded   int `json:"excluded"`   // variants excluded
	Budget     int `json:"budget"`     // timed batches the job may spend; 0: exhaustive
	// Measured is how many candidates the job is expected to time: the
	// floor-free ones and a quarter more (staged variants' one-wave twins,
	// the few floors that bind); compiling tells the real count.
	Measured int `json:"measured"`
	// SearchShare is, under Options.BudgetShare, the share of its search
	// (what exhaustive would time before the finals) the job spends:
	// the same for every job of a run. The job applies it to the
	// candidates it really measures; Budget is that applied to Measured.
	SearchShare float64        `json:"search_share,omitempty"`
	Reasons     map[string]int `json:"reasons"`     // exclusion reason (generalised) → count
	Expected    time.Duration  `json:"expected_ns"` // expected tuning time on one GPU
}
