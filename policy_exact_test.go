package gemvtune_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/internal/cachetest"
	"github.com/gemvtune/gemvtune/space"
)

// withExact gives r (a tolerance-class record) an exact alternative: id
// beat stock, or, with id "v1", stock was kept.
func withExact(t testing.TB, r cache.Record, id string) cache.Record {
	t.Helper()
	p, err := space.Parse(id)
	if err != nil {
		t.Fatal(err)
	}
	r.Exact = &cache.Alternative{WinnerID: id, Params: p, Class: cache.ClassExact, Decision: id + ": +31.0 % over v1 (p=0.001, n=20+20)",
		MedianUS: 24.5, GBs: 2740, PctCeiling: 61.6, Speedup: 1.31, P: 0.001}
	if p.IsStock() {
		x := r.Exact
		x.Kept, x.Decision, x.Speedup, x.P, x.MedianUS, x.GBs = true, "kept v1: r2f0u1s0w8 +1.2 % not significant (p=0.41)", 1, 0.41, 32.1, 2090
	}
	return r
}

// exactCubinFor is the fake cubin stored with an exact alternative.
func exactCubinFor(r cache.Record) []byte { return cachetest.ExactCubin(r) }

// TestRequireExactAlternative: with GEMV_REQUIRE_EXACT=1 a tolerance-class
// winner gives way to its record's exact alternative (tuned and nearest),
// to stock when the alternative kept stock, and never when its gate fails;
// without the variable nothing changes.
func TestRequireExactAlternative(t *testing.T) {
	alt := withExact(t, rec(t, "sm_90", "q4_0", 4096, 4096, "r2f0u1s1w8a1", "tolerance"), "r4f0u1s0w8")
	kept := withExact(t, rec(t, "sm_90", "q4_0", 8192, 4096, "r2f0u1s1w8a1", "tolerance"), "v1")
	old := rec(t, "sm_90", "q4_0", 1024, 4096, "r2f0u1s1w8a1", "tolerance") // written before alternatives
	// affine4 has no layout l=2: an alternative with it fails its gate.
	noGate := withExact(t, rec(t, "sm_90", "affine4", 4096, 4096, "r2f0u1s0w8a1", "tolerance"), "r2f0u1s0w8l2")
	path := writeCache(t, alt, kept, old, noGate)
	strict := map[string]string{"GEMV_REQUIRE_EXACT": "1"}

	tests := []struct {
		name       string
		vars       map[string]string
		format     string
		rows, cols int
		source, id string
		class      string
		reason     []string
		from       *cache.Record // evidence and cubin of its alternative
		cubin      []byte
	}{
		{"tuned alternative", strict, "q4_0", 4096, 4096, "tuned", "r4f0u1s0w8", "exact",
			[]string{"best exact variant", "GEMV_REQUIRE_EXACT=1", "r2f0u1s1w8a1 is tolerance-class", alt.Exact.Decision, "NVIDIA H200"}, &alt, exactCubinFor(alt)},
		{"tuned alternative kept stock", strict, "q4_0", 8192, 4096, "tuned", "v1", "exact",
			[]string{"stock is the best exact variant", "GEMV_REQUIRE_EXACT=1", "no exact variant beat stock", kept.Exact.Decision}, &kept, nil},
		{"tuned without alternative", strict, "q4_0", 1024, 4096, "default", "v1", "exact",
			[]string{"r2f0u1s1w8a1 is tolerance-class and GEMV_REQUIRE_EXACT=1"}, nil, nil},
		{"nearest alternative", strict, "q4_0", 3500, 4096, "nearest", "r4f0u1s0w8", "exact",
			[]string{"best exact variant at the nearest tuned shape 4096x4096", "GEMV_REQUIRE_EXACT=1"}, &alt, exactCubinFor(alt)},
		{"nearest skips a record without alternative", strict, "q4_0", 1100, 4096, "nearest", "r4f0u1s0w8", "exact",
			[]string{"4096x4096"}, &alt, exactCubinFor(alt)},
		{"nearest alternative kept stock", strict, "q4_0", 7000, 4096, "nearest", "v1", "exact",
			[]string{"nearest tuned shape 8192x4096", "no exact variant beat stock"}, &kept, nil},
		{"tuned alternative gate fails", strict, "affine4", 4096, 4096, "default", "v1", "exact",
			[]string{"r2f0u1s0w8l2", "gate"}, nil, nil},
		{"nearest alternative gate fails", strict, "affine4", 2048, 4096, "default", "v1", "exact",
			[]string{"r2f0u1s0w8l2", "gate"}, nil, nil},
		{"without REQUIRE_EXACT: the winner", nil, "q4_0", 4096, 4096, "tuned", "r2f0u1s1w8a1", "tolerance",
			[]string{alt.Decision}, nil, cubinFor(alt)},
		{"without REQUIRE_EXACT: nearest winner", nil, "q4_0", 7000, 4096, "nearest", "r2f0u1s1w8a1", "tolerance",
			[]string{"8192x4096"}, nil, cubinFor(kept)},
		{"forced keeps its behaviour", map[string]string{"GEMV_REQUIRE_EXACT": "1", "GEMV_FORCE_VARIANT": "r4f0u1s0w8"}, "q4_0", 4096, 4096,
			"forced", "r4f0u1s0w8", "exact", []string{"GEMV_FORCE_VARIANT=r4f0u1s0w8"}, nil, nil},
		{"forced tolerance under REQUIRE_EXACT", map[string]string{"GEMV_REQUIRE_EXACT": "1", "GEMV_FORCE_VARIANT": "r2f0u1s1w8a1"}, "q4_0", 4096, 4096,
			"forced-gate-failed", "v1", "exact", []string{"tolerance-class and GEMV_REQUIRE_EXACT=1"}, nil, nil},
		{"override on top of the alternative", map[string]string{"GEMV_REQUIRE_EXACT": "1", "GEMV_UNROLL": "2"}, "q4_0", 4096, 4096,
			"forced", "r4f0u2s0w8", "exact", []string{"GEMV_UNROLL=2 on top of r4f0u1s0w8 (tuned)"}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := open(t, path, tt.vars)
			for range 2 { // the second lookup comes from the memo
				c := lookup(t, p, "sm_90", tt.format, tt.rows, tt.cols)
				if c.Source != tt.source || c.ID != tt.id || c.Class != tt.class {
					t.Fatalf("%s %s %s (%s); want %s %s %s", c.Source, c.ID, c.Class, c.Reason, tt.source, tt.id, tt.class)
				}
				if q, _ := space.Parse(tt.id); c.Params != q || c.Layout != q.L {
					t.Errorf("params %+v layout %d; want %s", c.Params, c.Layout, tt.id)
				}
				for _, w := range tt.reason {
					if !strings.Contains(c.Reason, w) {
						t.Errorf("reason %q lacks %q", c.Reason, w)
					}
				}
				if !bytes.Equal(c.Cubin, tt.cubin) {
					t.Errorf("cubin %q; want %q", c.Cubin, tt.cubin)
				}
				if r := tt.from; r != nil {
					x, ev := r.Exact, c.Evidence
					if ev == nil || ev.MedianUS != x.MedianUS || ev.GBs != x.GBs || ev.PctCeiling != x.PctCeiling ||
						ev.Speedup != x.Speedup || ev.P != x.P || ev.GPUName != r.GPUName || !ev.Time.Equal(r.Time) ||
						ev.TunedShape != r.Shape().String() {
						t.Errorf("evidence %+v; want the alternative's of %s", ev, r.Key)
					}
				}
			}
		})
	}
}

// TestRequireExactAlternativeStale: a stale record's alternative is never
// used.
func TestRequireExactAlternativeStale(t *testing.T) {
	r := withExact(t, rec(t, "sm_90", "q4_0", 4096, 4096, "r2f0u1s1w8a1", "tolerance"), "r4f0u1s0w8")
	r.SourceHash = "0123456789abcdef"
	p := open(t, writeCache(t, r), map[string]string{"GEMV_REQUIRE_EXACT": "1"})
	if c := lookup(t, p, "sm_90", "q4_0", 4096, 4096); c.Source != "stale" || c.ID != "v1" {
		t.Errorf("stale: %s %s", c.Source, c.ID)
	}
	if c := lookup(t, p, "sm_90", "q4_0", 2048, 4096); c.Source != "default" || c.ID != "v1" {
		t.Errorf("nearest to stale: %s %s", c.Source, c.ID)
	}
}

// TestRequireExactAlternativeNoAllocs: repeated lookups answered by an
// alternative do not allocate.
func TestRequireExactAlternativeNoAllocs(t *testing.T) {
	r := withExact(t, rec(t, "sm_90", "q4_0", 4096, 4096, "r2f0u1s1w8a1", "tolerance"), "r4f0u1s0w8")
	p := open(t, writeCache(t, r), map[string]string{"GEMV_REQUIRE_EXACT": "1"})
	for _, rows := range []int{4096, 2048} {
		lookup(t, p, "sm_90", "q4_0", rows, 4096)
		if n := testing.AllocsPerRun(100, func() { _, _ = p.Lookup("sm_90", "q4_0", rows, 4096) }); n != 0 {
			t.Errorf("%dx4096: %v allocations per lookup", rows, n)
		}
	}
}
