// Package space defines the tuning knobs of a GEMV kernel, the canonical
// variant IDs that name a combination of them, the per-architecture limits,
// and the constraints that exclude combinations with a reason in words.
package space

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Params is one point of the search space: the values of every knob.
//
// The zero value is not a valid variant; Stock is the plain kernel.
type Params struct {
	R int // rows per warp: output rows one warp computes, sharing one activation load
	F int // launch-bounds floor: __launch_bounds__(threads, F); 0 = no min-blocks argument
	U int // unroll depth: independent weight loads in flight per lane per step
	S int // smem staging: 1 = activation vector staged in shared memory once per block
	W int // warps per block: block size / 32
	// G is row groups per block (a launch knob): a row group is the R·W
	// rows one block covers at a time; the grid is ceil(groups/G) blocks
	// and each block walks groups blockIdx, blockIdx+grid, ..., staging x
	// once. 0 means 1 (one group per block, the plain grid) and is omitted
	// from the ID. Per-row summation order does not change, so neither
	// does the class.
	G int
	L int // layout (family knob): 0 = raw ecosystem bytes, 1 = repacked planes, 2 = repacked tiles; omitted from the ID when 0
	A int // activation path (family knob): 0 = f32 activations, 1 = int8 activations with dp4a; omitted when 0
}

// Stock is every family's plain kernel, also written "v1".
var Stock = Params{R: 1, F: 0, U: 1, S: 0, W: 8}

// StockAlias is the name engines use for Stock (e.g. GEMV_FORCE_VARIANT=v1).
const StockAlias = "v1"

// Knob describes one tuning knob: its letter in IDs, its name, and the values
// the explorer starts from.
type Knob struct {
	Letter string
	Name   string
	Values []int
}

// Knobs lists the common knobs in ID order, then the launch knob g, then
// the family knobs l and a. The last three are optional in IDs (omitted at
// 0). Knob g's values are not enumerated by the explorer: the tuner derives
// them per shape from occupancy (docs/tuner.md).
var Knobs = []Knob{
	{"r", "rows per warp", []int{1, 2, 3, 4, 6, 8}},
	{"f", "launch-bounds floor", []int{0, 1, 2, 3, 4, 6, 8}},
	{"u", "unroll depth", []int{1, 2, 4, 8}},
	{"s", "smem staging", []int{0, 1, 2, 3}},
	{"w", "warps per block", []int{2, 4, 8, 16}},
	{"g", "row groups per block", rowGroupValues()},
	{"l", "layout", []int{0, 1, 2}},
	{"a", "activation path", []int{0, 1}},
}

// ErrBadID is returned (wrapped) when a variant ID does not parse.
var ErrBadID = errors.New("invalid variant ID")

// ID returns the canonical variant ID, e.g. "r2f3u1s0w8" (the launch knob
// and the family knobs appended as "g8", "l1" and "a1" only when non-zero).
// IDs parse back exactly with Parse.
func (p Params) ID() string {
	id := fmt.Sprintf("r%df%du%ds%dw%d", p.R, p.F, p.U, p.S, p.W)
	if p.G != 0 {
		id += fmt.Sprintf("g%d", p.G)
	}
	if p.L != 0 {
		id += fmt.Sprintf("l%d", p.L)
	}
	if p.A != 0 {
		id += fmt.Sprintf("a%d", p.A)
	}
	return id
}

// String returns the ID.
func (p Params) String() string { return p.ID() }

// IsStock reports whether p is the stock kernel.
func (p Params) IsStock() bool { return p == Stock }

// Validate checks that every knob holds one of its allowed values.
func (p Params) Validate() error {
	vals := []int{p.R, p.F, p.U, p.S, p.W, p.G, p.L, p.A}
	for i, k := range Knobs {
		if !contains(k.Values, vals[i]) {
			return fmt.Errorf("%w: %s=%d (%s) not in [%s]", ErrBadID, k.Letter, vals[i], k.Name, ValueSet(k.Values))
		}
	}
	return nil
}

func contains(vs []int, v int) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// Parse reads a variant ID: "v1" or a canonical ID such as "r2f3u1s0w8",
// "r1f0u2s0w8l1", "r2f0u2s1w8a1" or "r1f0u4s1w16g8l1a1". Every common knob
// must be present once, in order; g, l and a are optional (in that order).
// Values must be in the knob's value set.
func Parse(id string) (Params, error) {
	if id == StockAlias {
		return Stock, nil
	}
	var p Params
	vals := []*int{&p.R, &p.F, &p.U, &p.S, &p.W, &p.G, &p.L, &p.A}
	rest := id
	for i, k := range Knobs {
		optional := k.Letter == "g" || k.Letter == "l" || k.Letter == "a"
		if optional && !strings.HasPrefix(rest, k.Letter) {
			continue
		}
		if !strings.HasPrefix(rest, k.Letter) {
			return Params{}, fmt.Errorf("%w %q: want v1 or r<n>f<n>u<n>s<n>w<n>[g<n>][l<n>][a<n>], e.g. r2f3u1s0w8", ErrBadID, id)
		}
		rest = rest[1:]
		n := 0
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n == 0 || n > 3 || (n > 1 && rest[0] == '0') {
			return Params{}, fmt.Errorf("%w %q: knob %s needs a number", ErrBadID, id, k.Letter)
		}
		v, _ := strconv.Atoi(rest[:n])
		*vals[i] = v
		rest = rest[n:]
	}
	if rest != "" {
		return Params{}, fmt.Errorf("%w %q: unexpected %q at the end", ErrBadID, id, rest)
	}
	if err := p.Validate(); err != nil {
		return Params{}, fmt.Errorf("%q: %w", id, err)
	}
	if p.ID() != id {
		// e.g. "l0" written out: the canonical form omits it.
		return Params{}, fmt.Errorf("%w %q: canonical form is %q", ErrBadID, id, p.ID())
	}
	return p, nil
}

// MaxRowGroups is the largest value of knob g.
const MaxRowGroups = 255

// rowGroupValues is knob g's value set: 0 (one group per block) and every
// count from 2 to MaxRowGroups.
func rowGroupValues() []int {
	vs := []int{0}
	for g := 2; g <= MaxRowGroups; g++ {
		vs = append(vs, g)
	}
	return vs
}

// ValueSet writes a knob's sorted values for messages, runs of three or more
// consecutive values as a range: r's values read "1–4 6 8", g's "0 2–255".
func ValueSet(vs []int) string {
	var b strings.Builder
	for i := 0; i < len(vs); {
		j := i
		for j+1 < len(vs) && vs[j+1] == vs[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		if j-i >= 2 {
			fmt.Fprintf(&b, "%d–%d", vs[i], vs[j])
			i = j + 1
			continue
		}
		fmt.Fprintf(&b, "%d", vs[i])
		i++
	}
	return b.String()
}
