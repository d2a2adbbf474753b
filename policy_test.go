package gemvtune_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune"
	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

func open(t *testing.T, path string, vars map[string]string) *gemvtune.Policy {
	t.Helper()
	p, err := gemvtune.Open(&gemvtune.Options{CachePath: path, LookupEnv: env(vars)})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return p
}

func lookup(t *testing.T, p *gemvtune.Policy, arch, format string, rows, cols int) gemvtune.Choice {
	t.Helper()
	c, err := p.Lookup(arch, format, rows, cols)
	if err != nil {
		t.Fatalf("Lookup(%s, %s, %dx%d): %v", arch, format, rows, cols, err)
	}
	return c
}

func TestLookupTuned(t *testing.T) {
	r := rec(t, "sm_90", "q4_0", 4096, 14336, "r2f3u1s0w8l1", cache.ClassExact)
	p := open(t, writeCache(t, r), nil)
	c := lookup(t, p, "sm_90", "q4_0", 4096, 14336)
	if c.Source != gemvtune.SourceTuned || c.ID != "r2f3u1s0w8l1" || c.Params != r.Params || c.Layout != 1 || c.Class != "exact" {
		t.Fatalf("choice = %+v", c)
	}
	if !bytes.Equal(c.Cubin, cubinFor(r)) {
		t.Errorf("cubin = %q; want the stored one", c.Cubin)
	}
	ev := c.Evidence
	if ev == nil || ev.MedianUS != r.MedianUS || ev.GBs != r.GBs || ev.PctCeiling != r.PctCeiling || ev.Speedup != r.Speedup ||
		ev.P != r.P || ev.GPUName != r.GPUName || !ev.Time.Equal(r.Time) || ev.TunedShape != "4096x14336" {
		t.Errorf("evidence = %+v", ev)
	}
	if !strings.Contains(c.Reason, r.Decision) || !strings.Contains(c.Reason, "NVIDIA H200") {
		t.Errorf("reason %q lacks the decision or GPU", c.Reason)
	}
	if p.CacheErr != nil {
		t.Errorf("CacheErr = %v", p.CacheErr)
	}
}

// TestNearestRule: same arch and format, same cols, closest rows, the larger
// on a tie, never another arch's or another cols' record.
func TestNearestRule(t *testing.T) {
	path := writeCache(t,
		rec(t, "sm_90", "q8_0", 1024, 4096, "r2f0u1s0w8", "exact"),
		rec(t, "sm_90", "q8_0", 4096, 4096, "r3f0u1s0w8", "exact"),
		rec(t, "sm_90", "q8_0", 14336, 4096, "r4f0u1s0w8", "exact"),
		rec(t, "sm_90", "q8_0", 4096, 14336, "r6f0u1s0w8", "exact"),
		rec(t, "sm_80", "q8_0", 2048, 4096, "r8f0u1s0w8", "exact"),
	)
	p := open(t, path, nil)
	tests := []struct {
		rows, cols int
		source     string
		id         string
		from       string
	}{
		{4096, 4096, "tuned", "r3f0u1s0w8", "4096x4096"},
		{2048, 4096, "nearest", "r2f0u1s0w8", "1024x4096"}, // 1024 away vs 2048 away
		{2560, 4096, "nearest", "r3f0u1s0w8", "4096x4096"}, // tie at 1536: the larger
		{1, 4096, "nearest", "r2f0u1s0w8", "1024x4096"},
		{128256, 4096, "nearest", "r4f0u1s0w8", "14336x4096"},
		{1024, 14336, "nearest", "r6f0u1s0w8", "4096x14336"},
		{4096, 8192, "default", "v1", ""}, // no record with 8192 cols
	}
	for _, tt := range tests {
		c := lookup(t, p, "sm_90", "q8_0", tt.rows, tt.cols)
		if c.Source != tt.source || c.ID != tt.id {
			t.Errorf("%dx%d: %s %s (%s); want %s %s", tt.rows, tt.cols, c.Source, c.ID, c.Reason, tt.source, tt.id)
			continue
		}
		if tt.from != "" && (c.Evidence == nil || c.Evidence.TunedShape != tt.from) {
			t.Errorf("%dx%d: evidence %+v; want tuned shape %s", tt.rows, tt.cols, c.Evidence, tt.from)
		}
		if tt.source == "nearest" && c.Cubin == nil {
			t.Errorf("%dx%d: nearest choice lacks the stored cubin of its winner", tt.rows, tt.cols)
		}
	}
	if c := lookup(t, p, "sm_90", "q4_0", 4096, 4096); c.Source != "default" {
		t.Errorf("other format: %s %s; want default", c.Source, c.ID)
	}
	if c := lookup(t, p, "sm_86", "q8_0", 4096, 4096); c.Source != "untuned-arch" || c.ID != "v1" {
		t.Errorf("untuned arch: %s %s; want untuned-arch v1", c.Source, c.ID)
	}
	if c := lookup(t, p, "sm_80", "q8_0", 4096, 4096); c.Source != "nearest" || c.ID != "r8f0u1s0w8" {
		t.Errorf("sm_80 must use its own record only: %s %s", c.Source, c.ID)
	}
}

func TestNearestGateMustPass(t *testing.T) {
	// affine4 has no layout l=2: a winner with it fails its gate.
	path := writeCache(t, rec(t, "sm_90", "affine4", 4096, 4096, "r2f0u1s0w8l2", "exact"))
	p := open(t, path, nil)
	c := lookup(t, p, "sm_90", "affine4", 2048, 4096)
	if c.Source != "default" || c.ID != "v1" || !strings.Contains(c.Reason, "gate") {
		t.Errorf("nearest with failing gate: %+v; want default v1 naming the gate", c)
	}
}

func TestStaleRecords(t *testing.T) {
	oldSrc := rec(t, "sm_90", "q4_0", 4096, 4096, "r2f0u1s0w8", "exact")
	oldSrc.SourceHash = "0123456789abcdef"
	oldTool := rec(t, "sm_90", "q4_0", 8192, 4096, "r3f0u1s0w8", "exact")
	oldTool.ToolVersion = "0.0.1"
	p := open(t, writeCache(t, oldSrc, oldTool), nil)
	for _, tt := range []struct {
		rows int
		why  string
	}{{4096, "kernel source changed"}, {8192, "tuned by autotune 0.0.1"}} {
		c := lookup(t, p, "sm_90", "q4_0", tt.rows, 4096)
		if c.Source != "stale" || c.ID != "v1" || c.Cubin != nil || !strings.Contains(c.Reason, tt.why) {
			t.Errorf("%dx4096: %+v; want stale v1 saying %q", tt.rows, c, tt.why)
		}
	}
	// Stale records are never used as nearest.
	if c := lookup(t, p, "sm_90", "q4_0", 6000, 4096); c.Source != "default" {
		t.Errorf("nearest to stale records: %s %s; want default", c.Source, c.ID)
	}
	// ServeStale (bench --chain --compile) serves their variants, never
	// their cubins (this build compiles its own source of them).
	served, err := gemvtune.Open(&gemvtune.Options{CachePath: writeCache(t, oldSrc, oldTool), LookupEnv: env(nil), ServeStale: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		rows int
		id   string
	}{{4096, "r2f0u1s0w8"}, {8192, "r3f0u1s0w8"}} {
		if c := lookup(t, served, "sm_90", "q4_0", tt.rows, 4096); c.Source != "tuned" || c.ID != tt.id || c.Cubin != nil {
			t.Errorf("ServeStale %dx4096: %s %s, cubin %v; want tuned %s without a cubin", tt.rows, c.Source, c.ID, c.Cubin != nil, tt.id)
		}
	}
}

func TestRequireExact(t *testing.T) {
	path := writeCache(t,
		rec(t, "sm_90", "q4_0", 4096, 4096, "r2f0u1s0w8", "tolerance"),
		rec(t, "sm_90", "q4_0", 1024, 4096, "r4f0u1s0w8", "exact"),
	)
	plain := open(t, path, nil)
	if c := lookup(t, plain, "sm_90", "q4_0", 4096, 4096); c.Source != "tuned" || c.Class != "tolerance" {
		t.Errorf("without REQUIRE_EXACT: %s %s %s", c.Source, c.ID, c.Class)
	}
	if c := lookup(t, plain, "sm_90", "q4_0", 3000, 4096); c.ID != "r2f0u1s0w8" {
		t.Errorf("without REQUIRE_EXACT nearest: %s", c.ID)
	}
	strict := open(t, path, map[string]string{"GEMV_REQUIRE_EXACT": "1"})
	c := lookup(t, strict, "sm_90", "q4_0", 4096, 4096)
	if c.ID != "v1" || c.Source != "default" || !strings.Contains(c.Reason, "GEMV_REQUIRE_EXACT") {
		t.Errorf("tolerance winner with REQUIRE_EXACT: %+v", c)
	}
	if c := lookup(t, strict, "sm_90", "q4_0", 3000, 4096); c.ID != "r4f0u1s0w8" || c.Source != "nearest" {
		t.Errorf("REQUIRE_EXACT nearest must skip the tolerance record: %s %s", c.Source, c.ID)
	}
}

func TestForced(t *testing.T) {
	tuned := rec(t, "sm_90", "q4_0", 4096, 4096, "r2f0u1s0w8", "exact")
	path := writeCache(t, tuned)
	tests := []struct {
		name      string
		vars      map[string]string
		format    string
		source    string
		id        string
		wantCubin bool
	}{
		{"rollback", map[string]string{"GEMV_FORCE_VARIANT": "v1"}, "q4_0", "forced", "v1", false},
		{"global id", map[string]string{"GEMV_FORCE_VARIANT": "r4f2u2s1w4"}, "q8_0", "forced", "r4f2u2s1w4", false},
		{"stored cubin for exactly that id", map[string]string{"GEMV_FORCE_VARIANT": "r2f0u1s0w8"}, "q4_0", "forced", "r2f0u1s0w8", true},
		{"format beats global", map[string]string{"GEMV_FORCE_VARIANT": "v1", "GEMV_FORCE_VARIANT_Q4_0": "r3f0u1s0w8"}, "q4_0", "forced", "r3f0u1s0w8", false},
		{"other format keeps global", map[string]string{"GEMV_FORCE_VARIANT": "v1", "GEMV_FORCE_VARIANT_Q4_0": "r3f0u1s0w8"}, "q8_0", "forced", "v1", false},
		{"q4_K suffix", map[string]string{"GEMV_FORCE_VARIANT_Q4_K": "r2f0u1s0w4"}, "q4_K", "forced", "r2f0u1s0w4", false},
		{"gate fails", map[string]string{"GEMV_FORCE_VARIANT_AFFINE4": "r2f0u1s0w8l2"}, "affine4", "forced-gate-failed", "v1", false},
		{"force with override", map[string]string{"GEMV_FORCE_VARIANT": "r2f0u1s0w8", "GEMV_UNROLL": "4"}, "q4_0", "forced", "r2f0u4s0w8", false},
	}
	for _, tt := range tests {
		p := open(t, path, tt.vars)
		c := lookup(t, p, "sm_90", tt.format, 4096, 4096)
		if c.Source != tt.source || c.ID != tt.id || (c.Cubin != nil) != tt.wantCubin {
			t.Errorf("%s: %s %s cubin=%v (%s); want %s %s cubin=%v", tt.name, c.Source, c.ID, c.Cubin != nil, c.Reason, tt.source, tt.id, tt.wantCubin)
		}
		if c.Evidence != nil && c.Source != "tuned" {
			t.Errorf("%s: forced choice carries evidence", tt.name)
		}
		if !strings.Contains(c.Reason, "GEMV_FORCE_VARIANT") {
			t.Errorf("%s: reason %q does not name the variable", tt.name, c.Reason)
		}
	}
}

func TestOverrides(t *testing.T) {
	path := writeCache(t, rec(t, "sm_90", "q4_0", 4096, 4096, "r2f0u1s0w8l1", "exact"))
	tests := []struct {
		vars   map[string]string
		rows   int
		source string
		id     string
	}{
		{map[string]string{"GEMV_UNROLL": "4"}, 4096, "forced", "r2f0u4s0w8l1"},
		{map[string]string{"GEMV_ROWS_PER_WARP": "2"}, 4096, "tuned", "r2f0u1s0w8l1"}, // same as the winner
		{map[string]string{"GEMV_WARPS": "16", "GEMV_SMEM_STAGING": "1", "GEMV_MIN_BLOCKS": "2"}, 4096, "forced", "r2f2u1s1w16l1"},
		{map[string]string{"GEMV_ROWS_PER_WARP": "8"}, 1000, "forced", "r8f0u1s0w8l1"}, // on top of nearest
		{map[string]string{"GEMV_ROWS_PER_WARP": "3"}, 4096, "forced", "r3f0u1s0w8l1"},
	}
	for _, tt := range tests {
		c := lookup(t, open(t, path, tt.vars), "sm_90", "q4_0", tt.rows, 4096)
		if c.Source != tt.source || c.ID != tt.id {
			t.Errorf("%v: %s %s (%s); want %s %s", tt.vars, c.Source, c.ID, c.Reason, tt.source, tt.id)
		}
		if c.Source == "forced" && c.Cubin != nil {
			t.Errorf("%v: overridden choice carries the winner's cubin", tt.vars)
		}
	}
	// Overrides apply on top of stock too, and an override that cannot
	// run the shape falls back to stock.
	p := open(t, path, map[string]string{"GEMV_WARPS": "4"})
	if c := lookup(t, p, "sm_86", "q8_0", 64, 64); c.Source != "forced" || c.ID != "r1f0u1s0w4" {
		t.Errorf("override on stock: %s %s", c.Source, c.ID)
	}
	aff := writeCache(t, rec(t, "sm_90", "q4_0", 4096, 4096, "r2f0u1s0w8", "exact"))
	p = open(t, aff, map[string]string{"GEMV_FORCE_VARIANT_AFFINE4": "r1f0u1s0w8l1", "GEMV_UNROLL": "2"})
	if c := lookup(t, p, "sm_90", "affine4", 64, 64); c.Source != "forced-gate-failed" || c.ID != "v1" || !strings.Contains(c.Reason, "GEMV_UNROLL=2") {
		t.Errorf("forced+override gate failure: %+v", c)
	}
}

func TestDisabled(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.db")
	p := open(t, missing, map[string]string{"GEMV_TUNE_DISABLE": "1", "GEMV_FORCE_VARIANT": "r2f0u1s0w8", "GEMV_UNROLL": "4"})
	c := lookup(t, p, "sm_90", "q4_0", 4096, 4096)
	if c.Source != "disabled" || c.ID != "v1" || c.Params != space.Stock {
		t.Errorf("disabled: %+v", c)
	}
}

func TestCacheErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "none.db")
	garbage := filepath.Join(dir, "garbage.db")
	os.WriteFile(garbage, bytes.Repeat([]byte("garbage!"), 2000), 0o644)
	for _, tt := range []struct {
		path   string
		source string
		is     error
	}{{missing, "no-cache", cache.ErrNotExist}, {garbage, "corrupt-cache", cache.ErrCorrupt}} {
		_, err := gemvtune.Open(&gemvtune.Options{CachePath: tt.path, LookupEnv: env(nil)})
		if !errors.Is(err, tt.is) {
			t.Errorf("%s without ContinueOnCacheError: %v; want %v", tt.source, err, tt.is)
		}
		p, err := gemvtune.Open(&gemvtune.Options{CachePath: tt.path, LookupEnv: env(nil), ContinueOnCacheError: true})
		if err != nil || !errors.Is(p.CacheErr, tt.is) {
			t.Fatalf("%s with ContinueOnCacheError: %v, CacheErr %v", tt.source, err, p.CacheErr)
		}
		c := lookup(t, p, "sm_90", "q4_0", 4096, 4096)
		if c.Source != tt.source || c.ID != "v1" || !strings.Contains(c.Reason, tt.path) {
			t.Errorf("%s: %+v", tt.source, c)
		}
		p, _ = gemvtune.Open(&gemvtune.Options{CachePath: tt.path, LookupEnv: env(map[string]string{"GEMV_FORCE_VARIANT": "r2f0u1s0w8"}), ContinueOnCacheError: true})
		if c := lookup(t, p, "sm_90", "q4_0", 4096, 4096); c.Source != "forced" {
			t.Errorf("%s: forcing must work without a cache: %s", tt.source, c.Source)
		}
	}
	// GEMV_TUNE_CACHE names the file when CachePath is empty.
	path := writeCache(t, rec(t, "sm_90", "q4_0", 4096, 4096, "r2f0u1s0w8", "exact"))
	p, err := gemvtune.Open(&gemvtune.Options{LookupEnv: env(map[string]string{"GEMV_TUNE_CACHE": path})})
	if err != nil || p.CachePath != path {
		t.Fatalf("GEMV_TUNE_CACHE: %v, %q", err, p.CachePath)
	}
	if c := lookup(t, p, "sm_90", "q4_0", 4096, 4096); c.Source != "tuned" {
		t.Errorf("GEMV_TUNE_CACHE: %s", c.Source)
	}
}

func TestLookupErrors(t *testing.T) {
	p := open(t, writeCache(t), nil)
	tests := []struct {
		arch, format string
		rows, cols   int
		want         string
	}{
		{"sm90", "q4_0", 64, 64, `arch "sm90": want sm_XY, e.g. sm_90`},
		{"sm_90", "q5_0", 64, 64, `"q5_0": accepted ` + strings.Join(variants.FormatNames, ", ")},
		{"sm_90", "q4_0", 0, 64, "must be positive"},
		{"sm_90", "q4_0", 64, -32, "must be positive"},
		{"sm_90", "q4_0", 64, 100, "multiple of"},
		{"sm_90", "q4_K", 64, 128, "multiple of 256"},
	}
	for _, tt := range tests {
		c, err := p.Lookup(tt.arch, tt.format, tt.rows, tt.cols)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Lookup(%s, %s, %d, %d) error = %v; want %q", tt.arch, tt.format, tt.rows, tt.cols, err, tt.want)
		}
		if c.ID != "v1" {
			t.Errorf("invalid lookup returned %s; want stock", c.ID)
		}
	}
}

func TestLookupAllocations(t *testing.T) {
	p := open(t, writeCache(t, rec(t, "sm_90", "q4_0", 4096, 4096, "r2f0u1s0w8", "exact")), nil)
	n := testing.AllocsPerRun(200, func() { _, _ = p.Lookup("sm_90", "q4_0", 4096, 4096) })
	if n > 6 {
		t.Errorf("tuned Lookup allocates %v times; want at most 6 (reason, evidence, shape)", n)
	}
}

// TestLookupPDL checks Choice.PDL: true from sm_90 on, where every
// family's kernel calls griddepcontrol, whatever the source of the choice.
func TestLookupPDL(t *testing.T) {
	p, err := gemvtune.Open(&gemvtune.Options{CachePath: filepath.Join(t.TempDir(), "none.db"), ContinueOnCacheError: true,
		LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		arch string
		pdl  bool
	}{{"sm_75", false}, {"sm_86", false}, {"sm_89", false}, {"sm_90", true}, {"sm_100", true}, {"sm_120", true}} {
		c, err := p.Lookup(tc.arch, "q4_0", 4096, 4096)
		if err != nil {
			t.Fatal(err)
		}
		if c.PDL != tc.pdl {
			t.Errorf("%s: PDL = %v, want %v (source %s)", tc.arch, c.PDL, tc.pdl, c.Source)
		}
	}
}

// TestLookupPDLEvidence: the winner's PDL-chain time travels from the
// record (pdl_us) to Evidence.PDLUS, for tuned and nearest choices, and is
// 0 for a record without it.
func TestLookupPDLEvidence(t *testing.T) {
	with := rec(t, "sm_90", "q4_K", 4096, 4096, "r2f0u1s2w16a1", "tolerance")
	with.PDLUS = 4.62
	without := rec(t, "sm_90", "q4_K", 4096, 14336, "r2f0u2s2w16a1", "tolerance")
	p, err := gemvtune.Open(&gemvtune.Options{CachePath: writeCache(t, with, without), LookupEnv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		rows, cols int
		source     string
		pdl        float64
	}{{4096, 4096, gemvtune.SourceTuned, 4.62}, {4000, 4096, gemvtune.SourceNearest, 4.62}, {4096, 14336, gemvtune.SourceTuned, 0}} {
		c, err := p.Lookup("sm_90", "q4_K", tc.rows, tc.cols)
		if err != nil {
			t.Fatal(err)
		}
		if c.Source != tc.source || c.Evidence == nil || c.Evidence.PDLUS != tc.pdl || !c.PDL {
			t.Errorf("%dx%d: source %s, PDL %v, evidence %+v; want %s with PDLUS %v", tc.rows, tc.cols, c.Source, c.PDL, c.Evidence, tc.source, tc.pdl)
		}
	}
}
