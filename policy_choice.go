package gemvtune

import (
	"time"

	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

// Sources of a Choice: where the variant came from.
const (
	SourceTuned            = "tuned"              // the cache's winner for this exact shape
	SourceNearest          = "nearest"            // the winner of the same-cols shape with the closest rows
	SourceOtherModel       = "other-model"        // tuned or nearest, measured on another GPU model of the same arch
	SourceForced           = "forced"             // GEMV_FORCE_VARIANT* or a knob override
	SourceForcedGateFailed = "forced-gate-failed" // the forced variant cannot run this shape: stock
	SourceDefault          = "default"            // nothing usable tuned for this shape: stock
	SourceStale            = "stale"              // the record is from other kernels or another tool version: stock
	SourceUntunedArch      = "untuned-arch"       // the cache has nothing for this arch: stock
	SourceNoCache          = "no-cache"           // the cache file does not exist: stock
	SourceCorruptCache     = "corrupt-cache"      // the cache (or this entry) cannot be read: stock
	SourceBusyCache        = "busy-cache"         // a writer held the cache past Open's wait: stock, the cache is not damaged
	SourceDisabled         = "disabled"           // GEMV_TUNE_DISABLE=1: stock
)

// Choice is what an engine runs for one (arch, format, shape).
type Choice struct {
	// ID is the variant's canonical ID, or "v1" for the stock kernel.
	ID string
	// Params are the variant's knobs (space.Stock for v1).
	Params space.Params
	// Class is "exact" (bit-identical to stock) or "tolerance".
	Class string
	// Source says where the choice came from (SourceTuned, ...).
	Source string
	// Reason explains the choice in one sentence.
	Reason string
	// Layout is the weight layout the kernel expects (knob l; 0 = raw
	// bytes): the engine repacks once at load when it is not 0.
	Layout int
	// Cubin is the stored compiled kernel for exactly this variant and arch,
	// or nil: the engine then compiles the variant's source itself. It is
	// read from the cache file on the first lookup that returns it, with
	// one positioned read checked against the cubin's sha256 (Open does not
	// load cubins and holds no lock); if the file has changed since Open,
	// it is found by its hash in the current file, else it is nil. Lookups
	// share it: do not modify it.
	Cubin []byte
	// PDL is true when the kernel supports programmatic dependent launch
	// (sm_90 and newer: it calls griddepcontrol.wait before it reads x or
	// writes y, and griddepcontrol.launch_dependents after its last rows).
	// An engine may then launch it with cuLaunchKernelEx and
	// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, with
	// PDLSharedBytes of dynamic shared memory, so its launch overlaps the
	// end of the kernel before it; launched plainly it runs as any kernel.
	// PDLPays says whether the tuner recorded the winner in that mode.
	PDL bool
	// Launch is the grid, block and dynamic shared memory to launch the
	// kernel (KernelEntry) with for the looked-up shape; NeedsSharedOptIn
	// says when the shared memory needs the function's limit raised.
	Launch variants.Launch
	// PDLSharedBytes is the dynamic shared memory to launch with when
	// launching with PDL: Launch.SharedBytes, or more for a tuned winner
	// whose grid an SM would otherwise take an uneven share of (an SM the
	// kernel before frees early takes as many blocks as fit; docs/kernels.md,
	// "Programmatic dependent launch"). PDLNeedsSharedOptIn says when it
	// needs the function's limit raised.
	PDLSharedBytes uint32
	// ErrorBound is the relative L2 error against the float64 reference
	// that the variant was verified within; exact-class variants are also
	// bit-identical to stock.
	ErrorBound float64
	// Evidence holds the measurement behind a tuned or nearest choice; nil
	// otherwise. Lookups share it: do not modify it.
	Evidence *Evidence
}

// Evidence is the measurement a tuned or nearest choice rests on.
type Evidence struct {
	MedianUS   float64 // winner's median time per launch on the tuned shape
	GBs        float64 // effective GB/s
	PctCeiling float64 // % of the measured read ceiling
	Speedup    float64 // over stock (1 when stock was kept)
	P          float64 // Mann–Whitney U p-value vs stock
	// PDLUS is the winner's µs per launch in a chain of its own launches
	// with programmatic dependent launch (Choice.PDL, with PDLShared bytes
	// of shared memory), 0 when not measured (older records, below sm_90,
	// exact alternatives).
	PDLUS float64
	// PDLShared is the dynamic shared memory of those launches at the
	// tuned shape (Choice.PDLSharedBytes for a tuned choice); 0 when not
	// measured.
	PDLShared int
	// LaunchPDL is the launch mode the winner was recorded in: a chain of
	// its plain launches timed in the same rounds was not faster than its
	// PDL chain beyond both intervals.
	LaunchPDL  bool
	GPUName    string    // GPU it was measured on
	Time       time.Time // when
	TunedShape string    // the shape measured, e.g. "4096x14336"
}
