package cache

import (
	"fmt"
	"strings"

	"github.com/gemvtune/gemvtune/space"
)

// Key names one entry: compute capability, GPU model, format and shape.
type Key struct {
	Arch string `json:"arch"` // "sm_90"
	// Model is the GPU model the record was measured on, as NormalizeModel
	// writes NVML's name ("h200" for "NVIDIA H200"). An H20 and an H200
	// are both sm_90 and want different winners. "" in a Record given to
	// Put means NormalizeModel(GPUName); in Get and Delete, the one model
	// that holds the rest of the key.
	Model  string `json:"gpu_model,omitempty"`
	Format string `json:"format"` // "q4_0"
	Rows   int    `json:"rows"`
	Cols   int    `json:"cols"`
}

// Shape returns the key's shape.
func (k Key) Shape() space.Shape { return space.Shape{Rows: k.Rows, Cols: k.Cols} }

// String returns "sm_90/h200/q4_0/4096x14336" ("sm_90/q4_0/4096x14336"
// without a model).
func (k Key) String() string {
	if k.Model == "" {
		return k.Arch + "/" + k.Format + "/" + k.Shape().String()
	}
	return k.Arch + "/" + k.Model + "/" + k.Format + "/" + k.Shape().String()
}

// Validate checks the arch (sm_XY), the model (NormalizeModel's form, or
// ""), the format name (letters, digits and '_', starting with a letter,
// at most 32 bytes) and the shape.
func (k Key) Validate() error {
	if _, err := space.ParseArch(k.Arch); err != nil {
		return fmt.Errorf("%w: %w", ErrBadKey, err)
	}
	if k.Model != "" && NormalizeModel(k.Model) != k.Model {
		return fmt.Errorf("%w: GPU model %q: want a normalised name such as h200", ErrBadKey, k.Model)
	}
	if !validFormatName(k.Format) {
		return fmt.Errorf("%w: format %q: want a name such as q4_0", ErrBadKey, k.Format)
	}
	if err := k.Shape().Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrBadKey, err)
	}
	return nil
}

// maxModelLen bounds a normalised model name.
const maxModelLen = 64

// NormalizeModel turns a GPU name as NVML or the CUDA driver gives it into
// the model part of a key: lower case, every run of characters other than
// letters and digits one '-', no leading or trailing '-', the vendor
// prefix "nvidia-" dropped, at most 64 bytes; "unknown" for a name with
// nothing left. "NVIDIA H200" → "h200", "NVIDIA H100 80GB HBM3" →
// "h100-80gb-hbm3", "NVIDIA GeForce RTX 4090" → "geforce-rtx-4090".
func NormalizeModel(name string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(name) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(c)
			dash = false
		} else {
			dash = true
		}
	}
	s := strings.TrimPrefix(b.String(), "nvidia-")
	if s == "nvidia" {
		s = ""
	}
	if len(s) > maxModelLen {
		s = strings.TrimRight(s[:maxModelLen], "-")
	}
	if s == "" {
		return "unknown"
	}
	return s
}

func validFormatName(f string) bool {
	if f == "" || len(f) > 32 {
		return false
	}
	for i, c := range f {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '_')) {
			return false
		}
	}
	return true
}

func validArch(s string) bool {
	_, err := space.ParseArch(s)
	return err == nil
}

func validModel(s string) bool { return s != "" && NormalizeModel(s) == s }
