package cache

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/gemvtune/gemvtune/space"
)

// rawSummary is a Summary decoded without copying: its byte slices alias
// the encoded bytes.
type rawSummary struct {
	Arch, Format string
	Rows, Cols   int
	Schema       int
	Params       space.Params
	Class        string // as stored; ClassExact or ClassTolerance in the index
	Throttled    bool
	MedianUS     float64
	GBs          float64
	PctCeiling   float64
	Speedup      float64
	P            float64
	Time         time.Time
	Decision     []byte
	GPUName      []byte
	SourceHash   []byte
	ToolVersion  []byte
	CubinHash    []byte
	PDLUS        float64
	Exact        rawExact
}

// rawExact is an ExactSummary whose strings alias the encoded bytes.
type rawExact struct {
	Present    bool
	Params     space.Params
	Kept       bool
	MedianUS   float64
	GBs        float64
	PctCeiling float64
	Speedup    float64
	P          float64
	Decision   []byte
	CubinHash  []byte
}

func (x *rawExact) summary() ExactSummary {
	if !x.Present {
		return ExactSummary{}
	}
	return ExactSummary{Present: true, Params: x.Params, Kept: x.Kept, Decision: string(x.Decision), MedianUS: x.MedianUS,
		GBs: x.GBs, PctCeiling: x.PctCeiling, Speedup: x.Speedup, P: x.P, CubinHash: string(x.CubinHash)}
}

func (x *rawExact) set(e ExactSummary) {
	*x = rawExact{Present: e.Present, Params: e.Params, Kept: e.Kept, MedianUS: e.MedianUS, GBs: e.GBs,
		PctCeiling: e.PctCeiling, Speedup: e.Speedup, P: e.P, Decision: []byte(e.Decision), CubinHash: []byte(e.CubinHash)}
}

// Key returns the summary's key.
func (s *rawSummary) Key() Key {
	return Key{Arch: s.Arch, Format: s.Format, Rows: s.Rows, Cols: s.Cols}
}

// summary copies s into a Summary; intern deduplicates the strings many
// summaries share (the decision, unique per record, is copied).
func (s *rawSummary) summary(intern func([]byte) string) Summary {
	return Summary{
		Key: s.Key(), Schema: s.Schema, Params: s.Params, Class: s.Class, Decision: string(s.Decision),
		MedianUS: s.MedianUS, GBs: s.GBs, PctCeiling: s.PctCeiling, Speedup: s.Speedup, P: s.P,
		Throttled: s.Throttled, Time: s.Time, GPUName: intern(s.GPUName), SourceHash: intern(s.SourceHash),
		ToolVersion: intern(s.ToolVersion), CubinHash: intern(s.CubinHash), PDLUS: s.PDLUS, Exact: s.Exact.summary(),
	}
}

// setSummary makes s describe sum (which is copied into new byte slices).
func (s *rawSummary) setSummary(sum Summary) {
	*s = rawSummary{
		Arch: sum.Arch, Format: sum.Format, Rows: sum.Rows, Cols: sum.Cols, Schema: sum.Schema, Params: sum.Params,
		Class: sum.Class, Throttled: sum.Throttled, MedianUS: sum.MedianUS, GBs: sum.GBs, PctCeiling: sum.PctCeiling,
		Speedup: sum.Speedup, P: sum.P, Time: sum.Time, Decision: []byte(sum.Decision), GPUName: []byte(sum.GPUName),
		SourceHash: []byte(sum.SourceHash), ToolVersion: []byte(sum.ToolVersion), CubinHash: []byte(sum.CubinHash),
		PDLUS: sum.PDLUS,
	}
	s.Exact.set(sum.Exact)
}

// Offsets in an encoded summary (see encodeSummary).
const (
	sumSchema  = 1
	sumParams  = 3
	sumFlags   = 15
	sumFigures = 16
	sumTime    = 56
	sumStrings = 64
)

// decodeRaw reads what encodeSummary wrote into s (all but the key fields),
// without copying. It never panics; errors match ErrBadRecord. This is the
// fast path; anything unusual goes to decodeRawChecked, which gives the
// errors.
func decodeRaw(b []byte, s *rawSummary) error {
	if len(b) < sumStrings || b[0] != summaryVersion {
		return decodeRawChecked(b, s) // also every summary of version 2, 3 or 4
	}
	le := binary.LittleEndian
	s.Schema = int(le.Uint16(b[sumSchema:]))
	pb := b[sumParams : sumParams+12]
	s.Params = space.Params{R: int(le.Uint16(pb[0:])), F: int(le.Uint16(pb[2:])), U: int(le.Uint16(pb[4:])),
		S: int(le.Uint16(pb[6:])), W: int(le.Uint16(pb[8:])), L: int(le.Uint16(pb[10:]))}
	if s.Schema == SchemaVersion && !paramsOK(&s.Params) {
		return decodeRawChecked(b, s)
	}
	flags := b[sumFlags]
	s.Class = ClassExact
	if flags&1 != 0 {
		s.Class = ClassTolerance
	}
	s.Throttled = flags&2 != 0
	fb := b[sumFigures:sumTime]
	s.MedianUS = math.Float64frombits(le.Uint64(fb[0:]))
	s.GBs = math.Float64frombits(le.Uint64(fb[8:]))
	s.PctCeiling = math.Float64frombits(le.Uint64(fb[16:]))
	s.Speedup = math.Float64frombits(le.Uint64(fb[24:]))
	s.P = math.Float64frombits(le.Uint64(fb[32:]))
	s.Time = time.Time{}
	if t := int64(le.Uint64(b[sumTime:])); t != 0 {
		s.Time = time.Unix(0, t).UTC()
	}
	rest := b[sumStrings:]
	for _, str := range [...]*[]byte{&s.Decision, &s.GPUName, &s.SourceHash, &s.ToolVersion, &s.CubinHash} {
		if len(rest) < 2 {
			return decodeRawChecked(b, s)
		}
		n := int(le.Uint16(rest))
		if len(rest)-2 < n {
			return decodeRawChecked(b, s)
		}
		*str, rest = rest[2:2+n:2+n], rest[2+n:]
	}
	if len(rest) != 0 {
		return decodeRawChecked(b, s)
	}
	s.Exact.Present = false
	s.PDLUS = 0
	return nil
}

// knobBits is the set of a knob's allowed values that lie in 0..255 (what
// a byte holds), a bit per value.
type knobBits [4]uint64

// has reports whether v is in the set.
func (k *knobBits) has(v int) bool { return uint(v) < 256 && k[v>>6]>>(v&63)&1 != 0 }

// hasByte is has for a byte.
func (k *knobBits) hasByte(v byte) bool { return k[v>>6]>>(v&63)&1 != 0 }

// paramsKnobs is the knob letters of space.Knobs in the order of the
// fields of space.Params, as paramsOK and the table records know them.
const paramsKnobs = "rfuswgla"

// knobMasks holds, per knob of space.Knobs (in the order of paramsKnobs),
// the set of its allowed values; nil if a knob has a value outside 0..255
// or the knobs are not those of paramsKnobs (then paramsOK defers to
// Validate, so that it accepts exactly what Validate accepts).
var knobMasks = sync.OnceValue(func() []knobBits {
	if len(space.Knobs) != len(paramsKnobs) || paramsFields != len(paramsKnobs) {
		return nil
	}
	m := make([]knobBits, len(space.Knobs))
	for i, k := range space.Knobs {
		if k.Letter != paramsKnobs[i:i+1] {
			return nil
		}
		for _, v := range k.Values {
			if v < 0 || v > 255 {
				return nil
			}
			m[i][v>>6] |= 1 << (v & 63)
		}
	}
	return m
})

// paramsOK is p.Validate() == nil, faster.
func paramsOK(p *space.Params) bool {
	m := knobMasks()
	if m == nil {
		return p.Validate() == nil
	}
	return m[0].has(p.R) && m[1].has(p.F) && m[2].has(p.U) && m[3].has(p.S) && m[4].has(p.W) &&
		m[5].has(p.G) && m[6].has(p.L) && m[7].has(p.A)
}

// decodeRawChecked is decodeRaw reading every field through the checking
// decoder.
func decodeRawChecked(b []byte, s *rawSummary) error {
	d := decoder{b: b}
	v := d.u8()
	if v != summaryVersion && v != summaryVersion2 && v != summaryVersion3 && v != summaryVersion4 && v != summaryVersion5 {
		return fmt.Errorf("%w: summary version %d", ErrBadRecord, v)
	}
	wide := v == summaryVersion4 || v == summaryVersion5 // version 4's layout
	s.Schema = int(d.u16())
	if wide {
		s.Params = d.params8()
	} else {
		s.Params = space.Params{R: int(d.u16()), F: int(d.u16()), U: int(d.u16()), S: int(d.u16()), W: int(d.u16()), L: int(d.u16())}
		if v >= summaryVersion2 {
			s.Params.A = int(d.u16())
		}
	}
	flags := d.u8()
	s.Class = ClassExact
	if flags&1 != 0 {
		s.Class = ClassTolerance
	}
	s.Throttled = flags&2 != 0
	s.MedianUS = math.Float64frombits(d.u64())
	s.GBs = math.Float64frombits(d.u64())
	s.PctCeiling = math.Float64frombits(d.u64())
	s.Speedup = math.Float64frombits(d.u64())
	s.P = math.Float64frombits(d.u64())
	s.Time = time.Time{}
	if t := int64(d.u64()); t != 0 {
		s.Time = time.Unix(0, t).UTC()
	}
	s.Decision = d.bytes(int(d.u16()))
	s.GPUName = d.bytes(int(d.u16()))
	s.SourceHash = d.bytes(int(d.u16()))
	s.ToolVersion = d.bytes(int(d.u16()))
	s.CubinHash = d.bytes(int(d.u16()))
	s.Exact = rawExact{}
	hasExact := v == summaryVersion3
	if wide {
		switch xp := d.u8(); {
		case xp == 1:
			hasExact = true
		case xp != 0 && d.err == nil:
			return fmt.Errorf("%w: exact alternative marker %#x", ErrBadRecord, xp)
		}
	}
	if hasExact {
		x := &s.Exact
		x.Present = true
		if wide {
			x.Params = d.params8()
		} else {
			x.Params = space.Params{R: int(d.u16()), F: int(d.u16()), U: int(d.u16()), S: int(d.u16()), W: int(d.u16()),
				L: int(d.u16()), A: int(d.u16())}
		}
		xf := d.u8()
		if xf&^1 != 0 && d.err == nil {
			return fmt.Errorf("%w: exact alternative flags %#x", ErrBadRecord, xf)
		}
		x.Kept = xf&1 != 0
		x.MedianUS = math.Float64frombits(d.u64())
		x.GBs = math.Float64frombits(d.u64())
		x.PctCeiling = math.Float64frombits(d.u64())
		x.Speedup = math.Float64frombits(d.u64())
		x.P = math.Float64frombits(d.u64())
		x.Decision = d.bytes(int(d.u16()))
		x.CubinHash = d.bytes(int(d.u16()))
	}
	s.PDLUS = 0
	if v == summaryVersion5 {
		s.PDLUS = math.Float64frombits(d.u64())
		if badFigure(s.PDLUS) && d.err == nil {
			return fmt.Errorf("%w: pdl_us %v", ErrBadRecord, s.PDLUS)
		}
	}
	if d.err != nil {
		return fmt.Errorf("%w: %w", ErrBadRecord, d.err)
	}
	if len(d.b) != 0 {
		return fmt.Errorf("%w: %d trailing bytes after summary", ErrBadRecord, len(d.b))
	}
	if s.Schema == SchemaVersion {
		if err := s.Params.Validate(); err != nil {
			return fmt.Errorf("%w: %w", ErrBadRecord, err)
		}
		if s.Exact.Present {
			if err := s.Exact.Params.Validate(); err != nil {
				return fmt.Errorf("%w: exact alternative: %w", ErrBadRecord, err)
			}
		}
	}
	return nil
}

// names interns the arch and format names of index keys; a name is
// validated once, when first seen.
type names struct {
	list []nameEntry // small: linear search beats a map
	more map[string]nameEntry
	last int // in list: the name found last
}

type nameEntry struct {
	s  string
	ok bool
}

// get returns b's interned string and whether it is a valid name of its
// kind (valid checks a new one).
func (n *names) get(b []byte, valid func(string) bool) (string, bool) {
	if n.last < len(n.list) {
		if e := &n.list[n.last]; e.s == string(b) {
			return e.s, e.ok
		}
	}
	for i := range n.list {
		if e := &n.list[i]; e.s == string(b) {
			n.last = i
			return e.s, e.ok
		}
	}
	if e, found := n.more[string(b)]; found {
		return e.s, e.ok
	}
	s := string(b)
	e := nameEntry{s, valid(s)}
	if len(n.list) < 16 {
		n.list = append(n.list, e)
	} else {
		if n.more == nil {
			n.more = map[string]nameEntry{}
		}
		n.more[s] = e
	}
	return e.s, e.ok
}

// lastName returns the name get found last, or "".
func (n *names) lastName() string {
	if n.last < len(n.list) {
		return n.list[n.last].s
	}
	return ""
}

func validArch(s string) bool {
	_, err := space.ParseArch(s)
	return err == nil
}

// parseDimBytes reads what space.ParseShape accepts for one dimension.
func parseDimBytes(d []byte) (int, bool) {
	if len(d) == 0 || d[0] == '0' {
		return 0, false
	}
	n := 0
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
		if n > space.MaxDim {
			return 0, false
		}
	}
	return n, true
}

// keyNames interns the arch and format names of index keys.
type keyNames struct{ arch, format names }

// parseKeyInto reads "sm_90/q4_0/4096x14336" into s's key fields; false
// for anything parseIndexKey rejects.
func parseKeyInto(n *keyNames, s *rawSummary, key []byte) bool {
	// Most keys share the arch and format of the key before: try those
	// first (neither holds a '/', so a and f come out as below).
	a, f := -1, -1
	if la := n.arch.lastName(); la != "" && len(key) > len(la) && key[len(la)] == '/' && string(key[:len(la)]) == la {
		a = len(la)
		rest := key[a+1:]
		if lf := n.format.lastName(); lf != "" && len(rest) > len(lf) && rest[len(lf)] == '/' && string(rest[:len(lf)]) == lf {
			f = a + 1 + len(lf)
		}
	}
	if f < 0 {
		a = bytes.IndexByte(key, '/')
		f = bytes.LastIndexByte(key, '/')
		if a < 0 || f <= a {
			return false
		}
	}
	sh := key[f+1:]
	x := bytes.IndexByte(sh, 'x')
	if x < 0 {
		return false
	}
	rows, ok1 := parseDimBytes(sh[:x])
	cols, ok2 := parseDimBytes(sh[x+1:])
	if !ok1 || !ok2 {
		return false
	}
	arch, ok1 := n.arch.get(key[:a], validArch)
	format, ok2 := n.format.get(key[a+1:f], validFormatName)
	if !ok1 || !ok2 {
		return false
	}
	s.Arch, s.Format, s.Rows, s.Cols = arch, format, rows, cols
	return true
}
