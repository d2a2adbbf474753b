package tuner

import (
	"context"
	"testing"

	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/space"
)

// TestChainOnGPU runs a small decode chain of stock and repacked, staged
// variants (each stage reading the output of the one before) plainly and
// with PDL edges, every output checked against its float64 reference
// inside Chain; with PDL a stage that read its x before the stage before
// had written it would fail that check.
func TestChainOnGPU(t *testing.T) {
	needGPU(t)
	infos, _ := gpu.Probe()
	ring, _ := space.Parse("r2f0u2s2w8l1")
	stages := []ChainStage{
		{Name: "qkv", Format: "q4_0", Rows: 6144, Cols: 4096, Params: space.Stock},
		{Name: "o", Format: "q4_0", Rows: 4096, Cols: 4096, Params: ring},
		{Name: "gate_up", Format: "q4_0", Rows: 28672, Cols: 4096, Params: ring},
		{Name: "down", Format: "q4_0", Rows: 4096, Cols: 14336, Params: space.Stock},
		{Name: "lm-head", Format: "q4_0", Rows: 32768, Cols: 4096, Params: ring},
	}
	for _, pdl := range []bool{false, true} {
		if pdl && infos[0].Arch.Major < 9 {
			continue
		}
		r, err := Chain(context.Background(), 0, stages, ChainOptions{PDL: pdl, Samples: 5})
		if err != nil {
			t.Fatalf("PDL %v: %v", pdl, err)
		}
		if r.MedianUS <= 0 || r.CeilingGBs <= 0 || r.Bytes <= 0 || r.Stages != len(stages) {
			t.Fatalf("PDL %v: %+v", pdl, r)
		}
		t.Logf("PDL %v: %.1f µs per token (%.1f–%.1f), %.1f MB, %.1f %% of the %.0f GB/s ceiling, max rel err %.2g",
			pdl, r.MedianUS, r.LoUS, r.HiUS, float64(r.Bytes)/1e6, r.PctCeiling, r.CeilingGBs, r.MaxRelErr)
	}
}
