package main

import (
	"fmt"
	"html/template"
	"math"
	"sort"
	"strings"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/tuner"
)

// Plot geometry, in SVG user units.
const (
	plotW, plotH             = 900, 400
	padL, padR, padT, padB   = 70, 170, 24, 52
	innerW, innerH           = plotW - padL - padR, plotH - padT - padB
	pointR, winnerR, stockSz = 4.5, 9, 7
)

// ceilingOffScale: a ceiling more than this many times the fastest point is
// written, not drawn, so the points keep the plot's height.
const ceilingOffScale = 1.6

// floorColors gives each launch-bounds floor its line colour.
var floorColors = map[int]string{
	0: "#1f77b4", 1: "#ff7f0e", 2: "#2ca02c", 3: "#d62728",
	4: "#9467bd", 6: "#8c564b", 8: "#e377c2",
}

// isFailure reports whether a candidate failed for real (not pruned,
// refused by the gate or dropped by the search).
func isFailure(s string) bool {
	switch tuner.Status(s) {
	case tuner.StatusCompile, tuner.StatusMismatch, tuner.StatusFault, tuner.StatusTimeout:
		return true
	}
	return false
}

// sameFixed reports whether p has the fixed knobs u, s, w, l and a, and
// the same kind of grid: plain (g=0) or one wave (any g > 0, which the
// tuner sets per variant from its rows per block and occupancy).
func sameFixed(p, fixed space.Params) bool {
	return p.U == fixed.U && p.S == fixed.S && p.W == fixed.W && p.L == fixed.L && p.A == fixed.A &&
		(p.G == 0) == (fixed.G == 0)
}

// plotSVG draws GB/s against rows per warp for the candidates of e that
// share fixed's u, s, w and l: one line per launch-bounds floor, each point
// labelled registers · blocks/SM, the winner circled, stock as a square and
// the read ceiling as a dashed line. Failed candidates are crosses on the
// axis.
func plotSVG(e reportEntry, fixed space.Params) string {
	byF := map[int][]cache.Candidate{}
	var failed []cache.Candidate
	rs := map[int]bool{}
	for _, r := range space.Knobs[0].Values {
		rs[r] = true
	}
	best := 0.0 // the fastest point drawn
	for _, c := range e.Candidates {
		if !sameFixed(c.Params, fixed) {
			continue
		}
		switch {
		case c.Status == string(tuner.StatusOK) && c.GBs > 0:
			byF[c.Params.F] = append(byF[c.Params.F], c)
			best = math.Max(best, c.GBs)
		case isFailure(c.Status):
			failed = append(failed, c)
		default:
			continue
		}
		rs[c.Params.R] = true
	}
	best = math.Max(best, math.Max(e.Stock.GBs, e.Winner.GBs))
	// The axis reaches the ceiling unless that would squash every point into
	// the bottom of the plot (small shapes are launch-bound): then the
	// ceiling is written at the top instead of drawn.
	ymax := math.Max(best, e.CeilingGBs)
	offScale := best > 0 && e.CeilingGBs > ceilingOffScale*best
	if offScale {
		ymax = best
	}
	if ymax <= 0 {
		ymax = 1
	}
	step := niceStep(ymax / 5)
	ytop := math.Ceil(ymax*1.06/step) * step

	var rvals []int
	for r := range rs {
		rvals = append(rvals, r)
	}
	sort.Ints(rvals)
	xOf := map[int]float64{}
	for i, r := range rvals {
		xOf[r] = padL + (float64(i)+0.5)*innerW/float64(len(rvals))
	}
	yOf := func(gbs float64) float64 { return padT + innerH*(1-gbs/ytop) }

	var b strings.Builder
	esc := template.HTMLEscapeString
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="system-ui, sans-serif" font-size="11" role="img" aria-label="GB/s against rows per warp for %s %s">`,
		plotW, plotH, plotW, plotH, esc(e.Format), e.Shape)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#fcfcfc" stroke="#bbb"/>`, padL, padT, innerW, innerH)

	// Y grid and ticks.
	for v := 0.0; v <= ytop+step/2; v += step {
		y := yOf(v)
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#e6e6e6"/>`, padL, padL+innerW, y, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle" fill="#555">%s</text>`, padL-6, y, trimFloat(v))
	}
	// X ticks.
	for _, r := range rvals {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#999"/>`, xOf[r], xOf[r], padT+innerH, padT+innerH+5)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#333">%d</text>`, xOf[r], padT+innerH+18, r)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#333" font-size="12">rows per warp (r)</text>`, padL+innerW/2, plotH-8)
	fmt.Fprintf(&b, `<text transform="translate(16 %d) rotate(-90)" text-anchor="middle" fill="#333" font-size="12">GB/s</text>`, padT+innerH/2)

	// Ceiling.
	if offScale {
		fmt.Fprintf(&b, `<text class="ceiling" x="%d" y="%d" fill="#c0392b" text-anchor="end">ceiling %.0f GB/s is above this plot (best here: %.0f %%) ↑</text>`,
			padL+innerW-6, padT+14, e.CeilingGBs, 100*best/e.CeilingGBs)
	} else if e.CeilingGBs > 0 {
		y := yOf(e.CeilingGBs)
		fmt.Fprintf(&b, `<line class="ceiling" x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#c0392b" stroke-width="1.5" stroke-dasharray="6 4"/>`, padL, padL+innerW, y, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" fill="#c0392b" text-anchor="end">ceiling %.0f GB/s</text>`, padL+innerW-6, y-5, e.CeilingGBs)
	}

	// One line per floor.
	var floors []int
	for f := range byF {
		floors = append(floors, f)
	}
	sort.Ints(floors)
	var labels []pointLabel
	for li, f := range floors {
		cs := byF[f]
		sort.Slice(cs, func(i, j int) bool { return cs[i].Params.R < cs[j].Params.R })
		color := floorColors[f]
		if color == "" {
			color = "#555"
		}
		var pts []string
		for _, c := range cs {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf[c.Params.R], yOf(c.GBs)))
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.8"/>`, strings.Join(pts, " "), color)
		for _, c := range cs {
			x, y := xOf[c.Params.R], yOf(c.GBs)
			fmt.Fprintf(&b, `<circle class="pt" data-id="%s" data-gbs="%.0f" cx="%.1f" cy="%.1f" r="%.1f" fill="%s"><title>%s: %.0f GB/s, %.2f µs, %d registers, %d blocks/SM</title></circle>`,
				esc(c.ID), c.GBs, x, y, pointR, color, esc(c.ID), c.GBs, c.MedianUS, c.Registers, c.BlocksPerSM)
			labels = append(labels, pointLabel{r: c.Params.R, x: x, y: y, color: color,
				text: countOrQ(c.Registers) + "·" + countOrQ(c.BlocksPerSM)})
		}
		// Legend entry.
		ly := padT + 40 + li*18
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2.5"/><circle cx="%d" cy="%d" r="3.5" fill="%s"/>`,
			padL+innerW+10, padL+innerW+34, ly, ly, color, padL+innerW+22, ly, color)
		fmt.Fprintf(&b, `<text x="%d" y="%d" dominant-baseline="middle">floor f=%d</text>`, padL+innerW+40, ly, f)
	}
	writeLabels(&b, labels)
	if len(floors) == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#888">no measured candidate with these knobs</text>`, padL+innerW/2, padT+innerH/2)
	}

	// Failed candidates: crosses on the axis.
	for _, c := range failed {
		x, y := xOf[c.Params.R]+float64(c.Params.F)*2-6, float64(padT+innerH)
		fmt.Fprintf(&b, `<g class="failed" stroke="#c0392b" stroke-width="2"><title>%s %s: %s</title><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/></g>`,
			esc(c.ID), c.Status, esc(c.Reason), x-4, y-4, x+4, y+4, x-4, y+4, x+4, y-4)
	}

	// Stock: a square at its own GB/s (its knobs may differ from the slice).
	if e.Stock.GBs > 0 {
		x, y := xOf[space.Stock.R], yOf(e.Stock.GBs)
		fmt.Fprintf(&b, `<rect class="stock" x="%.1f" y="%.1f" width="%d" height="%d" fill="none" stroke="#000" stroke-width="1.8"><title>stock %s: %.0f GB/s, %.2f µs</title></rect>`,
			x-stockSz, y-stockSz, 2*stockSz, 2*stockSz, space.Stock.ID(), e.Stock.GBs, e.Stock.MedianUS)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" font-size="10" stroke="#fcfcfc" stroke-width="3" paint-order="stroke">stock</text>`, x-stockSz-3, y+3)
	}
	// Winner: a thick ring.
	if e.Winner.GBs > 0 && sameFixed(e.Winner.Params, fixed) {
		x, y := xOf[e.Winner.Params.R], yOf(e.Winner.GBs)
		fmt.Fprintf(&b, `<circle class="winner" data-id="%s" cx="%.1f" cy="%.1f" r="%d" fill="none" stroke="#000" stroke-width="2.5"><title>winner %s: %.0f GB/s</title></circle>`,
			esc(e.Winner.ID), x, y, winnerR, esc(e.Winner.ID), e.Winner.GBs)
		// Up and to the left (the point labels are on the right), except at
		// the leftmost r, where a left-hanging label would leave the plot.
		anchor, tx := "end", x-4
		if e.Winner.Params.R == space.Knobs[0].Values[0] {
			anchor, tx = "start", x+4
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="%s" font-weight="600" font-size="11" stroke="#fcfcfc" stroke-width="3" paint-order="stroke">winner %s</text>`, tx, y-winnerR-3, anchor, esc(e.Winner.ID))
	}

	// Legend for the markers.
	ly := padT + 40 + len(floors)*18 + 10
	lx := padL + innerW + 10
	fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="7" fill="none" stroke="#000" stroke-width="2.5"/><text x="%d" y="%d" dominant-baseline="middle">winner</text>`, lx+12, ly, lx+30, ly)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="none" stroke="#000" stroke-width="1.8"/><text x="%d" y="%d" dominant-baseline="middle">stock %s</text>`, lx+6, ly+12, lx+30, ly+18, space.Stock.ID())
	fmt.Fprintf(&b, `<g stroke="#c0392b" stroke-width="2"><line x1="%d" y1="%d" x2="%d" y2="%d"/><line x1="%d" y1="%d" x2="%d" y2="%d"/></g><text x="%d" y="%d" dominant-baseline="middle">failed</text>`,
		lx+8, ly+32, lx+16, ly+40, lx+8, ly+40, lx+16, ly+32, lx+30, ly+36)
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555" font-size="10">labels: registers·blocks/SM</text>`, lx, ly+60)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-weight="600">%s %s</text>`, lx, padT+14, esc(e.Format), e.Shape)
	b.WriteString(`</svg>`)
	return b.String()
}

// niceStep rounds raw up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// trimFloat prints a tick value without trailing zeros.
func trimFloat(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// countOrQ prints a count, "?" when unknown (0).
func countOrQ(n int) string {
	if n == 0 {
		return "?"
	}
	return fmt.Sprint(n)
}

// pointLabel is the "registers·blocks/SM" label of one point.
type pointLabel struct {
	r     int
	x, y  float64
	color string
	text  string
}

// labelGap is the least vertical distance between two labels of a column.
const labelGap = 11.0

// writeLabels writes the labels to the right of their points. Within one
// rows-per-warp column they are spread vertically so none overlap, keeping
// their top-to-bottom order, and each label's colour is its line's.
func writeLabels(b *strings.Builder, labels []pointLabel) {
	cols := map[int][]pointLabel{}
	for _, l := range labels {
		cols[l.r] = append(cols[l.r], l)
	}
	for _, col := range cols {
		sort.Slice(col, func(i, j int) bool { return col[i].y < col[j].y })
		ys := make([]float64, len(col))
		for i, l := range col {
			ys[i] = l.y
			if i > 0 && ys[i] < ys[i-1]+labelGap {
				ys[i] = ys[i-1] + labelGap
			}
		}
		// Centre the spread block on the points it labels.
		shift := (col[0].y + col[len(col)-1].y - ys[0] - ys[len(ys)-1]) / 2
		for i, l := range col {
			y := ys[i] + shift
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" dominant-baseline="middle" font-size="9.5" fill="%s" stroke="#fcfcfc" stroke-width="3" paint-order="stroke">%s</text>`,
				l.x+11, y, l.color, template.HTMLEscapeString(l.text))
		}
	}
}
