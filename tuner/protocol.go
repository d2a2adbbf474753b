package tuner

import (
	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/space"
)

// The parent talks to its measurement worker in JSON lines: one request on
// the worker's stdin, one response on its stdout. A faulting kernel poisons
// the worker's CUDA context; the worker answers Fatal and exits, and the
// parent starts a new one.

// Worker operations.
const (
	opInit    = "init"    // open the device, load the ceiling kernel, measure the read ceiling
	opModules = "modules" // load cubins; answer attributes per module
	opShape   = "shape"   // make fresh random data for a job, check stock against the reference
	opVerify  = "verify"  // run one candidate, compare with stock and the reference
	opMeasure = "measure" // time candidates interleaved in rounds
	opQuit    = "quit"
)

type moduleSpec struct {
	ID     string       `json:"id"`
	Params space.Params `json:"params"`
	Cubin  []byte       `json:"cubin"`
}

type request struct {
	Op      string       `json:"op"`
	Device  int          `json:"device,omitempty"`
	Ceiling []byte       `json:"ceiling,omitempty"` // cubin of the streaming-read kernel
	Modules []moduleSpec `json:"modules,omitempty"`
	Format  string       `json:"format,omitempty"`
	Rows    int          `json:"rows,omitempty"`
	Cols    int          `json:"cols,omitempty"`
	Seed    int64        `json:"seed,omitempty"`
	ID      string       `json:"id,omitempty"`
	IDs     []string     `json:"ids,omitempty"`
	Rounds  int          `json:"rounds,omitempty"`
	// RowGroups (opShape) asks the worker to add, for every loaded
	// variant with smem staging whose grid exceeds one wave at this
	// shape, its one-wave twin with knob g set (rowGroupsFor).
	RowGroups bool `json:"row_groups,omitempty"`
	// WarmL2 (opShape): one copy of the weights, not a rotation past
	// 4 × L2 (Options.WarmL2).
	WarmL2 bool `json:"warm_l2,omitempty"`
}

type moduleAttrs struct {
	Registers   int `json:"registers"`
	LocalBytes  int `json:"local_bytes"`
	SharedBytes int `json:"shared_bytes"`
	BlocksPerSM int `json:"blocks_per_sm"`
	// PDLShared is the dynamic shared memory of the variant's PDL
	// launches at this shape (pinnedShared).
	PDLShared int    `json:"pdl_shared,omitempty"`
	Err       string `json:"err,omitempty"`
}

type response struct {
	OK    bool   `json:"ok"`
	Err   string `json:"err,omitempty"`
	Fatal bool   `json:"fatal,omitempty"` // the context is poisoned; the worker exits
	// Status classifies a failed candidate: "fault", "timeout", "mismatch".
	Status string `json:"status,omitempty"`

	Info       *gpu.Info              `json:"info,omitempty"`
	CeilingGBs float64                `json:"ceiling_gbs,omitempty"`
	Attrs      map[string]moduleAttrs `json:"attrs,omitempty"`
	MaxAbsDiff float64                `json:"max_abs_diff,omitempty"`
	RelErr     float64                `json:"rel_err,omitempty"`
	Samples    map[string][]float64   `json:"samples,omitempty"`
	Batch      int                    `json:"batch,omitempty"`
	Copies     int                    `json:"copies,omitempty"`
}
