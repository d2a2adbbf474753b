package cache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"os"
	"time"

	"github.com/gemvtune/gemvtune/space"
	bolt "go.etcd.io/bbolt"
)

// The index (bucket _meta, key "index") holds the summary of every record
// in one value, so that an engine's start-up reads one contiguous run of
// bytes instead of thousands of JSON records: the strings the summaries
// share, stored once; their decisions back to back; one fixed-size record
// per summary and one per exact alternative; and a CRC-32C (Castagnoli) of
// all of it. Little-endian:
//
//	"GTI2", u32 record count n, u32 alternative count m, u32 string count s
//	s times: u32 length, bytes
//	u32 text length, text (every decision)
//	n records of recSize bytes (offsets rArch ... rTime below), in index order
//	m alternatives of altSize bytes, in record order
//	u32 CRC-32C of everything before it
//
// A value whose checksum, framing or contents do not check out is not
// used: readers then rebuild the summaries from the JSON records, each of
// which carries its own checksum (record.go), and the next write stores a
// good index again.
var (
	keyIndex   = []byte("index")
	indexMagic = []byte("GTI2")
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

// Offsets in a record of the index. String fields are indexes into the
// string table.
const (
	rArch    = 0  // u32
	rModel   = 4  // u32
	rFormat  = 8  // u32
	rRows    = 12 // u32
	rCols    = 16 // u32
	rSchema  = 20 // u16
	rParams  = 22 // 8 × u8: R, F, U, S, W, G, L, A
	rFlags   = 30 // u8: recTolerance, recThrottled, recExact, recLaunchPDL
	rGPU     = 32 // u32
	rSource  = 36 // u32
	rTool    = 40 // u32
	rCubin   = 44 // u32
	rDecOff  = 48 // u32 into the text
	rDecLen  = 52 // u32
	rFig     = 56 // 6 × f64: median µs, GB/s, % of ceiling, speedup, p, PDL µs
	rTime    = 104
	rPDLSh   = 112 // u32: the PDL launches' dynamic shared memory
	recSize  = 120
	aRec     = 0  // u32: the record it belongs to
	aParams  = 4  // 8 × u8
	aFlags   = 12 // u8: altKept
	aCubin   = 16 // u32
	aDecOff  = 20 // u32
	aDecLen  = 24 // u32
	aFig     = 28 // 5 × f64: median µs, GB/s, % of ceiling, speedup, p
	altSize  = 72
	altKept  = 1
	nStrings = 1 << 24 // more distinct strings than any cache holds
)

// Record flags.
const (
	recTolerance = 1 << iota // class tolerance (else exact)
	recThrottled
	recExact     // the record has an exact alternative
	recLaunchPDL // the winner is recorded in PDL launch mode (Record.LaunchPDL)
)

// Table is every readable summary of a cache in a compact, read-only form
// made for engines' start-up: fixed-size records in one byte slice, the
// strings they share stored once, the decisions in one string. Its methods
// do not allocate. ReadTable makes one.
type Table struct {
	n      int
	recs   []byte   // n × recSize
	alts   []byte   // m × altSize
	altOf  []int32  // per record: its alternative, or -1
	strs   []string // shared strings
	text   string   // decisions
	bad    []BadEntry
	cubins map[string]CubinRef // where each cubin a record names lies in the file
	notice string
}

// ReadTable reads the index of the cache at path in a single read-only
// transaction: one open of the bbolt file, closed (and its shared lock
// released) before ReadTable returns. It checks the file as Open with
// ReadOnly does (ErrNotExist, ErrCorrupt, ErrVersion); an empty
// (zero-length) file is an empty cache, and a file of the previous layout
// is read from its records (Notice says so). Entries that cannot be read
// are listed by Bad. Cubins are not read, only located (see Cubin). Only
// opts.Timeout is used.
func ReadTable(path string, opts *Options) (*Table, error) {
	db, err := readerDB(path, opts)
	if err != nil {
		return nil, err
	}
	t, err := db.readTable(false)
	if errors.Is(err, ErrLocked) {
		// A writer held the file past the wait: read a copy of it instead,
		// without its lock. bbolt's meta checksums and the index's (or
		// each record's) CRC-32C accept only a consistent copy.
		if snap, serr := readSnapshot(path); serr == nil {
			snap.notice = fmt.Sprintf("cache %s was held by a writer past the wait: read from a copy of it", path)
			return snap, nil
		}
	}
	return t, err
}

// readSnapshot copies the file at path and reads the table of the copy,
// with the cubins it names copied too (their offsets in the original may
// move under the writer).
func readSnapshot(path string) (*Table, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp("", "gemvtune-snapshot-*.db")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, werr
	}
	db := &DB{path: f.Name(), readOnly: true, timeout: 100 * time.Millisecond}
	return db.readTable(true)
}

// readTable reads db's table in one read transaction; copyCubins copies
// every located cubin out of the file.
func (db *DB) readTable(copyCubins bool) (*Table, error) {
	t := &Table{}
	err := db.view(func(tx *bolt.Tx) error {
		layout, err := db.checkMeta(tx)
		if err != nil {
			return err
		}
		if layout == oldFileVersion {
			t = tableOf(readOldLayout(tx))
			t.notice = fmt.Sprintf("cache %s has layout %d of an older gemvtune: read from its %d records; autotune rewrites it",
				db.path, oldFileVersion, t.Len())
		} else {
			t = loadTable(tx)
		}
		t.locateCubins(tx, copyCubins)
		return nil
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
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("cache %s: %w: not a regular file", path, ErrCorrupt)
	}
	return db, nil
}

// loadTable reads tx's index, or rebuilds it from the JSON records when it
// is missing or damaged.
func loadTable(tx *bolt.Tx) *Table {
	var raw []byte
	if m := tx.Bucket(bucketMeta); m != nil {
		raw = m.Get(keyIndex)
	}
	if t, err := parseTable(raw); err == nil {
		return t
	}
	recs, bad := readRecords(tx)
	return tableOf(recs, bad)
}

// Notice is a remark about how the table was read (a file of an older
// layout), "" when there is none.
func (t *Table) Notice() string { return t.notice }

// Len returns the number of summaries.
func (t *Table) Len() int { return t.n }

// Bad lists the entries that could not be read.
func (t *Table) Bad() []BadEntry { return t.bad }

func (t *Table) rec(i int) []byte { return t.recs[i*recSize : (i+1)*recSize] }

// Group returns the arch, GPU model and format of summary i without
// decoding the rest.
func (t *Table) Group(i int) (arch, model, format string) {
	r, le := t.rec(i), binary.LittleEndian
	return t.strs[le.Uint32(r[rArch:])], t.strs[le.Uint32(r[rModel:])], t.strs[le.Uint32(r[rFormat:])]
}

// Key returns summary i's key.
func (t *Table) Key(i int) Key {
	r, le := t.rec(i), binary.LittleEndian
	a, m, f := t.Group(i)
	return Key{Arch: a, Model: m, Format: f, Rows: int(le.Uint32(r[rRows:])), Cols: int(le.Uint32(r[rCols:]))}
}

// Summary returns summary i.
func (t *Table) Summary(i int) Summary {
	r, le := t.rec(i), binary.LittleEndian
	fig := func(b []byte, k int) float64 { return math.Float64frombits(le.Uint64(b[8*k:])) }
	s := Summary{
		Key:      t.Key(i),
		Schema:   int(le.Uint16(r[rSchema:])),
		Params:   paramsOf(r[rParams:]),
		Class:    ClassExact,
		Decision: t.text[le.Uint32(r[rDecOff:]) : le.Uint32(r[rDecOff:])+le.Uint32(r[rDecLen:])],
		MedianUS: fig(r[rFig:], 0), GBs: fig(r[rFig:], 1), PctCeiling: fig(r[rFig:], 2),
		Speedup: fig(r[rFig:], 3), P: fig(r[rFig:], 4), PDLUS: fig(r[rFig:], 5),
		PDLShared: int(le.Uint32(r[rPDLSh:])), LaunchPDL: r[rFlags]&recLaunchPDL != 0,
		Throttled:   r[rFlags]&recThrottled != 0,
		GPUName:     t.strs[le.Uint32(r[rGPU:])],
		SourceHash:  t.strs[le.Uint32(r[rSource:])],
		ToolVersion: t.strs[le.Uint32(r[rTool:])],
		CubinHash:   t.strs[le.Uint32(r[rCubin:])],
	}
	if r[rFlags]&recTolerance != 0 {
		s.Class = ClassTolerance
	}
	if ns := int64(le.Uint64(r[rTime:])); ns != 0 {
		s.Time = time.Unix(0, ns).UTC()
	}
	if j := t.altOf[i]; j >= 0 {
		a := t.alts[int(j)*altSize : (int(j)+1)*altSize]
		off := le.Uint32(a[aDecOff:])
		s.Exact = ExactSummary{Present: true, Params: paramsOf(a[aParams:]), Kept: a[aFlags]&altKept != 0,
			Decision: t.text[off : off+le.Uint32(a[aDecLen:])], MedianUS: fig(a[aFig:], 0), GBs: fig(a[aFig:], 1),
			PctCeiling: fig(a[aFig:], 2), Speedup: fig(a[aFig:], 3), P: fig(a[aFig:], 4),
			CubinHash: t.strs[le.Uint32(a[aCubin:])]}
	}
	return s
}

// paramsOf reads the knob bytes of a record (one per knob, space.Knobs
// order).
func paramsOf(b []byte) space.Params {
	var p space.Params
	for i, k := range space.Knobs {
		p = k.With(p, int(b[i]))
	}
	return p
}

// Cubin returns where the cubin with this sha256 hex hash lay in the file
// when the table was read; false if no record's cubin has that hash.
func (t *Table) Cubin(hash string) (CubinRef, bool) {
	ref, ok := t.cubins[hash]
	return ref, ok
}

// tableOf builds the table of summaries of recs.
func tableOf(recs []Record, bad []BadEntry) *Table {
	sums := make([]Summary, len(recs))
	for i := range recs {
		sums[i] = recs[i].Summary()
	}
	t, _ := parseTable(encodeTable(sums))
	t.bad = bad
	return t
}

// encodeTable writes sums as an index value.
func encodeTable(sums []Summary) []byte {
	strs := map[string]uint32{}
	var list []string
	ref := func(s string) uint32 {
		if i, ok := strs[s]; ok {
			return i
		}
		strs[s] = uint32(len(list))
		list = append(list, s)
		return uint32(len(list) - 1)
	}
	var text bytes.Buffer
	le := binary.LittleEndian
	recs := make([]byte, len(sums)*recSize)
	var alts []byte
	for i := range sums {
		s := &sums[i]
		r := recs[i*recSize : (i+1)*recSize]
		le.PutUint32(r[rArch:], ref(s.Arch))
		le.PutUint32(r[rModel:], ref(s.Model))
		le.PutUint32(r[rFormat:], ref(s.Format))
		le.PutUint32(r[rRows:], uint32(s.Rows))
		le.PutUint32(r[rCols:], uint32(s.Cols))
		le.PutUint16(r[rSchema:], uint16(s.Schema))
		putParams(r[rParams:], s.Params)
		if s.Class == ClassTolerance {
			r[rFlags] |= recTolerance
		}
		if s.Throttled {
			r[rFlags] |= recThrottled
		}
		if s.LaunchPDL {
			r[rFlags] |= recLaunchPDL
		}
		le.PutUint32(r[rPDLSh:], uint32(max(s.PDLShared, 0)))
		le.PutUint32(r[rGPU:], ref(s.GPUName))
		le.PutUint32(r[rSource:], ref(s.SourceHash))
		le.PutUint32(r[rTool:], ref(s.ToolVersion))
		le.PutUint32(r[rCubin:], ref(s.CubinHash))
		le.PutUint32(r[rDecOff:], uint32(text.Len()))
		le.PutUint32(r[rDecLen:], uint32(len(s.Decision)))
		text.WriteString(s.Decision)
		for k, f := range [...]float64{s.MedianUS, s.GBs, s.PctCeiling, s.Speedup, s.P, s.PDLUS} {
			le.PutUint64(r[rFig+8*k:], math.Float64bits(f))
		}
		if !s.Time.IsZero() {
			le.PutUint64(r[rTime:], uint64(s.Time.UnixNano()))
		}
		if x := &s.Exact; x.Present {
			r[rFlags] |= recExact
			a := make([]byte, altSize)
			le.PutUint32(a[aRec:], uint32(i))
			putParams(a[aParams:], x.Params)
			if x.Kept {
				a[aFlags] = altKept
			}
			le.PutUint32(a[aCubin:], ref(x.CubinHash))
			le.PutUint32(a[aDecOff:], uint32(text.Len()))
			le.PutUint32(a[aDecLen:], uint32(len(x.Decision)))
			text.WriteString(x.Decision)
			for k, f := range [...]float64{x.MedianUS, x.GBs, x.PctCeiling, x.Speedup, x.P} {
				le.PutUint64(a[aFig+8*k:], math.Float64bits(f))
			}
			alts = append(alts, a...)
		}
	}
	b := append([]byte{}, indexMagic...)
	b = le.AppendUint32(b, uint32(len(sums)))
	b = le.AppendUint32(b, uint32(len(alts)/altSize))
	b = le.AppendUint32(b, uint32(len(list)))
	for _, s := range list {
		b = le.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	b = le.AppendUint32(b, uint32(text.Len()))
	b = append(b, text.Bytes()...)
	b = append(b, recs...)
	b = append(b, alts...)
	return le.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func putParams(b []byte, p space.Params) {
	for i, k := range space.Knobs {
		b[i] = byte(k.Of(p))
	}
}

// knobBytes is the room a record of the index has for knobs, one byte
// each: a new knob changes the record (and so FileVersion).
const knobBytes = rFlags - rParams

// errIndex is a damaged or foreign index value.
var errIndex = errors.New("index unreadable")

// parseTable reads an index value. Every check a writer's value passes:
// the checksum, the framing, each reference, name, knob, figure and
// decision in range.
func parseTable(b []byte) (*Table, error) {
	le := binary.LittleEndian
	if len(b) < len(indexMagic)+16 || !bytes.Equal(b[:4], indexMagic) {
		return nil, errIndex
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != le.Uint32(b[len(b)-4:]) {
		return nil, fmt.Errorf("%w: checksum mismatch", errIndex)
	}
	d := decoder{b: body[4:]}
	n, m, ns := int(d.u32()), int(d.u32()), int(d.u32())
	if d.err != nil || n > len(body)/recSize || m > n || ns > nStrings || ns > len(body) {
		return nil, errIndex
	}
	t := &Table{n: n, strs: make([]string, ns)}
	for i := range t.strs {
		t.strs[i] = string(d.bytes(int(d.u32())))
	}
	t.text = string(d.bytes(int(d.u32())))
	t.recs = bytes.Clone(d.bytes(n * recSize))
	t.alts = bytes.Clone(d.bytes(m * altSize))
	if d.err != nil || len(d.b) != 0 {
		return nil, errIndex
	}
	if err := t.check(m); err != nil {
		return nil, err
	}
	return t, nil
}

// check validates every record and alternative and links them.
func (t *Table) check(m int) error {
	le := binary.LittleEndian
	ns, text := uint32(len(t.strs)), uint64(len(t.text))
	valid := make(map[[2]uint32]bool) // (kind, string) → name checked valid
	name := func(kind, ref uint32, ok func(string) bool) bool {
		if v, done := valid[[2]uint32{kind, ref}]; done {
			return v
		}
		v := ok(t.strs[ref])
		valid[[2]uint32{kind, ref}] = v
		return v
	}
	figsOK := func(b []byte, k int) bool {
		for j := 0; j < k; j++ {
			if badFigure(math.Float64frombits(le.Uint64(b[8*j:]))) {
				return false
			}
		}
		return true
	}
	t.altOf = make([]int32, t.n)
	exact := 0
	for i := 0; i < t.n; i++ {
		t.altOf[i] = -1
		r := t.rec(i)
		refs := [...]uint32{le.Uint32(r[rArch:]), le.Uint32(r[rModel:]), le.Uint32(r[rFormat:]), le.Uint32(r[rGPU:]),
			le.Uint32(r[rSource:]), le.Uint32(r[rTool:]), le.Uint32(r[rCubin:])}
		for _, x := range refs {
			if x >= ns {
				return fmt.Errorf("%w: record %d: string %d of %d", errIndex, i, x, ns)
			}
		}
		rows, cols := le.Uint32(r[rRows:]), le.Uint32(r[rCols:])
		p := paramsOf(r[rParams:])
		if !name(0, refs[0], validArch) || !name(1, refs[1], validModel) || !name(2, refs[2], validFormatName) ||
			rows-1 >= space.MaxDim || cols-1 >= space.MaxDim || r[rFlags]&^(recTolerance|recThrottled|recExact|recLaunchPDL) != 0 ||
			uint64(le.Uint32(r[rDecOff:]))+uint64(le.Uint32(r[rDecLen:])) > text || !figsOK(r[rFig:], 6) ||
			p.Validate() != nil {
			return fmt.Errorf("%w: record %d does not check out", errIndex, i)
		}
		if r[rFlags]&recExact != 0 {
			exact++
		}
	}
	if exact != m {
		return fmt.Errorf("%w: %d records with an alternative, %d alternatives", errIndex, exact, m)
	}
	prev := -1
	for j := 0; j < m; j++ {
		a := t.alts[j*altSize : (j+1)*altSize]
		i := int(le.Uint32(a[aRec:]))
		if i <= prev || i >= t.n || t.rec(i)[rFlags]&recExact == 0 || a[aFlags]&^altKept != 0 ||
			le.Uint32(a[aCubin:]) >= ns || uint64(le.Uint32(a[aDecOff:]))+uint64(le.Uint32(a[aDecLen:])) > text ||
			!figsOK(a[aFig:], 5) || paramsOf(a[aParams:]).Validate() != nil {
			return fmt.Errorf("%w: alternative %d does not check out", errIndex, j)
		}
		t.altOf[i], prev = int32(j), i
	}
	return nil
}

// locateCubins finds where each cubin the records name lies in the file.
func (t *Table) locateCubins(tx *bolt.Tx, copyAll bool) {
	cb := tx.Bucket(bucketCubin)
	if cb == nil {
		return
	}
	base, size := tx.DB().Info().Data, tx.Size()
	t.cubins = map[string]CubinRef{}
	locate := func(h string) {
		if _, done := t.cubins[h]; done || h == "" {
			return
		}
		if v := cb.Get([]byte(h)); v != nil {
			ref := CubinRef{Hash: h, Off: fileOffset(v, base, size), Len: len(v)}
			if ref.Off < 0 || copyAll {
				// bbolt copied the value out of the map: it lies in a small
				// inline bucket, so a copy costs little.
				ref.data = bytes.Clone(v)
			}
			t.cubins[h] = ref
		}
	}
	le := binary.LittleEndian
	for i := 0; i < t.n; i++ {
		locate(t.strs[le.Uint32(t.rec(i)[rCubin:])])
	}
	for j := 0; j*altSize < len(t.alts); j++ {
		locate(t.strs[le.Uint32(t.alts[j*altSize+aCubin:])])
	}
}

// decoder reads little-endian fields, remembering the first short read.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) take(n int) []byte {
	if d.err != nil || n < 0 || n > len(d.b) {
		d.err = errIndex
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) u32() uint32 {
	if b := d.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (d *decoder) bytes(n int) []byte { return d.take(n) }
