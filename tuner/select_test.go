package tuner

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/internal/gpu"
)

// noisy returns n samples around center with ±1 % uniform noise.
func noisy(rng *rand.Rand, center float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = center * (1 + 0.02*(rng.Float64()-0.5))
	}
	return out
}

func TestDecide(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	mk := func(id string, center float64) Candidate {
		c := Candidate{ID: id, Status: StatusOK, Samples: noisy(rng, center, finalRounds)}
		c.MedianUS, c.LoUS, c.HiUS = summarize(c.Samples)
		return c
	}
	tests := []struct {
		name     string
		cands    []Candidate
		wantKept bool
		wantID   string
		reason   string
	}{
		{"clear win", []Candidate{mk("fast", 90), mk("slow", 110)}, false, "fast", "over v1"},
		{"twin", []Candidate{mk("twin", 100)}, true, "r1f0u1s0w8", "kept v1"},
		{"significant but small", []Candidate{mk("tiny", 99.2)}, true, "r1f0u1s0w8", "kept v1"},
		{"nothing faster", []Candidate{mk("slow", 120)}, true, "r1f0u1s0w8", "kept v1"},
		{"failed candidates ignored", []Candidate{{ID: "bad", Status: StatusMismatch, MedianUS: 1}}, true, "r1f0u1s0w8", "kept v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stock := mk("r1f0u1s0w8", 100)
			d := decide(stock, tt.cands, DefaultRule)
			if d.kept != tt.wantKept || d.winner.ID != tt.wantID || !strings.Contains(d.reason, tt.reason) {
				t.Errorf("decide = kept %v winner %s (%s); want kept %v winner %s (%q)", d.kept, d.winner.ID, d.reason, tt.wantKept, tt.wantID, tt.reason)
			}
			if d.kept && d.speedup != 1 {
				t.Errorf("kept stock but speedup %.3f", d.speedup)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	med, lo, hi := summarize([]float64{5, 1, 3, 2, 4, 6, 7, 8, 9, 10, 11})
	if med != 6 || !(lo <= med && med <= hi) || lo < 1 || hi > 11 {
		t.Errorf("summarize = %v [%v, %v]", med, lo, hi)
	}
}

func TestDecideClasses(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	mk := func(id, class string, center float64) Candidate {
		c := Candidate{ID: id, Class: class, Status: StatusOK, Samples: noisy(rng, center, finalRounds)}
		c.MedianUS, c.LoUS, c.HiUS = summarize(c.Samples)
		return c
	}
	tests := []struct {
		name           string
		cands          []Candidate
		wantWinner     string
		wantAlt        string // "" = no alternative
		wantReasonPart string
	}{
		{"int8 clearly ahead", []Candidate{mk("x-a1", "tolerance", 50), mk("x-exact", "exact", 60)}, "x-a1", "x-exact", "over v1"},
		{"int8 barely ahead", []Candidate{mk("x-a1", "tolerance", 59.7), mk("x-exact", "exact", 60)}, "x-exact", "", "preferred to x-a1"},
		{"exact ahead", []Candidate{mk("x-a1", "tolerance", 70), mk("x-exact", "exact", 60)}, "x-exact", "", "over v1"},
		{"no exact beats stock", []Candidate{mk("x-a1", "tolerance", 50), mk("x-exact", "exact", 110)}, "x-a1", "r1f0u1s0w8", "over v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stock := mk("r1f0u1s0w8", "exact", 100)
			main, alt := decideClasses(stock, tt.cands, DefaultRule)
			if main.winner.ID != tt.wantWinner || !strings.Contains(main.reason, tt.wantReasonPart) {
				t.Errorf("winner %s (%s), want %s (%q)", main.winner.ID, main.reason, tt.wantWinner, tt.wantReasonPart)
			}
			switch {
			case tt.wantAlt == "" && alt != nil:
				t.Errorf("unexpected alternative %s", alt.winner.ID)
			case tt.wantAlt != "" && (alt == nil || alt.winner.ID != tt.wantAlt):
				t.Errorf("alternative %v, want %s", alt, tt.wantAlt)
			}
		})
	}
}

// TestDecisionFastest: the fastest verified candidate of the final stage,
// stock when none is faster; screened-out (fewer samples) and failed
// candidates do not count.
func TestDecisionFastest(t *testing.T) {
	n := func(k int) []float64 { return make([]float64, k) }
	stock := Candidate{ID: "v1", Status: StatusOK, MedianUS: 10, Samples: n(21)}
	for _, tc := range []struct {
		name  string
		cands []Candidate
		want  string
	}{
		{"stock only", []Candidate{stock}, "v1"},
		{"faster final", []Candidate{stock, {ID: "a", Status: StatusOK, MedianUS: 8, Samples: n(21)}, {ID: "b", Status: StatusOK, MedianUS: 9, Samples: n(21)}}, "a"},
		{"faster but screened out", []Candidate{stock, {ID: "a", Status: StatusOK, MedianUS: 7, Samples: n(7)}, {ID: "b", Status: StatusOK, MedianUS: 9, Samples: n(21)}}, "b"},
		{"faster but mismatched", []Candidate{stock, {ID: "a", Status: StatusMismatch, MedianUS: 7, Samples: n(21)}}, "v1"},
		{"slower", []Candidate{stock, {ID: "a", Status: StatusOK, MedianUS: 11, Samples: n(21)}}, "v1"},
	} {
		d := Decision{Stock: stock, Candidates: tc.cands}
		if got := d.Fastest().ID; got != tc.want {
			t.Errorf("%s: Fastest = %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestPDLFigures: a candidate's PDL time comes from its PDL chain's
// samples, and it is recorded in PDL launch mode only where its plain
// chain was timed in the same rounds and was not faster beyond both
// intervals (a tie goes to PDL).
func TestPDLFigures(t *testing.T) {
	around := func(center float64) []float64 {
		var x []float64
		for i := range 15 {
			x = append(x, center*(1+0.002*float64(i%5-2)))
		}
		return x
	}
	cands := []Candidate{{ID: "faster"}, {ID: "overlaps"}, {ID: "overlaps-above"}, {ID: "slower"}, {ID: "no-plain"}, {ID: "not-timed"}}
	v := map[string][]float64{
		"faster": around(10), pdlPrefix + "faster": around(9),
		"overlaps": around(10), pdlPrefix + "overlaps": around(9.99),
		"overlaps-above": around(10), pdlPrefix + "overlaps-above": around(10.01),
		"slower": around(10), pdlPrefix + "slower": around(11),
		pdlPrefix + "no-plain": around(5),
	}
	pdlFigures(cands, v)
	for _, tc := range []struct {
		id     string
		pdlUS  float64
		launch bool
	}{{"faster", 9, true}, {"overlaps", 9.99, true}, {"overlaps-above", 10.01, true}, {"slower", 11, false}, {"no-plain", 5, false}, {"not-timed", 0, false}} {
		var c Candidate
		for _, x := range cands {
			if x.ID == tc.id {
				c = x
			}
		}
		if math.Abs(c.PDLUS-tc.pdlUS) > 1e-9 || c.LaunchPDL != tc.launch {
			t.Errorf("%s: PDLUS %v, LaunchPDL %v; want %v, %v", tc.id, c.PDLUS, c.LaunchPDL, tc.pdlUS, tc.launch)
		}
	}
}

// TestChainTimingClocks: a mode's throttled share and lowest SM clock come
// from the clocks read after its batches; without NVML there are none.
func TestChainTimingClocks(t *testing.T) {
	cl := func(mhz int, throttled bool) gpu.Clocks { return gpu.Clocks{SMMHz: mhz, Throttled: throttled} }
	for _, c := range []struct {
		name    string
		clocks  []gpu.Clocks
		samples int
		pct     float64
		minMHz  int
	}{
		{"no NVML", nil, 0, 0, 0},
		{"never throttled", []gpu.Clocks{cl(1980, false), cl(1980, false)}, 2, 0, 1980},
		{"power cap in one of four", []gpu.Clocks{cl(1980, false), cl(1875, true), cl(1965, false), cl(1980, false)}, 4, 25, 1875},
	} {
		got := chainTiming([]float64{1100, 1200, 1150}, c.clocks, 4.2e9, 4400)
		if got.ClockSamples != c.samples || got.ThrottledPct != c.pct || got.MinSMMHz != c.minMHz || got.MedianUS != 1150 {
			t.Errorf("%s: %+v", c.name, got)
		}
	}
}
