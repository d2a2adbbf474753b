package main

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// GGML type ids and their block geometry (ggml.h), for the test writer.
const (
	ggmlF32  = 0
	ggmlF16  = 1
	ggmlQ4_0 = 2
	ggmlQ8_0 = 8
	ggmlQ4_K = 12
	ggmlQ5_K = 13
	ggmlQ6_K = 14
	ggmlQ2_K = 10 // a type no family holds
	ggmlBF16 = 30
)

var ggmlBlock = map[uint32][2]int{ // type → {weights per block, bytes per block}
	ggmlF32: {1, 4}, ggmlF16: {1, 2}, ggmlQ4_0: {32, 18}, ggmlQ8_0: {32, 34},
	ggmlQ4_K: {256, 144}, ggmlQ5_K: {256, 176}, ggmlQ6_K: {256, 210}, ggmlQ2_K: {256, 84}, ggmlBF16: {1, 2},
}

// testTensor is one tensor of a test GGUF file; dims are GGUF's ne[],
// inner dimension first.
type testTensor struct {
	name string
	typ  uint32
	dims []uint64
}

// writeGGUF writes a minimal GGUF v3 file: header, a few metadata pairs,
// tensor infos and aligned, non-zero tensor data.
func writeGGUF(t *testing.T, path string, tensors []testTensor) {
	t.Helper()
	const align = 32
	var b bytes.Buffer
	le := func(v any) {
		if err := binary.Write(&b, binary.LittleEndian, v); err != nil {
			t.Fatal(err)
		}
	}
	str := func(s string) { le(uint64(len(s))); b.WriteString(s) }
	b.WriteString("GGUF")
	le(uint32(3))
	le(uint64(len(tensors)))
	le(uint64(3)) // metadata pairs
	str("general.architecture")
	le(uint32(8)) // string
	str("llama")
	str("general.alignment")
	le(uint32(4)) // uint32
	le(uint32(align))
	str("llama.embedding_length")
	le(uint32(4))
	le(uint32(256))

	sizes := make([]uint64, len(tensors))
	var offset uint64
	for i, tt := range tensors {
		str(tt.name)
		le(uint32(len(tt.dims)))
		n := uint64(1)
		for _, d := range tt.dims {
			le(d)
			n *= d
		}
		le(tt.typ)
		le(offset)
		bl := ggmlBlock[tt.typ]
		sizes[i] = n / uint64(bl[0]) * uint64(bl[1])
		offset += (sizes[i] + align - 1) / align * align
	}
	for b.Len()%align != 0 {
		b.WriteByte(0)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range tensors {
		data := make([]byte, (sizes[i]+align-1)/align*align)
		for j := range data {
			data[j] = byte(rng.IntN(255) + 1)
		}
		b.Write(data)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// smallModel is a two-layer model in the test file's terms: hidden 256,
// kv 64, ffn 512, vocab 1000.
var smallModel = []testTensor{
	{"token_embd.weight", ggmlQ4_0, []uint64{256, 1000}}, // gathered, not multiplied: skipped
	{"blk.0.attn_norm.weight", ggmlF32, []uint64{256}},   // 1-D: not a matrix
	{"blk.0.attn_q.weight", ggmlQ4_0, []uint64{256, 256}},
	{"blk.0.attn_k.weight", ggmlQ4_0, []uint64{256, 64}},
	{"blk.0.ffn_up.weight", ggmlF16, []uint64{256, 512}},
	{"blk.0.ffn_down.weight", ggmlQ8_0, []uint64{512, 256}},
	{"blk.1.attn_q.weight", ggmlQ4_0, []uint64{256, 256}},
	{"blk.1.attn_v.weight", ggmlQ4_K, []uint64{256, 64}},
	{"blk.1.ffn_gate.weight", ggmlQ6_K, []uint64{256, 512}},
	{"blk.1.ffn_up.weight", ggmlBF16, []uint64{256, 512}},
	{"blk.1.ffn_down.weight", ggmlQ2_K, []uint64{512, 256}},
	{"output.weight", ggmlQ8_0, []uint64{256, 1000}}, // the lm head: kept
}

func TestReadGGUF(t *testing.T) {
	path := filepath.Join(t.TempDir(), "small.gguf")
	writeGGUF(t, path, smallModel)
	m, err := readGGUF(path)
	if err != nil {
		t.Fatal(err)
	}
	if m.Arch != "llama" {
		t.Errorf("arch %q, want llama", m.Arch)
	}
	var got []string
	for _, p := range m.Pairs {
		got = append(got, p.Format+" "+p.Shape.String()+" "+strings.Join(p.Tensors, "+"))
	}
	want := []string{
		"q4_0 256x256 blk.0.attn_q.weight+blk.1.attn_q.weight",
		"q4_0 64x256 blk.0.attn_k.weight",
		"q8_0 256x512 blk.0.ffn_down.weight",
		"q8_0 1000x256 output.weight",
		"q4_K 64x256 blk.1.attn_v.weight",
		"q6_K 512x256 blk.1.ffn_gate.weight",
		"bf16 512x256 blk.1.ffn_up.weight",
		"f16 512x256 blk.0.ffn_up.weight",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("pairs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	notTuned := strings.Join(m.notTunedLines(), "\n")
	if notTuned != "not tuned: Q2_K (1 tensors)" {
		t.Errorf("not tuned lines:\n%s", notTuned)
	}
}

func TestReadGGUFErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.gguf")
	writeGGUF(t, good, smallModel)
	full, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	onlyQ2K := filepath.Join(dir, "q2k.gguf")
	writeGGUF(t, onlyQ2K, []testTensor{{"blk.0.attn_q.weight", ggmlQ2_K, []uint64{256, 256}}})

	tests := []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "nope.gguf"), "no such file"},
		{"empty", write("empty.gguf", nil), "too short for a GGUF header"},
		{"garbage", write("garbage.gguf", []byte("this is not a model file, just some text\n\nat all")), "want a GGUF"},
		{"truncated", write("trunc.gguf", full[:200]), "--gguf"},
		{"short data", write("short.gguf", full[:len(full)-1000]), "--gguf"},
		{"nothing tunable", onlyQ2K, "found: Q2_K"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readGGUF(tt.path)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			t.Log(msg)
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans lines: %q", msg)
			}
			if !strings.Contains(msg, tt.want) {
				t.Errorf("error %q does not contain %q", msg, tt.want)
			}
		})
	}
}

// llamaLike is a two-layer llama in the tensor types llama.cpp's quantize
// gives a file of type ftype (hidden 256, kv 64, ffn 512, vocab 1000):
// mostly main, with attn_v and ffn_down of one layer and the lm head in
// the mix type (Q4_K_M, Q5_K_M: Q6_K), the norms F32.
func llamaLike(main, mix uint32) []testTensor {
	var ts []testTensor
	ts = append(ts, testTensor{"token_embd.weight", main, []uint64{256, 1000}})
	for l, down := range []uint32{mix, main} {
		blk := func(n string) string { return "blk." + string(rune('0'+l)) + "." + n }
		ts = append(ts,
			testTensor{blk("attn_norm.weight"), ggmlF32, []uint64{256}},
			testTensor{blk("attn_q.weight"), main, []uint64{256, 256}},
			testTensor{blk("attn_k.weight"), main, []uint64{256, 64}},
			testTensor{blk("attn_v.weight"), down, []uint64{256, 64}},
			testTensor{blk("attn_output.weight"), main, []uint64{256, 256}},
			testTensor{blk("ffn_norm.weight"), ggmlF32, []uint64{256}},
			testTensor{blk("ffn_gate.weight"), main, []uint64{256, 512}},
			testTensor{blk("ffn_up.weight"), main, []uint64{256, 512}},
			testTensor{blk("ffn_down.weight"), down, []uint64{512, 256}},
		)
	}
	return append(ts, testTensor{"output_norm.weight", ggmlF32, []uint64{256}},
		testTensor{"output.weight", mix, []uint64{256, 1000}})
}

// TestGGUFFileTypes: --gguf tunes every multiplied tensor of the common
// file types, all but token_embd (gathered, not multiplied), and says
// nothing is left untuned. With $GEMV_WRITE_GGUF set to a folder it also
// leaves the files there (NAME.gguf), for `scripts/h200-final.sh gguf`
// to tune on a GPU machine.
func TestGGUFFileTypes(t *testing.T) {
	keep := os.Getenv("GEMV_WRITE_GGUF")
	for _, ft := range []struct {
		name      string
		main, mix uint32
	}{
		{"Q4_K_M", ggmlQ4_K, ggmlQ6_K}, {"Q5_K_M", ggmlQ5_K, ggmlQ6_K}, {"Q6_K", ggmlQ6_K, ggmlQ6_K},
		{"Q8_0", ggmlQ8_0, ggmlQ8_0}, {"Q4_0", ggmlQ4_0, ggmlQ6_K}, {"BF16", ggmlBF16, ggmlBF16}, {"F16", ggmlF16, ggmlF16},
	} {
		t.Run(ft.name, func(t *testing.T) {
			dir := t.TempDir()
			if keep != "" {
				dir = keep
			}
			path := filepath.Join(dir, ft.name+".gguf")
			tensors := llamaLike(ft.main, ft.mix)
			writeGGUF(t, path, tensors)
			m, err := readGGUF(path)
			if err != nil {
				t.Fatal(err)
			}
			if lines := m.notTunedLines(); len(lines) > 0 {
				t.Errorf("not tuned: %v", lines)
			}
			tuned := map[string]bool{}
			for _, p := range m.Pairs {
				for _, n := range p.Tensors {
					tuned[n] = true
				}
			}
			for _, tt := range tensors {
				want := len(tt.dims) == 2 && tt.name != "token_embd.weight"
				if tuned[tt.name] != want {
					t.Errorf("%s tuned %v, want %v", tt.name, tuned[tt.name], want)
				}
			}
			jobs, notes, err := resolveJobs(tuneFlags{gguf: path})
			if err != nil || len(jobs) != len(m.Pairs) || len(notes) > 0 {
				t.Errorf("resolveJobs: %d jobs for %d pairs, notes %q, err %v", len(jobs), len(m.Pairs), notes, err)
			}
		})
	}
}
