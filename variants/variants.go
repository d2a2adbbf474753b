// Package variants holds the GEMV kernel families, one per weight format:
// the Go side of each format (quantize, dequantize, float64 reference GEMV,
// byte accounting, repacking) and the CUDA source template that NVRTC
// compiles for any combination of the knobs in package space.
//
// Every kernel has the same signature, so the tuner treats families alike:
//
//	extern "C" __global__ void gemv(const unsigned char* W, const float* x, float* y, int rows, int cols)
//
// W holds the weights in the family's layout (knob l), x is [cols] f32 and
// y is [rows] f32.
package variants

import (
	"errors"

	"github.com/gemvtune/gemvtune/space"
)

// Class says how a variant's output relates to the stock kernel's.
type Class string

const (
	// Exact variants keep stock's per-row summation order and must be
	// bit-identical to stock on every output.
	Exact Class = "exact"
	// Tolerance variants reorder sums; they are checked against the float64
	// reference with the family's relative L2 error bound.
	Tolerance Class = "tolerance"
)

// KernelName is the entry point every family's source defines.
const KernelName = "gemv"

// Errors returned (wrapped) by formats and families.
var (
	// ErrShape is returned when a shape cannot be used with a format or variant.
	ErrShape = errors.New("unsupported shape")
	// ErrBuffer is returned when a byte or float buffer has the wrong length.
	ErrBuffer = errors.New("buffer size mismatch")
	// ErrUnknownFormat is returned by Lookup for a name that is not a format.
	ErrUnknownFormat = errors.New("unknown format")
)

// Format is the Go side of one weight format (docs/design.md §3). W is
// [rows, cols] row-major by blocks.
type Format interface {
	// Name is the format's name: "q4_0", "q8_0", "q4_K", "affine4", "bf16".
	Name() string
	// BlockWeights is the number of weights per block or group; cols must be
	// a multiple of it.
	BlockWeights() int
	// Bytes is the exact number of bytes of a [rows, cols] tensor in the raw
	// layout, weights plus scales (and biases/mins).
	Bytes(rows, cols int) (int64, error)
	// Quantize encodes row-major f32 weights into the raw layout.
	Quantize(w []float32, rows, cols int) ([]byte, error)
	// Dequantize decodes raw bytes to f32, bit-exact with the ecosystem
	// (GGML for q4_0, q8_0, q4_K; MLX for affine4).
	Dequantize(b []byte, rows, cols int) ([]float32, error)
	// Reference computes y = W·x in float64 from the dequantized weights.
	Reference(b []byte, x []float32, rows, cols int) ([]float64, error)
}

// planar is a Format whose raw bytes are several planes, each holding every
// row's part in row order (affine4: weights, scales, biases).
type planar interface {
	planeRowBytes(cols int) []int
}

// PlaneRowBytes returns, for each plane of f's raw layout in order, how many
// bytes one row of cols weights takes in it: one plane of whole rows for the
// GGUF formats and bf16, three for affine4. The bytes of rows [r0, r1) in
// plane p start at rows·(sum of the earlier planes' row bytes) + r0·row bytes
// of p, so a band of rows encoded on its own can be copied into place plane by
// plane.
func PlaneRowBytes(f Format, cols int) ([]int, error) {
	if p, ok := f.(planar); ok {
		if _, err := f.Bytes(1, cols); err != nil {
			return nil, err
		}
		return p.planeRowBytes(cols), nil
	}
	n, err := f.Bytes(1, cols)
	if err != nil {
		return nil, err
	}
	return []int{int(n)}, nil
}

// KnobsOf returns the family knob values f offers, for space.Enumerate.
func KnobsOf(f Family) space.FamilyKnobs {
	return space.FamilyKnobs{"l": f.Layouts(), "a": f.Activations(), "s": f.Stagings()}
}

// Launch is the launch geometry of one variant for one shape.
type Launch struct {
	Grid        [3]uint32 `json:"grid"`
	Block       [3]uint32 `json:"block"`
	SharedBytes uint32    `json:"shared_bytes"` // dynamic shared memory
}

// Family is the kernel family of one format.
type Family interface {
	Format() Format
	// ChunkWeights is the weights one lane consumes per step of the kernel.
	ChunkWeights() int
	// Layouts lists the values of knob l the family offers (0 = raw).
	Layouts() []int
	// Activations lists the values of knob a the family offers (0 = f32
	// activations; 1 = int8 activations with dp4a, class Tolerance).
	Activations() []int
	// Stagings lists the values of knob s the family implements (0, 1, and
	// 2 where it copies weights through a shared-memory ring).
	Stagings() []int
	// Repack converts raw bytes to the given layout (0 returns raw as is).
	// Repacked layouts keep the same number of bytes.
	Repack(raw []byte, rows, cols, layout int) ([]byte, error)
	// Source returns the CUDA source for p; it includes nothing.
	Source(p space.Params) (string, error)
	// SourceHash identifies the family's template and generator; a cached
	// record with another hash is stale.
	SourceHash() string
	// Gate reports whether variant p can run shape [rows, cols]; the error
	// says why not.
	Gate(p space.Params, rows, cols int) error
	// Launch returns grid, block and dynamic shared memory for p and the shape.
	Launch(p space.Params, rows, cols int) Launch
	// Class returns the numeric class of p.
	Class(p space.Params) Class
	// ErrorBound is the relative L2 error bound against the float64
	// reference that variant p must meet.
	ErrorBound(p space.Params) float64
}
