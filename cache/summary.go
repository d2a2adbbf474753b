package cache

import (
	"time"

	"github.com/gemvtune/gemvtune/space"
)

// Summary is the part of a Record an engine needs at start-up. The cache
// keeps every record's summary in one compact binary index beside the JSON
// records (table.go), so that loading thousands of them takes a
// millisecond or two.
type Summary struct {
	Key
	Schema      int
	Params      space.Params
	Class       string
	Decision    string
	MedianUS    float64
	GBs         float64
	PctCeiling  float64
	Speedup     float64
	P           float64
	Throttled   bool
	Time        time.Time
	GPUName     string
	SourceHash  string
	ToolVersion string
	CubinHash   string
	// PDLUS is the winner's µs per launch in a chain of programmatic
	// dependent launches (Record.PDLUS); 0 when not measured.
	PDLUS float64
	// PDLShared and LaunchPDL are the record's (Record.PDLShared,
	// Record.LaunchPDL).
	PDLShared int
	LaunchPDL bool
	// Exact is the record's exact alternative (Record.Exact); its Present
	// is false when there is none.
	Exact ExactSummary
}

// ExactSummary is what an engine needs of a record's exact alternative
// (Record.Exact): the variant, the decision and its evidence, the cubin.
// The zero value (Present false) means the record has none.
type ExactSummary struct {
	Present    bool
	Params     space.Params // space.Stock when Kept
	Kept       bool         // no exact variant beat stock: stock is the exact choice
	Decision   string
	MedianUS   float64
	GBs        float64
	PctCeiling float64
	Speedup    float64
	P          float64
	CubinHash  string
}

// Summary returns r's summary.
func (r Record) Summary() Summary {
	return Summary{
		Key: r.Key, Schema: r.Schema, Params: r.Params, Class: r.Class, Decision: r.Decision,
		MedianUS: r.MedianUS, GBs: r.GBs, PctCeiling: r.PctCeiling, Speedup: r.Speedup, P: r.P,
		Throttled: r.Throttled, Time: r.Time, GPUName: r.GPUName, SourceHash: r.SourceHash, PDLUS: r.PDLUS,
		PDLShared: r.PDLShared, LaunchPDL: r.LaunchPDL,
		ToolVersion: r.ToolVersion, CubinHash: r.CubinHash, Exact: r.Exact.summary(),
	}
}

func (a *Alternative) summary() ExactSummary {
	if a == nil {
		return ExactSummary{}
	}
	return ExactSummary{Present: true, Params: a.Params, Kept: a.Kept, Decision: a.Decision, MedianUS: a.MedianUS,
		GBs: a.GBs, PctCeiling: a.PctCeiling, Speedup: a.Speedup, P: a.P, CubinHash: a.CubinHash}
}

// Stale is Record.Stale for a summary.
func (s Summary) Stale(currentSourceHash, toolVersion string) (stale bool, why string) {
	return staleness(s.Schema, s.SourceHash, s.ToolVersion, currentSourceHash, toolVersion)
}
