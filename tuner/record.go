package tuner

import (
	"fmt"
	"strings"
	"time"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/space"
)

// Record is the cache's record of decision d,
// with its exact alternative when the winner is not exact (the cubins are
// stored beside it by Put).
func (d Decision) Record() cache.Record {
	w := d.Winner
	params := w.Params
	if params == (space.Params{}) {
		params = space.Stock // a decision always names a kernel; none means stock
	}
	id := w.ID
	if id == "" {
		id = params.ID()
	}
	class := w.Class
	if class == "" && params.IsStock() {
		class = cache.ClassExact // stock is exact by definition
	}
	r := cache.Record{
		Schema:        cache.SchemaVersion,
		Key:           cache.Key{Arch: d.Arch, Format: d.Format, Rows: d.Rows, Cols: d.Cols},
		WinnerID:      id,
		Params:        params,
		Class:         class,
		Layout:        params.L,
		Decision:      d.Reason,
		MedianUS:      w.MedianUS,
		LoUS:          w.LoUS,
		HiUS:          w.HiUS,
		GBs:           w.GBs,
		PctCeiling:    w.PctCeiling,
		CeilingGBs:    d.CeilingGBs,
		ReadUS:        d.ReadUS,
		PDLUS:         w.PDLUS,
		PDLShared:     w.PDLShared,
		LaunchPDL:     w.LaunchPDL,
		StockMedianUS: d.Stock.MedianUS,
		StockGBs:      d.Stock.GBs,
		Speedup:       d.Speedup,
		P:             d.P,
		Samples:       len(w.Samples),
		Registers:     w.Registers,
		BlocksPerSM:   w.BlocksPerSM,
		GPUName:       d.GPUName,
		GPUUUID:       d.GPUUUID,
		Driver:        d.Driver,
		NVRTC:         d.NVRTC,
		SourceHash:    d.SourceHash,
		ToolVersion:   cache.ToolVersion,
		Time:          d.Time,
		Throttled:     d.Throttled,
		ClockNotes:    clockNotes(d.Before, d.After),
		Token:         d.Token,
	}
	if r.Time.IsZero() {
		r.Time = time.Now().UTC()
	}
	if x := d.Exact; x != nil && class != cache.ClassExact {
		xp := x.Winner.Params
		if xp == (space.Params{}) || x.Kept {
			xp = space.Stock // kept: stock is the exact choice
		}
		xid := x.Winner.ID
		if xp.IsStock() {
			xid = space.StockAlias
		} else if xid == "" {
			xid = xp.ID()
		}
		r.Exact = &cache.Alternative{
			WinnerID: xid, Params: xp, Class: cache.ClassExact, Kept: x.Kept, Decision: x.Reason,
			MedianUS: x.Winner.MedianUS, GBs: x.Winner.GBs, PctCeiling: x.Winner.PctCeiling,
			Speedup: x.Speedup, P: x.P,
		}
	}
	for _, c := range d.Candidates {
		var p float64
		if c.Status == StatusOK && len(c.Samples) > 0 && len(d.Stock.Samples) > 0 && !c.Params.IsStock() {
			p = compare(d.Stock.Samples, c.Samples, 0.05)
		}
		r.Candidates = append(r.Candidates, cache.Candidate{
			ID: c.ID, Params: c.Params, Class: c.Class, Status: string(c.Status), Reason: c.Reason,
			Registers: c.Registers, BlocksPerSM: c.BlocksPerSM,
			MedianUS: c.MedianUS, LoUS: c.LoUS, HiUS: c.HiUS, GBs: c.GBs, PctCeiling: c.PctCeiling,
			Samples: len(c.Samples), P: p,
		})
	}
	return r
}

// clockNotes describes the NVML snapshots around a measurement in words.
func clockNotes(before, after Clocks) string {
	zero := func(c Clocks) bool { return c.SMMHz == 0 && c.MemMHz == 0 && c.TempC == 0 && len(c.Reasons) == 0 }
	if zero(before) && zero(after) {
		return ""
	}
	one := func(c Clocks) string {
		s := fmt.Sprintf("SM %d MHz, memory %d MHz, %d °C", c.SMMHz, c.MemMHz, c.TempC)
		if len(c.Reasons) > 0 {
			s += ", clock events: " + strings.Join(c.Reasons, " ")
		}
		return s
	}
	return "before: " + one(before) + "; after: " + one(after)
}

// Store puts decision d into db as its record, with the winner's cubin and
// the exact alternative's where it has one, in one transaction: what
// autotune does with each finished job, for a library user too.
func Store(db *cache.DB, d Decision) error {
	rec := d.Record()
	var exactCubin []byte
	if rec.Exact != nil && d.Exact != nil && !d.Exact.Kept {
		exactCubin = d.Exact.Cubin
	}
	if err := db.Put(rec, d.Cubin, exactCubin); err != nil {
		return fmt.Errorf("saving %s %s %s: %w", d.Arch, d.Format, d.Shape(), err)
	}
	return nil
}
