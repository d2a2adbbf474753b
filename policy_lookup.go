package gemvtune

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

// Lookup returns the variant an engine should run for format on an arch
// ("sm_90") and shape rows×cols, for the GPU of Options.GPUName, with the
// environment applied. In order:
//
//  1. GEMV_TUNE_DISABLE=1: stock ("disabled").
//  2. GEMV_FORCE_VARIANT_<FORMAT>, else GEMV_FORCE_VARIANT: that variant
//     ("forced"), or stock where it cannot run this shape on this arch
//     ("forced-gate-failed").
//  3. The cache, the GPU's own model first: the record of this exact shape
//     ("tuned"; "stale" if it no longer matches the kernels), else the
//     record of the same arch, model, format and cols with the closest
//     rows, the larger on a tie ("nearest"), if its winner's gate passes
//     for this shape. Where that gives stock, the same from another GPU
//     model of the arch, by name ("other-model", its reason naming both
//     models; stock instead with GEMV_REQUIRE_SAME_MODEL=1). Else stock
//     ("default", "untuned-arch", "no-cache" or "corrupt-cache"). Another
//     arch's winners are never used.
//  4. Knob overrides (GEMV_ROWS_PER_WARP, ...) on top ("forced", or stock
//     with "forced-gate-failed" where the result cannot run the shape).
//
// GEMV_REQUIRE_EXACT=1 allows only exact-class results. A tuned or nearest
// record whose winner is not exact gives its exact alternative (the best
// exact variant the tuner measured against stock, Summary.Exact) with the
// same source, or stock with the alternative's reason when no exact variant
// beat stock; a record without one gives stock ("default"), and the nearest
// rule skips such records. Forced and overridden tolerance-class variants
// give stock ("forced-gate-failed").
// A bad arch, an unknown format or a shape that the format cannot hold
// returns an error (and a stock Choice saying so).
func (p *Policy) Lookup(arch, format string, rows, cols int) (Choice, error) {
	return p.lookupModel(arch, p.model, format, rows, cols)
}

// LookupGPU is Lookup for the GPU named gpu (as NVML names it, e.g.
// "NVIDIA H20"; "" for unknown) instead of Options.GPUName.
func (p *Policy) LookupGPU(arch, gpu, format string, rows, cols int) (Choice, error) {
	model := ""
	if gpu != "" {
		model = cache.NormalizeModel(gpu)
	}
	return p.lookupModel(arch, model, format, rows, cols)
}

func (p *Policy) lookupModel(arch, model, format string, rows, cols int) (Choice, error) {
	at := p.find(arch, model, format, rows, cols)
	if at.j < 0 {
		return p.lookup(arch, model, format, rows, cols)
	}
	// A key of the first group in order that the cache holds: its answer
	// never changes, so the first one is kept and later lookups copy it
	// without allocating. Lookups that name no model keep theirs apart.
	slot := &at.g.memo[at.j]
	if model == "" {
		slot = &at.g.memoAny[at.j]
	}
	if m := slot.Load(); m != nil {
		return m.c, m.err
	}
	c, err := p.lookup(arch, model, format, rows, cols)
	slot.Store(&memo{c, err})
	return c, err
}

// place is where find found a key in the first group of the lookup's
// order: the group and its index in g.keys (-1: not there).
type place struct {
	g *group
	j int
}

// find looks up the record of exactly this key in the first group of the
// lookup's order.
func (p *Policy) find(arch, model, format string, rows, cols int) place {
	fi := p.families[format]
	if fi == nil || rows < 1 || cols < 1 || rows > space.MaxDim || cols > space.MaxDim {
		return place{j: -1}
	}
	g, _, ok := p.order(arch, model, fi).at(0)
	if !ok {
		return place{j: -1}
	}
	return place{g: g, j: g.find(p, rows, cols)}
}

// lookup is Lookup without the memo.
func (p *Policy) lookup(arch, model, format string, rows, cols int) (Choice, error) {
	a, err := space.ParseArch(arch)
	if err != nil {
		return invalid(err)
	}
	c, err := p.choose(a, arch, model, format, rows, cols)
	if err == nil {
		c.PDL = a.Major >= 9 // every family's kernel calls griddepcontrol there
		fam := p.families[format].fam
		c.Launch = fam.Launch(c.Params, rows, cols)
		c.PDLSharedBytes = c.Launch.SharedBytes
		if e := c.Evidence; c.PDL && c.Source == SourceTuned && e != nil && e.PDLShared > 0 {
			// Measured at exactly this shape, so for exactly this grid.
			c.PDLSharedBytes = max(c.Launch.SharedBytes, uint32(e.PDLShared))
		}
		c.ErrorBound = fam.ErrorBound(c.Params)
	}
	return c, err
}

// order is format's groups on one arch in the order lookups prefer them:
// the GPU's own model first, then the others by name. It is a value, so
// walking it allocates nothing.
type order struct {
	a     *archInfo
	fi    *famInfo
	model string // "" : unknown, every model counts as the GPU's own
	own   *group // the model's own group, or nil
}

func (p *Policy) order(arch, model string, fi *famInfo) order {
	o := order{a: p.archs[arch], fi: fi, model: model}
	if o.a != nil && model != "" {
		if mi := o.a.model(model); mi != nil {
			o.own = mi.groups[fi.idx]
		}
	}
	return o
}

// at returns the i-th group in order, whether it is the GPU's own, and
// false past the last.
func (o order) at(i int) (g *group, own, ok bool) {
	if o.a == nil {
		return nil, false, false
	}
	if o.own != nil {
		if i == 0 {
			return o.own, true, true
		}
		i--
	}
	for _, mi := range o.a.models {
		if g := mi.groups[o.fi.idx]; g != nil && g != o.own {
			if i == 0 {
				return g, o.model == "", true
			}
			i--
		}
	}
	return nil, false, false
}

// choose is lookup's choice for a valid arch.
func (p *Policy) choose(a space.Arch, arch, model, format string, rows, cols int) (Choice, error) {
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
	o := p.order(arch, model, fi)
	if f := p.env.forced(format); f != nil {
		why := f.env
		if len(p.env.overrides) > 0 {
			why += " with " + p.env.overrideText
		}
		return p.variant(fi, a, o, p.env.apply(f.params), why, rows, cols), nil
	}
	c := p.fromCache(o, a, arch, format, sh)
	if len(p.env.overrides) > 0 {
		if q := p.env.apply(c.Params); q != c.Params {
			why := p.env.overrideText + " on top of " + c.ID + " (" + c.Source + ")"
			c = p.variant(fi, a, o, q, why, rows, cols)
		}
	}
	return c, nil
}

// admit is the one check every candidate of a lookup passes before it is
// returned, whatever its origin (forced, overridden, tuned, nearest, an exact
// alternative): its family's gate for the shape and the arch's limits. The
// error reads after the variant's ID ("fails its gate for 4096x100: ...").
func admit(fi *famInfo, a space.Arch, q space.Params, sh space.Shape) error {
	if err := fi.fam.Gate(q, sh.Rows, sh.Cols); err != nil {
		return fmt.Errorf("fails its gate for %s: %w", sh, err)
	}
	if err := space.ArchAllows(a, q); err != nil {
		return fmt.Errorf("cannot run on %s: %w", a, err)
	}
	return nil
}

// variant checks a forced or overridden variant q against the gate, the
// arch and GEMV_REQUIRE_EXACT; why names the variables behind it. A cubin
// of q stored for any model of the arch serves.
func (p *Policy) variant(fi *famInfo, a space.Arch, o order, q space.Params, why string, rows, cols int) Choice {
	if err := admit(fi, a, q, space.Shape{Rows: rows, Cols: cols}); err != nil {
		return stock(SourceForcedGateFailed, why+": "+idOf(q)+" "+err.Error())
	}
	class := string(fi.fam.Class(q))
	if p.env.requireExact && class != cache.ClassExact {
		return stock(SourceForcedGateFailed, why+": "+idOf(q)+" is "+class+"-class and GEMV_REQUIRE_EXACT=1")
	}
	c := Choice{ID: idOf(q), Params: q, Class: class, Source: SourceForced, Reason: why, Layout: q.L}
	for i := 0; c.Cubin == nil; i++ {
		g, _, ok := o.at(i)
		if !ok {
			break
		}
		c.Cubin = p.groupCubin(g, q)
	}
	return c
}

// fromCache is step 3 of Lookup: the GPU's own group first, then, where
// it gives stock, another model's.
func (p *Policy) fromCache(o order, a space.Arch, arch, format string, sh space.Shape) Choice {
	switch p.cacheSource {
	case "":
	case SourceBusyCache:
		return stock(p.cacheSource, "cache "+p.CachePath+" was busy at start-up (a writer held it past the wait; it is not damaged): "+p.CacheErr.Error())
	default:
		return stock(p.cacheSource, "cache "+p.CachePath+" unusable: "+p.CacheErr.Error())
	}
	if len(p.bad) > 0 {
		if why, ok := p.badEntry(arch, o.model, format, sh); ok {
			return stock(SourceCorruptCache, "the cache entry for this shape is unreadable: "+why)
		}
	}
	var first Choice
	for i := 0; ; i++ {
		g, own, ok := o.at(i)
		switch {
		case !ok && i == 0 && p.archs[arch] == nil:
			return stock(SourceUntunedArch, "the cache has no records for "+arch+" (other archs' winners are never used)")
		case !ok && i == 0:
			return stock(SourceDefault, "nothing tuned for "+format+" on "+arch)
		case !ok:
			if o.own == nil && o.model != "" {
				first.Reason = "nothing usable tuned on " + o.model + " or the other models of " + arch + " (" +
					o.models() + "): " + first.Reason
			}
			return first
		case !own && p.env.requireSameModel:
			if i == 0 {
				return stock(SourceDefault, "GEMV_REQUIRE_SAME_MODEL=1: "+format+" on "+arch+" was tuned on "+
					o.models()+" only, not on "+modelName(o.model))
			}
			return first
		}
		c := p.fromGroup(o.fi, a, g, arch, format, sh)
		if !c.Params.IsStock() || c.Evidence != nil {
			if !own {
				c.Reason = "nothing usable tuned on " + o.model + "; from " + g.model + ": " + c.Reason
				c.Source = SourceOtherModel
			}
			return c
		}
		if i == 0 {
			first = c
		}
	}
}

// badEntry says why the entry of (arch, model, format, shape) could not be
// read, if it could not; with no model named, any model's entry counts.
func (p *Policy) badEntry(arch, model, format string, sh space.Shape) (string, bool) {
	if model != "" {
		why, ok := p.bad[cache.Key{Arch: arch, Model: model, Format: format, Rows: sh.Rows, Cols: sh.Cols}]
		return why, ok
	}
	for k, why := range p.bad {
		if k.Arch == arch && k.Format == format && k.Rows == sh.Rows && k.Cols == sh.Cols {
			return why, true
		}
	}
	return "", false
}

// models lists the models of the order's groups, in order.
func (o order) models() string {
	var names []string
	for i := 0; ; i++ {
		g, _, ok := o.at(i)
		if !ok {
			return strings.Join(names, ", ")
		}
		names = append(names, g.model)
	}
}

func modelName(model string) string {
	if model == "" {
		return "an unnamed GPU"
	}
	return model
}

// fromGroup is the choice the records of one group give.
func (p *Policy) fromGroup(fi *famInfo, a space.Arch, g *group, arch, format string, sh space.Shape) Choice {
	j := g.find(p, sh.Rows, sh.Cols)
	if j >= 0 {
		m := &g.keys[j]
		s := p.t.Summary(int(m.i))
		switch {
		case !m.current:
			return stock(SourceStale, "the record for this shape is stale: "+g.staleWhy[m.i])
		case p.env.requireExact && s.Class != cache.ClassExact && s.Exact.Present:
			return p.exactChoice(fi, a, g, &s, sh, SourceTuned, "for this shape")
		case p.env.requireExact && s.Class != cache.ClassExact:
			return stock(SourceDefault, "the tuned winner "+idOf(s.Params)+" is "+s.Class+"-class and GEMV_REQUIRE_EXACT=1")
		}
		if err := admit(fi, a, s.Params, sh); err != nil {
			return stock(SourceDefault, "the tuned winner "+idOf(s.Params)+" "+err.Error())
		}
		return p.fromSummary(g, &s, SourceTuned, "tuned for this shape on "+s.GPUName+": "+s.Decision)
	}
	j = p.nearest(g, sh.Rows, sh.Cols)
	if j < 0 {
		return stock(SourceDefault, "no usable tuned "+format+" record on "+arch+" with "+itoa(sh.Cols)+" cols")
	}
	tunedRows := int(g.keys[j].key & 0xffffffff)
	if c := g.near[j].Load(); c != nil && admit(fi, a, c.Params, sh) == nil {
		return atRows(*c, tunedRows, sh.Rows)
	}
	s := p.t.Summary(int(g.keys[j].i))
	if p.env.requireExact && s.Class != cache.ClassExact {
		// nearest only returns such a record when it has an exact alternative.
		c := p.exactChoice(fi, a, g, &s, sh, SourceNearest, "at the nearest tuned shape "+s.Shape().String()+" (same cols, closest rows)")
		if c.Source == SourceNearest {
			g.near[j].Store(&c)
		}
		return atRows(c, tunedRows, sh.Rows)
	}
	if err := admit(fi, a, s.Params, sh); err != nil {
		return stock(SourceDefault, "nearest tuned shape "+s.Shape().String()+" has winner "+idOf(s.Params)+", which "+err.Error())
	}
	c := p.fromSummary(g, &s, SourceNearest, "nearest tuned shape "+s.Shape().String()+" (same cols, closest rows) on "+s.GPUName+": "+s.Decision)
	g.near[j].Store(&c)
	return atRows(c, tunedRows, sh.Rows)
}

// atRows adapts a choice taken from a record tuned at tunedRows to rows:
// knob g (row groups per block) was chosen so that the grid was one wave
// at the tuned shape, so the adapted g keeps that grid size,
// g' = ceil(ceil(rows/(r·w)) / grid) (0 when one group per block is
// enough, at most space.MaxRowGroups). A staged kernel is the same for
// every g, so the stored cubin still applies; without g the choice is
// returned as it is.
func atRows(c Choice, tunedRows, rows int) Choice {
	q := c.Params
	per := q.R * q.W
	if q.G == 0 || rows == tunedRows || per <= 0 {
		return c
	}
	grid := ceilDiv(ceilDiv(tunedRows, per), q.G)
	g := min(ceilDiv(ceilDiv(rows, per), grid), space.MaxRowGroups)
	if g < 2 {
		g = 0
	}
	if g == q.G {
		return c
	}
	was := c.ID
	q.G = g
	c.Params, c.ID = q, idOf(q)
	c.Reason += "; " + was + " with g " + itoa(g) + " for " + itoa(rows) + " rows (the tuned grid of " + itoa(grid) + " blocks)"
	return c
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// cubinKey is the variant whose cubin q runs: a staged variant (s≥1) is
// one kernel for every knob g (variants.Family.Source), so its g is
// dropped; an unstaged one is built with the row-group loop only when
// g > 0, so it keeps its own.
func cubinKey(q space.Params) space.Params {
	if q.S >= 1 {
		q.G = 0
	}
	return q
}

// find returns the index in g.keys of shape rows×cols (the last in index
// order if the index named it twice), or -1.
func (g *group) find(p *Policy, rows, cols int) int {
	g.init(p)
	k := shapeKey(rows, cols)
	ks := g.keys
	i, _ := slices.BinarySearchFunc(ks, k+1, cmpKey)
	if i == 0 || ks[i-1].key != k {
		return -1
	}
	return i - 1
}

// nearest returns the index in g.keys of the current, usable record with
// cols columns and the closest rows (the larger on a tie), or -1.
func (p *Policy) nearest(g *group, rows, cols int) int {
	g.init(p)
	ks := g.keys
	usable := func(j int) bool { return ks[j].current && (!p.env.requireExact || ks[j].exact || ks[j].alt) }
	lo, _ := slices.BinarySearchFunc(ks, shapeKey(0, cols), cmpKey)
	if lo == len(ks) || ks[lo].key>>32 != uint64(cols) {
		return -1 // no record with these cols
	}
	hi, _ := slices.BinarySearchFunc(ks[lo:], shapeKey(0, cols+1), cmpKey)
	hi += lo
	i, _ := slices.BinarySearchFunc(ks[lo:hi], shapeKey(rows, cols), cmpKey)
	i += lo
	below, above := -1, -1
	for j := i - 1; j >= lo; j-- {
		if usable(j) {
			below = j
			break
		}
	}
	for j := i; j < hi; j++ {
		if usable(j) {
			above = j
			break
		}
	}
	switch {
	case below < 0:
		return above
	case above < 0:
		return below
	case rows-int(ks[below].key&0xffffffff) < int(ks[above].key&0xffffffff)-rows:
		return below
	}
	return above
}

func cmpKey(m member, k uint64) int { return cmp.Compare(m.key, k) }

// groupCubin returns the stored cubin of q's current record in g (read on
// first use), or nil.
func (p *Policy) groupCubin(g *group, q space.Params) []byte {
	g.init(p)
	s := g.cubins[q]
	if s == nil {
		s = g.cubins[cubinKey(q)]
	}
	if s == nil {
		return nil
	}
	s.once.Do(func() { s.data, _ = cache.LoadCubin(p.cubinPath, s.ref) })
	return s.data
}

// fromSummary is the choice of the record s, a current record of g.
func (p *Policy) fromSummary(g *group, s *cache.Summary, source, reason string) Choice {
	id, ok := g.ids[s.Params]
	if !ok {
		id = idOf(s.Params)
	}
	return Choice{
		ID: id, Params: s.Params, Class: s.Class, Source: source, Reason: reason,
		Layout: s.Params.L, Cubin: p.groupCubin(g, s.Params),
		Evidence: &Evidence{MedianUS: s.MedianUS, GBs: s.GBs, PctCeiling: s.PctCeiling, Speedup: s.Speedup,
			P: s.P, PDLUS: s.PDLUS, PDLShared: s.PDLShared, LaunchPDL: s.LaunchPDL, GPUName: s.GPUName, Time: s.Time,
			TunedShape: s.Shape().String()},
	}
}

// exactChoice is the choice under GEMV_REQUIRE_EXACT=1 from record s of g,
// whose winner is not exact, through its exact alternative: that variant
// (source), or stock (source) when no exact variant beat stock, or stock
// ("default") when the alternative's gate fails for sh. where says which
// record, e.g. "for this shape".
func (p *Policy) exactChoice(fi *famInfo, a space.Arch, g *group, s *cache.Summary, sh space.Shape, source, where string) Choice {
	x := &s.Exact
	ev := &Evidence{MedianUS: x.MedianUS, GBs: x.GBs, PctCeiling: x.PctCeiling, Speedup: x.Speedup, P: x.P,
		GPUName: s.GPUName, Time: s.Time, TunedShape: s.Shape().String()}
	winner := "the tuned winner " + idOf(s.Params) + " is " + s.Class + "-class"
	if x.Kept {
		c := stock(source, "stock is the best exact variant "+where+" because GEMV_REQUIRE_EXACT=1 ("+winner+
			" and no exact variant beat stock on "+s.GPUName+": "+x.Decision+")")
		c.Evidence = ev
		return c
	}
	id, ok := g.ids[x.Params]
	if !ok {
		id = idOf(x.Params)
	}
	if err := admit(fi, a, x.Params, sh); err != nil {
		return stock(SourceDefault, "the best exact variant "+where+", "+id+" (GEMV_REQUIRE_EXACT=1; "+winner+
			"), "+err.Error())
	}
	return Choice{
		ID: id, Params: x.Params, Class: cache.ClassExact, Source: source,
		Reason: id + " is the best exact variant " + where + " because GEMV_REQUIRE_EXACT=1 (" + winner +
			"), measured on " + s.GPUName + ": " + x.Decision,
		Layout: x.Params.L, Cubin: p.altCubin(g, x.Params), Evidence: ev,
	}
}

// altCubin returns the stored cubin of exact alternative q in g: the one
// stored with an alternative, else a winner's of the same variant, or nil.
func (p *Policy) altCubin(g *group, q space.Params) []byte {
	s := g.altCubins[q]
	if s == nil {
		return p.groupCubin(g, q)
	}
	s.once.Do(func() { s.data, _ = cache.LoadCubin(p.cubinPath, s.ref) })
	if s.data == nil {
		return p.groupCubin(g, q)
	}
	return s.data
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
