package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	gguf "github.com/gpustack/gguf-parser-go"

	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

// ggmlFormat returns our format for a GGML tensor type, by the type's
// name (variants.FormatOfGGML); false for a type no family has a kernel
// for, which is reported as not tuned.
func ggmlFormat(t gguf.GGMLType) (string, bool) { return variants.FormatOfGGML(t.String()) }

// ggufPair is one (format, shape) a GGUF model multiplies by, with the
// tensors that have it.
type ggufPair struct {
	Format  string
	Shape   space.Shape
	Tensors []string
}

// ggufModel is what --gguf tunes: the (format, shape) pairs of the model's
// 2-D weight matrices, and the counts of matrices whose type has no kernel.
type ggufModel struct {
	Arch     string         // general.architecture, "" if absent
	Pairs    []ggufPair     // in format order, then first appearance
	NotTuned map[string]int // GGML type name → number of 2-D weight tensors
}

// notTunedLines returns "not tuned: Q6_K (1 tensors)" lines, sorted.
func (m ggufModel) notTunedLines() []string {
	var out []string
	for t, n := range m.NotTuned {
		out = append(out, fmt.Sprintf("not tuned: %s (%d tensors)", t, n))
	}
	sort.Strings(out)
	return out
}

// readGGUF reads the tensor infos of the GGUF file at path (no weights) and
// returns the (format, shape) pairs its weight matrices use. The token
// embedding is skipped (it is gathered, not multiplied); output.weight, the
// lm head, is kept. GGUF lists ne[0], the inner dimension, first: a tensor
// with dimensions [ne0, ne1] is W = [rows ne1, cols ne0].
func readGGUF(path string) (m ggufModel, err error) {
	hf, fi, err := openRegular(path)
	if err != nil {
		return ggufModel{}, fmt.Errorf("--gguf %w", err)
	}
	err = checkGGUFHeader(hf, fi.Size())
	hf.Close()
	if err != nil {
		return ggufModel{}, fmt.Errorf("--gguf %s: not a GGUF model autotune can read: %v", path, err)
	}
	defer func() {
		// The parser panics on some malformed files (e.g. size overflow).
		if r := recover(); r != nil {
			m, err = ggufModel{}, ggufError(path, fmt.Errorf("%v", r))
		}
	}()
	f, err := gguf.ParseGGUFFile(path, gguf.SkipLargeMetadata())
	if err != nil {
		return ggufModel{}, ggufError(path, err)
	}
	m.NotTuned = map[string]int{}
	if kv, ok := f.Header.MetadataKV.Get("general.architecture"); ok && kv.ValueType == gguf.GGUFMetadataValueTypeString {
		m.Arch = kv.ValueString()
	}
	index := map[string]int{} // format/shape → index in m.Pairs
	for _, ti := range f.TensorInfos {
		if ti.NDimensions != 2 || len(ti.Dimensions) != 2 || strings.HasPrefix(ti.Name, "token_embd") {
			continue
		}
		format, ok := ggmlFormat(ti.Type)
		if !ok {
			m.NotTuned[ti.Type.String()]++
			continue
		}
		sh := space.Shape{Rows: int(min(ti.Dimensions[1], uint64(space.MaxDim)+1)), Cols: int(min(ti.Dimensions[0], uint64(space.MaxDim)+1))}
		if err := sh.Validate(); err != nil {
			return ggufModel{}, ggufError(path, fmt.Errorf("tensor %s: %w", ti.Name, err))
		}
		key := format + "/" + sh.String()
		i, ok := index[key]
		if !ok {
			i = len(m.Pairs)
			index[key] = i
			m.Pairs = append(m.Pairs, ggufPair{Format: format, Shape: sh})
		}
		m.Pairs[i].Tensors = append(m.Pairs[i].Tensors, ti.Name)
	}
	order := map[string]int{}
	for i, n := range variants.FormatNames {
		order[n] = i
	}
	sort.SliceStable(m.Pairs, func(a, b int) bool { return order[m.Pairs[a].Format] < order[m.Pairs[b].Format] })
	if len(m.Pairs) == 0 {
		return m, ggufError(path, errNoTunable(m))
	}
	return m, nil
}

// errNoTunable says that a file has no weight matrix of a supported type.
func errNoTunable(m ggufModel) error {
	types := make([]string, 0, len(m.NotTuned))
	for t := range m.NotTuned {
		types = append(types, t)
	}
	sort.Strings(types)
	found := "none"
	if len(types) > 0 {
		found = strings.Join(types, ", ")
	}
	return fmt.Errorf("no 2-D weight tensor of a tunable type (%s); found: %s", strings.Join(variants.GGMLTypes(), ", "), found)
}

// ggufError makes a one-line error naming the file and what is accepted.
func ggufError(path string, err error) error {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	if errors.Is(err, gguf.ErrGGUFFileInvalidFormat) || strings.Contains(msg, "magic") {
		msg += " (want a GGUF v1-v3 model file)"
	}
	return fmt.Errorf("--gguf %s: %s", path, msg)
}
