package tuner

import (
	"context"
	"testing"

	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/space"
)

// TestChainOnGPU runs a small decode chain of stock and repacked, staged
// variants (each stage reading the output of the one before, but for kv,
// which reads the token's x as qkv does, and o, which reads qkv's output
// past kv's: XBack) plainly and,
// on sm_90 and newer, with PDL edges: every output is checked against its
// float64 reference inside Chain, and the PDL graph's against those bits,
// which a stage that read its x before the stage before had written it
// would not give. Three trials run other variants in place of some
// stages: one in another layout (its own copy of the weights), one for two
// shapes at once, one that spills (ChainResult.Spills names it, and only
// it); their stages are checked against the reference too. With PDL
// edges each shape's stage also runs as a read of its bytes
// (ChainOptions.Attribute), one timing per shape.
func TestChainOnGPU(t *testing.T) {
	needGPU(t)
	infos, _ := gpu.Probe()
	ring, _ := space.Parse("r2f0u2s2w8l1")
	stages := []ChainStage{
		{Name: "qkv", Format: "q4_0", Rows: 6144, Cols: 4096, Params: space.Stock},
		{Name: "kv", Format: "q4_0", Rows: 2048, Cols: 4096, Params: ring, XBack: 2},
		// Recorded in PDL launch mode, with more shared memory than its
		// launch's (one block per SM): the recorded graph mixes modes.
		{Name: "o", Format: "q4_0", Rows: 4096, Cols: 4096, Params: ring, LaunchPDL: true, PDLShared: 116 << 10, XBack: 2},
		{Name: "gate_up", Format: "q4_0", Rows: 28672, Cols: 4096, Params: ring},
		{Name: "down", Format: "q4_0", Rows: 4096, Cols: 14336, Params: space.Stock},
		{Name: "lm-head", Format: "q4_0", Rows: 32768, Cols: 4096, Params: ring},
	}
	pdl := infos[0].Arch.Major >= 9
	other, _ := space.Parse("r1f0u2s1w8")
	bulk := ring
	if pdl {
		bulk, _ = space.Parse("r1f0u2s3w8l2")
	}
	// Eight rows of eight chunks in flight under a 32-register cap (four
	// blocks of 512 threads per SM): a kernel that spills, which the
	// result must name.
	spiller, _ := space.Parse("r8f4u8s1w16")
	trials := []ChainTrial{
		{Variants: []ChainVariant{{Format: "q4_0", Rows: 28672, Cols: 4096, Params: other}}},
		{Variants: []ChainVariant{{Format: "q4_0", Rows: 4096, Cols: 4096, Params: bulk}, {Format: "q4_0", Rows: 4096, Cols: 14336, Params: other}}},
		{Variants: []ChainVariant{{Format: "q4_0", Rows: 4096, Cols: 4096, Params: spiller}}},
	}
	r, err := Chain(context.Background(), 0, stages, ChainOptions{PDL: pdl, Recorded: pdl, Reads: true, Attribute: true, Trials: trials, Samples: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Trials) != len(trials) {
		t.Fatalf("%d trial timings, want %d", len(r.Trials), len(trials))
	}
	if len(r.Spills) != 1 || r.Spills[0].Params != spiller || r.Spills[0].Format != "q4_0" || r.Spills[0].SpillBytes <= 0 || r.Spills[0].Registers > 32 {
		t.Fatalf("spills %+v, want only %s's, at 32 registers or fewer", r.Spills, spiller.ID())
	}
	t.Logf("%s spills %d bytes at %d registers", spiller.ID(), r.Spills[0].SpillBytes, r.Spills[0].Registers)
	for i, tr := range r.Trials {
		if tr.MedianUS <= 0 {
			t.Fatalf("trial %d: %+v", i+1, tr)
		}
		t.Logf("trial %d: %.1f µs per token (%.1f–%.1f)", i+1, tr.MedianUS, tr.LoUS, tr.HiUS)
	}
	wantReads := 1
	if pdl {
		wantReads = len(chainReadModes)
	}
	if len(r.Reads) != wantReads {
		t.Fatalf("%d read timings, want %d: %+v", len(r.Reads), wantReads, r.Reads)
	}
	for _, rd := range r.Reads {
		if rd.MedianUS <= 0 {
			t.Fatalf("%s: %+v", rd.Mode, rd)
		}
		t.Logf("%s: %.1f µs per token, %.1f %% of the ceiling", rd.Mode, rd.MedianUS, rd.PctCeiling)
	}
	// With PDL edges, one token per shape with that shape's stages as
	// reads; each shape runs one stage here.
	wantAttr := 0
	if pdl {
		wantAttr = len(stages)
	}
	if len(r.Attribution) != wantAttr {
		t.Fatalf("%d attribution timings, want %d: %+v", len(r.Attribution), wantAttr, r.Attribution)
	}
	for i, a := range r.Attribution {
		if a.Job != stages[i].Job() || a.Stages != 1 || a.Bytes <= 0 || a.MedianUS <= 0 {
			t.Fatalf("attribution %d: %+v, want %s %s", i, a, stages[i].Format, stages[i].Job().Shape())
		}
		t.Logf("%s as a read: %.1f µs per token (%.1f–%.1f)", a.Job.Shape(), a.MedianUS, a.LoUS, a.HiUS)
	}
	if r.CeilingBeforeGBs <= 0 || r.CeilingAfterGBs <= 0 || r.CeilingGBs != (r.CeilingBeforeGBs+r.CeilingAfterGBs)/2 {
		t.Fatalf("ceilings %.0f before, %.0f after, %.0f used", r.CeilingBeforeGBs, r.CeilingAfterGBs, r.CeilingGBs)
	}
	if r.MedianUS <= 0 || r.CeilingGBs <= 0 || r.Bytes <= 0 || r.Stages != len(stages) || (r.PDL != nil) != pdl || (r.Recorded != nil) != pdl {
		t.Fatalf("%+v", r)
	}
	t.Logf("%.1f µs per token (%.1f–%.1f), %.1f MB, %.1f %% of the %.0f GB/s ceiling, max rel err %.2g",
		r.MedianUS, r.LoUS, r.HiUS, float64(r.Bytes)/1e6, r.PctCeiling, r.CeilingGBs, r.MaxRelErr)
	if r.PDL != nil {
		if r.PDL.MedianUS <= 0 {
			t.Fatalf("PDL: %+v", *r.PDL)
		}
		t.Logf("with PDL edges: %.1f µs per token (%.1f–%.1f); as recorded: %.1f", r.PDL.MedianUS, r.PDL.LoUS, r.PDL.HiUS, r.Recorded.MedianUS)
	}
}
