package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/internal/cachetest"
)

// cacheWith writes records into a new cache file (cachetest.Write).
func cacheWith(t *testing.T, recs ...cache.Record) string { return cachetest.Write(t, recs...) }

func testRecord(t *testing.T, arch, format string, rows, cols int, id string) cache.Record {
	t.Helper()
	r := cachetest.Record(t, arch, "NVIDIA H200", format, rows, cols, id)
	r.Class, r.Decision = "exact", id+": +8.0 % over v1 (p=0.001)"
	r.MedianUS, r.GBs, r.PctCeiling, r.Speedup, r.P = 21.5, 3712, 83.4, 1.08, 0.001
	r.Time = time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)
	return r
}

func noEnv(string) (string, bool) { return "", false }

func TestLookupCommand(t *testing.T) {
	r := testRecord(t, "sm_90", "q4_0", 4096, 14336, "r2f3u1s0w8")
	r.PDLUS, r.PDLShared, r.LaunchPDL = 19.35, 117<<10, true
	path := cacheWith(t, r, testRecord(t, "sm_90", "q4_0", 4096, 4096, "r2f3u1s0w8"))
	var out, errOut bytes.Buffer
	err := lookupMain([]string{"--arch", "sm_90", "--format", "q4_0", "--shape", "4096x14336", "--cache", path}, &out, &errOut, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	// 4096 rows / (2·8) = 256 blocks of 256 threads, x not staged.
	for _, want := range []string{"r2f3u1s0w8", "source  tuned", "cubin   stored", "3712 GB/s", "NVIDIA H200",
		"launch  grid 256, block 256, 0 bytes of dynamic shared memory",
		"pdl     supported; 19.35 µs per launch in a PDL chain, 21.50 plain (recorded in PDL launch mode: launch it with PDL and 119808 bytes of dynamic shared memory)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// Without a measured chain: supported, no verdict; below sm_90 no line.
	for _, tc := range []struct{ arch, shape, want string }{{"sm_90", "4096x4096", "  pdl     supported\n"}, {"sm_86", "4096x4096", ""}} {
		out.Reset()
		if err := lookupMain([]string{"--arch", tc.arch, "--format", "q4_0", "--shape", tc.shape, "--cache", path}, &out, &errOut, noEnv); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(out.String(), "pdl"); got != (tc.want != "") || tc.want != "" && !strings.Contains(out.String(), tc.want) {
			t.Errorf("%s %s: want pdl line %q:\n%s", tc.arch, tc.shape, tc.want, out.String())
		}
	}
	out.Reset()
	env := func(k string) (string, bool) {
		if k == "GEMV_FORCE_VARIANT" {
			return "v1", true
		}
		return "", false
	}
	if err := lookupMain([]string{"--arch=sm_90", "--format=q4_0", "--shape=4096x14336", "--cache=" + path, "--json"}, &out, &errOut, env); err != nil {
		t.Fatal(err)
	}
	var j lookupJSON
	if err := json.Unmarshal(out.Bytes(), &j); err != nil || j.ID != "v1" || j.Source != "forced" {
		t.Errorf("--json with GEMV_FORCE_VARIANT=v1: %+v, %v", j, err)
	}
	// Knob g shows in the grid: 28672 rows / 16 = 1792 groups / g7 = 256
	// blocks; int8 x staged: 8192/32 groups × 48 bytes.
	out.Reset()
	env = func(k string) (string, bool) {
		if k == "GEMV_FORCE_VARIANT" {
			return "r1f0u4s1w16g7l1a1", true
		}
		return "", false
	}
	if err := lookupMain([]string{"--arch=sm_90", "--format=q4_0", "--shape=28672x8192", "--cache=" + path, "--json"}, &out, &errOut, env); err != nil {
		t.Fatal(err)
	}
	j = lookupJSON{}
	if err := json.Unmarshal(out.Bytes(), &j); err != nil || j.Launch == nil || j.Launch.Grid[0] != 256 || j.Launch.Block[0] != 512 || j.Launch.SharedBytes != 8192/32*48 {
		t.Errorf("--json launch for r1f0u4s1w16g7l1a1: %+v, %v\n%s", j.Launch, err, out.String())
	}
	if !strings.Contains(out.String(), `"grid": [`) {
		t.Errorf("--json launch keys:\n%s", out.String())
	}
	// The text names the layout and the function that builds it.
	for _, tc := range []struct{ id, want string }{
		{"r2f0u2s2w16l2a1", "layout  2: interleaved warp tiles (variants.RepackInterleaved), repacked once at load\n"},
		{"r2f0u2s2w16l1a1", "layout  1: planes (variants.RepackPlanes), repacked once at load\n"},
		{"v1", "layout  0: raw bytes\n"},
	} {
		out.Reset()
		env = func(k string) (string, bool) { return tc.id, k == "GEMV_FORCE_VARIANT" }
		if err := lookupMain([]string{"--arch=sm_90", "--format=q4_0", "--shape=4096x4096", "--cache=" + path}, &out, &errOut, env); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("%s: output lacks %q:\n%s", tc.id, tc.want, out.String())
		}
	}
}

func TestLookupCommandErrors(t *testing.T) {
	path := cacheWith(t)
	tests := []struct {
		args []string
		env  func(string) (string, bool)
		want string
	}{
		{[]string{"--format", "q4_0", "--shape", "64x64"}, noEnv, "required"},
		{[]string{"--arch", "sm90", "--format", "q4_0", "--shape", "64x64"}, noEnv, `arch "sm90": want sm_XY`},
		{[]string{"--arch", "sm_90", "--format", "q5_0", "--shape", "64x64", "--cache", path}, noEnv, "q5_0"},
		{[]string{"--arch", "sm_90", "--format", "q4_0", "--shape", "64", "--cache", path}, noEnv, "want ROWSxCOLS"},
		{[]string{"--arch", "sm_90", "--format", "q4_0", "--shape", "64x64", "--bogus"}, noEnv, "bogus"},
		{[]string{"--arch", "sm_90", "--format", "q4_0", "--shape", "64x64", "--cache", path},
			func(k string) (string, bool) { return "3", k == "GEMV_UNROLL" }, `GEMV_UNROLL="3": accepted 1, 2, 4, 8`},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		err := lookupMain(tt.args, &out, &errOut, tt.env)
		var u usageError
		if !errors.As(err, &u) || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error %v; want a one-line usage error containing %q", tt.args, err, tt.want)
		}
	}
	var out, errOut bytes.Buffer
	if err := lookupMain([]string{"--help"}, &out, &errOut, noEnv); err != nil || !strings.Contains(errOut.String(), "usage: autotune lookup") {
		t.Errorf("--help: %v, %q", err, errOut.String())
	}
}
