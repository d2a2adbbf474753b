package cache_test

import (
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/space"
)

// openWriter opens a new writable cache in a temporary folder.
func openWriter(t testing.TB) (*cache.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tune.db")
	db, err := cache.Open(path, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

// randomRecord returns a valid record with random, non-zero figures.
func randomRecord(rng *rand.Rand, arch, format string, rows, cols int) cache.Record {
	p := space.Params{R: pick(rng, 1, 2, 3, 4), F: pick(rng, 0, 1, 2), U: pick(rng, 1, 2, 4), S: pick(rng, 0, 1), W: pick(rng, 4, 8), G: pick(rng, 0, 0, 2, 16, 128), L: pick(rng, 0, 1)}
	class := cache.ClassExact
	if rng.IntN(2) == 0 {
		class = cache.ClassTolerance
	}
	med := 5 + 100*rng.Float64()
	return cache.Record{
		Key:      cache.Key{Arch: arch, Model: "h200", Format: format, Rows: rows, Cols: cols},
		WinnerID: p.ID(), Params: p, Class: class,
		Decision: p.ID() + ": +7.5 % over v1 (p=0.001, n=20+20)",
		MedianUS: med, LoUS: med * 0.98, HiUS: med * 1.03, GBs: 1000 + 3000*rng.Float64(),
		PctCeiling: 40 + 50*rng.Float64(), CeilingGBs: 4450, StockMedianUS: med * 1.2, StockGBs: 900,
		Speedup: 1.2, P: 0.001 + rng.Float64()/100, Samples: 20 + rng.IntN(10), Registers: 32 + rng.IntN(64),
		BlocksPerSM: 1 + rng.IntN(8), GPUName: "NVIDIA H200", GPUUUID: "GPU-1234", Driver: "570.86",
		NVRTC: "12.8", SourceHash: "a1b2c3d4e5f6a7b8", ToolVersion: cache.ToolVersion,
		Time:       time.Date(2026, 3, 1+rng.IntN(20), 12, rng.IntN(60), 7, 123456789, time.UTC),
		ClockNotes: "sm 1980 MHz, mem 3201 MHz, 41 C, no throttle",
		Candidates: []cache.Candidate{
			{ID: "v1", Params: space.Stock, Class: cache.ClassExact, Status: "ok", Registers: 30, BlocksPerSM: 8, MedianUS: med * 1.2, LoUS: med, HiUS: med * 1.3, GBs: 900, PctCeiling: 20, Samples: 20},
			{ID: p.ID(), Params: p, Class: class, Status: "ok", MedianUS: med, GBs: 1100, Samples: 20},
			{ID: "r8f8u8s1w16", Params: space.Params{R: 8, F: 8, U: 8, S: 1, W: 16}, Class: cache.ClassExact, Status: "pruned", Reason: "smem 72 KB > 48 KB default cap"},
		},
	}
}

func pick(rng *rand.Rand, vs ...int) int { return vs[rng.IntN(len(vs))] }

func newRNG(t testing.TB) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
}
