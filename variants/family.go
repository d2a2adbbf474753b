package variants

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gemvtune/gemvtune/space"
)

// generatorVersion changes whenever Source's generated header changes in a
// way that alters kernels; it is part of every SourceHash.
const generatorVersion = GeneratorVersion

// GeneratorVersion names the kernel generator, for version lines.
const GeneratorVersion = "gemvtune-kernels/6"

//go:embed kernels/*.cu
var kernelFiles embed.FS

// preludeFile holds the pieces every family shares (loads, x access,
// staging, the warp reduction and the kernel body).
const preludeFile = "kernels/prelude.cu"

// family is the one implementation of Family: the families differ only in
// their kernel files and a few numbers.
type family struct {
	format string  // format name, e.g. "q4_0"
	chunk  int     // weights one lane consumes per step
	acts   []int   // values of knob a the kernel files support
	bound  float64 // relative L2 error bound vs the float64 reference (a=0)
	// int8EvenOdd stages int8 x of each group as its even-indexed values,
	// then its odd ones (affine4: a byte holds weights 2b and 2b+1).
	int8EvenOdd bool
	// rings describes a chunk in the shared-memory weight ring of s=2
	// (prelude.cu) per layout that has one: its 16-byte and 4-byte
	// cp.async parts. Empty: the family has no s=2.
	rings map[int]ringParts
	// bulk lists the layouts that have s=3: weights copied whole warp
	// tile by warp tile with bulk copies (prelude.cu), which needs the 32
	// chunks a warp consumes in one step of a row to be one contiguous run
	// of the layout (bulkTileBytes). Empty: the family has no s=3.
	bulk []int
	// bulkLandFirst has an s=3 warp read a full ring slot into registers
	// and refill it before it decodes the chunks (GEMV_BULK_LAND_FIRST),
	// so the refill does not wait for the decode, at the cost of u·r
	// chunks of registers. Measured per family in the llama-3-8b token with
	// PDL edges on the H200: q6_K 2.3 % and q4_K 0.75 % less time; q4_0
	// 0.6 %, q5_K 1.5 %, f16 0.3 % and q8_0 0.35 % more, affine4 and bf16
	// the same (docs/results.md, "twenty-second lease" and "twenty-third
	// lease"); on for q4_K and q6_K only.
	bulkLandFirst bool
	// layouts are knob l's values: 0 (raw) and the keys of repacked, which
	// says how to build each from raw bytes and which cols it needs
	// (setRepacked sets both).
	layouts  []int
	repacked map[int]repackedLayout

	src  string // the prelude and the family's kernel files, read once
	hash string // SourceHash
}

// newFamily reads the family's template and computes its hash. Templates
// are embedded, so a read failure is a build defect. acts lists the values
// of knob a the template supports ({0}, or {0, 1} with int8 activations).
func newFamily(format, template string, chunk int, acts []int, bound float64) *family {
	prelude, body := kernelFile(preludeFile), kernelFile(template)
	sum := sha256.Sum256([]byte(generatorVersion + "\x00" + string(prelude) + "\x00" + string(body)))
	return &family{
		format:  format,
		chunk:   chunk,
		acts:    acts,
		bound:   bound,
		layouts: []int{0},
		src:     string(prelude) + "\n" + string(body),
		hash:    hex.EncodeToString(sum[:])[:16],
	}
}

// kernelFile is an embedded kernel file; embedded, so a read failure is
// a build defect.
func kernelFile(name string) []byte {
	body, err := kernelFiles.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("variants: embedded %s: %v", name, err))
	}
	return body
}

// withFile appends another kernel file to the source and hashes it with
// the rest: a body several families share, after the family's file that
// defines what it needs (dense16.cu), or the family's file after the
// helpers it uses (kquant.cu).
func (f *family) withFile(file string) {
	body := kernelFile(file)
	f.src += "\n" + string(body)
	sum := sha256.Sum256([]byte(f.hash + "\x00" + string(body)))
	f.hash = hex.EncodeToString(sum[:])[:16]
}

// Format returns the registered format; before the formats' init functions
// ran (or if one is missing) a stand-in that only knows its name.
func (f *family) Format() Format {
	if fm, ok := formats[f.format]; ok {
		return fm
	}
	return missingFormat(f.format)
}

// setRepacked gives the family its repacked layouts (knob l ≥ 1).
func (f *family) setRepacked(m map[int]repackedLayout) {
	f.repacked = m
	f.layouts = append([]int{0}, slices.Sorted(maps.Keys(m))...)
}

// ChunkWeights is the weights one lane consumes per step (GEMV_CHUNK).
func (f *family) ChunkWeights() int { return f.chunk }

// Layouts lists knob l's values: 0 (raw bytes) and the repacked layouts.
func (f *family) Layouts() []int { return slices.Clone(f.layouts) }

// ringParts counts one chunk's cp.async copies in the s=2 ring of one
// layout: p16 16-byte and p4 4-byte parts. cols is the multiple of cols
// s=2 needs beyond the family's own, 0 for none: a 4-byte scale word holds
// two blocks' f16 scales (q4_0, q8_0: 64 weights; raw affine4: two groups,
// 128), and must stay inside its row. A layout without an entry has no
// ring (q4_0's and q8_0's raw blocks are only 2-byte aligned).
type ringParts struct {
	p16, p4, cols int
}

// ringWarpBytes is the ring of one warp: u slots of r rows, each part a
// lane-contiguous run (512 bytes per 16-byte part, 128 per 4-byte part) so
// that the lanes' shared-memory reads are conflict-free (prelude.cu).
func (f *family) ringWarpBytes(p space.Params) int {
	rp := f.rings[p.L]
	return p.U * p.R * (rp.p16*512 + rp.p4*128)
}

// bulkWarpBytes is the s=3 ring of one warp: two slots of r copies of u
// tiles, plus the two mbarriers of 8 bytes (prelude.cu puts every warp's
// barriers after all the rings).
func (f *family) bulkWarpBytes(p space.Params) int {
	return bulkSlots * (p.R*p.U*f.bulkTileBytes(p.L) + 8)
}

// bulkTileBytes is one row's warp tile in layout l (GEMV_TILE): the bytes
// of the 32 chunks a warp consumes in one step (q4_0 and affine4 576,
// q8_0 1088, q4_K 1152, bf16 512); 0 where l has no s=3. Repacked layouts
// keep the raw size, so the format's byte count of one row of 32 chunks
// is it.
func (f *family) bulkTileBytes(l int) int {
	if !slices.Contains(f.bulk, l) {
		return 0
	}
	n, err := f.Format().Bytes(1, 32*f.chunk)
	if err != nil {
		return 0
	}
	return int(n)
}

// bulkSlots is the depth of the s=3 ring (GEMV_BULK_SLOTS): double
// buffering; knob u sets how many tiles one copy moves.
const bulkSlots = 2

// Stagings lists knob s's values: 0 and 1, 2 where the family copies its
// weights through a shared-memory ring, and 3 where it copies whole tiles
// with bulk copies.
func (f *family) Stagings() []int {
	s := []int{0, 1}
	if len(f.rings) > 0 {
		s = append(s, 2)
	}
	if len(f.bulk) > 0 {
		s = append(s, 3)
	}
	return s
}

// repackedLayout is a layout l ≥ 1 of a family: the function that builds
// it from raw bytes, the multiple of cols it needs beyond the family's
// own (0 for none) and its name in errors.
type repackedLayout struct {
	repack func(format string, raw []byte, rows, cols int) ([]byte, error)
	cols   int
	name   string
	fn     string // the exported repack function, for LayoutDescription
}

// Layouts of the repacked kinds, for the families' tables.
var (
	planesLayout = repackedLayout{repack: RepackPlanes, name: "planes", fn: "RepackPlanes"}
	tilesLayout  = repackedLayout{repack: RepackTiles, cols: TileWeights, name: "tiles of 8 blocks", fn: "RepackTiles"}
)

// interleavedLayout is f's interleaved layout (RepackInterleaved). It
// takes the format's value: the families are made before the formats are
// registered.
func interleavedLayout(f interleaver) repackedLayout {
	return repackedLayout{repack: RepackInterleaved, cols: f.tileWeights(),
		name: "interleaved warp tiles", fn: "RepackInterleaved"}
}

// LayoutDescription says in words what layout l of format is and which
// function builds it from raw bytes, e.g. "interleaved warp tiles
// (variants.RepackInterleaved)"; "raw bytes" for l = 0, and "" for a
// layout the format does not have.
func LayoutDescription(format string, l int) string {
	f, ok := families[format].(*family)
	switch {
	case l == 0:
		return "raw bytes"
	case !ok:
		return ""
	}
	rl, ok := f.repacked[l]
	if !ok {
		return ""
	}
	return fmt.Sprintf("%s (variants.%s)", rl.name, rl.fn)
}

// Activations lists knob a's values: 0 (f32 activations) and, for the
// quantized formats, 1 (int8 activations with dp4a).
func (f *family) Activations() []int { return slices.Clone(f.acts) }

func (f *family) SourceHash() string { return f.hash }

// Class is Exact for f32 activations (every knob keeps stock's order) and
// Tolerance for int8 activations, which round x.
func (f *family) Class(p space.Params) Class {
	if p.A == 1 {
		return Tolerance
	}
	return Exact
}

// ErrorBound is the family's f32 bound for a=0 and boundInt8 for a=1.
func (f *family) ErrorBound(p space.Params) float64 {
	if p.A == 1 {
		return boundInt8
	}
	return f.bound
}

// Source returns the generated header of #defines for p (and the family's
// chunk size) followed by the prelude and the family's template.
func (f *family) Source(p space.Params) (string, error) {
	if err := f.checkParams(p); err != nil {
		return "", err
	}
	// Knob g only sets the grid (Launch). A staged variant (s=1) is always
	// built with the row-group loop (walking groups at a stride of
	// gridDim.x), so every g of it shares one source and one cubin; an s=0
	// variant gets the loop only when g > 0 (stock stays loop-free).
	loop := p.S >= 1 || p.G > 0
	p.G = 0
	var b strings.Builder
	fmt.Fprintf(&b, "// gemvtune %s %s (%s, source %s)\n", f.format, p.ID(), generatorVersion, f.hash)
	for _, k := range space.Knobs {
		if k.Define != "" {
			fmt.Fprintf(&b, "#define %s %d\n", k.Define, k.Of(p))
		}
	}
	for _, d := range []struct {
		name string
		v    int
	}{{"GEMV_CHUNK", f.chunk}, {"GEMV_XQ_EVENODD", b2i(f.int8EvenOdd)}, {"GEMV_LOOP", b2i(loop)},
		{"GEMV_P16", f.rings[p.L].p16}, {"GEMV_P4", f.rings[p.L].p4}, {"GEMV_TILE", f.bulkTileBytes(p.L)},
		{"GEMV_BULK_LAND_FIRST", b2i(f.bulkLandFirst)}} {
		fmt.Fprintf(&b, "#define %s %d\n", d.name, d.v)
	}
	b.WriteString(f.src)
	return b.String(), nil
}

// checkParams accepts p when every knob is in its value set, the family
// supports p's layout and activation path, and a=1 comes with s=1 (the int8
// activations live in shared memory).
func (f *family) checkParams(p space.Params) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("%s variant: %w", f.format, err)
	}
	if !slices.Contains(f.layouts, p.L) {
		return fmt.Errorf("%w: %s has no layout l=%d (accepted: %s)", ErrShape, f.format, p.L, joinInts(f.layouts))
	}
	if !slices.Contains(f.acts, p.A) {
		return fmt.Errorf("%w: %s has no activation path a=%d (accepted: %s)", ErrShape, f.format, p.A, joinInts(f.acts))
	}
	if p.A == 1 && p.S == 0 {
		return fmt.Errorf("%w: %s %s: a=1 stages int8 activations in shared memory: needs s ≥ 1", ErrShape, f.format, p.ID())
	}
	if p.S == 2 && len(f.rings) == 0 {
		return fmt.Errorf("%w: %s has no weight ring (s=2); accepted s: 0, 1", ErrShape, f.format)
	}
	if _, ok := f.rings[p.L]; p.S == 2 && !ok {
		return fmt.Errorf("%w: %s s=2 (weight ring) needs layout l in %s, got l=%d", ErrShape, f.format, joinInts(slices.Sorted(maps.Keys(f.rings))), p.L)
	}
	if p.S == 3 && !slices.Contains(f.bulk, p.L) {
		if len(f.bulk) == 0 {
			return fmt.Errorf("%w: %s has no bulk-copy ring (s=3); accepted s: %s", ErrShape, f.format, joinInts(f.Stagings()))
		}
		return fmt.Errorf("%w: %s s=3 (bulk copies of whole tiles) needs layout l in %s, got l=%d", ErrShape, f.format, joinInts(f.bulk), p.L)
	}
	return nil
}

// Gate accepts shape [rows, cols] for p when rows, cols ≥ 1, cols is a
// multiple of the format's block (or group) and of the family's chunk, and
// p is a valid variant of the family.
func (f *family) Gate(p space.Params, rows, cols int) error {
	if err := f.checkParams(p); err != nil {
		return err
	}
	if rows < 1 || cols < 1 {
		return fmt.Errorf("%w: %s needs rows and cols ≥ 1, got %dx%d", ErrShape, f.format, rows, cols)
	}
	step := lcm(f.blockWeights(), f.chunk)
	if cols%step != 0 {
		return fmt.Errorf("%w: %s needs cols a multiple of %d, got %d", ErrShape, f.format, step, cols)
	}
	if rl := f.repacked[p.L]; rl.cols > 0 && cols%rl.cols != 0 {
		return fmt.Errorf("%w: %s layout l=%d (%s) needs cols a multiple of %d, got %d", ErrShape, f.format, p.L, rl.name, rl.cols, cols)
	}
	if rp := f.rings[p.L]; p.S == 2 && rp.cols > 0 && cols%rp.cols != 0 {
		return fmt.Errorf("%w: %s s=2 copies 4-byte scale words of two blocks: needs cols a multiple of %d, got %d", ErrShape, f.format, rp.cols, cols)
	}
	if tile := 32 * f.chunk; p.S == 3 && cols%tile != 0 {
		return fmt.Errorf("%w: %s s=3 copies whole warp tiles of %d weights: needs cols a multiple of %d, got %d", ErrShape, f.format, tile, tile, cols)
	}
	if int64(rows)*int64(cols) > maxElements {
		return fmt.Errorf("%w: %s shape %dx%d has more than %d weights", ErrShape, f.format, rows, cols, int64(maxElements))
	}
	return nil
}

// Error bounds (relative L2 against the float64 reference); docs/kernels.md
// derives them.
const (
	// boundF32 covers f32 rounding of the dequantization and of the
	// accumulation (at most ~200 dependent roundings per output up to
	// K = 32768), about 10× above what is measured.
	boundF32 = 1e-5
	// boundAffine4 covers the reference's f16 rounding of each weight
	// (2^-11 relative) that the kernel does not do.
	boundAffine4 = 2e-3
	// boundInt8 covers rounding x to int8 per group of 32 (a=1): each x
	// moves by at most d_x/2 = max|x|/254, so a dot product's relative
	// error is about d_x/(2·rms(x)·√3): 0.38 % for uniform x, 0.5 % for
	// Gaussian. Measured 0.31–0.62 % (host model), 0.34–0.39 % (H200);
	// few-row shapes have heavier tails (docs/kernels.md).
	boundInt8 = 2e-2
)

// maxElements bounds rows*cols: the kernels index rows and columns with
// 32-bit ints and bytes with 64-bit offsets; 2^40 weights is far beyond any
// single GPU's memory.
const maxElements = 1 << 40

// blockWeights is the format's block or group size (weights).
func (f *family) blockWeights() int {
	if fm, ok := formats[f.format]; ok {
		return fm.BlockWeights()
	}
	return f.chunk
}

// Launch returns block = 32*W threads, grid = ceil(ceil(rows / (R*W)) / G)
// blocks (G = 0 counts as 1: each block walks its row groups of R*W rows at
// a stride of the grid) and, for s=1, the dynamic shared memory of x staged once per block: cols*4
// bytes plus, for chunks of 32 weights or more, 16 bytes of padding per
// chunk (docs/kernels.md: it keeps the lanes' 16-byte reads conflict-free).
// For a=1 it is the int8 form: 48 bytes per group of 32 x (32 q bytes, then
// the f32 scale, the int sum and 8 bytes of padding; prelude.cu), plus 16
// bytes per q4_K chunk (two groups).
func (f *family) Launch(p space.Params, rows, cols int) Launch {
	rowsPerBlock := max(1, p.R*p.W)
	l := Launch{
		Grid:  [3]uint32{uint32((max(rows, 0) + rowsPerBlock - 1) / rowsPerBlock), 1, 1},
		Block: [3]uint32{uint32(32 * max(p.W, 1)), 1, 1},
	}
	if p.G > 1 {
		l.Grid[0] = (l.Grid[0] + uint32(p.G) - 1) / uint32(p.G)
	}
	switch {
	case p.A == 1:
		l.SharedBytes = uint32(max(cols, 0) / f.chunk * f.int8ChunkBytes())
	case p.S >= 1:
		l.SharedBytes = uint32(f.stagedBytes(max(cols, 0)))
	}
	switch p.S {
	case 2:
		l.SharedBytes += uint32(p.W * f.ringWarpBytes(p))
	case 3:
		l.SharedBytes += uint32(p.W * f.bulkWarpBytes(p))
	}
	return l
}

// int8GroupBytes is the shared memory of one group of 32 int8 activations
// (a=1): 32 q bytes, f32 scale, int32 sum, 8 bytes of padding.
const int8GroupBytes = 48

// int8ChunkBytes is the staged int8 x of one chunk (prelude.cu): its groups
// of 32, plus 16 bytes of padding when it has more than one (q4_K), so that
// the lanes' 16-byte reads stay conflict-free.
func (f *family) int8ChunkBytes() int {
	groups := max(f.chunk/32, 1)
	n := groups * int8GroupBytes
	if groups > 1 {
		n += 16
	}
	return n
}

// stagedBytes is the shared memory of x staged with its padding (prelude.cu:
// one float4 after every chunk of at least 32 weights).
func (f *family) stagedBytes(cols int) int {
	n := cols * 4
	if f.chunk >= 32 {
		n += cols / f.chunk * 16
	}
	return n
}

// Repack converts raw bytes to layout: 0 returns raw as is; 1 is the
// planar layout of q4_0 and q8_0 (RepackPlanes) and the interleaved one of
// q4_K and affine4 (RepackInterleaved); 2 is q8_0's tiled layout
// (RepackTiles) and q4_0's interleaved one.
func (f *family) Repack(raw []byte, rows, cols, layout int) ([]byte, error) {
	if !slices.Contains(f.layouts, layout) {
		return nil, fmt.Errorf("%w: %s has no layout l=%d (accepted: %s)", ErrShape, f.format, layout, joinInts(f.layouts))
	}
	if layout == 0 {
		return raw, nil
	}
	out, err := f.repacked[layout].repack(f.format, raw, rows, cols)
	if err != nil {
		return nil, fmt.Errorf("repacking %s to layout %d: %w", f.format, layout, err)
	}
	return out, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func lcm(a, b int) int {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}

func joinInts(vs []int) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, ", ")
}

// missingFormat stands in for a format that is not registered: it has a
// name and fails everything else.
type missingFormat string

func (m missingFormat) err() error {
	return fmt.Errorf("%w %q: not registered", ErrUnknownFormat, string(m))
}
func (m missingFormat) Name() string                  { return string(m) }
func (m missingFormat) BlockWeights() int             { return 0 }
func (m missingFormat) Bytes(int, int) (int64, error) { return 0, m.err() }
func (m missingFormat) Quantize([]float32, int, int) ([]byte, error) {
	return nil, m.err()
}
func (m missingFormat) Dequantize([]byte, int, int) ([]float32, error) {
	return nil, m.err()
}
func (m missingFormat) Reference([]byte, []float32, int, int) ([]float64, error) {
	return nil, m.err()
}
