package tuner

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// replay is a simulation measurer: each ID has a true time, and every
// sample is that time with noise. It counts the batches it was asked for.
type replay struct {
	truth   map[string]float64
	rng     *rand.Rand
	batches int
}

func (r *replay) measure(ids []string, rounds int) (map[string][]float64, error) {
	out := map[string][]float64{}
	for _, id := range ids {
		t, ok := r.truth[id]
		if !ok {
			return nil, fmt.Errorf("unknown id %s", id)
		}
		out[id] = noisy(r.rng, t, rounds)
	}
	r.batches += len(ids) * rounds
	return out, nil
}

func space200(seed uint64) (*replay, []string) {
	r := &replay{truth: map[string]float64{"stock": 100}, rng: rand.New(rand.NewPCG(seed, 7))}
	var ids []string
	for i := 0; i < 200; i++ {
		id := fmt.Sprintf("v%03d", i)
		r.truth[id] = 80 + 60*r.rng.Float64()
		ids = append(ids, id)
	}
	r.truth["v123"] = 70 // the true optimum, 12 % ahead of the next best possible
	return r, ids
}

func TestStrategiesFindTheOptimum(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		ex, ids := space200(seed)
		exRes, err := exhaustive(ex, ids, "stock", nil)
		if err != nil {
			t.Fatal(err)
		}
		sh, _ := space200(seed)
		const budget = 1200
		shRes, err := halving(sh, ids, "stock", budget, nil)
		if err != nil {
			t.Fatal(err)
		}
		exBest := best(exRes.final, 1, "stock")[0]
		shBest := best(shRes.final, 1, "stock")[0]
		if exBest != "v123" || shBest != "v123" {
			t.Errorf("seed %d: exhaustive picked %s, halving %s; want v123", seed, exBest, shBest)
		}
		if _, ok := shRes.final["stock"]; !ok {
			t.Errorf("seed %d: stock not measured with the finalists", seed)
		}
		if sh.batches >= ex.batches {
			t.Errorf("seed %d: halving spent %d batches, exhaustive %d", seed, sh.batches, ex.batches)
		}
		if sh.batches > budget+len(ids) {
			t.Errorf("seed %d: halving spent %d batches over a budget of %d", seed, sh.batches, budget)
		}
	}
}

func TestExhaustiveWithoutCandidates(t *testing.T) {
	r := &replay{truth: map[string]float64{"stock": 100}, rng: rand.New(rand.NewPCG(1, 1))}
	res, err := exhaustive(r, nil, "stock", nil)
	if err != nil || len(res.final["stock"]) != finalRounds {
		t.Fatalf("exhaustive(no candidates) = %v, %v", res, err)
	}
}

// With two groups, each keeps its own finalists even when one group is
// faster throughout (int8 activations beating every exact variant).
func TestStrategiesKeepEachGroup(t *testing.T) {
	r, ids := space200(3)
	groupOf := func(id string) int {
		if id < "v100" {
			return 1 // the fast group
		}
		return 0
	}
	for i, id := range ids {
		if groupOf(id) == 1 {
			r.truth[id] = 40 + float64(i%10)
		}
	}
	for name, run := range map[string]func() (stageResult, error){
		"exhaustive": func() (stageResult, error) { return exhaustive(r, ids, "stock", groupOf) },
		"halving":    func() (stageResult, error) { return halving(r, ids, "stock", 1200, groupOf) },
		"race": func() (stageResult, error) {
			return race(r, searchInput{ids: ids, stock: "stock", budget: 1200, groupOf: groupOf})
		},
	} {
		res, err := run()
		if err != nil {
			t.Fatal(err)
		}
		per := map[int]int{}
		for id := range res.final {
			if id != "stock" {
				per[groupOf(id)]++
			}
		}
		if per[0] != nFinalists || per[1] != nFinalists {
			t.Errorf("%s: finalists per group %v, want %d each", name, per, nFinalists)
		}
		if _, ok := res.final["v123"]; !ok {
			t.Errorf("%s: the exact group's optimum v123 is not a finalist", name)
		}
	}
}

// race finds the optimum within its budget, drops no candidate on fewer
// than raceRounds samples, and under a budget too small to screen every
// candidate measures first what the prior ranks best.
func TestRace(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		for _, budget := range []int{1200, 600} {
			r, ids := space200(seed)
			res, err := race(r, searchInput{ids: ids, stock: "stock", budget: budget})
			if err != nil {
				t.Fatal(err)
			}
			if got := best(res.final, 1, "stock")[0]; got != "v123" {
				t.Errorf("seed %d budget %d: race picked %s, want v123", seed, budget, got)
			}
			if r.batches > budget || res.batches != r.batches {
				t.Errorf("seed %d: race spent %d batches (counted %d) on a budget of %d", seed, r.batches, res.batches, budget)
			}
			for id := range res.droppedAt {
				if n := len(res.screen[id]); n < raceRounds {
					t.Errorf("seed %d: %s dropped on %d samples", seed, id, n)
				}
			}
		}
	}
	// Without a budget, race spends at most what exhaustive would.
	r0, ids0 := space200(4)
	if _, err := race(r0, searchInput{ids: ids0, stock: "stock"}); err != nil || r0.batches > exhaustiveCost(len(ids0), 1).exhaustive {
		t.Errorf("race without a budget: %d batches (%v), exhaustive %d", r0.batches, err, exhaustiveCost(len(ids0), 1).exhaustive)
	}
	// 150 batches: room to screen a few; the prior puts v123 among them.
	r, ids := space200(9)
	prior := map[string]float64{"v123": 1.0, "v001": 1.5}
	res, err := race(r, searchInput{ids: ids, stock: "stock", budget: 150 + (nFinalists+1)*finalRounds, prior: prior})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.screen) >= len(ids) || best(res.final, 1, "stock")[0] != "v123" {
		t.Errorf("small budget with a prior: %d of %d screened, picked %v", len(res.screen), len(ids), best(res.final, 1, "stock"))
	}
}

func TestSearchShare(t *testing.T) {
	costs := []jobCost{exhaustiveCost(400, 2), exhaustiveCost(400, 1), exhaustiveCost(30, 1), exhaustiveCost(2000, 2)}
	total, exhaustive := 0, 0
	s := searchShare(costs, 0.25)
	for i, c := range costs {
		b := c.budget(s)
		if b < costs[i].finals || b > costs[i].exhaustive {
			t.Errorf("job %d: budget %d outside its finals %d and exhaustive %d", i, b, costs[i].finals, costs[i].exhaustive)
		}
		total += b
		exhaustive += costs[i].exhaustive
	}
	if share := float64(total) / float64(exhaustive); share < 0.24 || share > 0.25 {
		t.Errorf("the budgets add up to %.3f of the exhaustive batches, want 0.25", share)
	}
	if c := exhaustiveCost(2, 2); c.finals != 3*finalRounds {
		t.Errorf("two candidates: finals %d, want %d", c.finals, 3*finalRounds)
	}
	// Finals that take the whole share leave no search; a share that
	// exhaustive's search cannot use is capped at all of it.
	if s := searchShare([]jobCost{exhaustiveCost(2, 2)}, 0.25); s != 0 {
		t.Errorf("finals above the share: search share %v, want 0", s)
	}
	if s := searchShare(costs, 0.999); s > 1 {
		t.Errorf("search share %v above 1", s)
	}
}

func TestPriorFor(t *testing.T) {
	small := PriorFromCandidates(1024, 4096, map[string]float64{"r1f0u1s1w8": 10, "r2f0u2s3w8g3l1": 12, "r4f0u1s1w8": 0})
	big := PriorFromCandidates(28672, 4096, map[string]float64{"r1f0u1s1w8": 30, "r2f0u2s3w8g9l1": 20})
	if _, ok := small.Rel["r4f0u1s1w8"]; ok || small.Rel["r1f0u1s1w8"] != 1 || small.Rel["r2f0u2s3w8g3l1"] != 1.2 {
		t.Fatalf("PriorFromCandidates: %v", small.Rel)
	}
	p := priorFor(14336, 4096, []PriorShape{small, big})
	// Every g of a variant shares its prior; the nearer shape weighs more.
	g := p[priorKey("r2f0u2s3w8g14l1")]
	if g == 0 || g >= math.Sqrt(1.2) || p[priorKey("r1f0u1s1w8")] <= math.Sqrt(1.5) {
		t.Errorf("prior %v: want the g-twins merged and the 28672-row shape weighing more", p)
	}
	if priorFor(1, 1, nil) != nil {
		t.Error("a prior without earlier jobs")
	}
}

func TestFormatPrior(t *testing.T) {
	priors := map[string][]PriorShape{
		"q4_0": {PriorFromCandidates(4096, 4096, map[string]float64{
			"r1f0u2s3w16l2a1": 10, "r1f0u2s2w8l1a1": 13, "r1f0u2s2w8l2a1": 12, "r1f0u1s3w16g7l2a1": 11})},
		"q8_0": {PriorFromCandidates(4096, 4096, map[string]float64{"r1f0u2s2w8l1a1": 10, "r1f0u2s3w16l1a1": 14})},
	}
	own := formatPrior(priors, "q4_0", 4096, 4096)
	cross := formatPrior(priors, "q4_K", 4096, 4096)
	for _, tt := range []struct {
		name  string
		prior map[string]float64
		id    string
		want  float64 // 0: absent
	}{
		{"own format: as measured", own, "r1f0u2s3w16l2a1", 1},
		{"own format: no other layout", own, "r1f0u2s3w16l1a1", 0},
		{"own format: g-twins", own, "r1f0u1s3w16g2l2a1", 1.1},
		// Other formats: per ID the geometric mean over q4_0 and q8_0,
		// then for every layout of a variant the best of its layouts.
		{"other formats: the best layout's", cross, "r1f0u2s3w16l1a1", 1},
		{"other formats: raw layout too", cross, "r1f0u2s3w16a1", 1},
		{"other formats: mean over formats", cross, "r1f0u2s2w8l2a1", math.Sqrt(1.3 * 1.0)},
		{"other formats: g-twins", cross, "r1f0u1s3w16g2l1a1", 1.1},
	} {
		got := tt.prior[priorKey(tt.id)]
		if math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s: prior of %s = %v, want %v", tt.name, tt.id, got, tt.want)
		}
	}
}
