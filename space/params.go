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

// Knob describes one tuning knob: everything any list of knobs in the
// module is derived from (IDs, validation, enumeration, the kernel's
// #defines, the override variables, the cache's encodings, the C header).
// A new knob is one entry here, its field in Params, and its kernel code.
type Knob struct {
	Letter string // in IDs, e.g. "r"
	Name   string // in words, e.g. "rows per warp"
	Values []int  // the values it may take
	// Optional knobs are omitted from IDs at 0 (g, l, a).
	Optional bool
	// Define is the #define that carries the knob into the kernel source
	// ("GEMV_R"); "" for a knob that only sets the launch (g).
	Define string
	// Env is the environment variable that overrides the knob on top of an
	// engine's choice ("GEMV_ROWS_PER_WARP"); "" for none.
	Env string
	// Enumerated is where the explorer takes its values: EnumAll (Values),
	// EnumFamily (the family's own list: FamilyKnobs) or EnumFixed (0
	// only; the tuner chooses it per shape, as g from occupancy).
	Enumerated Enum

	field int // which field of Params (Params.field)
}

// Enum says where Enumerate takes a knob's values.
type Enum int

// Enumerate's sources of a knob's values.
const (
	EnumAll    Enum = iota // every value of Knob.Values
	EnumFamily             // the family's (FamilyKnobs, by letter)
	EnumFixed              // 0: set per shape by the tuner
)

// Knobs lists every knob in ID order: the common ones, then the launch
// knob g, then the family knobs l and a.
var Knobs = []Knob{
	{Letter: "r", Name: "rows per warp", Values: []int{1, 2, 3, 4, 6, 8}, Define: "GEMV_R", Env: "GEMV_ROWS_PER_WARP",
		field: 0},
	{Letter: "f", Name: "launch-bounds floor", Values: []int{0, 1, 2, 3, 4, 6, 8}, Define: "GEMV_F", Env: "GEMV_MIN_BLOCKS",
		field: 1},
	{Letter: "u", Name: "unroll depth", Values: []int{1, 2, 4, 8}, Define: "GEMV_U", Env: "GEMV_UNROLL",
		field: 2},
	{Letter: "s", Name: "smem staging", Values: []int{0, 1, 2, 3}, Define: "GEMV_S", Env: "GEMV_SMEM_STAGING",
		Enumerated: EnumFamily, field: 3},
	{Letter: "w", Name: "warps per block", Values: []int{2, 4, 8, 16}, Define: "GEMV_W", Env: "GEMV_WARPS",
		field: 4},
	{Letter: "g", Name: "row groups per block", Values: rowGroupValues(), Optional: true, Enumerated: EnumFixed,
		field: 5},
	{Letter: "l", Name: "layout", Values: []int{0, 1, 2}, Optional: true, Define: "GEMV_L", Enumerated: EnumFamily,
		field: 6},
	{Letter: "a", Name: "activation path", Values: []int{0, 1}, Optional: true, Define: "GEMV_A", Enumerated: EnumFamily,
		field: 7},
}

// Of returns the knob's value in p.
func (k Knob) Of(p Params) int { return *p.field(k.field) }

// With returns p with the knob set to v.
func (k Knob) With(p Params, v int) Params {
	*p.field(k.field) = v
	return p
}

// field is the Params field of a Knob.field index; the one switch that
// ties Knobs to the struct (TestKnobFields checks every entry).
func (p *Params) field(i int) *int {
	switch i {
	case 0:
		return &p.R
	case 1:
		return &p.F
	case 2:
		return &p.U
	case 3:
		return &p.S
	case 4:
		return &p.W
	case 5:
		return &p.G
	case 6:
		return &p.L
	case 7:
		return &p.A
	}
	panic("space: Knob.field out of range")
}

// KnobByLetter returns the knob with that letter.
func KnobByLetter(letter string) (Knob, bool) {
	for _, k := range Knobs {
		if k.Letter == letter {
			return k, true
		}
	}
	return Knob{}, false
}

// Values returns p's knob values in Knobs order.
func (p Params) Values() []int {
	vs := make([]int, len(Knobs))
	for i, k := range Knobs {
		vs[i] = k.Of(p)
	}
	return vs
}

// ParamsOf is the variant with the knob values vs in Knobs order.
func ParamsOf(vs []int) Params {
	var p Params
	for i, k := range Knobs {
		if i < len(vs) {
			p = k.With(p, vs[i])
		}
	}
	return p
}

// ErrBadID is returned (wrapped) when a variant ID does not parse.
var ErrBadID = errors.New("invalid variant ID")

// ID returns the canonical variant ID, e.g. "r2f3u1s0w8" (the launch knob
// and the family knobs appended as "g8", "l1" and "a1" only when non-zero).
// IDs parse back exactly with Parse.
func (p Params) ID() string {
	b := make([]byte, 0, 24)
	for _, k := range Knobs {
		v := k.Of(p)
		if k.Optional && v == 0 {
			continue
		}
		b = append(b, k.Letter...)
		b = strconv.AppendInt(b, int64(v), 10)
	}
	return string(b)
}

// String returns the ID.
func (p Params) String() string { return p.ID() }

// IsStock reports whether p is the stock kernel.
func (p Params) IsStock() bool { return p == Stock }

// Validate checks that every knob holds one of its allowed values.
func (p Params) Validate() error {
	for _, k := range Knobs {
		if v := k.Of(p); !contains(k.Values, v) {
			return fmt.Errorf("%w: %s=%d (%s) not in [%s]", ErrBadID, k.Letter, v, k.Name, ValueSet(k.Values))
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
	rest := id
	for _, k := range Knobs {
		if k.Optional && !strings.HasPrefix(rest, k.Letter) {
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
		p = k.With(p, v)
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
