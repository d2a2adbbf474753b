package cache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/gemvtune/gemvtune/space"
	bolt "go.etcd.io/bbolt"
)

// The index (bucket _meta, key "index") is written in one of two forms; the
// first byte says which.
//
// Version 1 is a list of (key, encoded Summary) pairs; see index.go.
//
// Version 2 is a Table as stored: the strings the summaries share, their
// decisions back to back, and one fixed-size record per summary, in index
// order, so that a reader copies two contiguous runs of bytes instead of
// decoding every summary. Little-endian:
//
//	u8 version (2), u32 record count
//	u16 string count, then each string: u16 length, bytes
//	u32 text length, text (every decision, each stored once)
//	records, tableRecSize bytes each (offsets rArch ... rTime below)
//
// Version 3 is version 2 followed by the exact alternatives (Summary.Exact)
// of the records that have one (record flag recExact), in record order:
//
//	u32 alternative count (at least 1)
//	alternatives, tableAltSize bytes each (offsets aRec ... aFig below)
//
// Version 4 stores knob G (row groups per block), which the records' seven
// knob bytes do not hold, as two columns after them: version 3's sections
// (but the alternative count may be 0), then
//
//	n bytes: knob G of each record, in record order
//	alternative count bytes: knob G of each alternative, in their order
//
// A version 4 index has some G that is not 0.
//
// Version 5 stores the winners' PDL-chain times (Summary.PDLUS): version
// 4's sections (its G columns may then be all 0), then
//
//	n × f64: PDLUS of each record, in record order (0: not measured)
//
// A version 5 index has some PDLUS that is not 0.
//
// Writers write version 5 when some summary has a PDL-chain time, else
// version 4 when some summary (or its exact alternative) has
// G != 0, else version 3 when some summary has an exact alternative, else
// version 2 (so that older readers still read what they can: a version
// 2 or 3 index is byte for byte what the release before knob G wrote),
// all whenever every summary fits a record (see tableBuilder.add), else
// version 1. All four are read; readers before version 4 do not know it
// and rebuild the summaries from the JSON records, never misreading it.
const (
	indexVersion2 = 2
	indexVersion3 = 3
	indexVersion4 = 4
	indexVersion5 = 5
)

// A record of a Table: string fields are indexes into Table.strs.
const (
	rArch   = 0  // u16
	rFormat = 2  // u16
	rRows   = 4  // u32
	rCols   = 8  // u32
	rSchema = 12 // u16
	rParams = 14 // 7 × u8: R, F, U, S, W, L, A (G: Table.recG)
	rFlags  = 21 // u8: recTolerance, recThrottled, recSide, recExact
	rGPU    = 22 // u16
	rSource = 24 // u16
	rTool   = 26 // u16
	rCubin  = 28 // u16
	rDecLen = 30 // u16
	rDecOff = 32 // u32 into Table.text; with recSide, the index in Table.side
	rFig    = 36 // 5 × f64: median µs, GB/s, % of ceiling, speedup, p
	rTime   = 76 // i64 Unix ns; 0 is the zero time

	tableRecSize = 84
)

// An exact alternative of a version 3 Table; the string and text
// references are those of the records.
const (
	aRec    = 0  // u32: index of the record it belongs to
	aParams = 4  // 7 × u8: R, F, U, S, W, L, A (G: Table.altG)
	aFlags  = 11 // u8: altKept
	aCubin  = 12 // u16
	aDecLen = 14 // u16
	aDecOff = 16 // u32 into Table.text
	aFig    = 20 // 5 × f64: median µs, GB/s, % of ceiling, speedup, p

	tableAltSize = 60

	altKept = 1 // the alternative kept stock
)

// Record flags.
const (
	recTolerance = 1 << iota // class tolerance (else exact)
	recThrottled
	recSide  // the summary is in Table.side (in memory only)
	recExact // the record has an exact alternative (version 3)
)

// paramsFields is the number of knobs in space.Params; records hold 7 of
// them, the G column of version 4 the eighth (see paramsKnobs).
var paramsFields = reflect.TypeFor[space.Params]().NumField()

// noRef is the arch or format reference of a side record whose name did
// not fit the string table.
const noRef = math.MaxUint16

// Table is every readable summary of a cache in a compact, read-only form
// made for engines' start-up: fixed-size records in one byte slice, the
// strings they share stored once, the decisions in one string. Its methods
// do not allocate. ReadTable makes one.
type Table struct {
	n      int
	recs   []byte   // n × tableRecSize
	strs   []string // shared strings
	text   string   // decisions
	alts   []byte   // nalt × tableAltSize, by record index
	nalt   int
	recG   []byte    // n bytes: knob G of each record; nil: every G is 0
	altG   []byte    // nalt bytes: knob G of each alternative; nil with recG
	recPDL []float64 // n: PDLUS of each record; nil: every one is 0
	side   []Summary // summaries that do not fit a record (in memory only)
	bad    []BadEntry
	cubins map[string]CubinRef // where each cubin a record names lies in the file
}

// ReadTable reads the index of the cache at path in a single read-only
// transaction: one open of the bbolt file, closed (and its shared lock
// released) before ReadTable returns. It checks the file as Open with
// ReadOnly does (ErrNotExist, ErrCorrupt, ErrVersion); an empty
// (zero-length) file is an empty cache. Summaries that do not decode are
// rebuilt from their JSON records, as Snapshot does; entries that cannot be
// read at all are listed by Bad. Cubins are not read, only located (see
// Cubin). Only opts.Timeout is used.
func ReadTable(path string, opts *Options) (*Table, error) {
	db, err := readerDB(path, opts)
	if err != nil {
		return nil, err
	}
	t := &Table{}
	err = db.view(func(tx *bolt.Tx) error {
		if err := db.checkMeta(tx); err != nil {
			return err
		}
		var err error
		t, err = loadTable(tx, true)
		return err
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// readerDB is Open's read-only path without its first transaction.
func readerDB(path string, opts *Options) (*DB, error) {
	if path == "" {
		return nil, errors.New("cache: empty path")
	}
	db := &DB{path: path, readOnly: true, timeout: DefaultTimeout}
	if opts != nil && opts.Timeout != 0 {
		db.timeout = opts.Timeout
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("cache %s: %w", path, ErrNotExist)
	case err != nil:
		return nil, fmt.Errorf("cache %s: %w", path, err)
	case fi.IsDir():
		return nil, fmt.Errorf("cache %s: %w: it is a folder", path, ErrCorrupt)
	}
	return db, nil
}

// loadTable reads tx's index: a version 2, 3 or 4 index is copied, a
// version 1 index decoded, and an unreadable one rebuilt from the JSON
// records. With locate, the cubins the records name are located in the
// file.
func loadTable(tx *bolt.Tx, locate bool) (*Table, error) {
	var raw []byte
	if m := tx.Bucket(bucketMeta); m != nil {
		raw = m.Get(keyIndex)
	}
	t, ok := parseTable(raw)
	if !ok {
		var err error
		if t, err = decodeIndex(tx, raw); err != nil {
			return nil, err
		}
	}
	if locate {
		t.locateCubins(tx)
	}
	return t, nil
}

// decodeIndex builds a Table from a version 1 index (or, if that is
// unreadable too, from the JSON records).
func decodeIndex(tx *bolt.Tx, raw []byte) (*Table, error) {
	n, ok := checkIndex(raw)
	b := newTableBuilder(n)
	var s rawSummary
	var nk keyNames
	if ok {
		if len(raw) > 0 {
			d := decoder{b: raw[5:]} // after the version and the count
			for i := 0; i < n; i++ {
				k := d.bytes(int(d.u16()))
				v := d.bytes(int(d.u32()))
				b.addEntry(tx, &nk, &s, k, v)
			}
		}
		return b.finish(), nil
	}
	ix, err := loadIndex(tx)
	if err != nil {
		return nil, err
	}
	for _, e := range ix.entries {
		b.addEntry(tx, &nk, &s, []byte(e.key), e.sum)
	}
	return b.finish(), nil
}

// checkIndex checks the framing of a version 1 index value (see index.go)
// and returns its entry count.
func checkIndex(b []byte) (n int, ok bool) {
	if len(b) == 0 {
		return 0, true
	}
	d := decoder{b: b}
	if d.u8() != indexVersion {
		return 0, false
	}
	n = int(d.u32())
	if d.err != nil || n > len(b) {
		return 0, false
	}
	for i := 0; i < n; i++ {
		d.take(int(d.u16()))
		d.take(int(d.u32()))
		if d.err != nil {
			return 0, false
		}
	}
	return n, len(d.b) == 0
}

// parseTable reads a version 2, 3, 4 or 5 index; false if b is not one or
// does not check out (then the index is read as version 1 or rebuilt).
func parseTable(b []byte) (*Table, bool) {
	d := decoder{b: b}
	v := d.u8()
	if v != indexVersion2 && v != indexVersion3 && v != indexVersion4 && v != indexVersion5 {
		return nil, false
	}
	n := int(d.u32())
	ns := int(d.u16())
	if d.err != nil || n > len(b)/tableRecSize {
		return nil, false
	}
	t := &Table{n: n, strs: make([]string, ns)}
	for i := range t.strs {
		t.strs[i] = string(d.bytes(int(d.u16())))
	}
	text := d.bytes(int(d.u32()))
	recs := d.bytes(n * tableRecSize)
	var alts, recG, altG []byte
	if v >= indexVersion3 {
		t.nalt = int(d.u32())
		if d.err != nil || t.nalt < 1 && v == indexVersion3 || t.nalt > n {
			return nil, false
		}
		alts = d.bytes(t.nalt * tableAltSize)
	}
	if v >= indexVersion4 {
		recG = d.bytes(n)
		altG = d.bytes(t.nalt)
		if v == indexVersion4 && (d.err != nil || !slices.ContainsFunc(recG, nonZero) && !slices.ContainsFunc(altG, nonZero)) {
			return nil, false // all G 0: a writer stores version 2 or 3
		}
	}
	var pdl []byte
	if v == indexVersion5 {
		pdl = d.bytes(8 * n)
	}
	if d.err != nil || len(d.b) != 0 {
		return nil, false
	}
	t.text = string(text)
	t.recs = bytes.Clone(recs)
	if t.nalt > 0 {
		t.alts = bytes.Clone(alts)
	}
	if v >= indexVersion4 && (slices.ContainsFunc(recG, nonZero) || slices.ContainsFunc(altG, nonZero)) {
		// One allocation for both columns.
		g := make([]byte, n+t.nalt)
		copy(g, recG)
		copy(g[n:], altG)
		t.recG, t.altG = g[:n:n], g[n:]
	}
	if v == indexVersion5 {
		t.recPDL = make([]float64, n)
		some := false
		for i := range t.recPDL {
			f := math.Float64frombits(binary.LittleEndian.Uint64(pdl[8*i:]))
			if badFigure(f) {
				return nil, false
			}
			t.recPDL[i], some = f, some || f != 0
		}
		if !some {
			return nil, false // all 0: a writer stores version 4 or older
		}
	}
	if !t.check() {
		return nil, false
	}
	return t, true
}

func nonZero(b byte) bool { return b != 0 }

// check validates every record of a parsed table: what a writer stores
// always passes, so a failure means a damaged index.
func (t *Table) check() bool {
	ns := len(t.strs)
	if ns > noRef {
		return false
	}
	// Whether a string is a valid arch (format) name, decided when first
	// used as one: 0 not yet, 1 valid, 2 not.
	names := make([]byte, 2*ns)
	nameOK := func(ref uint16, kind int, valid func(string) bool) bool {
		v := &names[kind*ns+int(ref)]
		if *v == 0 {
			*v = 2
			if valid(t.strs[ref]) {
				*v = 1
			}
		}
		return *v == 1
	}
	m := knobMasks()
	textLen := uint64(len(t.text))
	var flags byte = recTolerance | recThrottled
	if t.nalt > 0 {
		flags |= recExact
	}
	le := binary.LittleEndian
	if !t.checkAlts(m) {
		return false
	}
	nExact := 0
	for i := 0; i < t.n; i++ {
		r := (*[tableRecSize]byte)(t.recs[i*tableRecSize:])
		arch, format := le.Uint16(r[rArch:]), le.Uint16(r[rFormat:])
		rows, cols := le.Uint32(r[rRows:]), le.Uint32(r[rCols:])
		maxRef := max(arch, format, le.Uint16(r[rGPU:]), le.Uint16(r[rSource:]), le.Uint16(r[rTool:]), le.Uint16(r[rCubin:]))
		decEnd := uint64(le.Uint32(r[rDecOff:])) + uint64(le.Uint16(r[rDecLen:]))
		if int(maxRef) >= ns || rows-1 >= space.MaxDim || cols-1 >= space.MaxDim || decEnd > textLen || r[rFlags]&^flags != 0 ||
			names[arch] != 1 && !nameOK(arch, 0, validArch) || names[ns+int(format)] != 1 && !nameOK(format, 1, validFormatName) {
			return false
		}
		if r[rFlags]&recExact != 0 {
			nExact++
		}
		if le.Uint16(r[rSchema:]) != SchemaVersion {
			continue
		}
		var g byte
		if t.recG != nil {
			g = t.recG[i]
		}
		if !knobBytesOK(m, (*[7]byte)(r[rParams:]), g) {
			return false
		}
	}
	return nExact == t.nalt
}

// knobBytesOK is paramsOK for the knobs of a table record or alternative:
// p holds R, F, U, S, W, L, A; g is G; m is knobMasks().
func knobBytesOK(m []knobBits, p *[7]byte, g byte) bool {
	if m == nil {
		q := knobParams(p, g)
		return paramsOK(&q)
	}
	return m[0].hasByte(p[0]) && m[1].hasByte(p[1]) && m[2].hasByte(p[2]) && m[3].hasByte(p[3]) &&
		m[4].hasByte(p[4]) && m[5].hasByte(g) && m[6].hasByte(p[5]) && m[7].hasByte(p[6])
}

// checkAlts validates the exact alternatives of a parsed version 3 or 4
// table:
// in strictly increasing record order, each of a record flagged recExact
// (check counts those), references in range, knobs valid for a record of
// this schema.
func (t *Table) checkAlts(m []knobBits) bool {
	le := binary.LittleEndian
	prev := -1
	for k := 0; k < t.nalt; k++ {
		a := t.alt(k)
		i := int(le.Uint32(a[aRec:]))
		if i <= prev || i >= t.n || t.rec(i)[rFlags]&recExact == 0 || a[aFlags]&^altKept != 0 ||
			int(le.Uint16(a[aCubin:])) >= len(t.strs) ||
			uint64(le.Uint32(a[aDecOff:]))+uint64(le.Uint16(a[aDecLen:])) > uint64(len(t.text)) {
			return false
		}
		prev = i
		if le.Uint16(t.rec(i)[rSchema:]) != SchemaVersion {
			continue
		}
		var g byte
		if t.altG != nil {
			g = t.altG[k]
		}
		if !knobBytesOK(m, (*[7]byte)(a[aParams:]), g) {
			return false
		}
	}
	return true
}

// encode writes t as a version 2 index, version 3 if a record has an
// exact alternative, version 4 if a record or an alternative has G != 0;
// false if t holds a side record.
func (t *Table) encode() ([]byte, bool) {
	if len(t.side) > 0 {
		return nil, false
	}
	size := 1 + 4 + 2 + 4 + len(t.text) + len(t.recs) + 4 + len(t.alts) + 2*(t.n+t.nalt) + 8*len(t.recPDL)
	for _, s := range t.strs {
		size += 2 + len(s)
	}
	b := make([]byte, 0, size)
	v := byte(indexVersion2)
	switch {
	case t.recPDL != nil:
		v = indexVersion5
	case t.recG != nil:
		v = indexVersion4
	case t.nalt > 0:
		v = indexVersion3
	}
	b = append(b, v)
	b = binary.LittleEndian.AppendUint32(b, uint32(t.n))
	b = binary.LittleEndian.AppendUint16(b, uint16(len(t.strs)))
	for _, s := range t.strs {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(s)))
		b = append(b, s...)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(t.text)))
	b = append(b, t.text...)
	b = append(b, t.recs...)
	if v >= indexVersion3 {
		b = binary.LittleEndian.AppendUint32(b, uint32(t.nalt))
		b = append(b, t.alts...)
	}
	if v >= indexVersion4 {
		if t.recG != nil {
			b = append(b, t.recG...)
			b = append(b, t.altG...)
		} else { // version 5 without G: the columns are all 0
			b = append(b, make([]byte, t.n+t.nalt)...)
		}
	}
	for _, f := range t.recPDL {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
	}
	return b, true
}

// locateCubins finds where each cubin the records name lies in the file.
func (t *Table) locateCubins(tx *bolt.Tx) {
	cb := tx.Bucket(bucketCubin)
	if cb == nil {
		return
	}
	base, size := tx.DB().Info().Data, tx.Size()
	t.cubins = map[string]CubinRef{}
	seen := make([]bool, len(t.strs))
	locate := func(h string) {
		if _, done := t.cubins[h]; done || h == "" {
			return
		}
		if v := cb.Get([]byte(h)); v != nil {
			ref := CubinRef{Hash: h, Off: fileOffset(v, base, size), Len: len(v)}
			if ref.Off < 0 {
				// bbolt copied the value out of the map: it lies in a small
				// inline bucket, so a copy costs little.
				ref.data = bytes.Clone(v)
			}
			t.cubins[h] = ref
		}
	}
	le := binary.LittleEndian
	for i := 0; i < t.n; i++ {
		r := t.rec(i)
		if r[rFlags]&recSide != 0 {
			s := &t.side[le.Uint32(r[rDecOff:])]
			locate(s.CubinHash)
			if s.Exact.Present {
				locate(s.Exact.CubinHash)
			}
			continue
		}
		if c := le.Uint16(r[rCubin:]); !seen[c] {
			seen[c] = true
			locate(t.strs[c])
		}
	}
	for k := 0; k < t.nalt; k++ {
		if c := le.Uint16(t.alt(k)[aCubin:]); !seen[c] {
			seen[c] = true
			locate(t.strs[c])
		}
	}
}

// knobParams makes the knobs of a record or alternative: p holds R, F, U,
// S, W, L, A; g is G.
func knobParams(p *[7]byte, g byte) space.Params {
	return space.Params{R: int(p[0]), F: int(p[1]), U: int(p[2]), S: int(p[3]), W: int(p[4]), G: int(g), L: int(p[5]), A: int(p[6])}
}

// recParams reads record i's knobs.
func (t *Table) recParams(i int) space.Params {
	var g byte
	if t.recG != nil {
		g = t.recG[i]
	}
	return knobParams((*[7]byte)(t.recs[i*tableRecSize+rParams:]), g)
}

func (t *Table) rec(i int) []byte {
	return t.recs[i*tableRecSize : (i+1)*tableRecSize : (i+1)*tableRecSize]
}

func (t *Table) alt(k int) []byte {
	return t.alts[k*tableAltSize : (k+1)*tableAltSize : (k+1)*tableAltSize]
}

// altParams reads alternative k's knobs.
func (t *Table) altParams(k int) space.Params {
	var g byte
	if t.altG != nil {
		g = t.altG[k]
	}
	return knobParams((*[7]byte)(t.alts[k*tableAltSize+aParams:]), g)
}

// exact returns record i's exact alternative (a binary search: the
// alternatives are in record order).
func (t *Table) exact(i int) ExactSummary {
	le := binary.LittleEndian
	lo, hi := 0, t.nalt
	for lo < hi {
		k := int(uint(lo+hi) >> 1)
		if int(le.Uint32(t.alts[k*tableAltSize+aRec:])) < i {
			lo = k + 1
		} else {
			hi = k
		}
	}
	if lo == t.nalt {
		return ExactSummary{}
	}
	a := t.alt(lo)
	if int(le.Uint32(a[aRec:])) != i {
		return ExactSummary{}
	}
	off := le.Uint32(a[aDecOff:])
	return ExactSummary{
		Present: true, Params: t.altParams(lo), Kept: a[aFlags]&altKept != 0,
		Decision:   t.text[off : off+uint32(le.Uint16(a[aDecLen:]))],
		MedianUS:   math.Float64frombits(le.Uint64(a[aFig:])),
		GBs:        math.Float64frombits(le.Uint64(a[aFig+8:])),
		PctCeiling: math.Float64frombits(le.Uint64(a[aFig+16:])),
		Speedup:    math.Float64frombits(le.Uint64(a[aFig+24:])),
		P:          math.Float64frombits(le.Uint64(a[aFig+32:])),
		CubinHash:  t.strs[le.Uint16(a[aCubin:])],
	}
}

// Len returns the number of summaries.
func (t *Table) Len() int { return t.n }

// Bad returns the entries that could not be read, in index order.
func (t *Table) Bad() []BadEntry { return t.bad }

// NumStrings returns the number of shared strings (the bound of the
// references Names returns).
func (t *Table) NumStrings() int { return len(t.strs) }

// String returns the shared string ref names.
func (t *Table) String(ref uint16) string { return t.strs[ref] }

// Names returns references (see String) to summary i's arch and format
// names; ok is false if the table holds no reference for them (then use
// Key).
func (t *Table) Names(i int) (arch, format uint16, ok bool) {
	r := t.rec(i)
	arch, format = binary.LittleEndian.Uint16(r[rArch:]), binary.LittleEndian.Uint16(r[rFormat:])
	return arch, format, arch != noRef && format != noRef
}

// Key returns summary i's key.
func (t *Table) Key(i int) Key {
	r := t.rec(i)
	if r[rFlags]&recSide != 0 {
		return t.side[binary.LittleEndian.Uint32(r[rDecOff:])].Key
	}
	le := binary.LittleEndian
	return Key{Arch: t.strs[le.Uint16(r[rArch:])], Format: t.strs[le.Uint16(r[rFormat:])],
		Rows: int(le.Uint32(r[rRows:])), Cols: int(le.Uint32(r[rCols:]))}
}

// Summary returns summary i.
func (t *Table) Summary(i int) Summary {
	r := t.rec(i)
	le := binary.LittleEndian
	if r[rFlags]&recSide != 0 {
		return t.side[le.Uint32(r[rDecOff:])]
	}
	s := Summary{
		Key:    t.Key(i),
		Schema: int(le.Uint16(r[rSchema:])),
		Params: t.recParams(i),
		Class:  ClassExact, Throttled: r[rFlags]&recThrottled != 0,
		MedianUS: math.Float64frombits(le.Uint64(r[rFig:])), GBs: math.Float64frombits(le.Uint64(r[rFig+8:])),
		PctCeiling: math.Float64frombits(le.Uint64(r[rFig+16:])), Speedup: math.Float64frombits(le.Uint64(r[rFig+24:])),
		P: math.Float64frombits(le.Uint64(r[rFig+32:])), GPUName: t.strs[le.Uint16(r[rGPU:])],
		SourceHash: t.strs[le.Uint16(r[rSource:])], ToolVersion: t.strs[le.Uint16(r[rTool:])],
		CubinHash: t.strs[le.Uint16(r[rCubin:])],
	}
	if r[rFlags]&recTolerance != 0 {
		s.Class = ClassTolerance
	}
	off := le.Uint32(r[rDecOff:])
	s.Decision = t.text[off : off+uint32(le.Uint16(r[rDecLen:]))]
	if ns := int64(le.Uint64(r[rTime:])); ns != 0 {
		s.Time = time.Unix(0, ns).UTC()
	}
	if r[rFlags]&recExact != 0 {
		s.Exact = t.exact(i)
	}
	if t.recPDL != nil {
		s.PDLUS = t.recPDL[i]
	}
	return s
}

// Cubin returns where the cubin stored under hash lay in the file when the
// table was read; false if the cache did not hold it.
func (t *Table) Cubin(hash string) (CubinRef, bool) {
	c, ok := t.cubins[hash]
	return c, ok
}

// tableBuilder makes a Table from summaries, one at a time.
type tableBuilder struct {
	t       *Table
	recG    []byte    // knob G of each record
	altG    []byte    // knob G of each alternative
	hasG    bool      // some G is not 0
	recPDL  []float64 // PDLUS of each record
	hasPDL  bool      // some PDLUS is not 0
	ids     map[string]uint16
	text    strings.Builder
	decs    map[string]uint32 // decision → offset in text
	lastDec string
	lastOff uint32
}

func newTableBuilder(n int) *tableBuilder {
	return &tableBuilder{t: &Table{recs: make([]byte, 0, n*tableRecSize)}, recG: make([]byte, 0, n),
		ids: map[string]uint16{}, decs: map[string]uint32{}}
}

// addEntry adds a version 1 index entry: key and encoded summary, falling
// back to the JSON record when the summary does not decode.
func (b *tableBuilder) addEntry(tx *bolt.Tx, nk *keyNames, s *rawSummary, key, v []byte) {
	if !parseKeyInto(nk, s, key) {
		k, err := parseIndexKey(string(key))
		if err != nil {
			b.t.bad = append(b.t.bad, BadEntry{Key: k, Err: err})
			return
		}
		s.Arch, s.Format, s.Rows, s.Cols = k.Arch, k.Format, k.Rows, k.Cols
	}
	if err := decodeRaw(v, s); err != nil {
		k := s.Key()
		sum, err := summaryFromRecord(tx, k)
		if err != nil {
			b.t.bad = append(b.t.bad, BadEntry{Key: k, Err: err})
			return
		}
		sum.Key = k
		b.addSummary(sum)
		return
	}
	b.add(s)
}

// intern returns the reference of string s.
func (b *tableBuilder) intern(s []byte) (uint16, bool) {
	if id, ok := b.ids[string(s)]; ok {
		return id, true
	}
	return b.internNew(string(s))
}

// internStr is intern for a string.
func (b *tableBuilder) internStr(s string) (uint16, bool) {
	if id, ok := b.ids[s]; ok {
		return id, true
	}
	return b.internNew(s)
}

func (b *tableBuilder) internNew(s string) (uint16, bool) {
	if len(b.t.strs) >= noRef {
		return 0, false
	}
	id := uint16(len(b.t.strs))
	b.t.strs = append(b.t.strs, s)
	b.ids[s] = id
	return id, true
}

// add appends s as a record, or as a side summary where a record cannot
// hold it.
func (b *tableBuilder) add(s *rawSummary) {
	var refs [6]uint16
	fits := s.Schema >= 0 && s.Schema <= math.MaxUint16 && (s.Class == ClassExact || s.Class == ClassTolerance) &&
		len(s.Decision) <= math.MaxUint16 && b.text.Len()+len(s.Decision) <= math.MaxUint32
	for _, v := range [...]int{s.Params.R, s.Params.F, s.Params.U, s.Params.S, s.Params.W, s.Params.G, s.Params.L, s.Params.A} {
		fits = fits && v >= 0 && v <= math.MaxUint8
	}
	fits = fits && paramsFields == 8 // else a knob would be lost
	x := &s.Exact
	if x.Present {
		fits = fits && len(x.Decision) <= math.MaxUint16 && b.text.Len()+len(s.Decision)+len(x.Decision) <= math.MaxUint32
		for _, v := range [...]int{x.Params.R, x.Params.F, x.Params.U, x.Params.S, x.Params.W, x.Params.G, x.Params.L, x.Params.A} {
			fits = fits && v >= 0 && v <= math.MaxUint8
		}
	}
	var ok bool
	if refs[0], ok = b.internStr(s.Arch); !ok {
		fits, refs[0] = false, noRef
	}
	if refs[1], ok = b.internStr(s.Format); !ok {
		fits, refs[1] = false, noRef
	}
	for i, str := range [...][]byte{s.GPUName, s.SourceHash, s.ToolVersion, s.CubinHash} {
		if fits {
			refs[2+i], fits = b.intern(str)
		}
	}
	var xCubin uint16
	if fits && x.Present {
		xCubin, fits = b.intern(x.CubinHash)
	}
	var ns int64
	if s.Time != (time.Time{}) {
		ns = s.Time.UnixNano()
		fits = fits && ns != 0 && time.Unix(0, ns).UTC() == s.Time
	}
	t := b.t
	t.recs = slices.Grow(t.recs, tableRecSize)[:(t.n+1)*tableRecSize]
	r := t.rec(t.n)
	t.n++
	le := binary.LittleEndian
	le.PutUint16(r[rArch:], refs[0])
	le.PutUint16(r[rFormat:], refs[1])
	le.PutUint32(r[rRows:], uint32(s.Rows))
	le.PutUint32(r[rCols:], uint32(s.Cols))
	if !fits {
		r[rFlags] = recSide
		le.PutUint32(r[rDecOff:], uint32(len(t.side)))
		t.side = append(t.side, s.summary(func(b []byte) string { return string(b) }))
		b.recG = append(b.recG, 0) // unused: the side summary has it
		b.recPDL = append(b.recPDL, 0)
		return
	}
	b.recPDL = append(b.recPDL, s.PDLUS)
	b.hasPDL = b.hasPDL || s.PDLUS != 0
	b.recG = append(b.recG, byte(s.Params.G))
	b.hasG = b.hasG || s.Params.G != 0
	le.PutUint16(r[rSchema:], uint16(s.Schema))
	p := r[rParams : rParams+7]
	p[0], p[1], p[2], p[3], p[4], p[5], p[6] = byte(s.Params.R), byte(s.Params.F), byte(s.Params.U), byte(s.Params.S),
		byte(s.Params.W), byte(s.Params.L), byte(s.Params.A)
	var flags byte
	if s.Class == ClassTolerance {
		flags |= recTolerance
	}
	if s.Throttled {
		flags |= recThrottled
	}
	if x.Present {
		flags |= recExact
		b.addExact(t.n-1, x, xCubin)
	}
	r[rFlags] = flags
	le.PutUint16(r[rGPU:], refs[2])
	le.PutUint16(r[rSource:], refs[3])
	le.PutUint16(r[rTool:], refs[4])
	le.PutUint16(r[rCubin:], refs[5])
	le.PutUint16(r[rDecLen:], uint16(len(s.Decision)))
	le.PutUint32(r[rDecOff:], b.decision(s.Decision))
	for i, f := range [...]float64{s.MedianUS, s.GBs, s.PctCeiling, s.Speedup, s.P} {
		le.PutUint64(r[rFig+8*i:], math.Float64bits(f))
	}
	le.PutUint64(r[rTime:], uint64(ns))
}

// addExact appends the exact alternative x of record i.
func (b *tableBuilder) addExact(i int, x *rawExact, cubin uint16) {
	t := b.t
	t.alts = slices.Grow(t.alts, tableAltSize)[:(t.nalt+1)*tableAltSize]
	a := t.alt(t.nalt)
	t.nalt++
	le := binary.LittleEndian
	le.PutUint32(a[aRec:], uint32(i))
	p := a[aParams : aParams+7]
	q := &x.Params
	p[0], p[1], p[2], p[3], p[4], p[5], p[6] = byte(q.R), byte(q.F), byte(q.U), byte(q.S), byte(q.W), byte(q.L), byte(q.A)
	b.altG = append(b.altG, byte(q.G))
	b.hasG = b.hasG || q.G != 0
	a[aFlags] = 0
	if x.Kept {
		a[aFlags] = altKept
	}
	le.PutUint16(a[aCubin:], cubin)
	le.PutUint16(a[aDecLen:], uint16(len(x.Decision)))
	le.PutUint32(a[aDecOff:], b.decision(x.Decision))
	for i, f := range [...]float64{x.MedianUS, x.GBs, x.PctCeiling, x.Speedup, x.P} {
		le.PutUint64(a[aFig+8*i:], math.Float64bits(f))
	}
}

// decision stores d in the text once and returns its offset.
func (b *tableBuilder) decision(d []byte) uint32 {
	if b.lastDec == string(d) && len(d) > 0 {
		return b.lastOff
	}
	off, ok := b.decs[string(d)]
	if !ok {
		off = uint32(b.text.Len())
		b.text.Write(d)
		// The key is the text's own copy: no allocation of its own.
		b.decs[b.text.String()[off:off+uint32(len(d))]] = off
	}
	b.lastDec, b.lastOff = b.text.String()[off:off+uint32(len(d))], off
	return off
}

// addSummary adds a summary rebuilt from a JSON record.
func (b *tableBuilder) addSummary(sum Summary) {
	var s rawSummary
	s.setSummary(sum)
	b.add(&s)
}

func (b *tableBuilder) finish() *Table {
	b.t.text = b.text.String()
	if b.hasG {
		b.t.recG, b.t.altG = b.recG, b.altG
		if b.t.altG == nil {
			b.t.altG = []byte{}
		}
	}
	if b.hasPDL {
		b.t.recPDL = b.recPDL
	}
	return b.t
}
