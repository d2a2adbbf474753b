package gemvtune

import (
	"errors"
	"fmt"

	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

// KernelEntry is the entry point of every variant's source and cubin, with
// the signature
//
//	extern "C" __global__ void gemv(const unsigned char* W, const float* x, float* y, int rows, int cols)
//
// W in the choice's layout, x [cols] f32, y [rows] f32.
const KernelEntry = variants.KernelName

// DefaultSharedLimit is the dynamic shared memory a kernel gets without
// asking (48 KiB): a launch above it needs the function's
// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES raised first.
const DefaultSharedLimit = 48 << 10

// ErrInvalidEnv is returned (wrapped) by Open when a GEMV_* variable has a
// value it does not accept.
var ErrInvalidEnv = errors.New("invalid environment variable")

// envError marks readEnv's errors as ErrInvalidEnv and keeps their text.
type envError struct{ err error }

func (e envError) Error() string   { return e.err.Error() }
func (e envError) Unwrap() []error { return []error{e.err, ErrInvalidEnv} }

// NeedsSharedOptIn reports whether the launch uses more dynamic shared
// memory than a kernel gets by default (DefaultSharedLimit).
func (c Choice) NeedsSharedOptIn() bool { return c.Launch.SharedBytes > DefaultSharedLimit }

// PDLNeedsSharedOptIn reports whether a PDL launch (PDLSharedBytes) uses
// more dynamic shared memory than a kernel gets by default.
func (c Choice) PDLNeedsSharedOptIn() bool { return c.PDLSharedBytes > DefaultSharedLimit }

// PDLPays reports whether the tuner recorded this choice's winner in PDL
// launch mode for exactly this shape (Evidence.LaunchPDL): a chain of its
// PDL launches, with PDLSharedBytes of shared memory, was faster than a
// chain of its plain launches timed in the same rounds. False for every
// other source and without evidence. A whole token's answer is `autotune
// bench --chain`'s, which launches each tuned kernel the way the choices
// say.
func (c Choice) PDLPays() bool {
	return c.PDL && c.Source == SourceTuned && c.Evidence != nil && c.Evidence.LaunchPDL
}

// KernelSource is the complete CUDA source of one variant and how to
// compile it with NVRTC.
type KernelSource struct {
	// Code is the source; it includes nothing.
	Code string
	// Name is a file name for nvrtcCreateProgram, e.g. "q4_0_r2f0u2s1w8.cu".
	Name string
	// Entry is the kernel's name (KernelEntry).
	Entry string
	// Options are the NVRTC options it needs, e.g. "--gpu-architecture=sm_90".
	Options []string
}

// Source returns the source of variant id ("v1" or a canonical ID) of
// format for arch. It is the code the tuner compiled and stored as the
// cubin, so an engine that compiles it gets the same kernel.
func Source(arch, format, id string) (KernelSource, error) {
	a, err := space.ParseArch(arch)
	if err != nil {
		return KernelSource{}, err
	}
	fam, err := variants.FamilyOf(format)
	if err != nil {
		return KernelSource{}, err
	}
	p, err := space.Parse(id)
	if err != nil {
		return KernelSource{}, err
	}
	code, err := fam.Source(p)
	if err != nil {
		return KernelSource{}, err
	}
	return KernelSource{
		Code:    code,
		Name:    format + "_" + idOf(p) + ".cu",
		Entry:   KernelEntry,
		Options: []string{"--gpu-architecture=" + a.String()},
	}, nil
}

// LaunchOf returns the launch of variant id ("v1" or a canonical ID) of
// format for a rows×cols shape, after checking that its gate passes: what
// an engine needs to launch a variant it chose itself (stock, say), where
// a Choice already carries its own Launch.
func LaunchOf(format, id string, rows, cols int) (variants.Launch, error) {
	fam, err := variants.FamilyOf(format)
	if err != nil {
		return variants.Launch{}, err
	}
	p, err := space.Parse(id)
	if err != nil {
		return variants.Launch{}, err
	}
	if err := (space.Shape{Rows: rows, Cols: cols}).Validate(); err != nil {
		return variants.Launch{}, err
	}
	if err := fam.Gate(p, rows, cols); err != nil {
		return variants.Launch{}, err
	}
	return fam.Launch(p, rows, cols), nil
}

// WeightBytes is the number of bytes of a rows×cols tensor of format in
// any of its layouts (repacking never changes the count).
func WeightBytes(format string, rows, cols int) (int64, error) {
	fam, err := variants.FamilyOf(format)
	if err != nil {
		return 0, err
	}
	if err := (space.Shape{Rows: rows, Cols: cols}).Validate(); err != nil {
		return 0, err
	}
	if err := fam.Gate(space.Stock, rows, cols); err != nil {
		return 0, err
	}
	return fam.Format().Bytes(rows, cols)
}

// Repack converts a rows×cols tensor of format from its raw ecosystem
// bytes to layout (Choice.Layout); layout 0 returns raw itself. raw must
// hold exactly WeightBytes bytes.
func Repack(format string, layout int, raw []byte, rows, cols int) ([]byte, error) {
	n, err := WeightBytes(format, rows, cols)
	if err != nil {
		return nil, err
	}
	if int64(len(raw)) != n {
		return nil, fmt.Errorf("%w: %s %dx%d has %d bytes, got %d", variants.ErrBuffer, format, rows, cols, n, len(raw))
	}
	fam, _ := variants.FamilyOf(format)
	return fam.Repack(raw, rows, cols, layout)
}

// Reference computes y = W·x in float64 from raw bytes of format, the
// reference every variant is verified against.
func Reference(format string, raw []byte, x []float32, rows, cols int) ([]float64, error) {
	if _, err := WeightBytes(format, rows, cols); err != nil {
		return nil, err
	}
	fam, _ := variants.FamilyOf(format)
	return fam.Format().Reference(raw, x, rows, cols)
}
