package cache

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/gemvtune/gemvtune/space"
)

// SchemaVersion is the version of the Record encoding this package writes.
// A stored record with another schema is stale.
const SchemaVersion = 2

// ToolVersion is the version of gemvtune that writes records. A record
// written by another version is stale (re-tuned by autotune, skipped by
// lookups).
const ToolVersion = "0.1.0"

// Classes of a winner (variants.Exact and variants.Tolerance).
const (
	ClassExact     = "exact"
	ClassTolerance = "tolerance"
)

// Record is the tuner's decision for one (arch, format, shape). Figures
// that were not measured are 0; Put stores NaN and ±Inf as 0 too.
type Record struct {
	Schema int `json:"schema"` // SchemaVersion when written
	Key

	WinnerID string       `json:"winner"`   // canonical ID or "v1"
	Params   space.Params `json:"params"`   // the winner's knobs
	Class    string       `json:"class"`    // "exact" or "tolerance"
	Layout   int          `json:"layout"`   // weight layout the engine must use (= Params.L)
	Decision string       `json:"decision"` // e.g. "kept v1: +1.2 % not significant (p=0.41)"

	MedianUS   float64 `json:"median_us"`   // winner's median time per launch
	LoUS       float64 `json:"lo_us"`       // confidence interval of the median
	HiUS       float64 `json:"hi_us"`       //
	GBs        float64 `json:"gbs"`         // effective GB/s (weights incl. scales / time)
	PctCeiling float64 `json:"pct_ceiling"` // 100 × GBs / CeilingGBs
	CeilingGBs float64 `json:"ceiling_gbs"` // streaming-read ceiling measured in the same run
	// ReadUS is how long the same streaming read took over exactly this
	// job's weight bytes, timed like the winner: what reading the weights
	// once costs at this size. 0 when not measured (records before it
	// existed); optional in schema 1, like Exact.
	ReadUS float64 `json:"read_us,omitempty"`
	// PDLUS is the winner's median µs per launch in a chain of its own
	// launches with programmatic dependent launch (sm_90+; Choice.PDL).
	// 0 when not measured; optional in schema 1, like ReadUS.
	PDLUS float64 `json:"pdl_us,omitempty"`
	// PDLShared is the dynamic shared memory of those PDL launches: the
	// launch's own, or more where that keeps an SM from taking more than
	// the grid's even share of blocks (docs/kernels.md, "Programmatic
	// dependent launch"). 0 when not measured.
	PDLShared int `json:"pdl_shared_bytes,omitempty"`
	// LaunchPDL is the launch mode the winner was recorded in: true when
	// a chain of its plain launches timed in the same rounds was not
	// faster than its PDL chain (with PDLShared) beyond both intervals.
	LaunchPDL     bool    `json:"launch_pdl,omitempty"`
	StockMedianUS float64 `json:"stock_median_us"` // stock's median
	StockGBs      float64 `json:"stock_gbs"`       // stock's GB/s
	Speedup       float64 `json:"speedup"`         // stock median / winner median (1 when stock kept)
	P             float64 `json:"p"`               // Mann–Whitney U p-value, winner vs stock
	Samples       int     `json:"samples"`         // timed batches of the winner
	Registers     int     `json:"registers"`       // registers per thread of the winner
	BlocksPerSM   int     `json:"blocks_per_sm"`   // resident blocks per SM (occupancy)

	GPUName     string    `json:"gpu_name"`
	GPUUUID     string    `json:"gpu_uuid"`
	Driver      string    `json:"driver"`
	NVRTC       string    `json:"nvrtc"`
	SourceHash  string    `json:"source_hash"`  // variants.Family.SourceHash() when tuned
	ToolVersion string    `json:"tool_version"` // ToolVersion when tuned
	Time        time.Time `json:"time"`
	Throttled   bool      `json:"throttled"`
	ClockNotes  string    `json:"clock_notes,omitempty"` // NVML clocks/reasons before and after
	CubinHash   string    `json:"cubin_sha256,omitempty"`

	// Exact is the best exact-class choice when the winner is not exact
	// (what an engine that sets GEMV_REQUIRE_EXACT=1 gets); nil otherwise,
	// and in records written before it existed. The field is optional in
	// schema 1: readers that do not know it ignore it.
	Exact *Alternative `json:"exact,omitempty"`
	// Token is set when the winner was chosen in a decoded token rather
	// than launched alone; Candidates keep the figures measured alone.
	Token *TokenChoice `json:"token,omitempty"`
	// Refined names the model presets whose token finished a refinement
	// (autotune --refine) with this winner in place, whether or not that
	// refinement changed it; a choice the token changes names only that
	// token. A run that resumes --refine skips the tokens every shape of
	// which names it. Optional, like Exact.
	Refined []string `json:"refined,omitempty"`

	Candidates []Candidate `json:"candidates,omitempty"` // every candidate measured or excluded
}

// Alternative is a second decision of a record, among its exact-class
// candidates only, against the same stock measurement. When stock was kept
// (Kept), WinnerID is "v1" and the figures are stock's.
type Alternative struct {
	WinnerID   string       `json:"winner"`     // canonical ID or "v1"
	Params     space.Params `json:"params"`     // its knobs
	Class      string       `json:"class"`      // always "exact"
	Kept       bool         `json:"kept_stock"` // no exact variant beat stock significantly
	Decision   string       `json:"decision"`   // e.g. "r2f3u1s0w8: +41.0 % over v1 (p=0.0001)"
	MedianUS   float64      `json:"median_us"`
	GBs        float64      `json:"gbs"`
	PctCeiling float64      `json:"pct_ceiling"`
	Speedup    float64      `json:"speedup"` // stock median / its median (1 when stock kept)
	P          float64      `json:"p"`       // Mann–Whitney U p-value vs stock
	CubinHash  string       `json:"cubin_sha256,omitempty"`
}

// Candidate summarises one variant tried for a record (what autotune report
// lists).
type Candidate struct {
	ID          string       `json:"id"`
	Params      space.Params `json:"params"`
	Class       string       `json:"class"`
	Status      string       `json:"status"` // "ok", "pruned", "gate", "compile", "mismatch", "fault", "timeout", "dropped"
	Reason      string       `json:"reason,omitempty"`
	Registers   int          `json:"registers,omitempty"`
	BlocksPerSM int          `json:"blocks_per_sm,omitempty"`
	MedianUS    float64      `json:"median_us,omitempty"`
	LoUS        float64      `json:"lo_us,omitempty"`
	HiUS        float64      `json:"hi_us,omitempty"`
	GBs         float64      `json:"gbs,omitempty"`
	PctCeiling  float64      `json:"pct_ceiling,omitempty"`
	Samples     int          `json:"samples,omitempty"`
	// P is the Mann–Whitney U p-value of its samples against stock's, 0
	// when not computed: what the record's P becomes when a refinement
	// makes it the winner.
	P float64 `json:"p,omitempty"`
}

// TokenChoice says that a record's winner was chosen in a decoded token
// (autotune --refine): the token ran faster with it than with the
// candidate fastest alone.
type TokenChoice struct {
	// Model is the model preset whose token ran.
	Model string `json:"model"`
	// Isolated is the candidate that was fastest launched alone, which the
	// token ran before.
	Isolated string `json:"isolated"`
	// PDL says the token ran with PDL edges.
	PDL bool `json:"pdl"`
	// TokenUS and BaseTokenUS are µs per token with the chosen variants
	// and with the ones fastest alone, in the same run.
	TokenUS     float64 `json:"token_us"`
	BaseTokenUS float64 `json:"base_token_us"`
}

// Stale reports whether r no longer describes the current kernels: its
// schema is not SchemaVersion, its source hash is not currentSourceHash, or
// it was written by another tool version. why says which, in words.
func (r Record) Stale(currentSourceHash, toolVersion string) (stale bool, why string) {
	return staleness(r.Schema, r.SourceHash, r.ToolVersion, currentSourceHash, toolVersion)
}

func staleness(schema int, src, tool, curSrc, curTool string) (bool, string) {
	switch {
	case schema != SchemaVersion:
		return true, fmt.Sprintf("record schema %d, this autotune reads %d", schema, SchemaVersion)
	case src != curSrc:
		return true, fmt.Sprintf("kernel source changed since tuning (hash %s, now %s)", short(src), short(curSrc))
	case tool != curTool:
		return true, fmt.Sprintf("tuned by autotune %s, this is %s", tool, curTool)
	}
	return false, ""
}

func short(h string) string {
	if h == "" {
		return "none"
	}
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// Encode returns the record as JSON, after replacing NaN and ±Inf figures
// by 0 (JSON has no encoding for them).
func (r Record) Encode() ([]byte, error) {
	r.sanitize()
	return json.Marshal(r)
}

// DecodeRecord reads a record written by Encode. It never panics: garbage
// gives an error matching ErrBadRecord. A record of another schema decodes
// leniently (what can be read is kept) and without error; Stale reports it.
// A record of this schema must validate (see Validate).
func DecodeRecord(data []byte) (Record, error) {
	var head struct {
		Schema *int `json:"schema"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return Record{}, fmt.Errorf("%w: %v", ErrBadRecord, err)
	}
	if head.Schema == nil {
		return Record{}, fmt.Errorf("%w: no \"schema\" field", ErrBadRecord)
	}
	var r Record
	err := json.Unmarshal(data, &r)
	r.Schema = *head.Schema
	if r.Schema != SchemaVersion {
		return r, nil
	}
	if err != nil {
		return Record{}, fmt.Errorf("%w: %v", ErrBadRecord, err)
	}
	if err := r.Validate(); err != nil {
		return Record{}, err
	}
	return r, nil
}

// Validate checks the key, that WinnerID names Params, Layout = Params.L,
// the class, and that figures are finite and not negative.
func (r Record) Validate() error {
	if err := r.Key.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrBadRecord, err)
	}
	p, err := space.Parse(r.WinnerID)
	if err != nil {
		return fmt.Errorf("%w %s: winner: %w", ErrBadRecord, r.Key, err)
	}
	if p != r.Params {
		return fmt.Errorf("%w %s: winner %s but params %s", ErrBadRecord, r.Key, r.WinnerID, r.Params.ID())
	}
	if r.Layout != r.Params.L {
		return fmt.Errorf("%w %s: layout %d but params %s", ErrBadRecord, r.Key, r.Layout, r.Params.ID())
	}
	if r.Class != ClassExact && r.Class != ClassTolerance {
		return fmt.Errorf("%w %s: class %q: want exact or tolerance", ErrBadRecord, r.Key, r.Class)
	}
	for name, v := range map[string]float64{"median_us": r.MedianUS, "gbs": r.GBs, "speedup": r.Speedup, "p": r.P, "pct_ceiling": r.PctCeiling, "pdl_us": r.PDLUS} {
		if badFigure(v) {
			return fmt.Errorf("%w %s: %s = %v", ErrBadRecord, r.Key, name, v)
		}
	}
	if r.Exact != nil {
		if err := r.Exact.validate(r.Class); err != nil {
			return fmt.Errorf("%w %s: exact alternative: %w", ErrBadRecord, r.Key, err)
		}
	}
	return nil
}

// validate checks an alternative of a record of class winnerClass.
func (a *Alternative) validate(winnerClass string) error {
	if winnerClass == ClassExact {
		return errors.New("the winner is exact already")
	}
	p, err := space.Parse(a.WinnerID)
	if err != nil {
		return err
	}
	if p != a.Params {
		return fmt.Errorf("winner %s but params %s", a.WinnerID, a.Params.ID())
	}
	if a.Class != ClassExact {
		return fmt.Errorf("class %q: want exact", a.Class)
	}
	if a.Kept && !p.IsStock() {
		return fmt.Errorf("kept stock but names %s", a.WinnerID)
	}
	for _, v := range [...]float64{a.MedianUS, a.GBs, a.PctCeiling, a.Speedup, a.P} {
		if badFigure(v) {
			return fmt.Errorf("figure %v", v)
		}
	}
	return nil
}

// badFigure reports a figure no measurement gives: negative, NaN or
// infinite.
func badFigure(v float64) bool { return v < 0 || math.IsNaN(v) || math.IsInf(v, 0) }

// sanitize replaces non-finite figures by 0.
func (r *Record) sanitize() {
	for _, f := range []*float64{&r.MedianUS, &r.LoUS, &r.HiUS, &r.GBs, &r.PctCeiling, &r.CeilingGBs, &r.ReadUS, &r.PDLUS, &r.StockMedianUS, &r.StockGBs, &r.Speedup, &r.P} {
		finite(f)
	}
	cs := make([]Candidate, len(r.Candidates))
	copy(cs, r.Candidates)
	for i := range cs {
		c := &cs[i]
		for _, f := range []*float64{&c.MedianUS, &c.LoUS, &c.HiUS, &c.GBs, &c.PctCeiling, &c.P} {
			finite(f)
		}
	}
	if r.Candidates != nil {
		r.Candidates = cs
	}
	if r.Exact != nil {
		a := *r.Exact
		for _, f := range []*float64{&a.MedianUS, &a.GBs, &a.PctCeiling, &a.Speedup, &a.P} {
			finite(f)
		}
		r.Exact = &a
	}
}

func finite(f *float64) {
	if math.IsNaN(*f) || math.IsInf(*f, 0) {
		*f = 0
	}
}
