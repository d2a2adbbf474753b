package main

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/tuner"
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
	writeGGUFFile(t, path, tensors, true)
}

// writeGGUFFile is writeGGUF, with the tensor data left out where data is
// false: the file is extended to its full size without writing it (a
// sparse file of zeros: the data is nothing autotune reads).
func writeGGUFFile(t *testing.T, path string, tensors []testTensor, data bool) {
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
	if !data {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, int64(b.Len())+int64(offset)); err != nil {
			t.Fatal(err)
		}
		return
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

// TestGGUFToken: a file's token runs every block's matrices in an
// engine's order, each in its tensor's format, q, k and v on the block's
// input, the output projection on q's output, gate and up on its output,
// down on up's, then the lm head (token_embd where the file ties it), and
// the stages form a chain the tuner accepts.
func TestGGUFToken(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "Q4_K_M.gguf")
	writeGGUF(t, path, llamaLike(ggmlQ4_K, ggmlQ6_K))
	type want struct {
		name, format string
		rows, cols   int
		xBack        int
	}
	var plain []want
	for l, down := range []string{"q6_K", "q4_K"} { // llamaLike: layer 0's v and down in the mix type
		blk := "blk." + string(rune('0'+l)) + "."
		plain = append(plain, // q, k and v read the block's input: the token's x, then the down before
			want{blk + "attn_q", "q4_K", 256, 256, 1},
			want{blk + "attn_k", "q4_K", 64, 256, 2},
			want{blk + "attn_v", down, 64, 256, 3},
			want{blk + "attn_output", "q4_K", 256, 256, 3},
			want{blk + "ffn_gate", "q4_K", 512, 256, 1},
			want{blk + "ffn_up", "q4_K", 512, 256, 2},
			want{blk + "ffn_down", down, 256, 512, 1})
	}
	plain = append(plain, want{"lm-head", "q6_K", 1000, 256, 0})
	// Fused: layer 1's q, k and v (all q4_K) are one GEMV, layer 0's stay
	// three (its v is q6_K); both layers' gate and up are one.
	fused := []want{
		{"blk.0.attn_q", "q4_K", 256, 256, 1}, {"blk.0.attn_k", "q4_K", 64, 256, 2}, {"blk.0.attn_v", "q6_K", 64, 256, 3},
		{"blk.0.attn_output", "q4_K", 256, 256, 3}, {"blk.0.ffn_gate+ffn_up", "q4_K", 1024, 256, 1}, {"blk.0.ffn_down", "q6_K", 256, 512, 1},
		{"blk.1.attn_q+attn_k+attn_v", "q4_K", 384, 256, 1}, {"blk.1.attn_output", "q4_K", 256, 256, 1},
		{"blk.1.ffn_gate+ffn_up", "q4_K", 1024, 256, 1}, {"blk.1.ffn_down", "q4_K", 256, 512, 1}, {"lm-head", "q6_K", 1000, 256, 0},
	}
	for _, tc := range []struct {
		fuse  bool
		wants []want
	}{{false, plain}, {true, fused}} {
		token, err := ggufToken(path, tc.fuse)
		if err != nil {
			t.Fatal(err)
		}
		if len(token) != len(tc.wants) {
			t.Fatalf("fuse %v: %d GEMVs, want %d: %+v", tc.fuse, len(token), len(tc.wants), token)
		}
		for i, w := range tc.wants {
			g := token[i]
			if got := (want{g.name, g.format, g.shape.Rows, g.shape.Cols, g.xBack}); got != w {
				t.Errorf("fuse %v, GEMV %d: %+v, want %+v", tc.fuse, i, got, w)
			}
		}
		stages, err := chainStages(nil, "sm_90", "", token, false, false)
		if err == nil {
			err = tuner.CheckChain(stages)
		}
		if err != nil {
			t.Errorf("fuse %v, the token's stages: %v", tc.fuse, err)
		}
	}
	jobs, notes, err := fusedJobs(path, []string{"q4_K"})
	if err != nil || len(jobs) != 5 || len(notes) != 3 || jobs[0] != (tuner.Job{Format: "q4_K", Rows: 256, Cols: 256}) {
		t.Errorf("fused jobs %v, notes %q (%v): want q4_K's 5 pairs and 3 of q6_K noted", jobs, notes, err)
	}

	// Tied embeddings: without output.weight, token_embd is the lm head.
	tied := slices.DeleteFunc(llamaLike(ggmlQ4_0, ggmlQ8_0), func(tt testTensor) bool { return tt.name == "output.weight" })
	writeGGUF(t, path, tied)
	token, err := ggufToken(path, false)
	if err != nil {
		t.Fatal(err)
	}
	if h := token[len(token)-1]; h.name != "lm-head" || h.format != "q4_0" || h.shape != (space.Shape{Rows: 1000, Cols: 256}) {
		t.Errorf("tied lm head: %+v", h)
	}
	// and --gguf tunes it.
	m, err := readGGUF(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(m.Pairs, func(p ggufPair) bool {
		return p.Format == "q4_0" && p.Shape == (space.Shape{Rows: 1000, Cols: 256}) && slices.Equal(p.Tensors, []string{"token_embd.weight"})
	}) {
		t.Errorf("tied lm head not tuned: %+v", m.Pairs)
	}
}

// A file whose token cannot be laid out fails with one line naming the
// file and the tensor.
func TestGGUFTokenErrors(t *testing.T) {
	dir := t.TempDir()
	with := func(extra ...testTensor) []testTensor { return append(llamaLike(ggmlQ4_K, ggmlQ6_K), extra...) }
	for _, tc := range []struct {
		name    string
		tensors []testTensor
		want    string
	}{
		{"untyped", with(testTensor{"blk.1.attn_q_b.weight", ggmlQ4_K, []uint64{256, 256}}), "tensor blk.1.attn_q_b.weight: a matrix the token cannot place"},
		{"router", with(testTensor{"blk.0.ffn_gate_inp.weight", ggmlF32, []uint64{256, 8}}), "tensor blk.0.ffn_gate_inp.weight is F32, which no kernel family runs"},
		{"q2_K", []testTensor{{"blk.0.attn_q.weight", ggmlQ2_K, []uint64{256, 256}}, {"output.weight", ggmlQ8_0, []uint64{256, 1000}}},
			"tensor blk.0.attn_q.weight is Q2_K, which no kernel family runs"},
		{"top-level", with(testTensor{"cls.weight", ggmlQ8_0, []uint64{256, 2}}), "tensor cls.weight: a matrix the token cannot place"},
		{"no blocks", []testTensor{{"output.weight", ggmlQ8_0, []uint64{256, 1000}}}, "no transformer block matrices"},
		{"no head", slices.DeleteFunc(llamaLike(ggmlQ4_K, ggmlQ4_K), func(tt testTensor) bool { return tt.name == "output.weight" || tt.name == "token_embd.weight" }),
			"no lm head: neither output.weight nor a token_embd.weight"},
	} {
		path := filepath.Join(dir, tc.name+".gguf")
		writeGGUF(t, path, tc.tensors)
		_, err := ggufToken(path, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "--gguf "+path+": ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", tc.name, err, tc.want)
		}
	}
	if _, err := ggufToken(filepath.Join(dir, "missing.gguf"), false); err == nil || !strings.Contains(err.Error(), "missing.gguf") {
		t.Errorf("a missing file: %v", err)
	}
}

// llama3Q4KM is llama-3-8b's weight matrices as llama.cpp's Q4_K_M lays
// them out: Q4_K but for attn_v and ffn_down in the first and last eighth
// of the layers and every third between them, and the lm head, which are
// Q6_K (llama-quant.cpp's use_more_bits).
func llama3Q4KM() []testTensor {
	const layers, hidden, kv, ffn, vocab = 32, 4096, 1024, 14336, 128256
	ts := []testTensor{{"token_embd.weight", ggmlQ4_K, []uint64{hidden, vocab}}}
	for l := range layers {
		mix := uint32(ggmlQ4_K)
		if l < layers/8 || l >= 7*layers/8 || (l-layers/8)%3 == 2 {
			mix = ggmlQ6_K
		}
		blk := func(n string) string { return fmt.Sprintf("blk.%d.%s.weight", l, n) }
		ts = append(ts,
			testTensor{blk("attn_norm"), ggmlF32, []uint64{hidden}},
			testTensor{blk("attn_q"), ggmlQ4_K, []uint64{hidden, hidden}},
			testTensor{blk("attn_k"), ggmlQ4_K, []uint64{hidden, kv}},
			testTensor{blk("attn_v"), mix, []uint64{hidden, kv}},
			testTensor{blk("attn_output"), ggmlQ4_K, []uint64{hidden, hidden}},
			testTensor{blk("ffn_norm"), ggmlF32, []uint64{hidden}},
			testTensor{blk("ffn_gate"), ggmlQ4_K, []uint64{hidden, ffn}},
			testTensor{blk("ffn_up"), ggmlQ4_K, []uint64{hidden, ffn}},
			testTensor{blk("ffn_down"), mix, []uint64{ffn, hidden}})
	}
	return append(ts, testTensor{"output_norm.weight", ggmlF32, []uint64{hidden}}, testTensor{"output.weight", ggmlQ6_K, []uint64{hidden, vocab}})
}

// TestGGUFLlama3Q4KM: the token of a llama-3-8b Q4_K_M file, read from its
// header alone (no weights), is 32 blocks of seven GEMVs and the lm head,
// 16 blocks with Q6_K v and down; with $GEMV_WRITE_GGUF set to a folder the
// header is left there (llama-3-8b-Q4_K_M.gguf) for `autotune --gguf` and
// `autotune bench --chain --gguf` on a GPU machine.
func TestGGUFLlama3Q4KM(t *testing.T) {
	dir := cmp.Or(os.Getenv("GEMV_WRITE_GGUF"), t.TempDir())
	path := filepath.Join(dir, "llama-3-8b-Q4_K_M.gguf")
	writeGGUFFile(t, path, llama3Q4KM(), false)
	token, err := ggufToken(path, false)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, g := range token {
		n[g.format]++
	}
	if len(token) != 32*7+1 || n["q6_K"] != 2*16+1 || n["q4_K"] != 32*7-32 {
		t.Errorf("%d GEMVs, formats %v", len(token), n)
	}
	m, err := readGGUF(path)
	if err != nil || len(m.Pairs) != 7 {
		t.Errorf("tuned pairs: %d (%v), want 7: q4_K and q6_K at 1024x4096 and 4096x14336, q4_K at 4096x4096 and 14336x4096, q6_K at 128256x4096", len(m.Pairs), err)
	}
}
