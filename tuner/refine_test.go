package tuner

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/space"
)

// TestRefineChain walks RefineChain's arms on a fake Chain: nothing
// faster; one shape's faster alternative kept; two shapes' kept together;
// together not faster, so the single best one is tried and kept, or not.
func TestRefineChain(t *testing.T) {
	stages := []ChainStage{
		{Name: "blk.0.o", Format: "q4_0", Rows: 4096, Cols: 4096, Params: space.Stock},
		{Name: "blk.0.down", Format: "q4_0", Rows: 4096, Cols: 14336, Params: space.Stock},
	}
	p := func(id string) space.Params { return mustParse(t, id) }
	o1 := ChainVariant{Format: "q4_0", Rows: 4096, Cols: 4096, Params: p("r2f0u2s2w8l1")}
	o2 := ChainVariant{Format: "q4_0", Rows: 4096, Cols: 4096, Params: p("r1f0u2s1w8")}
	d1 := ChainVariant{Format: "q4_0", Rows: 4096, Cols: 14336, Params: p("r1f0u2s1w8")}
	at := func(us float64) ChainTiming { return ChainTiming{MedianUS: us, LoUS: us - 1, HiUS: us + 1} }
	key := func(t ChainTrial) string {
		s := ""
		for _, v := range t.Variants {
			s += v.Params.ID() + "@" + strconv.Itoa(v.Cols) + " "
		}
		return s
	}
	for _, tc := range []struct {
		name    string
		alts    []ChainVariant
		first   map[string]float64 // a trial's µs in the first run (the base is 100)
		second  map[string]float64 // in a second run, by the trial's variants
		chosen  []ChainVariant
		tried   []ChainVariant
		seconds int
	}{
		{name: "nothing faster", alts: []ChainVariant{o1, d1},
			first: map[string]float64{key(ChainTrial{[]ChainVariant{o1}}): 100.5, key(ChainTrial{[]ChainVariant{d1}}): 101}},
		{name: "one shape", alts: []ChainVariant{o1, o2, d1},
			first:  map[string]float64{key(ChainTrial{[]ChainVariant{o1}}): 97, key(ChainTrial{[]ChainVariant{o2}}): 95, key(ChainTrial{[]ChainVariant{d1}}): 100},
			second: map[string]float64{key(ChainTrial{[]ChainVariant{o2}}): 96},
			chosen: []ChainVariant{o2}, tried: []ChainVariant{o2}, seconds: 1},
		{name: "two shapes together", alts: []ChainVariant{o1, d1},
			first:  map[string]float64{key(ChainTrial{[]ChainVariant{o1}}): 97, key(ChainTrial{[]ChainVariant{d1}}): 96},
			second: map[string]float64{key(ChainTrial{[]ChainVariant{o1, d1}}): 93},
			chosen: []ChainVariant{o1, d1}, tried: []ChainVariant{o1, d1}, seconds: 1},
		{name: "together not faster, the best alone is", alts: []ChainVariant{o1, d1},
			first:  map[string]float64{key(ChainTrial{[]ChainVariant{o1}}): 97, key(ChainTrial{[]ChainVariant{d1}}): 96},
			second: map[string]float64{key(ChainTrial{[]ChainVariant{o1, d1}}): 100, key(ChainTrial{[]ChainVariant{d1}}): 97},
			chosen: []ChainVariant{d1}, tried: []ChainVariant{d1}, seconds: 2},
		{name: "neither", alts: []ChainVariant{o1, d1},
			first:  map[string]float64{key(ChainTrial{[]ChainVariant{o1}}): 97, key(ChainTrial{[]ChainVariant{d1}}): 96},
			second: map[string]float64{key(ChainTrial{[]ChainVariant{o1, d1}}): 100, key(ChainTrial{[]ChainVariant{d1}}): 99.5},
			tried:  []ChainVariant{d1}, seconds: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs := 0
			chainRun = func(_ context.Context, _ int, st []ChainStage, o ChainOptions) (ChainResult, error) {
				runs++
				if len(st) != len(stages) || !o.PDL {
					t.Fatalf("run %d: %d stages, PDL %v", runs, len(st), o.PDL)
				}
				times := tc.first
				if runs > 1 {
					times = tc.second
				}
				r := ChainResult{ChainTiming: at(150)}
				base := at(100)
				r.PDL = &base
				for _, tr := range o.Trials {
					us, ok := times[key(tr)]
					if !ok {
						t.Fatalf("run %d: unexpected trial %s", runs, key(tr))
					}
					r.Trials = append(r.Trials, at(us))
					r.TrialVariants = append(r.TrialVariants, tr.Variants)
				}
				return r, nil
			}
			defer func() { chainRun = Chain }()
			ref, err := RefineChain(context.Background(), 0, stages, tc.alts, RefineOptions{PDL: true})
			if err != nil {
				t.Fatal(err)
			}
			if runs != 1+tc.seconds {
				t.Errorf("%d runs, want %d", runs, 1+tc.seconds)
			}
			if len(ref.Trials) != len(tc.alts) || ref.Base.MedianUS != 100 {
				t.Errorf("%d trials, base %.1f", len(ref.Trials), ref.Base.MedianUS)
			}
			same := func(a, b []ChainVariant) bool { return key(ChainTrial{a}) == key(ChainTrial{b}) }
			if !same(ref.Chosen, tc.chosen) || !same(ref.Tried, tc.tried) {
				t.Errorf("chosen %s, tried %s; want %s, %s", key(ChainTrial{ref.Chosen}), key(ChainTrial{ref.Tried}), key(ChainTrial{tc.chosen}), key(ChainTrial{tc.tried}))
			}
			if (ref.Together == nil) != (tc.seconds == 0) {
				t.Errorf("together %v after %d second runs", ref.Together, tc.seconds)
			}
		})
	}
}

// PickAlternatives takes the fastest verified candidates but the chosen
// one and stock, then the fastest of each staging form and grid share not
// yet in; an exact choice gets exact alternatives only.
func TestPickAlternatives(t *testing.T) {
	m := func(id, class, status string, us float64) Measured {
		return Measured{Params: mustParse(t, id), Class: class, Status: status, MedianUS: us}
	}
	cands := []Measured{
		m("r2f0u2s3w8l2", "exact", "ok", 4.0), // the choice
		m("v1", "exact", "ok", 9.0),
		m("r1f0u2s3w8l2", "exact", "ok", 4.1),
		m("r4f0u2s3w8l2", "exact", "mismatch", 3.0),
		m("r2f0u4s3w8l2a1", "tolerance", "ok", 3.9),
		m("r2f0u4s3w8l2", "exact", "ok", 4.2),
		m("r2f0u2s2w8l1", "exact", "ok", 4.3),
		m("r2f0u2s2w16l1", "exact", "ok", 4.35), // s=2 is in already
		m("r2f0u2s1w8", "exact", "ok", 4.6),
		m("r2f0u4s1w8", "exact", "ok", 4.7),
		m("r2f0u2s0w8", "exact", "ok", 5.0),
		m("r2f0u1s0w8", "exact", "pruned", 0),
	}
	oneShare := func(space.Params) int { return 1 }
	for _, tc := range []struct {
		class, want string
	}{
		{"exact", "r1f0u2s3w8l2 r2f0u4s3w8l2 r2f0u2s2w8l1 r2f0u2s1w8 r2f0u2s0w8"},
		{"tolerance", "r2f0u4s3w8l2a1 r1f0u2s3w8l2 r2f0u4s3w8l2 r2f0u2s2w8l1 r2f0u2s1w8 r2f0u2s0w8"},
	} {
		cands[0].Class = tc.class // the choice's class decides
		var got []string
		for _, p := range PickAlternatives(cands, cands[0].Params, oneShare) {
			got = append(got, p.ID())
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s choice: alternatives %v, want %s", tc.class, got, tc.want)
		}
	}
	// A choice not among the candidates counts as exact.
	var got []string
	for _, p := range PickAlternatives(cands[1:], cands[0].Params, oneShare) {
		got = append(got, p.ID())
	}
	if want := "r1f0u2s3w8l2 r2f0u4s3w8l2 r2f0u2s2w8l1 r2f0u2s1w8 r2f0u2s0w8"; strings.Join(got, " ") != want {
		t.Errorf("choice without a candidate: alternatives %v, want %s", got, want)
	}
	// The grid shares of q4_0 at 28672x4096 on 132 SMs: the choice's
	// (r4 w8 g7: 128 blocks) is 1; the fastest of share 2 (r1 w16 g7: 256)
	// and of 3+ (r1 w8 g7: 512, r2 w8: 1792) come in after the three
	// fastest, the slower ones of a share already in do not.
	gate := Job{Format: "q4_0", Rows: 28672, Cols: 4096}
	grids := []Measured{
		m("r4f0u2s3w8g7l2a1", "tolerance", "ok", 16.84), // the choice
		m("r2f0u2s3w16g7l2a1", "tolerance", "ok", 17.00),
		m("r6f0u2s3w8g5l2a1", "tolerance", "ok", 17.14),
		m("r8f0u2s3w8g4l2a1", "tolerance", "ok", 17.39),
		m("r1f0u2s3w8g7l2a1", "tolerance", "ok", 17.40),
		m("r3f0u2s3w16g5l2a1", "tolerance", "ok", 17.44),
		m("r1f0u2s3w16g7l2a1", "tolerance", "ok", 17.47),
		m("r1f0u8s3w8g14l2a1", "tolerance", "ok", 17.56),
		m("r2f0u2s3w8l2a1", "tolerance", "ok", 19.0),
	}
	for _, c := range []struct {
		id   string
		want int
	}{{"r4f0u2s3w8g7l2a1", 1}, {"r1f0u2s3w16g7l2a1", 2}, {"r1f0u8s3w8g14l2a1", 2}, {"r1f0u2s3w8g7l2a1", 3}, {"r2f0u2s3w8l2a1", 3}} {
		if got := GridShare(gate, mustParse(t, c.id), 132); got != c.want {
			t.Errorf("GridShare(%s) = %d, want %d", c.id, got, c.want)
		}
	}
	got = nil
	for _, v := range Alternatives(gate, grids, grids[0].Params, 132) {
		got = append(got, v.Params.ID())
	}
	if want := "r2f0u2s3w16g7l2a1 r6f0u2s3w8g5l2a1 r8f0u2s3w8g4l2a1 r1f0u2s3w8g7l2a1 r1f0u2s3w16g7l2a1"; strings.Join(got, " ") != want {
		t.Errorf("grid shares: alternatives %v, want %s", got, want)
	}
}

// applyRefinement makes the chosen candidate the winner of its record,
// with the cubin and PDL shared memory the token ran, its p-value against
// stock from the tune, says why, and keeps the figures measured alone; the
// exact alternative goes when the new winner is exact, and so do the
// marks of tokens refined with the old winner. Decision.Refined shows the
// same choice in the run's decision.
func TestApplyRefinement(t *testing.T) {
	p := func(id string) space.Params { return mustParse(t, id) }
	stock := Candidate{ID: "v1", Params: space.Stock, Class: "exact", Status: StatusOK, MedianUS: 20, Samples: []float64{20, 20.1, 19.9, 20, 20.2}}
	alone := Candidate{ID: "r2f0u2s3w16l2a1", Params: p("r2f0u2s3w16l2a1"), Class: "tolerance", Status: StatusOK, MedianUS: 4.0, PDLUS: 3.5, LaunchPDL: true}
	next := Candidate{ID: "r1f0u4s3w16g2l2", Params: p("r1f0u4s3w16g2l2"), Class: "exact", Status: StatusOK, MedianUS: 4.1, Samples: []float64{4.1, 4.11, 4.09, 4.1, 4.12}}
	d := Decision{Job: Job{Format: "q4_0", Rows: 4096, Cols: 4096}, Arch: "sm_90", Winner: alone, Stock: stock, Reason: "r2f0u2s3w16l2a1: +400 % over v1",
		Candidates: []Candidate{stock, alone, next}, Cubin: []byte("alone"), Exact: &Alternative{Winner: next}}
	rec := d.Record()
	rec.Refined = []string{"mistral-7b"}
	other := cache.Record{Key: cache.Key{Arch: "sm_90", Format: "q4_0", Rows: 6144, Cols: 4096}, WinnerID: alone.ID, Params: alone.Params}
	together, base := ChainTiming{MedianUS: 1160}, ChainTiming{MedianUS: 1173.8}
	ref := Refinement{Chosen: []ChainVariant{{Format: "q4_0", Rows: 4096, Cols: 4096, Params: next.Params, Cubin: []byte("next"), PDLShared: 115968}},
		Together: &together, BaseAgain: &base}
	got := applyRefinement([]cache.Record{other, rec}, ref, "llama-3-8b", true)
	if len(got) != 1 {
		t.Fatalf("%d records changed, want 1", len(got))
	}
	g := got[0].Record
	if g.WinnerID != next.ID || g.Params != next.Params || g.Layout != next.Params.L || string(got[0].Cubin) != "next" || g.PDLShared != 115968 || !g.LaunchPDL || g.PDLUS != 0 ||
		g.MedianUS != 4.1 || g.Samples != 5 || g.Exact != nil || g.Refined != nil || math.Abs(g.Speedup-20.0/4.1) > 1e-12 || !(g.P > 0 && g.P < 0.05) {
		t.Errorf("changed record %+v", g)
	}
	if err := g.Validate(); err != nil {
		t.Errorf("changed record: %v", err)
	}
	if g.Token == nil || *g.Token != (TokenChoice{Model: "llama-3-8b", Isolated: alone.ID, PDL: true, TokenUS: 1160, BaseTokenUS: 1173.8}) {
		t.Errorf("token %+v", g.Token)
	}
	if want := "r1f0u4s3w16g2l2: chosen in the llama-3-8b token, -1.18 % per token (1160.0 against 1173.8 µs with r2f0u2s3w16l2a1); alone r2f0u2s3w16l2a1: +400 % over v1"; g.Decision != want {
		t.Errorf("reason %q, want %q", g.Decision, want)
	}
	if rec.WinnerID != alone.ID || rec.Refined == nil {
		t.Error("the caller's record changed")
	}
	rd := d.Refined(g, got[0].Cubin)
	if rd.Winner.ID != next.ID || len(rd.Winner.Samples) != 5 || rd.Winner.PDLShared != 115968 || !rd.Winner.LaunchPDL || string(rd.Cubin) != "next" ||
		rd.Exact != nil || rd.Reason != g.Decision || rd.Token != g.Token || rd.P != g.P || rd.Speedup != g.Speedup || d.Winner.ID != alone.ID {
		t.Errorf("the decision refined: %+v", rd)
	}
	// A second round that moves it back keeps what ran alone: the first
	// winner and its reason, not the first round's choice.
	third := cache.Candidate{ID: "r2f0u4s3w16l2a1", Params: p("r2f0u4s3w16l2a1"), Class: "tolerance", Status: "ok", MedianUS: 4.2}
	g.Candidates = append(g.Candidates, third)
	together2, base2 := ChainTiming{MedianUS: 1150}, ChainTiming{MedianUS: 1160}
	ref2 := Refinement{Chosen: []ChainVariant{{Format: "q4_0", Rows: 4096, Cols: 4096, Params: third.Params, Cubin: []byte("third")}},
		Together: &together2, BaseAgain: &base2}
	got = applyRefinement([]cache.Record{g}, ref2, "llama-3-8b", true)
	if len(got) != 1 || got[0].Record.Token.Isolated != alone.ID || string(got[0].Cubin) != "third" {
		t.Fatalf("second round: %+v", got)
	}
	if want := "r2f0u4s3w16l2a1: chosen in the llama-3-8b token, -0.86 % per token (1150.0 against 1160.0 µs with r1f0u4s3w16g2l2); alone r2f0u2s3w16l2a1: +400 % over v1"; got[0].Record.Decision != want {
		t.Errorf("second round's reason %q, want %q", got[0].Record.Decision, want)
	}
}

func TestRefinementChange(t *testing.T) {
	for _, c := range []struct {
		name string
		r    Refinement
		want float64
	}{
		{"no second run", Refinement{}, 0},
		{"faster", Refinement{Together: &ChainTiming{MedianUS: 990}, BaseAgain: &ChainTiming{MedianUS: 1000}}, -0.01},
		{"slower", Refinement{Together: &ChainTiming{MedianUS: 1020}, BaseAgain: &ChainTiming{MedianUS: 1000}}, 0.02},
	} {
		if got := c.r.Change(); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: Change() = %g, want %g", c.name, got, c.want)
		}
	}
}
