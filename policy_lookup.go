package gemvtune

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

// Lookup returns the variant an engine should run for format on an arch
// ("sm_90") and shape rows×cols, with the environment applied. In order:
//
//  1. GEMV_TUNE_DISABLE=1: stock ("disabled").
//  2. GEMV_FORCE_VARIANT_<FORMAT>, else GEMV_FORCE_VARIANT: that variant
//     ("forced"), or stock where its gate fails ("forced-gate-failed").
//  3. The cache: the record of this exact shape ("tuned"; "stale" if it no
//     longer matches the kernels), else the record of the same arch, format
//     and cols with the closest rows, the larger on a tie ("nearest"), if
//     its winner's gate passes for this shape; else stock ("default",
//     "untuned-arch", "no-cache" or "corrupt-cache"). Another arch's
//     winners are never used.
//  4. Knob overrides (GEMV_ROWS_PER_WARP, ...) on top ("forced", or stock
//     with "forced-gate-failed" where the result cannot run the shape).
//
// GEMV_REQUIRE_EXACT=1 turns every tolerance-class result into stock.
// A bad arch, an unknown format or a shape that the format cannot hold
// returns an error (and a stock Choice saying so).
func (p *Policy) Lookup(arch, format string, rows, cols int) (Choice, error) {
	if _, err := space.ParseArch(arch); err != nil {
		return invalid(err)
	}
	fi := p.families[format]
	if fi == nil {
		return invalid(fmt.Errorf("%w %q: accepted %s", variants.ErrUnknownFormat, format, strings.Join(variants.FormatNames, ", ")))
	}
	sh := space.Shape{Rows: rows, Cols: cols}
	if err := sh.Validate(); err != nil {
		return invalid(err)
	}
	if err := fi.fam.Gate(space.Stock, rows, cols); err != nil {
		return invalid(fmt.Errorf("shape %s for %s: %w", sh, format, err))
	}
	if p.env.disable {
		return stock(SourceDisabled, "GEMV_TUNE_DISABLE=1: stock kernel everywhere"), nil
	}
	g := p.groups[groupKey{arch, format}]
	if f := p.env.forced(format); f != nil {
		why := f.env
		if len(p.env.overrides) > 0 {
			why += " with " + p.env.overrideText
		}
		return p.variant(fi, g, p.env.apply(f.params), why, rows, cols), nil
	}
	c := p.fromCache(fi, g, arch, format, sh)
	if len(p.env.overrides) > 0 {
		if q := p.env.apply(c.Params); q != c.Params {
			why := p.env.overrideText + " on top of " + c.ID + " (" + c.Source + ")"
			c = p.variant(fi, g, q, why, rows, cols)
		}
	}
	return c, nil
}

// variant checks a forced or overridden variant q against the gate and
// GEMV_REQUIRE_EXACT; why names the variables behind it.
func (p *Policy) variant(fi *famInfo, g *group, q space.Params, why string, rows, cols int) Choice {
	if err := fi.fam.Gate(q, rows, cols); err != nil {
		return stock(SourceForcedGateFailed, why+": "+idOf(q)+" cannot run "+space.Shape{Rows: rows, Cols: cols}.String()+": "+err.Error())
	}
	class := string(fi.fam.Class(q))
	if p.env.requireExact && class != cache.ClassExact {
		return stock(SourceForcedGateFailed, why+": "+idOf(q)+" is "+class+"-class and GEMV_REQUIRE_EXACT=1")
	}
	c := Choice{ID: idOf(q), Params: q, Class: class, Source: SourceForced, Reason: why, Layout: q.L}
	if g != nil {
		c.Cubin = g.cubins[q]
	}
	return c
}

// fromCache is step 3 of Lookup.
func (p *Policy) fromCache(fi *famInfo, g *group, arch, format string, sh space.Shape) Choice {
	if p.cacheSource != "" {
		return stock(p.cacheSource, "cache "+p.CachePath+" unusable: "+p.CacheErr.Error())
	}
	key := cache.Key{Arch: arch, Format: format, Rows: sh.Rows, Cols: sh.Cols}
	if why, ok := p.bad[key]; ok {
		return stock(SourceCorruptCache, "the cache entry for this shape is unreadable: "+why)
	}
	if g == nil {
		if !p.archs[arch] {
			return stock(SourceUntunedArch, "the cache has no records for "+arch+" (other archs' winners are never used)")
		}
		return stock(SourceDefault, "nothing tuned for "+format+" on "+arch)
	}
	if e := p.byKey[key]; e != nil {
		switch {
		case e.stale:
			return stock(SourceStale, "the record for this shape is stale: "+e.staleWhy)
		case p.env.requireExact && e.sum.Class != cache.ClassExact:
			return stock(SourceDefault, "the tuned winner "+idOf(e.sum.Params)+" is "+e.sum.Class+"-class and GEMV_REQUIRE_EXACT=1")
		}
		if err := fi.fam.Gate(e.sum.Params, sh.Rows, sh.Cols); err != nil {
			return stock(SourceDefault, "the tuned winner "+idOf(e.sum.Params)+" fails this build's gate: "+err.Error())
		}
		return p.fromEntry(g, e, SourceTuned, "tuned for this shape on "+e.sum.GPUName+": "+e.sum.Decision)
	}
	e := p.nearest(g.byCols[sh.Cols], sh.Rows)
	if e == nil {
		return stock(SourceDefault, "no usable tuned "+format+" record on "+arch+" with "+itoa(sh.Cols)+" cols")
	}
	if err := fi.fam.Gate(e.sum.Params, sh.Rows, sh.Cols); err != nil {
		return stock(SourceDefault, "nearest tuned shape "+e.sum.Shape().String()+" has winner "+idOf(e.sum.Params)+", whose gate fails here: "+err.Error())
	}
	return p.fromEntry(g, e, SourceNearest, "nearest tuned shape "+e.sum.Shape().String()+" (same cols, closest rows) on "+e.sum.GPUName+": "+e.sum.Decision)
}

// nearest returns the usable entry with the closest rows (the larger on a
// tie); list is sorted by rows.
func (p *Policy) nearest(list []*entry, rows int) *entry {
	usable := func(e *entry) bool { return !p.env.requireExact || e.sum.Class == cache.ClassExact }
	i := 0
	for lo, hi := 0, len(list); lo < hi; {
		m := int(uint(lo+hi) >> 1)
		if list[m].sum.Rows < rows {
			lo = m + 1
		} else {
			hi = m
		}
		i = lo
	}
	var below, above *entry
	for j := i - 1; j >= 0; j-- {
		if usable(list[j]) {
			below = list[j]
			break
		}
	}
	for j := i; j < len(list); j++ {
		if usable(list[j]) {
			above = list[j]
			break
		}
	}
	switch {
	case below == nil:
		return above
	case above == nil:
		return below
	case rows-below.sum.Rows < above.sum.Rows-rows:
		return below
	}
	return above
}

func (p *Policy) fromEntry(g *group, e *entry, source, reason string) Choice {
	s := e.sum
	return Choice{
		ID: idOf(s.Params), Params: s.Params, Class: s.Class, Source: source, Reason: reason,
		Layout: s.Params.L, Cubin: g.cubins[s.Params],
		Evidence: &Evidence{MedianUS: s.MedianUS, GBs: s.GBs, PctCeiling: s.PctCeiling, Speedup: s.Speedup,
			P: s.P, GPUName: s.GPUName, Time: s.Time, TunedShape: s.Shape().String()},
	}
}

func stock(source, reason string) Choice {
	return Choice{ID: space.StockAlias, Params: space.Stock, Class: cache.ClassExact, Source: source, Reason: reason}
}

func invalid(err error) (Choice, error) {
	return stock(SourceDefault, "invalid lookup: "+err.Error()), err
}

// idOf returns "v1" for the stock kernel, else the canonical ID.
func idOf(q space.Params) string {
	if q.IsStock() {
		return space.StockAlias
	}
	return q.ID()
}

func itoa(n int) string { return strconv.Itoa(n) }
