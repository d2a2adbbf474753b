package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/tuner"
)

// modelPreset is the decode-time geometry of one model, copied from its
// Hugging Face config.json. Every GEMV of one decoded token follows from it.
type modelPreset struct {
	name   string
	config string // where the numbers come from
	hidden int    // hidden_size
	inter  int    // intermediate_size
	heads  int    // num_attention_heads
	kv     int    // num_key_value_heads
	head   int    // head dimension (hidden_size / num_attention_heads)
	vocab  int    // vocab_size (the lm head's rows)
	layers int    // num_hidden_layers
}

// presets are the models --model accepts.
var presets = []modelPreset{
	{name: "llama-3-8b", config: "meta-llama/Meta-Llama-3-8B", hidden: 4096, inter: 14336, heads: 32, kv: 8, head: 128, vocab: 128256, layers: 32},
	{name: "llama-3-70b", config: "meta-llama/Meta-Llama-3-70B", hidden: 8192, inter: 28672, heads: 64, kv: 8, head: 128, vocab: 128256, layers: 80},
	{name: "qwen2.5-7b", config: "Qwen/Qwen2.5-7B", hidden: 3584, inter: 18944, heads: 28, kv: 4, head: 128, vocab: 152064, layers: 28},
	{name: "mistral-7b", config: "mistralai/Mistral-7B-v0.3", hidden: 4096, inter: 14336, heads: 32, kv: 8, head: 128, vocab: 32768, layers: 32},
}

// matrix is one weight matrix of a preset, W = [rows, cols] = out x in.
type matrix struct {
	name  string
	shape space.Shape
}

// matrices lists the weight matrices one decoded token multiplies, both
// separate (q, k, v; gate, up) and fused (qkv; gate_up), since engines do
// either.
func (p modelPreset) matrices() []matrix {
	q, kv := p.heads*p.head, p.kv*p.head
	m := func(name string, rows, cols int) matrix {
		return matrix{name, space.Shape{Rows: rows, Cols: cols}}
	}
	return []matrix{
		m("q", q, p.hidden),
		m("k", kv, p.hidden),
		m("v", kv, p.hidden),
		m("qkv (fused)", q+2*kv, p.hidden),
		m("o", p.hidden, q),
		m("gate", p.inter, p.hidden),
		m("up", p.inter, p.hidden),
		m("gate_up (fused)", 2*p.inter, p.hidden),
		m("down", p.hidden, p.inter),
		m("lm-head", p.vocab, p.hidden),
	}
}

// tokenGEMV is one GEMV of a decoded token, in the order the token runs
// them.
type tokenGEMV struct {
	name   string // "blk.3.qkv", "lm-head"
	shape  space.Shape
	format string // its own format (a GGUF file's tensor); "": the run's
	xBack  int    // whose output it reads as x (tuner.ChainStage.XBack); 0: the GEMV before
}

// job is the GEMV's format and shape (its own format: set where the token
// has one per GEMV).
func (t tokenGEMV) job() tuner.Job {
	return tuner.Job{Format: t.format, Rows: t.shape.Rows, Cols: t.shape.Cols}
}

// token lists one decoded token's GEMVs as an engine with fused qkv and
// gate_up runs them: per layer qkv, o, gate_up, down, then the lm head.
// (Attention and the activation sit between them in a model; the chain
// benchmark runs the GEMVs back to back.)
func (p modelPreset) token() []tokenGEMV {
	q, kv := p.heads*p.head, p.kv*p.head
	var out []tokenGEMV
	for l := 0; l < p.layers; l++ {
		blk := fmt.Sprintf("blk.%d.", l)
		out = append(out,
			tokenGEMV{name: blk + "qkv", shape: space.Shape{Rows: q + 2*kv, Cols: p.hidden}},
			tokenGEMV{name: blk + "o", shape: space.Shape{Rows: p.hidden, Cols: q}},
			tokenGEMV{name: blk + "gate_up", shape: space.Shape{Rows: 2 * p.inter, Cols: p.hidden}},
			tokenGEMV{name: blk + "down", shape: space.Shape{Rows: p.hidden, Cols: p.inter}})
	}
	return append(out, tokenGEMV{name: "lm-head", shape: space.Shape{Rows: p.vocab, Cols: p.hidden}})
}

// shapes returns the preset's distinct shapes in the order of matrices.
func (p modelPreset) shapes() []space.Shape {
	var out []space.Shape
	seen := map[space.Shape]bool{}
	for _, m := range p.matrices() {
		if !seen[m.shape] {
			seen[m.shape] = true
			out = append(out, m.shape)
		}
	}
	return out
}

// presetNames returns the accepted --model names, sorted.
func presetNames() []string {
	names := make([]string, len(presets))
	for i, p := range presets {
		names[i] = p.name
	}
	sort.Strings(names)
	return names
}

// presetByName returns the preset called name (case-insensitive).
func presetByName(name string) (modelPreset, error) {
	for _, p := range presets {
		if strings.EqualFold(p.name, name) {
			return p, nil
		}
	}
	return modelPreset{}, fmt.Errorf("unknown model %q: accepted: %s", name, strings.Join(presetNames(), ", "))
}
