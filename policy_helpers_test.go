package gemvtune_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

// sourceHash returns the current family's hash, failing the test when the
// family is not registered.
func sourceHash(t testing.TB, format string) string {
	t.Helper()
	f, err := variants.FamilyOf(format)
	if err != nil {
		t.Fatalf("family %s: %v", format, err)
	}
	return f.SourceHash()
}

// rec returns a current, valid record whose winner is id.
func rec(t testing.TB, arch, format string, rows, cols int, id string, class string) cache.Record {
	t.Helper()
	p, err := space.Parse(id)
	if err != nil {
		t.Fatal(err)
	}
	return cache.Record{
		Key:      cache.Key{Arch: arch, Format: format, Rows: rows, Cols: cols},
		WinnerID: id, Params: p, Class: class, Decision: id + ": +9.0 % over v1 (p=0.002, n=20+20)",
		MedianUS: 17.25, LoUS: 17, HiUS: 17.5, GBs: 3890.5, PctCeiling: 87.4, CeilingGBs: 4451, StockMedianUS: 18.8,
		StockGBs: 3570, Speedup: 1.09, P: 0.002, Samples: 20, Registers: 40, BlocksPerSM: 4,
		GPUName: "NVIDIA H200", GPUUUID: "GPU-0f0e", Driver: "570.86", NVRTC: "12.8",
		SourceHash: sourceHash(t, format), ToolVersion: cache.ToolVersion,
		Time: time.Date(2026, 4, 1, 10, 0, 0, 0, time.UTC),
	}
}

// cubinFor is the fake cubin stored with a record in these tests.
func cubinFor(r cache.Record) []byte { return []byte("cubin of " + r.WinnerID + " for " + r.Arch) }

// writeCache stores recs in a new cache file, each with cubinFor and, when
// it has an exact alternative that did not keep stock, exactCubinFor.
func writeCache(t testing.TB, recs ...cache.Record) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tune.db")
	db, err := cache.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, r := range recs {
		var xc []byte
		if r.Exact != nil && !r.Exact.Kept {
			xc = exactCubinFor(r)
		}
		if err := db.Put(r, cubinFor(r), xc); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// env returns a LookupEnv over m.
func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}
