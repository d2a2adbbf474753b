package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"html/template"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/tuner"
	"github.com/gemvtune/gemvtune/variants"
)

func init() {
	register(&command{
		name:  "report",
		short: "write a self-contained HTML report of the last tune per arch",
		run: func(ctx context.Context, args []string) error {
			return reportMain(args, os.Stdout, os.Stderr)
		},
	})
}

const reportUsage = `usage: autotune report [--arch sm_XY] [--cache PATH] [-o report.html]

Writes one self-contained HTML file (inline SVG, no scripts, no external
files) with, per arch, format and shape in the cache: GB/s against rows per
warp, one line per launch-bounds floor, registers and blocks/SM at every
point, the winner, stock and the read ceiling; then the top candidates and
the failed ones with their reasons.

flags:
`

// reportEntry is one cached decision as the report shows it.
type reportEntry struct {
	Arch       string
	Format     string
	Shape      space.Shape
	GPUName    string
	Time       time.Time
	Winner     cache.Candidate
	Stock      cache.Candidate
	Speedup    float64
	P          float64
	Reason     string
	Stale      string // why the record is stale, "" if current
	CeilingGBs float64
	ReadUS     float64 // the same-bytes read, µs; 0 = not measured
	Throttled  bool
	Candidates []cache.Candidate
}

// loadEntriesFn reads the report's entries from the cache at path ("" =
// default), restricted to arch unless it is "".
var loadEntriesFn = loadEntries

// reportMain runs the report command.
func reportMain(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("autotune report", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	arch := fs.String("arch", "", "only this `arch` (sm_XY); default every arch in the cache")
	cachePath := fs.String("cache", "", "cache `PATH` (default $GEMV_TUNE_CACHE, else $XDG_CACHE_HOME/gemvtune/tune.db)")
	out := fs.String("o", "report.html", "write the report to `FILE` (- for stdout)")
	fs.Usage = func() {
		fs.SetOutput(stdout)
		fmt.Fprint(stdout, reportUsage)
		fs.PrintDefaults()
		fmt.Fprint(stdout, "\nexit codes: 0 ok, 1 failure (unreadable cache, nothing tuned), 2 usage error\n")
	}
	if help, err := parseArgs(fs, args, 0); help || err != nil {
		return err
	}
	if *arch != "" {
		if _, err := space.ParseArch(*arch); err != nil {
			return usagef("report --arch: %v", err)
		}
	}
	entries, where, err := loadEntriesFn(*cachePath, *arch)
	if err != nil {
		if !errors.Is(err, cache.ErrBadRecord) || len(entries) == 0 {
			return err
		}
		fmt.Fprintf(stderr, "autotune: report: left out %v\n", err)
	}
	if len(entries) == 0 {
		scope := "any arch"
		if *arch != "" {
			scope = *arch
		}
		return fmt.Errorf("report: %s holds no tuned entry for %s; run autotune first", where, scope)
	}
	page := buildReport(entries, where, time.Now())
	if *out == "-" {
		return renderReport(stdout, page)
	}
	if err := writeUserFile(*out, func(w io.Writer) error { return renderReport(w, page) }); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	fmt.Fprintf(stderr, "autotune: wrote %s (%d entries)\n", *out, len(entries))
	return nil
}

// reportPage is what the template renders.
type reportPage struct {
	Generated string
	Cache     string
	Archs     []reportArch
}

// reportArch is one arch's section.
type reportArch struct {
	Arch    string
	GPUs    string
	When    string
	Entries []reportView
}

// reportView is one (format, shape) of the report.
type reportView struct {
	reportEntry
	Anchor  string
	Plot    template.HTML // inline SVG
	Fixed   string        // which knobs the plot holds fixed
	Top     []candRow
	Failed  []candRow
	Others  string // counts of pruned, gate-refused and dropped candidates
	Verdict string
}

// candRow is one candidate in a table.
type candRow struct {
	Rank int // 1 = fastest measured
	cache.Candidate
	Winner, Stock bool
}

// topN is how many measured candidates the table shows.
const topN = 10

// buildReport groups entries by arch and prepares every view.
func buildReport(entries []reportEntry, cachePath string, now time.Time) reportPage {
	sort.SliceStable(entries, func(i, j int) bool {
		a, b := entries[i], entries[j]
		if a.Arch != b.Arch {
			return a.Arch < b.Arch
		}
		if fa, fb := formatRank(a.Format), formatRank(b.Format); fa != fb {
			return fa < fb
		}
		if a.Shape.Rows != b.Shape.Rows {
			return a.Shape.Rows < b.Shape.Rows
		}
		return a.Shape.Cols < b.Shape.Cols
	})
	page := reportPage{Generated: now.Format("2006-01-02 15:04 MST"), Cache: cachePath}
	for _, e := range entries {
		if len(page.Archs) == 0 || page.Archs[len(page.Archs)-1].Arch != e.Arch {
			page.Archs = append(page.Archs, reportArch{Arch: e.Arch})
		}
		a := &page.Archs[len(page.Archs)-1]
		a.Entries = append(a.Entries, buildView(e))
	}
	for i := range page.Archs {
		a := &page.Archs[i]
		gpus := map[string]bool{}
		var names []string
		var last time.Time
		for _, v := range a.Entries {
			if v.GPUName != "" && !gpus[v.GPUName] {
				gpus[v.GPUName] = true
				names = append(names, v.GPUName)
			}
			if v.Time.After(last) {
				last = v.Time
			}
		}
		a.GPUs = strings.Join(names, ", ")
		if !last.IsZero() {
			a.When = last.Format("2006-01-02 15:04 MST")
		}
	}
	return page
}

// buildView prepares one entry: plot, tables and the verdict line.
func buildView(e reportEntry) reportView {
	v := reportView{reportEntry: e}
	v.Anchor = e.Arch + "-" + e.Format + "-" + e.Shape.String()
	fixed := e.Winner.Params
	if fixed == (space.Params{}) {
		fixed = space.Stock
	}
	grid := "plain grid (g=0)"
	if fixed.G > 0 {
		grid = "one-wave grid (g>0, set per variant)"
	}
	v.Fixed = fmt.Sprintf("u=%d s=%d w=%d l=%d a=%d, %s (the winner's); stock is %s", fixed.U, fixed.S, fixed.W, fixed.L, fixed.A, grid, space.Stock.ID())
	v.Plot = template.HTML(plotSVG(e, fixed))

	var ok []cache.Candidate
	counts := map[string]int{}
	for _, c := range e.Candidates {
		switch {
		case c.Status == string(tuner.StatusOK):
			ok = append(ok, c)
		case isFailure(c.Status):
			v.Failed = append(v.Failed, candRow{Candidate: c, Winner: c.ID == e.Winner.ID, Stock: c.Params.IsStock()})
		default:
			counts[c.Status]++
		}
	}
	sort.SliceStable(ok, func(i, j int) bool { return ok[i].GBs > ok[j].GBs })
	for i, c := range ok {
		if i < topN || c.Params.IsStock() { // stock is always listed, for comparison
			v.Top = append(v.Top, candRow{Rank: i + 1, Candidate: c, Winner: c.ID == e.Winner.ID, Stock: c.Params.IsStock()})
		}
	}
	var others []string
	statuses := make([]string, 0, len(counts))
	for s := range counts {
		statuses = append(statuses, s)
	}
	sort.Strings(statuses)
	for _, s := range statuses {
		others = append(others, fmt.Sprintf("%s: %d", s, counts[s]))
	}
	if n := len(ok) - len(v.Top); n > 0 {
		others = append(others, fmt.Sprintf("measured, not listed: %d", n))
	}
	v.Others = strings.Join(others, ", ")
	v.Verdict = e.Reason
	return v
}

// formatRank orders formats as variants.FormatNames does; unknown ones
// last.
func formatRank(f string) int {
	if i := slices.Index(variants.FormatNames, f); i >= 0 {
		return i
	}
	return len(variants.FormatNames)
}

// renderReport writes the page as HTML.
func renderReport(w io.Writer, page reportPage) error {
	return reportTemplate.Execute(w, page)
}

var reportTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"num":     num,
	"pct":     pct,
	"speedup": speedup,
	"pval": func(p float64) string {
		if p == 0 {
			return "-"
		}
		return fmt.Sprintf("%.3g", p)
	},
}).Parse(reportHTML))

const reportHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>gemvtune report</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto; max-width: 1100px; color: #222; padding: 0 16px; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 19px; border-bottom: 2px solid #ccc; padding-bottom: 4px; margin-top: 36px; }
h3 { font-size: 16px; margin: 28px 0 4px; }
.meta, .note { color: #666; font-size: 13px; }
.stale { color: #a04000; font-weight: 600; }
.verdict { margin: 4px 0 8px; }
table { border-collapse: collapse; margin: 8px 0 4px; font-size: 13px; }
th, td { border-bottom: 1px solid #e3e3e3; padding: 3px 10px; text-align: right; white-space: nowrap; }
th { background: #f4f4f4; }
td.l, th.l { text-align: left; }
td.reason { text-align: left; white-space: normal; max-width: 520px; }
tr.win td { background: #fff4c2; font-weight: 600; }
tr.stock td { background: #e9f1fb; }
code { font-size: 13px; }
svg { display: block; margin: 6px 0; }
nav a { margin-right: 10px; }
</style>
</head>
<body>
<h1>gemvtune report</h1>
<p class="meta">Generated {{.Generated}} from {{.Cache}}. GB/s counts every weight and scale byte once per launch; the ceiling is the plain streaming read measured in the same run.</p>
<nav>{{range .Archs}}{{$a := .Arch}}<strong>{{.Arch}}</strong>: {{range .Entries}}<a href="#{{.Anchor}}">{{.Format}} {{.Shape}}</a>{{end}}<br>{{end}}</nav>
{{range .Archs}}
<h2>{{.Arch}}{{if .GPUs}} — {{.GPUs}}{{end}}</h2>
{{if .When}}<p class="meta">Last tuned {{.When}}.</p>{{end}}
{{range .Entries}}
<h3 id="{{.Anchor}}">{{.Format}} {{.Shape}}</h3>
<p class="verdict">Winner <code>{{.Winner.ID}}</code> ({{.Winner.Class}}): {{num .Winner.MedianUS 2}} µs, {{num .Winner.GBs 0}} GB/s, {{num .Winner.PctCeiling 1}} % of ceiling ({{num .CeilingGBs 0}} GB/s); speedup over stock {{speedup .Speedup}}, p = {{pval .P}}.{{if gt .ReadUS 0.0}} A plain read of the same weight bytes took {{num .ReadUS 2}} µs, so the winner runs at {{num (pct .ReadUS .Winner.MedianUS) 1}} % of the speed of reading its weights once.{{end}}{{if .Throttled}} <strong>The GPU throttled during this measurement.</strong>{{end}}<br>Decision: {{.Verdict}}</p>
{{if .Stale}}<p class="stale">Stale record: {{.Stale}}. Engines ignore it; the next autotune run re-tunes it.</p>{{end}}
{{.Plot}}
<p class="note">Plot: measured candidates with {{.Fixed}}. Each point is labelled registers/thread · blocks per SM.</p>
{{if .Top}}<table>
<tr><th class="l">#</th><th class="l">variant</th><th class="l">class</th><th>µs</th><th>95 % CI µs</th><th>GB/s</th><th>% ceiling</th><th>registers</th><th>blocks/SM</th><th>samples</th></tr>
{{range .Top}}<tr class="{{if .Winner}}win{{else if .Stock}}stock{{end}}"><td class="l">{{.Rank}}</td><td class="l"><code>{{.ID}}</code>{{if .Winner}} winner{{end}}{{if .Stock}} stock{{end}}</td><td class="l">{{.Class}}</td><td>{{num .MedianUS 2}}</td><td>{{num .LoUS 2}}–{{num .HiUS 2}}</td><td>{{num .GBs 0}}</td><td>{{num .PctCeiling 1}}</td><td>{{.Registers}}</td><td>{{.BlocksPerSM}}</td><td>{{.Samples}}</td></tr>
{{end}}</table>{{end}}
{{if .Failed}}<table>
<tr><th class="l">failed variant</th><th class="l">status</th><th class="l">reason</th></tr>
{{range .Failed}}<tr><td class="l"><code>{{.ID}}</code></td><td class="l">{{.Status}}</td><td class="reason">{{.Reason}}</td></tr>
{{end}}</table>{{else}}<p class="note">No candidate failed to compile, verify or run.</p>{{end}}
{{if .Others}}<p class="note">Other candidates: {{.Others}}.</p>{{end}}
{{end}}
{{end}}
</body>
</html>
`

// loadEntries reads every record of arch ("" = all) from the cache at path
// ("" = the default) read-only. It returns the entries, the path read and
// an error; an error matching cache.ErrBadRecord comes with the good
// entries.
func loadEntries(path, arch string) ([]reportEntry, string, error) {
	if path == "" {
		p, err := cache.DefaultPath()
		if err != nil {
			return nil, "", err
		}
		path = p
	}
	db, err := cache.Open(path, &cache.Options{ReadOnly: true})
	if errors.Is(err, cache.ErrNotExist) {
		return nil, path, fmt.Errorf("report: no cache at %s: run autotune first, or give --cache", path)
	}
	if err != nil {
		return nil, path, fmt.Errorf("report: %w", err)
	}
	defer db.Close()
	recs, err := db.All(arch)
	var out []reportEntry
	for _, r := range recs {
		out = append(out, entryFromRecord(r))
	}
	return out, path, err
}

// entryFromRecord turns a cached record into a report entry. The winner
// and stock come from the candidate list when it holds them, else from the
// record's own figures.
func entryFromRecord(r cache.Record) reportEntry {
	e := reportEntry{
		Arch: r.Arch, Format: r.Format, Shape: r.Key.Shape(), GPUName: r.GPUName, Time: r.Time,
		Speedup: r.Speedup, P: r.P, Reason: r.Decision, CeilingGBs: r.CeilingGBs, ReadUS: r.ReadUS,
		Throttled: r.Throttled, Candidates: r.Candidates,
	}
	e.Winner = cache.Candidate{
		ID: r.WinnerID, Params: r.Params, Class: r.Class, Status: string(tuner.StatusOK),
		Registers: r.Registers, BlocksPerSM: r.BlocksPerSM, MedianUS: r.MedianUS, LoUS: r.LoUS, HiUS: r.HiUS,
		GBs: r.GBs, PctCeiling: r.PctCeiling, Samples: r.Samples,
	}
	e.Stock = cache.Candidate{ID: space.Stock.ID(), Params: space.Stock, Class: cache.ClassExact,
		Status: string(tuner.StatusOK), MedianUS: r.StockMedianUS, GBs: r.StockGBs}
	for _, c := range r.Candidates {
		if c.Params == r.Params {
			e.Winner = c
			if e.Winner.ID == "" {
				e.Winner.ID = r.WinnerID
			}
		}
		if c.Params.IsStock() && c.GBs > 0 {
			e.Stock = c
		}
	}
	if fam, err := variants.FamilyOf(r.Format); err == nil {
		_, e.Stale = r.Stale(fam.SourceHash(), cache.ToolVersion)
	}
	return e
}
