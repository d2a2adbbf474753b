// Package tuner turns kernel families and a search space into decisions an
// engine can trust: for each (GPU, format, shape) it prunes candidates
// statically, compiles them, verifies every survivor on the GPU, measures
// them interleaved against stock, and selects a winner only when it beats
// stock significantly.
package tuner

import (
	"time"

	"github.com/gemvtune/gemvtune/space"
)

// Job is one (format, shape) to tune.
type Job struct {
	Format string `json:"format"`
	Rows   int    `json:"rows"`
	Cols   int    `json:"cols"`
}

// Shape returns the job's shape, e.g. "4096x14336".
func (j Job) Shape() string { return space.Shape{Rows: j.Rows, Cols: j.Cols}.String() }

// Status is what happened to one candidate.
type Status string

// Candidate statuses.
const (
	StatusOK       Status = "ok"       // verified and measured
	StatusPruned   Status = "pruned"   // excluded statically (constraint, spills, zero occupancy)
	StatusGate     Status = "gate"     // the family's gate refused the shape
	StatusCompile  Status = "compile"  // NVRTC or module load failed
	StatusMismatch Status = "mismatch" // verification failed
	StatusFault    Status = "fault"    // launch failed or the kernel faulted
	StatusTimeout  Status = "timeout"  // the kernel hung past the watchdog
	StatusDropped  Status = "dropped"  // eliminated early by the budgeted strategy
)

// Candidate is the record of one variant for one (format, shape).
type Candidate struct {
	ID     string       `json:"id"`
	Params space.Params `json:"params"`
	Class  string       `json:"class"`
	Status Status       `json:"status"`
	Reason string       `json:"reason,omitempty"`

	Registers   int `json:"registers,omitempty"`
	LocalBytes  int `json:"local_bytes,omitempty"`
	SharedBytes int `json:"shared_bytes,omitempty"`
	BlocksPerSM int `json:"blocks_per_sm,omitempty"`

	MaxAbsDiff float64 `json:"max_abs_diff_vs_stock,omitempty"` // 0 for bit-identical
	RelErr     float64 `json:"rel_l2_err,omitempty"`            // vs the float64 reference

	MedianUS   float64   `json:"median_us,omitempty"`
	LoUS       float64   `json:"lo_us,omitempty"` // confidence interval of the median
	HiUS       float64   `json:"hi_us,omitempty"`
	GBs        float64   `json:"gbs,omitempty"`
	PctCeiling float64   `json:"pct_ceiling,omitempty"`
	Samples    []float64 `json:"samples_us,omitempty"` // µs per launch, one per timed batch
	// PDLUS is the median µs per launch in a chain of its own launches
	// with programmatic dependent launch (each one may start while the one
	// before drains; sm_90+): measured after the decision for stock, the
	// winners and, with Options.Only, every verified candidate. 0 = not
	// measured.
	PDLUS float64 `json:"pdl_us,omitempty"`
	// PDLShared is the dynamic shared memory those PDL launches use: the
	// launch's own, raised where that keeps an SM from taking more than
	// the grid's even share of blocks (pinnedShared).
	PDLShared int `json:"pdl_shared_bytes,omitempty"`
	// LaunchPDL is true when a chain of plain launches was timed in the
	// same rounds and was not faster than the PDL chain beyond both
	// confidence intervals: the launch mode the candidate is recorded in.
	LaunchPDL bool `json:"launch_pdl,omitempty"`
}

// Clocks is an NVML snapshot taken before or after a measurement.
type Clocks struct {
	SMMHz     int      `json:"sm_mhz"`
	MemMHz    int      `json:"mem_mhz"`
	TempC     int      `json:"temp_c"`
	Reasons   []string `json:"reasons,omitempty"`
	Throttled bool     `json:"throttled"`
}

// Decision is the outcome for one (GPU, format, shape).
type Decision struct {
	Job
	Arch       string    `json:"arch"`
	Winner     Candidate `json:"winner"`
	Stock      Candidate `json:"stock"`
	Speedup    float64   `json:"speedup"` // stock median / winner median
	P          float64   `json:"p"`       // Mann–Whitney U p-value, winner vs stock
	Kept       bool      `json:"kept_stock"`
	Reason     string    `json:"reason"` // e.g. "kept v1: +1.2 % not significant (p=0.41)"
	CeilingGBs float64   `json:"ceiling_gbs"`
	// ReadUS is the median µs per launch of the plain streaming read
	// over this job's own weight bytes, timed like the candidates (CUDA
	// graph, rotated copies) with each of the ceiling's launches, the
	// fastest of them; ReadGBs its rate. A kernel of this size
	// cannot beat it by much: it pays the same launch, first-byte latency
	// and drain, which the 1 GiB ceiling hides. 0 when not measured.
	ReadUS     float64     `json:"read_us,omitempty"`
	ReadGBs    float64     `json:"read_gbs,omitempty"`
	Bytes      int64       `json:"bytes"` // weight bytes incl. scales
	Before     Clocks      `json:"clocks_before"`
	After      Clocks      `json:"clocks_after"`
	Throttled  bool        `json:"throttled"`
	Candidates []Candidate `json:"candidates"`
	// Batches is the timed batches the job spent (every attempt);
	// ExhaustiveBatches what exhaustive search would spend on the same
	// measured candidates: their ratio is what a budget saved.
	Batches int `json:"batches,omitempty"`
	// WarmL2 says the times were taken over one copy of the weights
	// (Options.WarmL2), not cold: never a decision to store.
	WarmL2            bool   `json:"warm_l2,omitempty"`
	ExhaustiveBatches int    `json:"exhaustive_batches,omitempty"`
	Cubin             []byte `json:"-"`
	// Exact is the best exact-class choice when Winner is of class
	// tolerance (int8 activations): what an engine that sets
	// GEMV_REQUIRE_EXACT=1 gets. Nil when Winner is exact.
	Exact *Alternative `json:"exact,omitempty"`
	// Token is set when the winner was chosen in a decoded token, not
	// launched alone (RefineRecords); Candidates keep the figures
	// measured alone.
	Token *TokenChoice `json:"token,omitempty"`

	GPUName    string    `json:"gpu_name"`
	GPUUUID    string    `json:"gpu_uuid"`
	Driver     string    `json:"driver"`
	NVRTC      string    `json:"nvrtc"`
	SourceHash string    `json:"source_hash"`
	Time       time.Time `json:"time"`
	Wall       float64   `json:"wall_seconds"`
}

// Alternative is a second decision among the exact-class candidates only.
type Alternative struct {
	Winner  Candidate `json:"winner"`
	Kept    bool      `json:"kept_stock"`
	P       float64   `json:"p"`
	Speedup float64   `json:"speedup"`
	Reason  string    `json:"reason"`
	Cubin   []byte    `json:"-"`
}

// Fastest is the fastest verified candidate measured in the final stage
// (in at least as many samples as stock), stock when none is faster: what
// autotune bench reports as the best, whether or not it won.
func (d Decision) Fastest() Candidate {
	best := d.Stock
	for _, c := range d.Candidates {
		if c.Status == StatusOK && c.MedianUS > 0 && len(c.Samples) >= len(d.Stock.Samples) && c.MedianUS < best.MedianUS {
			best = c
		}
	}
	return best
}
