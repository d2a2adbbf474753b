package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	gguf "github.com/gpustack/gguf-parser-go"

	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/tuner"
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
// embedding is skipped (it is gathered, not multiplied) unless the file has
// no output.weight: then it is the lm head too (tied embeddings) and kept,
// as output.weight is. GGUF lists ne[0], the inner dimension, first: a
// tensor with dimensions [ne0, ne1] is W = [rows ne1, cols ne0].
func readGGUF(path string) (m ggufModel, err error) {
	f, err := parseGGUF(path)
	if err != nil {
		return ggufModel{}, err
	}
	m.NotTuned = map[string]int{}
	if kv, ok := f.Header.MetadataKV.Get("general.architecture"); ok && kv.ValueType == gguf.GGUFMetadataValueTypeString {
		m.Arch = kv.ValueString()
	}
	tied := !slices.ContainsFunc(f.TensorInfos, func(ti gguf.GGUFTensorInfo) bool { return ti.Name == "output.weight" })
	index := map[string]int{} // format/shape → index in m.Pairs
	for _, ti := range f.TensorInfos {
		if ti.NDimensions != 2 || len(ti.Dimensions) != 2 || strings.HasPrefix(ti.Name, "token_embd") && !(tied && ti.Name == "token_embd.weight") {
			continue
		}
		format, ok := ggmlFormat(ti.Type)
		if !ok {
			m.NotTuned[ti.Type.String()]++
			continue
		}
		sh, err := ggufShape(path, ti)
		if err != nil {
			return ggufModel{}, err
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

// parseGGUF reads the header and tensor infos of the GGUF file at path (no
// weights), after checking the header's counts and lengths against the
// file's size.
func parseGGUF(path string) (f *gguf.GGUFFile, err error) {
	hf, fi, err := openRegular(path)
	if err != nil {
		return nil, fmt.Errorf("--gguf %w", err)
	}
	err = checkGGUFHeader(hf, fi.Size())
	hf.Close()
	if err != nil {
		return nil, fmt.Errorf("--gguf %s: not a GGUF model autotune can read: %v", path, err)
	}
	defer func() {
		// The parser panics on some malformed files (e.g. size overflow).
		if r := recover(); r != nil {
			f, err = nil, ggufError(path, fmt.Errorf("%v", r))
		}
	}()
	if f, err = gguf.ParseGGUFFile(path, gguf.SkipLargeMetadata()); err != nil {
		return nil, ggufError(path, err)
	}
	return f, nil
}

// ggufShape is the matrix W = [rows ne1, cols ne0] of a 2-D tensor.
func ggufShape(path string, ti gguf.GGUFTensorInfo) (space.Shape, error) {
	sh := space.Shape{Rows: int(min(ti.Dimensions[1], uint64(space.MaxDim)+1)), Cols: int(min(ti.Dimensions[0], uint64(space.MaxDim)+1))}
	if err := sh.Validate(); err != nil {
		return sh, ggufError(path, fmt.Errorf("tensor %s: %w", ti.Name, err))
	}
	return sh, nil
}

// ggufPart is one weight matrix of a transformer block and the parts whose
// output it may read as x (ggufBlockParts).
type ggufPart struct {
	name  string
	input []string
}

// ggufBlockParts are the weight matrices of a transformer block
// ("blk.N.attn_q.weight") in the order an engine multiplies by them, each
// with the earlier parts whose output it reads as x in a token (the first
// the block has), none for the block's input: q, k and v (or a fused qkv)
// read the block's input; the attention output projection reads q's
// output, a stand-in of the same length for attention's; gate and up read
// the projection's output (the residual stream, after its norm); down reads
// up's (gate's where the block has no up).
var ggufBlockParts = []ggufPart{
	{"attn_q", nil}, {"attn_k", nil}, {"attn_v", nil}, {"attn_qkv", nil},
	{"attn_output", []string{"attn_q", "attn_qkv"}},
	{"ffn_gate", []string{"attn_output"}}, {"ffn_up", []string{"attn_output"}},
	{"ffn_down", []string{"ffn_up", "ffn_gate"}},
}

// ggufToken is one decoded token's GEMVs of the GGUF model at path, as an
// engine that runs the file's matrices one by one multiplies by them: each
// block's parts in ggufBlockParts' order, blocks in index order, then the
// lm head (output.weight, or token_embd.weight where the file ties the
// two), each GEMV in its tensor's format. With fuse, a block's q, k and v
// are one GEMV of their rows where the three share a format and columns,
// and its gate and up likewise (ggufFusions), as an engine that concatenates
// them at load runs them. It fails, naming the tensor, on a 2-D tensor it
// cannot place or whose type no family has a kernel for.
func ggufToken(path string, fuse bool) ([]tokenGEMV, error) {
	f, err := parseGGUF(path)
	if err != nil {
		return nil, err
	}
	blocks := map[int][]ggufTensor{}
	var head, embd *tokenGEMV
	for _, ti := range f.TensorInfos {
		if ti.NDimensions != 2 || len(ti.Dimensions) != 2 {
			continue
		}
		name := strings.TrimSuffix(ti.Name, ".weight")
		format, ok := ggmlFormat(ti.Type)
		if !ok && name != "token_embd" {
			return nil, ggufError(path, fmt.Errorf("tensor %s is %s, which no kernel family runs (the token needs every matrix; types with kernels: %s)",
				ti.Name, ti.Type, strings.Join(variants.GGMLTypes(), ", ")))
		}
		sh, err := ggufShape(path, ti)
		if err != nil {
			return nil, err
		}
		t := tokenGEMV{name: name, shape: sh, format: format}
		blk, part, inBlock := ggufBlockPart(name)
		switch {
		case name == "output":
			head = &t
		case name == "token_embd":
			if ok {
				embd = &t
			}
		case inBlock && part >= 0:
			blocks[blk] = append(blocks[blk], ggufTensor{t, part})
		default:
			return nil, ggufError(path, fmt.Errorf("tensor %s: a matrix the token cannot place (it places blk.N.{%s}, output and token_embd)", ti.Name, ggufPartNames()))
		}
	}
	if head == nil {
		head = embd
	}
	switch {
	case len(blocks) == 0:
		return nil, ggufError(path, errors.New("no transformer block matrices (blk.N.attn_q.weight, ...) to run a token of"))
	case head == nil:
		return nil, ggufError(path, errors.New("no lm head: neither output.weight nor a token_embd.weight of a type a family runs"))
	}
	var token []tokenGEMV
	for _, b := range slices.Sorted(maps.Keys(blocks)) {
		ts := blocks[b]
		slices.SortStableFunc(ts, func(a, b ggufTensor) int { return a.part - b.part })
		if fuse {
			for _, fu := range ggufFusions {
				ts = fuseParts(ts, b, fu.parts, fu.as)
			}
		}
		input := len(token) - 1 // the block's input: the GEMV before it, -1 the token's x
		at := map[string]int{}  // part → its GEMV's index in token
		for _, t := range ts {
			src := len(token) - 1
			if in := ggufBlockParts[t.part].input; in == nil {
				src = input
			} else if i := slices.IndexFunc(in, func(n string) bool { _, ok := at[n]; return ok }); i >= 0 {
				src = at[in[i]]
			}
			t.xBack = len(token) - src
			at[ggufBlockParts[t.part].name] = len(token)
			token = append(token, t.tokenGEMV)
		}
	}
	head.name = "lm-head"
	return append(token, *head), nil
}

// ggufFusions are the parts an engine may concatenate into one matrix of
// their rows at load (they read one x), and the part the fused matrix
// stands as: q, k and v as attn_qkv, gate and up as ffn_up (which down
// reads; some files store the pair so already).
var ggufFusions = []struct {
	parts []string
	as    string
}{
	{[]string{"attn_q", "attn_k", "attn_v"}, "attn_qkv"},
	{[]string{"ffn_gate", "ffn_up"}, "ffn_up"},
}

// ggufTensor is a block's matrix in a token: its GEMV and its part's
// index in ggufBlockParts.
type ggufTensor struct {
	tokenGEMV
	part int
}

// fuseParts replaces, in a block's tensors ts (sorted by part), the given
// parts with one GEMV of all their rows, named blk.N.<part+part...> and
// standing as part as, when the block has each of them, in one format,
// with the same columns; otherwise it returns ts as it was.
func fuseParts(ts []ggufTensor, blk int, parts []string, as string) []ggufTensor {
	var in, out []ggufTensor
	for _, t := range ts {
		if slices.Contains(parts, ggufBlockParts[t.part].name) {
			in = append(in, t)
		} else {
			out = append(out, t)
		}
	}
	if len(in) != len(parts) {
		return ts
	}
	fused := ggufTensor{tokenGEMV{name: fmt.Sprintf("blk.%d.%s", blk, strings.Join(parts, "+")), shape: space.Shape{Cols: in[0].shape.Cols}, format: in[0].format},
		ggufPartIndex(as)}
	for _, t := range in {
		if t.format != fused.format || t.shape.Cols != fused.shape.Cols {
			return ts
		}
		fused.shape.Rows += t.shape.Rows
	}
	out = append(out, fused)
	slices.SortStableFunc(out, func(a, b ggufTensor) int { return a.part - b.part })
	return out
}

// ggufBlockPart splits a block tensor's name ("blk.3.attn_q") into the
// block's index and the part's index in ggufBlockParts (-1 for a part not
// there); false for a name outside the blocks.
func ggufBlockPart(name string) (blk, part int, ok bool) {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return 0, 0, false
	}
	index, partName, ok := strings.Cut(rest, ".")
	if blk, err := strconv.Atoi(index); ok && err == nil && blk >= 0 {
		return blk, ggufPartIndex(partName), true
	}
	return 0, 0, false
}

// ggufPartIndex is the index of the part named name in ggufBlockParts,
// -1 for none.
func ggufPartIndex(name string) int {
	return slices.IndexFunc(ggufBlockParts, func(p ggufPart) bool { return p.name == name })
}

// ggufPartNames lists ggufBlockParts' names.
func ggufPartNames() string {
	names := make([]string, len(ggufBlockParts))
	for i, p := range ggufBlockParts {
		names[i] = p.name
	}
	return strings.Join(names, ", ")
}

// fusedJobs are the (format, shape) pairs of the GGUF file's token with
// its matrices fused (ggufToken), in the order the token first runs them,
// for the formats given; notes name those of other formats.
func fusedJobs(path string, formats []string) (jobs []tuner.Job, notes []string, err error) {
	token, err := ggufToken(path, true)
	if err != nil {
		return nil, nil, err
	}
	for _, t := range token {
		j := t.job()
		switch {
		case slices.Contains(jobs, j):
		case slices.Contains(formats, t.format):
			jobs = append(jobs, j)
		default:
			if note := fmt.Sprintf("not tuned: %s %s (not in --formats)", t.format, t.shape); !slices.Contains(notes, note) {
				notes = append(notes, note)
			}
		}
	}
	return jobs, notes, nil
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
