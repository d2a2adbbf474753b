package main

import (
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/space"
)

func TestPresetShapes(t *testing.T) {
	tests := []struct {
		name   string
		shapes []string // distinct shapes, in preset order
	}{
		{"llama-3-8b", []string{"4096x4096", "1024x4096", "6144x4096", "14336x4096", "28672x4096", "4096x14336", "128256x4096"}},
		{"llama-3-70b", []string{"8192x8192", "1024x8192", "10240x8192", "28672x8192", "57344x8192", "8192x28672", "128256x8192"}},
		{"qwen2.5-7b", []string{"3584x3584", "512x3584", "4608x3584", "18944x3584", "37888x3584", "3584x18944", "152064x3584"}},
		{"mistral-7b", []string{"4096x4096", "1024x4096", "6144x4096", "14336x4096", "28672x4096", "4096x14336", "32768x4096"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := presetByName(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range p.shapes() {
				got = append(got, s.String())
			}
			if strings.Join(got, ",") != strings.Join(tt.shapes, ",") {
				t.Errorf("shapes:\n got  %v\n want %v", got, tt.shapes)
			}
		})
	}
}

func TestPresetMatricesLlama3_8B(t *testing.T) {
	p, err := presetByName("LLaMA-3-8B") // names match case-insensitively
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]space.Shape{
		"q": {Rows: 4096, Cols: 4096}, "k": {Rows: 1024, Cols: 4096}, "v": {Rows: 1024, Cols: 4096},
		"qkv (fused)": {Rows: 6144, Cols: 4096}, "o": {Rows: 4096, Cols: 4096},
		"gate": {Rows: 14336, Cols: 4096}, "up": {Rows: 14336, Cols: 4096}, "gate_up (fused)": {Rows: 28672, Cols: 4096},
		"down": {Rows: 4096, Cols: 14336}, "lm-head": {Rows: 128256, Cols: 4096},
	}
	ms := p.matrices()
	if len(ms) != len(want) {
		t.Fatalf("%d matrices, want %d", len(ms), len(want))
	}
	for _, m := range ms {
		if w, ok := want[m.name]; !ok || w != m.shape {
			t.Errorf("%s = %v, want %v", m.name, m.shape, w)
		}
	}
}

func TestPresetsConsistent(t *testing.T) {
	for _, p := range presets {
		if p.heads*p.head != p.hidden {
			t.Errorf("%s: heads %d x head %d != hidden %d", p.name, p.heads, p.head, p.hidden)
		}
		if p.heads%p.kv != 0 {
			t.Errorf("%s: %d heads not a multiple of %d kv heads", p.name, p.heads, p.kv)
		}
		for _, s := range p.shapes() {
			// Every preset shape must suit every format's block, q4_K's 256 being the largest.
			if s.Cols%256 != 0 {
				t.Errorf("%s: shape %s: cols not a multiple of 256", p.name, s)
			}
		}
	}
}

func TestUnknownPreset(t *testing.T) {
	_, err := presetByName("llama-2-7b")
	if err == nil {
		t.Fatal("no error for an unknown preset")
	}
	msg := err.Error()
	for _, name := range []string{"llama-3-8b", "llama-3-70b", "qwen2.5-7b", "mistral-7b"} {
		if !strings.Contains(msg, name) {
			t.Errorf("error %q does not list %s", msg, name)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("error spans lines: %q", msg)
	}
}
