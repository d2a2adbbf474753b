package variants

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/gemvtune/gemvtune/space"
)

// generatorVersion changes whenever Source's generated header changes in a
// way that alters kernels; it is part of every SourceHash.
const generatorVersion = "gemvtune-kernels/1"

//go:embed kernels/*.cu
var kernelFiles embed.FS

// preludeFile holds the pieces every family shares (loads, x access,
// staging, the warp reduction and the kernel body).
const preludeFile = "kernels/prelude.cu"

// family is the one implementation of Family: the families differ only in
// their template file and a few numbers.
type family struct {
	format   string  // format name, e.g. "q4_0"
	template string  // embedded file, e.g. "kernels/q4_0.cu"
	chunk    int     // weights one lane consumes per step
	layouts  []int   // values of knob l the template supports
	bound    float64 // relative L2 error bound vs the float64 reference

	src  string // prelude + template, read once
	hash string // SourceHash
}

// newFamily reads the family's template and computes its hash. Templates
// are embedded, so a read failure is a build defect.
func newFamily(format, template string, chunk int, layouts []int, bound float64) *family {
	prelude, err := kernelFiles.ReadFile(preludeFile)
	if err != nil {
		panic(fmt.Sprintf("variants: embedded %s: %v", preludeFile, err))
	}
	body, err := kernelFiles.ReadFile(template)
	if err != nil {
		panic(fmt.Sprintf("variants: embedded %s: %v", template, err))
	}
	sum := sha256.Sum256([]byte(generatorVersion + "\x00" + string(prelude) + "\x00" + string(body)))
	return &family{
		format:   format,
		template: template,
		chunk:    chunk,
		layouts:  layouts,
		bound:    bound,
		src:      string(prelude) + "\n" + string(body),
		hash:     hex.EncodeToString(sum[:])[:16],
	}
}

// Format returns the registered format; before the formats' init functions
// ran (or if one is missing) a stand-in that only knows its name.
func (f *family) Format() Format {
	if fm, ok := formats[f.format]; ok {
		return fm
	}
	return missingFormat(f.format)
}

func (f *family) Layouts() []int { return slices.Clone(f.layouts) }

func (f *family) SourceHash() string { return f.hash }

func (f *family) Class(space.Params) Class { return Exact }

func (f *family) ErrorBound() float64 { return f.bound }

// Source returns the generated header of #defines for p followed by the
// prelude and the family's template.
func (f *family) Source(p space.Params) (string, error) {
	if err := f.checkParams(p); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// gemvtune %s %s (%s, source %s)\n", f.format, p.ID(), generatorVersion, f.hash)
	for _, d := range []struct {
		name string
		v    int
	}{{"GEMV_R", p.R}, {"GEMV_F", p.F}, {"GEMV_U", p.U}, {"GEMV_S", p.S}, {"GEMV_W", p.W}, {"GEMV_L", p.L}} {
		fmt.Fprintf(&b, "#define %s %d\n", d.name, d.v)
	}
	b.WriteString(f.src)
	return b.String(), nil
}

// checkParams accepts p when every knob is in its value set and the family
// supports p's layout.
func (f *family) checkParams(p space.Params) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("%s variant: %w", f.format, err)
	}
	if !slices.Contains(f.layouts, p.L) {
		return fmt.Errorf("%w: %s has no layout l=%d (accepted: %s)", ErrShape, f.format, p.L, joinInts(f.layouts))
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

// Launch returns block = 32*W threads, grid = ceil(rows / (R*W)) blocks and,
// for s=1, cols*4 bytes of dynamic shared memory (x staged once per block).
func (f *family) Launch(p space.Params, rows, cols int) Launch {
	rowsPerBlock := max(1, p.R*p.W)
	l := Launch{
		Grid:  [3]uint32{uint32((max(rows, 0) + rowsPerBlock - 1) / rowsPerBlock), 1, 1},
		Block: [3]uint32{uint32(32 * max(p.W, 1)), 1, 1},
	}
	if p.S == 1 {
		l.SharedBytes = uint32(max(cols, 0) * 4)
	}
	return l
}

// Repack converts raw bytes to layout: 0 returns raw as is, 1 is the planar
// layout of q4_0 and q8_0 (RepackPlanes).
func (f *family) Repack(raw []byte, rows, cols, layout int) ([]byte, error) {
	if !slices.Contains(f.layouts, layout) {
		return nil, fmt.Errorf("%w: %s has no layout l=%d (accepted: %s)", ErrShape, f.format, layout, joinInts(f.layouts))
	}
	if layout == 0 {
		return raw, nil
	}
	out, err := RepackPlanes(f.format, raw, rows, cols)
	if err != nil {
		return nil, fmt.Errorf("repacking %s to layout %d: %w", f.format, layout, err)
	}
	return out, nil
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
