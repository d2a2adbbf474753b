package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/tuner"
)

// writeTestCache stores fake decisions for the given jobs on sm_90 and one
// on sm_80, and returns the cache path and the sm_90 decisions.
func writeTestCache(t *testing.T, jobs []tuner.Job) (string, []tuner.Decision) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tune.db")
	db, err := cache.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ds []tuner.Decision
	for i, j := range jobs {
		d := fakeDecision("sm_90", j, int64(10+i))
		if i == 0 { // the first job has its same-bytes read measured
			d.ReadUS = 0.9 * d.Winner.MedianUS
		}
		ds = append(ds, d)
		if err := putDecision(db, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := putDecision(db, fakeDecision("sm_80", tuner.Job{Format: "bf16", Rows: 4096, Cols: 4096}, 99)); err != nil {
		t.Fatal(err)
	}
	return path, ds
}

func TestReportHTML(t *testing.T) {
	jobs := []tuner.Job{{Format: "q4_0", Rows: 4096, Cols: 14336}, {Format: "q8_0", Rows: 1024, Cols: 4096}}
	path, ds := writeTestCache(t, jobs)
	out := filepath.Join(t.TempDir(), "report.html")
	var stdout, stderr bytes.Buffer
	if err := reportMain([]string{"--arch", "sm_90", "--cache", path, "-o", out}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	if os.Getenv("REPORT_OUT") != "" { // for looking at it in a browser
		_ = os.WriteFile(os.Getenv("REPORT_OUT"), b, 0o644)
	}

	// Self-contained: no scripts, no external references.
	for _, bad := range []string{"<script", "src=", "<link", "@import", "url("} {
		if strings.Contains(html, bad) {
			t.Errorf("report contains %q", bad)
		}
	}
	if n := strings.Count(html, "<svg "); n != 2 {
		t.Errorf("%d plots, want 2 (sm_80 left out by --arch)", n)
	}
	if strings.Contains(html, "sm_80") {
		t.Error("report shows sm_80 though --arch sm_90 was given")
	}
	// Every measured candidate with the winner's u, s, w and l is a point at
	// its GB/s; the winner is ringed; stock and the ceiling are drawn.
	for _, d := range ds {
		for _, c := range d.Candidates {
			point := fmt.Sprintf(`class="pt" data-id="%s" data-gbs="%.0f"`, c.ID, c.GBs)
			if c.Status == tuner.StatusOK && sameFixed(c.Params, d.Winner.Params) && !strings.Contains(html, point) {
				t.Errorf("%s %s: no point %s", d.Format, d.Shape(), point)
			}
		}
		if !strings.Contains(html, fmt.Sprintf(`class="winner" data-id="%s"`, d.Winner.ID)) {
			t.Errorf("%s: winner not marked", d.Shape())
		}
		if !strings.Contains(html, fmt.Sprintf("ceiling %.0f GB/s", d.CeilingGBs)) {
			t.Errorf("%s: no ceiling line", d.Shape())
		}
		if !strings.Contains(html, fmt.Sprintf("stock r1f0u1s0w8: %.0f GB/s", d.Stock.GBs)) {
			t.Errorf("%s: stock not marked", d.Shape())
		}
		if !strings.Contains(html, template_escape(d.Reason)) {
			t.Errorf("%s: decision %q not shown", d.Shape(), d.Reason)
		}
	}
	// The same-bytes read is reported where it was measured, only there.
	if n := strings.Count(html, "A plain read of the same weight bytes took"); n != 1 || !strings.Contains(html, "runs at 90.0 % of the speed of reading its weights once") {
		t.Errorf("same-bytes read sentence %d times (want 1, at 90.0 %%)", n)
	}
	// The pruned candidate is not a point; its count is given. The mismatch
	// is a cross and a table row with its reason.
	if strings.Contains(html, `data-id="r6f0u8s1w16"`) {
		t.Error("pruned candidate plotted")
	}
	for _, want := range []string{"pruned: 1", `class="failed"`, "row 17: 1.25 vs stock 1.5", "floor f=0", "floor f=3",
		"u=1 s=0 w=8 l=0 a=0, plain grid (g=0) (the winner&#39;s)", "registers·blocks/SM"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// One line per floor among the candidates with the winner's u, s, w, l;
	// r2f3u2s0w8 (another unroll) is not plotted.
	lines := 0
	for _, d := range ds {
		floors := map[int]bool{}
		for _, c := range d.Candidates {
			if c.Status == tuner.StatusOK && sameFixed(c.Params, d.Winner.Params) {
				floors[c.Params.F] = true
			}
		}
		lines += len(floors)
	}
	if got := len(regexp.MustCompile(`<polyline `).FindAllString(html, -1)); got != lines || lines < 8 {
		t.Errorf("%d lines, want %d (one per floor in each of two plots)", got, lines)
	}
	if strings.Contains(html, `data-id="r2f3u2s0w8"`) {
		t.Error("a candidate with another unroll is plotted")
	}
	// Stock is listed in each table though it is not among the fastest ten.
	if n := strings.Count(html, `<tr class="stock"><td class="l">`); n != 2 {
		t.Errorf("stock listed in %d tables, want 2", n)
	}
	if !strings.Contains(stderr.String(), "wrote "+out+" (2 entries)") {
		t.Errorf("stderr %q", stderr.String())
	}
}

// template_escape escapes s as html/template does in text.
func template_escape(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;", "+", "&#43;")
	return r.Replace(s)
}

func TestReportErrors(t *testing.T) {
	dir := t.TempDir()
	path, _ := writeTestCache(t, []tuner.Job{{Format: "q4_0", Rows: 4096, Cols: 4096}})
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, bytes.Repeat([]byte("not bbolt "), 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		args  []string
		usage bool
		want  string
	}{
		{"no cache", []string{"--cache", filepath.Join(dir, "none.db"), "-o", "-"}, false, "no cache at"},
		{"garbage", []string{"--cache", garbage, "-o", "-"}, false, garbage},
		{"arch not tuned", []string{"--cache", path, "--arch", "sm_70", "-o", "-"}, false, "holds no tuned entry for sm_70"},
		{"bad arch", []string{"--arch", "hopper"}, true, "sm_XY"},
		{"bad flag", []string{"--out", "x.html"}, true, "not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errw bytes.Buffer
			err := reportMain(tt.args, &out, &errw)
			if err == nil {
				t.Fatal("no error")
			}
			var u usageError
			if tt.name == "garbage" && !errors.Is(err, cache.ErrCorrupt) {
				t.Errorf("error %q does not match cache.ErrCorrupt", err)
			}
			if errors.As(err, &u) != tt.usage || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q (usage %v), want %q (usage %v) on one line", err, errors.As(err, &u), tt.want, tt.usage)
			}
		})
	}
}

func TestReportAllArchsToStdout(t *testing.T) {
	path, _ := writeTestCache(t, []tuner.Job{{Format: "q4_K", Rows: 14336, Cols: 4096}})
	var out, errw bytes.Buffer
	if err := reportMain([]string{"--cache", path, "-o", "-"}, &out, &errw); err != nil {
		t.Fatal(err)
	}
	html := out.String()
	i80, i90 := strings.Index(html, "<h2>sm_80"), strings.Index(html, "<h2>sm_90")
	if i80 < 0 || i90 < 0 || i80 > i90 {
		t.Errorf("arch sections missing or out of order (sm_80 at %d, sm_90 at %d)", i80, i90)
	}
}

func TestPlotCeiling(t *testing.T) {
	tests := []struct {
		name    string
		best    float64 // GB/s of the winner
		drawn   bool    // the ceiling is a line (else written at the top)
		written string
	}{
		{"near the ceiling", 4000, true, "ceiling 4400 GB/s"},
		{"launch-bound shape", 520, false, "ceiling 4400 GB/s is above this plot (best here: 12 %)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := fakeDecision("sm_90", tuner.Job{Format: "q4_0", Rows: 1024, Cols: 4096}, 5)
			e := entryFromRecord(d.Record())
			e.CeilingGBs = 4400
			scale := tt.best / e.Winner.GBs
			for i := range e.Candidates {
				e.Candidates[i].GBs *= scale
			}
			e.Winner.GBs *= scale
			e.Stock.GBs *= scale
			svg := plotSVG(e, e.Winner.Params)
			if got := strings.Contains(svg, `<line class="ceiling"`); got != tt.drawn {
				t.Errorf("ceiling line drawn = %v, want %v", got, tt.drawn)
			}
			if !strings.Contains(svg, tt.written) {
				t.Errorf("plot does not say %q", tt.written)
			}
		})
	}
}
