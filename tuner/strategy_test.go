package tuner

import (
	"fmt"
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
