package cache

import (
	"encoding/binary"
	"errors"
	"math"
	"time"

	"github.com/gemvtune/gemvtune/space"
)

// Summary is the part of a Record an engine needs at start-up. The cache
// keeps it in a compact binary form beside the JSON record (bucket _index)
// so that loading thousands of them takes milliseconds.
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

// summaryVersion is the first byte of an encoded summary.
//
// Version 1 is u16 schema, six u16 knobs R, F, U, S, W, L, u8 flags (1 =
// tolerance class, 2 = throttled), five f64 (median µs, GB/s, % of
// ceiling, speedup, p), i64 Unix ns (0 = zero time), then u16-length
// strings decision, GPU name, source hash, tool version and cubin hash.
//
// Version 2 (written only when Params.A, the activation-path knob, is not
// 0, so that summaries of other variants stay readable by older readers)
// has A as a seventh u16 after L.
//
// Version 3 (written only when the record has an exact alternative) is
// version 2 followed by the alternative: seven u16 knobs, u8 flags (1 =
// kept stock), five f64 (median µs, GB/s, % of ceiling, speedup, p), then
// u16-length strings decision and cubin hash.
//
// Version 4 (written only when Params.G, the row-groups launch knob, or
// the exact alternative's Params.G is not 0; versions 1 to 3 are written
// exactly as before otherwise) has eight u16 knobs in ID order R, F, U, S,
// W, G, L, A, then version 1's flags, figures, time and strings, then u8 1
// if an exact alternative follows (else 0) and the alternative as in
// version 3 but with the same eight knobs.
//
// Version 5 (written only when the winner's PDL-chain time, PDLUS, is not
// 0) is version 4 followed by that time as one f64.
const (
	summaryVersion  = 1
	summaryVersion2 = 2
	summaryVersion3 = 3
	summaryVersion4 = 4
	summaryVersion5 = 5
)

var errShortSummary = errors.New("summary truncated")

// encodeSummary writes s (without its key, which is the index key).
func encodeSummary(s Summary) []byte {
	b := make([]byte, 0, 128+len(s.Exact.Decision)+len(s.Exact.CubinHash)+len(s.Decision)+len(s.GPUName)+len(s.SourceHash)+len(s.ToolVersion)+len(s.CubinHash))
	p := &s.Params
	knobs := []int{p.R, p.F, p.U, p.S, p.W, p.L}
	v5 := s.PDLUS != 0
	v4 := v5 || p.G != 0 || s.Exact.Present && s.Exact.Params.G != 0 // version 4's layout
	switch {
	case v4:
		if v5 {
			b = append(b, summaryVersion5)
		} else {
			b = append(b, summaryVersion4)
		}
		knobs = []int{p.R, p.F, p.U, p.S, p.W, p.G, p.L, p.A}
	case s.Exact.Present:
		b = append(b, summaryVersion3)
		knobs = append(knobs, p.A)
	case p.A == 0:
		b = append(b, summaryVersion)
	default:
		b = append(b, summaryVersion2)
		knobs = append(knobs, p.A)
	}
	b = binary.LittleEndian.AppendUint16(b, uint16(s.Schema))
	for _, v := range knobs {
		b = binary.LittleEndian.AppendUint16(b, uint16(v))
	}
	var flags byte
	if s.Class == ClassTolerance {
		flags |= 1
	}
	if s.Throttled {
		flags |= 2
	}
	b = append(b, flags)
	for _, f := range []float64{s.MedianUS, s.GBs, s.PctCeiling, s.Speedup, s.P} {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
	}
	var t int64
	if !s.Time.IsZero() {
		t = s.Time.UnixNano()
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(t))
	b = appendStrings(b, s.Decision, s.GPUName, s.SourceHash, s.ToolVersion, s.CubinHash)
	if v4 {
		if s.Exact.Present {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	if x := &s.Exact; x.Present {
		q := x.Params
		xk := []int{q.R, q.F, q.U, q.S, q.W, q.L, q.A}
		if v4 {
			xk = []int{q.R, q.F, q.U, q.S, q.W, q.G, q.L, q.A}
		}
		for _, v := range xk {
			b = binary.LittleEndian.AppendUint16(b, uint16(v))
		}
		var xf byte
		if x.Kept {
			xf |= 1
		}
		b = append(b, xf)
		for _, f := range [...]float64{x.MedianUS, x.GBs, x.PctCeiling, x.Speedup, x.P} {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
		}
		b = appendStrings(b, x.Decision, x.CubinHash)
	}
	if v5 {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.PDLUS))
	}
	return b
}

// appendStrings appends each string with a u16 length (cut at 65535 bytes).
func appendStrings(b []byte, strs ...string) []byte {
	for _, str := range strs {
		if len(str) > math.MaxUint16 {
			str = str[:math.MaxUint16]
		}
		b = binary.LittleEndian.AppendUint16(b, uint16(len(str)))
		b = append(b, str...)
	}
	return b
}

// decodeSummary reads what encodeSummary wrote; intern deduplicates the
// strings many summaries share (nil: no interning). It never panics.
func decodeSummary(b []byte, intern func([]byte) string) (Summary, error) {
	if intern == nil {
		intern = func(b []byte) string { return string(b) }
	}
	var r rawSummary
	if err := decodeRaw(b, &r); err != nil {
		return Summary{}, err
	}
	return r.summary(intern), nil
}

// decoder reads little-endian values; after a short read every value is 0
// and err is set.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) take(n int) []byte {
	if d.err != nil || n > len(d.b) {
		d.err = errShortSummary
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) u8() byte {
	if v := d.take(1); v != nil {
		return v[0]
	}
	return 0
}

func (d *decoder) u16() uint16 {
	if v := d.take(2); v != nil {
		return binary.LittleEndian.Uint16(v)
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if v := d.take(4); v != nil {
		return binary.LittleEndian.Uint32(v)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if v := d.take(8); v != nil {
		return binary.LittleEndian.Uint64(v)
	}
	return 0
}

func (d *decoder) bytes(n int) []byte { return d.take(n) }

// params8 reads eight u16 knobs in ID order R, F, U, S, W, G, L, A (a
// version 4 summary).
func (d *decoder) params8() space.Params {
	return space.Params{R: int(d.u16()), F: int(d.u16()), U: int(d.u16()), S: int(d.u16()), W: int(d.u16()),
		G: int(d.u16()), L: int(d.u16()), A: int(d.u16())}
}
