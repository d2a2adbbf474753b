package tuner

import (
	"math"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

func TestCheckChain(t *testing.T) {
	st := func(name, format string, rows, cols int) ChainStage {
		return ChainStage{Name: name, Format: format, Rows: rows, Cols: cols, Params: space.Stock}
	}
	for _, tc := range []struct {
		stages []ChainStage
		want   string
	}{
		{nil, "no stages"},
		{[]ChainStage{st("a", "q4_0", 4096, 4096), st("b", "q4_0", 4096, 8192)}, "b reads 8192 values of x, but a writes only 4096"},
		{[]ChainStage{st("a", "q5_0", 4096, 4096)}, "unknown format"},
		{[]ChainStage{st("a", "q4_K", 4096, 100)}, "cannot run 4096x100"},
		{[]ChainStage{st("a", "q4_0", 8192, 4096), st("b", "q6_K", 4096, 8192)}, ""},
		// q, k and v read the token's x, o reads q's y.
		{[]ChainStage{st("q", "q4_K", 4096, 4096), back(st("k", "q4_K", 1024, 4096), 2), back(st("v", "q6_K", 1024, 4096), 3),
			back(st("o", "q4_K", 4096, 4096), 3)}, ""},
		{[]ChainStage{st("q", "q4_K", 4096, 4096), st("k", "q4_K", 1024, 4096), st("v", "q6_K", 1024, 4096)}, "v reads 4096 values of x, but k writes only 1024"},
		{[]ChainStage{st("a", "q4_0", 1024, 4096), back(st("b", "q4_0", 4096, 4096), 2), back(st("c", "q4_0", 4096, 4096), 2)}, "c reads 4096 values of x, but a writes only 1024"},
		{[]ChainStage{st("a", "q4_0", 4096, 4096), back(st("b", "q4_0", 4096, 4096), -1)}, "XBack -1"},
	} {
		err := CheckChain(tc.stages)
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckChain: %v, want %q", err, tc.want)
		}
	}
}

// back sets a stage's XBack.
func back(st ChainStage, n int) ChainStage {
	st.XBack = n
	return st
}

// xSource follows XBack, the token's x before the first stage; the token's
// x is as long as the longest x read from it.
func TestXSource(t *testing.T) {
	st := func(cols, xBack int) ChainStage {
		return ChainStage{Format: "q4_0", Rows: 4096, Cols: cols, Params: space.Stock, XBack: xBack}
	}
	stages := []ChainStage{st(4096, 0), st(2048, 2), st(4096, 1), st(4096, 3), st(4096, 9)}
	for i, want := range []int{-1, -1, 1, 0, -1} {
		if got := xSource(stages, i); got != want {
			t.Errorf("xSource(%d) = %d, want %d", i, got, want)
		}
	}
	if n := inputLen(stages); n != 4096 {
		t.Errorf("inputLen = %d, want 4096", n)
	}
	if n := inputLen(stages[1:2]); n != 2048 {
		t.Errorf("inputLen of one stage = %d, want its cols 2048", n)
	}
}

// The chain's weights keep a GEMV's output about as large as its input.
func TestChainWeights(t *testing.T) {
	for _, name := range []string{"q4_0", "q6_K", "bf16"} {
		f, _ := variants.FormatOf(name)
		rows, cols := 64, 4096
		raw, err := chainWeights(f, rows, cols)
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float32, cols)
		for i := range x {
			x[i] = float32(math.Sin(float64(i)))
		}
		y, _ := f.Reference(raw, x, rows, cols)
		var nx, ny float64
		for _, v := range x {
			nx += float64(v) * float64(v)
		}
		for _, v := range y {
			ny += v * v
		}
		if g := math.Sqrt(ny/float64(rows)) / math.Sqrt(nx/float64(cols)); g < 0.7 || g > 1.4 {
			t.Errorf("%s: RMS gain %.2f, want about 1", name, g)
		}
	}
	if _, finite := relL2([]float32{float32(math.Inf(1))}, []float64{1}); finite {
		t.Error("relL2 calls an infinite output finite")
	}
}

// TestCeilingSourceCompiles compiles the streaming reads (the ceiling's and
// the chain's, with and without PDL's instructions) for an arch below
// sm_90 and for sm_90 with a local NVRTC; it skips without one.
func TestCeilingSourceCompiles(t *testing.T) {
	libs, err := gpu.FindNVRTC()
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	for _, arch := range []gpu.Arch{{Major: 8, Minor: 0}, {Major: 9, Minor: 0}} {
		n, err := gpu.ChooseNVRTC(libs, arch)
		if err != nil {
			t.Errorf("%s: %v", arch, err)
			continue
		}
		if _, _, err := n.Compile(ceilingSource, "read_ceiling.cu", arch); err != nil {
			t.Errorf("%s: %v", arch, err)
		}
	}
}

func TestCheckTrials(t *testing.T) {
	stages := []ChainStage{
		{Name: "o", Format: "q4_0", Rows: 4096, Cols: 4096, Params: space.Stock},
		{Name: "down", Format: "q4_0", Rows: 4096, Cols: 14336, Params: space.Stock},
	}
	ring, _ := space.Parse("r2f0u2s2w8l1")
	v := func(rows, cols int, p space.Params) ChainVariant {
		return ChainVariant{Format: "q4_0", Rows: rows, Cols: cols, Params: p}
	}
	for _, tc := range []struct {
		trial ChainTrial
		want  string
	}{
		{ChainTrial{Variants: []ChainVariant{v(4096, 4096, ring), v(4096, 14336, ring)}}, ""},
		{ChainTrial{Variants: []ChainVariant{v(4096, 4096, ring), v(4096, 4096, space.Stock)}}, "two variants for q4_0 4096x4096"},
		{ChainTrial{Variants: []ChainVariant{v(6144, 4096, ring)}}, "no stage of the token is q4_0 6144x4096"},
		{ChainTrial{Variants: []ChainVariant{v(4096, 4096, space.Params{R: 5, U: 1, W: 8})}}, "cannot run 4096x4096"},
		{ChainTrial{Variants: []ChainVariant{{Format: "q5_0", Rows: 4096, Cols: 4096, Params: ring}}}, "no stage of the token is q5_0"},
	} {
		err := checkTrials(stages, []ChainTrial{tc.trial})
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("checkTrials: %v, want %q", err, tc.want)
		}
	}
}
