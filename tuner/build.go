package tuner

import (
	"context"
	"errors"
	"fmt"

	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

// sourcesFor lists every candidate of a family the tuner searches that some
// arch limits allow at all (shape-specific shared memory is checked per
// job), stock first; with only, exactly those.
func sourcesFor(fam variants.Family, lim space.Limits, only []string, bulkBuilds bool) ([]source, error) {
	ok, _ := searchSpace(fam, lim, nil, bulkBuilds)
	if len(only) > 0 {
		ok = ok[:0]
		for _, id := range only {
			p, err := space.Parse(id)
			if err != nil {
				return nil, err
			}
			ok = append(ok, p)
		}
	}
	out := make([]source, 0, len(ok)+1)
	stock, err := fam.Source(space.Stock)
	if err != nil {
		return nil, err
	}
	out = append(out, source{ID: space.Stock.ID(), Params: space.Stock, Code: stock})
	for _, p := range ok {
		if p == space.Stock || (candidateFilter != nil && !candidateFilter(p)) {
			continue
		}
		code, err := fam.Source(p)
		if errors.Is(err, variants.ErrShape) && len(only) == 0 {
			continue // not a variant of this family (e.g. a=1 without staging)
		}
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", fam.Format().Name(), p.ID(), err)
		}
		out = append(out, source{ID: p.ID(), Params: p, Code: code})
	}
	return out, nil
}

// candidateFilter, when set (by tests), narrows the candidates compiled.
var candidateFilter func(space.Params) bool

// pendingBuild is a format's build that may still be compiling; done is
// closed when b and err are set.
type pendingBuild struct {
	done chan struct{}
	b    build
	err  error
}

// build is what compiling one format produced: the compiled candidates and
// those skipped at compile time with a reason.
type build struct {
	compiled []compiled
	skipped  []Candidate
}

// buildFormat compiles a family's candidates in two phases, its programs
// at compile priority prio (compileAll). Phase one
// builds every variant without a launch-bounds floor (f=0); ptxas reports
// its registers. A floor f only changes code by capping registers at
// RegsPerSM/(f·threads), so phase two builds f>0 only where that cap is
// below the f=0 count, once per distinct cap, and stops at the first floor
// that spills. Every variant skipped is listed with the reason.
func buildFormat(ctx context.Context, comp *compiler, prio int, fam variants.Family, lim space.Limits, opts Options, extra []source, total int) (build, error) {
	srcs, err := sourcesFor(fam, lim, opts.Only, compilerLacks(comp, space.Params{S: 3}) == "")
	if err != nil {
		return build{}, err
	}
	name := fam.Format().Name()
	var phase1 []source
	var skipped []Candidate
	for _, s := range srcs {
		if reason := compilerLacks(comp, s.Params); reason != "" && len(opts.Only) == 0 {
			skipped = append(skipped, Candidate{ID: s.ID, Params: s.Params, Class: string(fam.Class(s.Params)), Status: StatusPruned, Reason: reason})
			continue
		}
		if s.Params.F == 0 || len(opts.Only) > 0 {
			phase1 = append(phase1, s)
		}
	}
	phase1 = append(phase1, extra...)
	report(opts, Progress{Total: total, Stage: fmt.Sprintf("compile %d %s variants", len(phase1), name)})
	b := build{compiled: comp.compileAll(ctx, prio, phase1, nil), skipped: skipped}
	if ctx.Err() != nil {
		return b, ctx.Err()
	}
	if len(opts.Only) > 0 {
		return b, nil
	}
	// Phase two in rounds: each variant's binding floors in rising order
	// (falling register cap), one floor per variant per round, the rounds
	// parallel across variants. A floor whose kernel spills ends its
	// variant's chain: a lower cap would spill too (on the H200 about 85 %
	// of all binding floors spilled, so compiling them was most of the
	// compile time).
	type chain struct {
		base  compiled
		floor []source // binding floors, falling cap
	}
	var chains []*chain
	for _, c := range b.compiled {
		if c.Err != nil || c.ID != c.Params.ID() {
			continue
		}
		ch := &chain{base: c}
		capOf := map[int]int{} // register cap → the floor that first gives it
		floor, _ := space.KnobByLetter("f")
		for _, f := range floor.Values {
			if f == 0 {
				continue
			}
			p := c.Params
			p.F = f
			if space.Check(p, lim, 0) != nil {
				continue // excluded whatever the shape; Plan reports these
			}
			limit := regCap(lim, 32*p.W, f)
			skip := func(reason string) {
				b.skipped = append(b.skipped, Candidate{ID: p.ID(), Params: p, Class: string(fam.Class(p)), Status: StatusPruned, Reason: reason})
			}
			if c.Registers == 0 { // listed, not dropped without a word
				skip(fmt.Sprintf("not compiled: ptxas did not report the registers of %s, so whether f=%d binds is unknown", c.ID, f))
				continue
			}
			if limit >= c.Registers {
				skip(fmt.Sprintf("f=%d does not bind: its cap of %d registers ≥ the %d %s uses", f, limit, c.Registers, c.ID))
				continue
			}
			if f0, dup := capOf[limit]; dup {
				skip(fmt.Sprintf("f=%d gives the same %d-register cap as f=%d", f, limit, f0))
				continue
			}
			capOf[limit] = f
			code, err := fam.Source(p)
			if err != nil {
				return b, err
			}
			ch.floor = append(ch.floor, source{ID: p.ID(), Params: p, Code: code})
		}
		if len(ch.floor) > 0 {
			chains = append(chains, ch)
		}
	}
	for round := 0; len(chains) > 0; round++ {
		batch := make([]source, len(chains))
		for i, ch := range chains {
			batch[i] = ch.floor[0]
		}
		report(opts, Progress{Total: total, Stage: fmt.Sprintf("compile %d %s launch-bounds variants (round %d)", len(batch), name, round+1)})
		got := comp.compileAll(ctx, prio, batch, nil)
		if ctx.Err() != nil {
			return b, ctx.Err()
		}
		b.compiled = append(b.compiled, got...)
		alive := chains[:0]
		for i, ch := range chains {
			ch.floor = ch.floor[1:]
			if got[i].Err == nil && got[i].Spills > 0 {
				for _, s := range ch.floor {
					b.skipped = append(b.skipped, Candidate{ID: s.ID, Params: s.Params, Class: string(fam.Class(s.Params)), Status: StatusPruned,
						Reason: fmt.Sprintf("not compiled: %s already spills at a higher register cap", got[i].ID)})
				}
				continue
			}
			if len(ch.floor) > 0 {
				alive = append(alive, ch)
			}
		}
		chains = alive
	}
	return b, ctx.Err()
}

// regCap is the register budget per thread that __launch_bounds__(threads, f)
// leaves: the register file shared by f resident blocks, in the allocation
// unit of 8 registers per thread, at most MaxRegsPerThread.
func regCap(lim space.Limits, threads, f int) int {
	c := lim.RegsPerSM / (f * threads) &^ 7
	return min(c, lim.MaxRegsPerThread)
}

// compilerLacks says why the compiler cannot build variant p, or "": the
// bulk copies of s=3 are PTX ISA 8.0, which NVRTC 12.0 and newer compile
// (the kernel says so in an #error too, for forced variants).
func compilerLacks(comp *compiler, p space.Params) string {
	if v := comp.nvrtc.Version; p.S == 3 && v.Major < 12 {
		return fmt.Sprintf("s=3 (bulk copies) needs NVRTC 12.0 or newer; this one is %s", v)
	}
	return ""
}
