package space

import (
	"errors"
	"fmt"
)

// MaxInFlight is the largest r × u a variant may have: the chunk loads one
// lane keeps in flight per step. Beyond it the weight registers alone exceed
// what a thread can hold and the kernel spills.
const MaxInFlight = 16

// MinRegsPerThread is the smallest register budget per thread a launch-bounds
// floor may leave; below it even the plain kernel spills.
const MinRegsPerThread = 32

// ErrExcluded is wrapped by every error Check returns.
var ErrExcluded = errors.New("variant excluded")

// Exclusion is a point of the space that Check rejected, with its reason in
// words.
type Exclusion struct {
	Params
	Reason string
}

// Check reports whether variant p can run on an architecture with limits lim
// when it needs smemBytes of dynamic shared memory per block. It returns nil
// or an error (wrapping ErrExcluded) that explains the exclusion in words,
// e.g. "smem 112 KB > 99 KB opt-in cap of sm_86".
func Check(p Params, lim Limits, smemBytes int) error {
	if reason := exclusionReason(p, lim, smemBytes); reason != "" {
		return fmt.Errorf("%w: %s: %s", ErrExcluded, p.ID(), reason)
	}
	return nil
}

// ArchAllows reports whether the instructions variant p is built from
// exist on arch a (s=2 needs cp.async, sm_80+; s=3 bulk copies, sm_90+);
// the error says why not. It is the arch part of Check, for variants that
// are forced rather than searched.
func ArchAllows(a Arch, p Params) error {
	if why := archReason(a, p); why != "" {
		return fmt.Errorf("%w: %s: %s", ErrExcluded, p.ID(), why)
	}
	return nil
}

func archReason(a Arch, p Params) string {
	switch {
	case p.S == 2 && a.Major < 8:
		return fmt.Sprintf("s=2 copies weights with cp.async, which %s lacks (sm_80 and newer)", a)
	case p.S == 3 && a.Major < 9:
		return fmt.Sprintf("s=3 copies weights with bulk copies (cp.async.bulk, TMA), which %s lacks (sm_90 and newer)", a)
	}
	return ""
}

func exclusionReason(p Params, lim Limits, smem int) string {
	if err := p.Validate(); err != nil {
		return err.Error()
	}
	threads := 32 * p.W
	if threads > lim.MaxThreadsPerBlock {
		return fmt.Sprintf("w=%d gives %d threads/block > %d max on %s", p.W, threads, lim.MaxThreadsPerBlock, lim.Arch)
	}
	if a, err := ParseArch(lim.Arch); err == nil {
		if why := archReason(a, p); why != "" {
			return why
		}
	}
	if p.R*p.U > MaxInFlight && p.S < 2 { // s=2 and s=3 keep them in shared memory: the smem rules below bound it
		return fmt.Sprintf("r=%d × u=%d = %d chunk loads in flight per lane > %d (weight registers would spill)", p.R, p.U, p.R*p.U, MaxInFlight)
	}
	if smem > lim.SmemPerBlockOptin {
		return fmt.Sprintf("smem %s > %s opt-in cap of %s", kb(smem), kb(lim.SmemPerBlockOptin), lim.Arch)
	}
	if p.F == 0 {
		return ""
	}
	if p.F > lim.MaxBlocksPerSM {
		return fmt.Sprintf("f=%d > %d resident blocks/SM on %s", p.F, lim.MaxBlocksPerSM, lim.Arch)
	}
	if need := p.F * threads; need > lim.MaxThreadsPerSM {
		return fmt.Sprintf("w=%d × f=%d needs %d threads/SM > %d on %s", p.W, p.F, need, lim.MaxThreadsPerSM, lim.Arch)
	}
	if regs := lim.RegsPerSM / (p.F * threads); regs < MinRegsPerThread {
		return fmt.Sprintf("f=%d at %d threads leaves %d registers/thread < %d on %s", p.F, threads, regs, MinRegsPerThread, lim.Arch)
	}
	if smem > 0 && p.F*smem > lim.SmemPerSM {
		return fmt.Sprintf("f=%d blocks × smem %s = %s > %s per SM on %s", p.F, kb(smem), kb(p.F*smem), kb(lim.SmemPerSM), lim.Arch)
	}
	return ""
}

// kb formats a byte count in KB, with one decimal when not whole.
func kb(n int) string {
	if n%KiB == 0 {
		return fmt.Sprintf("%d KB", n/KiB)
	}
	return fmt.Sprintf("%.1f KB", float64(n)/KiB)
}

// FamilyKnobs gives, by knob letter, the values a family offers of the
// knobs Enumerate takes from the family (Knob.Enumerated == EnumFamily); a
// missing letter means {0}, except s: {0, 1} (every family stages x).
type FamilyKnobs map[string][]int

func (fk FamilyKnobs) values(k Knob) []int {
	switch {
	case len(fk[k.Letter]) > 0:
		return fk[k.Letter]
	case k.Letter == "s":
		return []int{0, 1}
	}
	return []int{0}
}

// Enumerate walks every combination of the knobs' values (Knobs, by their
// Enumerated source) in ID order, and splits them into those Check accepts
// and those it excludes (with the reason). smemFor gives a variant's
// dynamic shared memory per block for the shape being planned; nil means
// none.
func Enumerate(lim Limits, fk FamilyKnobs, smemFor func(Params) int) (ok []Params, excluded []Exclusion) {
	sets := make([][]int, len(Knobs))
	for i, k := range Knobs {
		switch k.Enumerated {
		case EnumAll:
			sets[i] = k.Values
		case EnumFamily:
			sets[i] = fk.values(k)
		default:
			sets[i] = []int{0}
		}
	}
	var walk func(i int, p Params)
	walk = func(i int, p Params) {
		if i == len(Knobs) {
			smem := 0
			if smemFor != nil {
				smem = smemFor(p)
			}
			if reason := exclusionReason(p, lim, smem); reason != "" {
				excluded = append(excluded, Exclusion{Params: p, Reason: reason})
			} else {
				ok = append(ok, p)
			}
			return
		}
		for _, v := range sets[i] {
			walk(i+1, Knobs[i].With(p, v))
		}
	}
	walk(0, Params{})
	return ok, excluded
}
