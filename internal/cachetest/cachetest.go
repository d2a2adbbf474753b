// Package cachetest makes cache records and files for tests: one valid,
// current record per call, as a tune on a named GPU would store it.
package cachetest

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

// Record is a current, valid record of format at rows×cols on arch, tuned
// on gpu ("NVIDIA H200"), whose winner is id; its class is the family's
// class of id, its figures fixed and plausible.
func Record(t testing.TB, arch, gpu, format string, rows, cols int, id string) cache.Record {
	t.Helper()
	p, err := space.Parse(id)
	if err != nil {
		t.Fatal(err)
	}
	fam, err := variants.FamilyOf(format)
	if err != nil {
		t.Fatal(err)
	}
	return cache.Record{
		Key:      cache.Key{Arch: arch, Format: format, Rows: rows, Cols: cols},
		WinnerID: id, Params: p, Class: string(fam.Class(p)), Decision: id + ": +9.0 % over v1 (p=0.002, n=20+20)",
		MedianUS: 17.25, LoUS: 17, HiUS: 17.5, GBs: 3890.5, PctCeiling: 87.4, CeilingGBs: 4451, StockMedianUS: 18.8,
		StockGBs: 3570, Speedup: 1.09, P: 0.002, Samples: 20, Registers: 40, BlocksPerSM: 4,
		GPUName: gpu, GPUUUID: "GPU-0f0e", Driver: "570.86", NVRTC: "12.8",
		SourceHash: fam.SourceHash(), ToolVersion: cache.ToolVersion,
		Time: time.Date(2026, 4, 1, 10, 0, 0, 0, time.UTC),
	}
}

// Cubin is the fake cubin Write stores with r.
func Cubin(r cache.Record) []byte { return []byte("cubin of " + r.WinnerID + " for " + r.Arch) }

// ExactCubin is the fake cubin Write stores with r's exact alternative.
func ExactCubin(r cache.Record) []byte {
	return []byte("exact cubin of " + r.Exact.WinnerID + " for " + r.Arch)
}

// Write stores recs in a new cache file in a test folder and returns its
// path: each with Cubin and, when it has an exact alternative that did not
// keep stock, ExactCubin.
func Write(t testing.TB, recs ...cache.Record) string {
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
			xc = ExactCubin(r)
		}
		if err := db.Put(r, Cubin(r), xc); err != nil {
			t.Fatal(err)
		}
	}
	return path
}
