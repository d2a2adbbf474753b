package main

import (
	"bytes"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune"
	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/tuner"
)

// toleranceDecision is fakeDecision whose winner is an int8-activation
// (tolerance) variant with an exact alternative (kept: stock kept).
func toleranceDecision(j tuner.Job, kept bool) tuner.Decision {
	d := fakeDecision("sm_90", j, 5)
	exact := d.Winner
	d.Winner.Params.A = 1
	d.Winner.ID, d.Winner.Class = d.Winner.Params.ID(), "tolerance"
	d.Winner.MedianUS /= 3
	d.Reason = d.Winner.ID + ": +210.0 % over v1 (p=0.0001)"
	d.Cubin = []byte("cubin " + d.Winner.ID)
	d.Exact = &tuner.Alternative{Winner: exact, P: 0.001, Speedup: 1.4, Reason: exact.ID + ": +40.0 % over v1 (p=0.001)",
		Cubin: []byte("cubin " + exact.ID)}
	if kept {
		d.Exact = &tuner.Alternative{Winner: d.Stock, Kept: true, P: 0.4, Speedup: 1, Reason: "kept v1: +1.0 % not significant (p=0.40)"}
	}
	return d
}

// TestExactAlternativeEndToEnd: a decision's exact alternative reaches the
// cache with its cubin, GEMV_REQUIRE_EXACT lookups, show, and the header.
func TestExactAlternativeEndToEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tune.db")
	db, err := cache.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := toleranceDecision(tuner.Job{Format: "q4_0", Rows: 4096, Cols: 14336}, false)
	k := toleranceDecision(tuner.Job{Format: "q4_0", Rows: 8192, Cols: 14336}, true)
	plain := fakeDecision("sm_90", tuner.Job{Format: "q8_0", Rows: 4096, Cols: 4096}, 6)
	for _, dec := range []tuner.Decision{d, k, plain} {
		if err := putDecision(db, dec); err != nil {
			t.Fatal(err)
		}
	}
	r, err := db.Get(cache.Key{Arch: "sm_90", Format: "q4_0", Rows: 4096, Cols: 14336})
	if err != nil {
		t.Fatal(err)
	}
	x := r.Exact
	if x == nil || x.WinnerID != "r2f3u1s0w8" || x.Params != d.Exact.Winner.Params || x.Class != "exact" || x.Kept ||
		x.MedianUS != d.Exact.Winner.MedianUS || x.GBs != d.Exact.Winner.GBs || x.PctCeiling != d.Exact.Winner.PctCeiling ||
		x.Speedup != 1.4 || x.P != 0.001 || x.Decision != d.Exact.Reason || x.CubinHash != cache.CubinHash(d.Exact.Cubin) {
		t.Fatalf("exact alternative %+v", x)
	}
	if rk, _ := db.Get(cache.Key{Arch: "sm_90", Format: "q4_0", Rows: 8192, Cols: 14336}); rk.Exact == nil || !rk.Exact.Kept ||
		rk.Exact.WinnerID != "v1" || rk.Exact.CubinHash != "" {
		t.Errorf("kept alternative %+v", rk.Exact)
	}
	if rp, _ := db.Get(cache.Key{Arch: "sm_90", Format: "q8_0", Rows: 4096, Cols: 4096}); rp.Exact != nil {
		t.Errorf("exact winner got an alternative %+v", rp.Exact)
	}
	db.Close()

	pol, err := gemvtune.Open(&gemvtune.Options{CachePath: path, LookupEnv: func(k string) (string, bool) {
		return "1", k == gemvtune.EnvRequireExact
	}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := pol.Lookup("sm_90", "q4_0", 4096, 14336)
	if err != nil || c.ID != "r2f3u1s0w8" || c.Source != "tuned" || !bytes.Equal(c.Cubin, d.Exact.Cubin) {
		t.Errorf("REQUIRE_EXACT lookup: %+v, %v", c, err)
	}

	var out, errOut bytes.Buffer
	if err := showMain([]string{"--cache", path}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"exact alternative", "r2f3u1s0w8 1.400×", "v1 (kept)", d.Winner.ID} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("show lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := exportMain([]string{"--cache", path, "--header"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	p, q := d.Winner.Params, d.Exact.Winner.Params
	row := `{"sm_90", "fake-gpu", "q4_0", 4096, 14336, ` + ints(p.R, p.F, p.U, p.S, p.W, p.G, p.L, p.A, 0, 1, q.R, q.F, q.U, q.S, q.W, q.G, q.L, q.A) + `}`
	s := space.Stock
	keptRow := `{"sm_90", "fake-gpu", "q4_0", 8192, 14336, ` + ints(p.R, p.F, p.U, p.S, p.W, p.G, p.L, p.A, 0, 1, s.R, s.F, s.U, s.S, s.W, s.G, s.L, s.A) + `}`
	for _, want := range []string{row, keptRow, "int r, f, u, s, w, g, l, a;"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("header lacks %s:\n%s", want, out.String())
		}
	}
}

func ints(vs ...int) string {
	var b strings.Builder
	for i, v := range vs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(v))
	}
	return b.String()
}
